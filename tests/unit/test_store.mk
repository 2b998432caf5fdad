T_store = routing/store.c
