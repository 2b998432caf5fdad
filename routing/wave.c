/*
 * floe: wave.c -- the wave lifecycle. Each transition is one
 * store_wave_update: the rules below decide inside the write txn, on the
 * state just read, and every outcome, refusals included, leaves an event.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "routing/store.h"
#include "routing/wave.h"

static const char *const wave_names[WAVE_NSTATES] = {
	[WAVE_WAREHOUSE] = "warehouse",
	[WAVE_CANARY] = "canary",
	[WAVE_LAKEHOUSE] = "lakehouse",
	[WAVE_ROLLED_BACK] = "rolled_back",
	[WAVE_FROZEN] = "frozen",
	[WAVE_RETIRED] = "retired",
};

enum wave_action {
	WAVE_ACT_FLIP,
	WAVE_ACT_ROLLBACK,
	WAVE_ACT_ACK,
	WAVE_ACT_SIGNOFF,
	WAVE_ACT_FREEZE,
	WAVE_ACT_RETIRE,
	WAVE_ACT_SET,
	WAVE_ACT_ALARM,
	WAVE_ACT_ACK_ALARM,
};

/* One transition request, handed to the update callback. */
struct wave_req {
	enum wave_action action;
	uint32_t n;
	enum wave_state to; /* asked for (flip) */
	unsigned pct;
	bool force_stale;
	const char *actor;
	const char *reason;
	int64_t now_ms;
	const struct wave_gate *gate; /* flip, freeze */
	uint64_t grace_ms; /* freeze, retire */
	const char *by; /* signoff */
	const struct wave_overrides *ov; /* set */
	const struct wave_baseline *base; /* flip */
	json_t *detail; /* alarm: copied into the event */
	const struct wave_evidence *ev; /* rollback by a trigger */
	wave_line_fn line_fn; /* rollback: its log line, in its txn */
	void *line_arg;
	char *line; /* LINE_FN's, once the rollback is decided */
	char msg[1024]; /* the sentence for the operator */
	uint8_t from; /* state found */
};

static void wave_msg(struct wave_req *, const char *, ...)
    __attribute__((__format__(__printf__, 2, 3)));
static int wave_refuse(struct wave_req *, struct store_wave *, json_t *,
    bool *);
static int wave_gate_check(const struct store_wave *, struct wave_req *,
    json_t *);
static void wave_time(int64_t, char *, size_t);
static int wave_flip_cb(struct store_wave *, json_t *, bool *, void *);
static int wave_rollback_cb(struct store_wave *, json_t *, bool *, void *);
static int wave_ack_cb(struct store_wave *, json_t *, bool *, void *);
static int wave_signoff_cb(struct store_wave *, json_t *, bool *, void *);
static int wave_freeze_cb(struct store_wave *, json_t *, bool *, void *);
static int wave_retire_cb(struct store_wave *, json_t *, bool *, void *);
static int wave_set_cb(struct store_wave *, json_t *, bool *, void *);
static int wave_alarm_cb(struct store_wave *, json_t *, bool *, void *);
static int wave_ack_alarm_cb(struct store_wave *, json_t *, bool *, void *);
static void wave_req_flip(struct wave_req *, uint32_t, enum wave_state,
    unsigned, const struct wave_gate *, int64_t);
static void wave_req_freeze(struct wave_req *, uint32_t,
    const struct wave_gate *, uint64_t, int64_t);
static void wave_req_retire(struct wave_req *, uint32_t, uint64_t, int64_t);
static void wave_enter(struct wave_req *, struct store_wave *, enum wave_state,
    json_t *, const char *);
static int wave_run(struct store *, struct wave_req *, char *, size_t);

/* Name of state S ("rolled_back"); "unknown" for a state from a newer floe. */
/*
 * Each action's rules (the update callback that decides it, the real move
 * and its dry run alike), its name in a refusal's event and in the log.
 */
static const struct wave_move {
	store_wave_update_cb cb;
	const char *action;
	const char *verb;
} wave_moves[] = {
	[WAVE_ACT_FLIP] = { wave_flip_cb, "flip", "flip" },
	[WAVE_ACT_ROLLBACK] = { wave_rollback_cb, "rollback", "rollback" },
	[WAVE_ACT_ACK] = { wave_ack_cb, "ack", "ack" },
	[WAVE_ACT_SIGNOFF] = { wave_signoff_cb, "signoff", "signoff" },
	[WAVE_ACT_FREEZE] = { wave_freeze_cb, "freeze", "freeze" },
	[WAVE_ACT_RETIRE] = { wave_retire_cb, "retire", "retire" },
	[WAVE_ACT_SET] = { wave_set_cb, "set", "set" },
	[WAVE_ACT_ALARM] = { wave_alarm_cb, "alarm", "split-brain alarm" },
	[WAVE_ACT_ACK_ALARM] = { wave_ack_alarm_cb, "ack-alarm", "ack-alarm" },
};

