/*
 * floe: store_mirror.c -- the flag store in cluster mode: the capture of
 * writes that are decided here but committed in etcd, and the mirror's
 * write txns that copy etcd's state in, keeping etcd's revisions as the
 * records' and events' sequences so that every node numbers alike.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <lmdb.h>

#include "lib/log.h"
#include "lib/xmalloc.h"
#include "routing/store.h"
#include "routing/store_impl.h"

static char STORE_META_CREV[] = "cluster_rev";
static char STORE_META_CID[] = "cluster_id";
static char STORE_META_PENDING[] = "cluster_pending/";
static char STORE_META_STAGING[] = "cluster_staging/";
#define STORE_STAGING_MAX (sizeof(STORE_META_STAGING) + 256 + 2 + STORE_KEY_MAX)
#define STORE_PENDING_KEY (sizeof(STORE_META_PENDING) - 1 + 4)

struct store_mirror {
	struct store *s;
	MDB_txn *txn;
	uint64_t top_event; /* the highest event sequence put */
	bool reset; /* a resync: the sequence may start again lower */
};

static int store_mirror_fail(struct store_mirror *, const char *, int);
static int store_meta_u64_put(MDB_txn *, MDB_dbi, char *, size_t, uint64_t);
static uint64_t store_meta_u64(MDB_txn *, MDB_dbi, char *, size_t);
static void store_pending_key(uint32_t, unsigned char[STORE_PENDING_KEY]);
static MDB_dbi store_db_dbi(const struct store *, enum store_db);
static size_t store_staging_key(unsigned char *, const char *, size_t, int,
    const void *, size_t);
static int store_staging_drop(struct store_mirror *, const unsigned char *,
    size_t, bool, size_t *);

/* Record writes in CAP instead of making them, until store_capture_end. */
void
store_capture_begin(struct store *s, struct store_capture *cap)
{
	memset(cap, 0, sizeof(*cap));
	s->cap = cap;
}

/* Whether writes are being captured. */
bool
store_capturing(const struct store *s)
{
	return s->cap != NULL;
}

/* Make writes again. */
void
store_capture_end(struct store *s)
{
	s->cap = NULL;
}

/*
 * Drop what the capture recorded past its first N ops: a write txn that
 * aborts (or is tried again after the map grew) must not leave its ops
 * for etcd.
 */
void
store_cap_rewind(struct store *s, size_t n)
{
	struct store_capture *cap = s->cap;

	if (cap == NULL)
		return;
	while (cap->n > n) {
		cap->n--;
		free(cap->ops[cap->n].key);
		free(cap->ops[cap->n].val);
	}
}

/* Free what CAP holds. */
void
store_capture_clear(struct store_capture *cap)
{
	size_t i;

	for (i = 0; i < cap->n; i++) {
		free(cap->ops[i].key);
		free(cap->ops[i].val);
	}
	free(cap->ops);
	memset(cap, 0, sizeof(*cap));
}

/*
 * Record a put (or with DEL a delete) of K in DBI in the capture, if one
 * is on and DBI is one etcd holds. Returns 0.
 */
int
store_cap_put(struct store *s, MDB_dbi dbi, const MDB_val *k, const MDB_val *v,
    bool del)
{
	struct store_capture *cap = s->cap;
	struct store_cap_op *op;

	if (cap == NULL)
		return 0;
	if (cap->n == cap->cap) {
		cap->cap = cap->cap == 0 ? 8 : cap->cap * 2;
		cap->ops = xreallocarray(cap->ops, cap->cap, sizeof(*cap->ops));
	}
	op = &cap->ops[cap->n];
	memset(op, 0, sizeof(*op));
	if (dbi == s->objects)
		op->db = STORE_DB_OBJECTS;
	else if (dbi == s->waves)
		op->db = STORE_DB_WAVES;
	else if (dbi == s->events)
		op->db = STORE_DB_EVENTS;
	else if (dbi == s->ledger)
		op->db = STORE_DB_LEDGER;
	else
		return 0;
	op->del = del;
	op->key = xmalloc(k->mv_size);
	memcpy(op->key, k->mv_data, k->mv_size);
	op->keylen = k->mv_size;
	if (!del) {
		op->val = xmalloc(v->mv_size);
		memcpy(op->val, v->mv_data, v->mv_size);
		op->vallen = v->mv_size;
	}
	cap->n++;
	return 0;
}

