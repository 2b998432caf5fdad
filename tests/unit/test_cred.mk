T_cred = proxy/cred.c proxy/token.c proxy/fetch.c proxy/conf.c proxy/conf_keys.c proxy/conf_cluster.c policy/oauth.c policy/awscred.c policy/sigv4.c