const char *
wave_state_name(enum wave_state s)
{
	if ((unsigned)s >= WAVE_NSTATES)
		return "unknown";
	return wave_names[s];
}

/* The state called NAME, or -1. */
int
wave_state_parse(const char *name)
{
	int i;

	for (i = 0; i < WAVE_NSTATES; i++) {
		if (strcmp(name, wave_names[i]) == 0)
			return i;
	}
	return -1;
}

/* Parse a wave number: decimal digits only, no sign or leading zero. */
int
wave_parse(const char *s, uint32_t *n)
{
	uint64_t v = 0;
	size_t i, len = strlen(s);

	if (len == 0 || len > 10 || (s[0] == '0' && len > 1))
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > WAVE_MAX)
		return -1;
	*n = (uint32_t)v;
	return 0;
}

/* Write a sentence for the operator into the request's MSG. */
static void
wave_msg(struct wave_req *q, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q->msg, sizeof(q->msg), fmt, ap);
	va_end(ap);
}

/*
 * Turn EVENT into a wave.refused event carrying the message, and ask the
 * store to record it (the wave itself is left as it was).
 */
static int
wave_refuse(struct wave_req *q, struct store_wave *w, json_t *event,
    bool *record)
{
	enum wave_state to = q->to;

	if (q->action == WAVE_ACT_ROLLBACK)
		to = WAVE_ROLLED_BACK;
	else if (q->action == WAVE_ACT_ACK)
		to = WAVE_WAREHOUSE;
	else if (q->action == WAVE_ACT_FREEZE)
		to = WAVE_FROZEN;
	else if (q->action == WAVE_ACT_RETIRE)
		to = WAVE_RETIRED;
	else if (q->action != WAVE_ACT_FLIP)
		to = w->state;
	json_object_set_new(event, "type", json_string("wave.refused"));
	json_object_set_new(event, "action",
	    json_string(wave_moves[q->action].action));
	json_object_set_new(event, "from",
	    json_string(wave_state_name(w->state)));
	json_object_set_new(event, "to", json_string(wave_state_name(to)));
	if (q->action == WAVE_ACT_FLIP)
		json_object_set_new(event, "pct", json_integer(q->pct));
	json_object_set_new(event, "message", json_string(q->msg));
	*record = true;
	return STORE_REFUSED;
}

/* MS as RFC 3339 text, or "never". */
static void
wave_time(int64_t ms, char *buf, size_t len)
{
	if (ms == 0)
		strlcpy(buf, "never", len);
	else
		units_time_format(ms, buf, len);
}

/*
 * Apply the caller's gate verdict to the wave as read in the txn: it must
 * have been computed on this very record, and it must pass. The verdict
 * and its evidence go into EVENT either way. 0 or -1 (MSG set).
 */
static int
wave_gate_check(const struct store_wave *w, struct wave_req *q, json_t *event)
{
	const struct wave_gate *g = q->gate;
	json_t *j;

	if (g == NULL) {
		json_object_set_new(event, "gate", json_string("off"));
		return 0;
	}
	j = json_pack("{s:b,s:s}", "pass", g->pass, "message",
	    g->msg != NULL ? g->msg : "");
	if (j != NULL && g->evidence != NULL)
		json_object_set(j, "objects", g->evidence);
	if (j != NULL)
		json_object_set_new(event, "gate", j);
	if (g->seq != w->seq) {
		wave_msg(q,
		    "wave %u changed while its gate was evaluated; try "
		    "again",
		    q->n);
		return -1;
	}
	if (!g->pass) {
		wave_msg(q, "%s", g->msg != NULL ? g->msg : "the gate refused");
		return -1;
	}
	return 0;
}

/* Move W into state TO, stamping the fields and EVENT of type TYPE. */
static void
wave_enter(struct wave_req *q, struct store_wave *w, enum wave_state to,
    json_t *event, const char *type)
{
	q->from = w->state;
	if (w->state != to)
		w->since_ms = q->now_ms;
	if (w->state == WAVE_WAREHOUSE && to != WAVE_WAREHOUSE)
		w->flipped_ms = q->now_ms;
	w->state = to;
	strlcpy(w->reason, q->reason != NULL ? q->reason : "",
	    sizeof(w->reason));
	strlcpy(w->actor, q->actor != NULL ? q->actor : "", sizeof(w->actor));
	json_object_set_new(event, "type", json_string(type));
	json_object_set_new(event, "from",
	    json_string(wave_state_name(q->from)));
	json_object_set_new(event, "to", json_string(wave_state_name(to)));
	json_object_set_new(event, "pct", json_integer(w->pct));
}

