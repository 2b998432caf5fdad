T_admin_sock = proxy/admin_sock.c proxy/stats.c
