/*
 * floe: admin_waves.c -- the waves of the admin API: GET /waves and
 * /waves/{n}, their counts for GET /status, and POST /waves/{n}/errors,
 * read errors that consumers saw. Their transitions are in
 * admin_verbs.c.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/gate.h"
#include "policy/rlog.h"
#include "proxy/admin_impl.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

#define ADMIN_WAVES_MAX 100000 /* the largest page of GET /waves */

/* The routes of one wave, or a page of them, for GET /waves/{n}. */
struct admin_wave_routes {
	uint32_t n;
	json_t *objects;
	json_t *rules;
	size_t limit; /* 0: no limit */
	size_t count; /* objects and rules so far */
	bool more; /* a route past the limit exists */
	char last[ADMIN_TEXT_MAX]; /* the last one */
};

static int admin_waves_rec_cb(const struct store_wave *, void *);
static int admin_waves_count_cb(const struct store_wave_count *, void *);
static int admin_wave_sum_cmp(const void *, const void *);
static int admin_wave_event_cb(uint64_t, const char *, size_t, void *);
static json_t *admin_wave_rollback_json(struct store *,
    const struct store_wave *);
static int admin_wave_routes_cb(const void *, size_t, void *);

/*
 * Read wave N into *W (zero-filled, state warehouse, when it has no record;
 * *HAS_REC says which). 0, or -1 with a 500 reply.
 */
int
admin_wave_state(struct admin_req *r, uint32_t n, struct store_wave *w,
    bool *has_rec)
{
	int rc;

	memset(w, 0, sizeof(*w));
	rc = store_wave_get(r->st, n, w);
	if (rc == STORE_NOTFOUND) {
		memset(w, 0, sizeof(*w));
		w->n = n;
		w->state = WAVE_WAREHOUSE;
		if (has_rec != NULL)
			*has_rec = false;
		return 0;
	}
	if (rc != STORE_OK) {
		log_warnx("%s: reading wave %u from the store failed", __func__,
		    n);
		admin_error(r, 500, "store error reading wave %u", n);
		return -1;
	}
	if (has_rec != NULL)
		*has_rec = true;
	return 0;
}

/* Append a wave record to the list. */
static int
admin_waves_rec_cb(const struct store_wave *w, void *arg)
{
	struct admin_wave_list *l = arg;
	struct admin_wave_sum *s;

	if (l->len == l->cap) {
		l->cap = l->cap != 0 ? l->cap * 2 : 16;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	s = &l->v[l->len++];
	memset(s, 0, sizeof(*s));
	s->n = w->n;
	s->has_rec = true;
	s->w = *w;
	return 0;
}

/*
 * Put a wave's counts (the store keeps them per wave) into the list,
 * which is in wave order with one entry per wave.
 */
static int
admin_waves_count_cb(const struct store_wave_count *c, void *arg)
{
	struct admin_wave_list *l = arg;
	size_t lo = 0, hi = l->len, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (l->v[mid].n < c->wave)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == l->len || l->v[lo].n != c->wave) {
		if (l->len == l->cap) {
			l->cap = l->cap != 0 ? l->cap * 2 : 16;
			l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
		}
		memmove(&l->v[lo + 1], &l->v[lo],
		    (l->len - lo) * sizeof(*l->v));
		l->len++;
		memset(&l->v[lo], 0, sizeof(l->v[lo]));
		l->v[lo].n = c->wave;
		l->v[lo].w.state = WAVE_WAREHOUSE;
	}
	l->v[lo].objects = (unsigned)c->objects;
	l->v[lo].rules = (unsigned)c->rules;
	return 0;
}

/* Order by wave. */
static int
admin_wave_sum_cmp(const void *a, const void *b)
{
	const struct admin_wave_sum *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return 0;
}

/*
 * Every wave that has a record or a route, in order, with its counts.
 * 0 or -1 (store error).
 */
int
admin_waves_collect(struct store *st, struct admin_wave_list *l)
{
	memset(l, 0, sizeof(*l));
	if (store_wave_foreach(st, admin_waves_rec_cb, l) < 0)
		goto fail;
	/* The records in wave order; then the counts the store keeps. */
	if (l->len > 1)
		qsort(l->v, l->len, sizeof(*l->v), admin_wave_sum_cmp);
	if (store_count_foreach(st, admin_waves_count_cb, l) < 0)
		goto fail;
	return 0;
fail:
	free(l->v);
	memset(l, 0, sizeof(*l));
	return -1;
}

/* The summary object of one wave (GET /waves and transitions). */
json_t *
admin_wave_sum_json(const struct admin_wave_sum *s)
{
	const struct store_wave *w = &s->w;
	int state = s->has_rec ? w->state : WAVE_WAREHOUSE;

	return json_pack("{s:I,s:s,s:i,s:o,s:o,s:o,s:I,s:I}", "wave",
	    (json_int_t)s->n, "state", wave_state_name(state), "pct",
	    s->has_rec ? w->pct : 0, "since",
	    admin_time_json(s->has_rec ? w->since_ms : 0), "reason",
	    s->has_rec ? admin_str_json(w->reason) : json_null(), "actor",
	    s->has_rec ? admin_str_json(w->actor) : json_null(), "objects",
	    (json_int_t)s->objects, "rules", (json_int_t)s->rules);
}