/* Flip rules, applied to the wave as read in the write txn. */
static int
wave_flip_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct wave_req *q = arg;
	enum wave_state to = q->to;
	unsigned pct = q->pct, from_pct;

	q->from = w->state;
	if (to == WAVE_CANARY && pct == 100)
		to = WAVE_LAKEHOUSE;
	if (to != WAVE_CANARY && to != WAVE_LAKEHOUSE) {
		wave_msg(q,
		    "wave %u: a flip goes to canary or lakehouse, not %s", q->n,
		    wave_state_name(to));
		return wave_refuse(q, w, event, record);
	}
	if (to == WAVE_CANARY && (pct < 1 || pct > 99)) {
		wave_msg(q,
		    "wave %u: a canary share is 1 to 99%% (100%% is the "
		    "lakehouse), not %u%%",
		    q->n, pct);
		return wave_refuse(q, w, event, record);
	}
	switch (w->state) {
	case WAVE_WAREHOUSE:
		break;
	case WAVE_CANARY:
		if (to == WAVE_CANARY && pct == w->pct) {
			wave_msg(q, "wave %u is already at %u %%", q->n, pct);
			return wave_refuse(q, w, event, record);
		}
		break;
	case WAVE_LAKEHOUSE:
		/* A step down to a canary share is a flip, not a rollback. */
		if (to == WAVE_CANARY)
			break;
		wave_msg(q, "wave %u is already on the lakehouse", q->n);
		return wave_refuse(q, w, event, record);
	case WAVE_ROLLED_BACK:
		wave_msg(q,
		    "wave %u was rolled back; acknowledge the rollback "
		    "first: floectl wave ack %u",
		    q->n, q->n);
		return wave_refuse(q, w, event, record);
	case WAVE_FROZEN:
		wave_msg(q,
		    "wave %u is frozen: it can only retire, or roll back "
		    "with --force-stale",
		    q->n);
		return wave_refuse(q, w, event, record);
	case WAVE_RETIRED:
		wave_msg(q, "wave %u is retired; retired is final", q->n);
		return wave_refuse(q, w, event, record);
	default:
		wave_msg(q,
		    "wave %u is in an unknown state (%u) written by a "
		    "newer floe",
		    q->n, w->state);
		return wave_refuse(q, w, event, record);
	}
	/*
	 * The cutover gate guards every move of readers towards the
	 * lakehouse. A smaller share (a lower canary, or a step down from
	 * the lakehouse to a canary) is the safe direction: the warehouse
	 * is still dual-written.
	 */
	from_pct = w->state == WAVE_WAREHOUSE ? 0 : w->pct;
	if (!(to == WAVE_CANARY && pct <= from_pct) &&
	    wave_gate_check(w, q, event) == -1)
		return wave_refuse(q, w, event, record);

	w->pct = to == WAVE_LAKEHOUSE ? 100 : (uint8_t)pct;
	if (w->state == WAVE_WAREHOUSE) {
		w->base_requests = q->base != NULL ? q->base->requests : 0;
		w->base_errors = q->base != NULL ? q->base->errors : 0;
	}
	wave_enter(q, w, to, event, "wave.flip");
	json_object_set_new(event, "from_pct", json_integer(from_pct));
	json_object_set_new(event, "baseline",
	    json_pack("{s:I,s:I}", "requests", (json_int_t)w->base_requests,
		"errors", (json_int_t)w->base_errors));
	if (to == WAVE_CANARY && q->from == WAVE_CANARY)
		wave_msg(q, "wave %u canary %u %% → %u %%", q->n, from_pct,
		    pct);
	else if (q->from == WAVE_LAKEHOUSE)
		wave_msg(q,
		    "wave %u stepped down from lakehouse to canary: %u %% "
		    "→ %u %%",
		    q->n, from_pct, pct);
	else
		wave_msg(q, "wave %u flipped from %s to %s: %u %% → %u %%",
		    q->n, wave_state_name(q->from), wave_state_name(to),
		    from_pct, (unsigned)w->pct);
	return STORE_OK;
}

