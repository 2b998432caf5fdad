/*
 * floe: test_wave.c -- the wave lifecycle: state names, wave numbers, every
 * transition and every refusal from every state, the fields each one
 * stamps, and the event each one leaves; the dry runs of flip, freeze and
 * retire answer as the moves do and write nothing.
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
#include "routing/store.h"
#include "routing/wave.h"
#include "tests/unit/routing_tmp.h"

#define T0 1700000000000LL
#define ACTOR "uid 1000"

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

/* State names both ways. */
static void
test_state_names(void **state)
{
	static const struct {
		const char *name;
		int st;
	} tab[] = {
		{ "warehouse", WAVE_WAREHOUSE },
		{ "canary", WAVE_CANARY },
		{ "lakehouse", WAVE_LAKEHOUSE },
		{ "rolled_back", WAVE_ROLLED_BACK },
		{ "frozen", WAVE_FROZEN },
		{ "retired", WAVE_RETIRED },
		{ "", -1 },
		{ "Warehouse", -1 },
		{ "rolled-back", -1 },
		{ "lakehouse ", -1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		assert_int_equal(wave_state_parse(tab[i].name), tab[i].st);
		if (tab[i].st >= 0)
			assert_string_equal(wave_state_name(tab[i].st),
			    tab[i].name);
	}
	assert_string_equal(wave_state_name(WAVE_NSTATES), "unknown");
	assert_string_equal(wave_state_name(200), "unknown");
}

/* Wave numbers: 0..2147483647, digits only. */
static void
test_wave_parse(void **state)
{
	static const struct {
		const char *text;
		int rc;
		uint32_t n;
	} tab[] = {
		{ "0", 0, 0 },
		{ "7", 0, 7 },
		{ "42", 0, 42 },
		{ "2147483647", 0, 2147483647u },
		{ "2147483648", -1, 0 },
		{ "4294967296", -1, 0 },
		{ "99999999999", -1, 0 },
		{ "", -1, 0 },
		{ "-1", -1, 0 },
		{ "+1", -1, 0 },
		{ " 1", -1, 0 },
		{ "1 ", -1, 0 },
		{ "01", -1, 0 },
		{ "1a", -1, 0 },
		{ "0x10", -1, 0 },
	};
	uint32_t n;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++) {
		n = 12345;
		if (wave_parse(tab[i].text, &n) != tab[i].rc)
			fail_msg("\"%s\": wrong result", tab[i].text);
		assert_int_equal(n, tab[i].rc == 0 ? tab[i].n : 12345);
	}
}

/* store_wave_update_cb forcing the state and pct in ARG. */
static int
force_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	const uint8_t *sp = arg;

	(void)event;
	(void)record;
	w->state = sp[0];
	w->pct = sp[1];
	w->since_ms = T0 - 1000;
	w->flipped_ms = T0 - 2000;
	return STORE_OK;
}

enum act { FLIP, ROLLBACK, ACK };

/* One transition from one state, and what must come of it. */
struct row {
	uint8_t from;
	uint8_t from_pct;
	enum act act;
	enum wave_state to; /* flip target */
	unsigned pct; /* flip pct */
	bool force; /* rollback --force-stale */
	int rc;
	uint8_t state; /* after */
	uint8_t pct_after;
	const char *msg; /* a piece of the message */
};

