/*
 * floe: watch.c -- the rollback triggers at work on the event loop. The
 * request path counts outcomes into policy/trigger.c's rings; a deferred
 * event checks the error trigger right after a lakehouse read fails, and a
 * timer every bucket. A poller reads each object of a moved wave from both
 * catalogs every freshness_interval (a few at a time, revalidating with
 * If-None-Match) for the freshness lag and the metadata count check. The
 * reconcile trigger runs inside the POST /ledger that brings a record. A
 * trigger that fires on a canary or lakehouse wave rolls it back (one
 * synced txn), writes the rollback log line (fsynced), then pages; a
 * frozen wave is paged about only.
 */
#include <sys/queue.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "policy/trigger.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/fetch.h"
#include "proxy/floe.h"
#include "proxy/stats.h"
#include "proxy/watch.h"
#include "proxy/watch_impl.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

/* Collecting the objects and rules of the watched waves. */
struct watch_collect {
	struct watch *w;
	uint32_t *waves; /* sorted */
	uint8_t *count_off;
	size_t nwaves;
	struct route_obj *rules;
	uint32_t *rule_waves;
	size_t nrules;
	const struct route_obj *rule; /* while expanding one */
	uint32_t rule_wave;
	size_t nold; /* the poll list before, sorted by key: objs[0..nold) */
};

static int64_t watch_cached_ms(struct watch *);
static void watch_schedule(struct event *, uint64_t);
static void watch_check_cb(evutil_socket_t, short, void *);
static void watch_tick_cb(evutil_socket_t, short, void *);
static void watch_poll_cb(evutil_socket_t, short, void *);
static void watch_check_wave(struct watch *, uint32_t, int64_t);
static void watch_fire(struct watch *, uint32_t, enum trigger_kind, json_t *,
    json_t *, int64_t, const char *, int64_t);
static void watch_page(struct watch *, uint32_t, json_t *);
static void watch_page_send(struct watch_page *);
static void watch_page_done_cb(int, const char *, size_t, const char *, void *);
static void watch_page_timer_cb(evutil_socket_t, short, void *);
static void watch_page_free(struct watch_page *);
static bool watch_paged_once(struct watch *, uint32_t, enum trigger_kind,
    uint64_t);
static int watch_wave_cmp(const void *, const void *);
static int watch_waves_cb(const struct store_wave *, void *);
static int watch_routes_cb(const void *, size_t, const struct store_route *,
    void *);
static int watch_rule_obj_cb(const void *, size_t, void *);
static void watch_obj_add(struct watch_collect *, const struct route_obj *,
    uint32_t);
static void watch_rebuild(struct watch *);
static char *watch_url(struct watch *, const struct watch_obj *,
    enum route_side);
static void watch_poll_more(struct watch *);
static void watch_poll_done_cb(int, const char *, size_t, const char *, void *);
static void watch_cycle_end(struct watch *);
static void watch_count_record(struct watch *, struct watch_obj *);
static void watch_reset_wave(struct watch *, uint32_t);