/* Rollback rules. */
static int
wave_rollback_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct wave_req *q = arg;

	q->from = w->state;
	switch (w->state) {
	case WAVE_CANARY:
	case WAVE_LAKEHOUSE:
		break;
	case WAVE_FROZEN:
		if (q->force_stale) {
			json_object_set_new(event, "force_stale", json_true());
			break;
		}
		wave_msg(q,
		    "wave %u is frozen: the warehouse copy no longer "
		    "gets writes, so a rollback would serve stale "
		    "data; use --force-stale to roll back anyway",
		    q->n);
		return wave_refuse(q, w, event, record);
	case WAVE_RETIRED:
		wave_msg(q,
		    "wave %u is retired; retired is final: the warehouse "
		    "copy of its tables is no longer written nor consulted, "
		    "so there is nothing to roll back to",
		    q->n);
		return wave_refuse(q, w, event, record);
	case WAVE_WAREHOUSE:
	case WAVE_ROLLED_BACK:
		wave_msg(q, "wave %u is %s: nothing to roll back", q->n,
		    w->state == WAVE_WAREHOUSE ? "on the warehouse" :
						 "already rolled back");
		return wave_refuse(q, w, event, record);
	default:
		wave_msg(q,
		    "wave %u is in an unknown state (%u) written by a "
		    "newer floe",
		    q->n, w->state);
		return wave_refuse(q, w, event, record);
	}
	w->pct = 0;
	w->rollback_ms = q->now_ms;
	/* A sign-off was for the run that just ended. */
	w->signoff[0] = '\0';
	w->signoff_ms = 0;
	wave_enter(q, w, WAVE_ROLLED_BACK, event, "wave.rollback");
	if (q->ev != NULL && q->ev->trigger != NULL) {
		json_object_set_new(event, "trigger",
		    json_string(q->ev->trigger));
		json_object_set(event, "measured",
		    q->ev->measured != NULL ? q->ev->measured : json_null());
		json_object_set(event, "threshold",
		    q->ev->threshold != NULL ? q->ev->threshold : json_null());
	}
	wave_msg(q, "wave %u rolled back from %s to the warehouse", q->n,
	    wave_state_name(q->from));
	/* The store keeps it pending in this txn (store_wave_update_rlog). */
	free(q->line);
	q->line = q->line_fn != NULL ? q->line_fn(q->from, q->line_arg) : NULL;
	return STORE_OK;
}

/* Acknowledge a rollback: the wave may move again. */
static int
wave_ack_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct wave_req *q = arg;

	q->from = w->state;
	if (w->state != WAVE_ROLLED_BACK) {
		wave_msg(q,
		    "wave %u is in state %s, not rolled_back: nothing to "
		    "acknowledge",
		    q->n, wave_state_name(w->state));
		return wave_refuse(q, w, event, record);
	}
	w->pct = 0;
	wave_enter(q, w, WAVE_WAREHOUSE, event, "wave.ack");
	wave_msg(q, "wave %u: rollback acknowledged, back to warehouse", q->n);
	return STORE_OK;
}

/* Sign-off rules: a wave whose readers are (partly) on the lakehouse. */
static int
wave_signoff_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct wave_req *q = arg;

	q->from = w->state;
	json_object_set_new(event, "by", json_string(q->by));
	if (w->state != WAVE_CANARY && w->state != WAVE_LAKEHOUSE) {
		wave_msg(q,
		    "wave %u is %s: a sign-off is for a wave whose readers "
		    "are on the lakehouse (canary or lakehouse)",
		    q->n, wave_state_name(w->state));
		return wave_refuse(q, w, event, record);
	}
	strlcpy(w->signoff, q->by, sizeof(w->signoff));
	w->signoff_ms = q->now_ms;
	json_object_set_new(event, "type", json_string("wave.signoff"));
	json_object_set_new(event, "state",
	    json_string(wave_state_name(w->state)));
	wave_msg(q, "wave %u signed off by %s", q->n, q->by);
	return STORE_OK;
}

