# The flag store is five files; the tests of the modules above it link
# them all through STORE_SRCS.
STORE_SRCS = routing/store.c routing/store_codec.c routing/store_read.c \
	     routing/store_write.c routing/store_rlog.c routing/store_mirror.c
T_store = $(STORE_SRCS)
