T_wave = routing/wave.c $(STORE_SRCS)