/* Freeze rules: a lakehouse wave whose decommission gate holds. */
static int
wave_freeze_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct wave_req *q = arg;
	char ends[40], dur[32];

	q->from = w->state;
	if (w->state != WAVE_LAKEHOUSE) {
		if (w->state == WAVE_FROZEN)
			wave_msg(q, "wave %u is already frozen", q->n);
		else if (w->state == WAVE_CANARY)
			wave_msg(q,
			    "wave %u is a canary at %u%%: flip it to the "
			    "lakehouse before freezing it",
			    q->n, w->pct);
		else
			wave_msg(q,
			    "wave %u is %s: only a wave on the lakehouse can "
			    "be frozen",
			    q->n, wave_state_name(w->state));
		return wave_refuse(q, w, event, record);
	}
	if (wave_gate_check(w, q, event) == -1)
		return wave_refuse(q, w, event, record);
	if (w->signoff[0] == '\0') {
		/* The gate said yes without one: never freeze unsigned. */
		wave_msg(q,
		    "wave %u has no sign-off: floectl wave signoff %u "
		    "--by NAME",
		    q->n, q->n);
		return wave_refuse(q, w, event, record);
	}
	w->frozen_ms = q->now_ms;
	w->grace_ends_ms = q->now_ms + (int64_t)q->grace_ms;
	wave_enter(q, w, WAVE_FROZEN, event, "wave.freeze");
	units_time_format(q->now_ms + (int64_t)q->grace_ms, ends, sizeof(ends));
	units_format_duration(q->grace_ms, dur, sizeof(dur));
	json_object_set_new(event, "signoff", json_string(w->signoff));
	json_object_set_new(event, "grace", json_string(dur));
	json_object_set_new(event, "grace_ends", json_string(ends));
	wave_msg(q,
	    "wave %u frozen: writes to the warehouse copy are refused, the "
	    "lakehouse is authoritative; the grace period (%s) ends %s",
	    q->n, dur, ends);
	return STORE_OK;
}

/* Retire rules: frozen, grace over, no rollback since the freeze. */
static int
wave_retire_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct wave_req *q = arg;
	char t1[40], t2[40], dur[32];
	int64_t ends;

	q->from = w->state;
	units_format_duration(q->grace_ms, dur, sizeof(dur));
	if (w->frozen_ms != 0 && w->rollback_ms >= w->frozen_ms &&
	    w->state != WAVE_RETIRED) {
		wave_time(w->rollback_ms, t1, sizeof(t1));
		wave_time(w->frozen_ms, t2, sizeof(t2));
		wave_msg(q,
		    "wave %u was rolled back at %s, after its freeze at %s: "
		    "only a wave frozen again and kept for a whole grace "
		    "period (%s) without a rollback can retire",
		    q->n, t1, t2, dur);
		return wave_refuse(q, w, event, record);
	}
	if (w->state != WAVE_FROZEN) {
		if (w->state == WAVE_RETIRED)
			wave_msg(q, "wave %u is already retired", q->n);
		else
			wave_msg(q,
			    "wave %u is %s: only a frozen wave can retire "
			    "(floectl wave freeze %u first)",
			    q->n, wave_state_name(w->state), q->n);
		return wave_refuse(q, w, event, record);
	}
	ends = wave_grace_ends(w, q->grace_ms);
	wave_time(ends, t1, sizeof(t1));
	if (q->now_ms < ends) {
		wave_time(w->frozen_ms, t2, sizeof(t2));
		if (w->grace_ends_ms == ends)
			wave_msg(q,
			    "wave %u is in its grace period until %s (frozen "
			    "at %s, as announced then): it can retire after "
			    "that",
			    q->n, t1, t2);
		else
			wave_msg(q,
			    "wave %u is in its grace period until %s (frozen "
			    "at %s, grace %s): it can retire after that",
			    q->n, t1, t2, dur);
		json_object_set_new(event, "grace_ends", json_string(t1));
		return wave_refuse(q, w, event, record);
	}
	wave_enter(q, w, WAVE_RETIRED, event, "wave.retire");
	wave_time(w->frozen_ms, t2, sizeof(t2));
	json_object_set_new(event, "frozen", json_string(t2));
	json_object_set_new(event, "grace_ends", json_string(t1));
	wave_msg(q,
	    "wave %u retired: final; the warehouse copy of its tables is no "
	    "longer consulted",
	    q->n);
	return STORE_OK;
}

/*
 * The grace announced at the freeze holds: a grace shortened since (a
 * reload) never brings the end closer; a longer one moves it on.
 */
int64_t
wave_grace_ends(const struct store_wave *w, uint64_t grace_ms)
{
	int64_t ends = w->frozen_ms + (int64_t)grace_ms;

	return w->grace_ends_ms > ends ? w->grace_ends_ms : ends;
}

