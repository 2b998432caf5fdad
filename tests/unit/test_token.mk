T_token = proxy/token.c proxy/fetch.c policy/oauth.c
