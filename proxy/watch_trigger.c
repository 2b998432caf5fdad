/*
 * floe: watch_trigger.c -- the triggers evaluated and acted on. A
 * deferred event checks the error trigger right after a lakehouse read
 * fails, and a timer every bucket; a finished poll cycle samples the
 * freshness lag and the metadata count check; the reconcile trigger runs
 * inside the POST /ledger that brings a record. A trigger that fires on a
 * canary or lakehouse wave rolls it back (one synced txn), writes the
 * rollback log line (fsynced) and says so in one log line, then pages; a
 * frozen wave is paged about only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "policy/trigger.h"
#include "proxy/cluster.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "proxy/watch_impl.h"
#include "proxy/worker.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

static void watch_rlog_work(void *, struct evbuffer *);
static void watch_rlog_done(void *, struct evbuffer *, const char *);
static void watch_rlog_paged(void *, int);
static void watch_count_record(struct watch *, struct watch_obj *);
static void watch_count_done(int, const char *, void *);
static void watch_fired_add(struct watch *, uint32_t, const char *,
    enum trigger_kind, json_t *, json_t *, const char *);
static void watch_rollback_cluster(struct watch *, uint32_t,
    const struct store_wave *, enum trigger_kind, json_t *, json_t *, int64_t,
    const char *);
static void watch_rollback_done(int, const char *, void *);

/* Check the suspects (all waves after an overflow). */
void
watch_check_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct watch *w = arg;
	uint32_t sus[WATCH_SUSPECTS];
	unsigned n = w->nsuspects, i;
	bool all = w->suspects_overflow;
	/* The suspect was counted at the loop's cached wall time. */
	int64_t since =
	    units_mono_us() - (units_now_ms() * 1000 - w->suspect_us);

	w->check_pending = false;
	memcpy(sus, w->suspects, sizeof(sus[0]) * n);
	w->nsuspects = 0;
	w->suspects_overflow = false;
	if (all) {
		watch_tick_cb(-1, 0, w);
		return;
	}
	for (i = 0; i < n; i++)
		watch_check_wave(w, sus[i], since);
}

/* Every bucket: the error trigger over every counted wave. */
void
watch_tick_cb(evutil_socket_t fd, short what __unused, void *arg)
{
	struct watch *w = arg;
	size_t i;

	if (fd != -1 || !evtimer_pending(w->tick, NULL))
		watch_schedule(w->tick, (uint64_t)w->tab.win.width_ms);
	/* Off the request path: make room before the table fills. */
	(void)trigger_table_grow(&w->tab);
	for (i = 0; i < w->tab.cap; i++)
		if (w->tab.slots[i].used)
			watch_check_wave(w, w->tab.slots[i].wave, 0);
}

/*
 * The error trigger for wave N: its lakehouse reads in the window
 * against the baseline stored with its flip. SINCE_US is when the read
 * that made it a suspect was counted (0: the periodic check).
 */
void
watch_check_wave(struct watch *w, uint32_t n, int64_t since_us)
{
	struct floe *f = w->f;
	const struct conf_policy *pol = &f->conf->policy;
	struct trigger_error_params p = { pol->error_ratio, pol->error_floor,
		pol->error_min_requests };
	struct trigger_error_verdict v;
	struct trigger_wave *s;
	struct store_wave sw;
	uint64_t req, err;
	char reason[512], win[32];

	if (f->store == NULL ||
	    (s = trigger_table_get(&w->tab, n, false)) == NULL)
		return;
	trigger_ring_totals(&w->tab.win, &s->side[ROUTE_LAKEHOUSE],
	    units_now_ms(), &req, &err);
	if (err == 0)
		return;
	if (store_wave_get(f->store, n, &sw) != STORE_OK ||
	    trigger_action_for(sw.state) == TRIGGER_NONE)
		return;
	trigger_errors(&p, sw.base_requests, sw.base_errors, req, err, &v);
	if (!v.fire)
		return;
	units_format_duration(pol->error_window_ms, win, sizeof(win));
	snprintf(reason, sizeof(reason),
	    "lakehouse error rate %.2f%% (%" PRIu64 " of %" PRIu64
	    " reads in %s) > %.2f x max(baseline %.2f%% of %" PRIu64
	    " reads, floor %.2f%%) = %.2f%%",
	    v.measured * 100, err, req, win, p.ratio, v.baseline * 100,
	    sw.base_requests, p.floor * 100, v.threshold * 100);
	watch_fire(w, n, TRIGGER_ERRORS, json_real(v.measured),
	    json_real(v.threshold), 0, reason, since_us);
}

