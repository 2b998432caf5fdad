/*
 * floe: test_trigger.c -- the rollback triggers as pure functions: the ring
 * of buckets sliding (edges, gaps longer than the window, time going
 * back), the wave table (claims, drops when full, growth keeping counts),
 * the error judgement (floor, baseline, minimum requests), freshness runs
 * (break, unknown samples, an empty lakehouse), snapshot parsing, the count
 * check and the reconcile rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "policy/trigger.h"
#include "routing/ledger.h"
#include "routing/store.h"
#include "routing/wave.h"
#include "tests/unit/routing_tmp.h"

#define T0 1800000000000LL
#define S 1000LL

/* Window shapes: 1 s buckets, wider past 600 of them. */
static void
test_window(void **state)
{
	static const struct {
		uint64_t window;
		int64_t width;
		unsigned n;
	} tab[] = {
		{ 0, 1000, 1 },
		{ 500, 1000, 1 },
		{ 10 * S, 1000, 10 },
		{ 5 * 60 * S, 1000, 300 },
		{ 600 * S, 1000, 600 },
		{ 3600 * S, 6000, 600 },
		{ 601 * S, 1002, 600 },
	};
	struct trigger_window w;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		trigger_window_init(&w, tab[i].window);
		assert_int_equal(w.width_ms, tab[i].width);
		assert_int_equal(w.n, tab[i].n);
		assert_true((uint64_t)w.width_ms * w.n >= tab[i].window);
	}
}

/* The ring: counts in, counts sliding out, gaps and clock steps. */
static void
test_ring(void **state)
{
	/* Steps: at T0 + AT, add REQ/ERR, then the totals must be. */
	static const struct {
		int64_t at;
		uint32_t req, err;
		uint64_t want_req, want_err;
	} tab[] = {
		{ 0, 10, 1, 10, 1 },
		{ 500, 5, 0, 15, 1 }, /* same bucket */
		{ 1 * S, 2, 2, 17, 3 },
		{ 4 * S, 0, 0, 17, 3 }, /* window 5 s: all still in */
		{ 5 * S, 0, 0, 2, 2 }, /* bucket 0 slid out */
		{ 5 * S + 999, 1, 1, 3, 3 },
		{ 2 * S, 4, 0, 7, 3 }, /* back in time: into the head */
		{ 6 * S, 0, 0, 5, 1 }, /* bucket 1 out */
		{ 100 * S, 3, 3, 3, 3 }, /* a gap longer than the window */
		{ 104 * S, 0, 0, 3, 3 },
		{ 105 * S, 0, 0, 0, 0 },
	};
	struct trigger_window w;
	struct trigger_ring *r = calloc(1, sizeof(*r));
	uint64_t req, err;
	size_t i;

	(void)state;
	trigger_window_init(&w, 5 * S);
	r->head = -1;
	for (i = 0; i < nitems(tab); i++) {
		if (tab[i].req > 0 || tab[i].err > 0)
			trigger_ring_add(&w, r, T0 + tab[i].at, tab[i].req,
			    tab[i].err);
		trigger_ring_totals(&w, r, T0 + tab[i].at, &req, &err);
		assert_int_equal(req, tab[i].want_req);
		assert_int_equal(err, tab[i].want_err);
	}
	free(r);
}

