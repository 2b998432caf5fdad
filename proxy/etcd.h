/*
 * floe: etcd.h -- an etcd v3 client over etcd's JSON gateway (HTTP and
 * JSON through the fetch client; no gRPC): ranges, txns, watches, leases
 * and auth. Owns its endpoint list (and which endpoint answers), the auth
 * token, and every call and watch it started. Borrows the fetch client,
 * which must outlive it. Loop thread only.
 *
 * Every callback runs from the loop, never from inside the call that
 * started the work; it may start, cancel or free anything, including the
 * whole client. Results passed to callbacks live only during the call.
 */
#ifndef FLOE_PROXY_ETCD_H
#define FLOE_PROXY_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct etcd;
struct etcd_call;
struct etcd_watch;
struct event_base;
struct fetch;

/* What went wrong, for callers that branch on it; a message says more. */
enum etcd_err {
	ETCD_OK,
	ETCD_EUNAVAILABLE, /* no endpoint could be reached: nothing was done */
	ETCD_ETIMEDOUT, /* no answer in time or a broken connection: a write
			   may have been applied */
	ETCD_EAUTH, /* authentication or permission refused */
	ETCD_ECOMPACTED, /* the revision asked for was compacted away */
	ETCD_EFUTURE, /* the revision asked for is past etcd's */
	ETCD_ENOTFOUND, /* no such lease (revoked or expired) */
	ETCD_EREFUSED, /* a request etcd will not take: too many operations,
			  too large, a key twice in one txn, ... */
	ETCD_EPROTO, /* an answer floe cannot read */
	ETCD_ECLOSED, /* a watch stream ended */
	ETCD_ECANCELED, /* etcd cancelled a watch */
	ETCD_ESERVER, /* any other error etcd reported */
};

/* The header of every answer. */
struct etcd_header {
	uint64_t cluster_id;
	uint64_t member_id;
	int64_t revision; /* etcd's revision when it answered */
	uint64_t raft_term;
};

/*
 * A key-value pair. KEY and VALUE are NUL-terminated as well; KEY_LEN and
 * VALUE_LEN are the truth (a value may hold NULs).
 */
struct etcd_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

enum etcd_op_type {
	ETCD_OP_RANGE,
	ETCD_OP_PUT,
	ETCD_OP_DELETE,
};

/* A range, a put or a delete: alone (ranges) or inside a txn. */
struct etcd_op {
	enum etcd_op_type type;
	const char *key;
	size_t key_len; /* 0: strlen(key) */
	bool prefix; /* range and delete: every key that starts with KEY */
	const char *range_end; /* range and delete: else [KEY, RANGE_END) */
	size_t range_end_len; /* 0: strlen(range_end) */
	const char *value; /* put */
	size_t value_len;
	int64_t lease; /* put: the lease the key goes with, or 0 */
	bool prev_kv; /* put and delete: answer with the previous pairs */
	int64_t limit; /* range: at most this many pairs; 0: all */
	int64_t revision; /* range: read at this revision; 0: the latest */
	bool keys_only; /* range: no values */
	bool count_only; /* range: only the count */
};

/* What a txn compares a key's ... */
enum etcd_cmp_target {
	ETCD_CMP_VERSION, /* ... version (0: the key does not exist) */
	ETCD_CMP_CREATE, /* ... create_revision */
	ETCD_CMP_MOD, /* ... mod_revision */
	ETCD_CMP_VALUE, /* ... value */
};

enum etcd_cmp_result {
	ETCD_CMP_EQUAL,
	ETCD_CMP_NOT_EQUAL,
	ETCD_CMP_GREATER,
	ETCD_CMP_LESS,
};

struct etcd_cmp {
	const char *key;
	enum etcd_cmp_target target;
	enum etcd_cmp_result result;
	int64_t number; /* VERSION, CREATE, MOD */
	const char *value; /* VALUE */
	size_t value_len;
};

/* If every compare holds, run SUCCESS, else FAILURE; all in one revision. */
struct etcd_txn {
	const struct etcd_cmp *cmps;
	size_t ncmps;
	const struct etcd_op *success;
	size_t nsuccess;
	const struct etcd_op *failure;
	size_t nfailure;
};

/* One operation's answer inside a txn. */
struct etcd_op_result {
	enum etcd_op_type type;
	struct etcd_kv *kvs; /* range: the pairs; put, delete: the previous
				pairs if prev_kv was asked */
	size_t nkvs;
	int64_t count; /* range */
	bool more; /* range: the limit cut it short */
	int64_t deleted; /* delete */
};

/* What a call got back; valid only during its callback. */
struct etcd_result {
	enum etcd_err err;
	const char *error; /* why, when err is not ETCD_OK; else "" */
	const char *endpoint; /* the endpoint that answered, or "" */
	struct etcd_header header;
	/* Ranges and each page of etcd_range_all. */
	struct etcd_kv *kvs;
	size_t nkvs;
	int64_t count;
	bool more; /* the limit cut it short; etcd_range_all: more pages
		      follow */
	int64_t revision; /* etcd_range_all: the revision every page is
			     read at */
	/* Txns. */
	bool succeeded;
	struct etcd_op_result *ops;
	size_t nops;
	/* Lease grants and keepalives. */
	int64_t lease;
	int64_t ttl; /* seconds */
};

typedef void (*etcd_done_cb)(const struct etcd_result *, void *arg);

