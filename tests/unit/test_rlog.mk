T_rlog = policy/rlog.c $(STORE_SRCS) routing/route.c routing/wave.c
