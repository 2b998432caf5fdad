/*
 * floe: test_store_import.c -- the flag store, continued: health, newer
 * records, a full map, the route import (sort, refusals, growth, states)
 * and durability across a SIGKILL. The fixture is in store_fx.c.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <lmdb.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "routing/store.h"
#include "tests/unit/routing_tmp.h"
#include "tests/unit/store_fx.h"

/* The health flag drops on a failed write and rises on the next success. */
static void
test_healthy(void **state)
{
	struct routing_tmp *t = *state;
	json_t *notobj = json_array();

	assert_true(store_is_healthy(t->store));
	assert_int_equal(store_route_put(t->store, "k", 1, 1, T0, notobj),
	    STORE_ERROR);
	assert_false(store_is_healthy(t->store));
	assert_int_equal(store_last_seq(t->store), 0);
	assert_int_equal(store_event_append(t->store, T0, notobj), STORE_ERROR);
	assert_false(store_is_healthy(t->store));
	assert_int_equal(store_route_put(t->store, "k", 1, 1, T0, NULL),
	    STORE_OK);
	assert_true(store_is_healthy(t->store));
	json_decref(notobj);
}

/* A schema newer than this floe's is refused at open. */
static void
test_newer_schema(void **state)
{
	struct routing_tmp *t = *state;
	static const unsigned char v3[] = { 3, 0, 0, 0 };
	char err[256];

	store_free(t->store);
	t->store = NULL;
	raw_put(t->dir, "meta", "schema", 6, v3, sizeof(v3));
	assert_null(store_open(t->dir, err, sizeof(err)));
	assert_non_null(strstr(err, "schema 3 is newer"));
}

/* Append an event padded to about 4 KiB. */
static int
append_big(struct store *s, int64_t now)
{
	static char pad[4001];
	json_t *ev;
	int rc;

	memset(pad, 'p', sizeof(pad) - 1);
	ev = json_pack("{s:s,s:s}", "type", "bulk", "pad", pad);
	rc = store_event_append(s, now, ev);
	json_decref(ev);
	return rc;
}

/*
 * A full map doubles and the write is retried: 100 events of 4 KiB go
 * into a store opened with a 64 KiB map. Inside a read batch the map is
 * not grown (the remap would pull the pages from under the reader).
 */
static void
test_map_full(void **state)
{
	struct routing_tmp *t = *state;
	struct count c;
	char err[256];
	int i, rc = STORE_OK;

	store_free(t->store);
	store_set_mapsize(64 * 1024);
	t->store = store_open(t->dir, err, sizeof(err));
	store_set_mapsize(0);
	assert_non_null(t->store);
	for (i = 0; i < 100; i++)
		assert_int_equal(append_big(t->store, T0 + i), STORE_OK);
	assert_true(store_is_healthy(t->store));
	assert_int_equal(store_last_seq(t->store), 100);

	assert_int_equal(store_read_begin(t->store), 0);
	for (i = 0; i < 1000 && rc == STORE_OK; i++)
		rc = append_big(t->store, T0);
	store_read_end(t->store);
	assert_int_equal(rc, STORE_ERROR);
	assert_false(store_is_healthy(t->store));
	assert_int_equal(append_big(t->store, T0), STORE_OK);
	assert_true(store_is_healthy(t->store));

	/* Everything committed is there after a reopen. */
	store_free(t->store);
	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_event_foreach(t->store, 0, 10, count_event_cb,
			     &c),
	    STORE_OK);
	assert_int_equal(c.n, 10);
	assert_int_equal(store_last_seq(t->store), 100 + (uint64_t)i);
}

/* What the import callback saw, and what it answers. */
struct imp {
	const char *refuse; /* key refused (NUL-terminated) */
	int rc; /* the answer for REFUSE */
	size_t calls;
	size_t with_old; /* calls that had an old route */
	uint32_t old_wave; /* the last old route's wave */
	int old_state; /* the states of the last call's waves */
	int new_state;
	const struct store_route_in *in;
};

/* store_route_import_cb driven by a struct imp. */
static int
imp_cb(size_t i, const struct store_route *old, int old_state, int new_state,
    void *arg)
{
	struct imp *m = arg;
	const struct store_route_in *r = &m->in[i];

	m->calls++;
	m->old_state = old_state;
	m->new_state = new_state;
	if (old != NULL) {
		m->with_old++;
		m->old_wave = old->wave;
	}
	if (m->refuse != NULL && r->keylen == strlen(m->refuse) &&
	    memcmp(r->key, m->refuse, r->keylen) == 0)
		return m->rc;
	return STORE_OK;
}

