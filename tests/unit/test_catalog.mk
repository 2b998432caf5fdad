T_catalog = proxy/catalog.c proxy/catalog_splice.c proxy/catalog_rewrite.c \
	proxy/catalog_stream.c