/* The table: claims, lookups, drops when full, growth keeping counts. */
static void
test_table(void **state)
{
	struct trigger_table t;
	struct trigger_wave *s;
	uint64_t req, err;
	uint32_t w;

	(void)state;
	trigger_table_init(&t, 10 * S, 16);
	assert_int_equal(t.cap, 16);
	assert_null(trigger_table_get(&t, 7, false));
	s = trigger_table_get(&t, 7, true);
	assert_non_null(s);
	assert_int_equal(s->wave, 7);
	trigger_ring_add(&t.win, &s->side[ROUTE_WAREHOUSE], T0, 9, 3);
	assert_ptr_equal(trigger_table_get(&t, 7, false), s);
	/* Three quarters at most: the 13th wave is dropped, not stored. */
	for (w = 100; w < 111; w++)
		assert_non_null(trigger_table_get(&t, w, true));
	assert_int_equal(t.used, 12);
	assert_null(trigger_table_get(&t, 5000, true));
	assert_int_equal(t.dropped, 1);
	assert_true(trigger_table_grow(&t));
	assert_int_equal(t.cap, 32);
	assert_false(trigger_table_grow(&t));
	s = trigger_table_get(&t, 7, false);
	assert_non_null(s);
	trigger_ring_totals(&t.win, &s->side[ROUTE_WAREHOUSE], T0, &req, &err);
	assert_int_equal(req, 9);
	assert_int_equal(err, 3);
	for (w = 100; w < 111; w++)
		assert_non_null(trigger_table_get(&t, w, false));
	assert_non_null(trigger_table_get(&t, 5000, true));
	/* Wave numbers up to 2^31 hash anywhere. */
	assert_non_null(trigger_table_get(&t, WAVE_MAX, true));
	assert_non_null(trigger_table_get(&t, WAVE_MAX, false));
	trigger_table_clear(&t);
}

/* The error judgement. */
static void
test_errors(void **state)
{
	static const struct {
		const char *name;
		uint64_t breq, berr, lreq, lerr;
		bool fire;
		double threshold;
	} tab[] = {
		{ "floor: 3% > 2 x 1%", 0, 0, 100, 3, true, 0.02 },
		{ "floor: 2% is not above 2%", 0, 0, 100, 2, false, 0.02 },
		{ "below min requests", 0, 0, 49, 49, false, 0.02 },
		{ "exactly min requests", 0, 0, 50, 49, true, 0.02 },
		{ "high baseline: 10% x 2", 1000, 100, 100, 15, false, 0.2 },
		{ "high baseline exceeded", 1000, 100, 100, 21, true, 0.2 },
		{ "baseline under the floor", 1000, 2, 100, 3, true, 0.02 },
		{ "no lakehouse requests", 1000, 2, 0, 0, false, 0.02 },
	};
	struct trigger_error_params p = { 2.0, 0.01, 50 };
	struct trigger_error_verdict v;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		trigger_errors(&p, tab[i].breq, tab[i].berr, tab[i].lreq,
		    tab[i].lerr, &v);
		if (v.fire != tab[i].fire)
			fail_msg("%s: fire %d", tab[i].name, v.fire);
		assert_float_equal(v.threshold, tab[i].threshold, 1e-9);
		assert_int_equal(v.requests, tab[i].lreq);
	}
	p.min_requests = 0;
	trigger_errors(&p, 0, 0, 1, 1, &v);
	assert_true(v.fire);
	assert_float_equal(v.measured, 1.0, 1e-9);
}

/* Freshness runs: start, hold, break, unknown samples, empty lakehouse. */
static void
test_fresh(void **state)
{
	static const struct {
		int64_t at;
		enum trigger_lag kind;
		int64_t lag;
		bool fire;
		int64_t held;
	} tab[] = {
		{ 0, TRIGGER_LAG_KNOWN, 5 * S, false, 0 },
		{ 1 * S, TRIGGER_LAG_KNOWN, 11 * S, false, 0 }, /* run starts */
		{ 2 * S, TRIGGER_LAG_KNOWN, 12 * S, false, 1 * S },
		{ 3 * S, TRIGGER_LAG_KNOWN, 10 * S, false,
		    0 }, /* = max: break */
		{ 4 * S, TRIGGER_LAG_KNOWN, 20 * S, false, 0 },
		{ 5 * S, TRIGGER_LAG_UNKNOWN, 0, false, 0 }, /* no break */
		{ 6 * S, TRIGGER_LAG_UNKNOWN, 0, false, 0 },
		{ 7 * S, TRIGGER_LAG_KNOWN, 25 * S, true, 3 * S },
		{ 8 * S, TRIGGER_LAG_KNOWN, 0, false, 0 },
		{ 9 * S, TRIGGER_LAG_EMPTY, 0, false, 0 },
		{ 12 * S, TRIGGER_LAG_EMPTY, 0, true, 3 * S },
	};
	struct trigger_fresh_params p = { 10 * S, 3 * S };
	struct trigger_fresh f;
	int64_t held;
	size_t i;

	(void)state;
	memset(&f, 0, sizeof(f));
	for (i = 0; i < nitems(tab); i++) {
		bool fire = trigger_fresh_sample(&f, &p, tab[i].kind,
		    tab[i].lag, T0 + tab[i].at, &held);

		if (fire != tab[i].fire || held != tab[i].held)
			fail_msg("step %zu: fire %d held %lld", i, fire,
			    (long long)held);
	}
	/* for = 0: the first sample above fires. */
	p.for_ms = 0;
	memset(&f, 0, sizeof(f));
	assert_true(
	    trigger_fresh_sample(&f, &p, TRIGGER_LAG_KNOWN, 11 * S, T0, &held));
}

