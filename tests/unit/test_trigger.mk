T_trigger = policy/trigger.c routing/ledger.c routing/route.c $(STORE_SRCS) routing/wave.c
