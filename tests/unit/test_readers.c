/*
 * floe: test_readers.c -- the reader inventory's table: a load noted per
 * object, side and identity and per identity, the same through the
 * request path's hints (readers_see), never into entries given to
 * another reader; sightings taken and given back; the longest idle
 * entry replaced when full, the index whole after
 * evictions; the memory bound with 10,000 identities x 1,000 tables; keys
 * too long; the stale-reader rule at its edges; and the store's readers
 * database: batches merged, read back by prefix, excused, pruned.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "policy/readers.h"
#include "routing/route.h"
#include "routing/store.h"
#include "tests/unit/routing_tmp.h"

#define NOW 1800000000000LL
#define D (24 * 3600 * 1000LL)

/* The table db.TNAME. */
static struct route_obj
obj(const char *tname)
{
	struct route_obj o;

	assert_int_equal(route_obj_table("db", 2, tname, strlen(tname), &o), 0);
	return o;
}

/* Take everything dirty; how many. */
static size_t
take_all(struct readers *t, struct readers_item *it, size_t max)
{
	return readers_take(t, it, max);
}

/* The item of OBJ/SIDE/IDENT (OBJ NULL: the identity's) in IT, or NULL. */
static const struct readers_item *
find(const struct readers_item *it, size_t n, const struct route_obj *o,
    enum route_side side, const char *ident)
{
	unsigned char key[READERS_KEY_MAX];
	size_t len =
		   readers_key(key, sizeof(key), o, side, ident, strlen(ident)),
	       i;

	for (i = 0; i < n; i++)
		if (it[i].keylen == len && memcmp(it[i].key, key, len) == 0)
			return &it[i];
	return NULL;
}

/* Loads noted per object, side and identity, and per identity. */
static void
test_note_take(void **state __unused)
{
	struct readers *t = readers_new(64);
	struct readers_item it[16];
	struct route_obj a = obj("orders"), b = obj("users");
	const struct readers_item *x;
	struct readers_stats st;
	size_t n;

	readers_note(t, &a, ROUTE_WAREHOUSE, "alice", 5, "spark/3.5", 9, false,
	    NOW);
	readers_note(t, &a, ROUTE_WAREHOUSE, "alice", 5, NULL, 0, false,
	    NOW + 10);
	readers_note(t, &a, ROUTE_LAKEHOUSE, "alice", 5, "spark/3.5", 9, true,
	    NOW + 20);
	readers_note(t, &b, ROUTE_WAREHOUSE, "bob", 3, "trino", 5, false,
	    NOW + 30);
	/* Objects: a/w/alice, a/l/alice, b/w/bob; identities: alice, bob. */
	assert_int_equal(readers_dirty(t), 5);
	n = take_all(t, it, 16);
	assert_int_equal(n, 5);
	assert_int_equal(readers_dirty(t), 0);
	x = find(it, n, &a, ROUTE_WAREHOUSE, "alice");
	assert_non_null(x);
	assert_int_equal(x->r.count, 2);
	assert_int_equal(x->r.first_ms, NOW);
	assert_int_equal(x->r.last_ms, NOW + 10);
	assert_int_equal(x->r.oldtag_ms, 0);
	assert_string_equal(x->r.ua, "spark/3.5");
	x = find(it, n, &a, ROUTE_LAKEHOUSE, "alice");
	assert_non_null(x);
	assert_int_equal(x->r.oldtag_ms, NOW + 20);
	x = find(it, n, NULL, ROUTE_WAREHOUSE, "alice");
	assert_non_null(x);
	assert_int_equal(x->r.count, 3);
	assert_int_equal(x->r.last_ms, NOW + 20);
	/* Taken once: the counts start again, the times stay. */
	readers_note(t, &a, ROUTE_WAREHOUSE, "alice", 5, NULL, 0, false,
	    NOW + 40);
	n = take_all(t, it, 16);
	assert_int_equal(n, 2);
	x = find(it, n, &a, ROUTE_WAREHOUSE, "alice");
	assert_int_equal(x->r.count, 1);
	assert_int_equal(x->r.first_ms, NOW);
	/* A failed flush gives the counts back. */
	readers_give_back(t, it, n);
	assert_int_equal(readers_dirty(t), 2);
	n = take_all(t, it, 16);
	x = find(it, n, NULL, ROUTE_WAREHOUSE, "alice");
	assert_int_equal(x->r.count, 1);
	/* Take at most MAX at a time. */
	readers_note(t, &a, ROUTE_WAREHOUSE, "carol", 5, NULL, 0, false, NOW);
	assert_int_equal(readers_take(t, it, 1), 1);
	assert_int_equal(readers_take(t, it, 16), 1);
	readers_stats(t, &st);
	assert_int_equal(st.noted, 6);
	assert_int_equal(st.evicted, 0);
	assert_int_equal(st.used, 7);
	readers_free(t);
}

