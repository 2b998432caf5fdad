/*
 * floe: store_read.c -- the flag store's reads: lookups of one route or
 * wave copied out of the parked read txn, the two caches that keep their
 * answers for one snapshot (the request path reads a route from the map
 * once per change, not once per request), and walks in key order over
 * routes, waves, events and the ledger.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "lib/log.h"
#include "lib/xmalloc.h"
#include "routing/store.h"
#include "routing/store_impl.h"

static struct store_rcache *store_rcache_slot(struct store *,
    const unsigned char *, size_t);
static int store_walk_begin(struct store *, MDB_dbi, MDB_cursor **,
    const char *);
static int store_walk_end(struct store *, MDB_cursor *, int, const char *);

/*
 * Open a cursor on DBI inside a read bracket, for a walk. 0, or
 * STORE_ERROR (noted as WHAT's failure).
 */
static int
store_walk_begin(struct store *s, MDB_dbi dbi, MDB_cursor **c, const char *what)
{
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, dbi, c)) != 0) {
		store_rend(s);
		return store_fail(s, what, rc);
	}
	return 0;
}

/*
 * End a walk whose last cursor call returned RC (MDB_NOTFOUND: the end,
 * or a callback that stopped it): close C and the bracket. STORE_OK or
 * STORE_ERROR.
 */
static int
store_walk_end(struct store *s, MDB_cursor *c, int rc, const char *what)
{
	mdb_cursor_close(c);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, what, rc);
	store_ok(s);
	return STORE_OK;
}

/*
 * KEY's slot in the route cache (FNV-1a), or NULL for a key too long to
 * be kept there.
 */
static struct store_rcache *
store_rcache_slot(struct store *s, const unsigned char *key, size_t keylen)
{
	uint32_t h = 2166136261u;
	size_t i;

	if (keylen > STORE_RCACHE_KEY)
		return NULL;
	for (i = 0; i < keylen; i++)
		h = (h ^ key[i]) * 16777619u;
	return &s->rcache[h & (STORE_RCACHE - 1)];
}

/*
 * Copy the assignment of KEY into R. The answer, found or not, is kept
 * for the snapshot it was read in (see struct store): the data path reads
 * a route from the map once per change, not once per request.
 */
int
store_route_get(struct store *s, const void *key, size_t keylen,
    struct store_route *r)
{
	MDB_val k = { keylen, (void *)(uintptr_t)key }, v;
	struct store_rcache *e;
	int rc;

	if (keylen == 0 || keylen > STORE_KEY_MAX)
		return STORE_NOTFOUND;
	if (s->cap != NULL && (rc = store_cap_route(s, key, keylen, r)) != -2)
		return rc;
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	e = store_rcache_slot(s, key, keylen);
	if (e != NULL && e->gen == s->rgen && e->klen == keylen &&
	    memcmp(e->key, key, keylen) == 0) {
		*r = e->r;
		store_rend(s);
		return e->rc;
	}
	rc = mdb_get(s->rtxn, s->objects, &k, &v);
	if (rc == 0 && store_route_decode(&v, r) == -1) {
		store_damaged(s, "store_route_get: damaged record (%zu bytes)",
		    v.mv_size);
		rc = STORE_ERROR;
	} else if (rc == 0) {
		store_ok(s);
		rc = STORE_OK;
	} else if (rc == MDB_NOTFOUND) {
		store_ok(s);
		memset(r, 0, sizeof(*r));
		rc = STORE_NOTFOUND;
	} else
		rc = store_fail(s, "store_route_get", rc);
	if (e != NULL && rc != STORE_ERROR) {
		e->gen = s->rgen;
		e->klen = keylen;
		e->rc = rc;
		e->r = *r;
		memcpy(e->key, key, keylen);
	}
	store_rend(s);
	return rc;
}

/* Copy wave N into W. */
int
store_wave_get(struct store *s, uint32_t n, struct store_wave *w)
{
	unsigned char kb[4];
	MDB_val k = { sizeof(kb), kb }, v;
	int rc;

	if (store_cap_wave(s, n, w))
		return STORE_OK;
	store_wave_key(n, kb);
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	rc = mdb_get(s->rtxn, s->waves, &k, &v);
	if (rc == 0 && store_wave_decode(&v, w) == -1) {
		store_damaged(s, "store_wave_get: wave %u: damaged record", n);
		rc = STORE_ERROR;
	} else if (rc == 0) {
		w->n = n;
		store_ok(s);
		rc = STORE_OK;
	} else if (rc == MDB_NOTFOUND) {
		store_ok(s);
		rc = STORE_NOTFOUND;
	} else
		rc = store_fail(s, "store_wave_get", rc);
	store_rend(s);
	return rc;
}

