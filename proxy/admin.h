/*
 * floe: admin.h -- the admin API (HTTP+JSON on the Unix socket): status,
 * routes, resolve, waves and their transitions, events, metrics. Owns no
 * state: every handler works on the store (LMDB writes are synced before
 * the answer). The socket itself belongs to server.c, its glue (who may
 * use it, the changes held behind imports) to admin_sock.c; the API's
 * parts, one file per resource, share proxy/admin_impl.h.
 */
#ifndef FLOE_PROXY_ADMIN_H
#define FLOE_PROXY_ADMIN_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct floe;
typedef struct json_t json_t;

struct admin_reply {
	int status;
	const char *content_type; /* static string */
	char *body; /* malloc'd; caller frees */
	size_t len;
	/*
	 * A large later answer's body instead of BODY (NULL then), moved
	 * from a worker's child without a copy; the callee frees it.
	 */
	struct evbuffer *buf;
	char allow[64]; /* a 405's Allow header value; "" for none */
};

/* A later answer: the callee frees REPLY->body (or REPLY->buf). */
typedef void (*admin_later_cb)(struct admin_reply *, void *arg);

/*
 * Serve one request: METHOD ("GET"), TARGET (path + query, as sent), BODY
 * (NULL: none). PEER_UID is the connected peer (recorded as the actor of
 * changes). Errors are {"error":{"message","type","code"}}. Returns 0 with
 * REPLY filled; or, for a bulk import (POST /routes/import, POST /ledger)
 * when floe has a worker and LATER is given, 1: the import takes BODY's
 * bytes, runs in the worker's child, and LATER gets its answer on the
 * loop.
 */
int admin_handle(struct floe *, const char *method, const char *target,
    size_t target_len, struct evbuffer *body, uid_t peer_uid,
    struct admin_reply *, admin_later_cb later, void *arg);

/*
 * Parts of GET /status (stats_status_cb; ARG is the struct floe): the
 * store's health, and how many waves are in each state. Caller frees.
 */
json_t *admin_store_status_cb(void *arg);
json_t *admin_waves_status_cb(void *arg);
/* stats_metrics_cb (ARG: the struct floe): floe_stale_readers{wave}. */
void admin_readers_metrics_cb(struct evbuffer *, void *arg);
/*
 * Wave N's stale readers into *COUNT, as counted at most a minute ago;
 * false for a wave that is not canary, lakehouse or frozen.
 */
bool admin_readers_stale_of(struct floe *, uint32_t n, unsigned *count);
/* Free what admin_readers_metrics_cb keeps. */
void admin_readers_metrics_free(void);
/*
 * A job helper (worker_send): count the stale readers of the moved
 * waves for admin_readers_metrics_cb.
 */
#define ADMIN_STALE_JOB 2 /* its kind */
void admin_readers_stale_serve(const void *in, size_t len,
    struct evbuffer *out);
/*
 * Keep the pages of GET /eligibility a child read ahead (LEN bytes of
 * BUF, the store at SEQ) to answer the next requests with; LEN 0 forgets
 * them (at shutdown).
 */
/*
 * The tick: the BEFORE lines pending in the rollback log are retried by
 * the worker's child (true; a busy worker: at a later tick), or false:
 * the loop writes them (no worker, cluster mode).
 */
bool admin_rlog_retry(struct floe *, size_t before);
void admin_elig_keep(const struct floe *, uint64_t seq, const void *buf,
    size_t len);

#endif