/*
 * A take reads from the most recent entry on and still finds a dirty one
 * far behind clean ones (given back after a failed flush).
 */
static void
test_take_order(void **state __unused)
{
	struct readers *t = readers_new(64);
	struct readers_item it[16], old[16];
	struct route_obj o[6] = { obj("t0"), obj("t1"), obj("t2"), obj("t3"),
		obj("t4"), obj("t5") };
	size_t i, n, nold;

	for (i = 0; i < 6; i++)
		readers_note(t, &o[i], ROUTE_WAREHOUSE, "x", 1, NULL, 0, false,
		    NOW + (int64_t)i);
	/* t0/x is the longest idle: take it apart to give it back later. */
	nold = readers_take(t, old, 16);
	assert_int_equal(nold, 7);
	readers_note(t, &o[5], ROUTE_WAREHOUSE, "x", 1, NULL, 0, false,
	    NOW + 10);
	for (i = 0; i < nold; i++)
		if (find(old, nold, &o[0], ROUTE_WAREHOUSE, "x") == &old[i])
			readers_give_back(t, &old[i], 1);
	assert_int_equal(readers_dirty(t), 3);
	n = readers_take(t, it, 16);
	assert_int_equal(n, 3);
	assert_non_null(find(it, n, &o[0], ROUTE_WAREHOUSE, "x"));
	assert_non_null(find(it, n, &o[5], ROUTE_WAREHOUSE, "x"));
	assert_non_null(find(it, n, NULL, ROUTE_WAREHOUSE, "x"));
	assert_int_equal(readers_dirty(t), 0);
	readers_free(t);
}

/* Full: the longest idle goes, whatever was noted first. */
static void
test_eviction(void **state __unused)
{
	struct readers *t = readers_new(4);
	struct readers_item it[8];
	struct route_obj a = obj("a"), b = obj("b"), c = obj("c");
	struct readers_stats st;
	size_t n;

	/* x: a/x and x; then b/x: 3 entries. */
	readers_note(t, &a, ROUTE_WAREHOUSE, "x", 1, NULL, 0, false, NOW + 1);
	readers_note(t, &b, ROUTE_WAREHOUSE, "x", 1, NULL, 0, false, NOW + 2);
	assert_int_equal(take_all(t, it, 8), 3);
	/* a/x touched again: now b/x is the longest idle. */
	readers_note(t, &a, ROUTE_WAREHOUSE, "x", 1, NULL, 0, false, NOW + 3);
	readers_note(t, &c, ROUTE_WAREHOUSE, "x", 1, NULL, 0, false, NOW + 4);
	readers_stats(t, &st);
	assert_int_equal(st.used, 4);
	assert_int_equal(st.evicted, 0);
	/* y: c/y and y: two more, so b/x (clean) and then a/x go. */
	readers_note(t, &c, ROUTE_WAREHOUSE, "y", 1, NULL, 0, false, NOW + 5);
	readers_stats(t, &st);
	assert_int_equal(st.used, 4);
	assert_int_equal(st.evicted, 2);
	assert_int_equal(st.evicted_dirty, 1); /* a/x had a load not taken */
	n = take_all(t, it, 8);
	assert_null(find(it, n, &b, ROUTE_WAREHOUSE, "x"));
	assert_null(find(it, n, &a, ROUTE_WAREHOUSE, "x"));
	assert_non_null(find(it, n, &c, ROUTE_WAREHOUSE, "y"));
	assert_non_null(find(it, n, &c, ROUTE_WAREHOUSE, "x"));
	readers_free(t);
}

/*
 * The request path's readers_see: the same records as readers_note for a
 * name, an address and a token (kept as "token:" and its hash, never the
 * token), loads seen again through the hint, in the same idle order.
 */
