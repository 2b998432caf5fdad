/*
 * floe: admin_status.c -- what the admin API reads of floe as a whole:
 * GET /status and GET /metrics (the stats registry's parts, in order,
 * the store's health among them), GET /events (the store's event log)
 * and GET /rollbacks (the rollback log's lines).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/log.h"
#include "policy/rlog.h"
#include "proxy/admin_impl.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/stats.h"
#include "routing/store.h"

/* Events being gathered for GET /events. */
struct admin_events {
	json_t *list;
};

static int admin_events_cb(uint64_t, const char *, size_t, void *);

/* Append one stored event to the list, parsed. */
static int
admin_events_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	struct admin_events *ev = arg;
	json_t *j;

	j = json_loadb(json, len, 0, NULL);
	if (j == NULL) {
		/* Never hide an event: pass on what the store holds. */
		j = json_pack("{s:I,s:s%}", "seq", (json_int_t)seq, "raw", json,
		    len);
	}
	return json_array_append_new(ev->list, j);
}

/* stats_status_cb (ARG: the struct floe): the store's health. */
json_t *
admin_store_status_cb(void *arg)
{
	struct floe *f = arg;

	return json_pack("{s:b,s:I}", "healthy",
	    f->store != NULL && store_is_healthy(f->store), "last_seq",
	    (json_int_t)(f->store != NULL ? store_last_seq(f->store) : 0));
}

/* GET /status: every part of the registry (stats.h), in order. */
void
admin_status(struct admin_req *r)
{
	json_t *j;

	if ((j = stats_status_json(&r->f->stats)) == NULL) {
		admin_error(r, 500, "floe status is not available");
		return;
	}
	admin_reply_json(r, 200, j);
}

/* GET /metrics: Prometheus text, every part of the registry in order. */
void
admin_metrics(struct admin_req *r)
{
	char *text;

	text = stats_metrics_text(&r->f->stats);
	free(r->reply->body);
	r->reply->status = 200;
	r->reply->content_type = ADMIN_CT_METRICS;
	r->reply->body = text;
	r->reply->len = strlen(text);
}

/* GET /events?after=SEQ&limit=N: stored events, oldest first. */
void
admin_events_get(struct admin_req *r)
{
	struct admin_events ev;
	unsigned long long after = 0, limit = ADMIN_EVENTS_LIMIT;

	if (admin_query_uint(r, "after", 0, ULLONG_MAX,
		"an event sequence number", &after) == -1)
		return;
	if (admin_query_uint(r, "limit", 1, ADMIN_EVENTS_MAX, NULL, &limit) ==
	    -1)
		return;
	ev.list = json_array();
	if (store_event_foreach(r->st, after, limit, admin_events_cb, &ev) <
	    0) {
		json_decref(ev.list);
		log_warnx("%s: reading events failed: store error", __func__);
		admin_error(r, 500, "store error reading events");
		return;
	}
	admin_reply_json(r, 200,
	    json_pack("{s:o,s:I}", "events", ev.list, "last_seq",
		(json_int_t)store_last_seq(r->st)));
}

/* GET /rollbacks?after=N&limit=M: the rollback log's lines after the Nth. */
void
admin_rollbacks_get(struct admin_req *r)
{
	unsigned long long after = 0, limit = ADMIN_EVENTS_LIMIT;
	char msg[512];
	json_t *j;

	if (admin_query_uint(r, "after", 0, ULLONG_MAX, "a line count",
		&after) == -1)
		return;
	if (admin_query_uint(r, "limit", 1, ADMIN_EVENTS_MAX, NULL, &limit) ==
	    -1)
		return;
	if ((j = rlog_read(r->f->conf->rollback_log, after, limit, msg,
		 sizeof(msg))) == NULL) {
		log_warnx("%s: %s", __func__, msg);
		admin_error(r, 500, "%s", msg);
		return;
	}
	admin_reply_json(r, 200, j);
}
