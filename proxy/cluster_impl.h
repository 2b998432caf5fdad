/*
 * floe: cluster_impl.h -- private to cluster mode (the proxy/cluster*.c
 * files); nothing else includes it. Owns the layout of struct cluster: the
 * etcd client, the mirror's state, the node key's lease, the leader key as
 * seen, the reader inventory's batches and copies, and the writes waiting
 * for the mirror. Callers use proxy/cluster.h.
 */
#ifndef FLOE_PROXY_CLUSTER_IMPL_H
#define FLOE_PROXY_CLUSTER_IMPL_H

#include <sys/queue.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/cluster.h"
#include "routing/store.h"

#define CLUSTER_TXN_OPS 128 /* etcd's default --max-txn-ops */
#define CLUSTER_PIPELINE 8 /* txns of one import in flight at once */
#define CLUSTER_RETRY_MS 500 /* a watch or range that failed, again */
#define CLUSTER_APPLY_WAIT_MS 10000 /* a write's answer waits this long */
#define CLUSTER_WATCH_IDLE_MS (11 * 60 * 1000) /* past etcd's 10 min */

/* This node's copy of the reader inventory after a resync (cluster_rcopy.c). */
enum cluster_rcopy {
	CLUSTER_RCOPY_NONE, /* no resync: nothing was missed */
	CLUSTER_RCOPY_ASK, /* resynced: the want is not in etcd yet */
	CLUSTER_RCOPY_ASKED, /* the want is in etcd: a copy is awaited */
	CLUSTER_RCOPY_DONE, /* a copy answering it is merged */
};

/* How a change through this node ended (floe_cluster_writes_total). */
enum cluster_wrote {
	CLUSTER_WROTE_COMMITTED, /* etcd took it (or it changed nothing) */
	CLUSTER_WROTE_PENDING, /* a rollback held here, etcd away */
	CLUSTER_WROTE_CONFLICT, /* it lost to a change through another node */
	CLUSTER_WROTE_FAILED, /* etcd failed or was away; refused */
	CLUSTER_WROTE_N
};

struct etcd;
struct etcd_call;
struct etcd_event;
struct etcd_kv;
struct etcd_result;
struct etcd_watch;
struct etcd_watch_msg;
struct event;
struct store;
struct store_mirror;
struct cluster_write;
struct cluster_pending;

/* One key-value of a resync, copied out of a range page. */
struct cluster_kv {
	char *key; /* without the prefix */
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t mod_revision;
	int64_t lease;
};

struct cluster {
	struct floe *f;
	struct store *st;
	struct event_base *base;
	struct etcd *etcd;
	char *name;
	char *prefix;
	size_t plen;
	uint64_t lease_ms;
	unsigned nevents; /* event keys this node made */
	unsigned nimports; /* bulk imports this node began */

	/* The mirror (cluster_mirror.c). */
	int64_t applied; /* every revision up to this one is applied */
	int64_t stored; /* the revision the store holds (<= applied) */
	int64_t changed; /* of the last route or wave change (<= stored) */
	uint64_t cluster_id; /* etcd's, as of the store */
	uint64_t hash; /* of the routes' and waves' keys and revisions */
	bool loaded; /* the store holds a copy */
	bool watching; /* the watch is open and past its created message */
	int64_t connected_ms; /* since when connected, or 0 */
	unsigned resyncs;
	struct etcd_call *range; /* a resync in progress */
	struct cluster_kv *kvs; /* its pages so far */
	size_t nkvs;
	size_t kvcap;
	struct etcd_watch *watch;
	struct event *retry; /* restarts the watch or the resync */
	char last_error[256];

	/* This node's key (cluster.c). */
	int64_t lease;
	struct etcd_call *lcall; /* a grant or keepalive */
	struct etcd_call *pcall; /* the put of the node key */
	struct event *beat;
	int64_t beat_ms; /* last heartbeat written */
	json_t *nodes; /* name -> the node key's value, as last seen */
	json_t *imports; /* during a resync: import id -> its state */

	/* Reader sightings published (cluster_readers.c). */
	int64_t rlease; /* the lease batches go with */
	int64_t rlease_ms; /* when it was granted */
	struct etcd_call *rgrant;
	struct etcd_call *rput;
	unsigned char *rpend; /* records waiting to be put */
	size_t rplen;
	size_t rpcap;
	size_t rsent; /* of them, in the put in flight */
	unsigned rseq;
	uint64_t rdropped; /* records dropped: too many waiting */
	bool rfailing;

	int64_t lease_sent_us; /* mono: when the last grant or renewal left */

	/* Copies of the reader inventory after a resync (cluster_rcopy.c). */
	enum cluster_rcopy rcopy; /* this node's own */
	int64_t rwant_rev; /* of its want, as the watch saw it; 0: none */
	struct etcd_call *rask; /* the put or delete of its want */
	uint64_t rcopied; /* records merged from copies */
	char rcopy_from[128]; /* the node whose copy answered its want */
	json_t *rwants; /* other nodes' wants: name -> revision */
	char *rserve; /* the node this one copies to, or NULL */
	int64_t rserve_rev; /* the revision of that node's want */
	int64_t rserve_next_ms; /* after a failure: not before */
	int64_t rslease; /* the lease the copy's parts go with */
	struct etcd_call *rscall; /* its grant or a put */
	unsigned char rsafter[STORE_KEY_MAX]; /* the last record put */
	size_t rsafterlen;
	unsigned rsparts;
	uint64_t rsrecords;
	bool rsend; /* the put in flight is the end */

