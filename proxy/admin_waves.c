/*
 * floe: admin_waves.c -- the waves of the admin API: GET /waves and
 * /waves/{n}, their counts for GET /status, the transitions (POST
 * /waves/{n}/VERB, one function per verb, each behind its gate where it
 * has one; wave.c decides and records) and POST /waves/{n}/errors, read
 * errors that consumers saw.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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

/* The routes of one wave, for GET /waves/{n}. */
struct admin_wave_routes {
	uint32_t n;
	json_t *objects;
	json_t *rules;
};

static int admin_waves_rec_cb(const struct store_wave *, void *);
static int admin_waves_route_cb(const void *, size_t,
    const struct store_route *, void *);
static int admin_wave_sum_cmp(const void *, const void *);
static json_t *admin_wave_sum_json(const struct admin_wave_sum *);
static int admin_wave_routes_cb(const void *, size_t,
    const struct store_route *, void *);
static void admin_rollback_logged(struct admin_req *, uint32_t, int,
    const char *, int, const char *);

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
		log_warnx("admin: reading wave %u from the store failed", n);
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

/* Append a route's wave to the list, counted as an object or a rule. */
static int
admin_waves_route_cb(const void *key, size_t keylen,
    const struct store_route *rt, void *arg)
{
	struct admin_wave_list *l = arg;
	struct admin_wave_sum *s;
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	if (l->len == l->cap) {
		l->cap = l->cap != 0 ? l->cap * 2 : 16;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	s = &l->v[l->len++];
	memset(s, 0, sizeof(*s));
	s->n = rt->wave;
	if (obj.rule)
		s->rules = 1;
	else
		s->objects = 1;
	return 0;
}

/* Order by wave, the record first. */
static int
admin_wave_sum_cmp(const void *a, const void *b)
{
	const struct admin_wave_sum *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return (int)y->has_rec - (int)x->has_rec;
}

/*
 * Every wave that has a record or a route, in order, with its counts.
 * 0 or -1 (store error).
 */
int
admin_waves_collect(struct store *st, struct admin_wave_list *l)
{
	size_t i, o;

	memset(l, 0, sizeof(*l));
	if (store_wave_foreach(st, admin_waves_rec_cb, l) < 0 ||
	    store_route_foreach(st, admin_waves_route_cb, l) < 0) {
		free(l->v);
		memset(l, 0, sizeof(*l));
		return -1;
	}
	if (l->len == 0)
		return 0;
	qsort(l->v, l->len, sizeof(*l->v), admin_wave_sum_cmp);
	for (i = 1, o = 0; i < l->len; i++) {
		if (l->v[i].n == l->v[o].n) {
			l->v[o].objects += l->v[i].objects;
			l->v[o].rules += l->v[i].rules;
			continue;
		}
		if (!l->v[o].has_rec)
			l->v[o].w.state = WAVE_WAREHOUSE;
		l->v[++o] = l->v[i];
	}
	l->len = o + 1;
	return 0;
}

/* The summary object of one wave (GET /waves and transitions). */
static json_t *
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

/* Collect the objects and rules of one wave. */
static int
admin_wave_routes_cb(const void *key, size_t keylen,
    const struct store_route *rt, void *arg)
{
	struct admin_wave_routes *wr = arg;
	struct route_obj obj;
	char text[STORE_KEY_MAX * 3 + 8];

	if (rt->wave != wr->n || route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	route_obj_format(&obj, text, sizeof(text));
	return json_array_append_new(obj.rule ? wr->rules : wr->objects,
	    json_string(text));
}

/*
 * stats_status_cb (ARG: the struct floe): how many waves are in each
 * state; null if the store cannot say.
 */
json_t *
admin_waves_status_cb(void *arg)
{
	struct floe *f = arg;
	struct admin_wave_list l;
	unsigned counts[WAVE_NSTATES];
	json_t *waves;
	size_t i;
	int s;

	if (f->store == NULL || admin_waves_collect(f->store, &l) == -1)
		return json_null();
	memset(counts, 0, sizeof(counts));
	for (i = 0; i < l.len; i++)
		if (l.v[i].w.state < WAVE_NSTATES)
			counts[l.v[i].w.state]++;
	free(l.v);
	waves = json_object();
	for (s = 0; s < WAVE_NSTATES; s++)
		json_object_set_new(waves, wave_state_name(s),
		    json_integer(counts[s]));
	return waves;
}

/* GET /waves: every wave with a record or a route. */
void
admin_waves_get(struct admin_req *r)
{
	struct admin_wave_list l;
	json_t *list;
	size_t i;

	if (admin_waves_collect(r->st, &l) == -1) {
		log_warnx("admin: listing waves failed: store error");
		admin_error(r, 500, "store error listing waves");
		return;
	}
	list = json_array();
	for (i = 0; i < l.len; i++)
		json_array_append_new(list, admin_wave_sum_json(&l.v[i]));
	free(l.v);
	admin_reply_json(r, 200, json_pack("{s:o}", "waves", list));
}

/* GET /waves/{n}: one wave in detail with its objects and rules. */
void
admin_wave_get(struct admin_req *r)
{
	struct admin_wave_routes wr;
	struct store_wave w;
	uint32_t n;
	bool has_rec;
	char dur[32];
	json_t *j;

	if (admin_parse_wave(r, r->seg[1], &n) == -1 ||
	    admin_wave_state(r, n, &w, &has_rec) == -1)
		return;
	wr.n = n;
	wr.objects = json_array();
	wr.rules = json_array();
	if (store_route_foreach(r->st, admin_wave_routes_cb, &wr) < 0) {
		json_decref(wr.objects);
		json_decref(wr.rules);
		log_warnx("admin: listing routes of wave %u failed", n);
		admin_error(r, 500, "store error listing the routes of wave %u",
		    n);
		return;
	}
	if (!has_rec && json_array_size(wr.objects) == 0 &&
	    json_array_size(wr.rules) == 0) {
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
	admin_reply_json(r, 200, j);
}

/*
 * An operator's rollback of wave N from FROM ended RC (MSG says how): the
 * one log line saying so (wave.c leaves it to the caller) and, done, its
 * line in the rollback log, like a trigger's.
 */
static void
admin_rollback_logged(struct admin_req *r, uint32_t n, int from,
    const char *reason, int rc, const char *msg)
{
	struct rlog_entry e = { .wave = n,
		.from = wave_state_name(from),
		.trigger = "operator",
		.actor = r->actor,
		.reason = reason };
	json_t *line;

	if (rc == WAVE_REFUSED) {
		log_info("wave %u: rollback refused (%s): %s", n, r->actor,
		    msg);
		return;
	}
	if (rc != WAVE_OK) {
		log_warnx("%s: rollback by %s: %s", __func__, r->actor, msg);
		return;
	}
	line = rlog_line(&e, r->st, r->now_ms);
	if (rlog_write(r->f->rlog, line) == -1)
		log_warn("%s: wave %u: the rollback log line could not be "
			 "written",
		    __func__, n);
	json_decref(line);
	log_info("wave %u rolled back from %s by %s (operator)", n, e.from,
	    r->actor);
}

/*
 * POST /waves/{n}/flip|rollback|ack|signoff|freeze|retire|set: one
 * transition through wave.h, behind its gate where it has one. Answers the
 * wave's summary with "from", the state it left.
 */
void
admin_wave_move(struct admin_req *r, const char *what)
{
	static const char *const flip_known[] = { "to", "pct", "reason", NULL };
	static const char *const rb_known[] = { "reason", "force_stale", NULL };
	static const char *const signoff_known[] = { "by", NULL };
	static const char *const freeze_known[] = { "reason", NULL };
	static const char *const set_known[] = { "gate_min_clean",
		"gate_window", "count_check", NULL };
	static const char *const none_known[] = { NULL };
	struct admin_evidence ev;
	struct admin_wave_sum s;
	struct store_wave before, *w;
	struct wave_gate gate, *gp = NULL;
	struct wave_overrides ov;
	struct wave_baseline base;
	const char *to = NULL, *reason = NULL, *by = NULL, *win = NULL;
	json_int_t pct = 0, minc = 0;
	bool force_stale = false, has_rec, gated = false, decom = false;
	char msg[1024], gmsg[1024], dur[32];
	uint64_t grace_ms, win_ms;
	uint32_t n;
	json_t *b, *j, *v;
	int rc, state = WAVE_LAKEHOUSE;

	memset(&ev, 0, sizeof(ev));
	memset(&ov, 0, sizeof(ov));
	if (admin_parse_wave(r, r->seg[1], &n) == -1)
		return;
	if ((b = admin_body(r,
		 strcmp(what, "flip") != 0 && strcmp(what, "signoff") != 0 &&
		     strcmp(what, "set") != 0)) == NULL)
		return;
	if (strcmp(what, "flip") == 0) {
		if (admin_body_check(r, b, flip_known) == -1 ||
		    admin_body_string(r, b, "to", true, &to) == -1 ||
		    admin_body_string(r, b, "reason", false, &reason) == -1)
			goto out;
		state = wave_state_parse(to);
		if (state != WAVE_LAKEHOUSE && state != WAVE_CANARY) {
			admin_error(r, 400,
			    "field \"to\" must be \"lakehouse\" or \"canary\"");
			goto out;
		}
		if (state == WAVE_CANARY) {
			if (admin_body_int(r, b, "pct", true, 0, 1, 100,
				&pct) == -1)
				goto out;
		} else if (json_object_get(b, "pct") != NULL) {
			if (admin_body_int(r, b, "pct", false, 100, 100, 100,
				&pct) == -1)
				goto out;
		} else
			pct = 100;
		gated = true;
	} else if (strcmp(what, "rollback") == 0) {
		if (admin_body_check(r, b, rb_known) == -1 ||
		    admin_body_string(r, b, "reason", false, &reason) == -1 ||
		    admin_body_bool(r, b, "force_stale", &force_stale) == -1)
			goto out;
	} else if (strcmp(what, "signoff") == 0) {
		if (admin_body_check(r, b, signoff_known) == -1 ||
		    admin_body_string(r, b, "by", true, &by) == -1)
			goto out;
		if (by[0] == '\0' || strlen(by) >= sizeof(before.signoff)) {
			admin_error(r, 400,
			    "field \"by\" must name who signs off (1..%zu "
			    "bytes)",
			    sizeof(before.signoff) - 1);
			goto out;
		}
	} else if (strcmp(what, "freeze") == 0) {
		if (admin_body_check(r, b, freeze_known) == -1 ||
		    admin_body_string(r, b, "reason", false, &reason) == -1)
			goto out;
		gated = decom = true;
	} else if (strcmp(what, "set") == 0) {
		if (admin_body_check(r, b, set_known) == -1)
			goto out;
		if ((v = json_object_get(b, "gate_min_clean")) != NULL) {
			ov.set_min_clean = true;
			if (!json_is_null(v) &&
			    admin_body_int(r, b, "gate_min_clean", true, 0, 1,
				1000000, &minc) == -1)
				goto out;
			ov.min_clean = (uint32_t)minc;
		}
		if ((v = json_object_get(b, "gate_window")) != NULL) {
			ov.set_window = true;
			if (!json_is_null(v)) {
				if (admin_body_string(r, b, "gate_window", true,
					&win) == -1)
					goto out;
				if (units_duration(win, &win_ms) == -1 ||
				    win_ms == 0 || win_ms > INT64_MAX / 2) {
					admin_error(r, 400,
					    "gate_window \"%s\" is not a "
					    "duration (\"14d\")",
					    win);
					goto out;
				}
				ov.window_ms = (int64_t)win_ms;
			}
		}
		if (json_object_get(b, "count_check") != NULL) {
			ov.set_count_check = true;
			if (admin_body_bool(r, b, "count_check",
				&ov.count_check) == -1)
				goto out;
		}
		if (!ov.set_min_clean && !ov.set_window &&
		    !ov.set_count_check) {
			admin_error(r, 400,
			    "give gate_min_clean, gate_window, count_check or "
			    "several (null returns to the policy's)");
			goto out;
		}
	} else if (admin_body_check(r, b, none_known) == -1)
		goto out;

	if (admin_wave_state(r, n, &before, NULL) == -1)
		goto out;
	admin_policy(r, &ev.defaults, &grace_ms);
	if (gated) {
		if (admin_evidence(r, n, &before, &ev) == -1) {
			log_warnx("admin: wave %u: reading the ledger for the "
				  "gate failed",
			    n);
			admin_error(r, 500,
			    "store error reading the ledger; nothing changed");
			goto out;
		}
		gmsg[0] = '\0';
		memset(&gate, 0, sizeof(gate));
		gate.pass = admin_verdict(&ev, decom, before.signoff, gmsg,
		    sizeof(gmsg));
		gate.seq = before.seq;
		gate.msg = gmsg;
		gate.evidence = admin_evidence_json(&ev, decom, false);
		/* gate_min_clean = 0 turns the cutover gate off. */
		gp = !decom && ev.p.min_clean == 0 ? NULL : &gate;
	}
	msg[0] = '\0';
	if (strcmp(what, "flip") == 0) {
		/* The error trigger's baseline goes with the flip. */
		watch_baseline(r->f->watch, n, &base);
		rc = wave_flip_base(r->st, n, state, (unsigned)pct, gp, &base,
		    r->actor, reason, r->now_ms, msg, sizeof(msg));
	} else if (strcmp(what, "rollback") == 0)
		rc = wave_rollback(r->st, n, r->actor, reason, force_stale,
		    r->now_ms, msg, sizeof(msg));
	else if (strcmp(what, "signoff") == 0)
		rc = wave_signoff(r->st, n, by, r->actor, r->now_ms, msg,
		    sizeof(msg));
	else if (strcmp(what, "freeze") == 0)
		rc = wave_freeze(r->st, n, gp, grace_ms, r->actor, reason,
		    r->now_ms, msg, sizeof(msg));
	else if (strcmp(what, "retire") == 0)
		rc = wave_retire(r->st, n, grace_ms, r->actor, r->now_ms, msg,
		    sizeof(msg));
	else if (strcmp(what, "set") == 0)
		rc = wave_set(r->st, n, &ov, r->actor, r->now_ms, msg,
		    sizeof(msg));
	else
		rc = wave_ack(r->st, n, r->actor, r->now_ms, msg, sizeof(msg));
	if (gated)
		json_decref(gate.evidence);
	if (strcmp(what, "rollback") == 0)
		admin_rollback_logged(r, n, before.state, reason, rc, msg);
	/*
	 * wave.c recorded the outcome, refusals included, and logged it (a
	 * rollback's was said just above).
	 */
	if (rc == WAVE_REFUSED) {
		admin_refused(r,
		    msg[0] != '\0' ? msg : "the transition was refused",
		    gp != NULL && !gate.pass && strcmp(msg, gmsg) == 0 ?
			admin_evidence_json(&ev, decom, true) :
			NULL);
		goto out;
	}
	if (rc != WAVE_OK) {
		admin_error(r, 500, "%s",
		    msg[0] != '\0' ? msg : "the store failed; nothing changed");
		goto out;
	}

	memset(&s, 0, sizeof(s));
	s.n = n;
	if (admin_wave_state(r, n, &s.w, &has_rec) == -1)
		goto out;
	s.has_rec = has_rec;
	w = &s.w;
	j = admin_wave_sum_json(&s);
	/* The counts are not gathered here; a transition moves no route. */
	json_object_del(j, "objects");
	json_object_del(j, "rules");
	json_object_set_new(j, "from",
	    json_string(wave_state_name(before.state)));
	json_object_set_new(j, "message", json_string(msg));
	if (strcmp(what, "signoff") == 0)
		json_object_set_new(j, "signoff", admin_str_json(w->signoff));
	if (strcmp(what, "freeze") == 0) {
		json_object_set_new(j, "frozen", admin_time_json(w->frozen_ms));
		json_object_set_new(j, "grace_ends",
		    admin_time_json(w->frozen_ms + (int64_t)grace_ms));
	}
	if (strcmp(what, "set") == 0) {
		if (w->gate_window_ms > 0)
			units_format_duration((uint64_t)w->gate_window_ms, dur,
			    sizeof(dur));
		json_object_set_new(j, "gate_min_clean",
		    w->gate_min_clean > 0 ? json_integer(w->gate_min_clean) :
					    json_null());
		json_object_set_new(j, "gate_window",
		    w->gate_window_ms > 0 ? json_string(dur) : json_null());
		json_object_set_new(j, "count_check",
		    json_boolean(!(w->flags & WAVE_F_NO_COUNT_CHECK)));
	}
	admin_reply_json(r, 200, j);
out:
	admin_evidence_clear(&ev);
	json_decref(b);
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
