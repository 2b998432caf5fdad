/*
 * floe: admin_sock.h -- the admin socket's side of the admin API, between
 * server.c (the socket, its connections) and admin.c (the answers): who
 * may use it (admin_uids, else floe's own uid and root), and the changes
 * that wait, in order, behind the bulk imports running on the worker.
 * Owns that queue and the admin API's parts of GET /status. Loop thread
 * only.
 */
#ifndef FLOE_PROXY_ADMIN_SOCK_H
#define FLOE_PROXY_ADMIN_SOCK_H

struct admin_sock;
struct floe;
struct h1_msg;
struct server_conn;

/*
 * Serve the admin API of F (its conf, store and worker) and add its parts
 * to F's stats.
 */
struct admin_sock *admin_sock_new(struct floe *f);
/* After the socket's server is freed (its connections gone). NULL is ok. */
void admin_sock_free(struct admin_sock *);
/* server_request_cb of the admin socket; ARG is the admin_sock. */
void admin_sock_serve(struct server_conn *, struct h1_msg *, void *arg);
/* server_error_cb of the admin socket: an error object, then a close. */
void admin_sock_error(struct server_conn *, int status, const char *why,
    void *arg);

#endif
