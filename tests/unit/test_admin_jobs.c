/*
 * floe: test_admin_jobs.c -- the admin API driven through admin_handle on a
 * real store in a temporary directory: route imports, events, every error
 * and that a refused or malformed request leaves the store as it was, the
 * triggers' admin side, and imports run by a worker. The fixture and
 * helpers are admin_fx.c's (shared with test_admin.c).
 */
#include <fcntl.h>

#include "tests/unit/admin_fx.h"

#include "proxy/inventory.h"

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

/*
 * With a worker, a move behind a gate that is on (a flip with
 * gate_min_clean > 0, a dry run, a freeze) is decided and made by its
 * child -- the gate reads the ledger of every table of the wave -- and
 * answered later: the same refusal, the same move seen by the loop's
 * store. With the cutover gate off a flip is made at once on the loop.
 */
static void
test_worker_gated_moves(void **state)
{
	struct fixture *fx = *state;
	struct store_wave w;
	struct later l;
	struct evbuffer *in;
	struct admin_reply rep;
	char err[256];
	const char *flip = "{\"to\":\"lakehouse\"}";

	memset(&l, 0, sizeof(l));
	assert_non_null(l.base = event_base_new());
	fx->f.base = l.base;
	fx->conf.state_dir = fx->tmp->dir;
	fx->f.worker = worker_new(l.base, 60000, err, sizeof(err));
	assert_non_null(fx->f.worker);
	route_set(fx, "db.a", 3);
	route_set(fx, "db.b", 4);

	/* Gate on, no evidence: refused by the child, nothing moved. */
	fx->conf.policy.gate_min_clean = 1;
	later_call(fx, &l, "/waves/3/flip", flip, 409);
	assert_non_null(strstr(str(json_object_get(l.body, "error"), "message"),
	    "cutover gate"));
	assert_int_equal(store_wave_get(fx->f.store, 3, &w), STORE_NOTFOUND);
	/* A dry run too: it would be refused, nothing written. */
	later_call(fx, &l, "/waves/3/flip",
	    "{\"to\":\"lakehouse\",\"dry_run\":true}", 200);
	assert_string_equal(str(l.body, "would"), "be refused");

	/* A clean record: the child flips it; the loop sees the move. */
	later_call(fx, &l, "/ledger",
	    "{\"object\":\"db.a\",\"ts\":\"2026-01-01T00:00:00Z\","
	    "\"count_match\":true,\"aggregate_match\":true,"
	    "\"hash_match\":true}\n",
	    200);
	fx->conf.policy.gate_window_ms = 3650LL * 24 * 3600 * 1000;
	later_call(fx, &l, "/waves/3/flip", flip, 200);
	assert_string_equal(str(l.body, "state"), "lakehouse");
	assert_int_equal(store_wave_get(fx->f.store, 3, &w), STORE_OK);
	assert_string_equal(wave_state_name(w.state), "lakehouse");

	/* A freeze is behind the decommission gate: the child refuses it. */
	later_call(fx, &l, "/waves/3/freeze", "{}", 409);

	/* Gate off: a flip is answered at once, on the loop. */
	fx->conf.policy.gate_min_clean = 0;
	in = evbuffer_new();
	evbuffer_add_printf(in, "%s", flip);
	assert_int_equal(admin_handle(&fx->f, "POST", "/waves/4/flip", 13, in,
			     UID, &rep, later_cb, &l),
	    0);
	assert_int_equal(rep.status, 200);
	free(rep.body);
	evbuffer_free(in);

	worker_free(fx->f.worker);
	fx->f.worker = NULL;
	json_decref(l.body);
	event_base_free(fx->f.base);
	fx->f.base = NULL;
}

/*
 * An operator's rollback and its log line are one synced commit; the
 * line is forgotten once the log has it (a second). A log that cannot
 * take the line leaves it pending from the rollback's own commit. With
 * a worker its child makes both commits and writes the line: the loop's
 * log is held meanwhile and free again after.
 */
