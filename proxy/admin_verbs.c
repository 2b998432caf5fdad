/*
 * floe: admin_verbs.c -- the waves' transitions in the admin API: POST
 * /waves/{n}/VERB, one function per verb (flip, rollback, ack, signoff,
 * freeze, retire, set), each behind its gate where it has one. wave.c
 * decides, records the outcome as an event and logs it; a verb reads its
 * body, gathers the gate's evidence and answers with the wave's summary
 * and "from", the state it left.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "policy/gate.h"
#include "policy/rlog.h"
#include "proxy/admin_impl.h"
#include "proxy/floe.h"
#include "proxy/inventory.h"
#include "proxy/watch.h"
#include "routing/store.h"
#include "routing/wave.h"

/* One transition being served: the wave, its record, its gate. */
struct admin_move {
	uint32_t n;
	json_t *body;
	struct store_wave before;
	struct store_wave after; /* once done (admin_move_end) */
	uint64_t grace_ms; /* [policy] decommission_grace */
	struct admin_evidence ev;
	struct wave_gate gate;
	struct wave_gate *gp; /* NULL: no gate, or the gate is off */
	bool decom; /* the gate is the decommission gate */
	bool dry; /* a dry run: it lists the wave's objects */
	char gmsg[1024]; /* the gate's verdict */
	char msg[1024]; /* wave.c's outcome */
};

static int admin_move_begin(struct admin_req *, struct admin_move *, bool,
    const char *const *);
static int admin_move_load(struct admin_req *, struct admin_move *, bool, bool);
static json_t *admin_move_end(struct admin_req *, struct admin_move *, int);
static void admin_move_clear(struct admin_move *);
static int admin_flip_pct(struct admin_req *, json_t *, int, json_int_t *);
static int admin_set_overrides(struct admin_req *, json_t *,
    struct wave_overrides *);
static json_t *admin_rollback_logged(struct admin_req *, uint32_t, int, int,
    const char *);
static void admin_wave_rollback_run(struct admin_req *, struct evbuffer *);
static void admin_wave_rollback_now(struct admin_req *);
static void admin_move_dry(struct admin_req *, struct admin_move *,
    const struct wave_try *, const char *);
static int admin_freeze_readers(struct admin_req *, struct admin_move *, char *,
    size_t, json_t **);
static bool admin_move_offload(struct admin_req *, bool);
static void admin_wave_flip_run(struct admin_req *, struct evbuffer *);
static void admin_wave_freeze_run(struct admin_req *, struct evbuffer *);
static void admin_wave_flip_now(struct admin_req *);
static void admin_wave_freeze_now(struct admin_req *);

/*
 * Begin a transition: the wave from the path and the body, which must be
 * a JSON object (may be empty if OPTIONAL) with no field but those in
 * KNOWN. 0, or -1 with the reply set.
 */
static int
admin_move_begin(struct admin_req *r, struct admin_move *m, bool optional,
    const char *const *known)
{
	memset(m, 0, sizeof(*m));
	if (admin_parse_wave(r, r->seg[1], &m->n) == -1)
		return -1;
	if ((m->body = admin_body(r, optional)) == NULL)
		return -1;
	return admin_body_check(r, m->body, known);
}

/*
 * Read the wave's record and the policy and, for a GATED move (the
 * decommission gate if DECOM, else the cutover gate), the gate's
 * evidence and verdict. 0, or -1 with the reply set.
 */