static void
test_see(void **state __unused)
{
	struct readers *a = readers_new(64), *b = readers_new(64);
	struct readers_item ia[16], ib[16];
	struct route_obj o = obj("orders"), u = obj("users_and_more");
	struct readers_who alice = { 0x1234, "alice", 5 };
	struct readers_who addr = { 0x5678, "10.0.0.7", 8 };
	struct readers_who tok = { 0xfedcba9876543210ULL, NULL, 0 };
	const struct readers_item *x, *y;
	char tid[READERS_IDENT_MAX];
	struct readers_stats sa, sb;
	size_t na, nb, i, round;

	assert_int_equal(readers_token_ident(tok.hash, tid, sizeof(tid)), 22);
	assert_string_equal(tid, "token:fedcba9876543210");
	assert_int_equal(readers_token_ident(tok.hash, tid, 22), 0);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 3; i++) {
			int64_t now = NOW + (int64_t)(round * 100 + i * 10);

			readers_see(a, &o, ROUTE_WAREHOUSE, &alice, "spark/3.5",
			    9, false, now);
			readers_note(b, &o, ROUTE_WAREHOUSE, "alice", 5,
			    "spark/3.5", 9, false, now);
			readers_see(a, &u, ROUTE_LAKEHOUSE, &addr,
			    i == 2 ? "trino/4" : NULL, i == 2 ? 7 : 0, i == 1,
			    now + 1);
			readers_note(b, &u, ROUTE_LAKEHOUSE, "10.0.0.7", 8,
			    i == 2 ? "trino/4" : NULL, i == 2 ? 7 : 0, i == 1,
			    now + 1);
			readers_see(a, &o, ROUTE_LAKEHOUSE, &tok, "pyiceberg",
			    9, false, now + 2);
			readers_note(b, &o, ROUTE_LAKEHOUSE, tid, 22,
			    "pyiceberg", 9, false, now + 2);
		}
		na = readers_take(a, ia, 16);
		nb = readers_take(b, ib, 16);
		assert_int_equal(na, 6);
		assert_int_equal(nb, na);
		/* The same records, taken in the same order. */
		for (i = 0; i < na; i++) {
			assert_int_equal(ia[i].keylen, ib[i].keylen);
			assert_memory_equal(ia[i].key, ib[i].key, ia[i].keylen);
			assert_memory_equal(&ia[i].r, &ib[i].r,
			    sizeof(ia[i].r));
		}
	}
	x = find(ia, na, &o, ROUTE_LAKEHOUSE, "token:fedcba9876543210");
	assert_non_null(x);
	assert_int_equal(x->r.count, 3);
	assert_string_equal(x->r.ua, "pyiceberg");
	y = find(ia, na, &u, ROUTE_LAKEHOUSE, "10.0.0.7");
	assert_non_null(y);
	assert_int_equal(y->r.oldtag_ms, NOW + 200 + 10 + 1);
	assert_string_equal(y->r.ua, "trino/4");
	assert_non_null(find(ia, na, NULL, ROUTE_WAREHOUSE, "alice"));
	readers_stats(a, &sa);
	readers_stats(b, &sb);
	assert_int_equal(sa.noted, 27);
	assert_memory_equal(&sa, &sb, sizeof(sa));
	readers_free(a);
	readers_free(b);
}

/*
 * Loads of O1 from S1 by W1 at NOW and of O2 from S2 by W2 a ms later,
 * through readers_see; then everything taken into IT (8). How many.
 */
static size_t
see_two(struct readers *t, struct readers_item *it, const struct route_obj *o1,
    enum route_side s1, const struct readers_who *w1,
    const struct route_obj *o2, enum route_side s2,
    const struct readers_who *w2, int64_t now)
{
	readers_see(t, o1, s1, w1, NULL, 0, false, now);
	readers_see(t, o2, s2, w2, NULL, 0, false, now + 1);
	return readers_take(t, it, 8);
}

/*
 * A hint never writes into entries that changed: readers with the same
 * client hash and other names or objects get their own records, and
 * after the hinted entries were given to other readers a load makes new
 * ones, leaving the others' alone.
 */