static void
test_rollback_commits(void **state)
{
	struct fixture *fx = *state;
	struct later l;
	char err[256];
	uint64_t id;
	size_t n;
	json_t *j, *lines;

	route_set(fx, "db.a", 3);
	route_set(fx, "db.b", 3);
	json_decref(
	    expect(fx, 200, "POST", "/waves/3/flip", "{\"to\":\"lakehouse\"}"));
	id = store_txnid(fx->f.store);
	j = expect(fx, 200, "POST", "/waves/3/rollback", "{}");
	assert_true(json_is_true(
	    json_object_get(json_object_get(j, "rollback_log"), "written")));
	json_decref(j);
	assert_int_equal(store_txnid(fx->f.store) - id, 2);
	lines = rollbacks(fx, 0);
	assert_int_equal(json_array_size(lines), 1);
	j = json_array_get(lines, 0);
	assert_string_equal(str(j, "from"), "lakehouse");
	assert_string_equal(str(j, "trigger"), "operator");
	assert_int_equal(json_array_size(json_object_get(j, "objects")), 2);
	json_decref(lines);

	/* The log is a directory: the line waits, from the one commit. */
	rlog_free(fx->f.rlog);
	fx->f.rlog = rlog_open(fx->tmp->dir, NULL, 0);
	rlog_attach(fx->f.rlog, fx->f.store);
	json_decref(expect(fx, 200, "POST", "/waves/3/ack", "{}"));
	json_decref(
	    expect(fx, 200, "POST", "/waves/3/flip", "{\"to\":\"lakehouse\"}"));
	id = store_txnid(fx->f.store);
	j = expect(fx, 200, "POST", "/waves/3/rollback", "{}");
	assert_true(json_is_true(
	    json_object_get(json_object_get(j, "rollback_log"), "pending")));
	json_decref(j);
	/* And the event saying the log fails (rollback_log.failing). */
	assert_int_equal(store_txnid(fx->f.store) - id, 2);
	assert_int_equal(store_rlog_count(fx->f.store, &n), STORE_OK);
	assert_int_equal(n, 1);
	rlog_free(fx->f.rlog);
	fx->f.rlog = rlog_open(fx->rlog_path, NULL, 0);
	rlog_attach(fx->f.rlog, fx->f.store);
	assert_int_equal(rlog_flush(fx->f.rlog, 0), 0);
	assert_int_equal(rollback_lines(fx), 2);

	/* With a worker: the child commits and writes; the loop nothing. */
	memset(&l, 0, sizeof(l));
	assert_non_null(l.base = event_base_new());
	fx->f.base = l.base;
	fx->conf.state_dir = fx->tmp->dir;
	fx->f.worker = worker_new(l.base, 60000, err, sizeof(err));
	assert_non_null(fx->f.worker);
	json_decref(expect(fx, 200, "POST", "/waves/3/ack", "{}"));
	json_decref(
	    expect(fx, 200, "POST", "/waves/3/flip", "{\"to\":\"lakehouse\"}"));
	id = store_txnid(fx->f.store);
	later_call(fx, &l, "/waves/3/rollback", "{\"reason\":\"r\"}", 200);
	assert_string_equal(str(l.body, "state"), "rolled_back");
	assert_true(json_is_true(
	    json_object_get(json_object_get(l.body, "rollback_log"),
		"written")));
	assert_int_equal(store_txnid(fx->f.store) - id, 2);
	assert_int_equal(rollback_lines(fx), 3);
	/* Released: the loop writes its own lines again. */
	assert_int_equal(rlog_flush(fx->f.rlog, 0), 0);
	worker_free(fx->f.worker);
	fx->f.worker = NULL;
	json_decref(l.body);
	event_base_free(fx->f.base);
	fx->f.base = NULL;
}

/*
 * GET TARGET with a later answer allowed: 1 if a child serves it (the
 * answer is in L once the loop ran), 0 if answered at once (into *J).
 */
static int
get_maybe_later(struct fixture *fx, struct later *l, const char *target,
    json_t **j)
{
	struct admin_reply rep;
	int rc, calls = l->calls;

	*j = NULL;
	memset(&rep, 0, sizeof(rep));
	rc = admin_handle(&fx->f, "GET", target, strlen(target), NULL, UID,
	    &rep, later_cb, l);
	if (rc == 1) {
		assert_int_equal(event_base_dispatch(l->base), 0);
		assert_int_equal(l->calls, calls + 1);
		assert_int_equal(l->status, 200);
		*j = json_incref(l->body);
		return 1;
	}
	assert_int_equal(rep.status, 200);
	*j = json_loadb(rep.body, rep.len, 0, NULL);
	free(rep.body);
	return 0;
}

