/*
 * floe: test_admin.c -- the admin API driven through admin_handle on a real
 * store in a temporary directory: every endpoint, every error, and that a
 * refused or malformed request leaves the store as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "proxy/admin.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/stats.h"
#include "proxy/watch.h"
#include "proxy/worker.h"
#include "routing/store.h"
#include "routing/wave.h"
#include "tests/unit/routing_tmp.h"

#define UID 1000

/* A floe with only its store: what admin.c uses. */
struct fixture {
	struct routing_tmp *tmp;
	struct floe f;
	struct conf conf; /* [policy] and rollback_log are read */
	char rlog_path[320];
};

/* A part of /status at the top level, as floe's own keys are. */
static json_t *
top_status_cb(void *arg)
{
	(void)arg;
	return json_pack("{s:s,s:i}", "version", "test", "uptime_s", 42);
}

/* A part of /status under a key, as the triggers' is. */
static json_t *
triggers_status_cb(void *arg)
{
	(void)arg;
	return json_pack("{s:s}", "double", "watch");
}

/* A part of /metrics. */
static void
requests_metrics_cb(struct evbuffer *out, void *arg)
{
	(void)arg;
	evbuffer_add_printf(out,
	    "# TYPE floe_requests_total counter\n"
	    "floe_requests_total 7\n");
}

/* Test doubles of the triggers (proxy/watch.c runs on a live floe). */
static struct {
	int baselines;
	int ledger_calls;
	size_t ledger_records;
	json_t *fired; /* what the next watch_fired_take gives */
} watch_calls;

void
watch_baseline(struct watch *w, uint32_t n, struct wave_baseline *b)
{
	(void)w;
	(void)n;
	watch_calls.baselines++;
	b->requests = 200;
	b->errors = 3;
}

void
watch_ledger_added(struct floe *f, const struct store_kv *kv, size_t n)
{
	(void)f;
	(void)kv;
	watch_calls.ledger_calls++;
	watch_calls.ledger_records += n;
	/* The dirty record rolls wave 5 back. */
	watch_calls.fired = json_pack("[{s:i,s:s,s:s,s:s}]", "wave", 5,
	    "trigger", "reconcile", "measured", "gap", "evidence",
	    "measured gap, threshold clean or stale");
}

json_t *
watch_fired_take(struct watch *w)
{
	json_t *f = watch_calls.fired;

	(void)w;
	watch_calls.fired = NULL;
	return f;
}

json_t *
watch_report_errors(struct floe *f, uint32_t n, int side, uint64_t errors,
    uint64_t total, char *msg, size_t msglen)
{
	(void)f;
	(void)msg;
	(void)msglen;
	if (errors > 5)
		watch_calls.fired = json_pack("[{s:I,s:s,s:f}]", "wave",
		    (json_int_t)n, "trigger", "errors", "measured",
		    (double)errors / (double)total);
	return json_pack("{s:I,s:i,s:I,s:I}", "wave", (json_int_t)n, "side",
	    side, "errors", (json_int_t)errors, "total", (json_int_t)total);
}

/* Set up a store in a fresh directory. */
static int
setup(void **state)
{
	struct fixture *fx = xcalloc(1, sizeof(*fx));

	if ((fx->tmp = routing_tmp_open()) == NULL) {
		free(fx);
		return -1;
	}
	fx->f.store = fx->tmp->store;
	/* Most tests move waves freely: the cutover gate is off. */
	fx->conf.policy.gate_min_clean = 0;
	fx->conf.policy.gate_window_ms = 7 * 24 * 3600 * 1000LL;
	fx->conf.policy.decommission_min_clean = 10;
	fx->conf.policy.grace_ms = 14 * 24 * 3600 * 1000LL;
	fx->f.conf = &fx->conf;
	/* The rollback log, read back through GET /rollbacks. */
	snprintf(fx->rlog_path, sizeof(fx->rlog_path), "%s/rollback.log",
	    fx->tmp->dir);
	fx->conf.rollback_log = fx->rlog_path;
	if ((fx->f.rlog = rlog_open(fx->rlog_path, NULL, 0)) == NULL) {
		routing_tmp_close(fx->tmp);
		free(fx);
		return -1;
	}
	/* GET /status and /metrics: the parts, in the order floe adds them. */
	stats_add_status(&fx->f.stats, NULL, top_status_cb, NULL);
	stats_add_status(&fx->f.stats, "store", admin_store_status_cb, &fx->f);
	stats_add_status(&fx->f.stats, "waves", admin_waves_status_cb, &fx->f);
	stats_add_status(&fx->f.stats, "triggers", triggers_status_cb, NULL);
	stats_add_metrics(&fx->f.stats, requests_metrics_cb, NULL);
	*state = fx;
	return 0;
}

/* Close the store and remove its directory. */
static int
teardown(void **state)
{
	struct fixture *fx = *state;

	rlog_free(fx->f.rlog);
	routing_tmp_close(fx->tmp);
	stats_clear(&fx->f.stats);
	free(fx);
	return 0;
}

/* Serve METHOD TARGET BODY as peer UID; the reply's JSON in *OUT (or NULL). */
static int
call(struct fixture *fx, const char *method, const char *target,
    const char *body, json_t **out)
{
	struct admin_reply rep;
	struct evbuffer *in = evbuffer_new();
	int status;

	if (body != NULL)
		evbuffer_add(in, body, strlen(body));
	assert_int_equal(admin_handle(&fx->f, method, target, strlen(target),
			     in, UID, &rep, NULL, NULL),
	    0);
	evbuffer_free(in);
	assert_non_null(rep.body);
	assert_int_equal(rep.len, strlen(rep.body));
	assert_non_null(rep.content_type);
	if (out != NULL) {
		assert_string_equal(rep.content_type, "application/json");
		*out = json_loadb(rep.body, rep.len, 0, NULL);
		if (*out == NULL)
			fail_msg("not JSON: %s", rep.body);
	}
	status = rep.status;
	free(rep.body);
	return status;
}

/* Serve a request expecting STATUS; the reply's JSON. Caller decrefs. */
static json_t *
expect(struct fixture *fx, int status, const char *method, const char *target,
    const char *body)
{
	json_t *j;
	int got;

	got = call(fx, method, target, body, &j);
	if (got != status)
		fail_msg("%s %s: status %d, want %d: %s", method, target, got,
		    status, json_dumps(j, JSON_COMPACT));
	return j;
}

