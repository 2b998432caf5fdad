/*
 * floe: test_store_index.c -- the flag store's by-wave index and counts:
 * after every kind of route change (set, move, delete, import, rules,
 * the cluster mirror's puts, deletes and reset) they equal what a walk of
 * every route finds, and a store of schema 1 gets them built when opened.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <lmdb.h>

#include "lib/compat.h"
#include "routing/store.h"
#include "tests/unit/routing_tmp.h"
#include "tests/unit/store_fx.h"

#define NWAVES 8

/* What a walk of every route finds, per wave. */
struct tally {
	uint64_t objects[NWAVES + 1];
	uint64_t rules[NWAVES + 1];
	size_t total;
};

/* One wave's keys as the index gives them, in order. */
struct keys {
	char (*v)[64];
	size_t n;
	bool sorted;
};

static int
walk_cb(const void *key, size_t keylen, const struct store_route *r, void *arg)
{
	struct tally *t = arg;

	assert_true(r->wave <= NWAVES);
	if (((const unsigned char *)key)[keylen - 1] == 0x1d)
		t->rules[r->wave]++;
	else
		t->objects[r->wave]++;
	t->total++;
	return 0;
}

static int
count_cb(const struct store_wave_count *c, void *arg)
{
	struct tally *t = arg;

	assert_true(c->wave <= NWAVES);
	/* Only waves with routes have counts. */
	assert_true(c->objects + c->rules > 0);
	t->objects[c->wave] = c->objects;
	t->rules[c->wave] = c->rules;
	return 0;
}

static int
key_cb(const void *key, size_t keylen, void *arg)
{
	struct keys *k = arg;

	assert_true(keylen < sizeof(k->v[0]));
	k->v = realloc(k->v, (k->n + 1) * sizeof(*k->v));
	memcpy(k->v[k->n], key, keylen);
	k->v[k->n][keylen] = '\0';
	if (k->n > 0 &&
	    store_key_cmp(k->v[k->n - 1], strlen(k->v[k->n - 1]), key,
		keylen) >= 0)
		k->sorted = false;
	k->n++;
	return 0;
}

/*
 * The index and counts agree with a walk of every route: each wave's
 * counts, each key under its route's wave, in key order. Returns the
 * routes seen.
 */
static size_t
check_index(struct store *s)
{
	struct tally walk, counts;
	struct store_wave_count c;
	struct store_route r;
	struct keys k;
	uint32_t w;
	size_t i, keyed = 0;

	memset(&walk, 0, sizeof(walk));
	memset(&counts, 0, sizeof(counts));
	assert_int_equal(store_route_foreach(s, walk_cb, &walk), STORE_OK);
	assert_int_equal(store_count_foreach(s, count_cb, &counts), STORE_OK);
	for (w = 0; w <= NWAVES; w++) {
		assert_int_equal(walk.objects[w], counts.objects[w]);
		assert_int_equal(walk.rules[w], counts.rules[w]);
		assert_int_equal(store_count_get(s, w, &c), STORE_OK);
		assert_int_equal(c.objects, walk.objects[w]);
		assert_int_equal(c.rules, walk.rules[w]);
		memset(&k, 0, sizeof(k));
		k.sorted = true;
		assert_int_equal(store_wave_routes(s, w, NULL, 0, key_cb, &k),
		    STORE_OK);
		assert_true(k.sorted);
		assert_int_equal(k.n, walk.objects[w] + walk.rules[w]);
		for (i = 0; i < k.n; i++) {
			assert_int_equal(store_route_get(s, k.v[i],
					     strlen(k.v[i]), &r),
			    STORE_OK);
			assert_int_equal(r.wave, w);
		}
		keyed += k.n;
		free(k.v);
	}
	assert_int_equal(keyed, walk.total);
	return walk.total;
}

/* A table key "db" 0x1e NAME, or the rule key "db" 0x1d (NAME NULL). */
static size_t
key_of(const char *ns, const char *name, char *buf, size_t len)
{
	if (name == NULL)
		return (size_t)snprintf(buf, len, "%s\x1d", ns);
	return (size_t)snprintf(buf, len, "%s\x1e%s", ns, name);
}

