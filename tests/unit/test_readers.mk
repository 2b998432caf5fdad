# The reader inventory's table and the stale-reader rule (pure).
T_readers = policy/readers.c routing/route.c $(STORE_SRCS)
