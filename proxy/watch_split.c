/*
 * floe: watch_split.c -- the split-brain alarm. After a freeze the
 * warehouse copy of a wave's tables must not change: the freshness poll
 * goes on reading it, and a current snapshot that differs from the one
 * seen before, or that was committed after the freeze (or after the last
 * acknowledgement), means a writer bypassed floe. The alarm is raised
 * once (wave_alarm: an event; the wave stays frozen), written to the
 * rollback log with trigger split-brain, paged, and shown as
 * floe_split_brain{wave} until an operator acknowledges it. In cluster
 * mode the alarm is the wave's record in etcd (one txn compared on the
 * wave's revision): every node shows it, an acknowledgement on any node
 * clears it everywhere; the node that raised it logs and pages.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "policy/trigger.h"
#include "proxy/cluster.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "proxy/watch_impl.h"
#include "routing/store.h"
#include "routing/wave.h"

static json_t *watch_split_snap(bool, int64_t, int64_t);
static void watch_split_raise(struct watch *, struct watch_obj *,
    const struct store_wave *, int64_t);
static int watch_split_metric_cb(const struct store_wave *, void *);
static void watch_split_done(int, const char *, void *);

/* An alarm on its way through etcd: its line, written once etcd took it. */
struct watch_split_held {
	struct watch *w;
	uint32_t wave;
	json_t *line;
};

/* A snapshot as the alarm tells it: {"id","ts"}, or null if unknown. */
static json_t *
watch_split_snap(bool has, int64_t id, int64_t ts_ms)
{
	char ts[40];

	if (!has)
		return json_null();
	units_time_format(ts_ms, ts, sizeof(ts));
	return json_pack("{s:I,s:o}", "id", (json_int_t)id, "ts",
	    ts_ms > 0 ? json_string(ts) : json_null());
}

/*
 * Raise the alarm of O's frozen wave SW: the store first (wave_alarm
 * records the event and logs it), then the rollback log's line, then the
 * page.
 */
static void
watch_split_raise(struct watch *w, struct watch_obj *o,
    const struct store_wave *sw, int64_t now)
{
	const struct trigger_snap *cur = &o->p[ROUTE_WAREHOUSE].snap;
	struct floe *f = w->f;
	struct rlog_entry e;
	struct store_capture cap;
	struct watch_split_held *h = NULL;
	json_t *detail, *before, *after, *line;
	char ts[40], msg[1024];
	int rc;

	before = watch_split_snap(o->sb_has, o->sb_id, o->sb_ts_ms);
	after = watch_split_snap(true, cur->id, cur->ts_ms);
	units_time_format(sw->frozen_ms, ts, sizeof(ts));
	detail = json_pack("{s:s,s:O,s:O,s:s}", "object", o->name,
	    "snapshot_before", before, "snapshot_now", after, "frozen", ts);
	if (detail == NULL)
		goto out;
	if (f->cluster != NULL && !store_capturing(f->store)) {
		/* The wave's record with the alarm goes through etcd. */
		store_capture_begin(f->store, &cap);
		rc = wave_alarm(f->store, o->wave, detail, now, msg,
		    sizeof(msg));
		store_capture_end(f->store);
		if (rc != WAVE_OK) {
			store_capture_clear(&cap);
			goto out;
		}
		h = xcalloc(1, sizeof(*h));
		h->w = w;
		h->wave = o->wave;
	} else if (wave_alarm(f->store, o->wave, detail, now, msg,
		       sizeof(msg)) != WAVE_OK)
		goto out;
	e = (struct rlog_entry) { .wave = o->wave,
		.from = wave_state_name(sw->state),
		.trigger = "split-brain",
		.actor = "floe",
		.reason = msg };
	line = rlog_line(&e, f->store, now);
	if (line != NULL) {
		/* No state change: the wave stays where it is. */
		json_object_set_new(line, "to",
		    json_string(wave_state_name(sw->state)));
		json_object_set(line, "object",
		    json_object_get(detail, "object"));
		json_object_set(line, "snapshot_before", before);
		json_object_set(line, "snapshot_now", after);
		json_object_set_new(line, "action",
		    json_string("alarm only: the wave stays frozen; floectl "
				"wave ack-alarm N once the writer is stopped"));
	}
	if (h != NULL) {
		h->line = line;
		cluster_commit(f->cluster, &cap, watch_split_done, h);
		goto out;
	}
	if (line != NULL) {
		if (rlog_write(f->rlog, line) == -1)
			log_warn("%s: wave %u: the rollback log line could not "
				 "be written",
			    __func__, o->wave);
		watch_page(w, o->wave, line);
		json_decref(line);
	}
out:
	json_decref(detail);
	json_decref(before);
	json_decref(after);
}

/* etcd took the alarm (every node shows it): log it and page; or not. */
static void
watch_split_done(int status, const char *msg, void *arg)
{
	struct watch_split_held *h = arg;

	if (status != 200)
		log_info(
		    "wave %u: the split-brain alarm was not taken by etcd: "
		    "%s; the next poll tries again",
		    h->wave, msg);
	else if (h->line != NULL) {
		if (rlog_write(h->w->f->rlog, h->line) == -1)
			log_warn("%s: wave %u: the rollback log line could not "
				 "be written",
			    __func__, h->wave);
		watch_page(h->w, h->wave, h->line);
	}
	json_decref(h->line);
	free(h);
}

/*
 * After a poll cycle: has the warehouse copy of O changed under its
 * frozen wave? The first snapshot seen while frozen is the baseline
 * (after a restart too: a snapshot committed after the freeze, or after
 * the last acknowledgement, is a change even when it is the first seen).
 */
void
watch_split_sample(struct watch *w, struct watch_obj *o, int64_t now)
{
	const struct watch_poll *p = &o->p[ROUTE_WAREHOUSE];
	struct store_wave_brief b;
	struct store_wave sw;
	int64_t since;
	bool changed;

	if (w->f->store == NULL ||
	    store_wave_brief(w->f->store, o->wave, &b) != STORE_OK ||
	    b.state != WAVE_FROZEN) {
		o->sb_has = false;
		return;
	}
	if (!p->known || !p->snap.has ||
	    store_wave_get(w->f->store, o->wave, &sw) != STORE_OK)
		return;
	since = sw.frozen_ms > sw.alarm_ack_ms ? sw.frozen_ms : sw.alarm_ack_ms;
	changed =
	    (o->sb_has && p->snap.id != o->sb_id) || p->snap.ts_ms > since;
	if (changed && sw.alarm_ms == 0)
		watch_split_raise(w, o, &sw, now);
	o->sb_has = true;
	o->sb_id = p->snap.id;
	o->sb_ts_ms = p->snap.ts_ms;
}

/* One frozen wave's gauge. */
static int
watch_split_metric_cb(const struct store_wave *sw, void *arg)
{
	struct evbuffer *out = arg;

	if (sw->state == WAVE_FROZEN)
		evbuffer_add_printf(out,
		    "floe_split_brain{wave=\"%" PRIu32 "\"} %d\n", sw->n,
		    sw->alarm_ms != 0);
	return 0;
}

/* GET /metrics: floe_split_brain{wave} for every frozen wave. */
void
watch_split_metrics_cb(struct evbuffer *out, void *arg)
{
	struct watch *w = arg;

	evbuffer_add_printf(out,
	    "# HELP floe_split_brain 1 while a frozen wave's warehouse copy "
	    "changed after its freeze and no operator acknowledged it.\n"
	    "# TYPE floe_split_brain gauge\n");
	if (w->f->store != NULL)
		(void)store_wave_foreach(w->f->store, watch_split_metric_cb,
		    out);
}
