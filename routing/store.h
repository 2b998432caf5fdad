/*
 * floe: store.h -- the flag store. Owns the LMDB environment under
 * state_dir, its named databases (objects, waves, ledger, events, meta,
 * rlog, readers, bywave, counts) and the parked read txn. The only code
 * that writes floe's state: every change is one synced write txn that also
 * appends its event. Loop thread only.
 *
 * Records are stored in a versioned binary form (never JSON on the hot path);
 * a newer floe reads older, shorter records by zero-filling what is missing,
 * so new fields and states need no migration.
 */
#ifndef FLOE_ROUTING_STORE_H
#define FLOE_ROUTING_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
typedef struct json_t json_t;

#define STORE_KEY_MAX 511

enum store_rc {
	STORE_OK = 0,
	STORE_NOTFOUND = 1,
	STORE_REFUSED = 2, /* an update callback said no */
	STORE_ERROR = -1,
};

/* objects DBI: canonical object or rule key -> assignment. */
struct store_route {
	uint32_t wave;
	uint64_t seq; /* event sequence of the last change */
	int64_t since_ms; /* when it was assigned */
};

/* waves DBI: wave number -> state. Field meanings belong to wave.h. */
struct store_wave {
	uint32_t n;
	uint8_t state; /* enum wave_state */
	uint8_t pct; /* canary share, 0..100 */
	uint8_t flags; /* WAVE_F_* */
	uint64_t seq; /* event sequence of the last transition */
	int64_t since_ms; /* when the current state began */
	int64_t flipped_ms; /* last move off the warehouse (0: never) */
	int64_t frozen_ms; /* when frozen (0: never) */
	int64_t rollback_ms; /* last rollback (0: never) */
	uint32_t gate_min_clean; /* per-wave override, 0: policy default */
	int64_t gate_window_ms; /* per-wave override, 0: policy default */
	char reason[256]; /* why the current state */
	char actor[64]; /* who made it */
	char signoff[64]; /* who signed off (decommission gate) */
	int64_t signoff_ms; /* when (0: no sign-off) */
	/*
	 * The wave's warehouse reads over error_window just before it left
	 * the warehouse (the error trigger's baseline; 0 and 0: none).
	 */
	uint64_t base_requests;
	uint64_t base_errors;
	/*
	 * When the grace period announced at the last freeze ends (0: frozen
	 * by a floe that did not record it).
	 */
	int64_t grace_ends_ms;
	/*
	 * Split brain (frozen waves): when the alarm was raised (0: none)
	 * and when an operator last acknowledged one (0: never).
	 */
	int64_t alarm_ms;
	int64_t alarm_ack_ms;
};

/* One key and value, borrowed (ledger appends). */
struct store_kv {
	const void *key;
	size_t keylen;
	const void *val;
	size_t vallen;
};

/* The outcome of store_ledger_append. */
struct store_ledger_res {
	size_t added; /* new records */
	size_t duplicates; /* already stored with the same value */
	size_t conflict; /* on STORE_REFUSED: index of the first record
			    whose key holds a different value */
};

/*
 * Open (creating if needed) the store in DIR. On failure returns NULL and a
 * message in ERR.
 */
struct store *store_open(const char *dir, char *err, size_t errlen);
/*
 * Initial map size of stores opened afterwards (0: the default, 1 GiB).
 * The map doubles by itself when full; tests start small to exercise that.
 */
void store_set_mapsize(size_t);
void store_free(struct store *);
/* false once a read or write has failed until one succeeds again. */
bool store_is_healthy(const struct store *);
/*
 * Why the store is not healthy ("events: disk full (no space left on
 * device)"), or "" when it is. Valid until the next store call.
 */
const char *store_last_error(const struct store *);
/* Housekeeping: mdb_reader_check; logs stale readers it cleared. */
void store_maintain(struct store *);

/*
 * Reads. A batch of reads is bracketed by store_read_begin/_end (renew and
 * reset the parked txn); the getters copy values out. Without a bracket
 * each getter opens its own. Never hold a bracket across loop turns.
 */
int store_read_begin(struct store *);
void store_read_end(struct store *);
/*
 * The snapshot a read bracket begun now would see, without opening one:
 * the id of the last committed write txn plus 1, from LMDB's meta pages,
 * which sit in the map every process shares, so a commit by any process
 * moves it before its committer returns. 0 when nothing read may be kept
 * across brackets: the store is not healthy (a bracket is what notes it
 * healthy again), or cluster mode captures writes that reads see before
 * they commit.
 */