static int
admin_move_load(struct admin_req *r, struct admin_move *m, bool gated,
    bool decom)
{
	struct gate_params defaults, p;

	if (admin_wave_state(r, m->n, &m->before, NULL) == -1)
		return -1;
	admin_policy(r, &defaults, &m->grace_ms);
	if (!gated)
		return 0;
	m->decom = decom;
	/*
	 * gate_min_clean = 0 turns the cutover gate off: no evidence to
	 * read (a wave of a million tables would be read for nothing).
	 */
	gate_params_for(&defaults, m->before.gate_min_clean,
	    m->before.gate_window_ms, &p);
	if (!decom && !m->dry && p.min_clean == 0)
		return 0;
	if (admin_evidence(r, m->n, &m->before, &m->ev) == -1) {
		log_warnx("%s: wave %u: reading the ledger for the gate failed",
		    __func__, m->n);
		admin_error(r, 500,
		    "store error reading the ledger; nothing changed");
		return -1;
	}
	m->gate.pass = admin_verdict(&m->ev, decom, m->before.signoff, m->gmsg,
	    sizeof(m->gmsg));
	m->gate.seq = m->before.seq;
	m->gate.msg = m->gmsg;
	m->gate.evidence = admin_evidence_json(&m->ev, decom, false);
	/* gate_min_clean = 0 turns the cutover gate off. */
	m->gp = !decom && m->ev.p.min_clean == 0 ? NULL : &m->gate;
	return 0;
}

/*
 * End a transition wave.c answered RC: a refusal is a 409 (with the
 * objects that block it when the gate refused), a failure a 500 (wave.c
 * recorded and logged either). Done, the wave's summary with "from" and
 * "message", and its record in M->after; else NULL, answered.
 */
static json_t *
admin_move_end(struct admin_req *r, struct admin_move *m, int rc)
{
	struct admin_wave_sum s;
	json_t *j;

	if (rc == WAVE_REFUSED) {
		admin_refused(r,
		    m->msg[0] != '\0' ? m->msg : "the transition was refused",
		    m->gp != NULL && !m->gate.pass &&
			    strcmp(m->msg, m->gmsg) == 0 ?
			admin_evidence_json(&m->ev, m->decom, true) :
			NULL);
		return NULL;
	}
	if (rc != WAVE_OK) {
		admin_error(r, 500, "%s",
		    m->msg[0] != '\0' ? m->msg :
					"the store failed; nothing changed");
		return NULL;
	}
	memset(&s, 0, sizeof(s));
	s.n = m->n;
	if (admin_wave_state(r, m->n, &s.w, &s.has_rec) == -1)
		return NULL;
	m->after = s.w;
	j = admin_wave_sum_json(&s);
	/* The counts are not gathered here; a transition moves no route. */
	json_object_del(j, "objects");
	json_object_del(j, "rules");
	json_object_set_new(j, "from",
	    json_string(wave_state_name(m->before.state)));
	json_object_set_new(j, "message", json_string(m->msg));
	return j;
}

/*
 * A dry run of M: T tried on the wave as stored now (wave_try: the same
 * rules, nothing written, nothing recorded), with the tables it would
 * move and who loaded them in the last day. 200 whether it would be done
 * or refused: "would" says which.
 */
static void
admin_move_dry(struct admin_req *r, struct admin_move *m,
    const struct wave_try *t, const char *to)
{
	char msg[1024];
	json_t *j, *objs;
	size_t i;
	int rc;

	rc = wave_try(r->st, m->n, t, r->now_ms, msg, sizeof(msg));
	if (rc == WAVE_ERROR) {
		admin_error(r, 500, "%s; nothing changed", msg);
		return;
	}
	objs = json_array();
	for (i = 0; i < m->ev.n; i++)
		json_array_append_new(objs, json_string(m->ev.names[i]));
	j = json_pack("{s:b,s:I,s:s,s:s,s:s,s:s,s:o,s:o}", "dry_run", true,
	    "wave", (json_int_t)m->n, "from", wave_state_name(m->before.state),
	    "to", to, "would", rc == WAVE_OK ? "proceed" : "be refused",
	    "message", msg, "objects", objs, "readers_last_day",
	    admin_readers_recent(r, m->ev.keys, m->ev.n,
		r->now_ms - ADMIN_DRY_READERS_MS));
	if (m->gp != NULL)
		json_object_set_new(j, "gate",
		    json_pack("{s:s,s:b,s:s}", "name",
			m->decom ? "decommission" : "cutover", "pass",
			m->gate.pass, "message", m->gmsg));
	admin_reply_json(r, 200, j);
}