static const struct row rows[] = {
	/* flip to the lakehouse */
	{ WAVE_WAREHOUSE, 0, FLIP, WAVE_LAKEHOUSE, 0, false, WAVE_OK,
	    WAVE_LAKEHOUSE, 100, "flipped from warehouse to lakehouse" },
	{ WAVE_CANARY, 30, FLIP, WAVE_LAKEHOUSE, 0, false, WAVE_OK,
	    WAVE_LAKEHOUSE, 100,
	    "flipped from canary to lakehouse: 30 % → 100 %" },
	{ WAVE_LAKEHOUSE, 100, FLIP, WAVE_LAKEHOUSE, 0, false, WAVE_REFUSED,
	    WAVE_LAKEHOUSE, 100, "is already on the lakehouse" },
	{ WAVE_ROLLED_BACK, 0, FLIP, WAVE_LAKEHOUSE, 0, false, WAVE_REFUSED,
	    WAVE_ROLLED_BACK, 0,
	    "acknowledge the rollback first: floectl wave ack " },
	{ WAVE_FROZEN, 100, FLIP, WAVE_LAKEHOUSE, 0, false, WAVE_REFUSED,
	    WAVE_FROZEN, 100, "is frozen: it can only retire" },
	{ WAVE_RETIRED, 100, FLIP, WAVE_LAKEHOUSE, 0, false, WAVE_REFUSED,
	    WAVE_RETIRED, 100, "retired is final" },
	{ 9, 0, FLIP, WAVE_LAKEHOUSE, 0, false, WAVE_REFUSED, 9, 0,
	    "unknown state (9)" },
	/* flip to a canary */
	{ WAVE_WAREHOUSE, 0, FLIP, WAVE_CANARY, 10, false, WAVE_OK, WAVE_CANARY,
	    10, "flipped from warehouse to canary: 0 % → 10 %" },
	{ WAVE_CANARY, 10, FLIP, WAVE_CANARY, 40, false, WAVE_OK, WAVE_CANARY,
	    40, "wave 108 canary 10 % → 40 %" },
	{ WAVE_CANARY, 40, FLIP, WAVE_CANARY, 20, false, WAVE_OK, WAVE_CANARY,
	    20, "canary 40 % → 20 %" },
	{ WAVE_CANARY, 20, FLIP, WAVE_CANARY, 20, false, WAVE_REFUSED,
	    WAVE_CANARY, 20, "is already at 20 %" },
	{ WAVE_CANARY, 10, FLIP, WAVE_CANARY, 100, false, WAVE_OK,
	    WAVE_LAKEHOUSE, 100, "to lakehouse" },
	{ WAVE_WAREHOUSE, 0, FLIP, WAVE_CANARY, 99, false, WAVE_OK, WAVE_CANARY,
	    99, "0 % → 99 %" },
	{ WAVE_WAREHOUSE, 0, FLIP, WAVE_CANARY, 1, false, WAVE_OK, WAVE_CANARY,
	    1, "0 % → 1 %" },
	{ WAVE_WAREHOUSE, 0, FLIP, WAVE_CANARY, 0, false, WAVE_REFUSED,
	    WAVE_WAREHOUSE, 0, "a canary share is 1 to 99%" },
	{ WAVE_WAREHOUSE, 0, FLIP, WAVE_CANARY, 101, false, WAVE_REFUSED,
	    WAVE_WAREHOUSE, 0, "not 101%" },
	{ WAVE_LAKEHOUSE, 100, FLIP, WAVE_CANARY, 10, false, WAVE_OK,
	    WAVE_CANARY, 10,
	    "stepped down from lakehouse to canary: 100 % → 10 %" },
	{ WAVE_ROLLED_BACK, 0, FLIP, WAVE_CANARY, 10, false, WAVE_REFUSED,
	    WAVE_ROLLED_BACK, 0, "acknowledge the rollback first" },
	{ WAVE_FROZEN, 100, FLIP, WAVE_CANARY, 10, false, WAVE_REFUSED,
	    WAVE_FROZEN, 100, "is frozen" },
	{ WAVE_RETIRED, 100, FLIP, WAVE_CANARY, 10, false, WAVE_REFUSED,
	    WAVE_RETIRED, 100, "retired is final" },
	/* a flip goes forward only */
	{ WAVE_WAREHOUSE, 0, FLIP, WAVE_FROZEN, 0, false, WAVE_REFUSED,
	    WAVE_WAREHOUSE, 0, "not frozen" },
	{ WAVE_CANARY, 5, FLIP, WAVE_WAREHOUSE, 0, false, WAVE_REFUSED,
	    WAVE_CANARY, 5, "not warehouse" },
	/* rollback */
	{ WAVE_CANARY, 20, ROLLBACK, 0, 0, false, WAVE_OK, WAVE_ROLLED_BACK, 0,
	    "rolled back from canary" },
	{ WAVE_LAKEHOUSE, 100, ROLLBACK, 0, 0, false, WAVE_OK, WAVE_ROLLED_BACK,
	    0, "rolled back from lakehouse" },
	{ WAVE_FROZEN, 100, ROLLBACK, 0, 0, false, WAVE_REFUSED, WAVE_FROZEN,
	    100,
	    "the warehouse copy no longer gets writes, so a rollback would "
	    "serve stale data; use --force-stale" },
	{ WAVE_FROZEN, 100, ROLLBACK, 0, 0, true, WAVE_OK, WAVE_ROLLED_BACK, 0,
	    "rolled back from frozen" },
	{ WAVE_RETIRED, 100, ROLLBACK, 0, 0, false, WAVE_REFUSED, WAVE_RETIRED,
	    100, "retired is final" },
	{ WAVE_RETIRED, 100, ROLLBACK, 0, 0, true, WAVE_REFUSED, WAVE_RETIRED,
	    100, "retired is final" },
	{ WAVE_WAREHOUSE, 0, ROLLBACK, 0, 0, false, WAVE_REFUSED,
	    WAVE_WAREHOUSE, 0, "nothing to roll back" },
	{ WAVE_ROLLED_BACK, 0, ROLLBACK, 0, 0, false, WAVE_REFUSED,
	    WAVE_ROLLED_BACK, 0, "already rolled back: nothing to roll back" },
	/* ack */
	{ WAVE_ROLLED_BACK, 0, ACK, 0, 0, false, WAVE_OK, WAVE_WAREHOUSE, 0,
	    "rollback acknowledged" },
	{ WAVE_WAREHOUSE, 0, ACK, 0, 0, false, WAVE_REFUSED, WAVE_WAREHOUSE, 0,
	    "is in state warehouse, not rolled_back: nothing to acknowledge" },
	{ WAVE_CANARY, 10, ACK, 0, 0, false, WAVE_REFUSED, WAVE_CANARY, 10,
	    "nothing to acknowledge" },
	{ WAVE_LAKEHOUSE, 100, ACK, 0, 0, false, WAVE_REFUSED, WAVE_LAKEHOUSE,
	    100, "nothing to acknowledge" },
	{ WAVE_FROZEN, 100, ACK, 0, 0, false, WAVE_REFUSED, WAVE_FROZEN, 100,
	    "nothing to acknowledge" },
	{ WAVE_RETIRED, 100, ACK, 0, 0, false, WAVE_REFUSED, WAVE_RETIRED, 100,
	    "nothing to acknowledge" },
};