/* String member KEY of J ("" when absent or not a string). */
static const char *
str(const json_t *j, const char *key)
{
	const json_t *v = json_object_get(j, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

/* Integer member KEY of J (-1 when absent). */
static json_int_t
num(const json_t *j, const char *key)
{
	const json_t *v = json_object_get(j, key);

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* The raw body of a reply expecting 200. Caller frees. */
static char *
raw(struct fixture *fx, const char *method, const char *target)
{
	struct admin_reply rep;

	admin_handle(&fx->f, method, target, strlen(target), NULL, UID, &rep,
	    NULL, NULL);
	assert_int_equal(rep.status, 200);
	return rep.body;
}

/* GET /rollbacks?after=AFTER: the lines, checking "next". Caller frees. */
static json_t *
rollbacks(struct fixture *fx, unsigned after)
{
	char target[64];
	json_t *j, *list;

	snprintf(target, sizeof(target), "/rollbacks?after=%u", after);
	j = expect(fx, 200, "GET", target, NULL);
	list = json_incref(json_object_get(j, "rollbacks"));
	assert_true(json_is_array(list));
	assert_int_equal(num(j, "next"), after + json_array_size(list));
	json_decref(j);
	return list;
}

/* How many lines the rollback log has. */
static size_t
rollback_lines(struct fixture *fx)
{
	json_t *list = rollbacks(fx, 0);
	size_t n = json_array_size(list);

	json_decref(list);
	return n;
}

/* The store's routes and waves as one string. Caller frees. */
static char *
snapshot(struct fixture *fx)
{
	char *routes = raw(fx, "GET", "/routes");
	char *waves = raw(fx, "GET", "/waves");
	char *s;

	s = xasprintf("%s %s", routes, waves);
	free(routes);
	free(waves);
	return s;
}

/*
 * After a refusal: routes and waves are as BEFORE and exactly one event
 * was added since SEQ, of type TYPE (refusals are recorded).
 */
static void
assert_refused(struct fixture *fx, const char *before, uint64_t seq,
    const char *type)
{
	char *after = snapshot(fx), target[64];
	json_t *j, *list;

	assert_string_equal(before, after);
	free(after);
	assert_int_equal(store_last_seq(fx->f.store), seq + 1);
	snprintf(target, sizeof(target), "/events?after=%llu",
	    (unsigned long long)seq);
	j = expect(fx, 200, "GET", target, NULL);
	list = json_object_get(j, "events");
	assert_int_equal(json_array_size(list), 1);
	assert_string_equal(str(json_array_get(list, 0), "type"), type);
	assert_string_equal(str(json_array_get(list, 0), "actor"), "uid 1000");
	json_decref(j);
}

/* Set route OBJECT -> WAVE through the API, expecting 200. */
static void
route_set(struct fixture *fx, const char *object, unsigned wave)
{
	char *body = xasprintf("{\"object\":\"%s\",\"wave\":%u}", object, wave);

	json_decref(expect(fx, 200, "POST", "/routes", body));
	free(body);
}

/* store_wave_update callback forcing the state in ARG. */
static int
force_state_cb(struct store_wave *w, json_t *ev, bool *record, void *arg)
{
	(void)ev;
	(void)record;
	w->state = *(int *)arg;
	return STORE_OK;
}

/* Put wave N in STATE behind the API's back (no transition for it yet). */
static void
force_state(struct fixture *fx, uint32_t n, int state)
{
	json_t *ev = json_pack("{s:s}", "type", "test");

	assert_int_equal(store_wave_update(fx->f.store, n, units_now_ms(),
			     force_state_cb, &state, ev),
	    STORE_OK);
	json_decref(ev);
}

/*
 * GET /status: the registry's parts in order: the top-level keys first,
 * then admin's store and wave count, then the triggers'.
 */
static void
test_status(void **state)
{
	struct fixture *fx = *state;
	json_t *j, *waves;
	const char *key;
	json_t *v;
	int i = 0;
	static const char *const order[] = { "version", "uptime_s", "store",
		"waves", "triggers" };

	route_set(fx, "db.orders", 3);
	route_set(fx, "mkt.*", 4);
	force_state(fx, 4, WAVE_LAKEHOUSE);
	j = expect(fx, 200, "GET", "/status", NULL);
	json_object_foreach(j, key, v) {
		assert_true(i < 5);
		assert_string_equal(key, order[i]);
		i++;
	}
	assert_int_equal(i, 5);
	assert_string_equal(str(j, "version"), "test");
	assert_true(json_is_true(
	    json_object_get(json_object_get(j, "store"), "healthy")));
	assert_int_equal(num(json_object_get(j, "store"), "last_seq"), 3);
	waves = json_object_get(j, "waves");
	assert_int_equal(json_object_size(waves), WAVE_NSTATES);
	assert_int_equal(num(waves, "warehouse"), 1);
	assert_int_equal(num(waves, "lakehouse"), 1);
	assert_int_equal(num(waves, "canary"), 0);
	assert_int_equal(num(waves, "rolled_back"), 0);
	json_decref(j);
	/* Compact output. */
	{
		char *body = raw(fx, "GET", "/status");

		assert_null(strchr(body, '\n'));
		assert_null(strstr(body, ": "));
		free(body);
	}
}

/*
 * Without a store (it could not be opened), /status and /metrics are
 * still served, with their methods checked; every other path, known or
 * not, is a 503.
 */
static void
test_no_store(void **state)
{
	static const struct {
		const char *method;
		const char *target;
		int status;
	} tab[] = {
		{ "GET", "/status", 200 },
		{ "POST", "/status", 405 },
		{ "GET", "/routes", 503 },
		{ "POST", "/waves/3/flip", 503 },
		{ "GET", "/nosuch", 503 },
		{ "GET", "/", 503 },
	};
	struct fixture *fx = *state;
	struct store *st = fx->f.store;
	struct admin_reply rep;
	json_t *j;
	size_t i;

	fx->f.store = NULL;
	for (i = 0; i < nitems(tab); i++) {
		j = expect(fx, tab[i].status, tab[i].method, tab[i].target,
		    NULL);
		if (tab[i].status == 503)
			assert_string_equal(str(json_object_get(j, "error"),
						"message"),
			    "the store is not open");
		json_decref(j);
	}
	assert_int_equal(admin_handle(&fx->f, "GET", "/metrics", 8, NULL, UID,
			     &rep, NULL, NULL),
	    0);
	assert_int_equal(rep.status, 200);
	free(rep.body);
	fx->f.store = st;
}

/* GET /metrics: the registry's text with the Prometheus content type. */
static void
test_metrics(void **state)
{
	struct fixture *fx = *state;
	struct admin_reply rep;

	admin_handle(&fx->f, "GET", "/metrics", 8, NULL, UID, &rep, NULL, NULL);
	assert_int_equal(rep.status, 200);
	assert_string_equal(rep.content_type, "text/plain; version=0.0.4");
	assert_non_null(strstr(rep.body, "floe_requests_total 7\n"));
	free(rep.body);
}

/* POST, GET and DELETE /routes, with their events. */
static void
test_routes(void **state)
{
	struct fixture *fx = *state;
	json_t *j, *list, *ev;
	uint64_t seq;
	int64_t t, before = units_now_ms();

	j = expect(fx, 200, "POST", "/routes",
	    "{\"object\":\"db.orders\",\"wave\":3}");
	assert_string_equal(str(j, "object"), "db.orders");
	assert_int_equal(num(j, "wave"), 3);
	assert_int_equal(units_time_parse(str(j, "since"), &t), 0);
	assert_true(t >= before - 1 && t <= units_now_ms() + 1);
	json_decref(j);
	/* Rules, the REST form (canonicalised), and a re-assignment. */
	json_decref(expect(fx, 200, "POST", "/routes",
	    "{\"object\":\"mkt.*\",\"wave\":2147483647}"));
	j = expect(fx, 200, "POST", "/routes",
	    "{\"object\":\"my.db%1Forders\",\"wave\":0}");
	assert_string_equal(str(j, "object"), "my.db%1Forders");
	json_decref(j);
	route_set(fx, "db.orders", 5);

	j = expect(fx, 200, "GET", "/routes", NULL);
	list = json_object_get(j, "routes");
	assert_int_equal(json_array_size(list), 3);
	assert_string_equal(str(json_array_get(list, 0), "object"),
	    "db.orders");
	assert_int_equal(num(json_array_get(list, 0), "wave"), 5);
	assert_string_equal(str(json_array_get(list, 1), "object"), "mkt.*");
	assert_int_equal(num(json_array_get(list, 1), "wave"), 2147483647);
	assert_string_equal(str(json_array_get(list, 2), "object"),
	    "my.db%1Forders");
	json_decref(j);

	/* The same assignment again writes nothing. */
	seq = store_last_seq(fx->f.store);
	route_set(fx, "db.orders", 5);
	assert_int_equal(store_last_seq(fx->f.store), seq);

	/* The events say who and what. */
	j = expect(fx, 200, "GET", "/events?after=3", NULL);
	ev = json_array_get(json_object_get(j, "events"), 0);
	assert_string_equal(str(ev, "type"), "route.set");
	assert_string_equal(str(ev, "object"), "db.orders");
	assert_int_equal(num(ev, "wave"), 5);
	assert_int_equal(num(ev, "from_wave"), 3);
	assert_string_equal(str(ev, "actor"), "uid 1000");
	json_decref(j);

	/* Delete: plain, percent-encoded, then gone. */
	j = expect(fx, 200, "DELETE", "/routes/db.orders", NULL);
	assert_string_equal(str(j, "object"), "db.orders");
	assert_int_equal(num(j, "wave"), 5);
	json_decref(j);
	json_decref(expect(fx, 200, "DELETE", "/routes/mkt.%2A", NULL));
	json_decref(
	    expect(fx, 200, "DELETE", "/routes/my.db%251Forders", NULL));
	json_decref(expect(fx, 404, "DELETE", "/routes/db.orders", NULL));
	j = expect(fx, 200, "GET", "/routes", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "routes")), 0);
	json_decref(j);
	j = expect(fx, 200, "GET", "/events?after=4", NULL);
	ev = json_array_get(json_object_get(j, "events"), 0);
	assert_string_equal(str(ev, "type"), "route.rm");
	assert_int_equal(num(ev, "from_wave"), 5);
	assert_string_equal(str(ev, "actor"), "uid 1000");
	json_decref(j);
}

/*
 * GET /routes, /waves and /waves/N in pages: ?limit=N gives N and "next", the
 * key to ask ?after= for the next page; the pages together are the
 * whole list, in order, and the last one says "next": null.
 */
static void
test_paging(void **state)
{
	static const char *const objects[] = { "db.a", "db.b", "db.c", "db.d",
		"db.e", "mkt.*", "zz.last" };
	struct fixture *fx = *state;
	json_t *all, *j, *list, *next;
	char target[128], *after = NULL;
	size_t i, seen = 0, pages = 0;

	for (i = 0; i < nitems(objects); i++)
		route_set(fx, objects[i], (unsigned)(i % 3 + 1) * 10);
	all = expect(fx, 200, "GET", "/routes", NULL);
	assert_int_equal(json_array_size(json_object_get(all, "routes")),
	    nitems(objects));
	assert_true(json_is_null(json_object_get(all, "next")));
	do {
		if (after == NULL)
			snprintf(target, sizeof(target), "/routes?limit=3");
		else
			snprintf(target, sizeof(target),
			    "/routes?limit=3&after=%s", after);
		free(after);
		after = NULL;
		j = expect(fx, 200, "GET", target, NULL);
		list = json_object_get(j, "routes");
		assert_true(json_array_size(list) >= 1);
		assert_true(json_array_size(list) <= 3);
		for (i = 0; i < json_array_size(list); i++, seen++)
			assert_true(json_equal(json_array_get(list, i),
			    json_array_get(json_object_get(all, "routes"),
				seen)));
		next = json_object_get(j, "next");
		if (json_is_string(next)) {
			assert_string_equal(json_string_value(next),
			    str(json_array_get(list, 2), "object"));
			after = xstrdup(json_string_value(next));
		} else
			assert_true(json_is_null(next));
		json_decref(j);
		pages++;
	} while (after != NULL);
	assert_int_equal(seen, nitems(objects));
	assert_int_equal(pages, 3);
	json_decref(all);
	/* A page that ends the list exactly still says next; then none. */
	j = expect(fx, 200, "GET", "/routes?limit=7", NULL);
	assert_true(json_is_null(json_object_get(j, "next")));
	json_decref(j);
	j = expect(fx, 200, "GET", "/routes?limit=6", NULL);
	assert_string_equal(str(j, "next"), "mkt.*");
	json_decref(j);
	j = expect(fx, 200, "GET", "/routes?after=mkt.*", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "routes")), 1);
	assert_string_equal(str(json_array_get(json_object_get(j, "routes"), 0),
				"object"),
	    "zz.last");
	json_decref(j);
	/* An object that has no route still marks a place in the order. */
	j = expect(fx, 200, "GET", "/routes?after=db.bb", NULL);
	assert_string_equal(str(json_array_get(json_object_get(j, "routes"), 0),
				"object"),
	    "db.c");
	json_decref(j);
	json_decref(expect(fx, 400, "GET", "/routes?limit=0", NULL));
	json_decref(expect(fx, 400, "GET", "/routes?limit=x", NULL));
	json_decref(expect(fx, 400, "GET", "/routes?after=", NULL));

	/* Waves 10, 20, 30: two pages of two. */
	j = expect(fx, 200, "GET", "/waves?limit=2", NULL);
	list = json_object_get(j, "waves");
	assert_int_equal(json_array_size(list), 2);
	assert_int_equal(num(json_array_get(list, 0), "wave"), 10);
	assert_int_equal(num(json_array_get(list, 1), "wave"), 20);
	assert_int_equal(num(j, "next"), 20);
	json_decref(j);
	j = expect(fx, 200, "GET", "/waves?limit=2&after=20", NULL);
	list = json_object_get(j, "waves");
	assert_int_equal(json_array_size(list), 1);
	assert_int_equal(num(json_array_get(list, 0), "wave"), 30);
	assert_true(json_is_null(json_object_get(j, "next")));
	json_decref(j);
	j = expect(fx, 200, "GET", "/waves?after=0", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "waves")), 3);
	json_decref(j);
	j = expect(fx, 200, "GET", "/waves", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "waves")), 3);
	assert_true(json_is_null(json_object_get(j, "next")));
	json_decref(j);
	json_decref(expect(fx, 400, "GET", "/waves?limit=0", NULL));
	json_decref(expect(fx, 400, "GET", "/waves?after=-1", NULL));

	/* A wave's objects and rules, counted together in a page. */
	j = expect(fx, 200, "GET", "/waves/10?limit=2", NULL);
	list = json_object_get(j, "objects");
	assert_int_equal(json_array_size(list), 2);
	assert_string_equal(json_string_value(json_array_get(list, 0)), "db.a");
	assert_string_equal(json_string_value(json_array_get(list, 1)), "db.d");
	assert_string_equal(str(j, "next"), "db.d");
	json_decref(j);
	j = expect(fx, 200, "GET", "/waves/10?limit=2&after=db.d", NULL);
	list = json_object_get(j, "objects");
	assert_int_equal(json_array_size(list), 1);
	assert_string_equal(json_string_value(json_array_get(list, 0)),
	    "zz.last");
	assert_true(json_is_null(json_object_get(j, "next")));
	json_decref(j);
	j = expect(fx, 200, "GET", "/waves/30?limit=1", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "objects")), 1);
	assert_int_equal(json_array_size(json_object_get(j, "rules")), 0);
	assert_string_equal(str(j, "next"), "db.c");
	json_decref(j);
	j = expect(fx, 200, "GET", "/waves/30?limit=1&after=db.c", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "objects")), 0);
	assert_string_equal(json_string_value(
				json_array_get(json_object_get(j, "rules"), 0)),
	    "mkt.*");
	assert_true(json_is_null(json_object_get(j, "next")));
	json_decref(j);
	j = expect(fx, 200, "GET", "/waves/30", NULL);
	assert_true(json_is_null(json_object_get(j, "next")));
	json_decref(j);
	json_decref(expect(fx, 404, "GET", "/waves/99", NULL));
	json_decref(expect(fx, 400, "GET", "/waves/10?limit=0", NULL));
	json_decref(expect(fx, 400, "GET", "/waves/10?after=", NULL));
}