/* Free what a transition holds. */
static void
admin_move_clear(struct admin_move *m)
{
	json_decref(m->gate.evidence);
	admin_evidence_clear(&m->ev);
	json_decref(m->body);
}

/*
 * The share of a flip to STATE from B's "pct" into *PCT: 1..100 and
 * required for a canary, 100 (or absent) for the lakehouse. 0, or -1
 * with a 400.
 */
static int
admin_flip_pct(struct admin_req *r, json_t *b, int state, json_int_t *pct)
{
	if (state == WAVE_CANARY)
		return admin_body_int(r, b, "pct", true, 0, 1, 100, pct);
	*pct = 100;
	if (json_object_get(b, "pct") == NULL)
		return 0;
	return admin_body_int(r, b, "pct", false, 100, 100, 100, pct);
}

/*
 * Whether R's move of its wave reads the gate's evidence (a freeze, when
 * DECOM; a flip with its cutover gate on, or a dry run) and can be made
 * by a worker's child: the evidence is a ledger read per table of the
 * wave, which on a wave of 10,000 tables held engine requests for half a
 * second. The move itself is safe there: the gate is checked against the
 * wave's sequence in the write txn, and the loop sees the commit.
 */
static bool
admin_move_offload(struct admin_req *r, bool decom)
{
	struct gate_params defaults, p;
	struct store_wave w;
	unsigned long n;
	json_t *b;
	char *end;
	bool dry = false;

	if (r->f->worker == NULL || r->later_cb == NULL ||
	    r->f->cluster != NULL || r->nseg < 2)
		return false;
	if (decom)
		return true;
	n = strtoul(r->seg[1], &end, 10);
	if (*end != '\0' || n > UINT32_MAX)
		return false;
	memset(&w, 0, sizeof(w));
	if (store_wave_get(r->st, (uint32_t)n, &w) == STORE_ERROR)
		return false;
	admin_policy(r, &defaults, NULL);
	gate_params_for(&defaults, w.gate_min_clean, w.gate_window_ms, &p);
	if (r->in != NULL && evbuffer_get_length(r->in) > 0 &&
	    (b = json_loadb((const char *)evbuffer_pullup(r->in, -1),
		 evbuffer_get_length(r->in), 0, NULL)) != NULL) {
		dry = json_is_true(json_object_get(b, "dry_run"));
		json_decref(b);
	}
	return p.min_clean != 0 || dry;
}

/* admin_wave_flip's work, in the worker's child. */
static void
admin_wave_flip_run(struct admin_req *r, struct evbuffer *alarms __unused)
{
	admin_wave_flip_now(r);
}

/* admin_wave_freeze's work, in the worker's child. */
static void
admin_wave_freeze_run(struct admin_req *r, struct evbuffer *alarms __unused)
{
	admin_wave_freeze_now(r);
}

/*
 * POST /waves/{n}/flip {"to","pct","reason"}: behind the cutover gate;
 * with the gate on, made by a worker's child (admin_move_offload).
 */
void
admin_wave_flip(struct admin_req *r)
{
	if (admin_move_offload(r, false)) {
		(void)inventory_flush(r->f->inv);
		admin_job_change(r, admin_wave_flip_run);
	} else
		admin_wave_flip_now(r);
}

/*
 * POST /waves/{n}/freeze {"reason"}: behind the decommission gate, made
 * by a worker's child (admin_move_offload).
 */
void
admin_wave_freeze(struct admin_req *r)
{
	if (admin_move_offload(r, true)) {
		/* The stale readers the child reads: what was noted until now.
		 */
		(void)inventory_flush(r->f->inv);
		admin_job_change(r, admin_wave_freeze_run);
	} else
		admin_wave_freeze_now(r);
}