/* Page about frozen wave N's trigger K once per wave record (SEQ). */
static bool
watch_paged_once(struct watch *w, uint32_t n, enum trigger_kind k, uint64_t seq)
{
	size_t i;

	for (i = 0; i < w->npaged; i++)
		if (w->paged[i].wave == n && w->paged[i].kind == k &&
		    w->paged[i].seq == seq)
			return false;
	if (w->npaged == WATCH_PAGED) {
		memmove(w->paged, w->paged + 1,
		    sizeof(w->paged[0]) * (WATCH_PAGED - 1));
		w->npaged--;
	}
	w->paged[w->npaged].wave = n;
	w->paged[w->npaged].kind = k;
	w->paged[w->npaged].seq = seq;
	w->npaged++;
	return true;
}

/* Forget the counters and freshness runs of wave N (it went back). */
static void
watch_reset_wave(struct watch *w, uint32_t n)
{
	struct trigger_wave *s;
	size_t i;

	if ((s = trigger_table_get(&w->tab, n, false)) != NULL)
		s->side[ROUTE_LAKEHOUSE].head = -1;
	for (i = 0; i < w->nobjs; i++)
		if (w->objs[i]->wave == n) {
			memset(&w->objs[i]->fresh, 0,
			    sizeof(w->objs[i]->fresh));
			/* A mismatch still there after a new flip counts. */
			w->objs[i]->recorded = false;
		}
}

/*
 * Keep the rollback of wave N (from FROM, by trigger K, MEASURED against
 * THRESHOLD, both borrowed) for whoever caused it: the admin answer that
 * brought the record or the report takes it (watch_fired_take).
 */
static void
watch_fired_add(struct watch *w, uint32_t n, const char *from,
    enum trigger_kind k, json_t *measured, json_t *threshold,
    const char *reason)
{
	char m[128], t[128];
	json_t *one;

	rlog_value_text(trigger_name(k), measured, m, sizeof(m));
	rlog_value_text(trigger_name(k), threshold, t, sizeof(t));
	one = json_pack("{s:I,s:s,s:s,s:O?,s:O?,s:s,s:s}", "wave",
	    (json_int_t)n, "trigger", trigger_name(k), "from", from, "measured",
	    measured, "threshold", threshold, "evidence", "", "reason", reason);
	if (one == NULL)
		return;
	json_object_set_new(one, "evidence",
	    json_sprintf("measured %s, threshold %s", m, t));
	if (w->fired == NULL)
		w->fired = json_array();
	json_array_append_new(w->fired, one);
}

/* A trigger's rollback going through etcd: what to page once it is in. */
struct watch_cluster_rb {
	struct watch *w;
	uint32_t n;
	char trigger[32];
	json_t *line;
};

/*
 * Cluster mode: the rollback is one etcd txn (a second firing, here or on
 * another node, finds the wave already moved and is refused), or pending
 * for etcd if it is away (it holds here at once). Each node writes the
 * rollback log line as it applies it; only this node, the one that
 * fired, pages, and only once etcd took it.
 */
static void
watch_rollback_cluster(struct watch *w, uint32_t n, const struct store_wave *sw,
    enum trigger_kind k, json_t *measured, json_t *threshold, int64_t held_ms,
    const char *reason)
{
	struct floe *f = w->f;
	struct wave_evidence ev = { trigger_name(k), measured, threshold };
	struct store_capture cap;
	struct watch_cluster_rb *x;
	struct rlog_entry e;
	char msg[1024];
	int rc;

	store_capture_begin(f->store, &cap);
	rc = wave_rollback_why(f->store, n, &ev, "floe", reason, false,
	    units_now_ms(), msg, sizeof(msg));
	store_capture_end(f->store);
	if (rc != WAVE_OK) {
		store_capture_clear(&cap);
		log_warnx("wave %u: the %s trigger fired but the rollback "
			  "failed: %s",
		    n, trigger_name(k), msg);
		return;
	}
	w->rollbacks++;
	watch_fired_add(w, n, wave_state_name(sw->state), k, measured,
	    threshold, reason);
	e = (struct rlog_entry) { .wave = n,
		.from = wave_state_name(sw->state),
		.trigger = trigger_name(k),
		.actor = "floe",
		.reason = reason,
		.measured = measured,
		.threshold = threshold,
		.held_ms = held_ms };
	x = xcalloc(1, sizeof(*x));
	x->w = w;
	x->n = n;
	strlcpy(x->trigger, trigger_name(k), sizeof(x->trigger));
	x->line = rlog_line(&e, f->store, units_now_ms());
	watch_reset_wave(w, n);
	cluster_commit(f->cluster, &cap, watch_rollback_done, x);
}