/* Set, move, re-set, delete, and rules: the counts follow each. */
static void
test_index_set_move_delete(void **state)
{
	struct routing_tmp *t = *state;
	struct store *s = t->store;
	struct store_wave_count c;
	char k[64];
	size_t n;

	assert_int_equal(check_index(s), 0);
	n = key_of("db", "a", k, sizeof(k));
	assert_int_equal(store_route_put(s, k, n, 1, T0, NULL), STORE_OK);
	assert_int_equal(check_index(s), 1);
	/* Again on the same wave: still one. */
	assert_int_equal(store_route_put(s, k, n, 1, T0, NULL), STORE_OK);
	assert_int_equal(check_index(s), 1);
	/* Moved: out of wave 1, into wave 2. */
	assert_int_equal(store_route_put(s, k, n, 2, T0, NULL), STORE_OK);
	assert_int_equal(check_index(s), 1);
	assert_int_equal(store_count_get(s, 1, &c), STORE_OK);
	assert_int_equal(c.objects + c.rules, 0);
	assert_int_equal(store_count_get(s, 2, &c), STORE_OK);
	assert_int_equal(c.objects, 1);
	/* A rule counts as a rule. */
	n = key_of("db", NULL, k, sizeof(k));
	assert_int_equal(store_route_put(s, k, n, 2, T0, NULL), STORE_OK);
	assert_int_equal(check_index(s), 2);
	assert_int_equal(store_count_get(s, 2, &c), STORE_OK);
	assert_int_equal(c.objects, 1);
	assert_int_equal(c.rules, 1);
	/* Deleted, and a delete of nothing changes nothing. */
	assert_int_equal(store_route_del(s, k, n, T0, NULL), STORE_OK);
	assert_int_equal(store_route_del(s, k, n, T0, NULL), STORE_NOTFOUND);
	assert_int_equal(check_index(s), 1);
	n = key_of("db", "a", k, sizeof(k));
	assert_int_equal(store_route_del(s, k, n, T0, NULL), STORE_OK);
	assert_int_equal(check_index(s), 0);
}

/* Random sets, moves and deletes, checked against a walk as they go. */
static void
test_index_random(void **state)
{
	struct routing_tmp *t = *state;
	struct store *s = t->store;
	char k[64], name[16];
	unsigned seed = 7, i;
	size_t n;
	int rc;

	for (i = 0; i < 600; i++) {
		seed = seed * 1103515245u + 12345u;
		snprintf(name, sizeof(name), "t%u", (seed >> 8) % 40);
		n = key_of((seed >> 4) % 3 == 0 ? "ns" : "db",
		    (seed >> 20) % 5 == 0 ? NULL : name, k, sizeof(k));
		if ((seed >> 12) % 4 == 0) {
			rc = store_route_del(s, k, n, T0, NULL);
			assert_true(rc == STORE_OK || rc == STORE_NOTFOUND);
		} else
			assert_int_equal(store_route_put(s, k, n,
					     (seed >> 16) % NWAVES + 1, T0,
					     NULL),
			    STORE_OK);
		if (i % 50 == 0)
			(void)check_index(s);
	}
	(void)check_index(s);
}

/*
 * An import: new routes, moves, unchanged ones, a key given twice; a
 * refused import changes no count.
 */
static int
refuse_cb(size_t i, const struct store_route *old, int old_state, int new_state,
    void *arg)
{
	(void)old;
	(void)old_state;
	(void)new_state;
	(void)arg;
	return i == 3 ? STORE_REFUSED : STORE_OK;
}

