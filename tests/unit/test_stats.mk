T_stats = proxy/stats.c
