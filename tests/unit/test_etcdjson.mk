T_etcdjson = proxy/etcd_json.c