/* etcd took a trigger's rollback (or it is pending): page; else say why. */
static void
watch_rollback_done(int status, const char *msg, void *arg)
{
	struct watch_cluster_rb *x = arg;

	if (status == 200 || status == 202) {
		log_info("wave %u: %s trigger: rolled back%s", x->n, x->trigger,
		    status == 202 ? " here; pending for etcd" :
				    " through etcd");
		if (x->line != NULL)
			watch_page(x->w, x->n, x->line);
	} else
		log_info("wave %u: the %s trigger's rollback was not taken: %s",
		    x->n, x->trigger, msg);
	json_decref(x->line);
	free(x);
}

/* watch_rlog_write's job. */
struct watch_rlog_job {
	struct floe *f;
	int64_t now_ms;
	void (*done)(void *, int);
	void *arg;
};

/* A trigger's rollback whose line the worker's child writes. */
struct watch_rlog_page {
	struct watch *w;
	uint32_t n;
	char *line; /* its text */
	size_t len;
};

bool
watch_rlog_write(struct floe *f, void (*done)(void *, int), void *arg)
{
	struct watch_rlog_job *j;

	if (f->worker == NULL || f->cluster != NULL || f->store == NULL ||
	    worker_pending(f->worker) > 0)
		return false;
	j = xcalloc(1, sizeof(*j));
	j->f = f;
	j->now_ms = units_now_ms();
	j->done = done;
	j->arg = arg;
	rlog_hold(f->rlog);
	worker_run(f->worker, watch_rlog_work, watch_rlog_done, j);
	return true;
}

/* In the child: write the pending lines; send back 0 or the errno. */
static void
watch_rlog_work(void *arg, struct evbuffer *out)
{
	struct watch_rlog_job *j = arg;
	struct store *st;
	char err[512];
	int32_t e;

	if ((st = store_open(j->f->conf->state_dir, err, sizeof(err))) ==
	    NULL) {
		log_warnx("%s: %s", __func__, err);
		e = EIO;
	} else {
		e = rlog_flush_path(j->f->conf->rollback_log, st, j->now_ms);
		store_free(st);
	}
	evbuffer_add(out, &e, sizeof(e));
}

/* On the loop: the log again, and the caller told. */
static void
watch_rlog_done(void *arg, struct evbuffer *out, const char *status)
{
	struct watch_rlog_job *j = arg;
	int32_t e = -1;

	if (status != NULL ||
	    evbuffer_remove(out, &e, sizeof(e)) != (int)sizeof(e))
		e = -1;
	rlog_flushed(j->f->rlog, e, units_now_ms());
	j->done(j->arg, e);
	free(j);
}

/*
 * The child wrote (or not) a trigger's line: page, saying so when the
 * log does not have it yet (it waits in the store for the tick).
 */
static void
watch_rlog_paged(void *arg, int e)
{
	struct watch_rlog_page *p = arg;

	if (e != 0)
		log_warnx("wave %u: the rollback log line could not be written "
			  "(kept in the flag store; retried every second)%s%s",
		    p->n, e > 0 ? ": " : "", e > 0 ? log_strerror(e) : "");
	watch_page_text(p->w, p->n, p->line, p->len, e != 0 ? "pending" : NULL);
	free(p->line);
	free(p);
}

/*
 * Roll wave N (read as SW) back for trigger K, then write the rollback log
 * line and say it in one log line, the place where it is decided; then
 * page. T0 is when the trigger fired, SINCE_US (0: unknown) when its
 * condition was first seen. MEASURED and THRESHOLD are borrowed.
 */