static void
test_see_hint_stale(void **state __unused)
{
	struct readers *t = readers_new(4);
	struct readers_item it[8];
	struct route_obj a = obj("a"), b = obj("b");
	struct readers_who x = { 7, "x", 1 }, y = { 7, "y", 1 };
	struct readers_who tx = { 7, NULL, 0 };
	const struct readers_item *r;
	size_t n;

	n = see_two(t, it, &a, ROUTE_WAREHOUSE, &x, &a, ROUTE_WAREHOUSE, &y,
	    NOW + 1);
	assert_int_equal(n, 4);
	assert_int_equal(find(it, n, &a, ROUTE_WAREHOUSE, "x")->r.count, 1);
	assert_int_equal(find(it, n, &a, ROUTE_WAREHOUSE, "y")->r.count, 1);
	/* Same hash, a token: its own records, and x's go. */
	readers_see(t, &a, ROUTE_WAREHOUSE, &tx, NULL, 0, false, NOW + 3);
	n = readers_take(t, it, 8);
	assert_int_equal(n, 2);
	assert_non_null(
	    find(it, n, &a, ROUTE_WAREHOUSE, "token:0000000000000007"));
	/* x's entries were given away: x is noted anew, the token kept. */
	n = see_two(t, it, &a, ROUTE_WAREHOUSE, &x, &a, ROUTE_WAREHOUSE, &x,
	    NOW + 4);
	assert_int_equal(n, 2);
	r = find(it, n, &a, ROUTE_WAREHOUSE, "x");
	assert_non_null(r);
	assert_int_equal(r->r.count, 2);
	assert_int_equal(r->r.first_ms, NOW + 4);
	assert_null(find(it, n, &a, ROUTE_WAREHOUSE, "token:0000000000000007"));
	/* Another object, the same reader: its own record. */
	n = see_two(t, it, &b, ROUTE_WAREHOUSE, &x, &a, ROUTE_LAKEHOUSE, &x,
	    NOW + 6);
	assert_int_equal(n, 3);
	assert_int_equal(find(it, n, &b, ROUTE_WAREHOUSE, "x")->r.count, 1);
	assert_int_equal(find(it, n, &a, ROUTE_LAKEHOUSE, "x")->r.count, 1);
	assert_int_equal(find(it, n, NULL, ROUTE_WAREHOUSE, "x")->r.count, 2);
	readers_free(t);
}

/*
 * Many evictions through a small table: every entry held is still found
 * (noting it again makes no new entry), so the backward shift kept every
 * probe chain whole.
 */
static void
test_index_whole(void **state __unused)
{
	struct readers *t = readers_new(100);
	struct readers_stats st, st2;
	struct route_obj o;
	char name[32], id[32];
	unsigned i, k;
	uint64_t ev;

	for (i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "t%u", i % 997);
		snprintf(id, sizeof(id), "c%u", (i * 7919) % 131);
		o = obj(name);
		readers_note(t, &o, i & 1 ? ROUTE_LAKEHOUSE : ROUTE_WAREHOUSE,
		    id, strlen(id), NULL, 0, false, NOW + i);
	}
	readers_stats(t, &st);
	assert_int_equal(st.used, 100);
	ev = st.evicted;
	/* The newest 10 loads are held: noting them again evicts nothing. */
	for (k = 0; k < 3; k++)
		for (i = 20000 - 10; i < 20000; i++) {
			snprintf(name, sizeof(name), "t%u", i % 997);
			snprintf(id, sizeof(id), "c%u", (i * 7919) % 131);
			o = obj(name);
			readers_note(t, &o,
			    i & 1 ? ROUTE_LAKEHOUSE : ROUTE_WAREHOUSE, id,
			    strlen(id), NULL, 0, false, NOW + 30000 + i);
		}
	readers_stats(t, &st2);
	assert_int_equal(st2.evicted, ev);
	assert_int_equal(st2.used, 100);
	readers_free(t);
}

