/*
 * floe: test_ledger.c -- the ledger record (its JSON checks, its key order
 * and its versioned value) and the ledger DBI of the store: an append is
 * all or nothing, the same (object, ts) is stored once, a different record
 * for it is refused, and range and object scans stay within their object.
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

#include "lib/compat.h"
#include "lib/units.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"
#include "tests/unit/routing_tmp.h"

#define NOW 1800000000000LL /* 2027-01-15T08:00:00Z */

/* Set up a store in a fresh directory. */
static int
setup(void **state)
{
	struct routing_tmp *t = routing_tmp_open();

	if (t == NULL)
		return -1;
	*state = t;
	return 0;
}

/* Close the store and remove its directory. */
static int
teardown(void **state)
{
	routing_tmp_close(*state);
	return 0;
}

/* Every field of a JSON record is checked; the reason names it. */
static void
test_from_json(void **state)
{
	static const struct {
		const char *json;
		const char *err; /* NULL: accepted */
		int bucket;
		bool clean;
	} tab[] = {
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true,\"bucket\":\"clean\",\"source\":\"job\"}",
		    NULL, LEDGER_CLEAN, true },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    NULL, LEDGER_CLEAN, true },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":false,"
		  "\"hash_match\":false,\"bucket\":\"gap\"}",
		    NULL, LEDGER_GAP, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":false,\"bucket\":\"value-drift\"}",
		    NULL, LEDGER_VALUE_DRIFT, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":false,\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    "needs a bucket", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":false,\"aggregate_match\":true,"
		  "\"hash_match\":true,\"bucket\":\"clean\"}",
		    "bucket \"clean\" but a tier does not match", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true,\"bucket\":\"stale\"}",
		    "but all three tiers match", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":false,\"bucket\":\"drift\"}",
		    "bucket must be clean, stale, gap or value-drift", 0,
		    false },
		{ "{\"ts\":\"2027-01-15T06:00:00Z\",\"count_match\":true,"
		  "\"aggregate_match\":true,\"hash_match\":true}",
		    "field \"object\" is required", 0, false },
		{ "{\"object\":\"orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    "object: ", 0, false },
		{ "{\"object\":\"db.*\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    "is a rule", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"yesterday\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    "ts \"yesterday\" is not an RFC 3339 time", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":1800000000000,"
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    "field \"ts\" is required", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T08:06:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    "is in the future", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T08:04:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    NULL, LEDGER_CLEAN, true },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":\"yes\",\"aggregate_match\":true,"
		  "\"hash_match\":true}",
		    "field \"count_match\" must be true or false", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"hash_match\":true}",
		    "field \"aggregate_match\" is required", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true,\"hash-match\":true}",
		    "unknown field \"hash-match\"", 0, false },
		{ "{\"object\":\"db.orders\",\"ts\":\"2027-01-15T06:00:00Z\","
		  "\"count_match\":true,\"aggregate_match\":true,"
		  "\"hash_match\":true,\"source\":"
		  "\"0123456789012345678901234567890123456789012345678901234567"
		  "890123\"}",
		    "source is at most 63 bytes", 0, false },
		{ "[1]", "a record is a JSON object", 0, false },
	};
	struct route_obj obj;
	struct ledger_rec rec;
	char err[256];
	json_t *j;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		j = json_loads(tab[i].json, 0, NULL);
		assert_non_null(j);
		err[0] = '\0';
		if (ledger_rec_from_json(j, NOW, &obj, &rec, err,
			sizeof(err)) == -1) {
			if (tab[i].err == NULL)
				fail_msg("%zu: refused: %s", i, err);
			if (strstr(err, tab[i].err) == NULL)
				fail_msg("%zu: \"%s\" lacks \"%s\"", i, err,
				    tab[i].err);
		} else {
			if (tab[i].err != NULL)
				fail_msg("%zu: accepted, want \"%s\"", i,
				    tab[i].err);
			assert_int_equal(rec.bucket, tab[i].bucket);
			assert_int_equal(ledger_rec_is_clean(&rec),
			    tab[i].clean);
			assert_false(obj.rule);
		}
		json_decref(j);
	}
}

/* Encode and decode give the record back; older and newer values read. */
static void
test_value(void **state)
{
	struct ledger_rec in, out;
	unsigned char buf[LEDGER_VAL_MAX + 8];
	size_t n;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.ts_ms = NOW;
	in.count_match = true;
	in.hash_match = true;
	in.bucket = LEDGER_GAP;
	strlcpy(in.source, "nightly-reconcile", sizeof(in.source));
	n = ledger_encode(&in, buf);
	assert_true(n <= LEDGER_VAL_MAX);
	out.ts_ms = NOW;
	assert_int_equal(ledger_decode(buf, n, &out), 0);
	assert_memory_equal(&in, &out, sizeof(in));

	/* A newer floe's longer value: the extra bytes are ignored. */
	buf[n] = 0x42;
	buf[n + 1] = 0x43;
	out.ts_ms = NOW;
	assert_int_equal(ledger_decode(buf, n + 2, &out), 0);
	assert_memory_equal(&in, &out, sizeof(in));
	/* A shorter one: what is missing reads as zero (not clean). */
	assert_int_equal(ledger_decode(buf, 1, &out), 0);
	assert_false(ledger_rec_is_clean(&out));
	assert_string_equal(out.source, "");
	/* Version 0 or nothing is damage. */
	buf[0] = 0;
	assert_int_equal(ledger_decode(buf, n, &out), -1);
	assert_int_equal(ledger_decode(buf, 0, &out), -1);
}

