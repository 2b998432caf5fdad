T_trigger = policy/trigger.c routing/ledger.c routing/route.c routing/store.c routing/wave.c