/* The newest event, parsed. Caller decrefs. */
static json_t *
last_event(struct store *s)
{
	json_t *all = routing_tmp_events(s, store_last_seq(s) - 1), *ev;

	assert_non_null(all);
	assert_int_equal(json_array_size(all), 1);
	ev = json_incref(json_array_get(all, 0));
	json_decref(all);
	return ev;
}

/* The string member KEY of EV ("" if absent). */
static const char *
jstr(json_t *ev, const char *key)
{
	const char *v = json_string_value(json_object_get(ev, key));

	return v != NULL ? v : "";
}

/*
 * The dry run of TR on wave N at NOW: it answers RC, with its sentence in
 * MSG, and writes nothing (no event, the wave as it was).
 */
static void
try_only(struct store *s, uint32_t n, const struct wave_try *tr, int64_t now,
    int rc, char *msg, size_t len)
{
	struct store_wave b, a;
	uint64_t seq = store_last_seq(s);
	int got = store_wave_get(s, n, &b);

	assert_int_equal(wave_try(s, n, tr, now, msg, len), rc);
	assert_int_equal(store_last_seq(s), seq);
	assert_int_equal(store_wave_get(s, n, &a), got);
	if (got == STORE_OK)
		assert_memory_equal(&a, &b, sizeof(a));
}

/* Run row R on wave N. */
static int
run_row(struct store *s, const struct row *r, uint32_t n, int64_t now,
    char *msg, size_t len)
{
	switch (r->act) {
	case FLIP:
		return wave_flip(s, n, r->to, r->pct, NULL, ACTOR, "ready", now,
		    msg, len);
	case ROLLBACK:
		return wave_rollback(s, n, ACTOR, "errors", r->force, now, msg,
		    len);
	case ACK:
	default:
		return wave_ack(s, n, ACTOR, now, msg, len);
	}
}

/*
 * Every row on its own wave: the result, the state after, the message,
 * the stamped fields and the event (a refusal leaves the wave as it was
 * but records a wave.refused event with the message). A flip's dry run
 * first: the same answer and sentence, nothing written.
 */
