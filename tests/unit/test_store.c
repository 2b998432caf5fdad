/*
 * floe: test_store.c -- the flag store: open/reopen, route and wave records,
 * key order, events, the wave update path, the route cache, the read
 * bracket and decoding of older records. The rest is in test_store_import.c;
 * the fixture in store_fx.c.
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

/* An event {"type": TYPE}. */
static json_t *
event_new(const char *type)
{
	return json_pack("{s:s}", "type", type);
}

/* Opening creates the directory; a reopen keeps data and sequence. */
static void
test_open_reopen(void **state)
{
	struct routing_tmp *t = *state;
	struct store_route r;
	char sub[512], err[256];
	struct store *s;

	assert_true(store_is_healthy(t->store));
	assert_int_equal(store_last_seq(t->store), 0);
	assert_int_equal(store_route_put(t->store, "k", 1, 7, T0, NULL),
	    STORE_OK);
	assert_int_equal(store_last_seq(t->store), 1);
	store_free(t->store);

	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);
	assert_int_equal(store_last_seq(t->store), 1);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 7);
	assert_int_equal(r.seq, 1);
	assert_int_equal(r.since_ms, T0);

	/* mkdir -p with mode 0700 for a nested state_dir. */
	snprintf(sub, sizeof(sub), "%s/a/b//c", t->dir);
	s = store_open(sub, err, sizeof(err));
	assert_non_null(s);
	store_free(s);

	/* A path that cannot be created fails with a message. */
	err[0] = '\0';
	snprintf(sub, sizeof(sub), "%s/data.mdb/x", t->dir);
	assert_null(store_open(sub, err, sizeof(err)));
	assert_non_null(strstr(err, "data.mdb"));
}

