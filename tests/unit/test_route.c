/*
 * floe: test_route.c -- object keys and their text forms, resolution order,
 * the read/write sides of every wave state, canary stickiness and spread,
 * store failures, and the resolver golden files in tests/fixtures/routes.
 */
#include <sys/types.h>

#include <dirent.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "lib/compat.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"
#include "tests/unit/routing_tmp.h"

#define T0 1700000000000LL
#define GOLDEN_DIR "tests/fixtures/routes"

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

/* Every good text form: its key, whether a rule, its canonical text. */
static const struct {
	const char *text;
	const char *key;
	bool rule;
	const char *canon;
} good_forms[] = {
	{ "db.orders", "db\x1eorders", false, "db.orders" },
	{ "a.b.orders",
	    "a\x1f"
	    "b\x1eorders",
	    false, "a.b.orders" },
	{ "a.b.c.d",
	    "a\x1f"
	    "b\x1f"
	    "c\x1e"
	    "d",
	    false, "a.b.c.d" },
	{ "db.*", "db\x1d", true, "db.*" },
	{ "a.b.*",
	    "a\x1f"
	    "b\x1d",
	    true, "a.b.*" },
	{ "my.db%1Forders", "my.db\x1eorders", false, "my.db%1Forders" },
	{ "my.db%1F*", "my.db\x1d", true, "my.db%1F*" },
	{ "a%1Fb%1Ft",
	    "a\x1f"
	    "b\x1et",
	    false, "a.b.t" },
	{ "a%1fb%1f*",
	    "a\x1f"
	    "b\x1d",
	    true, "a.b.*" },
	{ "db%1Fa.b",
	    "db\x1e"
	    "a.b",
	    false, "db%1Fa.b" },
	{ "db%1F%2A", "db\x1e*", false, "db%1F%2A" },
	{ "db.caf\xc3\xa9",
	    "db\x1e"
	    "caf\xc3\xa9",
	    false, "db%1Fcaf%C3%A9" },
	{ "db%1Fcaf%c3%a9",
	    "db\x1e"
	    "caf\xc3\xa9",
	    false, "db%1Fcaf%C3%A9" },
	{ "db.50%off",
	    "db\x1e"
	    "50%off",
	    false, "db%1F50%25off" },
	{ "sp ace.t", "sp ace\x1et", false, "sp%20ace%1Ft" },
	{ "a.b+c",
	    "a\x1e"
	    "b+c",
	    false, "a%1Fb%2Bc" },
	{ "a.*.t", "a\x1f*\x1et", false, "a%1F%2A%1Ft" },
	{ "Db_1.T-2~", "Db_1\x1eT-2~", false, "Db_1.T-2~" },
};

/* Bad text forms and a piece of their message. */
static const struct {
	const char *text;
	const char *err;
} bad_forms[] = {
	{ "", "empty object name" },
	{ "db", "\"db\": an object is a namespace and a table" },
	{ "*", "an object is a namespace and a table" },
	{ "db.", "\"db.\": empty table name" },
	{ ".t", "\".t\": empty namespace level" },
	{ "a..t", "\"a..t\": empty namespace level" },
	{ ".*", "empty namespace level" },
	{ "db.t\x01", "holds a control character" },
	{ "d\tb.t", "holds a control character" },
	{ "db%1Ft%01", "\"t%01\" holds a control character" },
	{ "db%1Ft%zz", "bad percent escape in \"t%zz\"" },
	{ "db%1Ft%4", "bad percent escape in \"t%4\"" },
	{ "db%1F", "empty table name" },
	{ "%1Ft", "empty namespace level" },
	{ "a%1F%1Ft", "empty namespace level" },
};