/* GET /resolve: unassigned, by object, by rule, canary per client. */
static void
test_resolve(void **state)
{
	struct fixture *fx = *state;
	json_t *j;
	char target[128], msg[256];
	int i, lake = 0;

	j = expect(fx, 200, "GET", "/resolve/db.orders", NULL);
	assert_string_equal(str(j, "object"), "db.orders");
	assert_string_equal(str(j, "target"), "warehouse");
	assert_string_equal(str(j, "write_target"), "warehouse");
	assert_string_equal(str(j, "why"), "unassigned");
	assert_true(json_is_null(json_object_get(j, "wave")));
	assert_true(json_is_null(json_object_get(j, "matched")));
	assert_int_equal(num(j, "version"), 0);
	json_decref(j);

	route_set(fx, "db.*", 7);
	route_set(fx, "db.orders", 3);
	assert_int_equal(wave_flip(fx->f.store, 3, WAVE_LAKEHOUSE, 100, NULL,
			     "test", NULL, units_now_ms(), msg, sizeof(msg)),
	    WAVE_OK);
	j = expect(fx, 200, "GET", "/resolve/db.orders", NULL);
	assert_string_equal(str(j, "target"), "lakehouse");
	assert_string_equal(str(j, "write_target"), "warehouse");
	assert_int_equal(num(j, "wave"), 3);
	assert_string_equal(str(j, "state"), "lakehouse");
	assert_string_equal(str(j, "why"), "object");
	assert_string_equal(str(j, "matched"), "db.orders");
	assert_int_equal(num(j, "version"), 3);
	assert_true(
	    json_is_false(json_object_get(j, "refuses_warehouse_writes")));
	json_decref(j);

	j = expect(fx, 200, "GET", "/resolve/db.customers", NULL);
	assert_string_equal(str(j, "target"), "warehouse");
	assert_int_equal(num(j, "wave"), 7);
	assert_string_equal(str(j, "state"), "warehouse");
	assert_string_equal(str(j, "why"), "rule");
	assert_string_equal(str(j, "matched"), "db.*");
	json_decref(j);

	/* Frozen: writes to the warehouse copy refused. */
	force_state(fx, 7, WAVE_FROZEN);
	j = expect(fx, 200, "GET", "/resolve/db.x.y", NULL);
	assert_string_equal(str(j, "write_target"), "lakehouse");
	assert_true(
	    json_is_true(json_object_get(j, "refuses_warehouse_writes")));
	json_decref(j);

	/* A 50% canary: sticky per client, and both sides occur. */
	route_set(fx, "c.t", 9);
	json_decref(expect(fx, 200, "POST", "/waves/9/flip",
	    "{\"to\":\"canary\",\"pct\":50}"));
	for (i = 0; i < 64; i++) {
		json_t *again;

		snprintf(target, sizeof(target),
		    "/resolve/c.t?client=app%%20%d", i);
		j = expect(fx, 200, "GET", target, NULL);
		assert_string_equal(str(j, "state"), "canary");
		assert_int_equal(num(j, "pct"), 50);
		again = expect(fx, 200, "GET", target, NULL);
		assert_string_equal(str(j, "target"), str(again, "target"));
		if (strcmp(str(j, "target"), "lakehouse") == 0)
			lake++;
		if (i == 0) {
			char want[16];

			snprintf(want, sizeof(want), "app %d", i);
			assert_string_equal(str(j, "client"), want);
		}
		json_decref(again);
		json_decref(j);
	}
	assert_true(lake > 0 && lake < 64);

	/* The REST form in the path, percent-encoded once more. */
	route_set(fx, "my.db%1Forders", 1);
	j = expect(fx, 200, "GET", "/resolve/my.db%251Forders", NULL);
	assert_string_equal(str(j, "object"), "my.db%1Forders");
	assert_string_equal(str(j, "why"), "object");
	json_decref(j);
}

