/*
 * floe: test_cluster_import.c -- the mirror's side of a bulk import of
 * more than one etcd txn (proxy/cluster_import.c): wrapped records round
 * trip and damaged ones are refused; ledger keys as etcd holds them; a
 * wrapped record stays invisible, staged, until its import's commit, a
 * dead import's staging is dropped, a later write drops one staged
 * record, and a resync shows the new or the replaced record by the
 * import's state.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "lib/compat.h"
#include "proxy/cluster_impl.h"
#include "proxy/etcd.h"
#include "routing/store.h"
#include "tests/unit/routing_tmp.h"
#include "tests/unit/store_fx.h"

/* The stored record of route KEY (a copy), or NULL. */
static char *
record_of(struct store *s, const char *key, size_t *len)
{
	void *v;

	if (store_record_get(s, STORE_DB_OBJECTS, key, strlen(key), &v, len) !=
	    STORE_OK)
		return NULL;
	return v;
}

/* Wrap and unwrap, with and without a replaced record; damage refused. */
static void
test_wrap(void **state __unused)
{
	struct cluster_wrap w;
	char *v;
	size_t len, i;

	v = cluster_wrap("n1-1-1", "new", 3, "old!", 4, &len);
	assert_true(cluster_wrapped(v, len));
	assert_int_equal(cluster_unwrap(v, len, &w), 0);
	assert_int_equal(w.idlen, 6);
	assert_memory_equal(w.id, "n1-1-1", 6);
	assert_int_equal(w.newlen, 3);
	assert_memory_equal(w.nv, "new", 3);
	assert_non_null(w.was);
	assert_int_equal(w.waslen, 4);
	assert_memory_equal(w.was, "old!", 4);
	/* Every cut is refused, and so is a byte too many. */
	for (i = 0; i < len; i++)
		assert_int_equal(cluster_unwrap(v, i, &w), -1);
	v = realloc(v, len + 1);
	v[len] = 'x';
	assert_int_equal(cluster_unwrap(v, len + 1, &w), -1);
	free(v);

	v = cluster_wrap("x", "", 0, NULL, 0, &len);
	assert_int_equal(cluster_unwrap(v, len, &w), 0);
	assert_int_equal(w.newlen, 0);
	assert_null(w.was);
	free(v);

	/* A record or an event is not wrapped. */
	assert_false(cluster_wrapped("\001abc", 4));
	assert_false(cluster_wrapped("{\"type\":\"x\"}", 12));
	assert_false(cluster_wrapped(NULL, 0));
}

/* ledger/OBJECT/TS and back. */
static void
test_ledger_key(void **state __unused)
{
	unsigned char kb[STORE_KEY_MAX], src[16];
	char name[64];
	size_t klen, n;

	memcpy(src, "db\037t", 4);
	memcpy(src + 4, "\000\000\001\242\061\242\237\230", 8);
	n = cluster_ledger_name(src, 12, name, sizeof(name));
	assert_int_equal(n, 4 + 17);
	assert_string_equal(name + 4, "/000001a231a29f98");
	assert_int_equal(cluster_ledger_key(name, n, kb, &klen), 0);
	assert_int_equal(klen, 12);
	assert_memory_equal(kb, src, 12);
	/* Too small a buffer, bad digits, no slash. */
	assert_int_equal(cluster_ledger_name(src, 12, name, 20), 0);
	assert_int_equal(cluster_ledger_key("db/000001a231a29f9X", 19, kb,
			     &klen),
	    -1);
	assert_int_equal(cluster_ledger_key("db.000001a231a29f98", 19, kb,
			     &klen),
	    -1);
}

/* An event of the watch: a put of VAL (or a delete), PREV its old one. */
static void
event(struct etcd_event *e, struct etcd_kv *prev, const char *val, size_t vlen,
    int64_t rev, const char *pval, size_t plen)
{
	memset(e, 0, sizeof(*e));
	e->type = val != NULL ? ETCD_EVENT_PUT : ETCD_EVENT_DELETE;
	e->kv.value = (char *)(uintptr_t)val;
	e->kv.value_len = vlen;
	e->kv.mod_revision = rev;
	if (pval != NULL) {
		memset(prev, 0, sizeof(*prev));
		prev->value = (char *)(uintptr_t)pval;
		prev->value_len = plen;
		e->prev_kv = prev;
	}
}