uint64_t store_snapshot(struct store *);
/* Inside a read bracket, the snapshot it reads (as store_snapshot). */
uint64_t store_read_snapshot(const struct store *);
/* A number no other store this process opened had (never 0). */
uint64_t store_serial(const struct store *);
int store_route_get(struct store *, const void *key, size_t keylen,
    struct store_route *);
int store_wave_get(struct store *, uint32_t n, struct store_wave *);

/*
 * What routing needs of a wave, for the request path: read from a small
 * cache of decoded waves that is valid for one LMDB snapshot (any commit,
 * by this process or another, empties it), so a request to a wave already
 * seen in this snapshot costs no lookup and no decode.
 */
struct store_wave_brief {
	uint8_t state;
	uint8_t pct;
	uint64_t seq;
	int64_t since_ms;
};
int store_wave_brief(struct store *, uint32_t n, struct store_wave_brief *);

/* Iterate in key order; CB returns non-zero to stop. */
typedef int (*store_route_cb)(const void *key, size_t keylen,
    const struct store_route *, void *arg);
typedef int (*store_wave_cb)(const struct store_wave *, void *arg);
int store_route_foreach(struct store *, store_route_cb, void *);
/* The same from the first key after AFTER (AFTERLEN bytes; NULL: all). */
int store_route_foreach_after(struct store *, const void *after,
    size_t afterlen, store_route_cb, void *);
int store_wave_foreach(struct store *, store_wave_cb, void *);

/*
 * The by-wave index (store_index.c), kept in the txn of every route
 * change: how many objects and rules each wave has, and its route keys,
 * read without a walk of every route.
 */
struct store_wave_count {
	uint32_t wave;
	uint64_t objects; /* table routes */
	uint64_t rules; /* namespace rules */
};
typedef int (*store_count_cb)(const struct store_wave_count *, void *arg);
/* Wave N's counts (zero when it has no route). STORE_OK or STORE_ERROR. */
int store_count_get(struct store *, uint32_t n, struct store_wave_count *);
/* Every wave with a route, in numeric order; CB returns non-zero to stop. */
int store_count_foreach(struct store *, store_count_cb, void *);
/*
 * The keys of wave N's routes after AFTER (AFTERLEN bytes; NULL: from the
 * first), in key order; CB returns non-zero to stop.
 */
typedef int (*store_key_cb)(const void *key, size_t keylen, void *arg);
int store_wave_routes(struct store *, uint32_t n, const void *after,
    size_t afterlen, store_key_cb, void *);

/*
 * Events: each value is a JSON object with "seq" and "ts" set by the store.
 * Iterate events with seq > AFTER, at most LIMIT (0: all).
 */
typedef int (
    *store_event_cb)(uint64_t seq, const char *json, size_t len, void *arg);
int store_event_foreach(struct store *, uint64_t after, size_t limit,
    store_event_cb, void *);
/* Highest sequence number assigned so far. */
uint64_t store_last_seq(struct store *);
/* Another process (an import's child) committed SEQ. */
void store_seq_seen(struct store *, uint64_t seq);
/*
 * The same read from the store, so that writes by another process count:
 * a snapshot's contents change only with it. STORE_OK or STORE_ERROR.
 */
int store_seq_read(struct store *, uint64_t *seq);

/*
 * Writes. EVENT is a JSON object (borrowed); the store adds "seq" and "ts"
 * (NOW_MS) and appends it in the same txn. All are synced before return.
 */
int store_route_put(struct store *, const void *key, size_t keylen,
    uint32_t wave, int64_t now_ms, json_t *event);
/* STORE_NOTFOUND if KEY has no assignment. */
int store_route_del(struct store *, const void *key, size_t keylen,
    int64_t now_ms, json_t *event);

/* One route of a bulk import (store_route_import). */
struct store_route_in {
	const void *key; /* canonical object or rule key, borrowed */
	uint32_t keylen;
	uint32_t wave;
	uint32_t no; /* the caller's (a line number); not stored */
	bool force; /* put without asking the callback */
};

/* The outcome of store_route_import. */
struct store_import_res {
	size_t set; /* routes written: new, or moved to another wave */
	size_t unchanged; /* already on the wave given: left as they were */
	size_t refused; /* on STORE_REFUSED: index of the refused route */
};

/*
 * LMDB's default key order: bytes, then the shorter key first. <0, 0, >0.
 */
int store_key_cmp(const void *a, size_t alen, const void *b, size_t blen);
/*
 * Sort IN into the order of LMDB's keys (equal keys by NO): an import in
 * key order touches each page once and runs several times faster.
 */