/* store_route_cb appending "key=wave/seq" to the string buffer ARG. */
static int
dump_cb(const void *key, size_t keylen, const struct store_route *r, void *arg)
{
	char *buf = arg;
	size_t len = strlen(buf);

	snprintf(buf + len, 4096 - len, "%.*s=%u/%llu ", (int)keylen,
	    (const char *)key, r->wave, (unsigned long long)r->seq);
	return 0;
}

/* Every route as "key=wave/seq ..." into BUF of 4096 bytes. */
static void
dump(struct store *s, char *buf)
{
	buf[0] = '\0';
	assert_int_equal(store_route_foreach(s, dump_cb, buf), STORE_OK);
}

/* Sorting imports: LMDB's key order, equal keys by their number. */
static void
test_route_in_sort(void **state)
{
	static const struct {
		const char *key;
		uint32_t no;
	} in[] = { { "b", 1 }, { "ab", 2 }, { "a", 3 }, { "a\x1e", 4 },
		{ "ab", 0 }, { "\x1d", 5 } };
	static const uint32_t want[] = { 5, 3, 4, 0, 2, 1 };
	struct store_route_in r[nitems(in)];
	size_t i;

	(void)state;
	for (i = 0; i < nitems(in); i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].key = in[i].key;
		r[i].keylen = strlen(in[i].key);
		r[i].no = in[i].no;
	}
	store_route_in_sort(r, nitems(r));
	for (i = 0; i < nitems(r); i++)
		assert_int_equal(r[i].no, want[i]);
	store_route_in_sort(r, 0);
	/* The order itself: unsigned bytes, then the shorter key first. */
	assert_true(store_key_cmp("a", 1, "ab", 2) < 0);
	assert_true(store_key_cmp("ab", 2, "a", 1) > 0);
	assert_true(store_key_cmp("ab", 2, "b", 1) < 0);
	assert_true(store_key_cmp("\xff", 1, "a", 1) > 0);
	assert_int_equal(store_key_cmp("ab", 2, "ab", 2), 0);
	assert_int_equal(store_key_cmp("", 0, "", 0), 0);
}

/*
 * One import: new routes and moves get the txn's seq, routes already on
 * their wave keep theirs; one event with the counts; a re-run changes
 * nothing and writes no event.
 */