/* Put, get, overwrite and delete route records. */
static void
test_route_put_get_del(void **state)
{
	static const struct {
		const char *key;
		uint32_t wave;
	} tab[] = {
		{ "db\x1eorders", 1 },
		{ "db\x1d", 2 },
		{ "a\x1f"
		  "b\x1e"
		  "t",
		    2147483647u },
		{ "x", 0 },
	};
	struct routing_tmp *t = *state;
	struct store_route r;
	char big[STORE_KEY_MAX + 1];
	size_t i;
	uint64_t seq;

	for (i = 0; i < nitems(tab); i++) {
		assert_int_equal(store_route_put(t->store, tab[i].key,
				     strlen(tab[i].key), tab[i].wave,
				     T0 + (int64_t)i, NULL),
		    STORE_OK);
		assert_int_equal(store_last_seq(t->store), i + 1);
	}
	for (i = 0; i < nitems(tab); i++) {
		memset(&r, 0xff, sizeof(r));
		assert_int_equal(store_route_get(t->store, tab[i].key,
				     strlen(tab[i].key), &r),
		    STORE_OK);
		assert_int_equal(r.wave, tab[i].wave);
		assert_int_equal(r.seq, i + 1);
		assert_int_equal(r.since_ms, T0 + (int64_t)i);
	}
	/* Overwrite: new wave and seq. */
	assert_int_equal(store_route_put(t->store, "x", 1, 9, T0 + 10, NULL),
	    STORE_OK);
	assert_int_equal(store_route_get(t->store, "x", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 9);
	assert_int_equal(r.seq, nitems(tab) + 1);

	seq = store_last_seq(t->store);
	assert_int_equal(store_route_del(t->store, "x", 1, T0, NULL), STORE_OK);
	assert_int_equal(store_last_seq(t->store), seq + 1);
	assert_int_equal(store_route_get(t->store, "x", 1, &r), STORE_NOTFOUND);
	/* Deleting what is absent changes nothing. */
	assert_int_equal(store_route_del(t->store, "x", 1, T0, NULL),
	    STORE_NOTFOUND);
	assert_int_equal(store_last_seq(t->store), seq + 1);
	assert_int_equal(store_route_get(t->store, "nope", 4, &r),
	    STORE_NOTFOUND);

	/* Keys longer than STORE_KEY_MAX are refused. */
	memset(big, 'k', sizeof(big));
	assert_int_equal(store_route_put(t->store, big, sizeof(big), 1, T0,
			     NULL),
	    STORE_ERROR);
	assert_int_equal(store_route_put(t->store, big, STORE_KEY_MAX, 1, T0,
			     NULL),
	    STORE_OK);
	assert_int_equal(store_route_get(t->store, big, STORE_KEY_MAX, &r),
	    STORE_OK);
}

struct collect {
	char keys[16][32];
	uint32_t waves[16];
	size_t n;
	size_t stop_at;
};

/* store_route_cb recording keys. */
static int
collect_route_cb(const void *key, size_t keylen, const struct store_route *r,
    void *arg)
{
	struct collect *c = arg;

	assert_true(keylen < sizeof(c->keys[0]));
	memcpy(c->keys[c->n], key, keylen);
	c->keys[c->n][keylen] = '\0';
	c->waves[c->n] = r->wave;
	return ++c->n == c->stop_at;
}

/* store_wave_cb recording wave numbers. */
static int
collect_wave_cb(const struct store_wave *w, void *arg)
{
	struct collect *c = arg;

	c->waves[c->n] = w->n;
	return ++c->n == c->stop_at;
}

/* Iteration is in key order: bytes for objects, numbers for waves. */
static void
test_foreach_order(void **state)
{
	static const char *keys[] = { "m", "b", "zz",
		"a\x1f"
		"b",
		"a" };
	static const char *sorted[] = { "a",
		"a\x1f"
		"b",
		"b", "m", "zz" };
	static const uint32_t waves[] = { 300, 2, 70000, 1, 2147483647u, 256 };
	static const uint32_t wsorted[] = { 1, 2, 256, 300, 70000,
		2147483647u };
	struct routing_tmp *t = *state;
	struct collect c;
	uint8_t st = 1;
	size_t i;

	for (i = 0; i < nitems(keys); i++)
		assert_int_equal(store_route_put(t->store, keys[i],
				     strlen(keys[i]), (uint32_t)i, T0, NULL),
		    STORE_OK);
	for (i = 0; i < nitems(waves); i++)
		assert_int_equal(store_wave_update(t->store, waves[i], T0,
				     set_state_cb, &st, NULL),
		    STORE_OK);

	memset(&c, 0, sizeof(c));
	assert_int_equal(store_route_foreach(t->store, collect_route_cb, &c),
	    STORE_OK);
	assert_int_equal(c.n, nitems(sorted));
	for (i = 0; i < nitems(sorted); i++)
		assert_string_equal(c.keys[i], sorted[i]);
	assert_int_equal(c.waves[0], 4);

	memset(&c, 0, sizeof(c));
	assert_int_equal(store_wave_foreach(t->store, collect_wave_cb, &c),
	    STORE_OK);
	assert_int_equal(c.n, nitems(wsorted));
	for (i = 0; i < nitems(wsorted); i++)
		assert_int_equal(c.waves[i], wsorted[i]);

	/* A non-zero return stops the walk. */
	memset(&c, 0, sizeof(c));
	c.stop_at = 2;
	assert_int_equal(store_wave_foreach(t->store, collect_wave_cb, &c),
	    STORE_OK);
	assert_int_equal(c.n, 2);
	memset(&c, 0, sizeof(c));
	c.stop_at = 3;
	assert_int_equal(store_route_foreach(t->store, collect_route_cb, &c),
	    STORE_OK);
	assert_int_equal(c.n, 3);

	/* From after a key that exists, one that does not, and the last. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_route_foreach_after(t->store, "b", 1,
			     collect_route_cb, &c),
	    STORE_OK);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.keys[0], "m");
	assert_string_equal(c.keys[1], "zz");
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_route_foreach_after(t->store, "a\x1f", 2,
			     collect_route_cb, &c),
	    STORE_OK);
	assert_int_equal(c.n, 4);
	assert_string_equal(c.keys[0],
	    "a\x1f"
	    "b");
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_route_foreach_after(t->store, "zz", 2,
			     collect_route_cb, &c),
	    STORE_OK);
	assert_int_equal(c.n, 0);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_route_foreach_after(t->store, NULL, 0,
			     collect_route_cb, &c),
	    STORE_OK);
	assert_int_equal(c.n, nitems(sorted));
}

/* Each write appends its event with "seq" and "ts"; paging by seq. */
static void
test_events(void **state)
{
	struct routing_tmp *t = *state;
	json_t *ev, *all, *e;
	struct count c;
	char ts[32];
	size_t i;

	ev = json_pack("{s:s,s:i}", "type", "route.set", "wave", 3);
	assert_int_equal(store_route_put(t->store, "k", 1, 3, T0, ev),
	    STORE_OK);
	/* The caller's event is stamped too. */
	assert_int_equal(json_integer_value(json_object_get(ev, "seq")), 1);
	json_decref(ev);
	ev = event_new("route.rm");
	assert_int_equal(store_route_del(t->store, "k", 1, T0 + 1000, ev),
	    STORE_OK);
	json_decref(ev);
	ev = event_new("note");
	assert_int_equal(store_event_append(t->store, T0 + 2000, ev), STORE_OK);
	json_decref(ev);
	/* A failed write leaves neither event nor stamps. */
	ev = event_new("route.rm");
	assert_int_equal(store_route_del(t->store, "k", 1, T0, ev),
	    STORE_NOTFOUND);
	assert_null(json_object_get(ev, "seq"));
	json_decref(ev);
	assert_int_equal(store_last_seq(t->store), 3);

	all = routing_tmp_events(t->store, 0);
	assert_non_null(all);
	assert_int_equal(json_array_size(all), 3);
	json_array_foreach(all, i, e) {
		assert_int_equal(json_integer_value(json_object_get(e, "seq")),
		    i + 1);
		assert_int_equal(json_integer_value(json_object_get(e, "_key")),
		    i + 1);
		units_time_format(T0 + 1000 * (int64_t)i, ts, sizeof(ts));
		assert_string_equal(json_string_value(json_object_get(e, "ts")),
		    ts);
	}
	assert_string_equal(json_string_value(
				json_object_get(json_array_get(all, 0), "ts")),
	    "2023-11-14T22:13:20.123Z");
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(all, 0), "wave")),
	    3);
	assert_string_equal(json_string_value(
				json_object_get(json_array_get(all, 1),
				    "type")),
	    "route.rm");
	assert_string_equal(json_string_value(
				json_object_get(json_array_get(all, 2),
				    "type")),
	    "note");
	json_decref(all);

	/* Without an event the store writes one naming the change. */
	assert_int_equal(store_route_put(t->store, "k", 1, 3, T0, NULL),
	    STORE_OK);
	all = routing_tmp_events(t->store, 3);
	assert_int_equal(json_array_size(all), 1);
	assert_string_equal(json_string_value(
				json_object_get(json_array_get(all, 0),
				    "type")),
	    "route.set");
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(all, 0), "seq")),
	    4);
	json_decref(all);

	/* after and limit. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_event_foreach(t->store, 1, 1, count_event_cb,
			     &c),
	    STORE_OK);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.seqs[0], 2);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_event_foreach(t->store, 4, 0, count_event_cb,
			     &c),
	    STORE_OK);
	assert_int_equal(c.n, 0);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_event_foreach(t->store, 0, 0, count_event_cb,
			     &c),
	    STORE_OK);
	assert_int_equal(c.n, 4);
}

struct upd {
	int rc; /* what the callback returns */
	bool record; /* set *record_refusal */
	uint8_t state; /* state to set */
	struct store_wave seen; /* what the callback was given */
	int calls;
};