/* Keys: the object, then the ts big-endian, so byte order is time order. */
static void
test_key(void **state)
{
	struct route_obj a, b;
	unsigned char k1[STORE_KEY_MAX], k2[STORE_KEY_MAX];
	char err[128];
	size_t n1, n2;

	(void)state;
	assert_int_equal(route_obj_parse("db.orders", &a, err, sizeof(err)), 0);
	assert_int_equal(route_obj_parse("db.orders2", &b, err, sizeof(err)),
	    0);
	n1 = ledger_key(&a, 1000, k1);
	n2 = ledger_key(&a, 256000, k2);
	assert_int_equal(n1, a.len + 8);
	assert_true(memcmp(k1, k2, n1) < 0);
	assert_int_equal(ledger_key_ts(k2, a.len), 256000);
	/* Any ts of db.orders sorts before any of db.orders2. */
	n1 = ledger_key(&a, INT64_MAX / 512, k1);
	n2 = ledger_key(&b, 0, k2);
	assert_true(memcmp(k1, k2, n1 < n2 ? n1 : n2) < 0);
}

/* Build a store_kv for OBJ at TS, CLEAN or a gap, into the given buffers. */
static void
mkkv(const char *text, int64_t ts, bool clean, unsigned char *kb,
    unsigned char *vb, struct store_kv *kv)
{
	struct route_obj obj;
	struct ledger_rec r;
	char err[128];

	assert_int_equal(route_obj_parse(text, &obj, err, sizeof(err)), 0);
	memset(&r, 0, sizeof(r));
	r.ts_ms = ts;
	r.count_match = true;
	r.aggregate_match = clean;
	r.hash_match = clean;
	r.bucket = clean ? LEDGER_CLEAN : LEDGER_GAP;
	kv->key = kb;
	kv->keylen = ledger_key(&obj, ts, kb);
	kv->val = vb;
	kv->vallen = ledger_encode(&r, vb);
}

/* Collect the ts of each record seen. */
static int
ts_cb(int64_t ts, const void *val, size_t len, void *arg)
{
	json_t *a = arg;
	struct ledger_rec r;

	r.ts_ms = ts;
	assert_int_equal(ledger_decode(val, len, &r), 0);
	json_array_append_new(a, json_integer(ts));
	return 0;
}

/* Collect the text of each object seen. */
static int
obj_cb(const void *key, size_t len, void *arg)
{
	json_t *a = arg;
	struct route_obj obj;
	char text[256];

	assert_int_equal(route_obj_from_key(key, len, &obj), 0);
	route_obj_format(&obj, text, sizeof(text));
	json_array_append_new(a, json_string(text));
	return 0;
}

