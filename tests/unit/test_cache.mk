T_cache = cache/cache.c