static void
watch_rollback(struct watch *w, uint32_t n, const struct store_wave *sw,
    enum trigger_kind k, json_t *measured, json_t *threshold, int64_t held_ms,
    const char *reason, int64_t t0, int64_t since_us)
{
	struct floe *f = w->f;
	const char *from = wave_state_name(sw->state);
	struct wave_evidence ev = { trigger_name(k), measured, threshold };
	struct watch_rlog_page *x;
	struct rlog_entry e;
	char msg[1024], *text;
	int64_t t1;
	json_t *line, *page = NULL;
	size_t len;
	bool pending;

	if (f->cluster != NULL && !store_capturing(f->store)) {
		watch_rollback_cluster(w, n, sw, k, measured, threshold,
		    held_ms, reason);
		return;
	}
	if (wave_rollback_why(f->store, n, &ev, "floe", reason, false,
		units_now_ms(), msg, sizeof(msg)) != WAVE_OK) {
		log_warnx("wave %u: the %s trigger fired but the rollback "
			  "failed: %s",
		    n, trigger_name(k), msg);
		return;
	}
	t1 = units_mono_us();
	w->rollbacks++;
	watch_fired_add(w, n, from, k, measured, threshold, reason);
	e = (struct rlog_entry) { .wave = n,
		.from = from,
		.trigger = trigger_name(k),
		.actor = "floe",
		.reason = reason,
		.measured = measured,
		.threshold = threshold,
		.held_ms = held_ms };
	/*
	 * Pending in the store now; appended and fsynced by the worker's
	 * child when it is idle, and the page sent once it did: the loop
	 * neither writes the log nor waits for its fsync. The line is
	 * written as text: no JSON value per table of the wave.
	 */
	line = NULL;
	text = NULL;
	if (f->worker != NULL && worker_pending(f->worker) == 0 &&
	    (text = rlog_line_text(&e, f->store, units_now_ms(), &len)) !=
		NULL &&
	    rlog_put_pending_text(f->rlog, text, len) == 0) {
		x = xcalloc(1, sizeof(*x));
		x->w = w;
		x->n = n;
		x->line = text;
		x->len = len;
		if (!watch_rlog_write(f, watch_rlog_paged, x))
			watch_rlog_paged(x, -1);
	} else {
		free(text);
		line = rlog_line(&e, f->store, units_now_ms());
		if (rlog_append(f->rlog, line, units_now_ms(), &pending) ==
		    -1) {
			log_warn("%s: wave %u: the rollback log line could "
				 "not be written%s",
			    __func__, n,
			    pending ? " (kept in the flag store; retried "
				      "every second)" :
				      "");
			/* The page says so: the log does not have it yet. */
			page = line != NULL ? json_deep_copy(line) : NULL;
			if (page != NULL)
				json_object_set_new(page, "rollback_log",
				    json_string(pending ? "pending" : "lost"));
		}
	}
	if (since_us > 0)
		log_info("wave %u: %s trigger: rolled back in %lld us, %lld us "
			 "after its condition was seen (from %s)",
		    n, trigger_name(k), (long long)(t1 - t0),
		    (long long)(t1 - since_us), from);
	else
		log_info("wave %u: %s trigger: rolled back in %lld us (from "
			 "%s)",
		    n, trigger_name(k), (long long)(t1 - t0), from);
	watch_reset_wave(w, n);
	if (page != NULL || line != NULL)
		watch_page(w, n, page != NULL ? page : line);
	json_decref(page);
	json_decref(line);
}

/* etcd took the page's event of wave ARG (every node lists it), or not. */
static void
watch_page_recorded(int status, const char *msg, void *arg)
{
	if (status != 200)
		log_warnx("wave %u: the page's event was not recorded: %s",
		    (uint32_t)(uintptr_t)arg, msg);
}

/*
 * Trigger K fired for frozen wave N (read as SW): recorded as an event and
 * paged about, once per wave record; an operator rolls a frozen wave back.
 * MEASURED and THRESHOLD are borrowed.
 */