void store_route_in_sort(struct store_route_in *, size_t n);
/*
 * Assign N routes and append EVENT in one synced txn: all or nothing.
 * A route already on its wave is left alone (its seq and since stay);
 * every other one gets the txn's seq and NOW_MS. Before each such put,
 * unless the route has FORCE, CB (if not NULL) is asked with its index,
 * its current assignment (NULL: none) and the states of its current and
 * new waves as the txn reads them (0 for a wave without a record); it
 * returns STORE_OK to go on, STORE_REFUSED (nothing is written;
 * RES->refused says which) or STORE_ERROR. CB may be called again for the
 * same route when the map grows and the txn is retried, so it must not
 * keep state. A key given twice is applied in order (sort with
 * store_route_in_sort first). When no route changes nothing is written,
 * not even EVENT. The store sets "set", "unchanged" and "waves" (routes
 * set per wave: {"3": 1200}) in EVENT.
 */
typedef int (*store_route_import_cb)(size_t i, const struct store_route *old,
    int old_state, int new_state, void *arg);
int store_route_import(struct store *, const struct store_route_in *, size_t n,
    int64_t now_ms, store_route_import_cb, void *arg, json_t *event,
    struct store_import_res *res);

/*
 * The single write path for waves. Reads wave N (zero-filled with
 * state 0 if absent) inside a write txn and calls CB, which edits it and
 * the event in place and returns STORE_OK to commit, STORE_REFUSED to
 * record nothing. The new seq is set before the put.
 * A refusal may still be recorded as an event: when CB returns
 * STORE_REFUSED and *RECORD_REFUSAL was set true by CB, the event alone is
 * appended (with the wave unchanged).
 */
typedef int (*store_wave_update_cb)(struct store_wave *, json_t *event,
    bool *record_refusal, void *arg);
int store_wave_update(struct store *, uint32_t n, int64_t now_ms,
    store_wave_update_cb, void *arg, json_t *event);
/*
 * store_wave_update that also keeps the rollback log line *LINE (a C
 * string, no newline; read after CB returned STORE_OK, so that CB may
 * write it; NULL: none) pending in the rlog DBI, in the same txn: a
 * rollback and its line are durable together, in one synced commit.
 */
int store_wave_update_rlog(struct store *, uint32_t n, int64_t now_ms,
    store_wave_update_cb, void *arg, json_t *event, char *const *line);
/* Append an event that changes nothing else. */
int store_event_append(struct store *, int64_t now_ms, json_t *event);

/*
 * The ledger DBI (append-only; keys and values are routing/ledger.h's).
 * Append N records and EVENT in one synced txn: all or nothing. A key
 * already stored (or given twice) with the same value is a duplicate,
 * skipped and counted; with a different value nothing is written and the
 * answer is STORE_REFUSED with its index in RES->conflict. The store sets
 * "added" and "duplicates" in EVENT.
 */
int store_ledger_append(struct store *, const struct store_kv *, size_t n,
    int64_t now_ms, json_t *event, struct store_ledger_res *res);
/*
 * Call CB for the records of the object whose key is OBJ (OBJLEN bytes)
 * dated FROM_MS..TO_MS (inclusive), oldest first. VAL lives for the call.
 */
typedef int (
    *store_ledger_cb)(int64_t ts_ms, const void *val, size_t len, void *arg);
int store_ledger_foreach(struct store *, const void *obj, size_t objlen,
    int64_t from_ms, int64_t to_ms, store_ledger_cb, void *arg);
/*
 * Call CB once for every object with ledger records whose key starts with
 * PREFIX (PLEN bytes; 0 for all), in key order.
 */
typedef int (*store_ledger_obj_cb)(const void *obj, size_t objlen, void *arg);
int store_ledger_objects(struct store *, const void *prefix, size_t plen,
    store_ledger_obj_cb, void *arg);

/*
 * The rlog DBI: rollback log lines not yet durable in the log (policy/
 * rlog.c). Not floe's state: no event, no sequence. Put LINE (LEN bytes,
 * no newline) after the last one, its key in *ID; delete one that landed
 * (STORE_NOTFOUND if it is not there); read the oldest (STORE_NOTFOUND:
 * none; *LINE is NUL-terminated, caller frees); count them (no walk).
 */
int store_rlog_put(struct store *, const char *line, size_t len, uint64_t *id);
int store_rlog_del(struct store *, uint64_t id);
int store_rlog_first(struct store *, uint64_t *id, char **line, size_t *len);
int store_rlog_count(struct store *, size_t *n);
/*
 * LMDB's id of the last write txn committed to the store (by any
 * process): how many commits a change cost is the difference.
 */
uint64_t store_txnid(struct store *);

