/*
 * floe: watch_view.c -- what the rollback triggers show: each armed wave's
 * view in GET /status, their metric families (each armed wave's error ratio
 * beside its threshold, its freshness lag beside its limit, the webhook's
 * pages), and one wave's view for the status page. Reads struct watch; changes
 * nothing.
 */
#include <sys/queue.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/log.h"
#include "lib/units.h"
#include "policy/trigger.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "proxy/watch_impl.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

int
watch_wave_view(struct watch *w, const struct store_wave *sw,
    struct watch_view *v)
{
	const struct conf_policy *pol;
	struct trigger_error_params p;
	struct trigger_error_verdict ev;
	struct trigger_wave *s;
	const struct watch_obj *o;
	uint64_t req = 0, err = 0;
	size_t i;

	memset(v, 0, sizeof(*v));
	if (w == NULL)
		return -1;
	pol = &w->f->conf->policy;
	p = (struct trigger_error_params) { pol->error_ratio, pol->error_floor,
		pol->error_min_requests };
	v->armed = trigger_action_for(sw->state) != TRIGGER_NONE;
	v->max_lag_ms = (int64_t)pol->freshness_max_lag_ms;
	if ((s = trigger_table_get(&w->tab, sw->n, false)) != NULL)
		trigger_ring_totals(&w->tab.win, &s->side[ROUTE_LAKEHOUSE],
		    units_now_ms(), &req, &err);
	trigger_errors(&p, sw->base_requests, sw->base_errors, req, err, &ev);
	v->requests = req;
	v->errors = err;
	v->ratio = req > 0 ? (double)err / (double)req : 0;
	v->threshold = ev.threshold;
	v->baseline = ev.baseline;
	v->min_requests = p.min_requests;
	for (i = 0; i < w->nobjs; i++) {
		o = w->objs[i];
		if (o->wave != sw->n)
			continue;
		v->objects++;
		if (o->fresh.last_ms == 0 ||
		    o->fresh.kind != TRIGGER_LAG_KNOWN) {
			v->objects_unknown++;
			continue;
		}
		if (!v->lag_known || o->fresh.lag_ms > v->lag_ms)
			v->lag_ms = o->fresh.lag_ms;
		v->lag_known = true;
	}
	if (v->lag_known && v->lag_ms < 0)
		v->lag_ms = 0; /* the lakehouse ahead: no lag */
	return 0;
}

/* Armed waves, for the metrics: collected from the store. */
struct watch_mwaves {
	struct store_wave *v;
	size_t n;
};

/* Keep a wave whose triggers are armed. */
static int
watch_mwaves_cb(const struct store_wave *sw, void *arg)
{
	struct watch_mwaves *m = arg;

	if (trigger_action_for(sw->state) == TRIGGER_NONE)
		return 0;
	m->v = reallocarray(m->v, m->n + 1, sizeof(*m->v));
	if (m->v == NULL)
		fatalx("%s: out of memory", __func__);
	m->v[m->n++] = *sw;
	return 0;
}

/*
 * Every armed wave's view, for GET /status: {"3": {"error_ratio",
 * "error_threshold", "requests", "errors", "min_requests", "lag_ms" (null:
 * not known), "max_lag_ms"}}. Caller frees.
 */
json_t *
watch_views_json(struct watch *w)
{
	struct watch_mwaves m = { NULL, 0 };
	struct watch_view v;
	json_t *all, *one;
	char num[16];
	size_t i;

	all = json_object();
	if (w->f->store != NULL)
		(void)store_wave_foreach(w->f->store, watch_mwaves_cb, &m);
	for (i = 0; i < m.n; i++) {
		if (watch_wave_view(w, &m.v[i], &v) == -1)
			continue;
		one = json_pack("{s:s,s:f,s:f,s:I,s:I,s:I,s:o,s:I}", "state",
		    wave_state_name((enum wave_state)m.v[i].state),
		    "error_ratio", v.ratio, "error_threshold", v.threshold,
		    "requests", (json_int_t)v.requests, "errors",
		    (json_int_t)v.errors, "min_requests",
		    (json_int_t)v.min_requests, "lag_ms",
		    v.lag_known ? json_integer(v.lag_ms) : json_null(),
		    "max_lag_ms", (json_int_t)v.max_lag_ms);
		snprintf(num, sizeof(num), "%u", m.v[i].n);
		json_object_set_new(all, num, one);
	}
	free(m.v);
	return all;
}

