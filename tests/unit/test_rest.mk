T_rest = proxy/rest.c
