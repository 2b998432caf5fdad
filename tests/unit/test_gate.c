/*
 * floe: test_gate.c -- the cutover and decommission gates as pure
 * functions: window edges, a clean streak broken by one dirty record,
 * records in any order, per-wave overrides, decommission counting only
 * records dated after the flip, the open mismatch of the triage, and the
 * sentence that names the blocking objects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "lib/compat.h"
#include "policy/gate.h"
#include "routing/ledger.h"

#define NOW 1800000000000LL
#define H (3600 * 1000LL)
#define D (24 * H)
#define MAXR 16

/* A record: hours before NOW (negative: after), and its bucket. */
struct rdef {
	int64_t ago_ms;
	int bucket; /* enum ledger_bucket; clean = all tiers match */
};

/* Build records from DEFS (terminated by a bucket of -1). */
static size_t
mkrecs(const struct rdef *defs, struct ledger_rec *out)
{
	size_t n;

	for (n = 0; n < MAXR && defs[n].bucket >= 0; n++) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].ts_ms = NOW - defs[n].ago_ms;
		out[n].bucket = (uint8_t)defs[n].bucket;
		out[n].count_match = true;
		out[n].aggregate_match = defs[n].bucket != LEDGER_GAP &&
		    defs[n].bucket != LEDGER_STALE;
		out[n].hash_match = defs[n].bucket == LEDGER_CLEAN;
	}
	return n;
}

#define C LEDGER_CLEAN
#define S LEDGER_STALE
#define G LEDGER_GAP
#define V LEDGER_VALUE_DRIFT
#define END                                                                    \
	{                                                                      \
		0, -1                                                          \
	}

/* The cutover gate over one object. */
static void
test_cutover(void **state)
{
	static const struct {
		const char *name;
		uint32_t min_clean;
		int64_t window;
		struct rdef recs[MAXR];
		unsigned clean, dirty;
		unsigned gap, stale, drift;
		bool pass;
	} tab[] = {
		{ "no records", 5, 7 * D, { END }, 0, 0, 0, 0, 0, false },
		{ "five clean", 5, 7 * D,
		    { { 1 * H, C }, { 2 * H, C }, { 3 * H, C }, { 4 * H, C },
			{ 5 * H, C }, END },
		    5, 0, 0, 0, 0, true },
		{ "four clean is one short", 5, 7 * D,
		    { { 1 * H, C }, { 2 * H, C }, { 3 * H, C }, { 4 * H, C },
			END },
		    4, 0, 0, 0, 0, false },
		{ "window edge: exactly window ago counts", 2, 7 * D,
		    { { 7 * D, C }, { 1 * H, C }, END }, 2, 0, 0, 0, 0, true },
		{ "window edge: 1 ms older does not", 2, 7 * D,
		    { { 7 * D + 1, C }, { 1 * H, C }, END }, 1, 0, 0, 0, 0,
		    false },
		{ "a dirty record outside the window is forgotten", 2, 7 * D,
		    { { 8 * D, G }, { 2 * H, C }, { 1 * H, C }, END }, 2, 0, 0,
		    0, 0, true },
		{ "a streak broken by one dirty record", 3, 7 * D,
		    { { 6 * H, C }, { 5 * H, C }, { 4 * H, V }, { 3 * H, C },
			{ 2 * H, C }, { 1 * H, C }, END },
		    5, 1, 0, 0, 1, false },
		{ "stale is not clean either", 1, 7 * D,
		    { { 2 * H, C }, { 1 * H, S }, END }, 1, 1, 0, 1, 0, false },
		{ "out of order: newest first, same verdict", 3, 7 * D,
		    { { 1 * H, C }, { 9 * D, V }, { 3 * H, C }, { 2 * H, C },
			END },
		    3, 0, 0, 0, 0, true },
		{ "out of order with a dirty one in the middle", 3, 7 * D,
		    { { 1 * H, C }, { 5 * D, G }, { 3 * H, C }, { 2 * H, C },
			{ 6 * D, G }, END },
		    3, 2, 2, 0, 0, false },
		{ "a record a little in the future counts", 1, 7 * D,
		    { { -60 * 1000, C }, END }, 1, 0, 0, 0, 0, true },
		{ "gate off: min_clean 0 passes anything", 0, 7 * D,
		    { { 1 * H, V }, END }, 0, 1, 0, 0, 1, true },
		{ "finance override: 10 in 14d, 9 is short", 10, 14 * D,
		    { { 1 * D, C }, { 2 * D, C }, { 3 * D, C }, { 4 * D, C },
			{ 5 * D, C }, { 6 * D, C }, { 8 * D, C }, { 9 * D, C },
			{ 13 * D, C }, { 15 * D, C }, END },
		    9, 0, 0, 0, 0, false },
	};
	struct ledger_rec recs[MAXR];
	struct gate_params p;
	struct gate_obj o;
	size_t i, n;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		n = mkrecs(tab[i].recs, recs);
		p.min_clean = tab[i].min_clean;
		p.window_ms = tab[i].window;
		p.decom_min_clean = 0;
		gate_cutover(recs, n, &p, NOW, &o);
		if (o.clean != tab[i].clean || o.dirty != tab[i].dirty ||
		    o.pass != tab[i].pass ||
		    o.buckets[LEDGER_GAP] != tab[i].gap ||
		    o.buckets[LEDGER_STALE] != tab[i].stale ||
		    o.buckets[LEDGER_VALUE_DRIFT] != tab[i].drift)
			fail_msg("%s: clean %u dirty %u gap %u stale %u drift "
				 "%u pass %d",
			    tab[i].name, o.clean, o.dirty,
			    o.buckets[LEDGER_GAP], o.buckets[LEDGER_STALE],
			    o.buckets[LEDGER_VALUE_DRIFT], o.pass);
	}
}

