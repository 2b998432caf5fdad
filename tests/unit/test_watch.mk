# The watcher on the modules it runs on: conf, the store, the triggers,
# the rollback log (no doubles).
T_watch = proxy/watch.c proxy/watch_trigger.c proxy/watch_poll.c \
	  proxy/watch_split.c \
	  proxy/watch_view.c proxy/cred.c proxy/token.c policy/oauth.c \
	  policy/awscred.c policy/sigv4.c \
	  proxy/conf.c proxy/conf_keys.c proxy/conf_cluster.c proxy/catalog.c proxy/fetch.c \
	  proxy/stats.c policy/trigger.c policy/rlog.c routing/route.c \
	  routing/wave.c routing/ledger.c proxy/worker.c $(STORE_SRCS)
T_watch += $(wildcard proxy/cluster*.c proxy/etcd*.c)