/* The loop's cached wall clock in ms: no call into the kernel. */
static int64_t
watch_cached_ms(struct watch *w)
{
	struct timeval tv;

	if (event_base_gettimeofday_cached(w->f->base, &tv) == -1)
		return units_now_ms();
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Arm timer EV for MS from now. */
static void
watch_schedule(struct event *ev, uint64_t ms)
{
	struct timeval tv = units_ms_tv(ms);

	evtimer_add(ev, &tv);
}

/* Start watching. */
struct watch *
watch_new(struct floe *f)
{
	struct watch *w;

	w = xcalloc(1, sizeof(*w));
	w->f = f;
	TAILQ_INIT(&w->pages);
	w->window_ms = f->conf->policy.error_window_ms;
	trigger_table_init(&w->tab, w->window_ms, 64);
	if ((w->check = event_new(f->base, -1, 0, watch_check_cb, w)) == NULL ||
	    (w->tick = evtimer_new(f->base, watch_tick_cb, w)) == NULL ||
	    (w->poll = evtimer_new(f->base, watch_poll_cb, w)) == NULL)
		fatalx("%s: cannot create the trigger timers", __func__);
	watch_schedule(w->tick, (uint64_t)w->tab.win.width_ms);
	watch_schedule(w->poll, f->conf->policy.freshness_interval_ms);
	stats_add_status(&f->stats, "triggers", watch_status_cb, w);
	stats_add_metrics(&f->stats, watch_metrics_cb, w);
	return w;
}

/* Free one page, cancelling its delivery. */
static void
watch_page_free(struct watch_page *p)
{
	TAILQ_REMOVE(&p->w->pages, p, entry);
	fetch_cancel(p->req);
	if (p->timer != NULL)
		event_free(p->timer);
	free(p->body);
	free(p);
}

/* Stop everything and free. */
void
watch_free(struct watch *w)
{
	struct watch_page *p;
	size_t i;
	int s;

	if (w == NULL)
		return;
	stats_remove(&w->f->stats, w);
	while ((p = TAILQ_FIRST(&w->pages)) != NULL) {
		log_warnx("webhook: page for wave %u not delivered: floe is "
			  "stopping",
		    p->wave);
		watch_page_free(p);
	}
	for (i = 0; i < w->nobjs; i++) {
		for (s = 0; s < ROUTE_NSIDES; s++)
			fetch_cancel(w->objs[i]->p[s].req);
		free(w->objs[i]);
	}
	free(w->objs);
	event_free(w->check);
	event_free(w->tick);
	event_free(w->poll);
	trigger_table_clear(&w->tab);
	free(w);
}

/* New policy: a new window starts empty; the poll takes the new interval. */
void
watch_reload(struct watch *w)
{
	const struct conf_policy *p = &w->f->conf->policy;

	if (p->error_window_ms != w->window_ms) {
		log_info("error_window changed: the error counters start "
			 "again");
		trigger_table_clear(&w->tab);
		w->window_ms = p->error_window_ms;
		trigger_table_init(&w->tab, w->window_ms, 64);
		w->nsuspects = 0;
	}
	evtimer_del(w->tick);
	watch_schedule(w->tick, (uint64_t)w->tab.win.width_ms);
	if (!w->cycling) {
		evtimer_del(w->poll);
		watch_schedule(w->poll, p->freshness_interval_ms);
	}
}

/*
 * Count one read. A lakehouse read of a watched wave whose window holds
 * errors makes the wave a suspect, checked on the next loop turn
 * (event_active is a flag and a queue insert, no syscall without threads).
 */
void
watch_count(struct watch *w, uint32_t wave, unsigned state,
    enum route_side side, bool bad)
{
	struct trigger_wave *s;
	int64_t now;
	unsigned i;

	if (w == NULL)
		return;
	now = watch_cached_ms(w);
	if ((s = trigger_table_get(&w->tab, wave, true)) == NULL)
		return;
	trigger_ring_add(&w->tab.win, &s->side[side], now, 1, bad ? 1 : 0);
	/*
	 * Any lakehouse read while the window holds errors may be the one
	 * that makes the condition hold (the minimum of reads reached).
	 */
	if (side != ROUTE_LAKEHOUSE || s->side[side].err_sum == 0 ||
	    trigger_action_for(state) == TRIGGER_NONE)
		return;
	for (i = 0; i < w->nsuspects && w->suspects[i] != wave; i++)
		;
	if (i == w->nsuspects) {
		if (w->nsuspects < WATCH_SUSPECTS)
			w->suspects[w->nsuspects++] = wave;
		else
			w->suspects_overflow = true;
	}
	if (!w->check_pending) {
		w->check_pending = true;
		w->suspect_us = now * 1000;
		event_active(w->check, EV_TIMEOUT, 1);
	}
}

/* The warehouse reads of wave N over the window, as the flip's baseline. */
void
watch_baseline(struct watch *w, uint32_t n, struct wave_baseline *b)
{
	struct trigger_wave *s;

	memset(b, 0, sizeof(*b));
	if (w == NULL || (s = trigger_table_get(&w->tab, n, false)) == NULL)
		return;
	trigger_ring_totals(&w->tab.win, &s->side[ROUTE_WAREHOUSE],
	    units_now_ms(), &b->requests, &b->errors);
}

/* Check the suspects (all waves after an overflow). */
static void
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
static void
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
static void
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
 * Trigger K fired for wave N with MEASURED against THRESHOLD (both
 * stolen), held for HELD_MS. A canary or lakehouse wave goes back to the
 * warehouse: the store's txn first, then the log line, then the page. A
 * frozen wave is paged about once. SINCE_US (0: unknown) is when the
 * condition was first seen, for the latency logged.
 */
static void
watch_fire(struct watch *w, uint32_t n, enum trigger_kind k, json_t *measured,
    json_t *threshold, int64_t held_ms, const char *reason, int64_t since_us)
{
	struct floe *f = w->f;
	struct rlog_entry e;
	struct wave_evidence ev;
	struct store_wave sw;
	char msg[1024], ts[40];
	const char *from;
	int64_t t0, t1;
	json_t *line;

	t0 = units_mono_us();
	if (f->store == NULL || store_wave_get(f->store, n, &sw) != STORE_OK)
		goto out;
	from = wave_state_name(sw.state);
	switch (trigger_action_for(sw.state)) {
	case TRIGGER_NONE:
		goto out;
	case TRIGGER_ROLLBACK:
		ev = (struct wave_evidence) { trigger_name(k), measured,
			threshold };
		if (wave_rollback_why(f->store, n, &ev, "floe", reason, false,
			units_now_ms(), msg, sizeof(msg)) != WAVE_OK) {
			log_warnx("wave %u: the %s trigger fired but the "
				  "rollback failed: %s",
			    n, trigger_name(k), msg);
			goto out;
		}
		t1 = units_mono_us();
		w->rollbacks++;
		e = (struct rlog_entry) { .wave = n,
			.from = from,
			.trigger = trigger_name(k),
			.actor = "floe",
			.reason = reason,
			.measured = measured,
			.threshold = threshold,
			.held_ms = held_ms };
		line = rlog_line(&e, f->store, units_now_ms());
		if (rlog_write(f->rlog, line) == -1)
			log_warn("%s: wave %u: the rollback log line could not "
				 "be written",
			    __func__, n);
		if (since_us > 0)
			log_info("wave %u: %s trigger: rolled back in %lld us, "
				 "%lld us after its condition was seen (from "
				 "%s)",
			    n, trigger_name(k), (long long)(t1 - t0),
			    (long long)(t1 - since_us), from);
		else
			log_info("wave %u: %s trigger: rolled back in %lld us "
				 "(from %s)",
			    n, trigger_name(k), (long long)(t1 - t0), from);
		watch_reset_wave(w, n);
		if (line != NULL)
			watch_page(w, n, line);
		json_decref(line);
		break;
	case TRIGGER_PAGE:
		if (!watch_paged_once(w, n, k, sw.seq))
			goto out;
		units_time_format(units_now_ms(), ts, sizeof(ts));
		line = json_pack("{s:s,s:I,s:o,s:s,s:O?,s:O?,s:I,s:s,s:s,s:s,"
				 "s:s,s:s}",
		    "ts", ts, "wave", (json_int_t)n, "objects",
		    rlog_objects(f->store, n), "trigger", trigger_name(k),
		    "measured", measured, "threshold", threshold, "held_ms",
		    (json_int_t)held_ms, "from", from, "to", from, "actor",
		    "floe", "reason", reason, "action",
		    "page only: a frozen wave is rolled back by an operator "
		    "(floectl wave rollback N --force-stale)");
		if (line == NULL)
			goto out;
		log_warnx("wave %u is frozen: the %s trigger fired (%s); "
			  "paging, not rolling back",
		    n, trigger_name(k), reason);
		json_object_set_new(line, "type", json_string("trigger.page"));
		if (store_event_append(f->store, units_now_ms(), line) !=
		    STORE_OK)
			log_warnx("wave %u: recording the page failed", n);
		json_object_del(line, "type");
		json_object_del(line, "seq");
		watch_page(w, n, line);
		json_decref(line);
		break;
	}
out:
	json_decref(measured);
	json_decref(threshold);
}

/* Page the webhook with LINE (borrowed) about wave N, if one is set. */
static void
watch_page(struct watch *w, uint32_t n, json_t *line)
{
	struct watch_page *p;
	char *body;

	if (w->f->conf->policy.webhook == NULL)
		return;
	if ((body = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER)) ==
	    NULL) {
		log_warnx("webhook: cannot build the page for wave %u", n);
		return;
	}
	p = xcalloc(1, sizeof(*p));
	p->w = w;
	p->body = body;
	p->wave = n;
	if ((p->timer = evtimer_new(w->f->base, watch_page_timer_cb, p)) ==
	    NULL)
		fatalx("%s: cannot create a timer", __func__);
	TAILQ_INSERT_TAIL(&w->pages, p, entry);
	w->pages_sent++;
	watch_page_send(p);
}