static void
watch_page_frozen(struct watch *w, uint32_t n, const struct store_wave *sw,
    enum trigger_kind k, json_t *measured, json_t *threshold, int64_t held_ms,
    const char *reason)
{
	struct floe *f = w->f;
	const char *from = wave_state_name(sw->state);
	struct store_capture cap;
	char ts[40];
	json_t *line;
	bool cluster;
	int rc;

	if (!watch_paged_once(w, n, k, sw->seq))
		return;
	units_time_format(units_now_ms(), ts, sizeof(ts));
	line = json_pack("{s:s,s:I,s:o,s:s,s:O?,s:O?,s:I,s:s,s:s,s:s,s:s,s:s}",
	    "ts", ts, "wave", (json_int_t)n, "objects",
	    rlog_objects(f->store, n), "trigger", trigger_name(k), "measured",
	    measured, "threshold", threshold, "held_ms", (json_int_t)held_ms,
	    "from", from, "to", from, "actor", "floe", "reason", reason,
	    "action",
	    "page only: a frozen wave is rolled back by an operator "
	    "(floectl wave rollback N --force-stale)");
	if (line == NULL)
		return;
	log_warnx("wave %u is frozen: the %s trigger fired (%s); paging, not "
		  "rolling back",
	    n, trigger_name(k), reason);
	json_object_set_new(line, "type", json_string("trigger.page"));
	/* In a cluster the event is etcd's, as every event is. */
	cluster = f->cluster != NULL && !store_capturing(f->store);
	if (cluster)
		store_capture_begin(f->store, &cap);
	rc = store_event_append(f->store, units_now_ms(), line);
	if (cluster)
		store_capture_end(f->store);
	if (rc != STORE_OK) {
		if (cluster)
			store_capture_clear(&cap);
		log_warnx("wave %u: recording the page failed", n);
	} else if (cluster)
		cluster_commit(f->cluster, &cap, watch_page_recorded,
		    (void *)(uintptr_t)n);
	json_object_del(line, "type");
	json_object_del(line, "seq");
	watch_page(w, n, line);
	json_decref(line);
}

/*
 * Trigger K fired for wave N with MEASURED against THRESHOLD (both
 * stolen), held for HELD_MS. A canary or lakehouse wave goes back to the
 * warehouse: the store's txn first, then the log line, then the page. A
 * frozen wave is paged about once. SINCE_US (0: unknown) is when the
 * condition was first seen, for the latency logged.
 */
void
watch_fire(struct watch *w, uint32_t n, enum trigger_kind k, json_t *measured,
    json_t *threshold, int64_t held_ms, const char *reason, int64_t since_us)
{
	int64_t t0 = units_mono_us();
	struct store_wave sw;

	if (w->f->store == NULL ||
	    store_wave_get(w->f->store, n, &sw) != STORE_OK)
		goto out;
	switch (trigger_action_for(sw.state)) {
	case TRIGGER_NONE:
		break;
	case TRIGGER_ROLLBACK:
		watch_rollback(w, n, &sw, k, measured, threshold, held_ms,
		    reason, t0, since_us);
		break;
	case TRIGGER_PAGE:
		watch_page_frozen(w, n, &sw, k, measured, threshold, held_ms,
		    reason);
		break;
	}
out:
	json_decref(measured);
	json_decref(threshold);
}

/* A count check's gap record on its way through etcd. */
struct watch_count_held {
	struct watch *w;
	uint32_t wave;
	struct route_obj obj;
	struct store_kv kv; /* key and val below */
	unsigned char key[STORE_KEY_MAX];
	unsigned char val[LEDGER_VAL_MAX];
	char detail[256];
};

/*
 * Record a count mismatch of O as a ledger record (source metadata,
 * bucket gap), once per pair of snapshots, and run the reconcile trigger
 * on it like on any record.
 */