/* Wave N as captured, if a capture is on and holds it, into W. */
bool
store_cap_wave(struct store *s, uint32_t n, struct store_wave *w)
{
	unsigned char kb[4];
	MDB_val v;
	size_t i;

	if (s->cap == NULL)
		return false;
	store_wave_key(n, kb);
	for (i = s->cap->n; i-- > 0;) {
		const struct store_cap_op *op = &s->cap->ops[i];

		if (op->db != STORE_DB_WAVES || op->del ||
		    memcmp(op->key, kb, 4) != 0)
			continue;
		v = (MDB_val) { op->vallen, op->val };
		if (store_wave_decode(&v, w) == -1)
			return false;
		w->n = n;
		return true;
	}
	return false;
}

/*
 * The route of KEY as captured into R: STORE_OK, STORE_NOTFOUND (deleted),
 * or -2 when no capture holds it.
 */
int
store_cap_route(struct store *s, const void *key, size_t keylen,
    struct store_route *r)
{
	MDB_val v;
	size_t i;

	if (s->cap == NULL)
		return -2;
	for (i = s->cap->n; i-- > 0;) {
		const struct store_cap_op *op = &s->cap->ops[i];

		if (op->db != STORE_DB_OBJECTS || op->keylen != keylen ||
		    memcmp(op->key, key, keylen) != 0)
			continue;
		if (op->del) {
			memset(r, 0, sizeof(*r));
			return STORE_NOTFOUND;
		}
		v = (MDB_val) { op->vallen, op->val };
		return store_route_decode(&v, r) == 0 ? STORE_OK : -2;
	}
	return -2;
}

/* Abort M's txn after WHAT failed with RC, and free M. STORE_ERROR. */
static int
store_mirror_fail(struct store_mirror *m, const char *what, int rc)
{
	struct store *s = m->s;

	mdb_txn_abort(m->txn);
	free(m);
	store_damaged(s, "mirror: %s: %s", what, store_strerror(s, rc));
	return STORE_ERROR;
}

/* A write txn for the mirror, or NULL (logged). */
struct store_mirror *
store_mirror_begin(struct store *s)
{
	struct store_mirror *m;
	int rc;

	m = xcalloc(1, sizeof(*m));
	m->s = s;
	if ((rc = store_txn_begin(s, &m->txn)) != 0) {
		store_damaged(s, "mirror: txn: %s", store_strerror(s, rc));
		free(m);
		return NULL;
	}
	return m;
}

/* Empty the databases etcd holds. */
int
store_mirror_reset(struct store_mirror *m)
{
	int rc;

	unsigned char kb[sizeof(STORE_META_STAGING)];

	if ((rc = mdb_drop(m->txn, m->s->objects, 0)) != 0 ||
	    (rc = mdb_drop(m->txn, m->s->bywave, 0)) != 0 ||
	    (rc = mdb_drop(m->txn, m->s->counts, 0)) != 0 ||
	    (rc = mdb_drop(m->txn, m->s->waves, 0)) != 0 ||
	    (rc = mdb_drop(m->txn, m->s->events, 0)) != 0 ||
	    (rc = mdb_drop(m->txn, m->s->ledger, 0)) != 0)
		return store_mirror_fail(m, "reset", rc);
	m->reset = true;
	memcpy(kb, STORE_META_STAGING, sizeof(STORE_META_STAGING) - 1);
	return store_staging_drop(m, kb, sizeof(STORE_META_STAGING) - 1, false,
	    NULL);
}

