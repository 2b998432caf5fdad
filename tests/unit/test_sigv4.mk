T_sigv4 = policy/sigv4.c
