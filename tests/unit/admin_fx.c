/*
 * floe: admin_fx.c -- what test_admin.c and test_admin_jobs.c share: a
 * floe with only its store in a temporary directory, the helpers that
 * drive admin_handle, and the link-time stand-ins of the triggers.
 */
#include "tests/unit/admin_fx.h"

/* What the stand-ins of the triggers were told (admin_fx.h). */
struct watch_calls watch_calls;

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

/* The tick's retry of pending lines is not driven here. */
bool
watch_rlog_write(struct floe *f __unused, void (*done)(void *, int) __unused,
    void *arg __unused)
{
	return false;
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
int
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
	/* As floe does: lines wait in the store until the log takes them. */
	rlog_attach(fx->f.rlog, fx->f.store);
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
int
teardown(void **state)
{
	struct fixture *fx = *state;

	rlog_free(fx->f.rlog);
	/* GET /eligibility's pages read ahead are this fixture's. */
	admin_elig_keep(NULL, 0, NULL, 0);
	routing_tmp_close(fx->tmp);
	stats_clear(&fx->f.stats);
	free(fx);
	return 0;
}

/* Serve METHOD TARGET BODY as peer UID; the reply's JSON in *OUT (or NULL). */
int
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
json_t *
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
const char *
str(const json_t *j, const char *key)
{
	const json_t *v = json_object_get(j, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

/* Integer member KEY of J (-1 when absent). */
json_int_t
num(const json_t *j, const char *key)
{
	const json_t *v = json_object_get(j, key);

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* The raw body of a reply expecting 200. Caller frees. */
char *
raw(struct fixture *fx, const char *method, const char *target)
{
	struct admin_reply rep;

	admin_handle(&fx->f, method, target, strlen(target), NULL, UID, &rep,
	    NULL, NULL);
	assert_int_equal(rep.status, 200);
	return rep.body;
}

/* GET /rollbacks?after=AFTER: the lines, checking "next". Caller frees. */
json_t *
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
size_t
rollback_lines(struct fixture *fx)
{
	json_t *list = rollbacks(fx, 0);
	size_t n = json_array_size(list);

	json_decref(list);
	return n;
}

/* The store's routes and waves as one string. Caller frees. */
char *
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
void
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
void
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
void
force_state(struct fixture *fx, uint32_t n, int state)
{
	json_t *ev = json_pack("{s:s}", "type", "test");

	assert_int_equal(store_wave_update(fx->f.store, n, units_now_ms(),
			     force_state_cb, &state, ev),
	    STORE_OK);
	json_decref(ev);
}

/* The events since SEQ (a JSON array). Caller decrefs. */
json_t *
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

/* admin_later_cb: keep the answer and stop the loop. */
void
later_cb(struct admin_reply *rep, void *arg)
{
	struct later *l = arg;

	l->calls++;
	l->status = rep->status;
	json_decref(l->body);
	l->moved = rep->buf != NULL;
	if (rep->buf != NULL) {
		l->body =
		    json_loadb((const char *)evbuffer_pullup(rep->buf, -1),
			evbuffer_get_length(rep->buf), 0, NULL);
		evbuffer_free(rep->buf);
	} else
		l->body = json_loadb(rep->body, rep->len, 0, NULL);
	free(rep->body);
	if (l->base != NULL)
		event_base_loopbreak(l->base);
}

/*
 * Send BODY to TARGET with a later answer; the import takes the body's
 * bytes and is answered from the loop, once, with STATUS.
 */
void
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
