T_rlog = policy/rlog.c routing/store.c routing/route.c routing/wave.c