static void
watch_count_record(struct watch *w, struct watch_obj *o)
{
	struct floe *f = w->f;
	const struct trigger_snap *wh = &o->p[ROUTE_WAREHOUSE].snap;
	const struct trigger_snap *lh = &o->p[ROUTE_LAKEHOUSE].snap;
	unsigned char key[STORE_KEY_MAX], val[LEDGER_VAL_MAX];
	struct store_ledger_res res;
	struct ledger_rec rec;
	struct store_wave sw;
	struct store_kv kv;
	struct store_capture cap;
	struct watch_count_held *h;
	char detail[256], ts[40];
	bool cluster;
	json_t *ev;
	int rc;

	if (o->recorded && o->rec_id[ROUTE_WAREHOUSE] == wh->id &&
	    o->rec_id[ROUTE_LAKEHOUSE] == lh->id)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.ts_ms = units_now_ms();
	/* Dated after the flip even within its millisecond. */
	if (store_wave_get(f->store, o->wave, &sw) == STORE_OK &&
	    rec.ts_ms <= sw.flipped_ms)
		rec.ts_ms = sw.flipped_ms + 1;
	/* Different row counts: no tier can match. */
	rec.count_match = rec.aggregate_match = rec.hash_match = false;
	rec.bucket = LEDGER_GAP;
	strlcpy(rec.source, "metadata", sizeof(rec.source));
	kv.key = key;
	kv.keylen = ledger_key(&o->key, rec.ts_ms, key);
	kv.val = val;
	kv.vallen = ledger_encode(&rec, val);
	snprintf(detail, sizeof(detail),
	    "total-records: warehouse %lld (snapshot %lld), lakehouse %lld "
	    "(snapshot %lld)",
	    (long long)wh->total_records, (long long)wh->id,
	    (long long)lh->total_records, (long long)lh->id);
	units_time_format(rec.ts_ms, ts, sizeof(ts));
	ev = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s}", "type", "ledger.import",
	    "actor", "floe", "records", (json_int_t)1, "first_ts", ts, "object",
	    o->name, "source", "metadata", "detail", detail);
	/* In a cluster the record is etcd's, as every ledger record is. */
	cluster = f->cluster != NULL && !store_capturing(f->store);
	if (cluster)
		store_capture_begin(f->store, &cap);
	rc = ev != NULL ?
	    store_ledger_append(f->store, &kv, 1, units_now_ms(), ev, &res) :
	    STORE_ERROR;
	if (cluster)
		store_capture_end(f->store);
	json_decref(ev);
	if (rc != STORE_OK) {
		if (cluster)
			store_capture_clear(&cap);
		log_warnx("wave %u: %s: count mismatch (%s) could not be "
			  "recorded in the ledger",
		    o->wave, o->name, detail);
		return;
	}
	o->recorded = true;
	o->rec_id[ROUTE_WAREHOUSE] = wh->id;
	o->rec_id[ROUTE_LAKEHOUSE] = lh->id;
	if (cluster) {
		/* The trigger acts once etcd took it (watch_count_done). */
		h = xcalloc(1, sizeof(*h));
		h->w = w;
		h->wave = o->wave;
		h->obj = o->key;
		h->kv = kv;
		memcpy(h->key, key, kv.keylen);
		memcpy(h->val, val, kv.vallen);
		h->kv.key = h->key;
		h->kv.val = h->val;
		strlcpy(h->detail, detail, sizeof(h->detail));
		cluster_commit(f->cluster, &cap, watch_count_done, h);
		return;
	}
	log_info("ledger: %s: metadata count mismatch recorded as a gap (%s)",
	    o->name, detail);
	watch_ledger_added(f, &kv, 1);
}

/*
 * etcd took the count check's gap record (every node has it): the
 * reconcile trigger acts on it. Or not: the next poll records it again.
 */
static void
watch_count_done(int status, const char *msg, void *arg)
{
	struct watch_count_held *h = arg;
	struct watch *w = h->w;
	char name[WATCH_NAME_MAX];
	size_t i;

	route_obj_format(&h->obj, name, sizeof(name));
	if (status == 200) {
		log_info("ledger: %s: metadata count mismatch recorded as a "
			 "gap (%s)",
		    name, h->detail);
		watch_ledger_added(w->f, &h->kv, 1);
	} else {
		log_info("ledger: %s: the count mismatch (%s) was not taken by "
			 "etcd: %s; the next poll records it again",
		    name, h->detail, msg);
		for (i = 0; i < w->nobjs; i++)
			if (w->objs[i]->wave == h->wave &&
			    w->objs[i]->key.len == h->obj.len &&
			    memcmp(w->objs[i]->key.key, h->obj.key,
				h->obj.len) == 0)
				w->objs[i]->recorded = false;
	}
	free(h);
}

/*
 * The freshness trigger for O after a cycle: its lag sampled at NOW, and
 * the trigger fired when the lag has held past the policy. The kind of
 * lag seen (unknown when a side could not be read).
 */