static void
test_transitions(void **state)
{
	static const char *const types[] = { "wave.flip", "wave.rollback",
		"wave.ack" };
	static const char *const acts[] = { "flip", "rollback", "ack" };
	struct routing_tmp *t = *state;
	struct store_wave before, after;
	const struct row *r;
	struct wave_try tr;
	uint8_t sp[2];
	uint64_t seq;
	int64_t now;
	char msg[512], tmsg[512];
	uint32_t n;
	json_t *ev;
	size_t i;
	int rc;

	for (i = 0; i < nitems(rows); i++) {
		r = &rows[i];
		n = 100 + (uint32_t)i;
		now = T0 + 60000 * (int64_t)i;
		sp[0] = r->from;
		sp[1] = r->from_pct;
		assert_int_equal(store_wave_update(t->store, n, T0 - 1000,
				     force_cb, sp, NULL),
		    STORE_OK);
		assert_int_equal(store_wave_get(t->store, n, &before),
		    STORE_OK);
		seq = store_last_seq(t->store);
		if (r->act == FLIP) {
			tr = (struct wave_try) { .verb = WAVE_TRY_FLIP,
				.to = r->to,
				.pct = r->pct };
			try_only(t->store, n, &tr, now, r->rc, tmsg,
			    sizeof(tmsg));
		}

		memset(msg, 'x', sizeof(msg));
		rc = run_row(t->store, r, n, now, msg, sizeof(msg));
		if (r->act == FLIP)
			assert_string_equal(tmsg, msg);
		if (rc != r->rc)
			fail_msg("row %zu: rc %d, msg \"%s\"", i, rc, msg);
		if (strstr(msg, r->msg) == NULL)
			fail_msg("row %zu: \"%s\" lacks \"%s\"", i, msg,
			    r->msg);
		assert_int_equal(store_last_seq(t->store), seq + 1);
		assert_int_equal(store_wave_get(t->store, n, &after), STORE_OK);
		assert_int_equal(after.state, r->state);
		assert_int_equal(after.pct, r->pct_after);

		ev = last_event(t->store);
		assert_int_equal(json_integer_value(
				     json_object_get(ev, "wave")),
		    n);
		assert_string_equal(jstr(ev, "actor"), ACTOR);
		assert_string_equal(jstr(ev, "from"), wave_state_name(r->from));
		if (rc == WAVE_REFUSED) {
			assert_memory_equal(&after, &before, sizeof(after));
			assert_string_equal(jstr(ev, "type"), "wave.refused");
			assert_string_equal(jstr(ev, "action"), acts[r->act]);
			assert_string_equal(jstr(ev, "message"), msg);
		} else {
			assert_string_equal(jstr(ev, "type"), types[r->act]);
			assert_string_equal(jstr(ev, "to"),
			    wave_state_name(r->state));
			assert_int_equal(json_integer_value(
					     json_object_get(ev, "pct")),
			    r->pct_after);
			assert_int_equal(after.seq, seq + 1);
			assert_string_equal(after.actor, ACTOR);
			if (r->act == FLIP)
				assert_string_equal(after.reason, "ready");
			else if (r->act == ROLLBACK)
				assert_string_equal(after.reason, "errors");
			/* since moves only when the state does. */
			assert_int_equal(after.since_ms,
			    r->from == r->state ? before.since_ms : now);
			/* flipped: only on a move off the warehouse. */
			assert_int_equal(after.flipped_ms,
			    r->from == WAVE_WAREHOUSE &&
				    r->state != WAVE_WAREHOUSE ?
				now :
				before.flipped_ms);
			assert_int_equal(after.rollback_ms,
			    r->act == ROLLBACK ? now : before.rollback_ms);
			assert_int_equal(json_is_true(json_object_get(ev,
					     "force_stale")),
			    r->act == ROLLBACK && r->force);
		}
		json_decref(ev);
	}
}

/* A wave never written is on the warehouse and can be flipped. */
static void
test_new_wave(void **state)
{
	struct routing_tmp *t = *state;
	struct store_wave w;
	char msg[256];
	json_t *ev;

	assert_int_equal(store_wave_get(t->store, 0, &w), STORE_NOTFOUND);
	assert_int_equal(wave_rollback(t->store, 0, "floe", NULL, false, T0,
			     msg, sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "wave 0 is on the warehouse"));
	/* The refusal is an event, and the wave still has no record. */
	assert_int_equal(store_last_seq(t->store), 1);
	assert_int_equal(store_wave_get(t->store, 0, &w), STORE_NOTFOUND);
	ev = last_event(t->store);
	assert_true(json_is_null(json_object_get(ev, "reason")));
	assert_string_equal(jstr(ev, "to"), "rolled_back");
	json_decref(ev);

	assert_int_equal(wave_flip(t->store, WAVE_MAX, WAVE_CANARY, 5, NULL,
			     "floe", NULL, T0, NULL, 0),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, WAVE_MAX, &w), STORE_OK);
	assert_int_equal(w.state, WAVE_CANARY);
	assert_int_equal(w.pct, 5);
	assert_int_equal(w.since_ms, T0);
	assert_int_equal(w.flipped_ms, T0);
	assert_string_equal(w.reason, "");
	assert_string_equal(w.actor, "floe");
}

/*
 * A trigger's rollback carries its evidence in the event; an operator's
 * carries none.
 */
