/*
 * floe: test_route_memo.c -- the route memo (route.c): a resolve after a
 * change sees it, whatever changed (a flip, an assignment, an unassignment,
 * a rule, a canary share), whether this process or another one (a forked
 * writer, as the master is to its workers) committed it; store errors are
 * not remembered; a reopened store is not answered from the last one's.
 */
#include <sys/types.h>
#include <sys/wait.h>

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

static int setup(void **);
static int teardown(void **);
static void parse(const char *, struct route_obj *);
static void put_route(struct store *, const char *, uint32_t);
static void del_route(struct store *, const char *);
static void expect(struct store *, const char *, enum route_why, const char *,
    uint32_t, enum route_side);
static void test_changes_seen(void **);
static void test_canary_share(void **);
static void test_other_process(void **);
static void test_error_not_kept(void **);
static void test_reopened(void **);

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

/* Parse TEXT into OBJ or fail. */
static void
parse(const char *text, struct route_obj *obj)
{
	char err[256];

	if (route_obj_parse(text, obj, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
}

/* Assign the object in TEXT to WAVE. */
static void
put_route(struct store *s, const char *text, uint32_t wave)
{
	struct route_obj obj;

	parse(text, &obj);
	assert_int_equal(store_route_put(s, obj.key, obj.len, wave, T0, NULL),
	    STORE_OK);
}

/* Unassign the object in TEXT. */
static void
del_route(struct store *s, const char *text)
{
	struct route_obj obj;

	parse(text, &obj);
	assert_int_equal(store_route_del(s, obj.key, obj.len, T0, NULL),
	    STORE_OK);
}

/*
 * Resolve TEXT twice (the second from the memo when it may be) and check
 * both answers: WHY, the MATCHED text, WAVE and the READ side.
 */
static void
expect(struct store *s, const char *text, enum route_why why,
    const char *matched, uint32_t wave, enum route_side read)
{
	struct route_result res;
	struct route_obj obj;
	char buf[1024];
	int i;

	parse(text, &obj);
	for (i = 0; i < 2; i++) {
		assert_int_equal(route_resolve(s, &obj, 7, &res), 0);
		if (res.why != why || res.wave != wave || res.read != read)
			fail_msg("%s (%d): why %d wave %u read %d, want %d %u "
				 "%d",
			    text, i, res.why, res.wave, res.read, why, wave,
			    read);
		route_obj_format(&res.matched, buf, sizeof(buf));
		assert_string_equal(buf, matched);
		assert_int_equal(res.assigned, why != ROUTE_WHY_UNASSIGNED);
	}
}

/* Every kind of change is seen by the next resolve. */
static void
test_changes_seen(void **state)
{
	struct routing_tmp *t = *state;
	struct route_result res;
	struct route_obj obj;
	uint64_t snap;

	expect(t->store, "a.b.t", ROUTE_WHY_UNASSIGNED, "", 0, ROUTE_WAREHOUSE);
	/* A rule appears. */
	put_route(t->store, "a.*", 1);
	expect(t->store, "a.b.t", ROUTE_WHY_RULE, "a.*", 1, ROUTE_WAREHOUSE);
	/* A longer rule. */
	put_route(t->store, "a.b.*", 2);
	expect(t->store, "a.b.t", ROUTE_WHY_RULE, "a.b.*", 2, ROUTE_WAREHOUSE);
	/* The wave of the rule flips. */
	assert_int_equal(routing_tmp_force_wave(t->store, 2, WAVE_LAKEHOUSE,
			     100, T0),
	    STORE_OK);
	expect(t->store, "a.b.t", ROUTE_WHY_RULE, "a.b.*", 2, ROUTE_LAKEHOUSE);
	/* The object is assigned on its own. */
	put_route(t->store, "a.b.t", 3);
	expect(t->store, "a.b.t", ROUTE_WHY_OBJECT, "a.b.t", 3,
	    ROUTE_WAREHOUSE);
	/* Its wave moves, then it moves to another wave. */
	assert_int_equal(routing_tmp_force_wave(t->store, 3, WAVE_FROZEN, 100,
			     T0),
	    STORE_OK);
	expect(t->store, "a.b.t", ROUTE_WHY_OBJECT, "a.b.t", 3,
	    ROUTE_LAKEHOUSE);
	parse("a.b.t", &obj);
	assert_int_equal(route_resolve(t->store, &obj, 0, &res), 0);
	assert_true(res.warehouse_writes_refused);
	assert_int_equal(res.write, ROUTE_LAKEHOUSE);
	put_route(t->store, "a.b.t", 1);
	expect(t->store, "a.b.t", ROUTE_WHY_OBJECT, "a.b.t", 1,
	    ROUTE_WAREHOUSE);
	assert_int_equal(route_resolve(t->store, &obj, 0, &res), 0);
	assert_false(res.warehouse_writes_refused);
	/* Unassigned again: the rule decides; the rule goes: the shorter. */
	del_route(t->store, "a.b.t");
	expect(t->store, "a.b.t", ROUTE_WHY_RULE, "a.b.*", 2, ROUTE_LAKEHOUSE);
	del_route(t->store, "a.b.*");
	expect(t->store, "a.b.t", ROUTE_WHY_RULE, "a.*", 1, ROUTE_WAREHOUSE);
	/* A rolled-back wave. */
	assert_int_equal(routing_tmp_force_wave(t->store, 1, WAVE_LAKEHOUSE,
			     100, T0),
	    STORE_OK);
	expect(t->store, "a.b.t", ROUTE_WHY_RULE, "a.*", 1, ROUTE_LAKEHOUSE);
	assert_int_equal(routing_tmp_force_wave(t->store, 1, WAVE_ROLLED_BACK,
			     0, T0),
	    STORE_OK);
	expect(t->store, "a.b.t", ROUTE_WHY_RULE, "a.*", 1, ROUTE_WAREHOUSE);
	del_route(t->store, "a.*");
	expect(t->store, "a.b.t", ROUTE_WHY_UNASSIGNED, "", 0, ROUTE_WAREHOUSE);

	/* The snapshot stands still between commits and moves with one. */
	snap = store_snapshot(t->store);
	assert_true(snap != 0);
	assert_int_equal(store_snapshot(t->store), snap);
	put_route(t->store, "x.t", 1);
	assert_true(store_snapshot(t->store) > snap);
}

/* A canary's share is remembered, the side decided per client. */
static void
test_canary_share(void **state)
{
	struct routing_tmp *t = *state;
	struct route_result res, again;
	struct route_obj obj;
	uint64_t c;
	size_t lake = 0, differ = 0;

	parse("db.t", &obj);
	put_route(t->store, "db.t", 4);
	assert_int_equal(routing_tmp_force_wave(t->store, 4, WAVE_CANARY, 50,
			     T0),
	    STORE_OK);
	for (c = 1; c <= 1000; c++) {
		assert_int_equal(route_resolve(t->store, &obj, c, &res), 0);
		assert_int_equal(route_resolve(t->store, &obj, c, &again), 0);
		assert_int_equal(res.read, again.read);
		assert_int_equal(res.pct, 50);
		lake += res.read == ROUTE_LAKEHOUSE;
	}
	if (lake < 400 || lake > 600)
		fail_msg("pct 50: %zu of 1000 on the lakehouse", lake);
	/* The share rises: clients move, none back. */
	assert_int_equal(routing_tmp_force_wave(t->store, 4, WAVE_CANARY, 100,
			     T0),
	    STORE_OK);
	for (c = 1; c <= 1000; c++) {
		assert_int_equal(route_resolve(t->store, &obj, c, &res), 0);
		assert_int_equal(res.read, ROUTE_LAKEHOUSE);
		assert_int_equal(res.pct, 100);
	}
	assert_int_equal(routing_tmp_force_wave(t->store, 4, WAVE_CANARY, 0,
			     T0),
	    STORE_OK);
	for (c = 1; c <= 1000; c++) {
		assert_int_equal(route_resolve(t->store, &obj, c, &res), 0);
		differ += res.read != ROUTE_WAREHOUSE;
	}
	assert_int_equal(differ, 0);
}

/*
 * Another process commits (a forked child opening the store, as the
 * master writes what its workers read): the next resolve here sees it.
 */
static void
test_other_process(void **state)
{
	struct routing_tmp *t = *state;
	struct store *w;
	char err[512];
	int step, status;
	pid_t pid;

	put_route(t->store, "db.*", 1);
	for (step = 0; step < 3; step++) {
		/* Remembered here before the change. */
		switch (step) {
		case 0:
			expect(t->store, "db.t", ROUTE_WHY_RULE, "db.*", 1,
			    ROUTE_WAREHOUSE);
			break;
		case 1:
			expect(t->store, "db.t", ROUTE_WHY_RULE, "db.*", 1,
			    ROUTE_LAKEHOUSE);
			break;
		default:
			expect(t->store, "db.t", ROUTE_WHY_OBJECT, "db.t", 2,
			    ROUTE_WAREHOUSE);
			break;
		}
		pid = fork();
		assert_true(pid != -1);
		if (pid == 0) {
			/* The child never touches the parent's env. */
			if ((w = store_open(t->dir, err, sizeof(err))) == NULL)
				_exit(2);
			if (step == 0)
				status = routing_tmp_force_wave(w, 1,
				    WAVE_LAKEHOUSE, 100, T0);
			else if (step == 1)
				status = store_route_put(w, "db\x1et", 4, 2, T0,
				    NULL);
			else
				status =
				    store_route_del(w, "db\x1et", 4, T0, NULL);
			store_free(w);
			_exit(status == STORE_OK ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	expect(t->store, "db.t", ROUTE_WHY_RULE, "db.*", 1, ROUTE_LAKEHOUSE);
}

/* A store error is not remembered, nor anything while the store fails. */
static void
test_error_not_kept(void **state)
{
	static const unsigned char bad[] = { 0 };
	struct routing_tmp *t = *state;
	struct route_result res;
	struct route_obj obj;
	char err[512];

	put_route(t->store, "db.t", 7);
	store_free(t->store);
	assert_int_equal(routing_tmp_raw_put(t->dir, "waves",
			     "\x00\x00\x00\x07", 4, bad, 1),
	    0);
	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	parse("db.t", &obj);
	assert_int_equal(route_resolve(t->store, &obj, 0, &res), -1);
	assert_int_equal(res.why, ROUTE_WHY_STORE_ERROR);
	assert_int_equal(store_snapshot(t->store), 0); /* not healthy */
	assert_int_equal(route_resolve(t->store, &obj, 0, &res), -1);
	assert_int_equal(res.why, ROUTE_WHY_STORE_ERROR);
	/* Moved to a wave with a good record: that decides. */
	put_route(t->store, "db.t", 8);
	assert_int_equal(routing_tmp_force_wave(t->store, 8, WAVE_LAKEHOUSE,
			     100, T0),
	    STORE_OK);
	expect(t->store, "db.t", ROUTE_WHY_OBJECT, "db.t", 8, ROUTE_LAKEHOUSE);
	assert_true(store_snapshot(t->store) != 0);
}

/*
 * Two stores at the same txn id (another state_dir, a reload): the second
 * is not answered from what the first said.
 */
static void
test_reopened(void **state)
{
	struct routing_tmp *a = *state, *b;

	put_route(a->store, "db.t", 1);
	expect(a->store, "db.t", ROUTE_WHY_OBJECT, "db.t", 1, ROUTE_WAREHOUSE);
	b = routing_tmp_open();
	assert_non_null(b);
	put_route(b->store, "db.*", 2);
	assert_int_equal(store_snapshot(a->store), store_snapshot(b->store));
	assert_true(store_serial(a->store) != store_serial(b->store));
	expect(b->store, "db.t", ROUTE_WHY_RULE, "db.*", 2, ROUTE_WAREHOUSE);
	expect(a->store, "db.t", ROUTE_WHY_OBJECT, "db.t", 1, ROUTE_WAREHOUSE);
	routing_tmp_close(b);
}

/* Run the tests. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_changes_seen, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_canary_share, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_other_process, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_error_not_kept, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_reopened, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
