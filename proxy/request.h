/*
 * floe: request.h -- one engine request through floe: parse the Iceberg
 * path, decide which side answers (DESIGN "Which side answers"), forward it
 * on the upstream pool or answer it locally, and shape the answer (floe's
 * ETags, the catalog config merge, URL rewrites, X-Floe-* headers). Owns
 * each request's upstream transfers and the access log buffer.
 */
#ifndef FLOE_PROXY_REQUEST_H
#define FLOE_PROXY_REQUEST_H

#include <stdbool.h>

struct floe;
struct h1_msg;
struct server_conn;

/* server_request_cb for the REST listener; ARG is the struct floe. */
void request_serve(struct server_conn *, struct h1_msg *, void *arg);
/* server_error_cb for the REST listener: an ErrorModel and a close. */
void request_serve_error(struct server_conn *, int status, const char *why,
    void *arg);
/* Set this node's Via pseudonym (for loop detection). */
void request_init(const char *node_id);
/* Write buffered access log lines (on the 1 s tick and at exit). */
void request_flush_log(struct floe *);

#endif
