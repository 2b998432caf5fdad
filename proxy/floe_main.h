/*
 * floe: floe_main.h -- the daemon's entry points used by main.c, and the
 * admin socket's glue between server.c and admin.c.
 */
#ifndef FLOE_PROXY_FLOE_MAIN_H
#define FLOE_PROXY_FLOE_MAIN_H

struct h1_msg;
struct server_conn;

/* Run floe with the config at PATH until it is stopped. Exit status. */
int floe_run(const char *path, int verbose);
void floe_admin_serve(struct server_conn *, struct h1_msg *, void *);
void floe_admin_error(struct server_conn *, int, const char *, void *);

#endif
