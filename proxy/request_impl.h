/*
 * floe: request_impl.h -- private to the request path (request.c,
 * request_route.c, request_cache.c, request_forward.c, request_answer.c,
 * request_memo.c, request_stream.c);
 * nothing else includes it but its unit test. Owns struct request, one
 * engine request from its parse to its answer, and the steps the files
 * hand each other. Callers use proxy/request.h. Loop thread only.
 */
#ifndef FLOE_PROXY_REQUEST_IMPL_H
#define FLOE_PROXY_REQUEST_IMPL_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "lib/compat.h"
#include "lib/shortcopy.h"
#include "lib/units.h"
#include "policy/auth.h"
#include "proxy/h1.h"
#include "proxy/rest.h"
#include "proxy/upstream.h"
#include "routing/route.h"

struct cache_entry;
struct catalog_stream;
struct memo_buf;
struct catalog;
struct evbuffer;
struct floe;
struct h1_msg;
struct server_conn;
struct request_stream;

/* The prefixes floe announces: routed, or pinned to one side. */
enum request_prefix {
	PFX_ROUTED,
	PFX_WAREHOUSE,
	PFX_LAKEHOUSE,
};

/* How the answer is put together. */
enum request_mode {
	MODE_ONE, /* one side answers */
	MODE_LIST, /* both sides list; floe merges and pages */
	MODE_NS_READ, /* warehouse, then the lakehouse if it has no such ns */
};

/* Objects a request names, kept to invalidate their cached answers. */
#define REQUEST_MAX_OBJS 8
/* An answer's head as floe sends it: an upstream head is at most 64 KiB. */
#define REQUEST_HDRS_MAX (64 * 1024 + 1024)
/* A cache key: object, side, versions, variant. */
#define REQUEST_CKEY_MAX 2048
/* A large answer's config is merged from at most its last 64 KiB. */
#define REQUEST_TAIL (64 * 1024)
/* The Via pseudonym: "1.1 " and the node id. */
#define REQUEST_VIA_MAX 80

/*
 * One request. Requests are recycled through a free list, and only the
 * head of the struct is cleared for each: the large buffers of the tail
 * (names, keys, the route) are written before they are read.
 */
struct request {
	struct floe *f;
	struct server_conn *conn;
	struct h1_msg *msg;
	SLIST_ENTRY(request) free;
	bool no_prefix; /* /v1/oauth/tokens: no catalog prefix */
	enum request_prefix pfx;
	enum request_mode mode;
	bool has_route;
	enum route_side side; /* the side asked (MODE_ONE, MODE_NS_READ) */
	bool commit; /* a lost answer is CommitStateUnknown */
	bool merge_config; /* the answer is a LoadTableResult */
	int has_uri; /* the answer holds the catalog's uri (-1: not known) */
	int json; /* its body is JSON (upstream_xfer_json; -1: not known) */
	size_t json_at; /* ... not: the first wrong byte */
	struct upstream_xfer *x[ROUTE_NSIDES];
	struct evbuffer *ans[ROUTE_NSIDES]; /* MODE_LIST answers */
	unsigned ans_status[ROUTE_NSIDES];
	int pending;
	int64_t start_us;
	uint64_t upstream_us;
	uint64_t client_hash;
	bool authz; /* it had an Authorization (set with client_hash) */
	/* Its Authorization header, or NULL (found by request_authenticate). */
	const struct h1_header *authz_hdr;
	unsigned nobjs;
	bool objs_overflow;
	/* LoadTable cache: the keys, and what happened (for the log). */
	bool cacheable;
	bool revalidating;
	uint64_t cache_epoch; /* invalidations seen when it was sent */
	size_t ckeylen[2];
	const char *cache_state;
	/* The answer passed on as it arrives (request_stream.c), or not. */
	struct request_stream *stream;
	bool stream_off;
	/*
	 * The body this table's answer last had when found JSON, from the
	 * memo (cache/memo.h; a reference), and whether the answer was it.
	 */
	struct memo_buf *memo_in;
	bool memo_hit;

	/* The tail: not cleared; each field is set before it is read. */
	char ident[AUTH_IDENT_MAX]; /* the authenticated client, or "" */
	/* Headers floe's own error answer adds (Allow, Retry-After), CRLFs. */
	char err_hdrs[96];
	char ans_error[ROUTE_NSIDES][160];
	struct rest_req rr;
	struct route_result route; /* valid when has_route */
	struct route_obj objs[REQUEST_MAX_OBJS];
	unsigned char ckey[2][REQUEST_CKEY_MAX]; /* shared, per client */
};

/* The request-header fields floe forwards or reads while forwarding. */
enum request_fwd {
	FWD_NO,
	FWD_AS_IS, /* passed on as it came */
	FWD_AUTHZ, /* only to a catalog without floe's own token */
	FWD_INM, /* translated from floe's ETags */
};