/* Parse, format and re-parse every good form; check every bad one. */
static void
test_parse_format(void **state)
{
	struct route_obj obj, again;
	char err[256], buf[1024];
	size_t i;

	(void)state;
	for (i = 0; i < nitems(good_forms); i++) {
		err[0] = '\0';
		if (route_obj_parse(good_forms[i].text, &obj, err,
			sizeof(err)) != 0)
			fail_msg("%s: %s", good_forms[i].text, err);
		assert_int_equal(obj.len, strlen(good_forms[i].key));
		assert_memory_equal(obj.key, good_forms[i].key, obj.len);
		assert_int_equal(obj.rule, good_forms[i].rule);
		route_obj_format(&obj, buf, sizeof(buf));
		assert_string_equal(buf, good_forms[i].canon);
		assert_int_equal(route_obj_parse(buf, &again, err, sizeof(err)),
		    0);
		assert_int_equal(again.len, obj.len);
		assert_memory_equal(again.key, obj.key, obj.len);
		assert_int_equal(again.rule, obj.rule);
		/* The stored key gives back the same object. */
		assert_int_equal(route_obj_from_key(obj.key, obj.len, &again),
		    0);
		assert_int_equal(again.rule, obj.rule);
		assert_memory_equal(again.key, obj.key, obj.len);
	}
	for (i = 0; i < nitems(bad_forms); i++) {
		err[0] = '\0';
		if (route_obj_parse(bad_forms[i].text, &obj, err,
			sizeof(err)) != -1)
			fail_msg("\"%s\" parsed", bad_forms[i].text);
		if (strstr(err, bad_forms[i].err) == NULL)
			fail_msg("\"%s\": \"%s\" lacks \"%s\"",
			    bad_forms[i].text, err, bad_forms[i].err);
	}
}

/*
 * A stored key formats as its object does: plain table keys straight from
 * the key, the rest (rules, REST form, bad keys: "") through the object.
 */
static void
test_key_format(void **state)
{
	static const char *const texts[] = { "db.orders", "a.b.c.t", "db.*",
		"a.b.*", "db.50%off", "my.db%1Forders", "db.caf\xc3\xa9",
		"db.say\"hi\"", "db.a~b-c_d", "x.y" };
	static const unsigned char bad[][6] = { "\x1e"
						"ab",
		"ab\x1e",
		"a\x1f\x1e"
		"b",
		"a\x1e"
		"b\x1e"
		"c",
		"ab",
		"a\x1e"
		"b\x1f"
		"c" };
	struct route_obj obj;
	char want[STORE_KEY_MAX * 3 + 8], got[sizeof(want)], err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		assert_int_equal(route_obj_parse(texts[i], &obj, err,
				     sizeof(err)),
		    0);
		route_obj_format(&obj, want, sizeof(want));
		assert_int_equal(route_key_format(obj.key, obj.len, got,
				     sizeof(got)),
		    strlen(want));
		assert_string_equal(got, want);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(route_key_format(bad[i],
				     strlen((const char *)bad[i]), got,
				     sizeof(got)),
		    0);
		assert_string_equal(got, "");
	}
	/* Too small a buffer: truncated as route_obj_format truncates. */
	assert_int_equal(route_obj_parse("db.orders", &obj, err, sizeof(err)),
	    0);
	assert_int_equal(route_key_format(obj.key, obj.len, got, 5), 4);
	assert_string_equal(got, "db.o");
}

