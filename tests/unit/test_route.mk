T_route = routing/route.c $(STORE_SRCS) routing/wave.c