/* One try at delivering P. */
static void
watch_page_send(struct watch_page *p)
{
	static const char *const headers[] = { "Content-Type: application/json",
		NULL };
	struct fetch_opts o = { 0 };

	p->tries++;
	o.method = "POST";
	o.headers = headers;
	o.body = p->body;
	o.body_len = strlen(p->body);
	o.timeout_ms = WATCH_PAGE_TIMEOUT_MS;
	o.max_body = 64 * 1024;
	p->req = fetch_start(p->w->f->fetch, p->w->f->conf->policy.webhook, &o,
	    watch_page_done_cb, p);
}

/* The retry is due. */
static void
watch_page_timer_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	watch_page_send(arg);
}

/* A try ended: done on 2xx, else again after 1 s, 2 s, 4 s, 8 s. */
static void
watch_page_done_cb(int status, const char *body __unused, size_t len __unused,
    const char *error, void *arg)
{
	struct watch_page *p = arg;
	struct watch *w = p->w;
	char why[256];
	uint64_t delay;

	p->req = NULL;
	if (status >= 200 && status < 300) {
		log_info("webhook: page for wave %u delivered (try %d)",
		    p->wave, p->tries);
		w->pages_delivered++;
		watch_page_free(p);
		return;
	}
	w->tries_failed++;
	if (status == 0)
		snprintf(why, sizeof(why), "%s",
		    error != NULL ? error : "no answer");
	else
		snprintf(why, sizeof(why), "HTTP %d", status);
	if (p->tries >= WATCH_PAGE_TRIES) {
		log_warnx("webhook: page for wave %u failed after %d tries "
			  "(%s); the rollback log has it",
		    p->wave, p->tries, why);
		w->pages_failed++;
		watch_page_free(p);
		return;
	}
	delay = (uint64_t)WATCH_PAGE_FIRST_MS << (p->tries - 1);
	log_warnx("webhook: page for wave %u failed (try %d of %d: %s); "
		  "retrying in %" PRIu64 " ms",
	    p->wave, p->tries, WATCH_PAGE_TRIES, why, delay);
	watch_schedule(p->timer, delay);
}

