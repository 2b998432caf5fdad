T_discover = proxy/discover.c proxy/fetch.c proxy/catalog.c routing/route.c $(STORE_SRCS) routing/wave.c