/* GET /waves and /waves/{n}: records and waves known only by routes. */
static void
test_waves(void **state)
{
	struct fixture *fx = *state;
	json_t *j, *w, *list;
	char msg[256];

	j = expect(fx, 200, "GET", "/waves", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "waves")), 0);
	json_decref(j);

	route_set(fx, "db.orders", 3);
	route_set(fx, "db.items", 3);
	route_set(fx, "mkt.*", 3);
	route_set(fx, "fin.ledger", 1);
	assert_int_equal(wave_flip(fx->f.store, 3, WAVE_LAKEHOUSE, 100, NULL,
			     "uid 5", "clean for a week", units_now_ms(), msg,
			     sizeof(msg)),
	    WAVE_OK);
	force_state(fx, 8, WAVE_ROLLED_BACK);

	j = expect(fx, 200, "GET", "/waves", NULL);
	list = json_object_get(j, "waves");
	assert_int_equal(json_array_size(list), 3);
	w = json_array_get(list, 0);
	assert_int_equal(num(w, "wave"), 1);
	assert_string_equal(str(w, "state"), "warehouse");
	assert_int_equal(num(w, "objects"), 1);
	assert_int_equal(num(w, "rules"), 0);
	assert_true(json_is_null(json_object_get(w, "since")));
	w = json_array_get(list, 1);
	assert_int_equal(num(w, "wave"), 3);
	assert_string_equal(str(w, "state"), "lakehouse");
	assert_int_equal(num(w, "objects"), 2);
	assert_int_equal(num(w, "rules"), 1);
	assert_string_equal(str(w, "reason"), "clean for a week");
	assert_string_equal(str(w, "actor"), "uid 5");
	assert_true(json_is_string(json_object_get(w, "since")));
	w = json_array_get(list, 2);
	assert_int_equal(num(w, "wave"), 8);
	assert_string_equal(str(w, "state"), "rolled_back");
	assert_int_equal(num(w, "objects"), 0);
	json_decref(j);

	j = expect(fx, 200, "GET", "/waves/3", NULL);
	assert_int_equal(num(j, "wave"), 3);
	assert_string_equal(str(j, "state"), "lakehouse");
	assert_true(json_is_string(json_object_get(j, "flipped")));
	assert_true(json_is_null(json_object_get(j, "frozen")));
	list = json_object_get(j, "objects");
	assert_int_equal(json_array_size(list), 2);
	assert_string_equal(json_string_value(json_array_get(list, 0)),
	    "db.items");
	assert_string_equal(json_string_value(json_array_get(list, 1)),
	    "db.orders");
	list = json_object_get(j, "rules");
	assert_int_equal(json_array_size(list), 1);
	assert_string_equal(json_string_value(json_array_get(list, 0)),
	    "mkt.*");
	json_decref(j);

	/* A wave known only by its route, and one only by its record. */
	j = expect(fx, 200, "GET", "/waves/1", NULL);
	assert_string_equal(str(j, "state"), "warehouse");
	assert_int_equal(json_array_size(json_object_get(j, "objects")), 1);
	json_decref(j);
	j = expect(fx, 200, "GET", "/waves/8", NULL);
	assert_string_equal(str(j, "state"), "rolled_back");
	assert_int_equal(json_array_size(json_object_get(j, "objects")), 0);
	json_decref(j);
}

/* flip, rollback, ack through the API; refusals are 409 and change nothing. */
static void
test_transitions(void **state)
{
	struct fixture *fx = *state;
	json_t *j, *e, *ev;
	char *before;
	uint64_t seq;

	route_set(fx, "db.orders", 3);
	j = expect(fx, 200, "POST", "/waves/3/flip",
	    "{\"to\":\"canary\",\"pct\":10,\"reason\":\"first tenth\"}");
	assert_int_equal(num(j, "wave"), 3);
	assert_string_equal(str(j, "from"), "warehouse");
	assert_string_equal(str(j, "state"), "canary");
	assert_int_equal(num(j, "pct"), 10);
	assert_string_equal(str(j, "actor"), "uid 1000");
	assert_string_equal(str(j, "reason"), "first tenth");
	assert_int_equal(num(j, "from_pct"), 0);
	assert_string_equal(str(j, "message"),
	    "wave 3 flipped from warehouse to canary: 0 % → 10 %");
	json_decref(j);

	/* The same share again: refused, and nothing changes. */
	before = snapshot(fx);
	seq = store_last_seq(fx->f.store);
	j = expect(fx, 409, "POST", "/waves/3/flip",
	    "{\"to\":\"canary\",\"pct\":10}");
	e = json_object_get(j, "error");
	assert_string_equal(str(e, "type"), "RefusedException");
	assert_string_equal(str(e, "message"), "wave 3 is already at 10 %");
	json_decref(j);
	assert_refused(fx, before, seq, "wave.refused");
	free(before);

	j = expect(fx, 200, "POST", "/waves/3/flip", "{\"to\":\"lakehouse\"}");
	assert_string_equal(str(j, "from"), "canary");
	assert_string_equal(str(j, "state"), "lakehouse");
	assert_int_equal(num(j, "from_pct"), 10);
	json_decref(j);

	assert_int_equal(rollback_lines(fx), 0);
	j = expect(fx, 200, "POST", "/waves/3/rollback",
	    "{\"reason\":\"dashboards wrong\"}");
	assert_string_equal(str(j, "from"), "lakehouse");
	assert_string_equal(str(j, "state"), "rolled_back");
	assert_string_equal(str(j, "reason"), "dashboards wrong");
	json_decref(j);
	/* The operator's rollback is in the rollback log; it measures nothing.
	 */
	j = rollbacks(fx, 0);
	assert_int_equal(json_array_size(j), 1);
	e = json_array_get(j, 0);
	assert_int_equal(num(e, "wave"), 3);
	assert_string_equal(str(e, "from"), "lakehouse");
	assert_string_equal(str(e, "to"), "rolled_back");
	assert_string_equal(str(e, "trigger"), "operator");
	assert_string_equal(str(e, "actor"), "uid 1000");
	assert_string_equal(str(e, "reason"), "dashboards wrong");
	assert_true(json_is_null(json_object_get(e, "measured")));
	assert_true(json_is_null(json_object_get(e, "threshold")));
	assert_int_equal(num(e, "held_ms"), 0);
	assert_int_equal(json_array_size(json_object_get(e, "objects")), 1);
	assert_string_equal(json_string_value(
				json_array_get(json_object_get(e, "objects"),
				    0)),
	    "db.orders");
	json_decref(j);

	/* Rolled back: a flip is refused until ack; nothing changes. */
	before = snapshot(fx);
	seq = store_last_seq(fx->f.store);
	j = expect(fx, 409, "POST", "/waves/3/flip", "{\"to\":\"lakehouse\"}");
	e = json_object_get(j, "error");
	assert_string_equal(str(e, "type"), "RefusedException");
	assert_int_equal(num(e, "code"), 409);
	assert_non_null(strstr(str(e, "message"), "wave ack 3"));
	json_decref(j);
	assert_refused(fx, before, seq, "wave.refused");
	free(before);

	/* ack takes no body, or an empty one. */
	j = expect(fx, 200, "POST", "/waves/3/ack", NULL);
	assert_string_equal(str(j, "from"), "rolled_back");
	assert_string_equal(str(j, "state"), "warehouse");
	json_decref(j);

	/* The transitions' events carry the operator. */
	j = expect(fx, 200, "GET", "/events?after=1&limit=1", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "events")), 1);
	ev = json_array_get(json_object_get(j, "events"), 0);
	assert_int_equal(num(ev, "seq"), 2);
	assert_string_equal(str(ev, "actor"), "uid 1000");
	json_decref(j);

	/* A canary of 100% is the lakehouse; rollback with an empty body. */
	j = expect(fx, 200, "POST", "/waves/3/flip",
	    "{\"to\":\"canary\",\"pct\":100}");
	assert_string_equal(str(j, "state"), "lakehouse");
	assert_int_equal(num(j, "pct"), 100);
	json_decref(j);
	/* A step down to a canary share is a flip, not a rollback. */
	j = expect(fx, 200, "POST", "/waves/3/flip",
	    "{\"to\":\"canary\",\"pct\":40}");
	assert_string_equal(str(j, "from"), "lakehouse");
	assert_string_equal(str(j, "state"), "canary");
	assert_int_equal(num(j, "pct"), 40);
	assert_int_equal(num(j, "from_pct"), 100);
	assert_string_equal(str(j, "message"),
	    "wave 3 stepped down from lakehouse to canary: 100 % → 40 %");
	json_decref(j);
	assert_int_equal(rollback_lines(fx), 1);
	j = expect(fx, 200, "POST", "/waves/3/rollback", "");
	assert_string_equal(str(j, "state"), "rolled_back");
	json_decref(j);
	j = rollbacks(fx, 1);
	assert_int_equal(json_array_size(j), 1);
	assert_true(
	    json_is_null(json_object_get(json_array_get(j, 0), "reason")));
	json_decref(j);
}

/* Route changes never skip a gate nor strand a frozen wave's objects. */
static void
test_route_guard(void **state)
{
	struct fixture *fx = *state;
	json_t *j;
	char *before;
	uint64_t seq;

	route_set(fx, "db.orders", 3);
	route_set(fx, "db.items", 4);
	json_decref(
	    expect(fx, 200, "POST", "/waves/3/flip", "{\"to\":\"lakehouse\"}"));

	before = snapshot(fx);
	seq = store_last_seq(fx->f.store);
	j = expect(fx, 409, "POST", "/routes",
	    "{\"object\":\"db.items\",\"wave\":3}");
	assert_non_null(strstr(str(json_object_get(j, "error"), "message"),
	    "wave 3 is lakehouse"));
	json_decref(j);
	assert_refused(fx, before, seq, "route.refused");
	seq = store_last_seq(fx->f.store);
	json_decref(expect(fx, 409, "POST", "/routes",
	    "{\"object\":\"new.*\",\"wave\":3}"));
	assert_refused(fx, before, seq, "route.refused");

	/* Leaving a lakehouse wave is the safe direction. */
	route_set(fx, "db.orders", 4);
	json_decref(expect(fx, 200, "POST", "/routes",
	    "{\"object\":\"db.items\",\"wave\":3,\"force\":true}"));

	/* Frozen: its objects may not leave, by set or by delete. */
	force_state(fx, 3, WAVE_FROZEN);
	free(before);
	before = snapshot(fx);
	seq = store_last_seq(fx->f.store);
	j = expect(fx, 409, "POST", "/routes",
	    "{\"object\":\"db.items\",\"wave\":4}");
	assert_non_null(strstr(str(json_object_get(j, "error"), "message"),
	    "db.items is in wave 3, which is frozen"));
	json_decref(j);
	assert_refused(fx, before, seq, "route.refused");
	seq = store_last_seq(fx->f.store);
	json_decref(expect(fx, 409, "DELETE", "/routes/db.items", NULL));
	assert_refused(fx, before, seq, "route.refused");
	free(before);
	json_decref(
	    expect(fx, 200, "DELETE", "/routes/db.items?force=1", NULL));
}