/* Put one record of etcd's, with REV as its sequence. */
int
store_mirror_put(struct store_mirror *m, enum store_db db, const void *key,
    size_t keylen, const void *val, size_t vallen, int64_t rev)
{
	struct store *s = m->s;
	MDB_val k = { keylen, (void *)(uintptr_t)key },
		v = { vallen, (void *)(uintptr_t)val };
	struct store_route r;
	struct store_wave w;
	struct store_enc enc;
	unsigned char kb[8];
	json_t *ev;
	char *text = NULL;
	int rc;

	switch (db) {
	case STORE_DB_OBJECTS:
		if (keylen == 0 || keylen > STORE_KEY_MAX ||
		    store_route_decode(&v, &r) == -1)
			return STORE_NOTFOUND; /* not a record: skipped */
		r.seq = (uint64_t)rev;
		store_route_encode(&r, &enc);
		v = (MDB_val) { enc.len, enc.buf };
		if ((rc = store_index_route(s, m->txn, key, keylen, &r.wave)) ==
		    0)
			rc = mdb_put(m->txn, s->objects, &k, &v, 0);
		break;
	case STORE_DB_WAVES:
		if (keylen != 4 || store_wave_decode(&v, &w) == -1)
			return STORE_NOTFOUND;
		w.n = store_wave_num(key);
		w.seq = (uint64_t)rev;
		store_wave_encode(&w, &enc);
		v = (MDB_val) { enc.len, enc.buf };
		rc = mdb_put(m->txn, s->waves, &k, &v, 0);
		break;
	case STORE_DB_EVENTS:
		if ((ev = json_loadb(val, vallen, 0, NULL)) == NULL ||
		    !json_is_object(ev)) {
			json_decref(ev);
			return STORE_NOTFOUND;
		}
		(void)json_object_set_new(ev, "seq",
		    json_integer((json_int_t)rev));
		text = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(ev);
		if (text == NULL)
			return store_mirror_fail(m, "event", ENOMEM);
		store_be64_key((uint64_t)rev, kb);
		k = (MDB_val) { sizeof(kb), kb };
		v = (MDB_val) { strlen(text), text };
		rc = mdb_put(m->txn, s->events, &k, &v, 0);
		free(text);
		if ((uint64_t)rev > m->top_event)
			m->top_event = (uint64_t)rev;
		break;
	case STORE_DB_LEDGER:
		if (keylen <= STORE_LEDGER_TS || keylen > STORE_KEY_MAX ||
		    vallen == 0)
			return STORE_NOTFOUND;
		rc = mdb_put(m->txn, s->ledger, &k, &v, 0);
		break;
	default:
		return STORE_NOTFOUND;
	}
	if (rc != 0)
		return store_mirror_fail(m, "put", rc);
	return STORE_OK;
}