/* Append, duplicates, conflicts, ranges and object scans. */
static void
test_store_ledger(void **state)
{
	struct routing_tmp *t = *state;
	struct store_ledger_res res;
	unsigned char kb[8][STORE_KEY_MAX], vb[8][LEDGER_VAL_MAX];
	struct store_kv kv[8];
	json_t *ev, *got, *events;
	uint64_t seq;

	/* Out of order, one object's records among another's. */
	mkkv("db.orders", 3000, true, kb[0], vb[0], &kv[0]);
	mkkv("db.orders", 1000, true, kb[1], vb[1], &kv[1]);
	mkkv("db.orders2", 500, true, kb[2], vb[2], &kv[2]);
	mkkv("db.orders", 2000, false, kb[3], vb[3], &kv[3]);
	mkkv("db.orders", 2000, false, kb[4], vb[4], &kv[4]); /* twice */
	mkkv("db.sub.t", 100, true, kb[5], vb[5], &kv[5]);
	mkkv("dbx.t", 100, true, kb[6], vb[6], &kv[6]);
	ev = json_pack("{s:s}", "type", "ledger.import");
	assert_int_equal(store_ledger_append(t->store, kv, 7, NOW, ev, &res),
	    STORE_OK);
	assert_int_equal(res.added, 6);
	assert_int_equal(res.duplicates, 1);
	assert_int_equal(json_integer_value(json_object_get(ev, "added")), 6);
	json_decref(ev);
	seq = store_last_seq(t->store);

	/* The same again: all duplicates, nothing new. */
	ev = json_pack("{s:s}", "type", "ledger.import");
	assert_int_equal(store_ledger_append(t->store, kv, 7, NOW, ev, &res),
	    STORE_OK);
	assert_int_equal(res.added, 0);
	assert_int_equal(res.duplicates, 7);
	json_decref(ev);

	/*
	 * A batch with one different record for a stored key: refused and
	 * nothing of it stored, not even its new records; no event.
	 */
	mkkv("db.orders", 4000, true, kb[7], vb[7], &kv[7]);
	mkkv("db.orders", 3000, false, kb[0], vb[0], &kv[0]);
	ev = json_pack("{s:s}", "type", "ledger.import");
	assert_int_equal(store_ledger_append(t->store, &kv[0], 1, NOW, ev,
			     &res),
	    STORE_REFUSED);
	kv[1] = kv[7];
	kv[2] = kv[0];
	assert_int_equal(store_ledger_append(t->store, &kv[1], 2, NOW, ev,
			     &res),
	    STORE_REFUSED);
	assert_int_equal(res.conflict, 1);
	json_decref(ev);
	assert_int_equal(store_last_seq(t->store), seq + 1);

	got = json_array();
	assert_int_equal(store_ledger_foreach(t->store, kb[3], kv[3].keylen - 8,
			     0, INT64_MAX, ts_cb, got),
	    STORE_OK);
	assert_int_equal(json_array_size(got), 3);
	assert_int_equal(json_integer_value(json_array_get(got, 0)), 1000);
	assert_int_equal(json_integer_value(json_array_get(got, 1)), 2000);
	assert_int_equal(json_integer_value(json_array_get(got, 2)), 3000);
	json_array_clear(got);
	/* Inclusive bounds. */
	assert_int_equal(store_ledger_foreach(t->store, kb[3], kv[3].keylen - 8,
			     2000, 3000, ts_cb, got),
	    STORE_OK);
	assert_int_equal(json_array_size(got), 2);
	json_array_clear(got);
	assert_int_equal(store_ledger_foreach(t->store, kb[3], kv[3].keylen - 8,
			     3001, INT64_MAX, ts_cb, got),
	    STORE_OK);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);

	/* Objects under the namespace db: its tables, then its children's. */
	got = json_array();
	assert_int_equal(store_ledger_objects(t->store, "db\x1e", 3, obj_cb,
			     got),
	    STORE_OK);
	assert_int_equal(json_array_size(got), 2);
	assert_string_equal(json_string_value(json_array_get(got, 0)),
	    "db.orders");
	assert_string_equal(json_string_value(json_array_get(got, 1)),
	    "db.orders2");
	json_array_clear(got);
	assert_int_equal(store_ledger_objects(t->store, "db\x1f", 3, obj_cb,
			     got),
	    STORE_OK);
	assert_int_equal(json_array_size(got), 1);
	assert_string_equal(json_string_value(json_array_get(got, 0)),
	    "db.sub.t");
	json_array_clear(got);
	assert_int_equal(store_ledger_objects(t->store, "", 0, obj_cb, got),
	    STORE_OK);
	assert_int_equal(json_array_size(got), 4);
	json_decref(got);

	events = routing_tmp_events(t->store, 0);
	assert_int_equal(json_array_size(events), 2);
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(events, 1),
				 "duplicates")),
	    7);
	json_decref(events);
}

/* A big batch is one txn and survives a map that must grow under it. */
static void
test_store_big(void **state)
{
	struct routing_tmp *t;
	struct store_ledger_res res;
	struct store_kv *kv;
	unsigned char *kb, *vb;
	json_t *ev, *got;
	size_t i, n = 20000;
	char name[32];

	(void)state;
	store_set_mapsize(64 << 10);
	t = routing_tmp_open();
	store_set_mapsize(0);
	assert_non_null(t);
	kv = calloc(n, sizeof(*kv));
	kb = calloc(n, 64);
	vb = calloc(n, LEDGER_VAL_MAX);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "db.t%zu", i % 100);
		mkkv(name, (int64_t)(1000 + i), i % 7 != 0, kb + i * 64,
		    vb + i * LEDGER_VAL_MAX, &kv[i]);
	}
	ev = json_pack("{s:s}", "type", "ledger.import");
	assert_int_equal(store_ledger_append(t->store, kv, n, NOW, ev, &res),
	    STORE_OK);
	assert_int_equal(res.added, n);
	json_decref(ev);
	got = json_array();
	assert_int_equal(store_ledger_foreach(t->store, kv[5].key,
			     kv[5].keylen - 8, 0, INT64_MAX, ts_cb, got),
	    STORE_OK);
	assert_int_equal(json_array_size(got), n / 100);
	json_decref(got);
	free(kv);
	free(kb);
	free(vb);
	routing_tmp_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_json),
		cmocka_unit_test(test_value),
		cmocka_unit_test(test_key),
		cmocka_unit_test_setup_teardown(test_store_ledger, setup,
		    teardown),
		cmocka_unit_test(test_store_big),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
