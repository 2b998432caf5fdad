/*
 * floe: store_index.c -- the flag store's by-wave index and counts, kept
 * in the txn that writes a route (store_write.c, store_mirror.c) so that
 * they never disagree with the objects DBI: bywave holds, under each
 * wave's 4-byte big-endian number, the keys of its routes as sorted
 * duplicates (the objects DBI's order); counts holds, under the same key,
 * how many of them are objects and how many rules. A wave's routes and a
 * store's per-wave counts are then read without a walk of every route.
 * A store from before the index gets it built when opened (store.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "lib/xmalloc.h"
#include "routing/store.h"
#include "routing/store_impl.h"

/* The byte a rule key ends with (routing/route.h's ROUTE_SEP_RULE). */
#define STORE_RULE_END 0x1d
#define STORE_COUNT_V1 1
#define STORE_COUNT_V1_LEN (1 + 8 + 8)

static bool store_key_rule(const void *, size_t);
static void store_tally_add(struct store_tally *, uint32_t, bool, int);
static int store_count_read(MDB_txn *, MDB_dbi, uint32_t,
    struct store_wave_count *);
static void store_count_decode(const MDB_val *, struct store_wave_count *);

/* Whether KEY is a namespace rule's. */
static bool
store_key_rule(const void *key, size_t keylen)
{
	return keylen > 0 &&
	    ((const unsigned char *)key)[keylen - 1] == STORE_RULE_END;
}

/* Count one route in or (DELTA -1) out of WAVE. */
static void
store_tally_add(struct store_tally *t, uint32_t wave, bool rule, int delta)
{
	size_t lo = 0, hi = t->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->v[mid].wave < wave)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->n || t->v[lo].wave != wave) {
		if (t->n == t->cap) {
			t->cap = t->cap != 0 ? t->cap * 2 : 8;
			t->v = xreallocarray(t->v, t->cap, sizeof(*t->v));
		}
		memmove(&t->v[lo + 1], &t->v[lo], (t->n - lo) * sizeof(*t->v));
		t->n++;
		memset(&t->v[lo], 0, sizeof(t->v[lo]));
		t->v[lo].wave = wave;
	}
	if (rule)
		t->v[lo].rules += delta;
	else
		t->v[lo].objects += delta;
}

/*
 * KEY moves from OLD's wave (OLD NULL: it had no route) to *TO (NULL: it
 * is deleted), in TXN: the index follows at once, the counts go into T
 * (store_tally_apply). 0 or an LMDB code.
 */
int
store_index_move(struct store *s, MDB_txn *txn, const void *key, size_t keylen,
    const struct store_route *old, const uint32_t *to, struct store_tally *t)
{
	unsigned char kb[4];
	MDB_val k = { sizeof(kb), kb }, v = { keylen, (void *)(uintptr_t)key };
	bool rule = store_key_rule(key, keylen);
	int rc;

	if (old != NULL && to != NULL && old->wave == *to)
		return 0;
	if (old != NULL) {
		store_wave_key(old->wave, kb);
		rc = mdb_del(txn, s->bywave, &k, &v);
		if (rc != 0 && rc != MDB_NOTFOUND)
			return rc;
		store_tally_add(t, old->wave, rule, -1);
	}
	if (to != NULL) {
		store_wave_key(*to, kb);
		v = (MDB_val) { keylen, (void *)(uintptr_t)key };
		rc = mdb_put(txn, s->bywave, &k, &v, MDB_NODUPDATA);
		if (rc != 0 && rc != MDB_KEYEXIST)
			return rc;
		store_tally_add(t, *to, rule, 1);
	}
	return 0;
}

/*
 * KEY is about to be put on wave *TO (NULL: deleted) in TXN: move it in
 * the index and the counts from where the objects DBI has it now. For
 * writes of one route at a time (the cluster mirror). 0 or LMDB's.
 */
int
store_index_route(struct store *s, MDB_txn *txn, const void *key, size_t keylen,
    const uint32_t *to)
{
	MDB_val k = { keylen, (void *)(uintptr_t)key }, v;
	struct store_tally t = { 0 };
	struct store_route old;
	bool found = false;
	int rc;

	if ((rc = mdb_get(txn, s->objects, &k, &v)) == 0)
		found = store_route_decode(&v, &old) == 0;
	else if (rc != MDB_NOTFOUND)
		return rc;
	if ((rc = store_index_move(s, txn, key, keylen, found ? &old : NULL, to,
		 &t)) != 0) {
		store_tally_clear(&t);
		return rc;
	}
	return store_tally_apply(s, txn, &t);
}

/* Decode a counts record into C (its wave left as it is). */
static void
store_count_decode(const MDB_val *v, struct store_wave_count *c)
{
	struct store_dec d = { v->mv_data, v->mv_size, 0 };

	(void)store_get_uint(&d, 1); /* STORE_COUNT_V1; newer ones extend */
	c->objects = store_get_uint(&d, 8);
	c->rules = store_get_uint(&d, 8);
}

/* Wave N's counts in TXN (zero when it has no record). 0 or LMDB's. */
static int
store_count_read(MDB_txn *txn, MDB_dbi dbi, uint32_t n,
    struct store_wave_count *c)
{
	unsigned char kb[4];
	MDB_val k = { sizeof(kb), kb }, v;
	int rc;