/* The events since SEQ (a JSON array). Caller decrefs. */
static json_t *
events_since(struct fixture *fx, uint64_t seq)
{
	char target[64];
	json_t *j, *list;

	snprintf(target, sizeof(target), "/events?after=%llu",
	    (unsigned long long)seq);
	j = expect(fx, 200, "GET", target, NULL);
	list = json_incref(json_object_get(j, "events"));
	json_decref(j);
	return list;
}

/*
 * POST /routes/import: JSON lines and arrays; routes already so are
 * unchanged; one event with per-wave counts; a re-run writes nothing.
 */
static void
test_routes_import(void **state)
{
	struct fixture *fx = *state;
	struct store_route rt, orders;
	json_t *j, *ev, *list;
	uint64_t seq;

	route_set(fx, "db.orders", 3);
	route_set(fx, "db.items", 4);
	json_decref(
	    expect(fx, 200, "POST", "/waves/3/flip", "{\"to\":\"lakehouse\"}"));
	assert_int_equal(store_route_get(fx->f.store, "db\x1eorders", 9,
			     &orders),
	    STORE_OK);
	seq = store_last_seq(fx->f.store);

	/* db.orders stays in the lakehouse wave 3: unchanged, no guard. */
	j = expect(fx, 200, "POST", "/routes/import",
	    "{\"object\":\"db.a\",\"wave\":1}\n"
	    "\n"
	    "{\"object\":\"db.orders\",\"wave\":3}\r\n"
	    "{\"object\":\"db.items\",\"wave\":6}\n"
	    "{\"object\":\"mkt.*\",\"wave\":1,\"force\":false}\n");
	assert_int_equal(num(j, "set"), 3);
	assert_int_equal(num(j, "unchanged"), 1);
	assert_int_equal(num(j, "seq"), (json_int_t)seq + 1);
	assert_int_equal(json_object_size(j), 3);
	json_decref(j);
	assert_int_equal(store_last_seq(fx->f.store), seq + 1);
	assert_int_equal(store_route_get(fx->f.store, "db\x1eorders", 9, &rt),
	    STORE_OK);
	assert_int_equal(rt.seq, orders.seq);
	assert_int_equal(rt.since_ms, orders.since_ms);
	assert_int_equal(store_route_get(fx->f.store, "db\x1eitems", 8, &rt),
	    STORE_OK);
	assert_int_equal(rt.wave, 6);
	assert_int_equal(rt.seq, seq + 1);
	assert_int_equal(store_route_get(fx->f.store, "mkt\x1d", 4, &rt),
	    STORE_OK);
	assert_int_equal(rt.wave, 1);

	list = events_since(fx, seq);
	assert_int_equal(json_array_size(list), 1);
	ev = json_array_get(list, 0);
	assert_string_equal(str(ev, "type"), "route.import");
	assert_string_equal(str(ev, "actor"), "uid 1000");
	assert_int_equal(num(ev, "records"), 4);
	assert_int_equal(num(ev, "set"), 3);
	assert_int_equal(num(ev, "unchanged"), 1);
	assert_int_equal(num(json_object_get(ev, "waves"), "1"), 2);
	assert_int_equal(num(json_object_get(ev, "waves"), "6"), 1);
	assert_int_equal(json_object_size(json_object_get(ev, "waves")), 2);
	assert_null(json_object_get(ev, "forced"));
	json_decref(list);

	/* An array; then the same array again changes nothing. */
	seq = store_last_seq(fx->f.store);
	j = expect(fx, 200, "POST", "/routes/import",
	    " [ {\"object\":\"db.x\",\"wave\":7} ,\n"
	    "{\"object\":\"my.db%1Fy\",\"wave\":7}]\n");
	assert_int_equal(num(j, "set"), 2);
	assert_int_equal(num(j, "unchanged"), 0);
	json_decref(j);
	assert_int_equal(store_last_seq(fx->f.store), seq + 1);
	j = expect(fx, 200, "POST", "/routes/import",
	    "[{\"object\":\"db.x\",\"wave\":7},"
	    "{\"object\":\"my.db%1Fy\",\"wave\":7}]");
	assert_int_equal(num(j, "set"), 0);
	assert_int_equal(num(j, "unchanged"), 2);
	assert_int_equal(num(j, "seq"), (json_int_t)seq + 1);
	json_decref(j);
	assert_int_equal(store_last_seq(fx->f.store), seq + 1);

	/* One route over several lines; the same object twice, same wave. */
	j = expect(fx, 200, "POST", "/routes/import",
	    "{\n  \"object\": \"db.z\",\n  \"wave\": 8\n}\n");
	assert_int_equal(num(j, "set"), 1);
	json_decref(j);
	j = expect(fx, 200, "POST", "/routes/import",
	    "{\"object\":\"db.w\",\"wave\":9}\n"
	    "{\"object\":\"db.w\",\"wave\":9}\n");
	assert_int_equal(num(j, "set"), 1);
	assert_int_equal(num(j, "unchanged"), 1);
	json_decref(j);

	json_decref(expect(fx, 405, "GET", "/routes/import", NULL));
}

/*
 * A bad import names its line (or record) and the object and writes
 * nothing: not a route, not an event.
 */
static void
test_routes_import_bad(void **state)
{
	static const struct {
		const char *body;
		const char *msg;
	} tab[] = {
		{ "{\"object\":\"db.a\",\"wave\":1}\n"
		  "{\"object\":\"db.b\",\"wave\":\"x\"}\n",
		    "line 2 (db.b): field \"wave\" must be an integer "
		    "0..2147483647; nothing was imported" },
		{ "{\"object\":\"db.a\",\"wave\":1}\n\n{bad\n",
		    "line 3: not JSON: " },
		{ "{\"object\":\"db.a\",\"wave\":1,\"colour\":2}",
		    "line 1 (db.a): unknown field \"colour\"; nothing was "
		    "imported" },
		{ "{\"object\":\"nodot\",\"wave\":1}", "line 1 (nodot): " },
		{ "{\"object\":\"db.a\",\"wave\":-1}",
		    "line 1 (db.a): field \"wave\" must be an integer" },
		{ "{\"wave\":1}",
		    "line 1: field \"object\" is required; nothing was "
		    "imported" },
		{ "{\"object\":\"db.a\",\"wave\":1,\"force\":\"yes\"}",
		    "line 1 (db.a): field \"force\" must be true or false" },
		{ "{\"object\":\"db.a\",\"wave\":1,\"wave\":2}",
		    "line 1: not JSON: duplicate object key" },
		{ "[1]\n", "record 1: not a JSON object" },
		{ " [ ]\n", "no routes: the array is empty" },
		{ "{\"object\":\"db.a\",\"wave\":1}\n"
		  "{\"object\":\"db.b\",\"wave\":1}\n"
		  "{\"object\":\"db.a\",\"wave\":2}\n",
		    "line 3 (db.a): wave 2, but line 1 gives it wave 1: an "
		    "object may appear once per import; nothing was "
		    "imported" },
		{ "[{\"object\":\"db.a\",\"wave\":1},{\"object\":\"db.b\"}]",
		    "record 2 (db.b): field \"wave\" is required; nothing was "
		    "imported" },
		{ "[{\"object\":\"db.a\",\"wave\":1}] x",
		    "data after the array; nothing was imported" },
		{ "[{\"object\":\"db.a\",\"wave\":1} {}]",
		    "record 1: ',' or ']' expected after it" },
		{ "[{\"object\":\"db.a\",\"wave\":1}, 5]",
		    "record 2: not a JSON object" },
		{ "[{\"object\":\"db.a\",\"wave\":1},",
		    "record 2: not a JSON object" },
		{ "[[]]", "record 1: not a JSON object; nothing" },
		{ "", "no routes: the body is empty" },
		{ " \n\n", "no routes: the body is empty" },
	};
	struct fixture *fx = *state;
	char *before, *after;
	uint64_t seq;
	json_t *j;
	size_t i;

	route_set(fx, "db.b", 4);
	before = snapshot(fx);
	seq = store_last_seq(fx->f.store);
	for (i = 0; i < nitems(tab); i++) {
		j = expect(fx, 400, "POST", "/routes/import", tab[i].body);
		if (strstr(str(json_object_get(j, "error"), "message"),
			tab[i].msg) == NULL)
			fail_msg("case %zu: message \"%s\", want \"%s\"", i,
			    str(json_object_get(j, "error"), "message"),
			    tab[i].msg);
		assert_string_equal(str(json_object_get(j, "error"), "type"),
		    "BadRequestException");
		json_decref(j);
		after = snapshot(fx);
		assert_string_equal(before, after);
		free(after);
		assert_int_equal(store_last_seq(fx->f.store), seq);
	}
	free(before);
}

