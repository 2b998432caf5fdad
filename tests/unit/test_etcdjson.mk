T_etcdjson = proxy/etcdjson.c