/* Names near and past the key size limit; a formatted name truncates. */
static void
test_parse_limits(void **state)
{
	static const struct {
		size_t len; /* the whole text */
		size_t dot; /* where SEP goes */
		const char *sep;
	} longs[] = {
		{ 540, 2, "." }, /* a long table */
		{ 1000, 2, "." },
		{ 2048, 2, "." },
		{ 540, 536, "." }, /* a long namespace */
		{ 2048, 2040, "." },
		{ 540, 538, ".*" }, /* a rule over a long namespace */
		{ 1500, 2, "%1F" }, /* the REST form */
		{ 1500, 1400, "%1F" },
		{ 1500, 700, "%1F" },
	};
	struct route_obj obj;
	char text[3000], err[256], small[8];
	size_t i;

	(void)state;
	/* "db" + 0x1e + 508 = 511 bytes: the largest key. */
	memcpy(text, "db.", 3);
	memset(text + 3, 't', 508);
	text[511] = '\0';
	assert_int_equal(route_obj_parse(text, &obj, err, sizeof(err)), 0);
	assert_int_equal(obj.len, STORE_KEY_MAX);
	text[511] = 't';
	text[512] = '\0';
	assert_int_equal(route_obj_parse(text, &obj, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "too long"));
	/*
	 * Past the key but within the text limit, in each place a name can
	 * stand: a long table name once overran the parser's own buffer.
	 */
	for (i = 0; i < nitems(longs); i++) {
		memset(text, 't', longs[i].len);
		text[longs[i].len] = '\0';
		memcpy(text + longs[i].dot, longs[i].sep, strlen(longs[i].sep));
		if (route_obj_parse(text, &obj, err, sizeof(err)) != -1)
			fail_msg("row %zu: a %zu-byte name parsed", i,
			    longs[i].len);
		if (strstr(err, "too long") == NULL)
			fail_msg("row %zu: \"%s\"", i, err);
	}
	memset(text, 'a', sizeof(text) - 1);
	text[1] = '.';
	text[sizeof(text) - 1] = '\0';
	assert_int_equal(route_obj_parse(text, &obj, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "too long"));

	assert_int_equal(route_obj_parse("db.orders", &obj, err, sizeof(err)),
	    0);
	route_obj_format(&obj, small, sizeof(small));
	assert_string_equal(small, "db.orde");
}

/* Building keys from decoded parts, and from stored keys. */
static void
test_obj_build(void **state)
{
	static const struct {
		const char *ns;
		const char *table; /* NULL: a rule */
		int rc;
		const char *key;
	} tab[] = {
		{ "db", "orders", 0, "db\x1eorders" },
		{ "a\x1f"
		  "b",
		    "t", 0,
		    "a\x1f"
		    "b\x1et" },
		{ "a\x1f"
		  "b",
		    NULL, 0,
		    "a\x1f"
		    "b\x1d" },
		{ "my.db", "x.y", 0, "my.db\x1ex.y" },
		{ "", "t", -1, NULL },
		{ "db", "", -1, NULL },
		{ "", NULL, -1, NULL },
		{ "a\x1f", "t", -1, NULL },
		{ "\x1f"
		  "a",
		    "t", -1, NULL },
		{ "a\x1f\x1f"
		  "b",
		    NULL, -1, NULL },
		{ "db", "t\x02", -1, NULL },
		{ "d\nb", "t", -1, NULL },
		{ "db", "t\x1e", -1, NULL },
	};
	static const struct {
		const char *key;
		int rc;
		bool rule;
	} keys[] = {
		{ "db\x1eorders", 0, false },
		{ "db\x1d", 0, true },
		{ "a\x1f"
		  "b\x1d",
		    0, true },
		{ "", -1, false },
		{ "x", -1, false },
		{ "dborders", -1, false },
		{ "\x1et", -1, false },
		{ "db\x1e", -1, false },
		{ "\x1d", -1, false },
		{ "db\x1e"
		  "a\x1e"
		  "b",
		    -1, false },
		{ "a\x1d"
		  "b\x1d",
		    -1, false },
	};
	char big[STORE_KEY_MAX + 8];
	struct route_obj obj;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		if (tab[i].table != NULL)
			rc = route_obj_table(tab[i].ns, strlen(tab[i].ns),
			    tab[i].table, strlen(tab[i].table), &obj);
		else
			rc = route_obj_rule(tab[i].ns, strlen(tab[i].ns), &obj);
		if (rc != tab[i].rc)
			fail_msg("row %zu: rc %d", i, rc);
		if (rc != 0)
			continue;
		assert_int_equal(obj.len, strlen(tab[i].key));
		assert_memory_equal(obj.key, tab[i].key, obj.len);
		assert_int_equal(obj.rule, tab[i].table == NULL);
	}
	for (i = 0; i < nitems(keys); i++) {
		rc = route_obj_from_key(keys[i].key, strlen(keys[i].key), &obj);
		if (rc != keys[i].rc)
			fail_msg("key row %zu: rc %d", i, rc);
		if (rc == 0)
			assert_int_equal(obj.rule, keys[i].rule);
	}
	memset(big, 'n', sizeof(big));
	assert_int_equal(route_obj_table(big, 300, big, 210, &obj), 0);
	assert_int_equal(obj.len, STORE_KEY_MAX);
	assert_int_equal(route_obj_table(big, 300, big, 211, &obj), -1);
	assert_int_equal(route_obj_rule(big, STORE_KEY_MAX - 1, &obj), 0);
	assert_int_equal(route_obj_rule(big, STORE_KEY_MAX, &obj), -1);
	assert_string_equal(route_side_name(ROUTE_WAREHOUSE), "warehouse");
	assert_string_equal(route_side_name(ROUTE_LAKEHOUSE), "lakehouse");
}