/* The flip itself, here or in the worker's child. */
static void
admin_wave_flip_now(struct admin_req *r)
{
	static const char *const known[] = { "to", "pct", "reason", "dry_run",
		NULL };
	struct admin_move m;
	struct wave_baseline base;
	struct wave_try t;
	const char *to = NULL, *reason = NULL;
	json_int_t pct = 0;
	json_t *j;
	bool dry = false;
	int state, rc;

	if (admin_move_begin(r, &m, false, known) == -1 ||
	    admin_body_string(r, m.body, "to", true, &to) == -1 ||
	    admin_body_string(r, m.body, "reason", false, &reason) == -1 ||
	    admin_body_bool(r, m.body, "dry_run", &dry) == -1)
		goto out;
	state = wave_state_parse(to);
	if (state != WAVE_LAKEHOUSE && state != WAVE_CANARY) {
		admin_error(r, 400,
		    "field \"to\" must be \"lakehouse\" or \"canary\"");
		goto out;
	}
	m.dry = dry;
	if (admin_flip_pct(r, m.body, state, &pct) == -1 ||
	    admin_move_load(r, &m, true, false) == -1)
		goto out;
	if (dry) {
		t = (struct wave_try) { .verb = WAVE_TRY_FLIP,
			.to = state,
			.pct = (unsigned)pct,
			.gate = m.gp };
		admin_move_dry(r, &m, &t, to);
		goto out;
	}
	/* The error trigger's baseline goes with the flip. */
	watch_baseline(r->f->watch, m.n, &base);
	rc = wave_flip_base(r->st, m.n, state, (unsigned)pct, m.gp, &base,
	    r->actor, reason, r->now_ms, m.msg, sizeof(m.msg));
	if ((j = admin_move_end(r, &m, rc)) == NULL)
		goto out;
	/* The share it left, as the flip's event has it. */
	json_object_set_new(j, "from_pct",
	    json_integer(m.before.state == WAVE_WAREHOUSE ? 0 : m.before.pct));
	admin_reply_json(r, 200, j);
out:
	admin_move_clear(&m);
}

/*
 * An operator's rollback of wave N from FROM ended RC (MSG says how): the
 * one log line saying so (wave.c leaves it to the caller) and, done, its
 * line in the rollback log, like a trigger's: pending in the store since
 * the rollback's own commit, appended and fsynced now. Returns what the
 * answer says of the line ({"written","pending","error"}), or NULL when
 * there was no rollback.
 */
static json_t *
admin_rollback_logged(struct admin_req *r, uint32_t n, int from, int rc,
    const char *msg)
{
	json_t *logged;

	if (rc == WAVE_REFUSED) {
		log_info("wave %u: rollback refused (%s): %s", n, r->actor,
		    msg);
		return NULL;
	}
	if (rc != WAVE_OK) {
		log_warnx("%s: rollback by %s: %s", __func__, r->actor, msg);
		return NULL;
	}
	/*
	 * In cluster mode every node writes the line as it applies the
	 * rollback from etcd, this one before it answers (cluster_mirror.c).
	 */
	if (r->f->cluster != NULL)
		return json_pack("{s:b, s:b, s:s}", "written", true, "pending",
		    false, "by", "cluster");
	logged = admin_rlog_write(r);
	log_info("wave %u rolled back from %s by %s (operator)", n,
	    wave_state_name(from), r->actor);
	return logged;
}

/*
 * POST /waves/{n}/rollback {"reason","force_stale"}: back to the
 * warehouse. With a worker, its child makes it and writes the log line
 * (admin_job_rollback): the line names every table of the wave, read
 * from the store, and is fsynced before the answer.
 */
void
admin_wave_rollback(struct admin_req *r)
{
	if (admin_rlog_offload(r))
		admin_job_rollback(r, admin_wave_rollback_run);
	else
		admin_wave_rollback_now(r);
}