/*
 * floectl eligible reads a wave a page at a time: the child that reads
 * the wave's evidence for the first page reads it once for all of them,
 * and the loop answers the next pages at once, as they would have been
 * read. A change to the store makes the next page read again.
 */
static void
test_eligible_pages_once(void **state)
{
	struct fixture *fx = *state;
	struct later l;
	struct worker *wk;
	char err[256];
	json_t *p1, *p2, *p2b, *p3;

	memset(&l, 0, sizeof(l));
	assert_non_null(l.base = event_base_new());
	fx->f.base = l.base;
	fx->conf.state_dir = fx->tmp->dir;
	route_set(fx, "db.a", 3);
	route_set(fx, "db.b", 3);
	route_set(fx, "db.c", 3);
	route_set(fx, "db.d", 3);
	route_set(fx, "db.e", 3);
	fx->f.worker = worker_new(l.base, 60000, err, sizeof(err));
	assert_non_null(fx->f.worker);

	assert_int_equal(get_maybe_later(fx, &l, "/eligibility?wave=3&limit=2",
			     &p1),
	    1);
	assert_string_equal(str(json_array_get(json_object_get(p1, "waves"), 0),
				"next"),
	    "db.b");
	/* The next page: at once, from what the child read. */
	assert_int_equal(get_maybe_later(fx, &l,
			     "/eligibility?wave=3&limit=2&after=db.b", &p2),
	    0);
	assert_string_equal(str(json_array_get(json_object_get(p2, "waves"), 0),
				"next"),
	    "db.d");
	/* The same as the loop reads it itself (asked out of order). */
	wk = fx->f.worker;
	fx->f.worker = NULL;
	p2b = expect(fx, 200, "GET", "/eligibility?wave=3&limit=2&after=db.b",
	    NULL);
	fx->f.worker = wk;
	assert_true(json_equal(p2, p2b));
	/* The store changed: the last page is read again, by a child. */
	route_set(fx, "db.f", 3);
	assert_int_equal(get_maybe_later(fx, &l,
			     "/eligibility?wave=3&limit=2&after=db.d", &p3),
	    1);
	assert_int_equal(json_array_size(json_object_get(
			     json_object_get(json_array_get(json_object_get(p3,
								"waves"),
						 0),
				 "cutover"),
			     "objects")),
	    2);
	json_decref(p1);
	json_decref(p2);
	json_decref(p2b);
	json_decref(p3);
	worker_free(fx->f.worker);
	fx->f.worker = NULL;
	json_decref(l.body);
	event_base_free(fx->f.base);
	fx->f.base = NULL;
}

/*
 * A read that may be large is served by the worker's child: every route
 * or every object of a wave (no limit), a page over 1,000 rows, the
 * rollback log. A page of at most 1,000 is served at once, on the loop.
 */
static void
test_big_reads(void **state)
{
	struct fixture *fx = *state;
	struct evbuffer *b;
	struct later l;
	char err[256];
	json_t *j;
	int i;

	memset(&l, 0, sizeof(l));
	assert_non_null(l.base = event_base_new());
	fx->f.base = l.base;
	fx->conf.state_dir = fx->tmp->dir;
	route_set(fx, "db.a", 3);
	route_set(fx, "db.b", 3);
	fx->f.worker = worker_new(l.base, 60000, err, sizeof(err));
	assert_non_null(fx->f.worker);

	assert_int_equal(get_maybe_later(fx, &l, "/routes", &j), 1);
	assert_int_equal(json_array_size(json_object_get(j, "routes")), 2);
	json_decref(j);
	assert_int_equal(get_maybe_later(fx, &l, "/routes?limit=5000", &j), 1);
	json_decref(j);
	assert_int_equal(get_maybe_later(fx, &l, "/routes?limit=1", &j), 0);
	assert_string_equal(str(j, "next"), "db.a");
	json_decref(j);
	assert_int_equal(get_maybe_later(fx, &l, "/waves/3", &j), 1);
	assert_int_equal(json_array_size(json_object_get(j, "objects")), 2);
	json_decref(j);
	assert_int_equal(get_maybe_later(fx, &l, "/waves/3?limit=1000", &j), 0);
	json_decref(j);
	assert_int_equal(get_maybe_later(fx, &l, "/rollbacks", &j), 1);
	assert_int_equal(json_array_size(json_object_get(j, "rollbacks")), 0);
	json_decref(j);
	assert_int_equal(get_maybe_later(fx, &l, "/events", &j), 0);
	json_decref(j);
	assert_int_equal(get_maybe_later(fx, &l, "/events?limit=10000", &j), 1);
	json_decref(j);
	assert_false(l.moved);

	/* A large answer is moved to its peer from the child's pipe. */
	b = evbuffer_new();
	for (i = 0; i < 3000; i++)
		evbuffer_add_printf(b,
		    "{\"object\":\"big.t%05d\",\"wave\":4}\n", i);
	evbuffer_add(b, "", 1);
	later_call(fx, &l, "/routes/import",
	    (const char *)evbuffer_pullup(b, -1), 200);
	evbuffer_free(b);
	assert_int_equal(get_maybe_later(fx, &l, "/routes", &j), 1);
	assert_true(l.moved);
	assert_int_equal(json_array_size(json_object_get(j, "routes")), 3002);
	json_decref(j);

	worker_free(fx->f.worker);
	fx->f.worker = NULL;
	json_decref(l.body);
	event_base_free(fx->f.base);
	fx->f.base = NULL;
}