/* The watch: staged until the commit; a dead import's staging dropped. */
static void
test_watch(void **state)
{
	struct routing_tmp *t = *state;
	struct store_mirror *m;
	struct etcd_event e;
	struct etcd_kv prev;
	char *a1, *a2, *b1, *va, *vb, *old;
	size_t la1, la2, lb1, lva, lvb, lold;
	bool rehash = false;
	int rc = STORE_OK;

	/* Two route records to wrap, made by the store itself. */
	assert_int_equal(store_route_put(t->store, "ka", 2, 1, T0, NULL),
	    STORE_OK);
	assert_int_equal(store_route_put(t->store, "kb", 2, 2, T0, NULL),
	    STORE_OK);
	va = record_of(t->store, "ka", &lva);
	vb = record_of(t->store, "kb", &lvb);
	assert_int_equal(store_route_del(t->store, "ka", 2, T0, NULL),
	    STORE_OK);
	assert_int_equal(store_route_del(t->store, "kb", 2, T0, NULL),
	    STORE_OK);
	a1 = cluster_wrap("A", va, lva, NULL, 0, &la1);
	a2 = cluster_wrap("A", vb, lvb, NULL, 0, &la2);
	b1 = cluster_wrap("B", va, lva, NULL, 0, &lb1);

	m = store_mirror_begin(t->store);
	event(&e, NULL, a1, la1, 10, NULL, 0);
	assert_true(cluster_watch_import(m, &e, false, STORE_DB_OBJECTS,
	    (const unsigned char *)"k1", 2, NULL, 0, &rc, &rehash));
	event(&e, NULL, a2, la2, 11, NULL, 0);
	assert_true(cluster_watch_import(m, &e, false, STORE_DB_OBJECTS,
	    (const unsigned char *)"k2", 2, NULL, 0, &rc, &rehash));
	event(&e, NULL, b1, lb1, 12, NULL, 0);
	assert_true(cluster_watch_import(m, &e, false, STORE_DB_OBJECTS,
	    (const unsigned char *)"k3", 2, NULL, 0, &rc, &rehash));
	/*
	 * A plain write over k2's wrapped record drops what k2 staged, and
	 * is the caller's to write and hash: no rehash (a re-import's every
	 * txn would scan the store).
	 */
	event(&e, &prev, va, lva, 13, a2, la2);
	assert_false(cluster_watch_import(m, &e, false, STORE_DB_OBJECTS,
	    (const unsigned char *)"k2", 2, NULL, 0, &rc, &rehash));
	assert_false(rehash);
	/* So does a wrapped write over it, staged in turn. */
	event(&e, &prev, b1, lb1, 13, a1, la1);
	assert_true(cluster_watch_import(m, &e, false, STORE_DB_OBJECTS,
	    (const unsigned char *)"k4", 2, NULL, 0, &rc, &rehash));
	assert_false(rehash);
	assert_int_equal(rc, STORE_OK);
	assert_int_equal(store_mirror_commit(m, 13, 1), STORE_OK);
	/* Staged, not shown. */
	assert_null(record_of(t->store, "k1", &lold));
	assert_null(record_of(t->store, "k3", &lold));

	/* A's commit shows k1 (not k2); B deleted drops k3. */
	rehash = false;
	m = store_mirror_begin(t->store);
	event(&e, NULL, "{\"state\":\"open\"}", 16, 14, NULL, 0);
	assert_true(cluster_watch_import(m, &e, true, STORE_DB_OBJECTS, NULL, 0,
	    "A", 1, &rc, &rehash));
	assert_false(rehash);
	event(&e, NULL, "{\"state\":\"committed\"}", 21, 15, NULL, 0);
	assert_true(cluster_watch_import(m, &e, true, STORE_DB_OBJECTS, NULL, 0,
	    "A", 1, &rc, &rehash));
	assert_true(rehash);
	event(&e, NULL, NULL, 0, 16, NULL, 0);
	assert_true(cluster_watch_import(m, &e, true, STORE_DB_OBJECTS, NULL, 0,
	    "B", 1, &rc, &rehash));
	assert_int_equal(rc, STORE_OK);
	assert_int_equal(store_mirror_commit(m, 16, 1), STORE_OK);
	old = record_of(t->store, "k1", &lold);
	assert_non_null(old);
	free(old);
	assert_null(record_of(t->store, "k2", &lold));
	/* B's commit coming after all shows nothing: it was dropped. */
	m = store_mirror_begin(t->store);
	event(&e, NULL, "{\"state\":\"committed\"}", 21, 17, NULL, 0);
	assert_true(cluster_watch_import(m, &e, true, STORE_DB_OBJECTS, NULL, 0,
	    "B", 1, &rc, &rehash));
	assert_int_equal(store_mirror_commit(m, 17, 1), STORE_OK);
	assert_null(record_of(t->store, "k3", &lold));
	free(a1);
	free(a2);
	free(b1);
	free(va);
	free(vb);
}

