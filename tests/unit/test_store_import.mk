# The flag store, continued: health, the route import, the crash test.
T_store_import = $(STORE_SRCS) tests/unit/store_fx.c