/*
 * A rollback's child killed at any point (a deadline of 1 to 40 ms, so
 * before its commit, between its commit and its append, or after): the
 * rollback is in the log or pending in the store, never neither; the
 * loop's log is free again, and its retry writes each line once.
 */
static void
test_rollback_child_dies(void **state)
{
	static const uint64_t deadlines[] = { 1, 3, 5, 8, 12, 20, 40 };
	struct fixture *fx = *state;
	struct store_wave w;
	struct evbuffer *in;
	struct admin_reply rep;
	struct later l;
	char err[256];
	size_t i, pending, lines, applied = 0;

	memset(&l, 0, sizeof(l));
	assert_non_null(l.base = event_base_new());
	fx->f.base = l.base;
	fx->conf.state_dir = fx->tmp->dir;
	route_set(fx, "db.a", 3);
	for (i = 0; i < nitems(deadlines); i++) {
		memset(&w, 0, sizeof(w));
		(void)store_wave_get(fx->f.store, 3, &w);
		if (w.state == WAVE_ROLLED_BACK)
			json_decref(
			    expect(fx, 200, "POST", "/waves/3/ack", "{}"));
		if (w.state != WAVE_LAKEHOUSE)
			json_decref(expect(fx, 200, "POST", "/waves/3/flip",
			    "{\"to\":\"lakehouse\"}"));
		fx->f.worker =
		    worker_new(l.base, deadlines[i], err, sizeof(err));
		assert_non_null(fx->f.worker);
		in = evbuffer_new();
		evbuffer_add_printf(in, "{}");
		assert_int_equal(admin_handle(&fx->f, "POST",
				     "/waves/3/rollback", 17, in, UID, &rep,
				     later_cb, &l),
		    1);
		evbuffer_free(in);
		assert_int_equal(event_base_dispatch(l.base), 0);
		worker_free(fx->f.worker);
		fx->f.worker = NULL;
		assert_int_equal(store_wave_get(fx->f.store, 3, &w), STORE_OK);
		assert_int_equal(store_rlog_count(fx->f.store, &pending),
		    STORE_OK);
		lines = rollback_lines(fx);
		if (w.state == WAVE_ROLLED_BACK)
			applied++;
		/* Every rollback applied: in the log or pending. */
		assert_true(lines + pending >= applied);
		/* The loop's log is not held: its retry writes what waits. */
		assert_int_equal(rlog_flush(fx->f.rlog, 0), 0);
		assert_int_equal(rollback_lines(fx), applied);
	}
	json_decref(l.body);
	event_base_free(fx->f.base);
	fx->f.base = NULL;
}

/* Append a sighting of KEY (KEYLEN bytes), COUNT loads, as a flush does. */
static void
sighting(struct evbuffer *b, const void *key, size_t keylen, uint64_t count)
{
	unsigned char wire[STORE_READER_WIRE_MAX];
	struct store_reader_in s;

	memset(&s, 0, sizeof(s));
	s.key = key;
	s.keylen = keylen;
	s.r.first_ms = 1000;
	s.r.last_ms = 2000;
	s.r.count = count;
	evbuffer_add(b, wire, store_reader_wire(&s, wire));
}