static void
test_rollback_evidence(void **state)
{
	struct routing_tmp *t = *state;
	json_t *m = json_real(0.36363636363636365), *th = json_real(0.02), *ev;
	struct wave_evidence e = { "errors", m, th };
	char msg[256];

	assert_int_equal(wave_flip(t->store, 4, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0 + 1, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_rollback_why(t->store, 4, &e, "floe",
			     "40 of 110 reads", false, T0 + 2, msg,
			     sizeof(msg)),
	    WAVE_OK);
	ev = last_event(t->store);
	assert_string_equal(json_string_value(json_object_get(ev, "type")),
	    "wave.rollback");
	assert_string_equal(json_string_value(json_object_get(ev, "trigger")),
	    "errors");
	assert_true(json_real_value(json_object_get(ev, "measured")) ==
	    0.36363636363636365);
	assert_true(json_real_value(json_object_get(ev, "threshold")) == 0.02);
	json_decref(ev);
	assert_int_equal(wave_ack(t->store, 4, ACTOR, T0 + 3, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_flip(t->store, 4, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0 + 4, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_rollback(t->store, 4, ACTOR, NULL, false, T0 + 5,
			     msg, sizeof(msg)),
	    WAVE_OK);
	ev = last_event(t->store);
	assert_null(json_object_get(ev, "trigger"));
	assert_null(json_object_get(ev, "measured"));
	json_decref(ev);
	json_decref(m);
	json_decref(th);
}

/* A whole life: canary, ramp, lakehouse, rollback, ack, flip again. */
static void
test_lifecycle(void **state)
{
	static const char *const want[] = { "wave.flip", "wave.flip",
		"wave.flip", "wave.rollback", "wave.refused", "wave.ack",
		"wave.flip" };
	struct routing_tmp *t = *state;
	struct store_wave w;
	char msg[256];
	json_t *all;
	size_t i;

	assert_int_equal(wave_flip(t->store, 3, WAVE_CANARY, 5, NULL, ACTOR,
			     NULL, T0 + 1, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_flip(t->store, 3, WAVE_CANARY, 50, NULL, ACTOR,
			     NULL, T0 + 2, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_flip(t->store, 3, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0 + 3, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_rollback(t->store, 3, "floe", "error rate", false,
			     T0 + 4, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_flip(t->store, 3, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0 + 5, msg, sizeof(msg)),
	    WAVE_REFUSED);
	assert_string_equal(msg,
	    "wave 3 was rolled back; acknowledge the rollback first: "
	    "floectl wave ack 3");
	assert_int_equal(wave_ack(t->store, 3, ACTOR, T0 + 6, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_flip(t->store, 3, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     "again", T0 + 7, msg, sizeof(msg)),
	    WAVE_OK);

	assert_int_equal(store_wave_get(t->store, 3, &w), STORE_OK);
	assert_int_equal(w.state, WAVE_LAKEHOUSE);
	assert_int_equal(w.since_ms, T0 + 7);
	assert_int_equal(w.flipped_ms, T0 + 7);
	assert_int_equal(w.rollback_ms, T0 + 4);
	assert_int_equal(w.seq, 7);
	assert_string_equal(w.reason, "again");

	all = routing_tmp_events(t->store, 0);
	assert_int_equal(json_array_size(all), nitems(want));
	for (i = 0; i < nitems(want); i++)
		assert_string_equal(jstr(json_array_get(all, i), "type"),
		    want[i]);
	assert_string_equal(jstr(json_array_get(all, 3), "actor"), "floe");
	assert_string_equal(jstr(json_array_get(all, 3), "reason"),
	    "error rate");
	assert_string_equal(jstr(json_array_get(all, 1), "from"), "canary");
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(all, 1), "pct")),
	    50);
	json_decref(all);
}

/* A store failure: WAVE_ERROR, a message, nothing recorded. */
static void
test_store_error(void **state)
{
	static const unsigned char bad[] = { 0 };
	static const unsigned char k5[] = { 0, 0, 0, 5 };
	struct routing_tmp *t = *state;
	char err[256], msg[256];
	uint64_t seq;

	assert_int_equal(wave_flip(t->store, 5, WAVE_CANARY, 5, NULL, ACTOR,
			     NULL, T0, msg, sizeof(msg)),
	    WAVE_OK);
	store_free(t->store);
	assert_int_equal(routing_tmp_raw_put(t->dir, "waves", k5, 4, bad, 1),
	    0);
	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	seq = store_last_seq(t->store);
	assert_int_equal(wave_rollback(t->store, 5, ACTOR, NULL, false, T0, msg,
			     sizeof(msg)),
	    WAVE_ERROR);
	assert_non_null(strstr(msg, "the store failed"));
	assert_int_equal(store_last_seq(t->store), seq);
	assert_false(store_is_healthy(t->store));
	/* Other waves still move. */
	assert_int_equal(wave_flip(t->store, 6, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0, msg, sizeof(msg)),
	    WAVE_OK);
	assert_true(store_is_healthy(t->store));
}

/* The gate's verdict: applied against the wave as read, recorded. */
static void
test_gate_verdict(void **state)
{
	struct routing_tmp *t = *state;
	struct wave_gate g = { .pass = false, .seq = 0, .msg = "db.t blocks" };
	struct store_wave w;
	char msg[1024];
	json_t *all, *gj;

	/* A failing verdict refuses the flip with its sentence. */
	assert_int_equal(wave_flip(t->store, 1, WAVE_CANARY, 10, &g, ACTOR,
			     NULL, T0, msg, sizeof(msg)),
	    WAVE_REFUSED);
	assert_string_equal(msg, "db.t blocks");
	/* A passing verdict computed on another record: refused. */
	g.pass = true;
	g.seq = 99;
	assert_int_equal(wave_flip(t->store, 1, WAVE_CANARY, 10, &g, ACTOR,
			     NULL, T0, msg, sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "changed while its gate was evaluated"));
	g.seq = 0;
	g.evidence = json_pack("[{s:s}]", "object", "db.t");
	assert_int_equal(wave_flip(t->store, 1, WAVE_CANARY, 10, &g, ACTOR,
			     NULL, T0 + 1, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 1, &w), STORE_OK);
	/* Raising the share needs a verdict on the new record. */
	g.pass = false;
	g.seq = w.seq;
	assert_int_equal(wave_flip(t->store, 1, WAVE_CANARY, 20, &g, ACTOR,
			     NULL, T0 + 2, msg, sizeof(msg)),
	    WAVE_REFUSED);
	/* Lowering it does not. */
	assert_int_equal(wave_flip(t->store, 1, WAVE_CANARY, 5, &g, ACTOR, NULL,
			     T0 + 3, msg, sizeof(msg)),
	    WAVE_OK);
	/* Nor does a step down from the lakehouse to a canary share. */
	assert_int_equal(store_wave_get(t->store, 1, &w), STORE_OK);
	g.pass = true;
	g.seq = w.seq;
	assert_int_equal(wave_flip(t->store, 1, WAVE_LAKEHOUSE, 100, &g, ACTOR,
			     NULL, T0 + 4, msg, sizeof(msg)),
	    WAVE_OK);
	g.pass = false;
	assert_int_equal(wave_flip(t->store, 1, WAVE_CANARY, 25, &g, ACTOR,
			     NULL, T0 + 5, msg, sizeof(msg)),
	    WAVE_OK);
	assert_string_equal(msg,
	    "wave 1 stepped down from lakehouse to canary: 100 % → 25 %");
	assert_int_equal(store_wave_get(t->store, 1, &w), STORE_OK);
	assert_int_equal(w.state, WAVE_CANARY);
	assert_int_equal(w.pct, 25);
	assert_int_equal(w.flipped_ms, T0 + 1);
	all = routing_tmp_events(t->store, store_last_seq(t->store) - 1);
	assert_string_equal(jstr(json_array_get(all, 0), "type"), "wave.flip");
	assert_string_equal(jstr(json_array_get(all, 0), "from"), "lakehouse");
	assert_string_equal(jstr(json_array_get(all, 0), "to"), "canary");
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(all, 0),
				 "from_pct")),
	    100);
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(all, 0), "pct")),
	    25);
	json_decref(all);
	all = routing_tmp_events(t->store, 0);
	assert_string_equal(jstr(json_array_get(all, 0), "type"),
	    "wave.refused");
	assert_true(json_is_false(
	    json_object_get(json_object_get(json_array_get(all, 0), "gate"),
		"pass")));
	/* The flip's event carries the evidence it passed on. */
	gj = json_object_get(json_array_get(all, 2), "gate");
	assert_true(json_is_true(json_object_get(gj, "pass")));
	assert_string_equal(jstr(json_array_get(json_object_get(gj, "objects"),
				     0),
				"object"),
	    "db.t");
	json_decref(all);
	json_decref(g.evidence);
}