/* admin_wave_rollback's work, in the worker's child. */
static void
admin_wave_rollback_run(struct admin_req *r, struct evbuffer *alarms __unused)
{
	admin_wave_rollback_now(r);
}

/* The rollback itself, here or in the worker's child. */
static void
admin_wave_rollback_now(struct admin_req *r)
{
	static const char *const known[] = { "reason", "force_stale", NULL };
	struct admin_move m;
	struct admin_rlog_line line = { NULL };
	const char *reason = NULL;
	bool force_stale = false;
	json_t *j, *logged;
	int rc;

	if (admin_move_begin(r, &m, true, known) == -1 ||
	    admin_body_string(r, m.body, "reason", false, &reason) == -1 ||
	    admin_body_bool(r, m.body, "force_stale", &force_stale) == -1 ||
	    admin_move_load(r, &m, false, false) == -1)
		goto out;
	if (r->f->cluster != NULL)
		rc = wave_rollback(r->st, m.n, r->actor, reason, force_stale,
		    r->now_ms, m.msg, sizeof(m.msg));
	else {
		/* Pending in the store with the rollback: one commit. */
		admin_rlog_line_init(r, m.n, reason, &line);
		rc = wave_rollback_line(r->st, m.n, NULL, r->actor, reason,
		    force_stale, r->now_ms, admin_rlog_line, &line, m.msg,
		    sizeof(m.msg));
		admin_rlog_line_clear(&line);
	}
	logged = admin_rollback_logged(r, m.n, m.before.state, rc, m.msg);
	if ((j = admin_move_end(r, &m, rc)) != NULL) {
		if (logged != NULL)
			json_object_set(j, "rollback_log", logged);
		admin_reply_json(r, 200, j);
	}
	json_decref(logged);
out:
	admin_move_clear(&m);
}

/* POST /waves/{n}/ack: a rolled-back wave returns to the warehouse. */
void
admin_wave_ack(struct admin_req *r)
{
	static const char *const known[] = { NULL };
	struct admin_move m;
	json_t *j;
	int rc;

	if (admin_move_begin(r, &m, true, known) == -1 ||
	    admin_move_load(r, &m, false, false) == -1)
		goto out;
	rc = wave_ack(r->st, m.n, r->actor, r->now_ms, m.msg, sizeof(m.msg));
	if ((j = admin_move_end(r, &m, rc)) != NULL)
		admin_reply_json(r, 200, j);
out:
	admin_move_clear(&m);
}

/* POST /waves/{n}/signoff {"by"}: who signs off the decommission. */
void
admin_wave_signoff(struct admin_req *r)
{
	static const char *const known[] = { "by", NULL };
	struct admin_move m;
	const char *by = NULL;
	json_t *j;
	int rc;

	if (admin_move_begin(r, &m, false, known) == -1 ||
	    admin_body_string(r, m.body, "by", true, &by) == -1)
		goto out;
	if (by[0] == '\0' || strlen(by) >= sizeof(m.before.signoff)) {
		admin_error(r, 400,
		    "field \"by\" must name who signs off (1..%zu bytes)",
		    sizeof(m.before.signoff) - 1);
		goto out;
	}
	if (admin_move_load(r, &m, false, false) == -1)
		goto out;
	rc = wave_signoff(r->st, m.n, by, r->actor, r->now_ms, m.msg,
	    sizeof(m.msg));
	if ((j = admin_move_end(r, &m, rc)) == NULL)
		goto out;
	json_object_set_new(j, "signoff", admin_str_json(m.after.signoff));
	admin_reply_json(r, 200, j);
out:
	admin_move_clear(&m);
}

