T_route_memo = routing/route.c $(STORE_SRCS) routing/wave.c