/* Per-wave overrides over the policy's defaults. */
static void
test_params_for(void **state)
{
	static const struct {
		uint32_t wave_min;
		int64_t wave_window;
		uint32_t want_min;
		int64_t want_window;
	} tab[] = {
		{ 0, 0, 5, 7 * D },
		{ 10, 0, 10, 7 * D },
		{ 0, 14 * D, 5, 14 * D },
		{ 10, 14 * D, 10, 14 * D },
	};
	struct gate_params def = { 5, 7 * D, 10 }, p;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		gate_params_for(&def, tab[i].wave_min, tab[i].wave_window, &p);
		assert_int_equal(p.min_clean, tab[i].want_min);
		assert_int_equal(p.window_ms, tab[i].want_window);
		assert_int_equal(p.decom_min_clean, 10);
	}
}

/* An override changes the verdict over the same records. */
static void
test_override_verdict(void **state)
{
	static const struct rdef defs[] = { { 1 * D, C }, { 2 * D, C },
		{ 3 * D, C }, { 4 * D, C }, { 5 * D, C }, { 10 * D, C }, END };
	struct gate_params def = { 5, 7 * D, 10 }, p;
	struct ledger_rec recs[MAXR];
	struct gate_obj o;
	size_t n = mkrecs(defs, recs);

	(void)state;
	gate_params_for(&def, 0, 0, &p);
	gate_cutover(recs, n, &p, NOW, &o);
	assert_true(o.pass);
	gate_params_for(&def, 6, 0, &p);
	gate_cutover(recs, n, &p, NOW, &o);
	assert_false(o.pass);
	assert_int_equal(o.clean, 5);
	gate_params_for(&def, 6, 14 * D, &p);
	gate_cutover(recs, n, &p, NOW, &o);
	assert_true(o.pass);
	assert_int_equal(o.clean, 6);
}

/* The decommission gate counts only records dated after the flip. */
static void
test_decommission(void **state)
{
	static const struct {
		const char *name;
		uint32_t min_clean;
		int64_t flipped_ago;
		struct rdef recs[MAXR];
		unsigned clean, dirty;
		bool pass;
	} tab[] = {
		{ "records before the flip do not count", 2, 2 * D,
		    { { 5 * D, C }, { 4 * D, C }, { 3 * D, C }, { 1 * D, C },
			END },
		    1, 0, false },
		{ "a record at the flip's very ms does not count", 1, 2 * D,
		    { { 2 * D, C }, END }, 0, 0, false },
		{ "1 ms after the flip counts", 1, 2 * D,
		    { { 2 * D - 1, C }, END }, 1, 0, true },
		{ "dirty before the flip is forgotten", 2, 2 * D,
		    { { 3 * D, V }, { 1 * D, C }, { 1 * H, C }, END }, 2, 0,
		    true },
		{ "dirty after the flip blocks", 2, 2 * D,
		    { { 1 * D, C }, { 12 * H, S }, { 1 * H, C }, END }, 2, 1,
		    false },
		{ "out of order", 3, 2 * D,
		    { { 1 * H, C }, { 3 * D, G }, { 1 * D, C }, { 2 * H, C },
			END },
		    3, 0, true },
		{ "min 0: only none dirty", 0, 2 * D, { END }, 0, 0, true },
	};
	struct ledger_rec recs[MAXR];
	struct gate_params p;
	struct gate_obj o;
	size_t i, n;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		n = mkrecs(tab[i].recs, recs);
		p.min_clean = 5;
		p.window_ms = 7 * D;
		p.decom_min_clean = tab[i].min_clean;
		gate_decommission(recs, n, &p, NOW - tab[i].flipped_ago, &o);
		if (o.clean != tab[i].clean || o.dirty != tab[i].dirty ||
		    o.pass != tab[i].pass)
			fail_msg("%s: clean %u dirty %u pass %d", tab[i].name,
			    o.clean, o.dirty, o.pass);
	}
}