/* Assign the object in TEXT to WAVE. */
static void
put_route(struct store *s, const char *text, uint32_t wave)
{
	struct route_obj obj;
	char err[256];

	if (route_obj_parse(text, &obj, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
	assert_int_equal(store_route_put(s, obj.key, obj.len, wave, T0, NULL),
	    STORE_OK);
}

/* Object entry first, then rules from the longest namespace. */
static void
test_resolve_order(void **state)
{
	static const struct {
		const char *obj;
		enum route_why why;
		const char *matched;
		uint32_t wave;
	} tab[] = {
		{ "a.t", ROUTE_WHY_RULE, "a.*", 1 },
		{ "a.b.t", ROUTE_WHY_OBJECT, "a.b.t", 3 },
		{ "a.b.u", ROUTE_WHY_RULE, "a.b.*", 2 },
		{ "a.b.c.u", ROUTE_WHY_RULE, "a.b.*", 2 },
		{ "a.x.y", ROUTE_WHY_RULE, "a.*", 1 },
		{ "a.x.y.z.w", ROUTE_WHY_RULE, "a.*", 1 },
		{ "c.t", ROUTE_WHY_OBJECT, "c.t", 4 },
		{ "c.u", ROUTE_WHY_UNASSIGNED, "", 0 },
		{ "ab.t", ROUTE_WHY_UNASSIGNED, "", 0 },
		{ "b.a.t", ROUTE_WHY_UNASSIGNED, "", 0 },
		{ "a.b.*", ROUTE_WHY_OBJECT, "a.b.*", 2 },
		{ "a.c.*", ROUTE_WHY_RULE, "a.*", 1 },
		{ "a.*", ROUTE_WHY_OBJECT, "a.*", 1 },
		{ "c.*", ROUTE_WHY_UNASSIGNED, "", 0 },
		{ "my.db%1Ft", ROUTE_WHY_RULE, "my.db%1F*", 5 },
		{ "my%1Fdb.t", ROUTE_WHY_UNASSIGNED, "", 0 },
	};
	struct routing_tmp *t = *state;
	struct route_result res;
	struct route_obj obj;
	char err[256], buf[1024];
	size_t i;

	put_route(t->store, "a.*", 1);
	put_route(t->store, "a.b.*", 2);
	put_route(t->store, "a.b.t", 3);
	put_route(t->store, "c.t", 4);
	put_route(t->store, "my.db%1F*", 5);
	for (i = 0; i < nitems(tab); i++) {
		assert_int_equal(route_obj_parse(tab[i].obj, &obj, err,
				     sizeof(err)),
		    0);
		assert_int_equal(route_resolve(t->store, &obj, 0, &res), 0);
		if (res.why != tab[i].why)
			fail_msg("%s: why %d", tab[i].obj, res.why);
		assert_int_equal(res.assigned,
		    tab[i].why != ROUTE_WHY_UNASSIGNED);
		assert_int_equal(res.wave, tab[i].wave);
		/* No wave has a record: all on the warehouse. */
		assert_int_equal(res.read, ROUTE_WAREHOUSE);
		assert_int_equal(res.write, ROUTE_WAREHOUSE);
		assert_int_equal(res.state, WAVE_WAREHOUSE);
		if (res.why == ROUTE_WHY_UNASSIGNED) {
			assert_int_equal(res.version, 0);
			assert_int_equal(res.matched.len, 0);
			continue;
		}
		route_obj_format(&res.matched, buf, sizeof(buf));
		assert_string_equal(buf, tab[i].matched);
		assert_true(res.version >= 1);
	}
}

/* Each wave state: where reads and writes go, and the version. */
static void
test_resolve_states(void **state)
{
	static const struct {
		uint8_t state;
		uint8_t pct;
		enum route_side read;
		enum route_side write;
		bool refused;
	} tab[] = {
		{ WAVE_WAREHOUSE, 0, ROUTE_WAREHOUSE, ROUTE_WAREHOUSE, false },
		{ WAVE_CANARY, 0, ROUTE_WAREHOUSE, ROUTE_WAREHOUSE, false },
		{ WAVE_CANARY, 100, ROUTE_LAKEHOUSE, ROUTE_WAREHOUSE, false },
		{ WAVE_LAKEHOUSE, 100, ROUTE_LAKEHOUSE, ROUTE_WAREHOUSE,
		    false },
		{ WAVE_ROLLED_BACK, 0, ROUTE_WAREHOUSE, ROUTE_WAREHOUSE,
		    false },
		{ WAVE_FROZEN, 100, ROUTE_LAKEHOUSE, ROUTE_LAKEHOUSE, true },
		{ WAVE_RETIRED, 100, ROUTE_LAKEHOUSE, ROUTE_LAKEHOUSE, true },
		/* A state from a newer floe: the safe side. */
		{ 77, 100, ROUTE_WAREHOUSE, ROUTE_WAREHOUSE, false },
	};
	struct routing_tmp *t = *state;
	struct route_result res;
	struct route_obj obj;
	char err[256];
	size_t i;
	uint64_t seq;

	assert_int_equal(route_obj_parse("db.t", &obj, err, sizeof(err)), 0);
	put_route(t->store, "db.t", 9); /* seq 1 */
	for (i = 0; i < nitems(tab); i++) {
		assert_int_equal(routing_tmp_force_wave(t->store, 9,
				     tab[i].state, tab[i].pct, T0 + (int64_t)i),
		    STORE_OK);
		seq = store_last_seq(t->store);
		assert_int_equal(route_resolve(t->store, &obj, 12345, &res), 0);
		assert_int_equal(res.read, tab[i].read);
		assert_int_equal(res.write, tab[i].write);
		assert_int_equal(res.warehouse_writes_refused, tab[i].refused);
		assert_int_equal(res.state, tab[i].state);
		assert_int_equal(res.pct, tab[i].pct);
		assert_int_equal(res.version, seq);
		assert_int_equal(res.wave, 9);
		assert_int_equal(res.why, ROUTE_WHY_OBJECT);
	}
	/* A newer route record raises the version past the wave's. */
	put_route(t->store, "db.t", 9);
	assert_int_equal(route_resolve(t->store, &obj, 1, &res), 0);
	assert_int_equal(res.version, store_last_seq(t->store));
}

/* Canary: sticky per client and object; the share is about pct. */
static void
test_canary(void **state)
{
	static const uint8_t pcts[] = { 1, 5, 10, 30, 50, 70, 90, 99 };
	struct routing_tmp *t = *state;
	struct route_result res, again;
	struct route_obj obj, other;
	char err[256];
	size_t i, c, lake, differ = 0;
	uint64_t client;

	assert_int_equal(route_obj_parse("db.t", &obj, err, sizeof(err)), 0);
	assert_int_equal(route_obj_parse("db.u", &other, err, sizeof(err)), 0);
	put_route(t->store, "db.*", 1);
	for (i = 0; i < nitems(pcts); i++) {
		assert_int_equal(routing_tmp_force_wave(t->store, 1,
				     WAVE_CANARY, pcts[i], T0),
		    STORE_OK);
		for (lake = 0, c = 0; c < 1000; c++) {
			client = 0x1000 + c;
			assert_int_equal(route_resolve(t->store, &obj, client,
					     &res),
			    0);
			assert_int_equal(route_resolve(t->store, &obj, client,
					     &again),
			    0);
			assert_int_equal(res.read, again.read);
			assert_int_equal(res.write, ROUTE_WAREHOUSE);
			if (res.read == ROUTE_LAKEHOUSE)
				lake++;
			assert_int_equal(route_resolve(t->store, &other, client,
					     &again),
			    0);
			if (again.read != res.read)
				differ++;
		}
		/* Within 5 points of pct: 50 of 1000 clients. */
		if (labs((long)lake - 10L * pcts[i]) > 50)
			fail_msg("pct %u: %zu of 1000 on the lakehouse",
			    pcts[i], lake);
	}
	/* Finer: at 1%, 10000 clients put about 100 on the lakehouse. */
	assert_int_equal(routing_tmp_force_wave(t->store, 1, WAVE_CANARY, 1,
			     T0),
	    STORE_OK);
	for (lake = 0, c = 0; c < 10000; c++) {
		assert_int_equal(route_resolve(t->store, &obj, c, &res), 0);
		if (res.read == ROUTE_LAKEHOUSE)
			lake++;
	}
	if (lake < 60 || lake > 140)
		fail_msg("pct 1: %zu of 10000 on the lakehouse", lake);
	/* The hash is per object too: another table splits differently. */
	assert_true(differ > 100);
	/* Deterministic: a known client lands where it landed before. */
	assert_int_equal(routing_tmp_force_wave(t->store, 1, WAVE_CANARY, 50,
			     T0),
	    STORE_OK);
	assert_int_equal(route_resolve(t->store, &obj, 42, &res), 0);
	assert_int_equal(route_resolve(t->store, &obj, 42, &again), 0);
	assert_int_equal(res.read, again.read);
}

/* A damaged record: warehouse, STORE_ERROR, -1. */
static void
test_store_error(void **state)
{
	static const unsigned char bad[] = { 0 };
	static const unsigned char k7[] = { 0, 0, 0, 7 };
	struct routing_tmp *t = *state;
	struct route_result res;
	struct route_obj obj;
	char err[256];

	put_route(t->store, "db.t", 7);
	assert_int_equal(routing_tmp_force_wave(t->store, 7, WAVE_LAKEHOUSE,
			     100, T0),
	    STORE_OK);
	assert_int_equal(route_obj_parse("db.t", &obj, err, sizeof(err)), 0);
	assert_int_equal(route_resolve(t->store, &obj, 0, &res), 0);
	assert_int_equal(res.read, ROUTE_LAKEHOUSE);

	store_free(t->store);
	assert_int_equal(routing_tmp_raw_put(t->dir, "waves", k7, 4, bad, 1),
	    0);
	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	assert_int_equal(route_resolve(t->store, &obj, 0, &res), -1);
	assert_int_equal(res.why, ROUTE_WHY_STORE_ERROR);
	assert_int_equal(res.read, ROUTE_WAREHOUSE);
	assert_int_equal(res.write, ROUTE_WAREHOUSE);
	assert_false(res.warehouse_writes_refused);
	assert_false(store_is_healthy(t->store));

	/* A damaged route record, reached through a rule. */
	store_free(t->store);
	assert_int_equal(routing_tmp_raw_put(t->dir, "objects", "x\x1d", 2, bad,
			     1),
	    0);
	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	assert_int_equal(route_obj_parse("x.y.z", &obj, err, sizeof(err)), 0);
	assert_int_equal(route_resolve(t->store, &obj, 0, &res), -1);
	assert_int_equal(res.why, ROUTE_WHY_STORE_ERROR);
	/* The read bracket was closed: later reads work. */
	assert_int_equal(route_obj_parse("q.t", &obj, err, sizeof(err)), 0);
	assert_int_equal(route_resolve(t->store, &obj, 0, &res), 0);
	assert_int_equal(res.why, ROUTE_WHY_UNASSIGNED);
	assert_true(store_is_healthy(t->store));
}

/* Split LINE into at most MAX blank-separated words. */
static size_t
split_words(char *line, char **w, size_t max)
{
	size_t n = 0;
	char *p;

	for (p = strtok(line, " \t\r\n"); p != NULL && n < max;
	     p = strtok(NULL, " \t\r\n"))
		w[n++] = p;
	return n;
}

/* The "why" of a result as the golden files write it. */
static const char *
why_name(enum route_why why)
{
	switch (why) {
	case ROUTE_WHY_OBJECT:
		return "object";
	case ROUTE_WHY_RULE:
		return "rule";
	case ROUTE_WHY_STORE_ERROR:
		return "store-error";
	case ROUTE_WHY_UNASSIGNED:
	default:
		return "unassigned";
	}
}

/*
 * Run one golden script IN against store S, writing its output to OUT.
 * Lines: "route OBJ WAVE", "unroute OBJ", "wave N STATE [PCT]",
 * "resolve OBJ [CLIENT]"; "#" comments are copied, blank lines skipped.
 */
static void
golden_run(struct store *s, FILE *in, FILE *out)
{
	char line[1024], copy[1024], err[256], m[1024], *w[5];
	struct route_result res;
	struct route_obj obj;
	unsigned long long client;
	uint32_t n;
	int lineno = 0, st;
	unsigned pct;
	size_t nw;

	while (fgets(line, sizeof(line), in) != NULL) {
		lineno++;
		if (line[0] == '#') {
			fputs(line, out);
			continue;
		}
		strlcpy(copy, line, sizeof(copy));
		copy[strcspn(copy, "\r\n")] = '\0';
		if ((nw = split_words(line, w, nitems(w))) == 0)
			continue;
		if (strcmp(w[0], "route") == 0 && nw == 3) {
			if (route_obj_parse(w[1], &obj, err, sizeof(err)) ==
			    -1) {
				fprintf(out, "%s: error: %s\n", copy, err);
				continue;
			}
			if (wave_parse(w[2], &n) == -1) {
				fprintf(out, "%s: error: bad wave\n", copy);
				continue;
			}
			assert_int_equal(store_route_put(s, obj.key, obj.len, n,
					     T0 + lineno, NULL),
			    STORE_OK);
		} else if (strcmp(w[0], "unroute") == 0 && nw == 2) {
			if (route_obj_parse(w[1], &obj, err, sizeof(err)) ==
			    -1) {
				fprintf(out, "%s: error: %s\n", copy, err);
				continue;
			}
			if (store_route_del(s, obj.key, obj.len, T0 + lineno,
				NULL) == STORE_NOTFOUND)
				fprintf(out, "%s: not assigned\n", copy);
		} else if (strcmp(w[0], "wave") == 0 && (nw == 3 || nw == 4)) {
			pct = nw == 4 ? (unsigned)strtoul(w[3], NULL, 10) : 0;
			if (wave_parse(w[1], &n) == -1 ||
			    (st = wave_state_parse(w[2])) == -1 || pct > 100) {
				fprintf(out, "%s: error: bad wave line\n",
				    copy);
				continue;
			}
			assert_int_equal(routing_tmp_force_wave(s, n,
					     (uint8_t)st, (uint8_t)pct,
					     T0 + lineno),
			    STORE_OK);
		} else if (strcmp(w[0], "resolve") == 0 &&
		    (nw == 2 || nw == 3)) {
			client = nw == 3 ? strtoull(w[2], NULL, 10) : 0;
			if (route_obj_parse(w[1], &obj, err, sizeof(err)) ==
			    -1) {
				fprintf(out, "%s: error: %s\n", copy, err);
				continue;
			}
			route_resolve(s, &obj, client, &res);
			route_obj_format(&res.matched, m, sizeof(m));
			fprintf(out,
			    "%s: read=%s write=%s wave=%u state=%s pct=%u "
			    "why=%s matched=%s version=%" PRIu64 "%s\n",
			    copy, route_side_name(res.read),
			    route_side_name(res.write), res.wave,
			    wave_state_name(res.state), res.pct,
			    why_name(res.why), res.assigned ? m : "-",
			    res.version,
			    res.warehouse_writes_refused ?
				" warehouse-writes-refused" :
				"");
		} else
			fail_msg("line %d: cannot read \"%s\"", lineno, copy);
	}
}

/* Read all of PATH into a new string. Caller frees. */
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (f == NULL)
		return NULL;
	buf = calloc(1, 1 << 16);
	assert_non_null(buf);
	len = fread(buf, 1, (1 << 16) - 1, f);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/*
 * Every tests/fixtures/routes/NAME.in against a fresh store: the output
 * must be NAME.out exactly (shown with diff -u when it is not).
 */
static void
test_golden(void **state)
{
	char in[512], exp[512], act[512], cmd[2048], *want, *got;
	struct routing_tmp *t;
	struct dirent *de;
	size_t len, nfiles = 0, failed = 0;
	FILE *fin, *fout;
	DIR *d;

	(void)state;
	d = opendir(GOLDEN_DIR);
	if (d == NULL)
		fail_msg("%s: cannot open (run from the top directory)",
		    GOLDEN_DIR);
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".in") != 0)
			continue;
		snprintf(in, sizeof(in), "%s/%s", GOLDEN_DIR, de->d_name);
		snprintf(exp, sizeof(exp), "%s/%.*s.out", GOLDEN_DIR,
		    (int)(len - 3), de->d_name);
		if ((t = routing_tmp_open()) == NULL) {
			closedir(d);
			fail_msg("cannot open a store");
			return;
		}
		snprintf(act, sizeof(act), "%s/actual.out", t->dir);
		fin = fopen(in, "r");
		assert_non_null(fin);
		fout = fopen(act, "w");
		assert_non_null(fout);
		golden_run(t->store, fin, fout);
		fclose(fin);
		assert_int_equal(fclose(fout), 0);
		want = slurp(exp);
		got = slurp(act);
		assert_non_null(got);
		if (want == NULL || strcmp(want, got) != 0) {
			print_error("%s differs from %s:\n", in, exp);
			snprintf(cmd, sizeof(cmd), "diff -u %s %s >&2", exp,
			    act);
			if (system(cmd) == -1)
				print_error("cannot run diff\n");
			failed++;
		}
		free(want);
		free(got);
		routing_tmp_close(t);
		nfiles++;
	}
	closedir(d);
	assert_true(nfiles >= 3);
	assert_int_equal(failed, 0);
}

/* Run the tests. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_format),
		cmocka_unit_test(test_parse_limits),
		cmocka_unit_test(test_key_format),
		cmocka_unit_test(test_obj_build),
		cmocka_unit_test_setup_teardown(test_resolve_order, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_resolve_states, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_canary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_error, setup,
		    teardown),
		cmocka_unit_test(test_golden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