/* Order keys as the store does. */
static int
watch_key_cmp(const struct route_obj *a, const struct route_obj *b)
{
	return store_key_cmp(a->key, a->len, b->key, b->len);
}

/* Order poll list entries by key (qsort). */
static int
watch_obj_cmp(const void *a, const void *b)
{
	return watch_key_cmp(&(*(struct watch_obj *const *)a)->key,
	    &(*(struct watch_obj *const *)b)->key);
}

/* Find a key among poll list entries (bsearch). */
static int
watch_obj_find(const void *key, const void *elem)
{
	return watch_key_cmp(key, &(*(struct watch_obj *const *)elem)->key);
}

/* Order wave numbers. */
static int
watch_wave_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Keep the waves whose triggers are armed. */
static int
watch_waves_cb(const struct store_wave *sw, void *arg)
{
	struct watch_collect *c = arg;

	if (trigger_action_for(sw->state) == TRIGGER_NONE)
		return 0;
	c->waves = xreallocarray(c->waves, c->nwaves + 1, sizeof(*c->waves));
	c->count_off = xreallocarray(c->count_off, c->nwaves + 1, 1);
	c->waves[c->nwaves] = sw->n;
	c->count_off[c->nwaves] = (sw->flags & WAVE_F_NO_COUNT_CHECK) != 0;
	c->nwaves++;
	return 0;
}