/*
 * The routing fields of wave N, kept for the snapshot they were read in
 * (see struct store).
 */
int
store_wave_brief(struct store *s, uint32_t n, struct store_wave_brief *b)
{
	struct store_wcache *e;
	struct store_wave w;
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	e = &s->wcache[n % STORE_WCACHE];
	if (e->gen == s->rgen && e->n == n) {
		*b = e->b;
		store_rend(s);
		return e->rc;
	}
	rc = store_wave_get(s, n, &w);
	if (rc == STORE_OK) {
		b->state = w.state;
		b->pct = w.pct;
		b->seq = w.seq;
		b->since_ms = w.since_ms;
	} else
		memset(b, 0, sizeof(*b));
	if (rc != STORE_ERROR) {
		e->gen = s->rgen;
		e->n = n;
		e->rc = rc;
		e->b = *b;
	}
	store_rend(s);
	return rc;
}

/* Call CB for every assignment in key order. */
int
store_route_foreach(struct store *s, store_route_cb cb, void *arg)
{
	return store_route_foreach_after(s, NULL, 0, cb, arg);
}

/*
 * Call CB for every assignment whose key sorts after AFTER (AFTERLEN
 * bytes; NULL or empty: from the first), in key order.
 */
int
store_route_foreach_after(struct store *s, const void *after, size_t afterlen,
    store_route_cb cb, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	unsigned char key[STORE_KEY_MAX], from[STORE_KEY_MAX];
	struct store_route r;
	size_t klen;
	int rc, op = MDB_FIRST;

	if (after != NULL && afterlen > 0) {
		if (afterlen > sizeof(from))
			return STORE_ERROR;
		memcpy(from, after, afterlen);
		k.mv_data = from;
		k.mv_size = afterlen;
		op = MDB_SET_RANGE;
	}
	if (store_walk_begin(s, s->objects, &c, __func__) != 0)
		return STORE_ERROR;
	for (; (rc = mdb_cursor_get(c, &k, &v, op)) == 0; op = MDB_NEXT) {
		/* SET_RANGE lands on AFTER itself when it exists. */
		if (op == MDB_SET_RANGE && k.mv_size == afterlen &&
		    memcmp(k.mv_data, from, afterlen) == 0)
			continue;
		if (store_route_decode(&v, &r) == -1 ||
		    k.mv_size > sizeof(key)) {
			log_warnx("%s: skipping a damaged record", __func__);
			continue;
		}
		/* Copy out: the callback may read the store again. */
		klen = k.mv_size;
		memcpy(key, k.mv_data, klen);
		if (cb(key, klen, &r, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	return store_walk_end(s, c, rc, __func__);
}

/* Call CB for every wave record in numeric order. */
int
store_wave_foreach(struct store *s, store_wave_cb cb, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	struct store_wave w;
	int rc, op;

	if (store_walk_begin(s, s->waves, &c, "store_wave_foreach") != 0)
		return STORE_ERROR;
	for (op = MDB_FIRST; (rc = mdb_cursor_get(c, &k, &v, op)) == 0;
	     op = MDB_NEXT) {
		if (k.mv_size != 4 || store_wave_decode(&v, &w) == -1) {
			log_warnx("store_wave_foreach: skipping a damaged "
				  "record");
			continue;
		}
		w.n = store_wave_num(k.mv_data);
		if (cb(&w, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	return store_walk_end(s, c, rc, "store_wave_foreach");
}

/* Call CB for up to LIMIT events after sequence AFTER, oldest first. */
int
store_event_foreach(struct store *s, uint64_t after, size_t limit,
    store_event_cb cb, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	unsigned char kb[8];
	uint64_t seq;
	size_t n = 0;
	char *json;
	int rc, op, stop;

	if (after == UINT64_MAX)
		return STORE_OK;
	if (store_walk_begin(s, s->events, &c, "store_event_foreach") != 0)
		return STORE_ERROR;
	store_be64_key(after + 1, kb);
	k.mv_data = kb;
	k.mv_size = sizeof(kb);
	for (op = MDB_SET_RANGE; (rc = mdb_cursor_get(c, &k, &v, op)) == 0;
	     op = MDB_NEXT) {
		if (limit != 0 && n >= limit) {
			rc = MDB_NOTFOUND;
			break;
		}
		if (k.mv_size != 8)
			continue;
		seq = store_be64_num(k.mv_data);
		json = xmalloc(v.mv_size + 1);
		memcpy(json, v.mv_data, v.mv_size);
		json[v.mv_size] = '\0';
		stop = cb(seq, json, v.mv_size, arg);
		free(json);
		n++;
		if (stop != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	return store_walk_end(s, c, rc, "store_event_foreach");
}

/* The sequence of the last committed event (cached from meta). */
uint64_t
store_last_seq(struct store *s)
{
	return s->last_seq;
}

void
store_seq_seen(struct store *s, uint64_t seq)
{
	if (seq > s->last_seq)
		s->last_seq = seq;
}

/* The sequence of the last committed event, by any process (from meta). */
int
store_seq_read(struct store *s, uint64_t *seq)
{
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	rc = store_meta_seq(s->rtxn, s->meta, seq);
	if (rc != 0)
		rc = store_fail(s, "store_seq_read", rc);
	store_rend(s);
	return rc == 0 ? STORE_OK : STORE_ERROR;
}

/* Records of one object in a time range, oldest first. */
int
store_ledger_foreach(struct store *s, const void *obj, size_t objlen,
    int64_t from_ms, int64_t to_ms, store_ledger_cb cb, void *arg)
{
	unsigned char kb[STORE_KEY_MAX];
	const unsigned char *p;
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t ts;
	int rc, op;

	if (objlen == 0 || objlen > STORE_KEY_MAX - STORE_LEDGER_TS)
		return STORE_OK;
	if (from_ms < 0)
		from_ms = 0;
	if (to_ms < from_ms)
		return STORE_OK;
	if (store_walk_begin(s, s->ledger, &c, "store_ledger_foreach") != 0)
		return STORE_ERROR;
	memcpy(kb, obj, objlen);
	store_be64_key((uint64_t)from_ms, kb + objlen);
	k = (MDB_val) { objlen + STORE_LEDGER_TS, kb };
	for (op = MDB_SET_RANGE; (rc = mdb_cursor_get(c, &k, &v, op)) == 0;
	     op = MDB_NEXT) {
		p = k.mv_data;
		/*
		 * Another object's key may share this one as a prefix; its
		 * next byte is a name byte or a separator (>= 0x1d), above
		 * the leading 0 of any ts, so it sorts after this range.
		 */
		if (k.mv_size != objlen + STORE_LEDGER_TS ||
		    memcmp(p, obj, objlen) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
		ts = store_be64_num(p + objlen);
		if ((int64_t)ts > to_ms) {
			rc = MDB_NOTFOUND;
			break;
		}
		if (cb((int64_t)ts, v.mv_data, v.mv_size, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	return store_walk_end(s, c, rc, "store_ledger_foreach");
}

/* Each object with ledger records under PREFIX, once. */
int
store_ledger_objects(struct store *s, const void *prefix, size_t plen,
    store_ledger_obj_cb cb, void *arg)
{
	unsigned char kb[STORE_KEY_MAX + 1];
	MDB_cursor *c;
	MDB_val k, v;
	size_t olen;
	int rc, op;

	if (plen > STORE_KEY_MAX)
		return STORE_OK;
	if (store_walk_begin(s, s->ledger, &c, "store_ledger_objects") != 0)
		return STORE_ERROR;
	memcpy(kb, prefix, plen);
	k = (MDB_val) { plen, kb };
	op = plen > 0 ? MDB_SET_RANGE : MDB_FIRST;
	while ((rc = mdb_cursor_get(c, &k, &v, op)) == 0) {
		if (k.mv_size <= STORE_LEDGER_TS ||
		    memcmp(k.mv_data, prefix, plen) != 0) {
			if (k.mv_size > STORE_LEDGER_TS) {
				rc = MDB_NOTFOUND;
				break;
			}
			op = MDB_NEXT;
			continue;
		}
		olen = k.mv_size - STORE_LEDGER_TS;
		/* Copy out: the callback may read the store again. */
		memcpy(kb, k.mv_data, olen);
		if (cb(kb, olen, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
		/*
		 * Skip this object's other records. Every ts starts with a
		 * 0 byte (ts < 2^56), and a longer object's next byte is at
		 * least 0x1d, so OBJ + 0x01 lies between the two.
		 */
		kb[olen] = 0x01;
		k = (MDB_val) { olen + 1, kb };
		op = MDB_SET_RANGE;
	}
	return store_walk_end(s, c, rc, "store_ledger_objects");
}