/* Keys: split back, too long refused, never a raw 0 byte inside. */
static void
test_keys(void **state __unused)
{
	unsigned char key[READERS_KEY_MAX];
	struct route_obj o = obj("orders"), back, big;
	enum route_side side;
	char ident[READERS_IDENT_MAX], longname[400];
	size_t len;

	len = readers_key(key, sizeof(key), &o, ROUTE_LAKEHOUSE, "alice", 5);
	assert_int_equal(len, o.len + 2 + 5);
	assert_int_equal(readers_key_split(key, len, &back, &side, ident,
			     sizeof(ident)),
	    0);
	assert_int_equal(back.len, o.len);
	assert_memory_equal(back.key, o.key, o.len);
	assert_int_equal(side, ROUTE_LAKEHOUSE);
	assert_string_equal(ident, "alice");
	len = readers_key(key, sizeof(key), NULL, ROUTE_WAREHOUSE, "bob", 3);
	assert_int_equal(len, 4);
	assert_int_equal(readers_key_split(key, len, &back, &side, ident,
			     sizeof(ident)),
	    0);
	assert_int_equal(back.len, 0);
	assert_string_equal(ident, "bob");
	assert_int_equal(readers_key(key, sizeof(key), &o, ROUTE_WAREHOUSE,
			     "a\0b", 3),
	    0);
	assert_int_equal(readers_key(key, sizeof(key), &o, ROUTE_WAREHOUSE, "",
			     0),
	    0);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	big = obj(longname);
	assert_int_equal(readers_key(key, sizeof(key), &big, ROUTE_WAREHOUSE,
			     "alice", 5),
	    0);
	{
		struct readers *t = readers_new(8);
		struct readers_stats st;

		readers_note(t, &big, ROUTE_WAREHOUSE, "alice", 5, NULL, 0,
		    false, NOW);
		readers_stats(t, &st);
		assert_int_equal(st.too_long, 1);
		assert_int_equal(st.used, 1); /* the identity is still seen */
		readers_free(t);
	}
}

/*
 * The bound: the daemon's table after 10,000 identities have each loaded
 * 1,000 tables holds READERS_CAP entries, what it allocated is
 * readers_bytes(), under READERS_BOUND_BYTES, and the heap grew by no
 * more (measured with mallinfo2).
 */
static void
test_bound(void **state __unused)
{
	struct mallinfo2 m0, m1;
	struct readers *t;
	struct readers_stats st;
	struct route_obj objs[1000];
	char id[32];
	size_t grew, bytes = readers_bytes(READERS_CAP);
	struct readers_who who = { 0, NULL, 0 };
	unsigned i, k;

	printf("table of %u entries: %zu bytes (bound %u)\n", READERS_CAP,
	    bytes, READERS_BOUND_BYTES);
	assert_true(bytes <= READERS_BOUND_BYTES);
	for (k = 0; k < 1000; k++) {
		snprintf(id, sizeof(id), "table_%04u", k);
		objs[k] = obj(id);
	}
	m0 = mallinfo2();
	t = readers_new(READERS_CAP);
	/* As the request path notes them: tokens, through readers_see. */
	for (i = 0; i < 10000; i++) {
		who.hash = i * 2654435761u;
		for (k = 0; k < 1000; k++)
			readers_see(t, &objs[k], ROUTE_WAREHOUSE, &who,
			    "spark/3.5", 9, false, NOW + (int64_t)i * 1000 + k);
	}
	m1 = mallinfo2();
	readers_stats(t, &st);
	/* Both the heap and the mmapped blocks count. */
	grew = (m1.arena + m1.hblkhd) - (m0.arena + m0.hblkhd);
	printf("10,000 identities x 1,000 tables: %zu entries held, "
	       "%llu evicted, heap grew %zu bytes\n",
	    st.used, (unsigned long long)st.evicted, grew);
	assert_int_equal(st.used, READERS_CAP);
	assert_int_equal(st.noted, 10000000);
	/* Every load makes or touches two entries. */
	assert_true(st.evicted >= 10000000 - READERS_CAP);
	assert_int_equal(st.bytes, bytes);
	assert_true(grew <= READERS_BOUND_BYTES);
	readers_free(t);
}

/* The stale-reader rule at its edges. */
static void
test_stale(void **state __unused)
{
	const int64_t flip = NOW, hz = 14 * D;
	struct store_reader wh, lh;

	memset(&wh, 0, sizeof(wh));
	memset(&lh, 0, sizeof(lh));
	wh.count = lh.count = 1;
	/* Loaded the warehouse 13 days before the flip, nothing since. */
	wh.last_ms = flip - 13 * D;
	assert_true(readers_is_stale(&wh, NULL, flip, hz));
	/* 15 days before: out of the horizon. */
	wh.last_ms = flip - 15 * D;
	assert_false(readers_is_stale(&wh, NULL, flip, hz));
	/* Exactly at the horizon's edge: in. */
	wh.last_ms = flip - hz;
	assert_true(readers_is_stale(&wh, NULL, flip, hz));
	/* Reloaded from the lakehouse after the flip: not stale. */
	wh.last_ms = flip - D;
	lh.last_ms = flip + 1;
	assert_false(readers_is_stale(&wh, &lh, flip, hz));
	/* A lakehouse load before the flip (a canary) does not count. */
	lh.last_ms = flip - 1;
	assert_true(readers_is_stale(&wh, &lh, flip, hz));
	/* Back on the warehouse after its lakehouse load (a pinned prefix). */
	lh.last_ms = flip + 10;
	wh.last_ms = flip + 20;
	assert_true(readers_is_stale(&wh, &lh, flip, hz));
	/* Excused after its last warehouse load; then it loads again. */
	wh.last_ms = flip - D;
	wh.excused_ms = flip + 5;
	assert_false(readers_is_stale(&wh, NULL, flip, hz));
	wh.last_ms = flip + 6;
	assert_true(readers_is_stale(&wh, NULL, flip, hz));
	/* A wave that never left the warehouse has no stale reader. */
	assert_false(readers_is_stale(&wh, NULL, 0, hz));
	assert_false(readers_is_stale(NULL, &lh, flip, hz));
}

