T_etcd = proxy/etcd.c proxy/etcd_watch.c proxy/etcd_json.c proxy/fetch.c