enum etcd_event_type {
	ETCD_EVENT_PUT,
	ETCD_EVENT_DELETE,
};

struct etcd_event {
	enum etcd_event_type type;
	struct etcd_kv kv; /* a delete has only key and mod_revision */
	struct etcd_kv *prev_kv; /* with prev_kv asked, or NULL */
};

struct etcd_watch_opts {
	const char *key;
	size_t key_len; /* 0: strlen(key) */
	bool prefix; /* every key that starts with KEY */
	int64_t start_revision; /* first revision to deliver; 0: from now */
	bool progress_notify; /* ask etcd for progress notifications */
	bool prev_kv; /* events carry the previous pair */
	/*
	 * End the watch with ETCD_ETIMEDOUT after this long without any
	 * message; 0: never. Only progress notifications (etcd sends them
	 * every --experimental-watch-progress-notify-interval, 10 min by
	 * default) keep a quiet watch alive.
	 */
	uint64_t idle_timeout_ms;
};

/*
 * One message of a watch stream. With events, it holds whole revisions: the
 * highest event mod_revision is applied. Without events and not created,
 * it is a progress notification: every event up to header.revision has
 * been delivered. The created message's header.revision is etcd's
 * revision, not progress: older events may still follow.
 */
struct etcd_watch_msg {
	enum etcd_err err; /* not ETCD_OK: the watch is over */
	const char *error; /* why, when err is not ETCD_OK; else "" */
	struct etcd_header header;
	int64_t watch_id;
	bool created;
	bool progress;
	struct etcd_event *events;
	size_t nevents;
	int64_t compact_revision; /* ETCD_ECOMPACTED: the oldest left */
	bool canceled;
	char *cancel_reason; /* or NULL */
};

/*
 * Called with each message in order (err ETCD_OK). A message with another
 * err ends the watch: it is freed when the callback returns and must not
 * be cancelled. A watch never ends with a success.
 */
typedef void (*etcd_watch_cb)(const struct etcd_watch_msg *, void *arg);

struct etcd_conf {
	const char *endpoints; /* "URL[,URL...]", http:// or https:// */
	uint64_t timeout_ms; /* per call and endpoint (etcd_timeout); 0: 2 s */
	const char *user; /* etcd auth, or NULL */
	const char *password_file; /* the user's password: its first line */
	const char *ca_file; /* https: the trust store, or NULL: the system's */
	const char *cert_file; /* https: a client certificate, or NULL */
	const char *key_file; /* its key */
};

/*
 * A client on FETCH, whose loop is BASE. NULL with a message in ERR if an
 * endpoint is not an http(s) URL or the password file cannot be read.
 */
struct etcd *etcd_new(struct event_base *, struct fetch *,
    const struct etcd_conf *, char *err, size_t errlen);
/* Cancel every call and watch (no callback is called) and free. */
void etcd_free(struct etcd *);

/*
 * Calls. Each returns a handle for etcd_cancel that is valid until its
 * callback returns. A call that gets no answer from one endpoint is sent to
 * the next one only when that is safe: always if nothing was sent, and
 * after a timeout only if it changes nothing (ranges, keepalives,
 * revokes). An invalid auth token is renewed and the call sent once more.
 */
struct etcd_call *etcd_range(struct etcd *, const struct etcd_op *,
    etcd_done_cb, void *);
/*
 * Every pair in OP's range, in pages of OP's limit (0: 1000), all read at
 * OP's revision (0: etcd's revision at the first page). CB runs once per
 * page; the last one has more false, or err set.
 */
struct etcd_call *etcd_range_all(struct etcd *, const struct etcd_op *,
    etcd_done_cb, void *);
/* At most 128 operations per branch with etcd's default --max-txn-ops. */
struct etcd_call *etcd_txn(struct etcd *, const struct etcd_txn *, etcd_done_cb,
    void *);
/* A lease of TTL seconds; ID 0 lets etcd pick it (result lease, ttl). */
struct etcd_call *etcd_lease_grant(struct etcd *, int64_t ttl, int64_t id,
    etcd_done_cb, void *);
/* Renew lease ID once (result ttl); ETCD_ENOTFOUND once it expired. */
struct etcd_call *etcd_lease_keepalive(struct etcd *, int64_t id, etcd_done_cb,
    void *);
/* Revoke lease ID, deleting its keys; ETCD_ENOTFOUND if it is gone. */
struct etcd_call *etcd_lease_revoke(struct etcd *, int64_t id, etcd_done_cb,
    void *);
/* Cancel a call: its callback is not called. NULL is ignored. */
void etcd_cancel(struct etcd_call *);

/* Watch a key or a prefix; see etcd_watch_cb. */
struct etcd_watch *etcd_watch(struct etcd *, const struct etcd_watch_opts *,
    etcd_watch_cb, void *);
/* Stop a watch: its callback is not called again. NULL is ignored. */
void etcd_watch_cancel(struct etcd_watch *);

/* The cluster and member that answered last; 0 before any answer. */
uint64_t etcd_cluster_id(const struct etcd *);
uint64_t etcd_member_id(const struct etcd *);
/* The endpoint calls are sent to first: the last one that answered. */
const char *etcd_endpoint(const struct etcd *);
/* A short name for ERR ("timed out", "compacted", ...). */
const char *etcd_strerror(enum etcd_err);

#endif