static void
test_route_import(void **state)
{
	static const struct {
		const char *key;
		uint32_t wave;
		bool force;
	} tab[] = {
		{ "c", 3, false }, { "a", 1, false }, /* already so */
		{ "b", 5, false }, /* moves from 2 */
		{ "d", 3, true }, /* forced: the callback is not asked */
	};
	struct routing_tmp *t = *state;
	struct store_route_in in[nitems(tab)];
	struct store_import_res res;
	struct store_route r;
	struct imp m = { 0 };
	json_t *ev, *all, *e;
	char before[4096], after[4096];
	size_t i;

	assert_int_equal(store_route_put(t->store, "a", 1, 1, T0, NULL),
	    STORE_OK);
	assert_int_equal(store_route_put(t->store, "b", 1, 2, T0, NULL),
	    STORE_OK);
	for (i = 0; i < nitems(tab); i++) {
		in[i].key = tab[i].key;
		in[i].keylen = strlen(tab[i].key);
		in[i].wave = tab[i].wave;
		in[i].no = (uint32_t)i + 1;
		in[i].force = tab[i].force;
	}
	store_route_in_sort(in, nitems(in));
	m.in = in;
	ev = json_pack("{s:s,s:s}", "type", "route.import", "actor", "me");
	assert_int_equal(store_route_import(t->store, in, nitems(in), T0 + 10,
			     imp_cb, &m, ev, &res),
	    STORE_OK);
	assert_int_equal(res.set, 3);
	assert_int_equal(res.unchanged, 1);
	assert_int_equal(m.calls, 2); /* b and c; a unchanged, d forced */
	assert_int_equal(m.with_old, 1);
	assert_int_equal(m.old_wave, 2);
	assert_int_equal(store_last_seq(t->store), 3);
	json_decref(ev);

	assert_int_equal(store_route_get(t->store, "a", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 1);
	assert_int_equal(r.seq, 1);
	assert_int_equal(r.since_ms, T0);
	for (i = 0; i < nitems(tab); i++) {
		if (tab[i].key[0] == 'a')
			continue;
		assert_int_equal(store_route_get(t->store, tab[i].key, 1, &r),
		    STORE_OK);
		assert_int_equal(r.wave, tab[i].wave);
		assert_int_equal(r.seq, 3);
		assert_int_equal(r.since_ms, T0 + 10);
	}

	all = routing_tmp_events(t->store, 2);
	assert_int_equal(json_array_size(all), 1);
	e = json_array_get(all, 0);
	assert_string_equal(json_string_value(json_object_get(e, "type")),
	    "route.import");
	assert_string_equal(json_string_value(json_object_get(e, "actor")),
	    "me");
	assert_int_equal(json_integer_value(json_object_get(e, "set")), 3);
	assert_int_equal(json_integer_value(json_object_get(e, "unchanged")),
	    1);
	assert_int_equal(json_integer_value(json_object_get(e, "seq")), 3);
	assert_int_equal(json_object_size(json_object_get(e, "waves")), 2);
	assert_int_equal(json_integer_value(
			     json_object_get(json_object_get(e, "waves"), "3")),
	    2);
	assert_int_equal(json_integer_value(
			     json_object_get(json_object_get(e, "waves"), "5")),
	    1);
	json_decref(all);

	/* The same import again: all unchanged, nothing written. */
	dump(t->store, before);
	memset(&m, 0, sizeof(m));
	m.in = in;
	ev = json_pack("{s:s}", "type", "route.import");
	assert_int_equal(store_route_import(t->store, in, nitems(in), T0 + 20,
			     imp_cb, &m, ev, &res),
	    STORE_OK);
	assert_int_equal(res.set, 0);
	assert_int_equal(res.unchanged, 4);
	assert_int_equal(m.calls, 0);
	assert_null(json_object_get(ev, "seq"));
	json_decref(ev);
	assert_int_equal(store_last_seq(t->store), 3);
	dump(t->store, after);
	assert_string_equal(before, after);

	/* A key given twice: applied in order, the later one wins. */
	in[0] = (struct store_route_in) { "e", 1, 7, 1, false };
	in[1] = (struct store_route_in) { "e", 1, 8, 2, false };
	memset(&m, 0, sizeof(m));
	m.in = in;
	assert_int_equal(store_route_import(t->store, in, 2, T0 + 30, imp_cb,
			     &m, NULL, &res),
	    STORE_OK);
	assert_int_equal(res.set, 2);
	assert_int_equal(m.with_old, 1);
	assert_int_equal(m.old_wave, 7);
	assert_int_equal(store_route_get(t->store, "e", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 8);
	assert_int_equal(store_last_seq(t->store), 4);

	/* Nothing to import: nothing written. */
	assert_int_equal(store_route_import(t->store, in, 0, T0, NULL, NULL,
			     NULL, &res),
	    STORE_OK);
	assert_int_equal(store_last_seq(t->store), 4);
}

/*
 * All or nothing: a refusal by the callback, its error, or a bad key
 * leaves every route, the sequence and the event log as they were.
 */
static void
test_route_import_refused(void **state)
{
	static const struct {
		const char *refuse;
		int rc;
		size_t keylen; /* of the last route; 0: its own */
		int want;
		size_t refused;
	} tab[] = {
		{ "m", STORE_REFUSED, 0, STORE_REFUSED, 1 },
		{ "z", STORE_REFUSED, 0, STORE_REFUSED, 3 },
		{ "m", STORE_ERROR, 0, STORE_ERROR, 1 },
		{ "m", -7, 0, STORE_ERROR, 1 },
		{ NULL, 0, STORE_KEY_MAX + 1, STORE_ERROR, 0 },
	};
	static const char *const keys[] = { "a", "m", "q", "z" };
	struct routing_tmp *t = *state;
	struct store_route_in in[nitems(keys)];
	struct store_import_res res;
	struct imp m;
	char before[4096], after[4096];
	json_t *ev;
	size_t i, k;
	int rc;

	assert_int_equal(store_route_put(t->store, "q", 1, 9, T0, NULL),
	    STORE_OK);
	dump(t->store, before);
	for (i = 0; i < nitems(tab); i++) {
		for (k = 0; k < nitems(keys); k++)
			in[k] = (struct store_route_in) { keys[k], 1, 4,
				(uint32_t)k, false };
		if (tab[i].keylen != 0)
			in[nitems(in) - 1].keylen = (uint32_t)tab[i].keylen;
		memset(&m, 0, sizeof(m));
		m.in = in;
		m.refuse = tab[i].refuse;
		m.rc = tab[i].rc;
		ev = json_pack("{s:s}", "type", "route.import");
		rc = store_route_import(t->store, in, nitems(in), T0 + 5,
		    imp_cb, &m, ev, &res);
		assert_int_equal(rc, tab[i].want);
		if (rc == STORE_REFUSED)
			assert_int_equal(res.refused, tab[i].refused);
		assert_null(json_object_get(ev, "seq"));
		json_decref(ev);
		assert_int_equal(store_last_seq(t->store), 1);
		dump(t->store, after);
		assert_string_equal(before, after);
		assert_true(store_is_healthy(t->store));
	}
	/* The refused route forced: the callback is not asked, all go in. */
	in[nitems(in) - 1].keylen = 1;
	in[1].force = true;
	memset(&m, 0, sizeof(m));
	m.in = in;
	m.refuse = "m";
	m.rc = STORE_REFUSED;
	assert_int_equal(store_route_import(t->store, in, nitems(in), T0 + 5,
			     imp_cb, &m, NULL, &res),
	    STORE_OK);
	assert_int_equal(res.set, 4);
	assert_int_equal(m.calls, 3);
	assert_int_equal(store_last_seq(t->store), 2);
}

/*
 * A big import into a small map: the map doubles and the txn is retried
 * (asking the callback again), and the import lands whole.
 */
static void
test_route_import_grow(void **state)
{
	enum { N = 20000 };
	struct routing_tmp *t = *state;
	struct store_route_in *in;
	struct store_import_res res;
	struct store_route r;
	struct imp m;
	char(*keys)[16], err[256];
	json_t *all;
	size_t i;

	store_free(t->store);
	store_set_mapsize(64 * 1024);
	t->store = store_open(t->dir, err, sizeof(err));
	store_set_mapsize(0);
	assert_non_null(t->store);

	in = calloc(N, sizeof(*in));
	keys = calloc(N, sizeof(*keys));
	assert_non_null(in);
	assert_non_null(keys);
	for (i = 0; i < N; i++) {
		/* Descending: the sort puts them in order. */
		snprintf(keys[i], sizeof(keys[i]), "db\x1et%06zu", N - i);
		in[i] = (struct store_route_in) { keys[i],
			(uint32_t)strlen(keys[i]), (uint32_t)(i % 100),
			(uint32_t)i, false };
	}
	store_route_in_sort(in, N);
	assert_int_equal(in[0].no, N - 1);
	memset(&m, 0, sizeof(m));
	m.in = in;
	assert_int_equal(store_route_import(t->store, in, N, T0, imp_cb, &m,
			     NULL, &res),
	    STORE_OK);
	assert_int_equal(res.set, N);
	assert_true(m.calls > N); /* retried after growing */
	assert_int_equal(store_last_seq(t->store), 1);
	for (i = 0; i < N; i += 997) {
		assert_int_equal(store_route_get(t->store, keys[i],
				     strlen(keys[i]), &r),
		    STORE_OK);
		assert_int_equal(r.wave, i % 100);
		assert_int_equal(r.seq, 1);
	}
	all = routing_tmp_events(t->store, 0);
	assert_int_equal(json_array_size(all), 1);
	assert_int_equal(json_object_size(
			     json_object_get(json_array_get(all, 0), "waves")),
	    100);
	json_decref(all);
	free(keys);
	free(in);
}

/*
 * The guard is asked with the states of the route's current and new
 * waves as the import's own txn reads them; 0 for a wave without a record.
 */
static void
test_route_import_states(void **state)
{
	struct routing_tmp *t = *state;
	struct store_route_in in[1];
	struct store_import_res res;
	struct imp m;
	uint8_t st;

	st = 2;
	assert_int_equal(store_wave_update(t->store, 2, T0, set_state_cb, &st,
			     NULL),
	    STORE_OK);
	st = 3;
	assert_int_equal(store_wave_update(t->store, 5, T0, set_state_cb, &st,
			     NULL),
	    STORE_OK);
	assert_int_equal(store_route_put(t->store,
			     "db\x1e"
			     "a",
			     4, 2, T0, NULL),
	    STORE_OK);
	memset(&m, 0, sizeof(m));
	m.in = in;
	in[0] = (struct store_route_in) { "db\x1e"
					  "a",
		4, 5, 1, false };
	assert_int_equal(store_route_import(t->store, in, 1, T0, imp_cb, &m,
			     NULL, &res),
	    STORE_OK);
	assert_int_equal(m.calls, 1);
	assert_int_equal(m.old_state, 2);
	assert_int_equal(m.new_state, 3);
	in[0] = (struct store_route_in) { "db\x1e"
					  "b",
		4, 9, 1, false };
	assert_int_equal(store_route_import(t->store, in, 1, T0, imp_cb, &m,
			     NULL, &res),
	    STORE_OK);
	assert_int_equal(m.calls, 2);
	assert_int_equal(m.with_old, 1);
	assert_int_equal(m.old_state, 0);
	assert_int_equal(m.new_state, 0);
}

/*
 * Child of the crash test: write routes FROM, FROM+1, ... and report each
 * one acknowledged through FD, until killed.
 */
static void __attribute__((__noreturn__))
crash_child(const char *dir, uint32_t from, int fd)
{
	struct store *s;
	char err[256], key[32];
	uint32_t i;
	int n;

	if ((s = store_open(dir, err, sizeof(err))) == NULL)
		_exit(2);
	for (i = from;; i++) {
		n = snprintf(key, sizeof(key), "crash/%08u", i);
		if (store_route_put(s, key, (size_t)n, i, T0 + i, NULL) !=
		    STORE_OK)
			_exit(3);
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			_exit(4);
	}
}

/*
 * kill -9 at any moment: the store reopens and holds every write that was
 * acknowledged. Five rounds, so a store left by a killed writer is also
 * written again by the next one.
 */
static void
test_crash(void **state)
{
	struct routing_tmp *t = *state;
	static uint32_t acked[1 << 16];
	struct store_route r;
	size_t nacked = 0, i, before;
	uint32_t from = 0, v;
	char err[256], key[32];
	int p[2], status, round, n;
	pid_t pid;

	store_free(t->store);
	t->store = NULL;
	for (round = 0; round < 5; round++) {
		before = nacked;
		assert_int_equal(pipe(p), 0);
		pid = fork();
		assert_true(pid != -1);
		if (pid == 0) {
			close(p[0]);
			crash_child(t->dir, from, p[1]);
		}
		close(p[1]);
		while (nacked - before < 20 + 7 * (size_t)round &&
		    read(p[0], &v, sizeof(v)) == sizeof(v))
			acked[nacked++] = v;
		usleep(1000 * (useconds_t)round);
		assert_int_equal(kill(pid, SIGKILL), 0);
		/* Acks already in the pipe were acknowledged before the kill.
		 */
		while (nacked < nitems(acked) &&
		    read(p[0], &v, sizeof(v)) == sizeof(v))
			acked[nacked++] = v;
		close(p[0]);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), SIGKILL);
		assert_true(nacked - before >= 20);
		from = acked[nacked - 1] + 1;

		t->store = store_open(t->dir, err, sizeof(err));
		assert_non_null(t->store);
		for (i = 0; i < nacked; i++) {
			n = snprintf(key, sizeof(key), "crash/%08u", acked[i]);
			assert_int_equal(store_route_get(t->store, key,
					     (size_t)n, &r),
			    STORE_OK);
			assert_int_equal(r.wave, acked[i]);
		}
		assert_true(store_last_seq(t->store) >= nacked);
		/* The reopened store takes writes (and so will the child). */
		assert_int_equal(store_route_put(t->store, "after", 5, 1, T0,
				     NULL),
		    STORE_OK);
		store_free(t->store);
		t->store = NULL;
		from++;
	}
}

/* Run the tests. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_healthy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_map_full, setup, teardown),
		cmocka_unit_test(test_route_in_sort),
		cmocka_unit_test_setup_teardown(test_route_import, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_route_import_refused,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_import_grow, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_route_import_states, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_crash, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