/* Keep (or renew) one object of wave N in the poll list. */
static void
watch_obj_add(struct watch_collect *c, const struct route_obj *obj, uint32_t n)
{
	struct watch *w = c->w;
	struct watch_obj *o = NULL, **at;
	uint32_t *found;
	int s;

	/*
	 * The list as it was is sorted; what this rebuild adds goes after it
	 * (each key comes once: routes and ledger objects under a rule do
	 * not overlap).
	 */
	at = c->nold == 0 ?
	    NULL :
	    bsearch(obj, w->objs, c->nold, sizeof(*w->objs), watch_obj_find);
	if (at != NULL)
		o = *at;
	if (o != NULL && o->seen)
		return;
	if (o == NULL || o->wave != n) {
		if (o == NULL) {
			if (w->nobjs == w->objs_cap) {
				w->objs_cap =
				    w->objs_cap != 0 ? w->objs_cap * 2 : 64;
				w->objs = xreallocarray(w->objs, w->objs_cap,
				    sizeof(*w->objs));
			}
			o = w->objs[w->nobjs++] = xcalloc(1, sizeof(*o));
		} else
			memset(o, 0, sizeof(*o));
		o->w = w;
		o->key = *obj;
		route_obj_format(obj, o->name, sizeof(o->name));
		for (s = 0; s < ROUTE_NSIDES; s++) {
			o->p[s].o = o;
			o->p[s].side = (enum route_side)s;
			strlcpy(o->p[s].why, "not read yet",
			    sizeof(o->p[s].why));
		}
		o->count_why = "not compared yet";
	}
	o->wave = n;
	o->seen = true;
	found =
	    bsearch(&n, c->waves, c->nwaves, sizeof(*c->waves), watch_wave_cmp);
	o->count_off = found != NULL && c->count_off[found - c->waves];
}

/* Objects and rules routed to a watched wave. */
static int
watch_routes_cb(const void *key, size_t keylen, const struct store_route *rt,
    void *arg)
{
	struct watch_collect *c = arg;
	struct route_obj obj;

	if (bsearch(&rt->wave, c->waves, c->nwaves, sizeof(*c->waves),
		watch_wave_cmp) == NULL ||
	    route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	if (!obj.rule) {
		watch_obj_add(c, &obj, rt->wave);
		return 0;
	}
	c->rules = xreallocarray(c->rules, c->nrules + 1, sizeof(*c->rules));
	c->rule_waves =
	    xreallocarray(c->rule_waves, c->nrules + 1, sizeof(*c->rule_waves));
	c->rules[c->nrules] = obj;
	c->rule_waves[c->nrules] = rt->wave;
	c->nrules++;
	return 0;
}

/*
 * A table of the ledger under a rule: watched if it resolves to the
 * rule's wave through exactly that rule (as the gates see it).
 */
static int
watch_rule_obj_cb(const void *key, size_t keylen, void *arg)
{
	struct watch_collect *c = arg;
	struct route_result res;
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1 || obj.rule)
		return 0;
	if (route_resolve(c->w->f->store, &obj, 0, &res) == -1)
		return 1;
	if (res.assigned && res.why == ROUTE_WHY_RULE &&
	    res.wave == c->rule_wave && res.matched.len == c->rule->len &&
	    memcmp(res.matched.key, c->rule->key, c->rule->len) == 0)
		watch_obj_add(c, &obj, c->rule_wave);
	return 0;
}

