T_admin = proxy/admin.c proxy/stats.c policy/rlog.c proxy/worker.c $(STORE_SRCS) routing/route.c routing/wave.c routing/ledger.c policy/gate.c
