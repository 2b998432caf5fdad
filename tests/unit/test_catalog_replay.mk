T_catalog_replay = proxy/catalog.c proxy/catalog_splice.c \
	proxy/catalog_rewrite.c proxy/catalog_stream.c \
	proxy/catalog_stream_skip.c proxy/catalog_edits.c cache/memo.c
