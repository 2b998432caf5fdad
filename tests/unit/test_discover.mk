T_discover = proxy/discover.c proxy/fetch.c proxy/catalog.c