/* Delete one record etcd deleted. */
int
store_mirror_del(struct store_mirror *m, enum store_db db, const void *key,
    size_t keylen)
{
	MDB_val k = { keylen, (void *)(uintptr_t)key };
	MDB_dbi dbi;
	int rc;

	if (keylen == 0 || keylen > STORE_KEY_MAX)
		return STORE_OK;
	dbi = store_db_dbi(m->s, db);
	rc = 0;
	if (db == STORE_DB_OBJECTS)
		rc = store_index_route(m->s, m->txn, key, keylen, NULL);
	if (rc == 0)
		rc = mdb_del(m->txn, dbi, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return store_mirror_fail(m, "delete", rc);
	return STORE_OK;
}

/* The sequence of the route or wave at KEY in M's txn. */
int
store_mirror_seq(struct store_mirror *m, enum store_db db, const void *key,
    size_t keylen, uint64_t *seq)
{
	MDB_val k = { keylen, (void *)(uintptr_t)key }, v;
	struct store_route r;
	struct store_wave w;
	int rc;

	if (keylen == 0 || keylen > STORE_KEY_MAX ||
	    (db != STORE_DB_OBJECTS && db != STORE_DB_WAVES))
		return STORE_NOTFOUND;
	if ((rc = mdb_get(m->txn, store_db_dbi(m->s, db), &k, &v)) != 0) {
		if (rc == MDB_NOTFOUND)
			return STORE_NOTFOUND;
		return store_mirror_fail(m, "read", rc);
	}
	if (db == STORE_DB_OBJECTS) {
		if (store_route_decode(&v, &r) == -1)
			return STORE_NOTFOUND;
		*seq = r.seq;
	} else {
		if (store_wave_decode(&v, &w) == -1)
			return STORE_NOTFOUND;
		*seq = w.seq;
	}
	return STORE_OK;
}

/* Put V under the meta key NAME. */
static int
store_meta_u64_put(MDB_txn *txn, MDB_dbi meta, char *name, size_t len,
    uint64_t val)
{
	MDB_val k = { len, name }, v;
	struct store_enc enc;

	enc.len = 0;
	store_put_u64(&enc, val);
	v = (MDB_val) { enc.len, enc.buf };
	return mdb_put(txn, meta, &k, &v, 0);
}

/* The meta key NAME's number, 0 if absent. */
static uint64_t
store_meta_u64(MDB_txn *txn, MDB_dbi meta, char *name, size_t len)
{
	MDB_val k = { len, name }, v;
	struct store_dec d;

	if (mdb_get(txn, meta, &k, &v) != 0)
		return 0;
	d = (struct store_dec) { v.mv_data, v.mv_size, 0 };
	return store_get_uint(&d, 8);
}

/*
 * Commit M with REV as the applied revision. The last sequence is REV, or
 * the last one of an event numbered past it (a rollback pending for
 * etcd), and goes back only with a resync (another etcd cluster numbers
 * anew): what waits for a new sequence sees each change.
 */
int
store_mirror_commit(struct store_mirror *m, int64_t rev, uint64_t cluster_id)
{
	struct store *s = m->s;
	uint64_t seq = (uint64_t)rev;
	int rc;

	if (m->top_event > seq)
		seq = m->top_event;
	if (!m->reset && s->last_seq > seq)
		seq = s->last_seq;
	if ((rc = store_meta_seq_put(m->txn, s->meta, seq)) != 0 ||
	    (rc = store_meta_u64_put(m->txn, s->meta, STORE_META_CREV,
		 sizeof(STORE_META_CREV) - 1, (uint64_t)rev)) != 0 ||
	    (rc = store_meta_u64_put(m->txn, s->meta, STORE_META_CID,
		 sizeof(STORE_META_CID) - 1, cluster_id)) != 0)
		return store_mirror_fail(m, "meta", rc);
	rc = mdb_txn_commit(m->txn);
	free(m);
	if (rc != 0) {
		store_damaged(s, "mirror: commit: %s", store_strerror(s, rc));
		return STORE_ERROR;
	}
	s->last_seq = seq;
	store_ok(s);
	return STORE_OK;
}

/* Abort M. */
void
store_mirror_abort(struct store_mirror *m)
{
	if (m == NULL)
		return;
	mdb_txn_abort(m->txn);
	free(m);
}

/* The revision and cluster id the mirror last committed. */
int
store_mirror_state(struct store *s, int64_t *rev, uint64_t *cluster_id)
{
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	*rev = (int64_t)store_meta_u64(s->rtxn, s->meta, STORE_META_CREV,
	    sizeof(STORE_META_CREV) - 1);
	*cluster_id = store_meta_u64(s->rtxn, s->meta, STORE_META_CID,
	    sizeof(STORE_META_CID) - 1);
	store_rend(s);
	return STORE_OK;
}

/* Decode a wave record. */
int
store_wave_record(const void *val, size_t len, struct store_wave *w)
{
	MDB_val v = { len, (void *)(uintptr_t)val };

	return store_wave_decode(&v, w);
}

/* Merge another node's reader sightings in M's txn. */
int
store_mirror_readers(struct store_mirror *m, const struct store_reader_in *in,
    size_t n, bool copy)
{
	int rc;

	if ((rc = store_readers_merge(m->s, m->txn, in, n, copy)) != 0)
		return store_mirror_fail(m, "readers", rc);
	return STORE_OK;
}

/* Decode a route record. */
int
store_route_record(const void *val, size_t len, struct store_route *r)
{
	MDB_val v = { len, (void *)(uintptr_t)val };

	return store_route_decode(&v, r);
}

/* The meta key of wave N's pending rollback, in KB (19 bytes). */
static void
store_pending_key(uint32_t n, unsigned char kb[STORE_PENDING_KEY])
{
	memcpy(kb, STORE_META_PENDING, sizeof(STORE_META_PENDING) - 1);
	store_wave_key(n, kb + sizeof(STORE_META_PENDING) - 1);
}

/* Keep wave N's pending rollback VAL in M's txn. */
int
store_mirror_pending(struct store_mirror *m, uint32_t n, const void *val,
    size_t len)
{
	unsigned char kb[STORE_PENDING_KEY];
	MDB_val k = { sizeof(kb), kb }, v = { len, (void *)(uintptr_t)val };
	int rc;

	store_pending_key(n, kb);
	if ((rc = mdb_put(m->txn, m->s->meta, &k, &v, 0)) != 0)
		return store_mirror_fail(m, "pending", rc);
	return STORE_OK;
}

/* Forget wave N's pending rollback. */
int
store_pending_del(struct store *s, uint32_t n)
{
	unsigned char kb[STORE_PENDING_KEY];
	MDB_val k = { sizeof(kb), kb };
	MDB_txn *txn;
	int rc;

	store_pending_key(n, kb);
	if ((rc = store_txn_begin(s, &txn)) != 0)
		return store_fail(s, "store_pending_del", rc);
	rc = mdb_del(txn, s->meta, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return store_fail(s, "store_pending_del", rc);
	}
	if ((rc = mdb_txn_commit(txn)) != 0)
		return store_fail(s, "store_pending_del", rc);
	return STORE_OK;
}

/* Call CB for every pending rollback kept. */
int
store_pending_foreach(struct store *s, store_pending_cb cb, void *arg)
{
	size_t plen = sizeof(STORE_META_PENDING) - 1;
	MDB_cursor *c;
	MDB_val k = { plen, STORE_META_PENDING }, v;
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->meta, &c)) != 0) {
		store_rend(s);
		return store_fail(s, "store_pending_foreach", rc);
	}
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size != STORE_PENDING_KEY ||
		    memcmp(k.mv_data, STORE_META_PENDING, plen) != 0)
			break;
		if (cb(store_wave_num((unsigned char *)k.mv_data + plen),
			v.mv_data, v.mv_size, arg) != 0)
			break;
	}
	mdb_cursor_close(c);
	store_rend(s);
	return STORE_OK;
}