/* Lag from both snapshots. */
static void
test_lag(void **state)
{
	struct trigger_snap wh = { .has = true, .ts_ms = T0 };
	struct trigger_snap lh = { .has = true, .ts_ms = T0 - 30 * S };
	struct trigger_snap none = { .has = false };
	int64_t lag;

	(void)state;
	assert_int_equal(trigger_lag_of(&wh, &lh, &lag), TRIGGER_LAG_KNOWN);
	assert_int_equal(lag, 30 * S);
	assert_int_equal(trigger_lag_of(&lh, &wh, &lag), TRIGGER_LAG_KNOWN);
	assert_int_equal(lag, -30 * S);
	assert_int_equal(trigger_lag_of(&wh, &none, &lag), TRIGGER_LAG_EMPTY);
	assert_int_equal(trigger_lag_of(&none, &lh, &lag), TRIGGER_LAG_KNOWN);
	assert_int_equal(lag, 0);
}

/* Snapshot parsing from LoadTable answers. */
static void
test_snap_parse(void **state)
{
	static const struct {
		const char *body;
		int rc;
		bool has;
		int64_t id, ts;
		bool has_total;
		int64_t total, pos, eq;
	} tab[] = {
		{ "{\"metadata\":{\"current-snapshot-id\":3051729675574597004,"
		  "\"snapshots\":[{\"snapshot-id\":1,\"timestamp-ms\":5},"
		  "{\"snapshot-id\":3051729675574597004,\"timestamp-ms\":"
		  "1637277050000,\"summary\":{\"operation\":\"append\","
		  "\"total-records\":\"21\",\"total-position-deletes\":\"0\"}}]}}",
		    0, true, 3051729675574597004LL, 1637277050000LL, true, 21,
		    0, 0 },
		{ "{\"metadata\":{\"current-snapshot-id\":7,\"snapshots\":[{"
		  "\"snapshot-id\":7,\"timestamp-ms\":9,\"summary\":{"
		  "\"total-records\":40,\"total-equality-deletes\":\"2\"}}]}}",
		    0, true, 7, 9, true, 40, 0, 2 },
		{ "{\"metadata\":{\"current-snapshot-id\":7,\"snapshots\":[{"
		  "\"snapshot-id\":7,\"timestamp-ms\":9}]}}",
		    0, true, 7, 9, false, 0, 0, 0 },
		{ "{\"metadata\":{\"current-snapshot-id\":-1,\"snapshots\":[]}}",
		    0, false, 0, 0, false, 0, 0, 0 },
		{ "{\"metadata\":{\"snapshots\":[]}}", 0, false, 0, 0, false, 0,
		    0, 0 },
		{ "{\"metadata\":{\"current-snapshot-id\":null}}", 0, false, 0,
		    0, false, 0, 0, 0 },
		{ "{\"metadata\":{\"current-snapshot-id\":8,\"snapshots\":[{"
		  "\"snapshot-id\":7,\"timestamp-ms\":9}]}}",
		    -1, false, 0, 0, false, 0, 0, 0 },
		{ "{\"metadata\":{\"current-snapshot-id\":7,\"snapshots\":[{"
		  "\"snapshot-id\":7}]}}",
		    -1, false, 0, 0, false, 0, 0, 0 },
		{ "{\"metadata-location\":\"x\"}", -1, false, 0, 0, false, 0, 0,
		    0 },
		{ "not json", -1, false, 0, 0, false, 0, 0, 0 },
	};
	struct trigger_snap s;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		err[0] = '\0';
		if (trigger_snap_parse(tab[i].body, strlen(tab[i].body), &s,
			err, sizeof(err)) != tab[i].rc)
			fail_msg("case %zu: rc (%s)", i, err);
		if (tab[i].rc == -1) {
			assert_true(err[0] != '\0');
			continue;
		}
		assert_int_equal(s.has, tab[i].has);
		assert_int_equal(s.id, tab[i].id);
		assert_int_equal(s.ts_ms, tab[i].ts);
		assert_int_equal(s.has_total, tab[i].has_total);
		assert_int_equal(s.total_records, tab[i].total);
		assert_int_equal(s.position_deletes, tab[i].pos);
		assert_int_equal(s.equality_deletes, tab[i].eq);
	}
}