static enum trigger_lag
watch_fresh_sample(struct watch *w, struct watch_obj *o,
    const struct trigger_fresh_params *fp, int64_t now)
{
	const struct conf_policy *pol = &w->f->conf->policy;
	char reason[WATCH_NAME_MAX + 512], d1[32], d2[32], d3[32];
	enum trigger_lag kind;
	int64_t lag = 0, held;

	o->p[ROUTE_WAREHOUSE].known_last = o->p[ROUTE_WAREHOUSE].known;
	o->p[ROUTE_LAKEHOUSE].known_last = o->p[ROUTE_LAKEHOUSE].known;
	if (!o->p[ROUTE_WAREHOUSE].known || !o->p[ROUTE_LAKEHOUSE].known)
		kind = TRIGGER_LAG_UNKNOWN;
	else
		kind = trigger_lag_of(&o->p[ROUTE_WAREHOUSE].snap,
		    &o->p[ROUTE_LAKEHOUSE].snap, &lag);
	if (!trigger_fresh_sample(&o->fresh, fp, kind, lag, now, &held))
		return kind;
	units_format_duration((uint64_t)pol->freshness_max_lag_ms, d2,
	    sizeof(d2));
	units_format_duration((uint64_t)held, d3, sizeof(d3));
	if (kind == TRIGGER_LAG_EMPTY)
		snprintf(reason, sizeof(reason),
		    "%s: the lakehouse table has no snapshot while the "
		    "warehouse has one, for %s",
		    o->name, d3);
	else {
		units_format_duration((uint64_t)lag, d1, sizeof(d1));
		snprintf(reason, sizeof(reason),
		    "%s: the lakehouse is %s behind the warehouse (> %s) for "
		    "%s",
		    o->name, d1, d2, d3);
	}
	watch_fire(w, o->wave, TRIGGER_FRESHNESS,
	    kind == TRIGGER_LAG_EMPTY ?
		json_string("lakehouse has no snapshot") :
		json_integer(lag),
	    json_integer((json_int_t)pol->freshness_max_lag_ms), held, reason,
	    0);
	return kind;
}

/*
 * The metadata count check for O after a cycle whose lag was KIND; a
 * mismatch is recorded in the ledger (and so meets the reconcile trigger).
 */
static void
watch_count_sample(struct watch *w, struct watch_obj *o, enum trigger_lag kind)
{
	if (o->count_off) {
		o->count = TRIGGER_COUNT_UNKNOWN;
		o->count_why = "switched off for this wave";
		return;
	}
	if (kind == TRIGGER_LAG_UNKNOWN) {
		o->count = TRIGGER_COUNT_UNKNOWN;
		o->count_why = "a side could not be read";
		return;
	}
	o->count = trigger_count_check(&o->p[ROUTE_WAREHOUSE].snap,
	    &o->p[ROUTE_LAKEHOUSE].snap, &o->count_why);
	if (o->count == TRIGGER_COUNT_MISMATCH)
		watch_count_record(w, o);
}

/* The cycle is over: freshness, then the count check, per object. */
void
watch_cycle_end(struct watch *w)
{
	const struct conf_policy *pol = &w->f->conf->policy;
	struct trigger_fresh_params fp = { (int64_t)pol->freshness_max_lag_ms,
		(int64_t)pol->freshness_for_ms };
	struct watch_obj *o;
	enum trigger_lag kind;
	int64_t now = units_now_ms(), due = INT64_MAX;
	size_t i;

	w->cycling = false;
	w->cycles++;
	w->last_cycle_ms = now;
	for (i = 0; i < w->nobjs; i++) {
		o = w->objs[i];
		kind = watch_fresh_sample(w, o, &fp, now);
		if (o->fresh.held_since_ms != 0 &&
		    o->fresh.held_since_ms + fp.for_ms < due)
			due = o->fresh.held_since_ms + fp.for_ms;
		watch_count_sample(w, o, kind);
		watch_split_sample(w, o, now);
	}
	/*
	 * A run that will have lasted freshness_for before the next poll is
	 * sampled again right then, not an interval later.
	 */
	if (due != INT64_MAX && due < w->next_poll_ms) {
		evtimer_del(w->poll);
		/* A few ms late rather than a hair early (timer rounding). */
		watch_schedule(w->poll,
		    due > now ? (uint64_t)(due - now) + 5 : 5);
		w->next_poll_ms = due;
	}
}

