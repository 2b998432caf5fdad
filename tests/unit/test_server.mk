T_server = proxy/server.c proxy/server_reply.c proxy/h1.c proxy/h1_reason.c proxy/h1_chunks.c proxy/h1_replay.c proxy/sockio.c proxy/tlsctx.c