/*
 * The readers DBI (store_readers.c): who loaded which table from which
 * side. A key is either an object's reader, OBJECT 0x00 SIDE IDENTITY
 * (SIDE 'w' or 'l'), or an identity seen anywhere, 0x00 IDENTITY. Names
 * never hold a 0 byte, so the two never meet. Not state: flushed in
 * batches from memory (policy/readers.h), never on the request path.
 */
#define STORE_UA_MAX 64
struct store_reader {
	int64_t first_ms; /* first load */
	int64_t last_ms; /* last load */
	uint64_t count; /* loads */
	int64_t oldtag_ms; /* last revalidation with the other side's ETag */
	int64_t excused_ms; /* forgotten by an operator at (0: never) */
	char ua[STORE_UA_MAX]; /* the last User-Agent, cut */
};

/* One reader's sightings since the last flush: KEY borrowed. */
struct store_reader_in {
	const void *key;
	size_t keylen;
	struct store_reader r;
};

/*
 * Add N batches of sightings in one synced txn, each merged into the
 * record stored under its key: the earliest first, the latest last and
 * ua (when given), the counts summed; excused_ms stays as stored.
 */
int store_readers_add(struct store *, const struct store_reader_in *, size_t n);
/* The record under KEY: STORE_OK, STORE_NOTFOUND or STORE_ERROR. */
int store_reader_get(struct store *, const void *key, size_t keylen,
    struct store_reader *);
/* Every record whose key starts with PREFIX (PLEN bytes), in key order. */
typedef int (*store_reader_cb)(const void *key, size_t keylen,
    const struct store_reader *, void *arg);
int store_reader_foreach(struct store *, const void *prefix, size_t plen,
    store_reader_cb, void *arg);
/* Every record whose key sorts after AFTER (ALEN 0: every one). */
int store_reader_foreach_after(struct store *, const void *after, size_t alen,
    store_reader_cb, void *arg);
/*
 * Excuse IDENTITY (IDLEN bytes) as a reader of the warehouse copy of
 * OBJECT (OBJLEN bytes; 0: of every object): set excused_ms to NOW_MS in
 * its warehouse records, and append EVENT in the same synced txn. The
 * store sets "records" in EVENT, how many it excused; with none, nothing
 * is written and the answer is STORE_NOTFOUND.
 */
int store_readers_excuse(struct store *, const char *ident, size_t idlen,
    const void *obj, size_t objlen, int64_t now_ms, json_t *event);
/*
 * A record packed as the store keeps it (cluster mode sends sightings to
 * the other nodes so): OUT has room for STORE_READER_PACK_MAX bytes.
 */
#define STORE_READER_PACK_MAX (1 + 5 * 8 + 1 + STORE_UA_MAX)
size_t store_reader_pack(const struct store_reader *, unsigned char *out);
void store_reader_unpack(const void *, size_t, struct store_reader *);
/*
 * Sightings as they travel (cluster mode's batches in etcd, a flush sent
 * to a job helper): each its key's length (u16, big-endian), the key, its
 * packed record's length (u16) and the record as store_reader_pack packs
 * it; STORE_READER_WIRE_MAX bytes at most. store_reader_wire writes IN
 * into OUT and says how many bytes, or 0 for a key no record can have
 * (empty, or past STORE_KEY_MAX); store_reader_unwire reads the sighting
 * at P (AVAIL bytes there) into IN, its key borrowed, and says how many
 * bytes it took, or 0 if it is cut short.
 */
#define STORE_READER_WIRE_MAX (4 + STORE_KEY_MAX + STORE_READER_PACK_MAX)
size_t store_reader_wire(const struct store_reader_in *, unsigned char *out);
size_t store_reader_unwire(const void *p, size_t avail,
    struct store_reader_in *);
/* Delete records last loaded before BEFORE_MS; the count deleted in *N. */
int store_readers_prune(struct store *, int64_t before_ms, size_t *n);

/*
 * Cluster mode (proxy/cluster.h): etcd holds floe's state and this store
 * is the node's copy. Between store_capture_begin and store_capture_end
 * a write is decided as usual (its callbacks run on the local copy) but
 * not committed: its puts and deletes of objects, waves and events are
 * recorded in the capture and its txn is aborted; store_wave_get and
 * store_route_get see what was captured. The mirror then writes etcd's
 * state with store_mirror_*, which keep etcd's revisions as sequences.
 */
enum store_db {
	STORE_DB_OBJECTS, /* key: the canonical object or rule key */
	STORE_DB_WAVES, /* key: the wave number, 4 bytes big-endian */
	STORE_DB_EVENTS, /* key: the sequence, 8 bytes big-endian */
	STORE_DB_LEDGER, /* key: routing/ledger.h's object + timestamp */
};