/* The reconcile trigger over records just committed. */
void
watch_ledger_added(struct floe *f, const struct store_kv *kv, size_t n)
{
	struct watch *w = f->watch;
	struct route_result res;
	struct ledger_rec rec;
	struct route_obj obj;
	struct store_wave sw;
	char name[WATCH_NAME_MAX], ts[40], reason[WATCH_NAME_MAX + 512];
	int64_t since = units_mono_us();
	size_t i, objlen;

	if (w == NULL || f->store == NULL)
		return;
	for (i = 0; i < n; i++) {
		if (kv[i].keylen <= LEDGER_TS_LEN)
			continue;
		objlen = kv[i].keylen - LEDGER_TS_LEN;
		memset(&rec, 0, sizeof(rec));
		rec.ts_ms = ledger_key_ts(kv[i].key, objlen);
		if (ledger_decode(kv[i].val, kv[i].vallen, &rec) == -1 ||
		    ledger_rec_is_clean(&rec) || rec.bucket == LEDGER_STALE)
			continue;
		if (route_obj_from_key(kv[i].key, objlen, &obj) == -1 ||
		    route_resolve(f->store, &obj, 0, &res) == -1 ||
		    !res.assigned)
			continue;
		if (store_wave_get(f->store, res.wave, &sw) != STORE_OK ||
		    !trigger_reconcile(&rec, sw.state, sw.flipped_ms))
			continue;
		route_obj_format(&obj, name, sizeof(name));
		units_time_format(rec.ts_ms, ts, sizeof(ts));
		snprintf(reason, sizeof(reason),
		    "%s: ledger record at %s is %s (count %s, aggregate %s, "
		    "hash %s; source %s): %s",
		    name, ts, ledger_bucket_name(rec.bucket),
		    rec.count_match ? "ok" : "fail",
		    rec.aggregate_match ? "ok" : "fail",
		    rec.hash_match ? "ok" : "fail",
		    rec.source[0] != '\0' ? rec.source : "unknown",
		    ledger_bucket_action(rec.bucket));
		watch_fire(w, res.wave, TRIGGER_RECONCILE,
		    json_string(ledger_bucket_name(rec.bucket)),
		    json_string("clean or stale"), 0, reason, since);
	}
}

/* Consumers' errors for wave N, then the error trigger at once. */
json_t *
watch_report_errors(struct floe *f, uint32_t n, int side, uint64_t errors,
    uint64_t total, char *msg, size_t msglen)
{
	struct watch *w = f->watch;
	struct trigger_wave *s;
	struct store_wave sw;
	uint64_t req, err, left_e, left_t;
	uint32_t ce, ct;
	int64_t now = units_now_ms();

	if (w == NULL || f->store == NULL) {
		snprintf(msg, msglen, "the triggers are not running");
		return NULL;
	}
	if (store_wave_get(f->store, n, &sw) != STORE_OK) {
		snprintf(msg, msglen, "wave %u cannot be read from the store",
		    n);
		return NULL;
	}
	if (side < 0)
		side = trigger_action_for(sw.state) == TRIGGER_NONE ?
		    ROUTE_WAREHOUSE :
		    ROUTE_LAKEHOUSE;
	(void)trigger_table_grow(&w->tab);
	if ((s = trigger_table_get(&w->tab, n, true)) == NULL) {
		snprintf(msg, msglen, "no room to count wave %u", n);
		return NULL;
	}
	for (left_e = errors, left_t = total; left_t > 0 || left_e > 0;) {
		ct = left_t > UINT32_MAX ? UINT32_MAX : (uint32_t)left_t;
		ce = left_e > ct ? ct : (uint32_t)left_e;
		trigger_ring_add(&w->tab.win, &s->side[side], now, ct, ce);
		left_t -= ct;
		left_e -= ce;
		if (ct == 0)
			break;
	}
	if (side == ROUTE_LAKEHOUSE)
		watch_check_wave(w, n, units_mono_us());
	if ((s = trigger_table_get(&w->tab, n, false)) == NULL)
		return NULL;
	trigger_ring_totals(&w->tab.win, &s->side[side], now, &req, &err);
	(void)store_wave_get(f->store, n, &sw);
	return json_pack("{s:I,s:s,s:s,s:I,s:I,s:{s:I,s:I}}", "wave",
	    (json_int_t)n, "side", route_side_name(side), "state",
	    wave_state_name(sw.state), "errors", (json_int_t)errors, "total",
	    (json_int_t)total, "window", "requests", (json_int_t)req, "errors",
	    (json_int_t)err);
}
