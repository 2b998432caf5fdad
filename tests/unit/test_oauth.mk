T_oauth = policy/oauth.c