/* Sign-off, freeze, retire and overrides, with their refusals. */
static void
test_decommission(void **state)
{
	struct routing_tmp *t = *state;
	struct wave_overrides ov = { .set_min_clean = true,
		.min_clean = 10,
		.set_window = true,
		.window_ms = 14 * 86400000LL };
	struct wave_gate g = { .pass = true, .msg = "ok" };
	struct wave_try fr = { .verb = WAVE_TRY_FREEZE,
		.gate = &g,
		.grace_ms = 1000 };
	struct wave_try re = { .verb = WAVE_TRY_RETIRE, .grace_ms = 1000 };
	struct store_wave w;
	const uint64_t grace = 1000;
	char msg[1024], tmsg[1024];

	assert_int_equal(wave_set(t->store, 2, &ov, ACTOR, T0, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 2, &w), STORE_OK);
	assert_int_equal(w.gate_min_clean, 10);
	assert_int_equal(w.gate_window_ms, 14 * 86400000LL);
	assert_int_equal(w.state, WAVE_WAREHOUSE);
	assert_int_equal(wave_signoff(t->store, 2, "alice", ACTOR, T0, msg,
			     sizeof(msg)),
	    WAVE_REFUSED);
	assert_int_equal(wave_flip(t->store, 2, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0 + 10, msg, sizeof(msg)),
	    WAVE_OK);
	/* The gate passes but nobody signed off: still refused. */
	assert_int_equal(store_wave_get(t->store, 2, &w), STORE_OK);
	g.seq = w.seq;
	/* Each freeze and retire below: its dry run first, the same words. */
	try_only(t->store, 2, &fr, T0 + 20, WAVE_REFUSED, tmsg, sizeof(tmsg));
	assert_int_equal(wave_freeze(t->store, 2, &g, grace, ACTOR, NULL,
			     T0 + 20, msg, sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "no sign-off"));
	assert_string_equal(tmsg, msg);
	fr.gate = NULL;
	try_only(t->store, 2, &fr, T0 + 20, WAVE_REFUSED, tmsg, sizeof(tmsg));
	assert_int_equal(wave_freeze(t->store, 2, NULL, grace, ACTOR, NULL,
			     T0 + 20, msg, sizeof(msg)),
	    WAVE_REFUSED);
	assert_string_equal(tmsg, msg);
	fr.gate = &g;
	assert_int_equal(wave_signoff(t->store, 2, "alice", ACTOR, T0 + 30, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 2, &w), STORE_OK);
	assert_string_equal(w.signoff, "alice");
	assert_int_equal(w.signoff_ms, T0 + 30);
	g.seq = w.seq;
	try_only(t->store, 2, &fr, T0 + 40, WAVE_OK, tmsg, sizeof(tmsg));
	assert_int_equal(wave_freeze(t->store, 2, &g, grace, ACTOR, NULL,
			     T0 + 40, msg, sizeof(msg)),
	    WAVE_OK);
	assert_string_equal(tmsg, msg);
	assert_int_equal(store_wave_get(t->store, 2, &w), STORE_OK);
	assert_int_equal(w.state, WAVE_FROZEN);
	assert_int_equal(w.frozen_ms, T0 + 40);
	/* Grace: one ms short, then exactly over. */
	try_only(t->store, 2, &re, T0 + 1039, WAVE_REFUSED, tmsg, sizeof(tmsg));
	assert_int_equal(wave_retire(t->store, 2, grace, ACTOR, T0 + 1039, msg,
			     sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "grace period until"));
	assert_string_equal(tmsg, msg);
	try_only(t->store, 2, &re, T0 + 1040, WAVE_OK, tmsg, sizeof(tmsg));
	assert_int_equal(wave_retire(t->store, 2, grace, ACTOR, T0 + 1040, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_string_equal(tmsg, msg);
	assert_int_equal(wave_rollback(t->store, 2, ACTOR, NULL, true,
			     T0 + 2000, msg, sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "retired is final"));
	assert_int_equal(wave_set(t->store, 2, &ov, ACTOR, T0, msg,
			     sizeof(msg)),
	    WAVE_REFUSED);

	/* A rollback after the freeze: no retire, and no sign-off left. */
	assert_int_equal(wave_flip(t->store, 3, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_signoff(t->store, 3, "bob", ACTOR, T0 + 1, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 3, &w), STORE_OK);
	g.seq = w.seq;
	assert_int_equal(wave_freeze(t->store, 3, &g, grace, ACTOR, NULL,
			     T0 + 2, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_rollback(t->store, 3, ACTOR, NULL, true, T0 + 3,
			     msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_retire(t->store, 3, grace, ACTOR, T0 + 5000, msg,
			     sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "after its freeze"));
	assert_int_equal(store_wave_get(t->store, 3, &w), STORE_OK);
	assert_string_equal(w.signoff, "");
}

/*
 * The grace a freeze announces is the one retire honours: a grace set
 * shorter afterwards (14 days at the freeze, 5 s on reload) does not
 * retire the wave early, and the retire event carries grace_ends. Before
 * the fix the wave retired 5 s after its freeze.
 */
static void
test_retire_grace_recorded(void **state)
{
	struct routing_tmp *t = *state;
	struct wave_gate g = { .pass = true, .msg = "ok" };
	struct store_wave w;
	const uint64_t days14 = 14 * 86400000ULL, s5 = 5000;
	json_t *evs, *ev;
	char msg[1024];

	assert_int_equal(wave_flip(t->store, 4, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_signoff(t->store, 4, "alice", ACTOR, T0 + 1, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	g.seq = w.seq;
	assert_int_equal(wave_freeze(t->store, 4, &g, days14, ACTOR, NULL,
			     T0 + 2, msg, sizeof(msg)),
	    WAVE_OK);
	assert_non_null(strstr(msg, "ends 2023-11-28T22:13:20.002Z"));
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.grace_ends_ms, T0 + 2 + (int64_t)days14);
	/* Reloaded with grace = 5s: still the 14 days announced. */
	assert_int_equal(wave_retire(t->store, 4, s5, ACTOR, T0 + 5002, msg,
			     sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "until 2023-11-28T22:13:20.002Z"));
	assert_non_null(strstr(msg, "as announced then"));
	assert_int_equal(wave_retire(t->store, 4, s5, ACTOR,
			     T0 + 1 + (int64_t)days14, msg, sizeof(msg)),
	    WAVE_REFUSED);
	/* A longer grace set since moves the end on. */
	assert_int_equal(wave_retire(t->store, 4, days14 + 1000, ACTOR,
			     T0 + 2 + (int64_t)days14, msg, sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "2023-11-28T22:13:21.002Z"));
	assert_int_equal(wave_retire(t->store, 4, s5, ACTOR,
			     T0 + 2 + (int64_t)days14, msg, sizeof(msg)),
	    WAVE_OK);
	evs = routing_tmp_events(t->store, 0);
	ev = json_array_get(evs, json_array_size(evs) - 1);
	assert_string_equal(json_string_value(json_object_get(ev, "type")),
	    "wave.retire");
	assert_string_equal(json_string_value(
				json_object_get(ev, "grace_ends")),
	    "2023-11-28T22:13:20.002Z");
	assert_string_equal(json_string_value(json_object_get(ev, "frozen")),
	    "2023-11-14T22:13:20.002Z");
	json_decref(evs);
}

/*
 * The split-brain alarm: only a frozen wave has one, raised once, its
 * detail in the event, acknowledged by an operator; the state never
 * moves.
 */
static void
test_split_brain_alarm(void **state)
{
	struct routing_tmp *t = *state;
	struct wave_gate g = { .pass = true, .msg = "ok" };
	struct store_wave w;
	json_t *detail, *evs, *ev;
	char msg[1024];

	detail = json_pack("{s:s,s:{s:I}}", "object", "db.orders",
	    "snapshot_now", "id", (json_int_t)42);
	assert_int_equal(wave_flip(t->store, 5, WAVE_LAKEHOUSE, 0, NULL, ACTOR,
			     NULL, T0, msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_alarm(t->store, 5, detail, T0 + 1, msg,
			     sizeof(msg)),
	    WAVE_REFUSED);
	assert_non_null(strstr(msg, "only a frozen wave"));
	assert_int_equal(wave_signoff(t->store, 5, "alice", ACTOR, T0 + 1, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 5, &w), STORE_OK);
	g.seq = w.seq;
	assert_int_equal(wave_freeze(t->store, 5, &g, 1000, ACTOR, NULL, T0 + 2,
			     msg, sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(wave_ack_alarm(t->store, 5, ACTOR, T0 + 3, msg,
			     sizeof(msg)),
	    WAVE_REFUSED);
	assert_int_equal(wave_alarm(t->store, 5, detail, T0 + 4, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_non_null(strstr(msg, "split brain"));
	assert_int_equal(wave_alarm(t->store, 5, detail, T0 + 5, msg,
			     sizeof(msg)),
	    WAVE_REFUSED);
	assert_int_equal(store_wave_get(t->store, 5, &w), STORE_OK);
	assert_int_equal(w.state, WAVE_FROZEN);
	assert_int_equal(w.alarm_ms, T0 + 4);
	evs = routing_tmp_events(t->store, 0);
	ev = json_array_get(evs, json_array_size(evs) - 1);
	assert_string_equal(json_string_value(json_object_get(ev, "type")),
	    "wave.split_brain_alarm");
	assert_string_equal(json_string_value(json_object_get(ev, "object")),
	    "db.orders");
	json_decref(evs);
	assert_int_equal(wave_ack_alarm(t->store, 5, ACTOR, T0 + 6, msg,
			     sizeof(msg)),
	    WAVE_OK);
	assert_int_equal(store_wave_get(t->store, 5, &w), STORE_OK);
	assert_int_equal(w.alarm_ms, 0);
	assert_int_equal(w.alarm_ack_ms, T0 + 6);
	assert_int_equal(w.state, WAVE_FROZEN);
	json_decref(detail);
}

/* Run the tests. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_wave_parse),
		cmocka_unit_test_setup_teardown(test_transitions, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_new_wave, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lifecycle, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_split_brain_alarm, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_rollback_evidence, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_retire_grace_recorded,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_error, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_gate_verdict, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_decommission, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