/* A count of the records under PREFIX (PLEN bytes). */
static int
count_cb(const void *key __unused, size_t keylen __unused,
    const struct store_reader *r __unused, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/*
 * The store's side: sightings merged into what is stored (earliest first,
 * latest last, counts summed, the agent replaced when given), read back,
 * excused with an event, pruned; all of it across a reopen.
 */
static void
test_store_readers(void **state __unused)
{
	struct routing_tmp *t = routing_tmp_open();
	unsigned char k1[READERS_KEY_MAX], k2[READERS_KEY_MAX],
	    k3[READERS_KEY_MAX], pfx[STORE_KEY_MAX];
	struct route_obj a = obj("orders"), b = obj("users");
	struct store_reader_in in[3];
	struct store_reader r;
	json_t *ev, *evs;
	size_t n1, n2, n3, pruned;
	char err[256];
	int count;

	assert_non_null(t);
	n1 = readers_key(k1, sizeof(k1), &a, ROUTE_WAREHOUSE, "alice", 5);
	n2 = readers_key(k2, sizeof(k2), &b, ROUTE_WAREHOUSE, "alice", 5);
	n3 = readers_key(k3, sizeof(k3), &a, ROUTE_LAKEHOUSE, "bob", 3);
	memset(in, 0, sizeof(in));
	in[0] = (struct store_reader_in) { k1, n1,
		{ NOW + 10, NOW + 20, 2, 0, 0, "spark" } };
	in[1] =
	    (struct store_reader_in) { k2, n2, { NOW, NOW, 1, 0, 0, "spark" } };
	in[2] = (struct store_reader_in) { k3, n3,
		{ NOW, NOW + 5, 1, NOW + 5, 0, "trino" } };
	assert_int_equal(store_readers_add(t->store, in, 3), STORE_OK);
	/* A second batch: an earlier first, a later last, no agent. */
	in[0].r = (struct store_reader) { NOW + 5, NOW + 30, 3, 0, 0, "" };
	assert_int_equal(store_readers_add(t->store, in, 1), STORE_OK);
	assert_int_equal(store_reader_get(t->store, k1, n1, &r), STORE_OK);
	assert_int_equal(r.first_ms, NOW + 5);
	assert_int_equal(r.last_ms, NOW + 30);
	assert_int_equal(r.count, 5);
	assert_string_equal(r.ua, "spark");
	/* The records of one object, by prefix: a's two, not b's. */
	memcpy(pfx, a.key, a.len);
	pfx[a.len] = '\0';
	count = 0;
	assert_int_equal(store_reader_foreach(t->store, pfx, a.len + 1,
			     count_cb, &count),
	    STORE_OK);
	assert_int_equal(count, 2);
	/* Excused for a: one warehouse record, and its event. */
	ev = json_pack("{s:s}", "type", "readers.forget");
	assert_int_equal(store_readers_excuse(t->store, "alice", 5, a.key,
			     a.len, NOW + 40, ev),
	    STORE_OK);
	json_decref(ev);
	assert_int_equal(store_reader_get(t->store, k1, n1, &r), STORE_OK);
	assert_int_equal(r.excused_ms, NOW + 40);
	assert_int_equal(store_reader_get(t->store, k2, n2, &r), STORE_OK);
	assert_int_equal(r.excused_ms, 0);
	evs = routing_tmp_events(t->store, 0);
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(evs, 0),
				 "records")),
	    1);
	json_decref(evs);
	/* Bob has no warehouse record: nothing to excuse, no event. */
	ev = json_pack("{s:s}", "type", "readers.forget");
	assert_int_equal(store_readers_excuse(t->store, "bob", 3, NULL, 0,
			     NOW + 40, ev),
	    STORE_NOTFOUND);
	json_decref(ev);
	/* Without an object: every warehouse record of alice (a and b). */
	ev = json_pack("{s:s}", "type", "readers.forget");
	assert_int_equal(store_readers_excuse(t->store, "alice", 5, NULL, 0,
			     NOW + 40, ev),
	    STORE_OK);
	assert_int_equal(json_integer_value(json_object_get(ev, "records")), 2);
	json_decref(ev);
	assert_int_equal(store_reader_get(t->store, k2, n2, &r), STORE_OK);
	assert_int_equal(r.excused_ms, NOW + 40);
	/* The excuse survives the next batch; then a reopen keeps it all. */
	in[0].r = (struct store_reader) { NOW + 50, NOW + 50, 1, 0, 0, "" };
	assert_int_equal(store_readers_add(t->store, in, 1), STORE_OK);
	store_free(t->store);
	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	assert_int_equal(store_reader_get(t->store, k1, n1, &r), STORE_OK);
	assert_int_equal(r.count, 6);
	assert_int_equal(r.excused_ms, NOW + 40);
	/* Pruned: what was last loaded before NOW + 6 (b/alice, a/bob). */
	assert_int_equal(store_readers_prune(t->store, NOW + 6, &pruned),
	    STORE_OK);
	assert_int_equal(pruned, 2);
	assert_int_equal(store_reader_get(t->store, k3, n3, &r),
	    STORE_NOTFOUND);
	assert_int_equal(store_reader_get(t->store, k1, n1, &r), STORE_OK);
	routing_tmp_close(t);
}

