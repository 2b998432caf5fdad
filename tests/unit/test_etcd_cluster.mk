T_etcd_cluster = tests/unit/etcd_fx.c proxy/etcd.c proxy/etcd_watch.c proxy/etcd_json.c proxy/fetch.c
