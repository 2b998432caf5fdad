T_fetch = proxy/fetch.c