/* A walk of the records: counts them, checks their order, stops at STOP. */
struct walk {
	unsigned char last[STORE_KEY_MAX];
	size_t lastlen;
	int n;
	int stop;
};

static int
walk_cb(const void *key, size_t keylen, const struct store_reader *r __unused,
    void *arg)
{
	struct walk *w = arg;

	assert_true(w->lastlen == 0 ||
	    memcmp(w->last, key, keylen < w->lastlen ? keylen : w->lastlen) <=
		0);
	memcpy(w->last, key, keylen);
	w->lastlen = keylen;
	return ++w->n == w->stop;
}

/*
 * What cluster mode's copies use: a walk from after a key, in pages, and
 * a merge that keeps the larger count (a copy is a whole count) where a
 * batch sums; the agent only from a record as recent as the stored one.
 */
static void
test_store_readers_copy(void **state __unused)
{
	struct routing_tmp *t = routing_tmp_open();
	unsigned char k[3][READERS_KEY_MAX];
	struct route_obj a = obj("orders"), b = obj("users");
	struct store_reader_in in[3];
	struct store_mirror *m;
	struct store_reader r;
	struct walk w;
	size_t n[3];

	assert_non_null(t);
	n[0] = readers_key(k[0], sizeof(k[0]), &a, ROUTE_WAREHOUSE, "alice", 5);
	n[1] = readers_key(k[1], sizeof(k[1]), &b, ROUTE_WAREHOUSE, "alice", 5);
	n[2] = readers_key(k[2], sizeof(k[2]), &a, ROUTE_LAKEHOUSE, "bob", 3);
	memset(in, 0, sizeof(in));
	in[0] = (struct store_reader_in) { k[0], n[0],
		{ NOW + 10, NOW + 20, 2, 0, 0, "spark" } };
	in[1] = (struct store_reader_in) { k[1], n[1],
		{ NOW, NOW, 1, 0, 0, "spark" } };
	assert_int_equal(store_readers_add(t->store, in, 2), STORE_OK);

	/* A copy of a's alice: counted 5 elsewhere, seen later by flink. */
	m = store_mirror_begin(t->store);
	assert_non_null(m);
	in[0].r =
	    (struct store_reader) { NOW + 5, NOW + 100, 5, 0, 0, "flink" };
	in[2] = (struct store_reader_in) { k[2], n[2],
		{ NOW, NOW + 5, 4, NOW + 5, 0, "trino" } };
	in[1] = in[2];
	assert_int_equal(store_mirror_readers(m, in, 2, true), STORE_OK);
	assert_int_equal(store_mirror_commit(m, 1, 7), STORE_OK);
	assert_int_equal(store_reader_get(t->store, k[0], n[0], &r), STORE_OK);
	assert_int_equal(r.count, 5);
	assert_int_equal(r.first_ms, NOW + 5);
	assert_int_equal(r.last_ms, NOW + 100);
	assert_string_equal(r.ua, "flink");
	assert_int_equal(store_reader_get(t->store, k[2], n[2], &r), STORE_OK);
	assert_int_equal(r.count, 4);
	assert_int_equal(r.oldtag_ms, NOW + 5);

	/* The same copy again, and an older one: nothing moves. */
	m = store_mirror_begin(t->store);
	assert_non_null(m);
	assert_int_equal(store_mirror_readers(m, in, 1, true), STORE_OK);
	in[0].r = (struct store_reader) { NOW + 5, NOW + 50, 3, 0, 0, "old" };
	assert_int_equal(store_mirror_readers(m, in, 1, true), STORE_OK);
	/* A batch after it: its loads are added. */
	in[0].r = (struct store_reader) { NOW + 200, NOW + 200, 1, 0, 0, "" };
	assert_int_equal(store_mirror_readers(m, in, 1, false), STORE_OK);
	assert_int_equal(store_mirror_commit(m, 2, 7), STORE_OK);
	assert_int_equal(store_reader_get(t->store, k[0], n[0], &r), STORE_OK);
	assert_int_equal(r.count, 6);
	assert_int_equal(r.last_ms, NOW + 200);
	assert_string_equal(r.ua, "flink");

	/* Walked in pages of two: three records, each once, in order. */
	memset(&w, 0, sizeof(w));
	w.stop = 2;
	assert_int_equal(store_reader_foreach_after(t->store, NULL, 0, walk_cb,
			     &w),
	    STORE_OK);
	assert_int_equal(w.n, 2);
	w.stop = 4;
	assert_int_equal(store_reader_foreach_after(t->store, w.last, w.lastlen,
			     walk_cb, &w),
	    STORE_OK);
	assert_int_equal(w.n, 3);
	w.n = 0;
	assert_int_equal(store_reader_foreach_after(t->store, w.last, w.lastlen,
			     walk_cb, &w),
	    STORE_OK);
	assert_int_equal(w.n, 0);
	routing_tmp_close(t);
}

