# The flag store's mirror txns (cluster mode): sequences and rlog lines.
T_store_mirror = $(STORE_SRCS) tests/unit/store_fx.c