struct store_cap_op {
	enum store_db db;
	bool del;
	unsigned char *key;
	size_t keylen;
	unsigned char *val; /* the record as stored; NULL for a delete */
	size_t vallen;
	uint64_t decided_seq; /* waves: the seq of the record it replaces */
};

struct store_capture {
	struct store_cap_op *ops;
	size_t n;
	size_t cap;
};

void store_capture_begin(struct store *, struct store_capture *);
/* Whether a capture is on (an outer caller commits what it records). */
bool store_capturing(const struct store *);
void store_capture_end(struct store *);
void store_capture_clear(struct store_capture *);

/*
 * One synced write txn of the mirror. A record put gets REV (etcd's
 * mod_revision) as its seq; an event is stored under REV with "seq" set to
 * it. Commit records REV as the last sequence and as the applied
 * revision, with CLUSTER_ID. Every call but begin ends the txn on failure.
 */
struct store_mirror;
struct store_mirror *store_mirror_begin(struct store *);
/* Empty objects, waves, events, the ledger and staging (a resync). */
int store_mirror_reset(struct store_mirror *);
int store_mirror_put(struct store_mirror *, enum store_db, const void *key,
    size_t keylen, const void *val, size_t vallen, int64_t rev);
/* STORE_OK also when KEY is not there. */
int store_mirror_del(struct store_mirror *, enum store_db, const void *key,
    size_t keylen);
/*
 * The sequence of the route (STORE_DB_OBJECTS) or wave (STORE_DB_WAVES)
 * at KEY as the txn has it: STORE_OK with *SEQ, STORE_NOTFOUND (none, or
 * not a record) or STORE_ERROR.
 */
int store_mirror_seq(struct store_mirror *, enum store_db, const void *key,
    size_t keylen, uint64_t *seq);
int store_mirror_commit(struct store_mirror *, int64_t rev,
    uint64_t cluster_id);
void store_mirror_abort(struct store_mirror *);
/*
 * Keep a rollback log line (LINE, LEN bytes, no newline) as the last
 * pending one (the rlog DBI) in M's txn: the line of a rollback the
 * mirror applies commits with it, and rlog_flush writes it afterwards,
 * once, even across a crash.
 */
int store_mirror_rlog(struct store_mirror *, const char *line, size_t len);
/*
 * Rollbacks pending for etcd (cluster_pending.c), kept in meta so that a
 * restart does not forget them: put one in the mirror's txn that applies
 * it, delete one etcd took (STORE_OK also if absent), read them all.
 */
int store_mirror_pending(struct store_mirror *, uint32_t wave, const void *val,
    size_t len);
int store_pending_del(struct store *, uint32_t wave);
typedef int (
    *store_pending_cb)(uint32_t wave, const void *val, size_t len, void *arg);
int store_pending_foreach(struct store *, store_pending_cb, void *arg);
/*
 * A bulk import's records staged until etcd holds its commit key
 * (proxy/cluster_import.c), kept in meta so that a restart keeps them:
 * stage one (the record VAL of KEY in DB, put at REV); drop one that a
 * later write replaced; at the commit apply every record of import ID
 * (APPLY) or, for an import that died, drop them all. A staged record is
 * never read by the data path.
 */
int store_mirror_stage(struct store_mirror *, const char *id, size_t idlen,
    enum store_db, const void *key, size_t keylen, const void *val,
    size_t vallen, int64_t rev);
int store_mirror_unstage_one(struct store_mirror *, const char *id,
    size_t idlen, enum store_db, const void *key, size_t keylen);
int store_mirror_unstage(struct store_mirror *, const char *id, size_t idlen,
    bool apply, size_t *n);
/* A copy of KEY's record in DB into *VAL (caller frees): STORE_OK or
 * STORE_NOTFOUND. */
int store_record_get(struct store *, enum store_db, const void *key,
    size_t keylen, void **val, size_t *vallen);
/* Decode a wave record (as captured or kept in etcd) into W. 0 or -1. */
int store_wave_record(const void *val, size_t len, struct store_wave *w);
/*
 * Merge another node's reader sightings (IN, N) in M's txn: its loads
 * since its last flush, or (COPY) records of its whole inventory, whose
 * counts are kept as the larger of the two rather than summed.
 */
int store_mirror_readers(struct store_mirror *, const struct store_reader_in *,
    size_t n, bool copy);
/* Decode a route record the same way. */
int store_route_record(const void *val, size_t len, struct store_route *r);
/* The applied revision and cluster id the last commit recorded (0, 0). */
int store_mirror_state(struct store *, int64_t *rev, uint64_t *cluster_id);

#endif
