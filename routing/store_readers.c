/*
 * floe: store_readers.c -- the readers DBI: each object's readers per side
 * and each identity's last sighting anywhere, merged in batches from the
 * in-memory inventory (one synced txn per flush), read back for the
 * admin API and the decommission gate, excused by an operator, pruned
 * when long idle. Records are versioned like every other of the store.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>
#include <lmdb.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "routing/store.h"
#include "routing/store_impl.h"

#define STORE_READER_V1 1
#define STORE_READER_V1_LEN (1 + 5 * 8 + 1 + STORE_UA_MAX)
#define STORE_READERS_TRIES 8 /* doublings of the map for one flush */

static void store_reader_encode(const struct store_reader *,
    struct store_enc *);
static void store_reader_decode(const MDB_val *, struct store_reader *);
static int store_readers_add_txn(struct store *, const struct store_reader_in *,
    size_t);
static bool store_reader_key_is(const unsigned char *, size_t, const char *,
    size_t, const void *, size_t);

_Static_assert(STORE_READER_V1_LEN <= sizeof(((struct store_enc *)0)->buf),
    "a reader record must fit struct store_enc");

/* R as a version 1 record. */
static void
store_reader_encode(const struct store_reader *r, struct store_enc *e)
{
	size_t n = strnlen(r->ua, sizeof(r->ua) - 1);

	e->len = 0;
	e->buf[e->len++] = STORE_READER_V1;
	store_put_u64(e, (uint64_t)r->first_ms);
	store_put_u64(e, (uint64_t)r->last_ms);
	store_put_u64(e, r->count);
	store_put_u64(e, (uint64_t)r->oldtag_ms);
	store_put_u64(e, (uint64_t)r->excused_ms);
	e->buf[e->len++] = (unsigned char)n;
	memcpy(e->buf + e->len, r->ua, n);
	e->len += n;
}

/* A record into R; what is missing reads as zeros. */
static void
store_reader_decode(const MDB_val *v, struct store_reader *r)
{
	struct store_dec d = { v->mv_data, v->mv_size, 1 };
	size_t n;

	memset(r, 0, sizeof(*r));
	r->first_ms = (int64_t)store_get_uint(&d, 8);
	r->last_ms = (int64_t)store_get_uint(&d, 8);
	r->count = store_get_uint(&d, 8);
	r->oldtag_ms = (int64_t)store_get_uint(&d, 8);
	r->excused_ms = (int64_t)store_get_uint(&d, 8);
	n = (size_t)store_get_uint(&d, 1);
	if (n > sizeof(r->ua) - 1)
		n = sizeof(r->ua) - 1;
	if (d.off + n <= d.len)
		memcpy(r->ua, d.p + d.off, n);
	r->ua[n] = '\0';
}

/* R packed into OUT (STORE_READER_PACK_MAX bytes); its length. */
size_t
store_reader_pack(const struct store_reader *r, unsigned char *out)
{
	struct store_enc enc;

	store_reader_encode(r, &enc);
	memcpy(out, enc.buf, enc.len);
	return enc.len;
}

/* A packed record into R. */
void
store_reader_unpack(const void *buf, size_t len, struct store_reader *r)
{
	MDB_val v = { len, (void *)(uintptr_t)buf };

	store_reader_decode(&v, r);
}

size_t
store_reader_wire(const struct store_reader_in *in, unsigned char *out)
{
	size_t rl;

	if (in->keylen == 0 || in->keylen > STORE_KEY_MAX)
		return 0;
	rl = store_reader_pack(&in->r, out + 4 + in->keylen);
	out[0] = (unsigned char)(in->keylen >> 8);
	out[1] = (unsigned char)in->keylen;
	memcpy(out + 2, in->key, in->keylen);
	out[2 + in->keylen] = (unsigned char)(rl >> 8);
	out[3 + in->keylen] = (unsigned char)rl;
	return 4 + in->keylen + rl;
}

size_t
store_reader_unwire(const void *buf, size_t avail, struct store_reader_in *in)
{
	const unsigned char *p = buf;
	size_t kl, rl;

	if (avail < 2 || avail - 2 < (kl = (size_t)p[0] << 8 | p[1]) + 2)
		return 0;
	rl = (size_t)p[2 + kl] << 8 | p[3 + kl];
	if (avail - 4 - kl < rl)
		return 0;
	in->key = p + 2;
	in->keylen = kl;
	store_reader_unpack(p + 4 + kl, rl, &in->r);
	return 4 + kl + rl;
}

/*
 * Merge N batches into their records in TXN: the earliest first, the
 * latest last, oldtag and excused_ms, the counts summed (COPY: the
 * larger kept, for records that are another node's whole count rather
 * than loads since its last flush), ua when given (COPY: when as recent
 * as what is stored). 0 or an LMDB code (the caller ends TXN).
 */