/* store_wave_update_cb driven by a struct upd. */
static int
upd_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct upd *u = arg;

	u->seen = *w;
	u->calls++;
	w->state = u->state;
	w->pct = 42;
	strlcpy(w->reason, "because", sizeof(w->reason));
	json_object_set_new(event, "type",
	    json_string(u->rc == STORE_OK ? "wave.flip" : "wave.refused"));
	*record = u->record;
	return u->rc;
}

/* The wave update path: commit, silent refusal, recorded refusal. */
static void
test_wave_update(void **state)
{
	struct routing_tmp *t = *state;
	struct store_wave w;
	struct upd u;
	json_t *ev, *all;

	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_NOTFOUND);

	/* An absent wave is handed over zero-filled with its number. */
	memset(&u, 0, sizeof(u));
	u.rc = STORE_OK;
	u.state = 2;
	ev = json_object();
	assert_int_equal(store_wave_update(t->store, 4, T0, upd_cb, &u, ev),
	    STORE_OK);
	json_decref(ev);
	assert_int_equal(u.calls, 1);
	assert_int_equal(u.seen.n, 4);
	assert_int_equal(u.seen.state, 0);
	assert_int_equal(u.seen.seq, 0);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.n, 4);
	assert_int_equal(w.state, 2);
	assert_int_equal(w.pct, 42);
	assert_int_equal(w.seq, 1);
	assert_string_equal(w.reason, "because");

	/* Refused, not recorded: nothing changes. */
	memset(&u, 0, sizeof(u));
	u.rc = STORE_REFUSED;
	u.state = 5;
	assert_int_equal(store_wave_update(t->store, 4, T0, upd_cb, &u, NULL),
	    STORE_REFUSED);
	assert_int_equal(u.seen.state, 2);
	assert_int_equal(u.seen.seq, 1);
	assert_int_equal(store_last_seq(t->store), 1);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.state, 2);

	/* Refused and recorded: the event alone is appended. */
	u.record = true;
	ev = json_pack("{s:i}", "wave", 4);
	assert_int_equal(store_wave_update(t->store, 4, T0 + 5, upd_cb, &u, ev),
	    STORE_REFUSED);
	json_decref(ev);
	assert_int_equal(store_last_seq(t->store), 2);
	assert_int_equal(store_wave_get(t->store, 4, &w), STORE_OK);
	assert_int_equal(w.state, 2);
	assert_int_equal(w.seq, 1);
	all = routing_tmp_events(t->store, 1);
	assert_int_equal(json_array_size(all), 1);
	assert_string_equal(json_string_value(
				json_object_get(json_array_get(all, 0),
				    "type")),
	    "wave.refused");
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(all, 0), "wave")),
	    4);
	json_decref(all);

	/* A callback error aborts without an event. */
	memset(&u, 0, sizeof(u));
	u.rc = STORE_ERROR;
	u.record = true;
	assert_int_equal(store_wave_update(t->store, 4, T0, upd_cb, &u, NULL),
	    STORE_ERROR);
	assert_int_equal(store_last_seq(t->store), 2);
}

