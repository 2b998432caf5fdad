T_h1 = proxy/h1.c