/*
 * A sighting on the wire (cluster batches, a job helper's flush) reads
 * back as it was written; cut short anywhere it reads as nothing; a key
 * no record can have is not written.
 */
static void
test_wire(void **state __unused)
{
	unsigned char buf[STORE_READER_WIRE_MAX], key[STORE_KEY_MAX + 1];
	struct store_reader_in in, out;
	size_t n, cut;

	memset(&in, 0, sizeof(in));
	memset(key, 'k', sizeof(key));
	in.key = key;
	in.keylen = STORE_KEY_MAX;
	in.r.first_ms = 1000;
	in.r.last_ms = 2000;
	in.r.count = 3;
	in.r.oldtag_ms = 1500;
	in.r.excused_ms = 0;
	memset(in.r.ua, 'u', sizeof(in.r.ua) - 1);
	in.r.ua[sizeof(in.r.ua) - 1] = '\0';
	n = store_reader_wire(&in, buf);
	assert_true(n > 4 + STORE_KEY_MAX && n <= STORE_READER_WIRE_MAX);
	assert_int_equal(store_reader_unwire(buf, n + 7, &out), n);
	assert_int_equal(out.keylen, STORE_KEY_MAX);
	assert_ptr_equal(out.key, buf + 2);
	assert_memory_equal(out.key, key, STORE_KEY_MAX);
	assert_memory_equal(&out.r, &in.r, sizeof(in.r));
	for (cut = 0; cut < n; cut++)
		assert_int_equal(store_reader_unwire(buf, cut, &out), 0);
	in.keylen = 0;
	assert_int_equal(store_reader_wire(&in, buf), 0);
	in.keylen = STORE_KEY_MAX + 1;
	assert_int_equal(store_reader_wire(&in, buf), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_note_take),
		cmocka_unit_test(test_take_order),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_see),
		cmocka_unit_test(test_see_hint_stale),
		cmocka_unit_test(test_index_whole),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_store_readers),
		cmocka_unit_test(test_store_readers_copy),
		cmocka_unit_test(test_wire),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