int
store_readers_merge(struct store *s, MDB_txn *txn,
    const struct store_reader_in *in, size_t n, bool copy)
{
	struct store_reader cur;
	struct store_enc enc;
	MDB_val k, v;
	size_t i;
	bool newer;
	int rc;

	for (i = 0; i < n; i++) {
		if (in[i].keylen == 0 || in[i].keylen > STORE_KEY_MAX)
			continue;
		k = (MDB_val) { in[i].keylen, (void *)(uintptr_t)in[i].key };
		rc = mdb_get(txn, s->readers, &k, &v);
		if (rc == MDB_NOTFOUND)
			memset(&cur, 0, sizeof(cur));
		else if (rc != 0)
			return rc;
		else
			store_reader_decode(&v, &cur);
		newer = in[i].r.last_ms >= cur.last_ms;
		if (cur.first_ms == 0 ||
		    (in[i].r.first_ms != 0 && in[i].r.first_ms < cur.first_ms))
			cur.first_ms = in[i].r.first_ms;
		if (in[i].r.last_ms > cur.last_ms)
			cur.last_ms = in[i].r.last_ms;
		if (in[i].r.oldtag_ms > cur.oldtag_ms)
			cur.oldtag_ms = in[i].r.oldtag_ms;
		if (in[i].r.excused_ms > cur.excused_ms)
			cur.excused_ms = in[i].r.excused_ms;
		if (!copy)
			cur.count += in[i].r.count;
		else if (in[i].r.count > cur.count)
			cur.count = in[i].r.count;
		if (in[i].r.ua[0] != '\0' && (!copy || newer))
			memcpy(cur.ua, in[i].r.ua, sizeof(cur.ua));
		store_reader_encode(&cur, &enc);
		v = (MDB_val) { enc.len, enc.buf };
		if ((rc = mdb_put(txn, s->readers, &k, &v, 0)) != 0)
			return rc;
	}
	return 0;
}