/* The metadata count check. */
static void
test_count(void **state)
{
	static const struct {
		const char *name;
		struct trigger_snap wh, lh;
		enum trigger_count want;
	} tab[] = {
		{ "same count", { true, 1, 100, true, 21, 0, 0 },
		    { true, 2, 100, true, 21, 0, 0 }, TRIGGER_COUNT_MATCH },
		{ "lakehouse newer, short", { true, 1, 100, true, 21, 0, 0 },
		    { true, 2, 200, true, 20, 0, 0 }, TRIGGER_COUNT_MISMATCH },
		{ "lakehouse older", { true, 1, 100, true, 21, 0, 0 },
		    { true, 2, 99, true, 20, 0, 0 }, TRIGGER_COUNT_UNKNOWN },
		{ "position deletes", { true, 1, 100, true, 21, 3, 0 },
		    { true, 2, 100, true, 20, 0, 0 }, TRIGGER_COUNT_UNKNOWN },
		{ "equality deletes", { true, 1, 100, true, 21, 0, 0 },
		    { true, 2, 100, true, 20, 0, 1 }, TRIGGER_COUNT_UNKNOWN },
		{ "no total", { true, 1, 100, false, 0, 0, 0 },
		    { true, 2, 100, true, 20, 0, 0 }, TRIGGER_COUNT_UNKNOWN },
		{ "no snapshot", { false, 0, 0, false, 0, 0, 0 },
		    { true, 2, 100, true, 20, 0, 0 }, TRIGGER_COUNT_UNKNOWN },
	};
	const char *why;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		if (trigger_count_check(&tab[i].wh, &tab[i].lh, &why) !=
		    tab[i].want)
			fail_msg("%s", tab[i].name);
		assert_true(
		    (why != NULL) == (tab[i].want == TRIGGER_COUNT_UNKNOWN));
	}
	assert_string_equal(trigger_count_name(TRIGGER_COUNT_MISMATCH),
	    "mismatch");
}

