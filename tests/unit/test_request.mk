# The request path and what it runs on: the listener, the pools, the
# catalogs' configs, the route table, the cache (no doubles).
T_request = proxy/request.c proxy/cred.c proxy/token.c policy/oauth.c policy/awscred.c policy/sigv4.c proxy/request_route.c proxy/request_cache.c \
	    proxy/request_forward.c proxy/request_answer.c proxy/request_memo.c proxy/request_stream.c \
	    proxy/floe.c \
	    proxy/server.c proxy/server_reply.c proxy/h1.c proxy/h1_reason.c proxy/h1_chunks.c proxy/h1_replay.c proxy/sockio.c \
	    proxy/tlsctx.c \
	    proxy/upstream.c proxy/upstream_body.c proxy/upstream_idle.c proxy/upstream_write.c proxy/catalog.c \
	    proxy/catalog_splice.c proxy/catalog_rewrite.c proxy/catalog_stream.c \
	    proxy/catalog_stream_skip.c proxy/catalog_edits.c \
	    proxy/conf.c \
	    proxy/conf_keys.c proxy/conf_cluster.c \
	    proxy/rest.c proxy/etag.c proxy/listing.c proxy/watch.c \
	    proxy/watch_trigger.c proxy/watch_poll.c proxy/watch_view.c \
	    proxy/watch_split.c proxy/inventory.c policy/readers.c \
	    proxy/fetch.c proxy/discover.c proxy/stats.c proxy/worker.c proxy/workers.c policy/auth.c \
	    policy/trigger.c \
	    policy/rlog.c cache/cache.c cache/memo.c routing/route.c routing/wave.c \
	    routing/ledger.c $(STORE_SRCS) tests/unit/request_fx.c
T_request += $(wildcard proxy/cluster*.c proxy/etcd*.c)