/*
 * The poll list anew: the tables of canary, lakehouse and frozen waves
 * (their own entries, and the tables of the ledger their rules cover).
 * An object that stays keeps what was learnt of it.
 */
static void
watch_rebuild(struct watch *w)
{
	struct watch_collect c;
	struct route_obj sub;
	size_t i, j;
	int k;

	memset(&c, 0, sizeof(c));
	c.w = w;
	for (i = 0; i < w->nobjs; i++)
		w->objs[i]->seen = false;
	/* Thousands of watched tables: find each in O(log n), not O(n). */
	if (w->nobjs > 1)
		qsort(w->objs, w->nobjs, sizeof(*w->objs), watch_obj_cmp);
	c.nold = w->nobjs;
	if (store_wave_foreach(w->f->store, watch_waves_cb, &c) < 0)
		goto out;
	if (c.nwaves > 0 &&
	    store_route_foreach(w->f->store, watch_routes_cb, &c) >= 0) {
		for (i = 0; i < c.nrules; i++) {
			c.rule = &c.rules[i];
			c.rule_wave = c.rule_waves[i];
			for (k = 0; k < 2; k++) {
				sub = c.rules[i];
				sub.key[sub.len - 1] =
				    k == 0 ? ROUTE_SEP_TABLE : ROUTE_SEP_LEVEL;
				(void)store_ledger_objects(w->f->store, sub.key,
				    sub.len, watch_rule_obj_cb, &c);
			}
		}
	}
out:
	for (i = 0, j = 0; i < w->nobjs; i++) {
		if (w->objs[i]->seen)
			w->objs[j++] = w->objs[i];
		else
			free(w->objs[i]);
	}
	w->nobjs = j;
	free(c.waves);
	free(c.count_off);
	free(c.rules);
	free(c.rule_waves);
}

/* Append S percent-encoded (RFC 3986 unreserved kept) to BUF at *OFF. */
static void
watch_pct(char *buf, size_t len, size_t *off, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n && *off + 4 < len; i++) {
		if ((s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    strchr("-._~", s[i]) != NULL)
			buf[(*off)++] = (char)s[i];
		else {
			buf[(*off)++] = '%';
			buf[(*off)++] = hex[s[i] >> 4];
			buf[(*off)++] = hex[s[i] & 0xf];
		}
	}
	buf[*off] = '\0';
}

/* The LoadTable URL of O on SIDE (snapshots=refs: the current one). */
static char *
watch_url(struct watch *w, const struct watch_obj *o, enum route_side side)
{
	const struct conf_target *t = &w->f->conf->target[side];
	const struct catalog *cat = w->f->cat[side];
	const unsigned char *k = o->key.key, *tab;
	size_t n = o->key.len, off = 0, cap = n * 3 + 64, nslen;
	char *path = xmalloc(cap);

	if ((tab = memchr(k, ROUTE_SEP_TABLE, n)) == NULL)
		tab = k + n;
	nslen = (size_t)(tab - k);
	/* Levels are joined by 0x1f in the key and by %1F in the path. */
	watch_pct(path, cap, &off, k, nslen);
	strlcpy(path + off, "/tables/", cap - off);
	off += strlen(path + off);
	if (tab < k + n)
		watch_pct(path, cap, &off, tab + 1, (size_t)(k + n - tab - 1));
	{
		char *url = xasprintf("%s/v1%s%s/namespaces/%s?snapshots=refs",
		    t->uri, cat->prefix != NULL ? "/" : "",
		    cat->prefix != NULL ? cat->prefix : "", path);

		free(path);
		return url;
	}
}