/*
 * The guard refuses an import as it refuses POST /routes: joining a wave
 * off the warehouse, leaving a frozen one. 409 naming the line, nothing
 * written but the one route.refused event; force passes.
 */
static void
test_routes_import_guard(void **state)
{
	static const struct {
		const char *body;
		const char *msg;
		json_int_t line;
	} tab[] = {
		{ "{\"object\":\"db.a\",\"wave\":1}\n"
		  "{\"object\":\"db.new\",\"wave\":3}\n",
		    "line 2: wave 3 is lakehouse: db.new may join it only "
		    "while the wave is on the warehouse",
		    2 },
		{ "{\"object\":\"db.a\",\"wave\":1}\n"
		  "{\"object\":\"db.frozen\",\"wave\":1}\n",
		    "line 2: db.frozen is in wave 5, which is frozen: its "
		    "warehouse copy is no longer written (override with "
		    "--force, or \"force\":true in an import); nothing was "
		    "imported",
		    2 },
		{ "[{\"object\":\"db.frozen\",\"wave\":1,\"force\":true},"
		  "{\"object\":\"new.*\",\"wave\":3}]",
		    "record 2: wave 3 is lakehouse: new.* may join", 2 },
	};
	struct fixture *fx = *state;
	char *before;
	uint64_t seq;
	json_t *j, *list, *ev;
	size_t i;

	route_set(fx, "db.orders", 3);
	route_set(fx, "db.frozen", 5);
	json_decref(
	    expect(fx, 200, "POST", "/waves/3/flip", "{\"to\":\"lakehouse\"}"));
	force_state(fx, 5, WAVE_FROZEN);
	for (i = 0; i < nitems(tab); i++) {
		before = snapshot(fx);
		seq = store_last_seq(fx->f.store);
		j = expect(fx, 409, "POST", "/routes/import", tab[i].body);
		if (strstr(str(json_object_get(j, "error"), "message"),
			tab[i].msg) == NULL)
			fail_msg("case %zu: message \"%s\", want \"%s\"", i,
			    str(json_object_get(j, "error"), "message"),
			    tab[i].msg);
		json_decref(j);
		assert_refused(fx, before, seq, "route.refused");
		free(before);
		list = events_since(fx, seq);
		ev = json_array_get(list, 0);
		assert_string_equal(str(ev, "action"), "import");
		assert_int_equal(num(ev, i < 2 ? "line" : "record"),
		    tab[i].line);
		json_decref(list);
	}

	/* Forced, every route goes in; the event counts the forced ones. */
	seq = store_last_seq(fx->f.store);
	j = expect(fx, 200, "POST", "/routes/import",
	    "{\"object\":\"db.new\",\"wave\":3,\"force\":true}\n"
	    "{\"object\":\"db.frozen\",\"wave\":1,\"force\":true}\n");
	assert_int_equal(num(j, "set"), 2);
	json_decref(j);
	list = events_since(fx, seq);
	assert_int_equal(json_array_size(list), 1);
	assert_int_equal(num(json_array_get(list, 0), "forced"), 2);
	json_decref(list);
}

/* GET /events: after, limit, last_seq. */
static void
test_events(void **state)
{
	struct fixture *fx = *state;
	json_t *j, *list;

	j = expect(fx, 200, "GET", "/events", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "events")), 0);
	assert_int_equal(num(j, "last_seq"), 0);
	json_decref(j);

	route_set(fx, "a.t1", 1);
	route_set(fx, "a.t2", 1);
	route_set(fx, "a.t3", 2);
	j = expect(fx, 200, "GET", "/events", NULL);
	list = json_object_get(j, "events");
	assert_int_equal(json_array_size(list), 3);
	assert_int_equal(num(json_array_get(list, 0), "seq"), 1);
	assert_int_equal(num(json_array_get(list, 2), "seq"), 3);
	assert_true(
	    json_is_string(json_object_get(json_array_get(list, 0), "ts")));
	assert_int_equal(num(j, "last_seq"), 3);
	json_decref(j);

	j = expect(fx, 200, "GET", "/events?limit=2&after=1", NULL);
	list = json_object_get(j, "events");
	assert_int_equal(json_array_size(list), 2);
	assert_int_equal(num(json_array_get(list, 0), "seq"), 2);
	assert_string_equal(str(json_array_get(list, 1), "object"), "a.t3");
	assert_int_equal(num(j, "last_seq"), 3);
	json_decref(j);

	j = expect(fx, 200, "GET", "/events?after=3", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "events")), 0);
	json_decref(j);
}

/* A clean ledger record. */
#define LEDGER_OK                                                              \
	"{\"object\":\"db.t\",\"ts\":\"2026-01-01T00:00:00Z\","                \
	"\"count_match\":true,\"aggregate_match\":true,\"hash_match\":true}"