/* Overrides of the cutover gate; the state is unchanged. */
static int
wave_set_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct wave_req *q = arg;
	char dur[32];

	q->from = w->state;
	if (w->state == WAVE_RETIRED) {
		wave_msg(q, "wave %u is retired; retired is final", q->n);
		return wave_refuse(q, w, event, record);
	}
	if (q->ov->set_min_clean)
		w->gate_min_clean = q->ov->min_clean;
	if (q->ov->set_window)
		w->gate_window_ms = q->ov->window_ms;
	if (q->ov->set_count_check) {
		if (q->ov->count_check)
			w->flags &= ~WAVE_F_NO_COUNT_CHECK;
		else
			w->flags |= WAVE_F_NO_COUNT_CHECK;
	}
	json_object_set_new(event, "count_check",
	    json_boolean(!(w->flags & WAVE_F_NO_COUNT_CHECK)));
	json_object_set_new(event, "type", json_string("wave.set"));
	json_object_set_new(event, "gate_min_clean",
	    w->gate_min_clean > 0 ? json_integer(w->gate_min_clean) :
				    json_null());
	if (w->gate_window_ms > 0)
		units_format_duration((uint64_t)w->gate_window_ms, dur,
		    sizeof(dur));
	json_object_set_new(event, "gate_window",
	    w->gate_window_ms > 0 ? json_string(dur) : json_null());
	wave_msg(q, "wave %u: cutover gate overrides set", q->n);
	return STORE_OK;
}

/*
 * Run one transition through the store, by its action's rules, and log
 * its outcome, the place where it is decided; a rollback's outcome is its
 * caller's to say. The sentence for the operator goes to MSG (may be
 * NULL).
 */
static int
wave_run(struct store *s, struct wave_req *q, char *msg, size_t msglen)
{
	const char *verb = wave_moves[q->action].verb;
	json_t *event;
	int rc;

	q->msg[0] = '\0';
	event = json_pack("{s:s,s:I,s:s}", "type", "wave.update", "wave",
	    (json_int_t)q->n, "actor", q->actor != NULL ? q->actor : "");
	if (event == NULL) {
		log_warnx("wave %u: %s: cannot build the event", q->n, verb);
		rc = STORE_ERROR;
		goto out;
	}
	json_object_set_new(event, "reason",
	    q->reason != NULL ? json_string(q->reason) : json_null());
	if (q->line_fn != NULL)
		rc = store_wave_update_rlog(s, q->n, q->now_ms,
		    wave_moves[q->action].cb, q, event, &q->line);
	else
		rc = store_wave_update(s, q->n, q->now_ms,
		    wave_moves[q->action].cb, q, event);
	free(q->line);
	q->line = NULL;
	json_decref(event);
	if (q->action == WAVE_ACT_ROLLBACK)
		/*
		 * A rollback is said once, by whoever decided it (a trigger
		 * or an operator): it knows why, and this does not.
		 */
		log_debug("wave %u: rollback (%s): %s", q->n,
		    q->actor != NULL ? q->actor : "",
		    rc == STORE_OK || rc == STORE_REFUSED ? q->msg :
							    "the store failed");
	else if (rc == STORE_OK)
		log_info("%s (%s)", q->msg, q->actor != NULL ? q->actor : "");
	else if (rc == STORE_REFUSED)
		log_info("wave %u: %s refused (%s): %s", q->n, verb,
		    q->actor != NULL ? q->actor : "", q->msg);
	else
		log_warnx("wave %u: %s: the store failed: %s", q->n, verb,
		    store_last_error(s));
out:
	if (rc != STORE_OK && rc != STORE_REFUSED)
		wave_msg(q, "wave %u: the store failed (%s); nothing changed",
		    q->n, store_last_error(s));
	if (msg != NULL && msglen > 0)
		strlcpy(msg, q->msg, msglen);
	if (rc == STORE_OK)
		return WAVE_OK;
	return rc == STORE_REFUSED ? WAVE_REFUSED : WAVE_ERROR;
}

/* Flip wave N to the canary (PCT) or the lakehouse. */
int
wave_flip(struct store *s, uint32_t n, enum wave_state to, unsigned pct,
    const struct wave_gate *gate, const char *actor, const char *reason,
    int64_t now_ms, char *msg, size_t msglen)
{
	return wave_flip_base(s, n, to, pct, gate, NULL, actor, reason, now_ms,
	    msg, msglen);
}

/*
 * A flip's request, for the move and its dry run: to the canary at PCT or
 * the lakehouse, behind GATE (NULL: the gate is off).
 */
static void
wave_req_flip(struct wave_req *q, uint32_t n, enum wave_state to, unsigned pct,
    const struct wave_gate *gate, int64_t now_ms)
{
	*q = (struct wave_req) { .action = WAVE_ACT_FLIP,
		.n = n,
		.to = to,
		.pct = pct,
		.gate = gate,
		.now_ms = now_ms };
}

/* Flip wave N, storing the error baseline BASE if it leaves the warehouse. */
int
wave_flip_base(struct store *s, uint32_t n, enum wave_state to, unsigned pct,
    const struct wave_gate *gate, const struct wave_baseline *base,
    const char *actor, const char *reason, int64_t now_ms, char *msg,
    size_t msglen)
{
	struct wave_req q;

	wave_req_flip(&q, n, to, pct, gate, now_ms);
	q.base = base;
	q.actor = actor;
	q.reason = reason;
	return wave_run(s, &q, msg, msglen);
}

