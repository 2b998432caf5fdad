T_auth = policy/auth.c
