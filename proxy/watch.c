/*
 * floe: watch.c -- the rollback triggers' watcher: its life (timers made,
 * re-armed on reload, freed), the request path's counting of each read
 * into policy/trigger.c's rings, the flip baseline, the webhook pages
 * (delivered with retries off the critical path) and /status. Evaluating
 * the triggers and moving waves back is watch_trigger.c's; reading the
 * moved waves' tables from both catalogs is watch_poll.c's.
 */
#include <sys/queue.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/trigger.h"
#include "proxy/cluster.h"
#include "proxy/conf.h"
#include "proxy/fetch.h"
#include "proxy/floe.h"
#include "proxy/stats.h"
#include "proxy/watch.h"
#include "proxy/watch_impl.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

#define WATCH_PAGE_TRIES 5
#define WATCH_PAGE_FIRST_MS 1000 /* then doubling */
#define WATCH_PAGE_TIMEOUT_MS 5000

static json_t *watch_status_cb(void *);
static inline void watch_count_add(struct watch *, uint32_t, unsigned,
    enum route_side, uint32_t, uint32_t);
static void watch_page_send(struct watch_page *);
static void watch_page_done_cb(int, const char *, size_t, const char *, void *);
static void watch_page_timer_cb(evutil_socket_t, short, void *);
static void watch_page_free(struct watch_page *);

/* The loop's cached wall clock in ms: no call into the kernel. */
int64_t
watch_cached_ms(struct watch *w)
{
	struct timeval tv;

	if (event_base_gettimeofday_cached(w->f->base, &tv) == -1)
		return units_now_ms();
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Arm timer EV for MS from now. */
void
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
	stats_add_metrics(&f->stats, watch_split_metrics_cb, w);
	stats_add_metrics(&f->stats, watch_metrics_cb, w);
	return w;
}

/* stats_status_cb: the triggers' part of GET /status. */
static json_t *
watch_status_cb(void *arg)
{
	return watch_status_json(arg);
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
	json_decref(w->fired);
	free(w);
}

