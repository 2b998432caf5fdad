T_admin = tests/unit/admin_fx.c $(filter-out proxy/admin_sock.c,$(wildcard proxy/admin*.c)) \
	  proxy/inventory.c proxy/workers.c policy/readers.c \
	  proxy/stats.c policy/rlog.c proxy/worker.c $(STORE_SRCS) \
	  routing/route.c routing/wave.c routing/ledger.c policy/gate.c \
	  $(wildcard proxy/cluster*.c proxy/etcd*.c) proxy/fetch.c
