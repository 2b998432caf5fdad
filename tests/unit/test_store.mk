# The flag store is eight files; the tests of the modules above it link
# them all through STORE_SRCS.
STORE_SRCS = routing/store.c routing/store_codec.c routing/store_read.c \
	     routing/store_write.c routing/store_rlog.c routing/store_mirror.c \
	     routing/store_readers.c routing/store_index.c
T_store = $(STORE_SRCS) tests/unit/store_fx.c