json_t *
watch_fired_take(struct watch *w)
{
	json_t *f;

	if (w == NULL)
		return NULL;
	f = w->fired;
	w->fired = NULL;
	return f;
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
static inline void
watch_count_add(struct watch *w, uint32_t wave, unsigned state,
    enum route_side side, uint32_t n, uint32_t bad)
{
	struct trigger_wave *s;
	int64_t now;
	unsigned i;

	if (w == NULL)
		return;
	now = watch_cached_ms(w);
	if ((s = trigger_table_get(&w->tab, wave, true)) == NULL)
		return;
	trigger_ring_add(&w->tab.win, &s->side[side], now, n, bad);
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

void
watch_count(struct watch *w, uint32_t wave, unsigned state,
    enum route_side side, bool bad)
{
	watch_count_add(w, wave, state, side, 1, bad ? 1 : 0);
}

/* N table reads of WAVE by SIDE, BAD of them failed (a worker's, summed). */
void
watch_count_n(struct watch *w, uint32_t wave, unsigned state,
    enum route_side side, uint32_t n, uint32_t bad)
{
	watch_count_add(w, wave, state, side, n, bad);
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

/* Page the webhook with BODY (taken) about wave N. */
static void
watch_page_body(struct watch *w, uint32_t n, char *body)
{
	struct watch_page *p;

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

/* Page the webhook with LINE (borrowed) about wave N, if one is set. */
void
watch_page(struct watch *w, uint32_t n, json_t *line)
{
	char *body;

	if (w->f->conf->policy.webhook == NULL)
		return;
	if ((body = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER)) ==
	    NULL) {
		log_warnx("webhook: cannot build the page for wave %u", n);
		return;
	}
	watch_page_body(w, n, body);
}

void
watch_page_text(struct watch *w, uint32_t n, const char *line, size_t len,
    const char *rlog)
{
	static const char key[] = ",\"rollback_log\":\"";
	char *body;
	size_t r;

	if (w->f->conf->policy.webhook == NULL)
		return;
	if (rlog == NULL) {
		body = xmalloc(len + 1);
		memcpy(body, line, len);
		body[len] = '\0';
		watch_page_body(w, n, body);
		return;
	}
	/* As json_object_set_new adds the key last: before the '}'. */
	if (len == 0 || line[len - 1] != '}') {
		log_warnx("webhook: cannot build the page for wave %u", n);
		return;
	}
	r = strlen(rlog);
	body = xmalloc(len - 1 + sizeof(key) - 1 + r + 3);
	memcpy(body, line, len - 1);
	memcpy(body + len - 1, key, sizeof(key) - 1);
	memcpy(body + len - 1 + sizeof(key) - 1, rlog, r);
	memcpy(body + len - 1 + sizeof(key) - 1 + r, "\"}", 3);
	watch_page_body(w, n, body);
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

/* The error counters of each counted wave, for /status. */
static json_t *
watch_status_waves(struct watch *w, int64_t now)
{
	struct trigger_wave *s;
	struct store_wave sw;
	json_t *waves, *one, *side;
	uint64_t req, err;
	char n[16];
	size_t i;
	int k;

	waves = json_object();
	for (i = 0; i < w->tab.cap; i++) {
		s = &w->tab.slots[i];
		if (!s->used || w->f->store == NULL ||
		    store_wave_get(w->f->store, s->wave, &sw) != STORE_OK)
			continue;
		one = json_pack("{s:s}", "state", wave_state_name(sw.state));
		for (k = 0; k < ROUTE_NSIDES; k++) {
			trigger_ring_totals(&w->tab.win, &s->side[k], now, &req,
			    &err);
			side = json_pack("{s:I,s:I,s:f}", "requests",
			    (json_int_t)req, "errors", (json_int_t)err, "rate",
			    req > 0 ? (double)err / (double)req : 0.0);
			json_object_set_new(one, route_side_name(k), side);
		}
		if (trigger_action_for(sw.state) != TRIGGER_NONE)
			json_object_set_new(one, "baseline",
			    json_pack("{s:I,s:I}", "requests",
				(json_int_t)sw.base_requests, "errors",
				(json_int_t)sw.base_errors));
		snprintf(n, sizeof(n), "%u", s->wave);
		json_object_set_new(waves, n, one);
	}
	return waves;
}

/* What the poller knows of O, for /status. */
static json_t *
watch_status_obj(const struct watch_obj *o, int64_t now)
{
	const char *state;
	char why[400], dur[32];
	json_t *one;

	if (o->fresh.last_ms == 0)
		state = "not sampled yet";
	else if (o->fresh.kind == TRIGGER_LAG_KNOWN)
		state = "known";
	else if (o->fresh.kind == TRIGGER_LAG_EMPTY)
		state = "lakehouse has no snapshot";
	else {
		snprintf(why, sizeof(why),
		    "unknown: warehouse %s, "
		    "lakehouse %s",
		    o->p[ROUTE_WAREHOUSE].known_last ?
			"read" :
			o->p[ROUTE_WAREHOUSE].why,
		    o->p[ROUTE_LAKEHOUSE].known_last ?
			"read" :
			o->p[ROUTE_LAKEHOUSE].why);
		state = why;
	}
	one =
	    json_pack("{s:I,s:s}", "wave", (json_int_t)o->wave, "state", state);
	if (o->fresh.last_ms != 0 && o->fresh.kind == TRIGGER_LAG_KNOWN) {
		json_object_set_new(one, "lag_ms",
		    json_integer(o->fresh.lag_ms));
		units_format_duration(o->fresh.lag_ms > 0 ?
			(uint64_t)o->fresh.lag_ms :
			0,
		    dur, sizeof(dur));
		json_object_set_new(one, "lag",
		    json_string(o->fresh.lag_ms < 0 ? "ahead" : dur));
	}
	json_object_set_new(one, "held_ms",
	    json_integer(o->fresh.held_since_ms != 0 ?
		    now - o->fresh.held_since_ms :
		    0));
	json_object_set_new(one, "count",
	    json_string(trigger_count_name(o->count)));
	if (o->count_why != NULL)
		json_object_set_new(one, "count_why",
		    json_string(o->count_why));
	return one;
}

/* The triggers' state for /status. */
json_t *
watch_status_json(struct watch *w)
{
	const struct conf_policy *pol;
	json_t *j, *objs;
	char ts[40];
	int64_t now;
	size_t i;

	if (w == NULL)
		return json_null();
	pol = &w->f->conf->policy;
	now = units_now_ms();
	objs = json_object();
	for (i = 0; i < w->nobjs; i++)
		json_object_set_new(objs, w->objs[i]->name,
		    watch_status_obj(w->objs[i], now));
	j = json_pack("{s:o,s:{s:I,s:I,s:I,s:I,s:o},s:{s:I,s:I,s:I},s:I}",
	    "errors", watch_status_waves(w, now), "freshness", "interval_ms",
	    (json_int_t)pol->freshness_interval_ms, "max_lag_ms",
	    (json_int_t)pol->freshness_max_lag_ms, "for_ms",
	    (json_int_t)pol->freshness_for_ms, "cycles", (json_int_t)w->cycles,
	    "objects", objs, "pages", "sent", (json_int_t)w->pages_sent,
	    "delivered", (json_int_t)w->pages_delivered, "failed",
	    (json_int_t)w->pages_failed, "rollbacks", (json_int_t)w->rollbacks);
	if (j != NULL)
		json_object_set_new(json_object_get(j, "freshness"), "polling",
		    json_boolean(w->f->cluster == NULL ||
			cluster_is_leader(w->f->cluster)));
	if (j != NULL && w->last_cycle_ms != 0) {
		units_time_format(w->last_cycle_ms, ts, sizeof(ts));
		json_object_set_new(json_object_get(j, "freshness"),
		    "last_cycle", json_string(ts));
	}
	if (j != NULL)
		json_object_set_new(j, "waves", watch_views_json(w));
	if (j != NULL && w->tab.dropped > 0)
		json_object_set_new(j, "dropped_counts",
		    json_integer((json_int_t)w->tab.dropped));
	return j;
}
