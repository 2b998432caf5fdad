T_catalog = proxy/catalog.c