/* Read brackets nest and see committed data. */
static void
test_read_bracket(void **state)
{
	struct routing_tmp *t = *state;
	struct store_route r;
	struct store_wave w;

	assert_int_equal(store_route_put(t->store, "k", 1, 5, T0, NULL),
	    STORE_OK);
	assert_int_equal(store_read_begin(t->store), 0);
	assert_int_equal(store_read_begin(t->store), 0);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	store_read_end(t->store);
	assert_int_equal(store_wave_get(t->store, 5, &w), STORE_NOTFOUND);
	store_read_end(t->store);
	/* An unbalanced end is harmless. */
	store_read_end(t->store);
	assert_int_equal(store_route_put(t->store, "k", 1, 6, T0, NULL),
	    STORE_OK);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 6);
	store_maintain(t->store);
	assert_true(store_is_healthy(t->store));
}

/*
 * Wave briefs come from a cache that lives for one snapshot: a write by
 * this store, or by another environment on the same directory (another
 * process), shows in the next read; a wave two numbers that share a cache
 * slot do not mix up.
 */
static void
test_wave_brief(void **state)
{
	struct routing_tmp *t = *state;
	struct store_wave_brief b;
	struct store *other;
	struct upd u;
	char err[256];
	pid_t pid;
	int status;

	assert_int_equal(store_wave_brief(t->store, 7, &b), STORE_NOTFOUND);
	assert_int_equal(b.state, 0);
	memset(&u, 0, sizeof(u));
	u.rc = STORE_OK;
	u.state = 2;
	assert_int_equal(store_wave_update(t->store, 7, T0, upd_cb, &u, NULL),
	    STORE_OK);
	assert_int_equal(store_wave_brief(t->store, 7, &b), STORE_OK);
	assert_int_equal(b.state, 2);
	assert_int_equal(b.pct, 42);
	assert_int_equal(b.seq, 1);
	assert_int_equal(b.since_ms, 0);
	/* 7 + 64 shares the slot; absent, and 7 is still right after. */
	assert_int_equal(store_wave_brief(t->store, 71, &b), STORE_NOTFOUND);
	assert_int_equal(store_wave_brief(t->store, 7, &b), STORE_OK);
	assert_int_equal(b.state, 2);
	/* Wave 0 is a wave like any other. */
	assert_int_equal(store_wave_brief(t->store, 0, &b), STORE_NOTFOUND);

	/*
	 * Another process writes to the same directory (LMDB forbids a
	 * second environment in one process).
	 */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Only the child's own store: the parent's is not ours. */
		other = store_open(t->dir, err, sizeof(err));
		u.state = 3;
		status = other != NULL &&
			store_wave_update(other, 7, T0, upd_cb, &u, NULL) ==
			    STORE_OK &&
			store_wave_update(other, 0, T0, upd_cb, &u, NULL) ==
			    STORE_OK ?
		    0 :
		    1;
		store_free(other);
		_exit(status);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(store_wave_brief(t->store, 7, &b), STORE_OK);
	assert_int_equal(b.state, 3);
	assert_int_equal(b.seq, 2);
	assert_int_equal(store_wave_brief(t->store, 0, &b), STORE_OK);
	assert_int_equal(b.state, 3);

	/* Inside a bracket the snapshot holds still. */
	assert_int_equal(store_read_begin(t->store), 0);
	assert_int_equal(store_wave_brief(t->store, 7, &b), STORE_OK);
	assert_int_equal(b.state, 3);
	store_read_end(t->store);
}

