T_route = routing/route.c routing/store.c routing/wave.c