/* Start polls until WATCH_POLL_MAX are in flight or none is left. */
static void
watch_poll_more(struct watch *w)
{
	struct floe *f = w->f;
	struct watch_obj *o;
	struct watch_poll *p;
	const struct conf_target *t;
	const char *headers[4];
	struct fetch_opts fo;
	char *url, *auth, *inm;
	int h;

	while (w->inflight < WATCH_POLL_MAX && w->next_job < w->nobjs * 2) {
		o = w->objs[w->next_job / 2];
		p = &o->p[w->next_job % 2];
		w->next_job++;
		t = &f->conf->target[p->side];
		if (!f->cat[p->side]->known) {
			snprintf(p->why, sizeof(p->why),
			    "the %s catalog's config is not known yet",
			    route_side_name(p->side));
			continue;
		}
		auth = inm = NULL;
		h = 0;
		headers[h++] = "Accept: application/json";
		if (t->token != NULL)
			headers[h++] = auth =
			    xasprintf("Authorization: Bearer %s", t->token);
		if (p->ever && p->etag[0] != '\0')
			headers[h++] = inm =
			    xasprintf("If-None-Match: %s", p->etag);
		headers[h] = NULL;
		memset(&fo, 0, sizeof(fo));
		fo.headers = headers;
		fo.timeout_ms = t->timeout_ms;
		fo.connect_timeout_ms = t->connect_timeout_ms;
		fo.ca_file = t->ca_file;
		fo.max_body = WATCH_POLL_BODY;
		fo.etag = p->etag_new;
		fo.etag_size = sizeof(p->etag_new);
		url = watch_url(w, o, p->side);
		w->inflight++;
		p->req = fetch_start(f->fetch, url, &fo, watch_poll_done_cb, p);
		free(url);
		free(inm);
		if (auth != NULL) {
			explicit_bzero(auth, strlen(auth));
			free(auth);
		}
	}
}

/* One LoadTable answer of the poll. */
static void
watch_poll_done_cb(int status, const char *body, size_t len, const char *error,
    void *arg)
{
	struct watch_poll *p = arg;
	struct watch *w = p->o->w;
	struct trigger_snap snap;
	char err[128];

	p->req = NULL;
	w->inflight--;
	if (status == 304 && p->ever) {
		p->known = true;
	} else if (status == 200) {
		if (trigger_snap_parse(body, len, &snap, err, sizeof(err)) ==
		    0) {
			p->snap = snap;
			p->known = p->ever = true;
			strlcpy(p->etag, p->etag_new, sizeof(p->etag));
		} else
			snprintf(p->why, sizeof(p->why),
			    "not a LoadTable result: %s", err);
	} else if (status == 0)
		snprintf(p->why, sizeof(p->why), "%s",
		    error != NULL ? error : "no answer");
	else
		snprintf(p->why, sizeof(p->why), "HTTP %d", status);
	watch_poll_more(w);
	if (w->inflight == 0 && w->next_job >= w->nobjs * 2)
		watch_cycle_end(w);
}

/* Every freshness_interval: read every watched object from both sides. */
static void
watch_poll_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct watch *w = arg;
	uint64_t seq = 0;
	size_t i;
	int s;

	watch_schedule(w->poll, w->f->conf->policy.freshness_interval_ms);
	w->next_poll_ms =
	    units_now_ms() + (int64_t)w->f->conf->policy.freshness_interval_ms;
	if (w->cycling || w->f->store == NULL)
		return;
	/*
	 * Routes, waves and the ledger change only with a new event: with a
	 * million routes, the scan that builds the list is worth skipping.
	 */
	if (store_seq_read(w->f->store, &seq) != STORE_OK || !w->built ||
	    seq != w->built_seq) {
		watch_rebuild(w);
		w->built = true;
		w->built_seq = seq;
	}
	if (w->nobjs == 0)
		return;
	for (i = 0; i < w->nobjs; i++)
		for (s = 0; s < ROUTE_NSIDES; s++)
			w->objs[i]->p[s].known = false;
	w->cycling = true;
	w->next_job = 0;
	watch_poll_more(w);
	if (w->inflight == 0)
		watch_cycle_end(w);
}

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
	char detail[256], ts[40];
	json_t *ev;

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
	if (ev == NULL ||
	    store_ledger_append(f->store, &kv, 1, units_now_ms(), ev, &res) !=
		STORE_OK) {
		log_warnx("wave %u: %s: count mismatch (%s) could not be "
			  "recorded in the ledger",
		    o->wave, o->name, detail);
		json_decref(ev);
		return;
	}
	json_decref(ev);
	o->recorded = true;
	o->rec_id[ROUTE_WAREHOUSE] = wh->id;
	o->rec_id[ROUTE_LAKEHOUSE] = lh->id;
	log_info("ledger: %s: metadata count mismatch recorded as a gap (%s)",
	    o->name, detail);
	watch_ledger_added(f, &kv, 1);
}