/* The child of a fork: put KEY at WAVE through its own store in DIR. */
static void
child_route_put(const char *dir, const char *key, uint32_t wave)
{
	struct store *other;
	char err[256];
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		other = store_open(dir, err, sizeof(err));
		status = other != NULL &&
			store_route_put(other, key, strlen(key), wave, T0,
			    NULL) == STORE_OK ?
		    0 :
		    1;
		store_free(other);
		_exit(status);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Route lookups come from a cache that lives for one snapshot: an answer
 * found or not found is never served after a write, by this store or by
 * another process; keys sharing a slot do not mix up; a key too long for
 * the cache is read every time.
 */
static void
test_route_cache(void **state)
{
	struct routing_tmp *t = *state;
	struct store_route r;
	char key[32], big[200];
	uint32_t i;

	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_NOTFOUND);
	assert_int_equal(store_route_put(t->store, "k", 1, 5, T0, NULL),
	    STORE_OK);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 5);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 5);
	assert_int_equal(store_route_del(t->store, "k", 1, T0, NULL), STORE_OK);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_NOTFOUND);

	/* More keys than slots: some share one, each reads its own. */
	for (i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "db\x1et%u", i);
		assert_int_equal(store_route_put(t->store, key, strlen(key),
				     i + 1, T0, NULL),
		    STORE_OK);
	}
	for (i = 0; i < 6000; i++) {
		snprintf(key, sizeof(key), "db\x1et%u", i % 3000);
		assert_int_equal(store_route_get(t->store, key, strlen(key),
				     &r),
		    STORE_OK);
		assert_int_equal(r.wave, i % 3000 + 1);
	}

	/* Another process writes: the next read sees it. */
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_NOTFOUND);
	child_route_put(t->dir, "k", 9);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 9);

	/* Inside a bracket the snapshot holds still; after it, it moves. */
	assert_int_equal(store_read_begin(t->store), 0);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	child_route_put(t->dir, "k", 10);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 9);
	store_read_end(t->store);
	assert_int_equal(store_route_get(t->store, "k", 1, &r), STORE_OK);
	assert_int_equal(r.wave, 10);

	/* A key longer than a cache slot holds. */
	memset(big, 'b', sizeof(big));
	assert_int_equal(store_route_put(t->store, big, sizeof(big), 3, T0,
			     NULL),
	    STORE_OK);
	assert_int_equal(store_route_get(t->store, big, sizeof(big), &r),
	    STORE_OK);
	assert_int_equal(r.wave, 3);
	assert_int_equal(store_route_put(t->store, big, sizeof(big), 4, T0,
			     NULL),
	    STORE_OK);
	assert_int_equal(store_route_get(t->store, big, sizeof(big), &r),
	    STORE_OK);
	assert_int_equal(r.wave, 4);
}

