T_wave = routing/wave.c routing/store.c