/* The database DB names. */
static MDB_dbi
store_db_dbi(const struct store *s, enum store_db db)
{
	switch (db) {
	case STORE_DB_OBJECTS:
		return s->objects;
	case STORE_DB_WAVES:
		return s->waves;
	case STORE_DB_LEDGER:
		return s->ledger;
	case STORE_DB_EVENTS:
		break;
	}
	return s->events;
}

/*
 * The meta key of a staged record, in KB (STORE_STAGING_MAX bytes):
 * "cluster_staging/" ID NUL DB KEY; with DB -1, only up to the NUL (the
 * prefix of all of ID's). Its length, or 0 when ID or KEY is too long.
 */
static size_t
store_staging_key(unsigned char *kb, const char *id, size_t idlen, int db,
    const void *key, size_t keylen)
{
	size_t n = sizeof(STORE_META_STAGING) - 1;

	if (idlen == 0 || idlen > 256 || keylen > STORE_KEY_MAX)
		return 0;
	memcpy(kb, STORE_META_STAGING, n);
	memcpy(kb + n, id, idlen);
	n += idlen;
	kb[n++] = '\0';
	if (db < 0)
		return n;
	kb[n++] = (unsigned char)db;
	memcpy(kb + n, key, keylen);
	return n + keylen;
}

/* Stage VAL (of KEY in DB, put at REV) under import ID. */
int
store_mirror_stage(struct store_mirror *m, const char *id, size_t idlen,
    enum store_db db, const void *key, size_t keylen, const void *val,
    size_t vallen, int64_t rev)
{
	unsigned char kb[STORE_STAGING_MAX], *p;
	MDB_val k, v;
	size_t n;
	int rc;

	if ((n = store_staging_key(kb, id, idlen, (int)db, key, keylen)) == 0)
		return STORE_NOTFOUND;
	/* MDB_RESERVE: the revision, then the record, written in place. */
	k = (MDB_val) { n, kb };
	v = (MDB_val) { 8 + vallen, NULL };
	if ((rc = mdb_put(m->txn, m->s->meta, &k, &v, MDB_RESERVE)) != 0)
		return store_mirror_fail(m, "stage", rc);
	p = v.mv_data;
	store_be64_key((uint64_t)rev, p);
	memcpy(p + 8, val, vallen);
	return STORE_OK;
}

/* Drop the staged record of KEY in DB under import ID, if any. */
int
store_mirror_unstage_one(struct store_mirror *m, const char *id, size_t idlen,
    enum store_db db, const void *key, size_t keylen)
{
	unsigned char kb[STORE_STAGING_MAX];
	MDB_val k;
	size_t n;
	int rc;