/* Older (shorter) records read zero-filled; newer ones drop their tail. */
static void
test_record_versions(void **state)
{
	struct routing_tmp *t = *state;
	/* Route v1 cut after the wave: an "older" layout. */
	static const unsigned char route_old[] = { 1, 7, 0, 0, 0 };
	/* A "v2" route: v1 fields, then 4 unknown bytes. */
	static const unsigned char route_new[] = { 2, 9, 0, 0, 0, 5, 0, 0, 0, 0,
		0, 0, 0, 0x10, 0x27, 0, 0, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef };
	/* Wave: version, n, state, pct, then nothing. */
	static const unsigned char wave_old[] = { 1, 3, 0, 0, 0, 1, 30 };
	static const unsigned char bad[] = { 0, 1, 2 };
	static const unsigned char k3[] = { 0, 0, 0, 3 };
	static const unsigned char k8[] = { 0, 0, 0, 8 };
	struct store_route r;
	struct store_wave w, big;
	unsigned char wave_new[1024];
	char err[256];
	uint8_t st = 2;
	size_t len;
	struct upd u;

	/* A full current record of wave 8 to extend with a tail. */
	assert_int_equal(store_wave_update(t->store, 8, T0, set_state_cb, &st,
			     NULL),
	    STORE_OK);
	assert_int_equal(store_wave_get(t->store, 8, &big), STORE_OK);
	store_free(t->store);
	t->store = NULL;

	raw_put(t->dir, "objects", "old", 3, route_old, sizeof(route_old));
	raw_put(t->dir, "objects", "new", 3, route_new, sizeof(route_new));
	raw_put(t->dir, "objects", "bad", 3, bad, sizeof(bad));
	raw_put(t->dir, "objects", "empty", 5, "", 0);
	raw_put(t->dir, "waves", k3, 4, wave_old, sizeof(wave_old));
	{
		/* Re-read wave 8 raw and append 100 bytes of future fields. */
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi dbi;
		MDB_val k = { 4, (void *)(uintptr_t)k8 }, v;

		assert_int_equal(mdb_env_create(&env), 0);
		assert_int_equal(mdb_env_set_maxdbs(env, 5), 0);
		assert_int_equal(mdb_env_open(env, t->dir, MDB_NOTLS, 0600), 0);
		assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
		assert_int_equal(mdb_dbi_open(txn, "waves", 0, &dbi), 0);
		assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
		len = v.mv_size;
		assert_true(len + 100 <= sizeof(wave_new));
		memcpy(wave_new, v.mv_data, len);
		mdb_txn_abort(txn);
		mdb_env_close(env);
		wave_new[0] = 7;
		memset(wave_new + len, 0xee, 100);
		raw_put(t->dir, "waves", k8, 4, wave_new, len + 100);
	}

	t->store = store_open(t->dir, err, sizeof(err));
	assert_non_null(t->store);

	assert_int_equal(store_route_get(t->store, "old", 3, &r), STORE_OK);
	assert_int_equal(r.wave, 7);
	assert_int_equal(r.seq, 0);
	assert_int_equal(r.since_ms, 0);
	assert_int_equal(store_route_get(t->store, "new", 3, &r), STORE_OK);
	assert_int_equal(r.wave, 9);
	assert_int_equal(r.seq, 5);
	assert_int_equal(r.since_ms, 10000);

	assert_int_equal(store_wave_get(t->store, 3, &w), STORE_OK);
	assert_int_equal(w.n, 3);
	assert_int_equal(w.state, 1);
	assert_int_equal(w.pct, 30);
	assert_int_equal(w.seq, 0);
	assert_int_equal(w.flipped_ms, 0);
	assert_string_equal(w.reason, "");
	assert_string_equal(w.signoff, "");

	assert_int_equal(store_wave_get(t->store, 8, &w), STORE_OK);
	assert_memory_equal(&w, &big, sizeof(w));

	/* An update of an old record keeps what it had. */
	memset(&u, 0, sizeof(u));
	u.rc = STORE_OK;
	u.state = 2;
	assert_int_equal(store_wave_update(t->store, 3, T0, upd_cb, &u, NULL),
	    STORE_OK);
	assert_int_equal(u.seen.pct, 30);
	assert_int_equal(u.seen.state, 1);

	/* Version 0 or empty: damaged, an error, and the store unhealthy. */
	assert_true(store_is_healthy(t->store));
	assert_int_equal(store_route_get(t->store, "bad", 3, &r), STORE_ERROR);
	assert_false(store_is_healthy(t->store));
	assert_int_equal(store_route_get(t->store, "old", 3, &r), STORE_OK);
	assert_true(store_is_healthy(t->store));
	assert_int_equal(store_route_get(t->store, "empty", 5, &r),
	    STORE_ERROR);
	assert_false(store_is_healthy(t->store));
}

/* Run the tests. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_reopen, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_route_put_get_del, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_foreach_order, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wave_update, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_wave_brief, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_route_cache, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_read_bracket, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_record_versions, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