/* One flush: every batch merged into its record. 0 or an LMDB code. */
static int
store_readers_add_txn(struct store *s, const struct store_reader_in *in,
    size_t n)
{
	MDB_txn *txn;
	int rc;

	if ((rc = store_txn_begin(s, &txn)) != 0)
		return rc;
	if ((rc = store_readers_merge(s, txn, in, n, false)) != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	/* Commit frees the txn even when it fails. */
	return mdb_txn_commit(txn);
}

/* Merge N batches of sightings. */
int
store_readers_add(struct store *s, const struct store_reader_in *in, size_t n)
{
	size_t i;
	int rc, tries;

	for (i = 0; i < n; i++)
		if (in[i].keylen == 0 || in[i].keylen > STORE_KEY_MAX) {
			log_warnx("%s: batch %zu: key of %zu bytes", __func__,
			    i, in[i].keylen);
			return STORE_ERROR;
		}
	if (n == 0)
		return STORE_OK;
	rc = store_readers_add_txn(s, in, n);
	for (tries = 0; rc == MDB_MAP_FULL && tries < STORE_READERS_TRIES &&
	     store_grow(s) == 0;
	     tries++)
		rc = store_readers_add_txn(s, in, n);
	if (rc != 0)
		return store_fail(s, "store_readers_add", rc);
	store_ok(s);
	return STORE_OK;
}

/* The record under KEY. */
int
store_reader_get(struct store *s, const void *key, size_t keylen,
    struct store_reader *r)
{
	MDB_val k = { keylen, (void *)(uintptr_t)key }, v;
	int rc;

	if (keylen == 0 || keylen > STORE_KEY_MAX)
		return STORE_NOTFOUND;
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	rc = mdb_get(s->rtxn, s->readers, &k, &v);
	if (rc == 0)
		store_reader_decode(&v, r);
	store_rend(s);
	if (rc == MDB_NOTFOUND)
		return STORE_NOTFOUND;
	if (rc != 0)
		return store_fail(s, "store_reader_get", rc);
	return STORE_OK;
}

/*
 * Every record whose key starts with PREFIX, or (AFTER) every record
 * whose key sorts after it, in key order.
 */
static int
store_reader_walk(struct store *s, const void *prefix, size_t plen, bool after,
    store_reader_cb cb, void *arg)
{
	unsigned char kb[STORE_KEY_MAX];
	struct store_reader r;
	MDB_cursor *c;
	MDB_val k, v;
	size_t klen;
	int rc, op;

	if (plen > STORE_KEY_MAX)
		return STORE_OK;
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->readers, &c)) != 0) {
		store_rend(s);
		return store_fail(s, __func__, rc);
	}
	k = (MDB_val) { plen, (void *)(uintptr_t)prefix };
	for (op = plen > 0 ? MDB_SET_RANGE : MDB_FIRST;
	     (rc = mdb_cursor_get(c, &k, &v, op)) == 0; op = MDB_NEXT) {
		if (after) {
			if (k.mv_size == plen &&
			    memcmp(k.mv_data, prefix, plen) == 0)
				continue; /* the key itself */
		} else if (k.mv_size < plen ||
		    memcmp(k.mv_data, prefix, plen) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
		/* Copied out: the callback may read the store again. */
		if ((klen = k.mv_size) > sizeof(kb))
			continue;
		memcpy(kb, k.mv_data, klen);
		store_reader_decode(&v, &r);
		if (cb(kb, klen, &r, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	mdb_cursor_close(c);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, __func__, rc);
	store_ok(s);
	return STORE_OK;
}

/* Every record under PREFIX. */
int
store_reader_foreach(struct store *s, const void *prefix, size_t plen,
    store_reader_cb cb, void *arg)
{
	return store_reader_walk(s, prefix, plen, false, cb, arg);
}

/* Every record after AFTER (ALEN 0: every record). */
int
store_reader_foreach_after(struct store *s, const void *after, size_t alen,
    store_reader_cb cb, void *arg)
{
	return store_reader_walk(s, after, alen, true, cb, arg);
}

/*
 * Is KEY (LEN bytes) a warehouse record of IDENT, and of OBJ when OBJLEN
 * is not 0?
 */
static bool
store_reader_key_is(const unsigned char *key, size_t len, const char *ident,
    size_t idlen, const void *obj, size_t objlen)
{
	const unsigned char *z;

	if (len < idlen + 3 || key[0] == '\0')
		return false;
	if ((z = memchr(key, '\0', len)) == NULL ||
	    (size_t)(key + len - z) != idlen + 2 || z[1] != 'w' ||
	    memcmp(z + 2, ident, idlen) != 0)
		return false;
	return objlen == 0 ||
	    ((size_t)(z - key) == objlen && memcmp(key, obj, objlen) == 0);
}

/* The excusing txn's put (store_write.c runs it with its event). */
int
store_readers_excuse_put(struct store *s, MDB_txn *txn, const char *ident,
    size_t idlen, const void *obj, size_t objlen, int64_t now_ms, size_t *n)
{
	struct store_reader r;
	struct store_enc enc;
	MDB_cursor *c;
	MDB_val k, v;
	int rc, op;

	*n = 0;
	if ((rc = mdb_cursor_open(txn, s->readers, &c)) != 0)
		return rc;
	k = (MDB_val) { objlen, (void *)(uintptr_t)obj };
	for (op = objlen > 0 ? MDB_SET_RANGE : MDB_FIRST;
	     (rc = mdb_cursor_get(c, &k, &v, op)) == 0; op = MDB_NEXT) {
		if (objlen > 0 &&
		    (k.mv_size < objlen || memcmp(k.mv_data, obj, objlen) != 0))
			break;
		if (!store_reader_key_is(k.mv_data, k.mv_size, ident, idlen,
			obj, objlen))
			continue;
		store_reader_decode(&v, &r);
		r.excused_ms = now_ms;
		store_reader_encode(&r, &enc);
		v = (MDB_val) { enc.len, enc.buf };
		if ((rc = mdb_cursor_put(c, &k, &v, MDB_CURRENT)) != 0)
			break;
		(*n)++;
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND || rc == 0 ? 0 : rc;
}

/* Delete records idle since before BEFORE_MS. */
int
store_readers_prune(struct store *s, int64_t before_ms, size_t *n)
{
	struct store_reader r;
	MDB_cursor *c;
	MDB_txn *txn;
	MDB_val k, v;
	int rc;

	*n = 0;
	if ((rc = store_txn_begin(s, &txn)) != 0)
		return store_fail(s, "store_readers_prune", rc);
	if ((rc = mdb_cursor_open(txn, s->readers, &c)) != 0) {
		mdb_txn_abort(txn);
		return store_fail(s, "store_readers_prune", rc);
	}
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		store_reader_decode(&v, &r);
		if (r.last_ms >= before_ms)
			continue;
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
		(*n)++;
	}
	mdb_cursor_close(c);
	if (rc != MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return store_fail(s, "store_readers_prune", rc);
	}
	if (*n == 0) {
		mdb_txn_abort(txn);
		return STORE_OK;
	}
	if ((rc = mdb_txn_commit(txn)) != 0)
		return store_fail(s, "store_readers_prune", rc);
	return STORE_OK;
}