/*
 * stats_metrics_cb: for every wave whose triggers are armed (canary,
 * lakehouse, frozen) its lakehouse error ratio and the threshold the
 * error trigger holds it to, its worst freshness lag and the limit; the
 * webhook's pages.
 */
void
watch_metrics_cb(struct evbuffer *b, void *arg)
{
	struct watch *w = arg;
	struct watch_mwaves m = { NULL, 0 };
	struct watch_view *views;
	size_t i;

	if (w->f->store != NULL)
		(void)store_wave_foreach(w->f->store, watch_mwaves_cb, &m);
	views = m.n > 0 ? calloc(m.n, sizeof(*views)) : NULL;
	if (m.n > 0 && views == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < m.n; i++)
		(void)watch_wave_view(w, &m.v[i], &views[i]);
	evbuffer_add_printf(b,
	    "# HELP floe_wave_error_ratio Share of the wave's lakehouse "
	    "reads that failed over error_window (armed waves).\n"
	    "# TYPE floe_wave_error_ratio gauge\n");
	for (i = 0; i < m.n; i++)
		evbuffer_add_printf(b,
		    "floe_wave_error_ratio{wave=\"%u\"} %.6g\n", m.v[i].n,
		    views[i].ratio);
	evbuffer_add_printf(b,
	    "# HELP floe_wave_error_threshold_ratio The error ratio above "
	    "which the errors trigger rolls the wave back.\n"
	    "# TYPE floe_wave_error_threshold_ratio gauge\n");
	for (i = 0; i < m.n; i++)
		evbuffer_add_printf(b,
		    "floe_wave_error_threshold_ratio{wave=\"%u\"} %.6g\n",
		    m.v[i].n, views[i].threshold);
	evbuffer_add_printf(b,
	    "# HELP floe_wave_freshness_lag_seconds The worst lag of the "
	    "wave's lakehouse tables behind the warehouse, as last polled.\n"
	    "# TYPE floe_wave_freshness_lag_seconds gauge\n");
	for (i = 0; i < m.n; i++)
		if (views[i].lag_known)
			evbuffer_add_printf(b,
			    "floe_wave_freshness_lag_seconds{wave=\"%u\"} "
			    "%.3f\n",
			    m.v[i].n, (double)views[i].lag_ms / 1000);
	evbuffer_add_printf(b,
	    "# HELP floe_wave_freshness_threshold_seconds The lag above "
	    "which, held for freshness_for, the freshness trigger fires.\n"
	    "# TYPE floe_wave_freshness_threshold_seconds gauge\n");
	for (i = 0; i < m.n; i++)
		evbuffer_add_printf(b,
		    "floe_wave_freshness_threshold_seconds{wave=\"%u\"} "
		    "%.3f\n",
		    m.v[i].n, (double)views[i].max_lag_ms / 1000);
	evbuffer_add_printf(b,
	    "# HELP floe_webhook_pages_total Pages sent to the webhook.\n"
	    "# TYPE floe_webhook_pages_total counter\n"
	    "floe_webhook_pages_total %llu\n"
	    "# HELP floe_webhook_failures_total Pages the webhook never "
	    "took, after every try (the rollback log has them).\n"
	    "# TYPE floe_webhook_failures_total counter\n"
	    "floe_webhook_failures_total %llu\n"
	    "# HELP floe_webhook_attempt_failures_total Tries to deliver a "
	    "page that got no 2xx answer.\n"
	    "# TYPE floe_webhook_attempt_failures_total counter\n"
	    "floe_webhook_attempt_failures_total %llu\n",
	    (unsigned long long)w->pages_sent,
	    (unsigned long long)w->pages_failed,
	    (unsigned long long)w->tries_failed);
	free(views);
	free(m.v);
}