	if ((n = store_staging_key(kb, id, idlen, (int)db, key, keylen)) == 0)
		return STORE_OK;
	k = (MDB_val) { n, kb };
	rc = mdb_del(m->txn, m->s->meta, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return store_mirror_fail(m, "unstage", rc);
	return STORE_OK;
}

/*
 * Every staged record whose meta key starts with PFX (PLEN bytes): put
 * where it belongs at its revision (APPLY), and deleted. Their number in
 * *N if N is not NULL.
 */
static int
store_staging_drop(struct store_mirror *m, const unsigned char *pfx,
    size_t plen, bool apply, size_t *n)
{
	MDB_cursor *c;
	MDB_val k = { plen, (void *)(uintptr_t)pfx }, v;
	const unsigned char *kp;
	size_t at, idlen;
	int rc;

	if (n != NULL)
		*n = 0;
	if ((rc = mdb_cursor_open(m->txn, m->s->meta, &c)) != 0)
		return store_mirror_fail(m, "staging", rc);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)) {
		if (k.mv_size < plen || memcmp(k.mv_data, pfx, plen) != 0)
			break;
		kp = k.mv_data;
		at = sizeof(STORE_META_STAGING) - 1;
		for (idlen = 0; at + idlen < k.mv_size && kp[at + idlen] != 0;
		     idlen++)
			;
		at += idlen + 1;
		if (apply && at < k.mv_size && v.mv_size >= 8) {
			/* Put copies what it needs before the delete. */
			rc = store_mirror_put(m, (enum store_db)kp[at],
			    kp + at + 1, k.mv_size - at - 1,
			    (const unsigned char *)v.mv_data + 8, v.mv_size - 8,
			    (int64_t)store_be64_num(v.mv_data));
			if (rc == STORE_ERROR) {
				/* The txn is over (and C with it). */
				return STORE_ERROR;
			}
		}
		if ((rc = mdb_cursor_del(c, 0)) != 0) {
			mdb_cursor_close(c);
			return store_mirror_fail(m, "staging", rc);
		}
		if (n != NULL)
			(*n)++;
		/* Start the next lookup from the prefix again. */
		k = (MDB_val) { plen, (void *)(uintptr_t)pfx };
	}
	mdb_cursor_close(c);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return store_mirror_fail(m, "staging", rc);
	return STORE_OK;
}

/* Apply (APPLY) or drop every record staged under import ID. */
int
store_mirror_unstage(struct store_mirror *m, const char *id, size_t idlen,
    bool apply, size_t *n)
{
	unsigned char kb[STORE_STAGING_MAX];
	size_t len;

	if (n != NULL)
		*n = 0;
	if ((len = store_staging_key(kb, id, idlen, -1, NULL, 0)) == 0)
		return STORE_OK;
	return store_staging_drop(m, kb, len, apply, n);
}

/* A copy of KEY's record in DB. */
int
store_record_get(struct store *s, enum store_db db, const void *key,
    size_t keylen, void **val, size_t *vallen)
{
	MDB_val k = { keylen, (void *)(uintptr_t)key }, v;
	int rc;

	*val = NULL;
	*vallen = 0;
	if (keylen == 0 || keylen > STORE_KEY_MAX)
		return STORE_NOTFOUND;
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	rc = mdb_get(s->rtxn, store_db_dbi(s, db), &k, &v);
	if (rc == 0) {
		*val = xmalloc(v.mv_size + 1);
		memcpy(*val, v.mv_data, v.mv_size);
		*vallen = v.mv_size;
	}
	store_rend(s);
	if (rc == MDB_NOTFOUND)
		return STORE_NOTFOUND;
	if (rc != 0)
		return store_fail(s, "store_record_get", rc);
	return STORE_OK;
}

/* Keep LINE as the last pending rollback log line, in M's txn. */
int
store_mirror_rlog(struct store_mirror *m, const char *line, size_t len)
{
	MDB_cursor *c;
	MDB_val k, v;
	unsigned char kb[8];
	uint64_t next = 1;
	int rc;

	if ((rc = mdb_cursor_open(m->txn, m->s->rlog, &c)) != 0)
		return store_mirror_fail(m, "rlog", rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	if (rc == 0 && k.mv_size == 8)
		next = store_be64_num(k.mv_data) + 1;
	mdb_cursor_close(c);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return store_mirror_fail(m, "rlog", rc);
	store_be64_key(next, kb);
	k = (MDB_val) { sizeof(kb), kb };
	v = (MDB_val) { len, (void *)(uintptr_t)line };
	if ((rc = mdb_put(m->txn, m->s->rlog, &k, &v, MDB_APPEND)) != 0)
		return store_mirror_fail(m, "rlog", rc);
	return STORE_OK;
}
