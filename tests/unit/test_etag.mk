T_etag = proxy/etag.c