	memset(c, 0, sizeof(*c));
	c->wave = n;
	store_wave_key(n, kb);
	if ((rc = mdb_get(txn, dbi, &k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc != 0)
		return rc;
	store_count_decode(&v, c);
	return 0;
}

/* Add what T tallied to the counts in TXN, and empty T. 0 or LMDB's. */
int
store_tally_apply(struct store *s, MDB_txn *txn, struct store_tally *t)
{
	struct store_wave_count c;
	struct store_enc enc;
	unsigned char kb[4];
	MDB_val k = { sizeof(kb), kb }, v;
	size_t i;
	int rc = 0;

	for (i = 0; i < t->n && rc == 0; i++) {
		if (t->v[i].objects == 0 && t->v[i].rules == 0)
			continue;
		if ((rc = store_count_read(txn, s->counts, t->v[i].wave, &c)) !=
		    0)
			break;
		c.objects = (uint64_t)((int64_t)c.objects + t->v[i].objects);
		c.rules = (uint64_t)((int64_t)c.rules + t->v[i].rules);
		store_wave_key(t->v[i].wave, kb);
		if (c.objects == 0 && c.rules == 0) {
			rc = mdb_del(txn, s->counts, &k, NULL);
			if (rc == MDB_NOTFOUND)
				rc = 0;
			continue;
		}
		enc.len = 0;
		enc.buf[enc.len++] = STORE_COUNT_V1;
		store_put_u64(&enc, c.objects);
		store_put_u64(&enc, c.rules);
		v = (MDB_val) { enc.len, enc.buf };
		rc = mdb_put(txn, s->counts, &k, &v, 0);
	}
	store_tally_clear(t);
	return rc;
}

/* Free what T holds. */
void
store_tally_clear(struct store_tally *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/*
 * Build the index and counts from the objects DBI in TXN, over whatever
 * they held (a store from before them, or a mirror reset). 0 or LMDB's.
 */
int
store_index_build(struct store *s, MDB_txn *txn)
{
	struct store_tally t = { 0 };
	struct store_route r;
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = mdb_drop(txn, s->bywave, 0)) != 0 ||
	    (rc = mdb_drop(txn, s->counts, 0)) != 0)
		return rc;
	if ((rc = mdb_cursor_open(txn, s->objects, &c)) != 0)
		return rc;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (store_route_decode(&v, &r) == -1)
			continue; /* damaged: the walks skip it too */
		if ((rc = store_index_move(s, txn, k.mv_data, k.mv_size, NULL,
			 &r.wave, &t)) != 0)
			break;
	}
	mdb_cursor_close(c);
	if (rc != MDB_NOTFOUND) {
		store_tally_clear(&t);
		return rc;
	}
	return store_tally_apply(s, txn, &t);
}

/* Wave N's counts into C (zero when it has no routes). */
int
store_count_get(struct store *s, uint32_t n, struct store_wave_count *c)
{
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	rc = store_count_read(s->rtxn, s->counts, n, c);
	store_rend(s);
	if (rc != 0)
		return store_fail(s, "store_count_get", rc);
	return STORE_OK;
}

/* Call CB for every wave with routes, in numeric order. */
int
store_count_foreach(struct store *s, store_count_cb cb, void *arg)
{
	struct store_wave_count c;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->counts, &cur)) != 0) {
		store_rend(s);
		return store_fail(s, "store_count_foreach", rc);
	}
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 4)
			continue;
		c.wave = store_wave_num(k.mv_data);
		store_count_decode(&v, &c);
		if (cb(&c, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	mdb_cursor_close(cur);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, "store_count_foreach", rc);
	return STORE_OK;
}

/*
 * Call CB for the keys of wave N's routes that sort after AFTER
 * (AFTERLEN bytes; NULL or empty: from the first), in key order.
 */
int
store_wave_routes(struct store *s, uint32_t n, const void *after,
    size_t afterlen, store_key_cb cb, void *arg)
{
	unsigned char kb[4], key[STORE_KEY_MAX], from[STORE_KEY_MAX];
	MDB_cursor *c;
	MDB_val k = { sizeof(kb), kb }, v;
	size_t klen;
	int rc, op;

	if (afterlen > sizeof(from))
		return STORE_ERROR;
	store_wave_key(n, kb);
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->bywave, &c)) != 0) {
		store_rend(s);
		return store_fail(s, "store_wave_routes", rc);
	}
	op = MDB_SET;
	if (after != NULL && afterlen > 0) {
		memcpy(from, after, afterlen);
		v = (MDB_val) { afterlen, from };
		op = MDB_GET_BOTH_RANGE;
	}
	for (; (rc = mdb_cursor_get(c, &k, &v, op)) == 0; op = MDB_NEXT_DUP) {
		if (op == MDB_SET) {
			/* MDB_SET positions; the first value comes next. */
			if ((rc = mdb_cursor_get(c, &k, &v, MDB_FIRST_DUP)) !=
			    0)
				break;
		} else if (op == MDB_GET_BOTH_RANGE && v.mv_size == afterlen &&
		    memcmp(v.mv_data, from, afterlen) == 0)
			continue;
		if (v.mv_size > sizeof(key))
			continue;
		/* Copy out: the callback may read the store again. */
		klen = v.mv_size;
		memcpy(key, v.mv_data, klen);
		if (cb(key, klen, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	mdb_cursor_close(c);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, "store_wave_routes", rc);
	store_ok(s);
	return STORE_OK;
}
