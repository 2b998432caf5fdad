T_gate = policy/gate.c routing/ledger.c routing/route.c $(STORE_SRCS)