/* inventory_serve on IN (freed): the count it answered. */
static uint64_t
serve(struct evbuffer *in)
{
	struct evbuffer *out = evbuffer_new();
	uint64_t n = UINT64_MAX;

	inventory_serve(evbuffer_pullup(in, -1), evbuffer_get_length(in), out);
	assert_int_equal(evbuffer_get_length(out), sizeof(n));
	evbuffer_remove(out, &n, sizeof(n));
	evbuffer_free(out);
	evbuffer_free(in);
	return n;
}

/*
 * A flush's sightings in a job helper (inventory_serve): stored, and
 * counted, INVENTORY_BATCH to a txn; a sighting cut short or with a key
 * too long stops it there, the batches before it stored and counted, its
 * own batch not; without a state directory nothing is.
 */
static void
test_inventory_serve(void **state __unused)
{
	struct store_reader r;
	struct evbuffer *in;
	struct store *st;
	char dir[256], bad[300], key[READERS_KEY_MAX + 1], err[256];
	int i, n;

	assert_int_equal(routing_tmp_mkdir(dir, sizeof(dir)), 0);
	/* Three sightings, the last two of one key: merged. */
	in = evbuffer_new();
	evbuffer_add(in, dir, strlen(dir) + 1);
	sighting(in, "a\0wbob", 6, 2);
	sighting(in, "b\0wbob", 6, 1);
	sighting(in, "b\0wbob", 6, 4);
	assert_int_equal(serve(in), 3);

	/* A batch and one more, then one cut short: the batch is stored. */
	in = evbuffer_new();
	evbuffer_add(in, dir, strlen(dir) + 1);
	for (i = 0; i <= INVENTORY_BATCH; i++) {
		n = snprintf(key, sizeof(key), "t%05d%cwann", i, '\0');
		sighting(in, key, (size_t)n, 1);
	}
	evbuffer_add(in, "\0\x28t99999", 8); /* a key of 40 bytes, 6 sent */
	assert_int_equal(serve(in), INVENTORY_BATCH);

	/* A key longer than a reader's key can be: nothing of its batch. */
	in = evbuffer_new();
	evbuffer_add(in, dir, strlen(dir) + 1);
	sighting(in, "c\0wbob", 6, 1);
	memset(key, 'k', sizeof(key));
	sighting(in, key, sizeof(key), 1);
	assert_int_equal(serve(in), 0);

	/* No state directory (no NUL), or one that is not a store. */
	in = evbuffer_new();
	evbuffer_add(in, dir, strlen(dir));
	assert_int_equal(serve(in), 0);
	n = snprintf(bad, sizeof(bad), "%s/file/state", dir);
	assert_true(n > 0 && (size_t)n < sizeof(bad));
	snprintf(key, sizeof(key), "%s/file", dir);
	assert_int_equal(close(creat(key, 0600)), 0);
	in = evbuffer_new();
	evbuffer_add(in, bad, (size_t)n + 1);
	sighting(in, "d\0wbob", 6, 1);
	assert_int_equal(serve(in), 0);

	assert_non_null(st = store_open(dir, err, sizeof(err)));
	assert_int_equal(store_reader_get(st, "a\0wbob", 6, &r), STORE_OK);
	assert_int_equal(r.count, 2);
	assert_int_equal(store_reader_get(st, "b\0wbob", 6, &r), STORE_OK);
	assert_int_equal(r.count, 5);
	assert_int_equal(r.first_ms, 1000);
	assert_int_equal(r.last_ms, 2000);
	for (i = 0; i <= INVENTORY_BATCH; i++) {
		n = snprintf(key, sizeof(key), "t%05d%cwann", i, '\0');
		assert_int_equal(store_reader_get(st, key, (size_t)n, &r),
		    i < INVENTORY_BATCH ? STORE_OK : STORE_NOTFOUND);
	}
	assert_int_equal(store_reader_get(st, "c\0wbob", 6, &r),
	    STORE_NOTFOUND);
	store_free(st);
	routing_tmp_rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
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
		cmocka_unit_test_setup_teardown(test_worker_gated_moves, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_triggers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollback_commits, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_eligible_pages_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_big_reads, setup,
		    teardown),
		cmocka_unit_test(test_inventory_serve),
		cmocka_unit_test_setup_teardown(test_rollback_child_dies, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