/* The freeze itself, here or in the worker's child. */
static void
admin_wave_freeze_now(struct admin_req *r)
{
	static const char *const known[] = { "reason", "dry_run", NULL };
	struct admin_move m;
	struct wave_try t;
	const char *reason = NULL;
	char rmsg[1024];
	json_t *j, *stale = NULL;
	bool dry = false;
	int rc;

	rmsg[0] = '\0';
	if (admin_move_begin(r, &m, true, known) == -1 ||
	    admin_body_string(r, m.body, "reason", false, &reason) == -1 ||
	    admin_body_bool(r, m.body, "dry_run", &dry) == -1 ||
	    admin_move_load(r, &m, true, true) == -1 ||
	    admin_freeze_readers(r, &m, rmsg, sizeof(rmsg), &stale) == -1)
		goto out;
	if (dry) {
		t = (struct wave_try) { .verb = WAVE_TRY_FREEZE,
			.gate = m.gp,
			.grace_ms = m.grace_ms };
		admin_move_dry(r, &m, &t, "frozen");
		goto out;
	}
	rc = wave_freeze(r->st, m.n, m.gp, m.grace_ms, r->actor, reason,
	    r->now_ms, m.msg, sizeof(m.msg));
	if ((j = admin_move_end(r, &m, rc)) == NULL)
		goto out;
	json_object_set_new(j, "frozen", admin_time_json(m.after.frozen_ms));
	json_object_set_new(j, "grace_ends",
	    admin_time_json(wave_grace_ends(&m.after, m.grace_ms)));
	/* decommission_readers = warn: allowed, and named. */
	if (rmsg[0] != '\0')
		json_object_set_new(j, "warning", json_string(rmsg));
	if (stale != NULL)
		json_object_set(j, "stale_readers", stale);
	admin_reply_json(r, 200, j);
out:
	json_decref(stale);
	admin_move_clear(&m);
}

/*
 * The decommission gate's readers part (decommission_readers): stale
 * readers left turn M's verdict into a refusal that names them (block),
 * or into a warning in MSG (warn). *STALE lists them. 0, or -1 with the
 * reply set.
 */
static int
admin_freeze_readers(struct admin_req *r, struct admin_move *m, char *msg,
    size_t msglen, json_t **stale)
{
	msg[0] = '\0';
	switch (admin_readers_gate(r, &m->ev, &m->before, msg, msglen, stale)) {
	case -1:
		return -1;
	case 1:
		if (m->gate.pass)
			strlcpy(m->gmsg, msg, sizeof(m->gmsg));
		else {
			strlcat(m->gmsg, "; ", sizeof(m->gmsg));
			strlcat(m->gmsg, msg, sizeof(m->gmsg));
		}
		m->gate.pass = false;
		msg[0] = '\0';
		return 0;
	default:
		return 0;
	}
}

/* POST /waves/{n}/ack-alarm: an operator acknowledges a split brain. */
void
admin_wave_ack_alarm(struct admin_req *r)
{
	static const char *const known[] = { NULL };
	struct admin_move m;
	json_t *j;
	int rc;

	if (admin_move_begin(r, &m, true, known) == -1 ||
	    admin_move_load(r, &m, false, false) == -1)
		goto out;
	rc = wave_ack_alarm(r->st, m.n, r->actor, r->now_ms, m.msg,
	    sizeof(m.msg));
	if ((j = admin_move_end(r, &m, rc)) != NULL)
		admin_reply_json(r, 200, j);
out:
	admin_move_clear(&m);
}

/* POST /waves/{n}/retire: a frozen wave, once its grace period is over. */
void
admin_wave_retire(struct admin_req *r)
{
	static const char *const known[] = { "dry_run", NULL };
	struct admin_move m;
	struct wave_try t;
	json_t *j;
	bool dry = false;
	int rc;

	/* A dry run gathers the wave's objects (the gate's evidence). */
	if (admin_move_begin(r, &m, true, known) == -1 ||
	    admin_body_bool(r, m.body, "dry_run", &dry) == -1 ||
	    admin_move_load(r, &m, dry, true) == -1)
		goto out;
	if (dry) {
		t = (struct wave_try) { .verb = WAVE_TRY_RETIRE,
			.grace_ms = m.grace_ms };
		m.gp = NULL; /* retire's only rule is the grace period */
		admin_move_dry(r, &m, &t, "retired");
		goto out;
	}
	rc = wave_retire(r->st, m.n, m.grace_ms, r->actor, r->now_ms, m.msg,
	    sizeof(m.msg));
	if ((j = admin_move_end(r, &m, rc)) != NULL)
		admin_reply_json(r, 200, j);
out:
	admin_move_clear(&m);
}