/* The open mismatch: dirty records newer than the newest clean one. */
static void
test_open(void **state)
{
	static const struct {
		const char *name;
		struct rdef recs[MAXR];
		unsigned open;
		int bucket;
		int64_t since_ago;
	} tab[] = {
		{ "all clean", { { 2 * H, C }, { 1 * H, C }, END }, 0, 0, 0 },
		{ "resolved: clean after the gap",
		    { { 3 * H, G }, { 1 * H, C }, END }, 0, 0, 0 },
		{ "open gap since 3h",
		    { { 4 * H, C }, { 3 * H, G }, { 1 * H, G }, END }, 2, G,
		    3 * H },
		{ "newest bucket wins, any order",
		    { { 1 * H, V }, { 4 * H, C }, { 3 * H, G }, END }, 2, V,
		    3 * H },
		{ "no clean at all", { { 2 * H, S }, END }, 1, S, 2 * H },
	};
	struct ledger_rec recs[MAXR];
	struct gate_params p = { 1, 7 * D, 1 };
	struct gate_obj o;
	size_t i, n;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		n = mkrecs(tab[i].recs, recs);
		gate_cutover(recs, n, &p, NOW, &o);
		if (o.open != tab[i].open ||
		    (o.open > 0 &&
			(o.open_bucket != tab[i].bucket ||
			    o.open_since_ms != NOW - tab[i].since_ago)))
			fail_msg("%s: open %u bucket %u since %lld",
			    tab[i].name, o.open, o.open_bucket,
			    (long long)o.open_since_ms);
	}
}

/* The wave's verdict and its sentence. */
static void
test_verdict(void **state)
{
	struct gate_params p = { 5, 7 * D, 10 };
	struct gate_item items[6];
	char msg[1024];
	size_t i;

	(void)state;
	memset(items, 0, sizeof(items));
	for (i = 0; i < 6; i++) {
		items[i].ev.pass = true;
		items[i].ev.clean = 5;
	}
	items[0].name = "db.orders";
	items[1].name = "db.items";
	items[2].name = "db.a";
	items[3].name = "db.b";
	items[4].name = "db.c";
	items[5].name = "db.d";
	assert_true(
	    gate_verdict(false, 3, &p, items, 6, NULL, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "cutover gate holds"));

	items[1].ev.pass = false;
	items[1].ev.clean = 3;
	items[1].ev.dirty = 2;
	items[1].ev.buckets[LEDGER_GAP] = 1;
	items[1].ev.buckets[LEDGER_STALE] = 1;
	assert_false(
	    gate_verdict(false, 3, &p, items, 6, NULL, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "1 of 6 objects blocking"));
	assert_non_null(strstr(msg,
	    "db.items 3 clean, 2 dirty (stale 1, "
	    "gap 1)"));
	assert_null(strstr(msg, "db.orders"));
	assert_non_null(strstr(msg, "in the last 7d"));

	/* Past four blocking objects the sentence points at eligible. */
	for (i = 0; i < 6; i++)
		items[i].ev.pass = false;
	assert_false(
	    gate_verdict(false, 3, &p, items, 6, NULL, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "and 2 more (floectl eligible 3)"));

	/* Decommission: every object passes, but no sign-off. */
	for (i = 0; i < 6; i++)
		items[i].ev.pass = true;
	assert_false(gate_verdict(true, 3, &p, items, 6, "", msg, sizeof(msg)));
	assert_non_null(strstr(msg, "no sign-off"));
	assert_true(
	    gate_verdict(true, 3, &p, items, 6, "alice", msg, sizeof(msg)));
	assert_non_null(strstr(msg, "signed off by alice"));

	/* Gate off. */
	p.min_clean = 0;
	assert_true(
	    gate_verdict(false, 3, &p, items, 0, NULL, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "gate is off"));

	/* A short buffer is cut, never overrun. */
	p.min_clean = 5;
	items[0].ev.pass = false;
	assert_false(gate_verdict(false, 3, &p, items, 6, NULL, msg, 16));
	assert_int_equal(strlen(msg), 15);
}

/* The JSON of one object's evidence. */
static void
test_obj_json(void **state)
{
	struct gate_obj o;
	json_t *j;

	(void)state;
	memset(&o, 0, sizeof(o));
	o.clean = 2;
	o.dirty = 1;
	o.buckets[LEDGER_VALUE_DRIFT] = 1;
	o.newest_ms = NOW;
	o.open = 1;
	o.open_bucket = LEDGER_VALUE_DRIFT;
	o.open_since_ms = NOW;
	j = gate_obj_json("db.orders", &o);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "object")),
	    "db.orders");
	assert_int_equal(json_integer_value(json_object_get(j, "clean")), 2);
	assert_int_equal(json_integer_value(
			     json_object_get(json_object_get(j, "buckets"),
				 "value-drift")),
	    1);
	assert_string_equal(json_string_value(
				json_object_get(json_object_get(j, "open"),
				    "action")),
	    "fix the transform: values differ");
	assert_true(json_is_false(json_object_get(j, "pass")));
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cutover),
		cmocka_unit_test(test_params_for),
		cmocka_unit_test(test_override_verdict),
		cmocka_unit_test(test_decommission),
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_verdict),
		cmocka_unit_test(test_obj_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