/* This node's Via value, "1.1 NODE", and its length (request.c). */
extern char request_via[REQUEST_VIA_MAX];
extern size_t request_via_len;

/* Copy N bytes to *O (every head floe writes is built with it). */
static inline void
request_put(char **o, const void *p, size_t n)
{
	short_copy(*o, p, n);
	*o += n;
}

/* Write R's wave at *O: its number, or "none" (request_wave_str's). */
static inline void
request_put_wave(char **o, const struct request *r)
{
	if (r->has_route && r->route.assigned)
		*o += units_utoa(*o, r->route.wave);
	else
		request_put(o, "none", 4);
}

/* request.c: the life of a request. */
struct request *request_new(void);
void request_free(struct request *);
void request_wave_str(const struct request *, char *, size_t);
void request_log_access(struct request *, unsigned status, const char *target);
void request_done_cb(struct upstream_xfer *, void *);

/* request_route.c: which side answers. */
int request_route(struct request *);
int request_json_ns(json_t *levels, char *buf, size_t len, size_t *outlen);
bool request_same_side(const struct route_result *,
    const struct route_result *);

/* request_cache.c: the LoadTable cache. */
bool request_has_secrets(const char *body, size_t len);
bool request_cache_keys(struct request *, enum route_side);
bool request_inm_matches(const struct h1_msg *, const char *etag);
bool request_cache_lookup(struct request *);
void request_cache_reply(struct request *, const struct cache_entry *,
    const char *how);
void request_cache_store(struct request *, const struct h1_msg *,
    const char *hdrs, size_t hlen, struct evbuffer *body, const char *etag);
void request_cache_invalidate(struct request *);
bool request_revalidated(struct request *, struct h1_msg *);

/* request_forward.c: the request as a catalog gets it. */
void request_forward(struct request *, enum route_side);
bool request_floe_cred(const struct floe *, enum route_side);
bool request_paging_param(const char *, size_t);
enum request_fwd request_fwd_kind(enum h1_field);
ssize_t request_ns_encode(const char *ns, size_t nslen, const char *sep,
    char *out, size_t outlen);
ssize_t request_ns_reframe(const char *raw, size_t len, const char *fsep,
    const char *csep, char *out, size_t outlen, size_t *nsep);

/* request_answer.c: what the client gets back. */
void request_error_conn(struct floe *, struct server_conn *, unsigned status,
    const char *type, const char *msg, const char *extra_hdrs);
void request_errorf(struct request *, unsigned, const char *, const char *, ...)
    __attribute__((__format__(__printf__, 4, 5)));
void request_reply_full(struct request *);
bool request_health(struct floe *, struct server_conn *, const struct h1_msg *);
void request_config(struct request *);
size_t request_head(struct request *, enum route_side, const struct h1_msg *,
    char *hdrs, char *etag);
/*
 * A table read of an assigned wave by SIDE, BAD if it failed, for the
 * error trigger (a worker's goes to its master). Not a write, nor 4xx.
 */
void request_count_read(struct request *, enum route_side, bool bad);
void request_floe_base(struct request *, char *, size_t);
const char *request_floe_host(struct request *, size_t, const char **, size_t *,
    size_t *);
/* The size of the buffer request_floe_base writes floe's base URL into. */
#define REQUEST_FLOE_BASE 300
void request_reply_upstream(struct request *, enum route_side, struct h1_msg *);
size_t request_rewrite(struct request *, enum route_side, struct evbuffer *,
    size_t, struct memo_buf **out, bool *same);
bool request_body_is_json(const struct request *, struct evbuffer *, size_t,
    char *why, size_t);
void request_reply_failure(struct request *, enum route_side,
    enum upstream_fail, const char *why);
void request_reply_list(struct request *);

/* request_memo.c: answers checked once, while they do not change. */
void request_memo_look(struct request *, enum route_side);
void request_memo_send(struct evbuffer *, size_t, struct memo_buf *);
bool request_memo_wants(struct request *, enum route_side);
size_t request_memo_max(const struct request *);
/* The rewrite's parameters, as the memo compares them. */
#define REQUEST_MEMO_PARAMS 1024
struct memo_buf *request_memo_stream_edits(struct request *, enum route_side,
    char *params, size_t *plen);
void request_memo_streamed(struct request *, enum route_side, bool hit,
    char *copy, size_t len, const char *params, size_t plen,
    struct catalog_stream *made);
size_t request_memo_rewrite(struct request *, enum route_side,
    struct evbuffer *, size_t, struct memo_buf **);
void request_memo_reply(struct request *, unsigned, const char *, size_t,
    struct memo_buf *, int64_t);

/* request_stream.c: an answer passed on as it arrives. */
bool request_stream_wanted(const struct request *);
void request_body_cb(struct upstream_xfer *, struct h1_msg *, void *);
void request_stream_done(struct request *, struct upstream_xfer *);
void request_stream_free(struct request *);

#endif