static void
test_index_import(void **state)
{
	struct routing_tmp *t = *state;
	struct store *s = t->store;
	struct store_route_in in[300];
	struct store_import_res res;
	static char keys[300][32];
	struct store_wave_count c;
	size_t i, n, before;

	for (i = 0; i < 100; i++) {
		n = (size_t)snprintf(keys[i], sizeof(keys[i]), "db\x1et%03zu",
		    i);
		in[i] = (struct store_route_in) { keys[i], (uint32_t)n,
			(uint32_t)(i % 3 + 1), (uint32_t)i, false };
	}
	store_route_in_sort(in, 100);
	assert_int_equal(store_route_import(s, in, 100, T0, NULL, NULL, NULL,
			     &res),
	    STORE_OK);
	assert_int_equal(res.set, 100);
	assert_int_equal(check_index(s), 100);

	/* Half moved, half unchanged, a rule, a key given twice. */
	for (i = 0; i < 100; i++) {
		n = (size_t)snprintf(keys[i], sizeof(keys[i]), "db\x1et%03zu",
		    i);
		in[i] = (struct store_route_in) { keys[i], (uint32_t)n,
			(uint32_t)(i % 2 == 0 ? 5 : i % 3 + 1), (uint32_t)i,
			false };
	}
	n = key_of("db", NULL, keys[100], sizeof(keys[100]));
	in[100] =
	    (struct store_route_in) { keys[100], (uint32_t)n, 6, 100, false };
	n = (size_t)snprintf(keys[101], sizeof(keys[101]), "db\x1enew");
	in[101] =
	    (struct store_route_in) { keys[101], (uint32_t)n, 6, 101, false };
	in[102] =
	    (struct store_route_in) { keys[101], (uint32_t)n, 7, 102, false };
	store_route_in_sort(in, 103);
	assert_int_equal(store_route_import(s, in, 103, T0, NULL, NULL, NULL,
			     &res),
	    STORE_OK);
	assert_int_equal(check_index(s), 102);
	assert_int_equal(store_count_get(s, 5, &c), STORE_OK);
	assert_int_equal(c.objects, 50);
	assert_int_equal(store_count_get(s, 6, &c), STORE_OK);
	assert_int_equal(c.objects, 0);
	assert_int_equal(c.rules, 1);
	assert_int_equal(store_count_get(s, 7, &c), STORE_OK);
	assert_int_equal(c.objects, 1);

	/* Refused: nothing is written, the counts stay. */
	for (i = 0; i < 10; i++) {
		n = (size_t)snprintf(keys[i], sizeof(keys[i]), "db\x1et%03zu",
		    i);
		in[i] = (struct store_route_in) { keys[i], (uint32_t)n, 8,
			(uint32_t)i, false };
	}
	before = check_index(s);
	assert_int_equal(store_route_import(s, in, 10, T0, refuse_cb, NULL,
			     NULL, &res),
	    STORE_REFUSED);
	assert_int_equal(check_index(s), before);
	assert_int_equal(store_count_get(s, 8, &c), STORE_OK);
	assert_int_equal(c.objects, 0);
}

/* Paging through a wave's keys with AFTER. */
static void
test_index_after(void **state)
{
	struct routing_tmp *t = *state;
	struct store *s = t->store;
	struct keys k;
	char key[64];
	size_t i, n;

	for (i = 0; i < 20; i++) {
		n = (size_t)snprintf(key, sizeof(key), "db\x1et%02zu", i);
		assert_int_equal(store_route_put(s, key, n, i % 2 + 1, T0,
				     NULL),
		    STORE_OK);
	}
	memset(&k, 0, sizeof(k));
	k.sorted = true;
	/* After t04 (wave 1): t06, t08, ... t18. */
	n = (size_t)snprintf(key, sizeof(key), "db\x1et04");
	assert_int_equal(store_wave_routes(s, 1, key, n, key_cb, &k), STORE_OK);
	assert_int_equal(k.n, 7);
	assert_string_equal(k.v[0], "db\x1et06");
	free(k.v);
	/* After a key that is not there (t05, of wave 2): from t06. */
	memset(&k, 0, sizeof(k));
	n = (size_t)snprintf(key, sizeof(key), "db\x1et05");
	assert_int_equal(store_wave_routes(s, 1, key, n, key_cb, &k), STORE_OK);
	assert_int_equal(k.n, 7);
	free(k.v);
	/* After the last: none; a wave with no routes: none. */
	memset(&k, 0, sizeof(k));
	n = (size_t)snprintf(key, sizeof(key), "db\x1et18");
	assert_int_equal(store_wave_routes(s, 1, key, n, key_cb, &k), STORE_OK);
	assert_int_equal(store_wave_routes(s, 9, NULL, 0, key_cb, &k),
	    STORE_OK);
	assert_int_equal(k.n, 0);
	free(k.v);
}

