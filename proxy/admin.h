/*
 * floe: admin.h -- the admin API (HTTP+JSON on the Unix socket): status,
 * routes, resolve, waves and their transitions, events, metrics. Owns no
 * state: every handler works on the store and answers at once (LMDB writes
 * are synced before the answer). The socket itself belongs to server.c.
 */
#ifndef FLOE_PROXY_ADMIN_H
#define FLOE_PROXY_ADMIN_H

#include <stddef.h>
#include <sys/types.h>

struct floe;

struct admin_reply {
	int status;
	const char *content_type; /* static string */
	char *body; /* malloc'd; caller frees */
	size_t len;
};

/*
 * Serve one request: METHOD ("GET"), TARGET (path + query, as sent), BODY.
 * PEER_UID is the connected peer (recorded as the actor of changes).
 * Errors are {"error":{"message","type","code"}}.
 */
void admin_handle(struct floe *, const char *method, const char *target,
    size_t target_len, const char *body, size_t body_len, uid_t peer_uid,
    struct admin_reply *);

#endif