/* Roll wave N back to the warehouse. */
int
wave_rollback(struct store *s, uint32_t n, const char *actor,
    const char *reason, bool force_stale, int64_t now_ms, char *msg,
    size_t msglen)
{
	return wave_rollback_why(s, n, NULL, actor, reason, force_stale, now_ms,
	    msg, msglen);
}

/* Roll wave N back, recording the trigger's evidence EV in the event. */
int
wave_rollback_why(struct store *s, uint32_t n, const struct wave_evidence *ev,
    const char *actor, const char *reason, bool force_stale, int64_t now_ms,
    char *msg, size_t msglen)
{
	return wave_rollback_line(s, n, ev, actor, reason, force_stale, now_ms,
	    NULL, NULL, msg, msglen);
}

/* Roll wave N back with its log line (LINE: may be NULL), in one txn. */
int
wave_rollback_line(struct store *s, uint32_t n, const struct wave_evidence *ev,
    const char *actor, const char *reason, bool force_stale, int64_t now_ms,
    wave_line_fn line, void *arg, char *msg, size_t msglen)
{
	struct wave_req q = { .action = WAVE_ACT_ROLLBACK,
		.n = n,
		.force_stale = force_stale,
		.actor = actor,
		.reason = reason,
		.ev = ev,
		.line_fn = line,
		.line_arg = arg,
		.now_ms = now_ms };

	return wave_run(s, &q, msg, msglen);
}

/* Acknowledge the rollback of wave N. */
int
wave_ack(struct store *s, uint32_t n, const char *actor, int64_t now_ms,
    char *msg, size_t msglen)
{
	struct wave_req q = { .action = WAVE_ACT_ACK,
		.n = n,
		.actor = actor,
		.now_ms = now_ms };

	return wave_run(s, &q, msg, msglen);
}

/* Record a sign-off of wave N. */
int
wave_signoff(struct store *s, uint32_t n, const char *by, const char *actor,
    int64_t now_ms, char *msg, size_t msglen)
{
	struct wave_req q = { .action = WAVE_ACT_SIGNOFF,
		.n = n,
		.by = by,
		.actor = actor,
		.now_ms = now_ms };

	return wave_run(s, &q, msg, msglen);
}

/*
 * A freeze's request, for the move and its dry run: behind the
 * decommission GATE (NULL: no verdict, refused), GRACE_MS announced.
 */
static void
wave_req_freeze(struct wave_req *q, uint32_t n, const struct wave_gate *gate,
    uint64_t grace_ms, int64_t now_ms)
{
	static const struct wave_gate none = { .pass = false,
		.msg = "no decommission gate verdict was given" };

	*q = (struct wave_req) { .action = WAVE_ACT_FREEZE,
		.n = n,
		.gate = gate != NULL ? gate : &none,
		.grace_ms = grace_ms,
		.now_ms = now_ms };
}

/* Freeze wave N behind its decommission gate. */
int
wave_freeze(struct store *s, uint32_t n, const struct wave_gate *gate,
    uint64_t grace_ms, const char *actor, const char *reason, int64_t now_ms,
    char *msg, size_t msglen)
{
	struct wave_req q;

	wave_req_freeze(&q, n, gate, grace_ms, now_ms);
	q.actor = actor;
	q.reason = reason;
	return wave_run(s, &q, msg, msglen);
}

/* A retirement's request, for the move and its dry run. */
static void
wave_req_retire(struct wave_req *q, uint32_t n, uint64_t grace_ms,
    int64_t now_ms)
{
	*q = (struct wave_req) { .action = WAVE_ACT_RETIRE,
		.n = n,
		.grace_ms = grace_ms,
		.now_ms = now_ms };
}

/* Retire wave N after its grace period. */
int
wave_retire(struct store *s, uint32_t n, uint64_t grace_ms, const char *actor,
    int64_t now_ms, char *msg, size_t msglen)
{
	struct wave_req q;

	wave_req_retire(&q, n, grace_ms, now_ms);
	q.actor = actor;
	return wave_run(s, &q, msg, msglen);
}

/* Set wave N's gate overrides. */
int
wave_set(struct store *s, uint32_t n, const struct wave_overrides *ov,
    const char *actor, int64_t now_ms, char *msg, size_t msglen)
{
	struct wave_req q = { .action = WAVE_ACT_SET,
		.n = n,
		.ov = ov,
		.actor = actor,
		.now_ms = now_ms };

	return wave_run(s, &q, msg, msglen);
}

