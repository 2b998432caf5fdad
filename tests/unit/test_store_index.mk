# The by-wave index and counts of the flag store.
T_store_index = $(STORE_SRCS) tests/unit/store_fx.c
