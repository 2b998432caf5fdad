T_ledger = routing/ledger.c routing/route.c $(STORE_SRCS)
