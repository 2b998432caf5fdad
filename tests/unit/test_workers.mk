T_workers = proxy/workers.c proxy/stats.c