/* The mirror's puts, deletes and reset keep them too. */
static void
test_index_mirror(void **state)
{
	struct routing_tmp *t = *state;
	struct store *s = t->store;
	struct store_mirror *m;
	unsigned char rec[1 + 4 + 8 + 8];
	char key[64];
	size_t i, n, len = sizeof(rec);

	/* A route record as etcd keeps it: version 1, the wave LE. */
	memset(rec, 0, sizeof(rec));
	rec[0] = 1;
	n = key_of("db", "x", key, sizeof(key));
	assert_int_equal(store_route_put(s, key, n, 3, T0, NULL), STORE_OK);
	assert_non_null(m = store_mirror_begin(s));
	for (i = 0; i < 5; i++) {
		n = (size_t)snprintf(key, sizeof(key), "db\x1em%zu", i);
		rec[1] = (unsigned char)(i % 2 + 1);
		assert_int_equal(store_mirror_put(m, STORE_DB_OBJECTS, key, n,
				     rec, len, 10),
		    STORE_OK);
	}
	/* m0 moves to wave 4; m1 goes; a delete of nothing is fine. */
	n = (size_t)snprintf(key, sizeof(key), "db\x1em0");
	rec[1] = 4;
	assert_int_equal(store_mirror_put(m, STORE_DB_OBJECTS, key, n, rec, len,
			     11),
	    STORE_OK);
	n = (size_t)snprintf(key, sizeof(key), "db\x1em1");
	assert_int_equal(store_mirror_del(m, STORE_DB_OBJECTS, key, n),
	    STORE_OK);
	assert_int_equal(store_mirror_del(m, STORE_DB_OBJECTS, key, n),
	    STORE_OK);
	assert_int_equal(store_mirror_commit(m, 12, 1), STORE_OK);
	assert_int_equal(check_index(s), 5);

	/* A reset empties them with the routes. */
	assert_non_null(m = store_mirror_begin(s));
	assert_int_equal(store_mirror_reset(m), STORE_OK);
	n = (size_t)snprintf(key, sizeof(key),
	    "db\x1e"
	    "after");
	assert_int_equal(store_mirror_put(m, STORE_DB_OBJECTS, key, n, rec, len,
			     13),
	    STORE_OK);
	assert_int_equal(store_mirror_commit(m, 13, 1), STORE_OK);
	assert_int_equal(check_index(s), 1);
}

/*
 * A store of schema 1 (objects and meta only, as the floe before the
 * index wrote them) gets the index and counts built when opened, and its
 * schema says 2.
 */
static void
test_index_migration(void **state)
{
	struct routing_tmp *t = *state;
	static const unsigned char v1[] = { 1, 0, 0, 0 };
	struct store_wave_count c;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi objects, meta;
	MDB_val k, v;
	unsigned char rec[1 + 4 + 8 + 8];
	char key[64], err[256];
	uint32_t i, n;

	store_free(t->store);
	t->store = NULL;
	routing_tmp_rmdir(t->dir);
	assert_int_equal(routing_tmp_mkdir(t->dir, sizeof(t->dir)), 0);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 9), 0);
	assert_int_equal(mdb_env_open(env, t->dir, MDB_NOTLS, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "objects", MDB_CREATE, &objects), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", MDB_CREATE, &meta), 0);
	k = (MDB_val) { 6, (void *)(uintptr_t) "schema" };
	v = (MDB_val) { sizeof(v1), (void *)(uintptr_t)v1 };
	assert_int_equal(mdb_put(txn, meta, &k, &v, 0), 0);
	for (i = 0; i < 3000; i++) {
		memset(rec, 0, sizeof(rec));
		rec[0] = 1; /* STORE_ROUTE_V1, wave little-endian */
		rec[1] = (unsigned char)(i % 7 + 1);
		n = (uint32_t)(i % 10 == 0 ?
			snprintf(key, sizeof(key), "ns%u\x1d", i) :
			snprintf(key, sizeof(key), "db\x1et%05u", i));
		k = (MDB_val) { n, key };
		v = (MDB_val) { sizeof(rec), rec };
		assert_int_equal(mdb_put(txn, objects, &k, &v, 0), 0);
	}
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);

	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	assert_int_equal(check_index(t->store), 3000);
	assert_int_equal(store_count_get(t->store, 1, &c), STORE_OK);
	assert_int_equal(c.objects + c.rules, 429);
	assert_int_equal(c.rules, 43);
	/* Opened again: schema 2, the index kept (not built twice). */
	store_free(t->store);
	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	assert_int_equal(check_index(t->store), 3000);
	assert_int_equal(store_route_put(t->store, "db\x1et00001", 9, 7, T0,
			     NULL),
	    STORE_OK);
	assert_int_equal(check_index(t->store), 3000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_index_set_move_delete,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_random, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_index_import, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_index_after, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_index_mirror, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_index_migration, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