/*
 * Collect the objects and rules of one wave; past the limit, only note
 * that there are more and stop.
 */
static int
admin_wave_routes_cb(const void *key, size_t keylen, void *arg)
{
	struct admin_wave_routes *wr = arg;
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	if (wr->limit > 0 && wr->count == wr->limit) {
		wr->more = true;
		return 1;
	}
	route_obj_format(&obj, wr->last, sizeof(wr->last));
	wr->count++;
	return json_array_append_new(obj.rule ? wr->rules : wr->objects,
	    json_string(wr->last));
}

/*
 * stats_status_cb (ARG: the struct floe): how many waves are in each
 * state; null if the store cannot say. The waves with routes come from
 * the store's per-wave counts, so this reads a record per wave, never
 * every route.
 */
json_t *
admin_waves_status_cb(void *arg)
{
	struct floe *f = arg;
	struct admin_wave_list l;
	unsigned count[WAVE_NSTATES];
	json_t *waves;
	size_t i;
	int s;

	if (f->store == NULL || admin_waves_collect(f->store, &l) == -1)
		return json_null();
	memset(count, 0, sizeof(count));
	for (i = 0; i < l.len; i++)
		if (l.v[i].w.state < WAVE_NSTATES)
			count[l.v[i].w.state]++;
	free(l.v);
	waves = json_object();
	for (s = 0; s < WAVE_NSTATES; s++)
		json_object_set_new(waves, wave_state_name(s),
		    json_integer(count[s]));
	return waves;
}

/*
 * GET /waves[?limit=N&after=W]: every wave with a record or a route, in
 * order; with a limit, a page of them and "next", the wave to ask after
 * for the next page (null: none). A record and the store's counts per
 * wave: no walk of the routes.
 */
void
admin_waves_get(struct admin_req *r)
{
	struct admin_wave_list l;
	unsigned long long limit = 0, after = 0;
	uint32_t last = 0;
	bool has_after;
	json_t *list, *next = NULL;
	char *v = NULL;
	size_t i;

	if (admin_query_uint(r, "limit", 1, ADMIN_WAVES_MAX, NULL, &limit) ==
	    -1)
		return;
	has_after = admin_query_get(r, "after", &v) == 1;
	free(v);
	if (admin_query_uint(r, "after", 0, WAVE_MAX, "a wave number",
		&after) == -1)
		return;
	if (admin_waves_collect(r->st, &l) == -1) {
		log_warnx("%s: listing waves failed: store error", __func__);
		admin_error(r, 500, "store error listing waves");
		return;
	}
	list = json_array();
	for (i = 0; i < l.len; i++) {
		if (has_after && l.v[i].n <= after)
			continue;
		if (limit > 0 && json_array_size(list) == limit) {
			next = json_integer(last);
			break;
		}
		json_array_append_new(list, admin_wave_sum_json(&l.v[i]));
		last = l.v[i].n;
	}
	free(l.v);
	admin_reply_json(r, 200,
	    json_pack("{s:o,s:o}", "waves", list, "next",
		next != NULL ? next : json_null()));
}

/*
 * GET /waves/{n}[?limit=N&after=OBJECT]: one wave in detail with its
 * objects and rules, in key order; with a limit, N of them (objects and
 * rules together) and "next", the one to ask after (null: none).
 */
void
admin_wave_get(struct admin_req *r)
{
	struct admin_wave_routes wr;
	struct store_wave w;
	struct route_obj after;
	unsigned long long limit = 0;
	uint32_t n;
	bool has_rec, has_after;
	char dur[32];
	json_t *j;

	if (admin_parse_wave(r, r->seg[1], &n) == -1 ||
	    admin_query_uint(r, "limit", 1, ADMIN_WAVES_MAX, NULL, &limit) ==
		-1)
		return;
	if (admin_query_object(r, "after", &after, &has_after) == -1 ||
	    admin_wave_state(r, n, &w, &has_rec) == -1)
		return;
	memset(&wr, 0, sizeof(wr));
	wr.n = n;
	wr.limit = (size_t)limit;
	wr.objects = json_array();
	wr.rules = json_array();
	if (store_wave_routes(r->st, n, has_after ? after.key : NULL,
		has_after ? after.len : 0, admin_wave_routes_cb, &wr) < 0) {
		json_decref(wr.objects);
		json_decref(wr.rules);
		log_warnx("%s: listing routes of wave %u failed", __func__, n);
		admin_error(r, 500, "store error listing the routes of wave %u",
		    n);
		return;
	}
	if (!has_rec && !has_after && wr.count == 0) {
		json_decref(wr.objects);
		json_decref(wr.rules);
		admin_error(r, 404, "wave %u has no routes and no state", n);
		return;
	}
	if (w.gate_window_ms > 0)
		units_format_duration((uint64_t)w.gate_window_ms, dur,
		    sizeof(dur));
	j = json_pack("{s:I,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
		      "s:o,s:o,s:o}",
	    "wave", (json_int_t)n, "state", wave_state_name(w.state), "pct",
	    w.pct, "since", admin_time_json(w.since_ms), "reason",
	    admin_str_json(w.reason), "actor", admin_str_json(w.actor),
	    "flipped", admin_time_json(w.flipped_ms), "frozen",
	    admin_time_json(w.frozen_ms), "rolled_back",
	    admin_time_json(w.rollback_ms), "signoff",
	    admin_str_json(w.signoff), "signoff_at",
	    admin_time_json(w.signoff_ms), "gate_min_clean",
	    w.gate_min_clean > 0 ? json_integer(w.gate_min_clean) : json_null(),
	    "gate_window",
	    w.gate_window_ms > 0 ? json_string(dur) : json_null(), "objects",
	    wr.objects, "rules", wr.rules);
	/* A frozen wave's split-brain alarm, until acknowledged. */
	json_object_set_new(j, "split_brain", admin_time_json(w.alarm_ms));
	json_object_set_new(j, "alarm_acked", admin_time_json(w.alarm_ack_ms));
	json_object_set_new(j, "next",
	    wr.more ? json_string(wr.last) : json_null());
	if (j != NULL && w.state == WAVE_ROLLED_BACK)
		json_object_set_new(j, "rollback",
		    admin_wave_rollback_json(r->st, &w));
	admin_reply_json(r, 200, j);
}

