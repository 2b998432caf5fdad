# The mirror's side of bulk imports: the store and cluster_import.c.
T_cluster_import = $(STORE_SRCS) proxy/cluster_import.c tests/unit/store_fx.c