/*
 * The overrides B gives (gate_min_clean, gate_window, count_check; null
 * returns one to the policy's) into *OV. 0, or -1 with a 400.
 */
static int
admin_set_overrides(struct admin_req *r, json_t *b, struct wave_overrides *ov)
{
	const char *win = NULL;
	json_int_t minc = 0;
	uint64_t win_ms;
	json_t *v;

	memset(ov, 0, sizeof(*ov));
	if ((v = json_object_get(b, "gate_min_clean")) != NULL) {
		ov->set_min_clean = true;
		if (!json_is_null(v) &&
		    admin_body_int(r, b, "gate_min_clean", true, 0, 1, 1000000,
			&minc) == -1)
			return -1;
		ov->min_clean = (uint32_t)minc;
	}
	if ((v = json_object_get(b, "gate_window")) != NULL) {
		ov->set_window = true;
		if (!json_is_null(v)) {
			if (admin_body_string(r, b, "gate_window", true,
				&win) == -1)
				return -1;
			if (units_duration(win, &win_ms) == -1 || win_ms == 0 ||
			    win_ms > INT64_MAX / 2) {
				admin_error(r, 400,
				    "gate_window \"%s\" is not a duration "
				    "(\"14d\")",
				    win);
				return -1;
			}
			ov->window_ms = (int64_t)win_ms;
		}
	}
	if (json_object_get(b, "count_check") != NULL) {
		ov->set_count_check = true;
		if (admin_body_bool(r, b, "count_check", &ov->count_check) ==
		    -1)
			return -1;
	}
	if (!ov->set_min_clean && !ov->set_window && !ov->set_count_check) {
		admin_error(r, 400,
		    "give gate_min_clean, gate_window, count_check or several "
		    "(null returns to the policy's)");
		return -1;
	}
	return 0;
}

/*
 * POST /waves/{n}/set {"gate_min_clean","gate_window","count_check"}:
 * the wave's own gate settings, over the policy's.
 */
void
admin_wave_set(struct admin_req *r)
{
	static const char *const known[] = { "gate_min_clean", "gate_window",
		"count_check", NULL };
	struct admin_move m;
	struct wave_overrides ov;
	char dur[32];
	json_t *j;
	int rc;

	if (admin_move_begin(r, &m, false, known) == -1 ||
	    admin_set_overrides(r, m.body, &ov) == -1 ||
	    admin_move_load(r, &m, false, false) == -1)
		goto out;
	rc = wave_set(r->st, m.n, &ov, r->actor, r->now_ms, m.msg,
	    sizeof(m.msg));
	if ((j = admin_move_end(r, &m, rc)) == NULL)
		goto out;
	if (m.after.gate_window_ms > 0)
		units_format_duration((uint64_t)m.after.gate_window_ms, dur,
		    sizeof(dur));
	json_object_set_new(j, "gate_min_clean",
	    m.after.gate_min_clean > 0 ? json_integer(m.after.gate_min_clean) :
					 json_null());
	json_object_set_new(j, "gate_window",
	    m.after.gate_window_ms > 0 ? json_string(dur) : json_null());
	json_object_set_new(j, "count_check",
	    json_boolean(!(m.after.flags & WAVE_F_NO_COUNT_CHECK)));
	admin_reply_json(r, 200, j);
out:
	admin_move_clear(&m);
}
