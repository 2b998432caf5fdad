T_discover = proxy/discover.c proxy/fetch.c proxy/catalog.c routing/route.c routing/store.c routing/wave.c
