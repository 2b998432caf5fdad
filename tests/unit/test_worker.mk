T_worker = proxy/worker.c