	/* The leader key (cluster_leader.c). */
	char leader[128]; /* its holder as last seen; "": none */
	int64_t leader_lease; /* the lease it goes with */
	int64_t leader_rev; /* the revision it was last seen at */
	bool leading; /* seen holding it with this node's lease */
	bool was_leader; /* cluster_is_leader when last checked */
	bool resigned; /* draining: never the leader again */
	int64_t sure_until_us; /* mono: the lease lives at least until */
	int64_t leading_since_ms;
	unsigned leader_changes; /* times this node became the leader */
	int64_t elease; /* the lease a campaign in flight puts */
	struct etcd_call *ecall; /* a campaign */

	/* Writes (cluster_write.c), and how those that ended did. */
	TAILQ_HEAD(, cluster_write) writes;
	uint64_t wrote[CLUSTER_WROTE_N];
	/* Rollbacks etcd has not taken yet (cluster_pending.c). */
	TAILQ_HEAD(, cluster_pending) pending;
};

/* cluster_mirror.c */
void cluster_mirror_start(struct cluster *);
void cluster_mirror_stop(struct cluster *);
/*
 * The mirror's etcd callbacks: a page of a resync's range, and a message
 * of the watch (extern for fuzz_mirror, which plays etcd to them).
 */
void cluster_range_cb(const struct etcd_result *, void *);
void cluster_watch_cb(const struct etcd_watch_msg *, void *);

/* cluster_hash.c */
uint64_t cluster_kv_hash(const char *key, size_t len, int64_t rev);
uint64_t cluster_record_hash(enum store_db, const unsigned char *kb,
    size_t klen, uint64_t seq);
uint64_t cluster_stored_hash(struct store_mirror *, enum store_db,
    const unsigned char *kb, size_t klen, int *rc);
void cluster_rehash(struct cluster *);

/* A wrapped record of a bulk import (cluster_import.c). */
struct cluster_wrap {
	const char *id;
	size_t idlen;
	const char *nv; /* the new record */
	size_t newlen;
	const char *was; /* the record it replaces, or NULL */
	size_t waslen;
};

/* cluster_import.c */
char *cluster_wrap(const char *id, const void *nv, size_t newlen,
    const void *was, size_t waslen, size_t *len);
bool cluster_wrapped(const char *, size_t);
int cluster_unwrap(const char *, size_t, struct cluster_wrap *);
int cluster_import_put(struct store_mirror *, enum store_db,
    const unsigned char *, size_t, const char *, size_t, int64_t, json_t *);
int cluster_import_replaced(struct store_mirror *, enum store_db,
    const unsigned char *, size_t, const char *, size_t);
int cluster_import_seen(struct store_mirror *, const char *, size_t,
    const char *, size_t, bool, bool *);
json_t *cluster_import_states(const struct cluster_kv *, size_t);
bool cluster_watch_import(struct store_mirror *, const struct etcd_event *,
    bool, enum store_db, const unsigned char *, size_t, const char *, size_t,
    int *, bool *);
int cluster_ledger_key(const char *, size_t, unsigned char *, size_t *);
size_t cluster_ledger_name(const unsigned char *, size_t, char *, size_t);

/* cluster_readers.c */
int cluster_readers_seen(struct cluster *, struct store_mirror *, const char *,
    size_t, const char *, size_t);
int cluster_readers_merge(struct store_mirror *, const char *, size_t, bool,
    size_t *);
void cluster_readers_free(struct cluster *);

/* cluster_rcopy.c */
void cluster_rcopy_want(struct cluster *);
void cluster_rcopy_tick(struct cluster *);
void cluster_rcopy_want_seen(struct cluster *, const char *, size_t, int64_t,
    bool, bool);
int cluster_rcopy_seen(struct cluster *, struct store_mirror *, const char *,
    size_t, const char *, size_t, bool);
void cluster_rcopy_status(const struct cluster *, json_t *);
void cluster_rcopy_free(struct cluster *);

/* cluster_write.c */
void cluster_writes_applied(struct cluster *);
size_t cluster_writes_waiting(const struct cluster *);
void cluster_writes_free(struct cluster *);

/* cluster_pending.c */
bool cluster_pending_has(const struct cluster *, uint32_t);
int cluster_pending_add(struct cluster *, uint32_t, const char *, size_t,
    const char *, size_t);
void cluster_pending_flush(struct cluster *);
void cluster_pending_load(struct cluster *);
int cluster_pending_reput(struct cluster *, struct store_mirror *, int64_t);
void cluster_pending_free(struct cluster *);

/* cluster_leader.c */
void cluster_leader_lease(struct cluster *, bool alive, int64_t sent_us,
    int64_t ttl);
void cluster_leader_beat(struct cluster *);
void cluster_leader_seen(struct cluster *, const char *value, size_t vlen,
    int64_t lease, int64_t rev, bool deleted);
void cluster_leader_stop(struct cluster *);

/* cluster.c */
void cluster_node_seen(struct cluster *, const char *key, size_t len,
    const char *value, size_t vlen, bool deleted);
void cluster_key(const struct cluster *, const char *, const void *, size_t,
    char **, size_t *);

#endif
