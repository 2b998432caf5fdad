/*
 * floe: test_admin.c -- the admin API driven through admin_handle on a real
 * store in a temporary directory: status, metrics, routes, paging, resolve,
 * waves and their transitions. The fixture and helpers are admin_fx.c's
 * (shared with test_admin_jobs.c, to keep each file under 1,000 lines).
 */
#include "tests/unit/admin_fx.h"

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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