/* A resync: committed shows the new record, open or gone the replaced. */
static void
test_resync(void **state)
{
	struct routing_tmp *t = *state;
	struct cluster_kv kvs[2];
	struct store_mirror *m;
	struct store_route r;
	char *vnew, *vold, *w1, *w2;
	size_t ln, lo, l1, l2;
	json_t *imports;
	bool rehash = false;
	int rc = STORE_OK;
	struct etcd_event e;

	assert_int_equal(store_route_put(t->store, "n", 1, 5, T0, NULL),
	    STORE_OK);
	assert_int_equal(store_route_put(t->store, "o", 1, 3, T0, NULL),
	    STORE_OK);
	vnew = record_of(t->store, "n", &ln);
	vold = record_of(t->store, "o", &lo);
	w1 = cluster_wrap("C", vnew, ln, vold, lo, &l1);
	w2 = cluster_wrap("O", vnew, ln, vold, lo, &l2);
	memset(kvs, 0, sizeof(kvs));
	kvs[0].key = (char *)(uintptr_t) "imports/C";
	kvs[0].key_len = 9;
	kvs[0].value = (char *)(uintptr_t) "{\"state\":\"committed\"}";
	kvs[0].value_len = 21;
	kvs[1].key = (char *)(uintptr_t) "imports/O";
	kvs[1].key_len = 9;
	kvs[1].value = (char *)(uintptr_t) "{\"state\":\"open\"}";
	kvs[1].value_len = 16;
	imports = cluster_import_states(kvs, 2);

	m = store_mirror_begin(t->store);
	assert_int_equal(store_mirror_reset(m), STORE_OK);
	assert_int_equal(cluster_import_put(m, STORE_DB_OBJECTS,
			     (const unsigned char *)"c", 1, w1, l1, 40,
			     imports),
	    STORE_OK);
	assert_int_equal(cluster_import_put(m, STORE_DB_OBJECTS,
			     (const unsigned char *)"p", 1, w2, l2, 41,
			     imports),
	    STORE_OK);
	json_decref(imports);
	/* An import etcd no longer has: the replaced record, not staged. */
	imports = json_object();
	assert_int_equal(cluster_import_put(m, STORE_DB_OBJECTS,
			     (const unsigned char *)"d", 1, w2, l2, 42,
			     imports),
	    STORE_OK);
	json_decref(imports);
	assert_int_equal(store_mirror_commit(m, 42, 1), STORE_OK);
	assert_int_equal(store_route_get(t->store, "d", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 3);
	assert_int_equal(store_route_get(t->store, "c", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 5);
	assert_int_equal(r.seq, 40);
	assert_int_equal(store_route_get(t->store, "p", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 3);
	/* The open one was staged: its commit shows the new record. */
	m = store_mirror_begin(t->store);
	memset(&e, 0, sizeof(e));
	e.kv.value = (char *)(uintptr_t) "{\"state\":\"committed\"}";
	e.kv.value_len = 21;
	assert_true(cluster_watch_import(m, &e, true, STORE_DB_OBJECTS, NULL, 0,
	    "O", 1, &rc, &rehash));
	assert_int_equal(store_mirror_commit(m, 43, 1), STORE_OK);
	assert_int_equal(store_route_get(t->store, "p", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 5);
	assert_int_equal(r.seq, 41);
	assert_int_equal(store_route_get(t->store, "d", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 3);
	free(vnew);
	free(vold);
	free(w1);
	free(w2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_ledger_key),
		cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resync, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