/* Split-brain alarm rules: a frozen wave without one raised. */
static int
wave_alarm_cb(struct store_wave *w, json_t *event, bool *record __unused,
    void *arg)
{
	struct wave_req *q = arg;

	q->from = w->state;
	if (w->state != WAVE_FROZEN) {
		wave_msg(q,
		    "wave %u is %s: only a frozen wave has a "
		    "split-brain alarm",
		    q->n, wave_state_name(w->state));
		return STORE_REFUSED;
	}
	if (w->alarm_ms != 0) {
		wave_msg(q, "wave %u already has a split-brain alarm", q->n);
		return STORE_REFUSED;
	}
	w->alarm_ms = q->now_ms;
	if (q->detail != NULL)
		json_object_update(event, q->detail);
	json_object_set_new(event, "type",
	    json_string("wave.split_brain_alarm"));
	json_object_set_new(event, "state", json_string("frozen"));
	wave_msg(q,
	    "wave %u: split brain: the warehouse copy of %s changed after "
	    "the freeze (a writer bypassed floe); the wave stays frozen "
	    "until an operator acts (floectl wave ack-alarm %u)",
	    q->n, json_string_value(json_object_get(event, "object")), q->n);
	return STORE_OK;
}

/* Acknowledge rules: a raised alarm. */
static int
wave_ack_alarm_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	struct wave_req *q = arg;
	char since[40];

	q->from = w->state;
	if (w->alarm_ms == 0) {
		wave_msg(q, "wave %u has no split-brain alarm to acknowledge",
		    q->n);
		return wave_refuse(q, w, event, record);
	}
	wave_time(w->alarm_ms, since, sizeof(since));
	json_object_set_new(event, "type", json_string("wave.ack_alarm"));
	json_object_set_new(event, "alarm", json_string("split-brain"));
	json_object_set_new(event, "raised", json_string(since));
	w->alarm_ms = 0;
	w->alarm_ack_ms = q->now_ms;
	wave_msg(q,
	    "wave %u: the split-brain alarm raised %s is acknowledged; "
	    "a later change of the warehouse copy raises it again",
	    q->n, since);
	return STORE_OK;
}

/* Raise wave N's split-brain alarm, with DETAIL in its event. */
int
wave_alarm(struct store *s, uint32_t n, json_t *detail, int64_t now_ms,
    char *msg, size_t msglen)
{
	struct wave_req q = { .action = WAVE_ACT_ALARM,
		.n = n,
		.detail = detail,
		.actor = "floe",
		.now_ms = now_ms };

	return wave_run(s, &q, msg, msglen);
}

/* Acknowledge wave N's split-brain alarm. */
int
wave_ack_alarm(struct store *s, uint32_t n, const char *actor, int64_t now_ms,
    char *msg, size_t msglen)
{
	struct wave_req q = { .action = WAVE_ACT_ACK_ALARM,
		.n = n,
		.actor = actor,
		.now_ms = now_ms };

	return wave_run(s, &q, msg, msglen);
}

/*
 * A transition tried on the wave as stored now: its request made as the
 * move makes it, decided by the same rules, and nothing written (the
 * rules edit a copy and a throwaway event).
 */
int
wave_try(struct store *s, uint32_t n, const struct wave_try *t, int64_t now_ms,
    char *msg, size_t msglen)
{
	struct wave_req q;
	struct store_wave w;
	json_t *event;
	bool record = false;
	int rc;

	switch (t->verb) {
	case WAVE_TRY_FLIP:
		wave_req_flip(&q, n, t->to, t->pct, t->gate, now_ms);
		break;
	case WAVE_TRY_FREEZE:
		wave_req_freeze(&q, n, t->gate, t->grace_ms, now_ms);
		break;
	default:
		wave_req_retire(&q, n, t->grace_ms, now_ms);
		break;
	}
	rc = store_wave_get(s, n, &w);
	if (rc == STORE_NOTFOUND) {
		memset(&w, 0, sizeof(w));
		w.n = n;
	} else if (rc != STORE_OK) {
		strlcpy(msg, "the store failed", msglen);
		return WAVE_ERROR;
	}
	if ((event = json_object()) == NULL) {
		strlcpy(msg, "out of memory", msglen);
		return WAVE_ERROR;
	}
	rc = wave_moves[q.action].cb(&w, event, &record, &q);
	json_decref(event);
	strlcpy(msg, q.msg, msglen);
	return rc == STORE_OK	? WAVE_OK :
	    rc == STORE_REFUSED ? WAVE_REFUSED :
				  WAVE_ERROR;
}
