T_etcd = proxy/etcd.c proxy/etcdwatch.c proxy/etcdjson.c proxy/fetch.c
