T_sockio = proxy/sockio.c
