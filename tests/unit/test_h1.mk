T_h1 = proxy/h1.c proxy/h1_reason.c proxy/h1_chunks.c proxy/h1_replay.c