/* The reconcile rule and the action per state. */
static void
test_reconcile(void **state)
{
	static const struct {
		const char *name;
		int bucket;
		int64_t ts;
		unsigned st;
		bool fire;
	} tab[] = {
		{ "gap after the flip", LEDGER_GAP, T0 + 1, WAVE_LAKEHOUSE,
		    true },
		{ "drift in a canary", LEDGER_VALUE_DRIFT, T0 + 1, WAVE_CANARY,
		    true },
		{ "stale never", LEDGER_STALE, T0 + 1, WAVE_LAKEHOUSE, false },
		{ "clean never", LEDGER_CLEAN, T0 + 1, WAVE_LAKEHOUSE, false },
		{ "dated at the flip", LEDGER_GAP, T0, WAVE_LAKEHOUSE, false },
		{ "before the flip", LEDGER_GAP, T0 - 1, WAVE_LAKEHOUSE,
		    false },
		{ "frozen: fires (pages)", LEDGER_GAP, T0 + 1, WAVE_FROZEN,
		    true },
		{ "warehouse wave", LEDGER_GAP, T0 + 1, WAVE_WAREHOUSE, false },
		{ "rolled back", LEDGER_GAP, T0 + 1, WAVE_ROLLED_BACK, false },
	};
	struct ledger_rec rec;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		memset(&rec, 0, sizeof(rec));
		rec.ts_ms = tab[i].ts;
		rec.bucket = (uint8_t)tab[i].bucket;
		rec.count_match = rec.aggregate_match = rec.hash_match =
		    tab[i].bucket == LEDGER_CLEAN;
		if (trigger_reconcile(&rec, tab[i].st, T0) != tab[i].fire)
			fail_msg("%s", tab[i].name);
	}
	assert_int_equal(trigger_action_for(WAVE_CANARY), TRIGGER_ROLLBACK);
	assert_int_equal(trigger_action_for(WAVE_LAKEHOUSE), TRIGGER_ROLLBACK);
	assert_int_equal(trigger_action_for(WAVE_FROZEN), TRIGGER_PAGE);
	assert_int_equal(trigger_action_for(WAVE_RETIRED), TRIGGER_NONE);
	assert_int_equal(trigger_action_for(99), TRIGGER_NONE);
	assert_string_equal(trigger_name(TRIGGER_FRESHNESS), "freshness");
	assert_string_equal(trigger_name(TRIGGER_NKINDS), "unknown");
}

/*
 * The baseline is stored with the first move off the warehouse; raising
 * a canary keeps it; the count check is switched per wave.
 */
static void
test_flip_baseline(void **state)
{
	struct routing_tmp *t = routing_tmp_open();
	struct wave_baseline b1 = { 400, 12 }, b2 = { 9, 9 };
	struct wave_overrides off = { .set_count_check = true,
		.count_check = false };
	struct wave_overrides on = { .set_count_check = true,
		.count_check = true };
	struct store_wave w;
	char msg[1024];

	(void)state;
	assert_non_null(t);
	assert_int_equal(wave_flip_base(t->store, 4, WAVE_CANARY, 10, NULL, &b1,
			     "test", NULL, T0, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.base_requests, 400);
	assert_int_equal(w.base_errors, 12);
	assert_int_equal(wave_flip_base(t->store, 4, WAVE_LAKEHOUSE, 100, NULL,
			     &b2, "test", NULL, T0 + S, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.base_requests, 400);
	assert_int_equal(w.base_errors, 12);
	/* Without a baseline (wave_flip): none, not the last one. */
	assert_int_equal(wave_rollback(t->store, 4, "test", NULL, false,
			     T0 + 2 * S, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_ack(t->store, 4, "test", T0 + 3 * S, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_flip(t->store, 4, WAVE_LAKEHOUSE, 100, NULL,
			     "test", NULL, T0 + 4 * S, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.base_requests, 0);
	assert_int_equal(w.flags & WAVE_F_NO_COUNT_CHECK, 0);
	assert_int_equal(wave_set(t->store, 4, &off, "test", T0 + 5 * S, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.flags & WAVE_F_NO_COUNT_CHECK,
	    WAVE_F_NO_COUNT_CHECK);
	assert_int_equal(w.state, WAVE_LAKEHOUSE);
	assert_int_equal(wave_set(t->store, 4, &on, "test", T0 + 6 * S, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.flags & WAVE_F_NO_COUNT_CHECK, 0);
	routing_tmp_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_fresh),
		cmocka_unit_test(test_lag),
		cmocka_unit_test(test_snap_parse),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_reconcile),
		cmocka_unit_test(test_flip_baseline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
