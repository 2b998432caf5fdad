T_cred = proxy/cred.c proxy/token.c proxy/fetch.c proxy/conf.c proxy/conf_keys.c policy/oauth.c policy/awscred.c policy/sigv4.c