/* Every error: status, type, code, message; and the store unchanged. */
static void
test_errors(void **state)
{
	static const struct {
		const char *method;
		const char *target;
		const char *body;
		int status;
		const char *type;
		const char *msg; /* a part of the message */
	} cases[] = {
		{ "GET", "/nope", NULL, 404, "NotFoundException",
		    "no such resource: /nope" },
		/* POST /ledger walks its body as POST /routes/import does. */
		{ "POST", "/ledger", "", 400, "BadRequestException",
		    "no records: the body is empty; nothing was imported" },
		{ "POST", "/ledger", "\n \n", 400, "BadRequestException",
		    "no records: the body is empty; nothing was imported" },
		{ "POST", "/ledger", " [ ] ", 400, "BadRequestException",
		    "no records: the array is empty; nothing was imported" },
		{ "POST", "/ledger", "[" LEDGER_OK " {", 400,
		    "BadRequestException",
		    "record 1: ',' or ']' expected after it; nothing was "
		    "imported" },
		{ "POST", "/ledger", "[" LEDGER_OK "] x", 400,
		    "BadRequestException",
		    "data after the array; nothing was imported" },
		{ "POST", "/ledger", LEDGER_OK "\n{x\n", 400,
		    "BadRequestException", "line 2: not JSON: " },
		{ "POST", "/ledger", "\n" LEDGER_OK "\n[1]", 400,
		    "BadRequestException", "line 3: " },
		{ "GET", "/", NULL, 404, "NotFoundException", "no such" },
		{ "GET", "/waves/3/flip/x", NULL, 404, "NotFoundException",
		    "no such" },
		{ "POST", "/waves/3/thaw", "{}", 404, "NotFoundException",
		    "no such" },
		{ "GET", "nope", NULL, 400, "BadRequestException",
		    "not a path" },
		{ "DELETE", "/routes/db.orders%00x", NULL, 400,
		    "BadRequestException", "request target holds %00" },
		{ "GET", "/resolve/db.orders?client=a%00b", NULL, 400,
		    "BadRequestException", "holds %00" },
		{ "PUT", "/routes", "{}", 405, "MethodNotAllowedException",
		    "PUT is not allowed on /routes (allowed: GET, POST)" },
		{ "POST", "/status", NULL, 405, "MethodNotAllowedException",
		    "allowed: GET" },
		{ "GET", "/routes/db.orders", NULL, 405,
		    "MethodNotAllowedException", "allowed: DELETE" },
		{ "GET", "/waves/3/flip", NULL, 405,
		    "MethodNotAllowedException", "allowed: POST" },
		{ "DELETE", "/waves", NULL, 405, "MethodNotAllowedException",
		    "allowed: GET" },
		{ "POST", "/routes", "{", 400, "BadRequestException",
		    "body is not JSON: " },
		{ "POST", "/routes", "{\"object\":\"a.b\",\n\"wave\":}", 400,
		    "BadRequestException", "at line 2 column" },
		{ "POST", "/routes", "", 400, "BadRequestException",
		    "body is empty" },
		{ "POST", "/routes", "[1]", 400, "BadRequestException",
		    "not a JSON object" },
		{ "POST", "/routes", "{\"wave\":3}", 400, "BadRequestException",
		    "field \"object\" is required" },
		{ "POST", "/routes", "{\"object\":\"db.t\"}", 400,
		    "BadRequestException", "field \"wave\" is required" },
		{ "POST", "/routes", "{\"object\":7,\"wave\":3}", 400,
		    "BadRequestException",
		    "field \"object\" must be a string" },
		{ "POST", "/routes", "{\"object\":\"db.t\",\"wave\":\"3\"}",
		    400, "BadRequestException",
		    "field \"wave\" must be an integer 0..2147483647" },
		{ "POST", "/routes", "{\"object\":\"db.t\",\"wave\":-1}", 400,
		    "BadRequestException",
		    "field \"wave\" must be an integer" },
		{ "POST", "/routes",
		    "{\"object\":\"db.t\",\"wave\":2147483648}", 400,
		    "BadRequestException",
		    "field \"wave\" must be an integer" },
		{ "POST", "/routes", "{\"object\":\"db.t\",\"wave\":1.5}", 400,
		    "BadRequestException",
		    "field \"wave\" must be an integer" },
		{ "POST", "/routes",
		    "{\"object\":\"db.t\",\"wave\":1,\"wave\":2}", 400,
		    "BadRequestException", "body is not JSON: duplicate" },
		{ "POST", "/routes",
		    "{\"object\":\"db.t\",\"wave\":1,\"force\":1}", 400,
		    "BadRequestException", "field \"force\" must be true" },
		{ "POST", "/routes", "{\"object\":\"db.t\",\"wave\":1,\"x\":1}",
		    400, "BadRequestException", "unknown field \"x\"" },
		{ "POST", "/routes", "{\"object\":\"orders\",\"wave\":1}", 400,
		    "BadRequestException",
		    "\"orders\": an object is a namespace and a table" },
		{ "POST", "/routes", "{\"object\":\"db..t\",\"wave\":1}", 400,
		    "BadRequestException", "empty namespace level" },
		{ "POST", "/routes", "{\"object\":\"\",\"wave\":1}", 400,
		    "BadRequestException", "empty object name" },
		{ "DELETE", "/routes/orders", NULL, 400, "BadRequestException",
		    "an object is a namespace and a table" },
		{ "DELETE", "/routes/db.none", NULL, 404, "NotFoundException",
		    "db.none has no route" },
		{ "GET", "/resolve/db.", NULL, 400, "BadRequestException",
		    "empty table name" },
		{ "GET", "/waves/77", NULL, 404, "NotFoundException",
		    "wave 77 has no routes and no state" },
		{ "GET", "/waves/x", NULL, 400, "BadRequestException",
		    "wave \"x\" is not a number 0..2147483647" },
		{ "GET", "/waves/2147483648", NULL, 400, "BadRequestException",
		    "is not a number" },
		{ "POST", "/waves/-1/ack", NULL, 400, "BadRequestException",
		    "is not a number" },
		{ "POST", "/waves/3/flip", NULL, 400, "BadRequestException",
		    "body is empty" },
		{ "POST", "/waves/3/flip", "{}", 400, "BadRequestException",
		    "field \"to\" is required" },
		{ "POST", "/waves/3/flip", "{\"to\":\"warehouse\"}", 400,
		    "BadRequestException",
		    "field \"to\" must be \"lakehouse\" or \"canary\"" },
		{ "POST", "/waves/3/flip", "{\"to\":3}", 400,
		    "BadRequestException", "field \"to\" must be a string" },
		{ "POST", "/waves/3/flip", "{\"to\":\"canary\"}", 400,
		    "BadRequestException", "field \"pct\" is required" },
		{ "POST", "/waves/3/flip", "{\"to\":\"canary\",\"pct\":0}", 400,
		    "BadRequestException",
		    "field \"pct\" must be an integer 1..100" },
		{ "POST", "/waves/3/flip", "{\"to\":\"canary\",\"pct\":101}",
		    400, "BadRequestException", "field \"pct\"" },
		{ "POST", "/waves/3/flip", "{\"to\":\"lakehouse\",\"pct\":50}",
		    400, "BadRequestException", "field \"pct\"" },
		{ "POST", "/waves/3/flip",
		    "{\"to\":\"lakehouse\",\"reason\":5}", 400,
		    "BadRequestException",
		    "field \"reason\" must be a string" },
		{ "POST", "/waves/3/flip", "{\"to\":\"lakehouse\",\"y\":1}",
		    400, "BadRequestException", "unknown field \"y\"" },
		{ "POST", "/waves/3/rollback", "{\"force_stale\":\"yes\"}", 400,
		    "BadRequestException",
		    "field \"force_stale\" must be true or false" },
		{ "POST", "/waves/3/rollback", "nope", 400,
		    "BadRequestException", "body is not JSON" },
		{ "POST", "/waves/3/ack", "{\"reason\":\"x\"}", 400,
		    "BadRequestException", "unknown field \"reason\"" },
		{ "GET", "/events?after=x", NULL, 400, "BadRequestException",
		    "after must be an event sequence number" },
		{ "GET", "/events?after=-1", NULL, 400, "BadRequestException",
		    "after must be" },
		{ "GET", "/events?limit=0", NULL, 400, "BadRequestException",
		    "limit must be 1..10000" },
		{ "GET", "/events?limit=10001", NULL, 400,
		    "BadRequestException", "limit must be" },
		{ "GET", "/events?limit=99999999999999999999", NULL, 400,
		    "BadRequestException", "limit must be 1..10000" },
		{ "GET", "/ledger?object=db.orders&limit=100001", NULL, 400,
		    "BadRequestException", "limit must be 1..100000" },
		{ "GET", "/rollbacks?after=x", NULL, 400, "BadRequestException",
		    "after must be a line count, not \"x\"" },
		{ "GET", "/rollbacks?limit=0", NULL, 400, "BadRequestException",
		    "limit must be 1..10000, not \"0\"" },
		/* Refusals by the lifecycle: wave 3 is on the warehouse. */
		{ "POST", "/waves/3/rollback", "{}", 409, "RefusedException",
		    "wave 3 is on the warehouse: nothing to roll back" },
		{ "POST", "/waves/3/ack", NULL, 409, "RefusedException",
		    "not rolled_back" },

	};
	struct fixture *fx = *state;
	char *before, *after;
	json_t *j, *e;
	uint64_t seq;
	size_t i;

	route_set(fx, "db.orders", 3);
	before = snapshot(fx);
	for (i = 0; i < nitems(cases); i++) {
		seq = store_last_seq(fx->f.store);
		j = expect(fx, cases[i].status, cases[i].method,
		    cases[i].target, cases[i].body);
		e = json_object_get(j, "error");
		assert_int_equal(json_object_size(j), 1);
		assert_string_equal(str(e, "type"), cases[i].type);
		assert_int_equal(num(e, "code"), cases[i].status);
		if (strstr(str(e, "message"), cases[i].msg) == NULL)
			fail_msg("%s %s: message \"%s\" lacks \"%s\"",
			    cases[i].method, cases[i].target, str(e, "message"),
			    cases[i].msg);
		json_decref(j);
		if (cases[i].status == 409) {
			assert_refused(fx, before, seq, "wave.refused");
			continue;
		}
		after = snapshot(fx);
		if (strcmp(before, after) != 0 ||
		    store_last_seq(fx->f.store) != seq)
			fail_msg("%s %s changed the store: %s -> %s",
			    cases[i].method, cases[i].target, before, after);
		free(after);
	}
	free(before);
	/* A refused rollback is not a rollback: no log line. */
	assert_int_equal(rollback_lines(fx), 0);
}

/*
 * The triggers' admin side: a flip stores the baseline watch gives, a
 * ledger import hands its records to the reconcile trigger before the
 * answer, consumers' error reports are checked and counted, the count
 * check is switched per wave, /rollbacks and /status carry the triggers.
 */
static void
test_triggers(void **state)
{
	struct fixture *fx = *state;
	struct store_wave w;
	json_t *j, *rb;

	memset(&watch_calls, 0, sizeof(watch_calls));
	/* A rollback made before a change is not that change's. */
	watch_calls.fired = json_pack("[{s:i}]", "wave", 9);
	route_set(fx, "db.orders", 5);
	json_decref(
	    expect(fx, 200, "POST", "/waves/5/flip", "{\"to\":\"lakehouse\"}"));
	assert_int_equal(watch_calls.baselines, 1);
	assert_int_equal(store_wave_get(fx->f.store, 5, &w), STORE_OK);
	assert_int_equal(w.base_requests, 200);
	assert_int_equal(w.base_errors, 3);

	j = expect(fx, 200, "POST", "/ledger",
	    "{\"object\":\"db.orders\",\"ts\":\"2026-01-01T00:00:00Z\","
	    "\"count_match\":false,\"aggregate_match\":false,"
	    "\"hash_match\":false,\"bucket\":\"gap\"}\n"
	    "{\"object\":\"db.orders\",\"ts\":\"2026-01-01T00:01:00Z\","
	    "\"count_match\":true,\"aggregate_match\":true,"
	    "\"hash_match\":true}\n");
	assert_int_equal(watch_calls.ledger_calls, 1);
	/* The import's answer names the rollback its record caused. */
	rb = json_object_get(j, "rolled_back");
	assert_int_equal(json_array_size(rb), 1);
	assert_int_equal(num(json_array_get(rb, 0), "wave"), 5);
	assert_int_equal(num(j, "added"), 2);
	json_decref(j);
	/* The clean record is not the trigger's business. */
	assert_int_equal(watch_calls.ledger_records, 1);
	/* A refused import reaches no trigger. */
	json_decref(expect(fx, 400, "POST", "/ledger", "{\"object\":1}"));
	assert_int_equal(watch_calls.ledger_calls, 1);

	j = expect(fx, 200, "POST", "/waves/5/errors",
	    "{\"errors\":4,\"total\":10}");
	assert_int_equal(num(j, "wave"), 5);
	assert_int_equal(num(j, "side"), -1);
	assert_int_equal(num(j, "errors"), 4);
	assert_null(json_object_get(j, "rolled_back"));
	json_decref(j);
	/* A report that rolls the wave back says so. */
	j = expect(fx, 200, "POST", "/waves/5/errors",
	    "{\"errors\":8,\"total\":10}");
	rb = json_object_get(j, "rolled_back");
	assert_int_equal(json_array_size(rb), 1);
	assert_string_equal(json_string_value(
				json_object_get(json_array_get(rb, 0),
				    "trigger")),
	    "errors");
	json_decref(j);
	j = expect(fx, 200, "POST", "/waves/5/errors",
	    "{\"errors\":0,\"total\":10,\"side\":\"warehouse\"}");
	assert_int_equal(num(j, "side"), ROUTE_WAREHOUSE);
	json_decref(j);
	json_decref(expect(fx, 400, "POST", "/waves/5/errors",
	    "{\"errors\":11,\"total\":10}"));
	json_decref(
	    expect(fx, 400, "POST", "/waves/5/errors", "{\"errors\":1}"));
	json_decref(expect(fx, 400, "POST", "/waves/5/errors",
	    "{\"errors\":1,\"total\":2,\"side\":\"both\"}"));
	json_decref(expect(fx, 400, "POST", "/waves/5/errors",
	    "{\"errors\":1,\"total\":2,\"extra\":1}"));
	json_decref(expect(fx, 405, "GET", "/waves/5/errors", NULL));

	j = expect(fx, 200, "POST", "/waves/5/set", "{\"count_check\":false}");
	assert_true(json_is_false(json_object_get(j, "count_check")));
	json_decref(j);
	assert_int_equal(store_wave_get(fx->f.store, 5, &w), STORE_OK);
	assert_int_equal(w.flags & WAVE_F_NO_COUNT_CHECK,
	    WAVE_F_NO_COUNT_CHECK);
	json_decref(expect(fx, 400, "POST", "/waves/5/set",
	    "{\"count_check\":\"no\"}"));

	j = expect(fx, 200, "GET", "/rollbacks?after=3&limit=7", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "rollbacks")), 0);
	assert_int_equal(num(j, "next"), 3);
	json_decref(j);
	json_decref(expect(fx, 400, "GET", "/rollbacks?after=x", NULL));
	json_decref(expect(fx, 400, "GET", "/rollbacks?limit=0", NULL));
	j = expect(fx, 200, "GET", "/status", NULL);
	assert_string_equal(str(json_object_get(j, "triggers"), "double"),
	    "watch");
	json_decref(j);
}

