T_conf = proxy/conf.c
