T_conf = proxy/conf.c proxy/conf_keys.c proxy/conf_cluster.c proxy/conf_diff.c policy/oauth.c policy/awscred.c policy/sigv4.c