/* Later answers of the worker test. */
struct later {
	struct event_base *base;
	int calls;
	int status;
	json_t *body;
};

/* admin_later_cb: keep the answer and stop the loop. */
static void
later_cb(struct admin_reply *rep, void *arg)
{
	struct later *l = arg;

	l->calls++;
	l->status = rep->status;
	json_decref(l->body);
	l->body = json_loadb(rep->body, rep->len, 0, NULL);
	free(rep->body);
	if (l->base != NULL)
		event_base_loopbreak(l->base);
}

/*
 * Send BODY to TARGET with a later answer; the import takes the body's
 * bytes and is answered from the loop, once, with STATUS.
 */
static void
later_call(struct fixture *fx, struct later *l, const char *target,
    const char *body, int status)
{
	struct evbuffer *in = evbuffer_new();
	struct admin_reply rep;
	int calls = l->calls;

	evbuffer_add(in, body, strlen(body));
	assert_int_equal(admin_handle(&fx->f, "POST", target, strlen(target),
			     in, UID, &rep, later_cb, l),
	    1);
	assert_int_equal(evbuffer_get_length(in), 0);
	assert_int_equal(l->calls, calls); /* not answered yet */
	evbuffer_free(in);
	assert_int_equal(event_base_dispatch(l->base), 0);
	assert_int_equal(l->calls, calls + 1);
	if (l->status != status)
		fail_msg("%s: status %d, want %d: %s", target, l->status,
		    status, json_dumps(l->body, JSON_COMPACT));
}

/*
 * With a worker, POST /routes/import and POST /ledger are parsed and
 * written in its child process and answered later on the loop: the same
 * answers, the routes seen by the loop's store, the reconcile trigger told
 * on the loop about the dirty record. Other requests stay answered at
 * once. A job the worker never ran is answered 503.
 */
static void
test_worker_imports(void **state)
{
	struct fixture *fx = *state;
	struct later l;
	struct evbuffer *in;
	struct admin_reply rep;
	char err[256];
	json_t *j;

	memset(&l, 0, sizeof(l));
	memset(&watch_calls, 0, sizeof(watch_calls));
	assert_non_null(l.base = event_base_new());
	fx->f.base = l.base;
	fx->conf.state_dir = fx->tmp->dir; /* the child opens it */
	fx->f.worker = worker_new(l.base, 60000, err, sizeof(err));
	assert_non_null(fx->f.worker);

	later_call(fx, &l, "/routes/import",
	    "{\"object\":\"db.a\",\"wave\":3}\n{\"object\":\"db.b\",\"wave\":4}",
	    200);
	assert_int_equal(num(l.body, "set"), 2);
	assert_int_equal(num(l.body, "seq"), 1);
	j = expect(fx, 200, "GET", "/resolve/db.b", NULL);
	assert_int_equal(num(j, "wave"), 4);
	json_decref(j);

	later_call(fx, &l, "/routes/import",
	    "{\"object\":\"db.c\",\"wave\":3}\n{\"object\":\"db.d\",\"wave\":x}",
	    400);
	assert_non_null(strstr(str(json_object_get(l.body, "error"), "message"),
	    "line 2: not JSON"));
	j = expect(fx, 200, "GET", "/resolve/db.c", NULL);
	assert_string_equal(str(j, "why"), "unassigned");
	json_decref(j);

	later_call(fx, &l, "/ledger",
	    "{\"object\":\"db.a\",\"ts\":\"2026-01-01T00:00:00Z\","
	    "\"count_match\":true,\"aggregate_match\":true,"
	    "\"hash_match\":true}\n"
	    "{\"object\":\"db.b\",\"ts\":\"2026-01-01T00:00:00Z\","
	    "\"count_match\":false,\"aggregate_match\":true,"
	    "\"hash_match\":true,\"bucket\":\"gap\"}\n",
	    200);
	assert_int_equal(num(l.body, "added"), 2);
	assert_int_equal(num(l.body, "seq"), 2);
	assert_int_equal(watch_calls.ledger_calls, 1);
	assert_int_equal(watch_calls.ledger_records, 1);
	j = expect(fx, 200, "GET", "/ledger?object=db.b", NULL);
	assert_int_equal(num(j, "total"), 1);
	json_decref(j);

	/* A change is still answered at once, after the imports' seqs. */
	route_set(fx, "db.e", 5);
	j = expect(fx, 200, "GET", "/events?after=2", NULL);
	assert_int_equal(json_array_size(json_object_get(j, "events")), 1);
	json_decref(j);

	/* Freed before the loop ran again: answered once, never ran. */
	in = evbuffer_new();
	evbuffer_add_printf(in, "{\"object\":\"db.f\",\"wave\":3}");
	assert_int_equal(admin_handle(&fx->f, "POST", "/routes/import", 14, in,
			     UID, &rep, later_cb, &l),
	    1);
	evbuffer_free(in);
	l.base = NULL;
	worker_free(fx->f.worker);
	fx->f.worker = NULL;
	assert_int_equal(l.calls, 4);
	assert_int_equal(l.status, 503);
	json_decref(l.body);
	event_base_free(fx->f.base);
	fx->f.base = NULL;
}

/*
 * An import whose child dies before it answers (here: killed at a 1 ms
 * deadline, long before it can parse and commit 100,000 routes) is a 500
 * naming why and pointing to GET /events, and none of it is applied.
 */
static void
test_worker_import_dies(void **state)
{
	struct fixture *fx = *state;
	struct later l;
	struct evbuffer *big;
	const char *msg;
	char err[256], *body;
	size_t len;
	json_t *j;
	int i;

	memset(&l, 0, sizeof(l));
	assert_non_null(l.base = event_base_new());
	fx->f.base = l.base;
	fx->conf.state_dir = fx->tmp->dir;
	fx->f.worker = worker_new(l.base, 1, err, sizeof(err));
	assert_non_null(fx->f.worker);
	big = evbuffer_new();
	for (i = 0; i < 100000; i++)
		evbuffer_add_printf(big,
		    "{\"object\":\"big.t%06d\",\"wave\":3}\n", i);
	len = evbuffer_get_length(big);
	body = xmalloc(len + 1);
	evbuffer_remove(big, body, len);
	body[len] = '\0';
	evbuffer_free(big);

	later_call(fx, &l, "/routes/import", body, 500);
	msg = str(json_object_get(l.body, "error"), "message");
	assert_non_null(strstr(msg, "ran past its deadline and was killed"));
	assert_non_null(strstr(msg, "GET /events"));
	free(body);

	/* Killed before its commit: LMDB has none of it. */
	j = expect(fx, 200, "GET", "/resolve/big.t000000", NULL);
	assert_string_equal(str(j, "why"), "unassigned");
	json_decref(j);

	worker_free(fx->f.worker);
	fx->f.worker = NULL;
	json_decref(l.body);
	event_base_free(fx->f.base);
	fx->f.base = NULL;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_routes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_transitions, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_route_guard, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_routes_import, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_routes_import_bad, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_routes_import_guard, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worker_imports, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_worker_import_dies, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_triggers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