/* The cycle is over: freshness, then the count check, per object. */
static void
watch_cycle_end(struct watch *w)
{
	const struct conf_policy *pol = &w->f->conf->policy;
	struct trigger_fresh_params fp = { (int64_t)pol->freshness_max_lag_ms,
		(int64_t)pol->freshness_for_ms };
	struct watch_obj *o;
	enum trigger_lag kind;
	int64_t lag, held, now = units_now_ms(), due = INT64_MAX;
	char reason[WATCH_NAME_MAX + 512], d1[32], d2[32], d3[32];
	size_t i;

	w->cycling = false;
	w->cycles++;
	w->last_cycle_ms = now;
	for (i = 0; i < w->nobjs; i++) {
		o = w->objs[i];
		lag = 0;
		o->p[ROUTE_WAREHOUSE].known_last = o->p[ROUTE_WAREHOUSE].known;
		o->p[ROUTE_LAKEHOUSE].known_last = o->p[ROUTE_LAKEHOUSE].known;
		if (!o->p[ROUTE_WAREHOUSE].known ||
		    !o->p[ROUTE_LAKEHOUSE].known)
			kind = TRIGGER_LAG_UNKNOWN;
		else
			kind = trigger_lag_of(&o->p[ROUTE_WAREHOUSE].snap,
			    &o->p[ROUTE_LAKEHOUSE].snap, &lag);
		if (trigger_fresh_sample(&o->fresh, &fp, kind, lag, now,
			&held)) {
			units_format_duration((uint64_t)
						  pol->freshness_max_lag_ms,
			    d2, sizeof(d2));
			units_format_duration((uint64_t)held, d3, sizeof(d3));
			if (kind == TRIGGER_LAG_EMPTY)
				snprintf(reason, sizeof(reason),
				    "%s: the lakehouse table has no snapshot "
				    "while the warehouse has one, for %s",
				    o->name, d3);
			else {
				units_format_duration((uint64_t)lag, d1,
				    sizeof(d1));
				snprintf(reason, sizeof(reason),
				    "%s: the lakehouse is %s behind the "
				    "warehouse (> %s) for %s",
				    o->name, d1, d2, d3);
			}
			watch_fire(w, o->wave, TRIGGER_FRESHNESS,
			    kind == TRIGGER_LAG_EMPTY ?
				json_string("lakehouse has no snapshot") :
				json_integer(lag),
			    json_integer((json_int_t)pol->freshness_max_lag_ms),
			    held, reason, 0);
		}
		if (o->fresh.held_since_ms != 0 &&
		    o->fresh.held_since_ms + fp.for_ms < due)
			due = o->fresh.held_since_ms + fp.for_ms;
		if (o->count_off) {
			o->count = TRIGGER_COUNT_UNKNOWN;
			o->count_why = "switched off for this wave";
			continue;
		}
		if (kind == TRIGGER_LAG_UNKNOWN) {
			o->count = TRIGGER_COUNT_UNKNOWN;
			o->count_why = "a side could not be read";
			continue;
		}
		o->count = trigger_count_check(&o->p[ROUTE_WAREHOUSE].snap,
		    &o->p[ROUTE_LAKEHOUSE].snap, &o->count_why);
		if (o->count == TRIGGER_COUNT_MISMATCH)
			watch_count_record(w, o);
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