/* store_event_cb: keep the one event asked for. */
static int
admin_wave_event_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	(void)seq;
	*(json_t **)arg = json_loadb(json, len, 0, NULL);
	return 1;
}

/*
 * The evidence of rolled-back wave W's rollback, from its event (the
 * wave's last transition): the trigger ("operator" for a person), the
 * measured value and threshold exact, and "evidence", the two rounded
 * for people. Null if the event cannot be read. Caller frees.
 */
static json_t *
admin_wave_rollback_json(struct store *st, const struct store_wave *w)
{
	json_t *ev = NULL, *j;
	const char *trig;
	char m[128], t[128];

	if (w->seq == 0 ||
	    store_event_foreach(st, w->seq - 1, 1, admin_wave_event_cb, &ev) <
		0 ||
	    ev == NULL)
		return json_null();
	trig = json_string_value(json_object_get(ev, "trigger"));
	j = json_pack("{s:s,s:O?,s:O?,s:O?}", "trigger",
	    trig != NULL ? trig : "operator", "at", json_object_get(ev, "ts"),
	    "measured", json_object_get(ev, "measured"), "threshold",
	    json_object_get(ev, "threshold"));
	if (j != NULL && trig != NULL) {
		rlog_value_text(trig, json_object_get(ev, "measured"), m,
		    sizeof(m));
		rlog_value_text(trig, json_object_get(ev, "threshold"), t,
		    sizeof(t));
		json_object_set_new(j, "evidence",
		    json_sprintf("measured %s, threshold %s", m, t));
	}
	json_decref(ev);
	return j != NULL ? j : json_null();
}

/*
 * POST /waves/{n}/errors {"errors":E,"total":T[,"side":S]}: read errors
 * that consumers saw, counted like floe's own; the error trigger is
 * checked before the answer.
 */
void
admin_wave_errors(struct admin_req *r)
{
	static const char *const known[] = { "errors", "total", "side", NULL };
	json_int_t errors = 0, total = 0;
	const char *side = NULL;
	char msg[256];
	uint32_t n;
	json_t *b, *j;
	int s = -1;

	if (admin_parse_wave(r, r->seg[1], &n) == -1)
		return;
	if ((b = admin_body(r, false)) == NULL)
		return;
	if (admin_body_check(r, b, known) == -1 ||
	    admin_body_int(r, b, "total", true, 0, 1, 1000000000, &total) ==
		-1 ||
	    admin_body_int(r, b, "errors", true, 0, 0, 1000000000, &errors) ==
		-1 ||
	    admin_body_string(r, b, "side", false, &side) == -1)
		goto out;
	if (errors > total) {
		admin_error(r, 400,
		    "errors (%lld) cannot be more than total (%lld)",
		    (long long)errors, (long long)total);
		goto out;
	}
	if (side != NULL) {
		if (strcmp(side, "warehouse") == 0)
			s = ROUTE_WAREHOUSE;
		else if (strcmp(side, "lakehouse") == 0)
			s = ROUTE_LAKEHOUSE;
		else {
			admin_error(r, 400,
			    "side must be \"warehouse\" or \"lakehouse\"");
			goto out;
		}
	}
	if ((j = watch_report_errors(r->f, n, s, (uint64_t)errors,
		 (uint64_t)total, msg, sizeof(msg))) == NULL) {
		admin_error(r, 500, "%s", msg);
		goto out;
	}
	log_info("wave %u: %lld errors in %lld reads reported by %s", n,
	    (long long)errors, (long long)total, r->actor);
	admin_reply_json(r, 200, j);
out:
	json_decref(b);
}
