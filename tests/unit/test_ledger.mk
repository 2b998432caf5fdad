T_ledger = routing/ledger.c routing/route.c routing/store.c
