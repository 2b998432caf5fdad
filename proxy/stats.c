/*
 * floe: stats.c -- the registry behind GET /status and GET /metrics: a list
 * of parts, each a callback that gives its key's value or its metric
 * families, asked in the order they were added. The counters themselves
 * are plain fields the request path bumps.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/log.h"
#include "lib/xmalloc.h"
#include "proxy/stats.h"

/* One part: of /status (STATUS set) or of /metrics (METRICS set). */
struct stats_part {
	char *key; /* NULL: a /metrics part, or the top level of /status */
	stats_status_cb status;
	stats_metrics_cb metrics;
	void *arg;
};

/* The buckets' upper bounds, in seconds; the last is +Inf. */
static const double stats_le[STATS_NBUCKETS - 1] = { 0.0005, 0.001, 0.0025,
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
static const char *const stats_side_names[STATS_NSIDES] = { "warehouse",
	"lakehouse", "floe" };

static struct stats_part *stats_part_add(struct stats *);
static bool stats_key_in(const char *, const char *const *);
static void stats_hist_add(struct stats_hist *, int64_t);
static void stats_hist_print(struct evbuffer *, const char *, const char *,
    const struct stats_hist *);

/* A new, empty slot at the end of the list. */
static struct stats_part *
stats_part_add(struct stats *st)
{
	struct stats_part *p;

	if (st->nparts == st->cap) {
		st->cap = st->cap == 0 ? 16 : st->cap * 2;
		st->parts = xreallocarray(st->parts, st->cap, sizeof(*p));
	}
	p = &st->parts[st->nparts++];
	memset(p, 0, sizeof(*p));
	return p;
}

void
stats_add_status(struct stats *st, const char *key, stats_status_cb cb,
    void *arg)
{
	struct stats_part *p = stats_part_add(st);

	p->key = key != NULL ? xstrdup(key) : NULL;
	p->status = cb;
	p->arg = arg;
}

void
stats_add_metrics(struct stats *st, stats_metrics_cb cb, void *arg)
{
	struct stats_part *p = stats_part_add(st);

	p->metrics = cb;
	p->arg = arg;
}

void
stats_remove(struct stats *st, const void *arg)
{
	size_t i, kept = 0;

	for (i = 0; i < st->nparts; i++) {
		if (st->parts[i].arg == arg) {
			free(st->parts[i].key);
			continue;
		}
		st->parts[kept++] = st->parts[i];
	}
	st->nparts = kept;
}

void
stats_clear(struct stats *st)
{
	size_t i;

	for (i = 0; i < st->nparts; i++)
		free(st->parts[i].key);
	free(st->parts);
	st->parts = NULL;
	st->nparts = st->cap = 0;
}

json_t *
stats_status_json(const struct stats *st)
{
	return stats_status_pick(st, NULL);
}

/* KEY is one of KEYS (NULL-terminated). */
static bool
stats_key_in(const char *key, const char *const *keys)
{
	for (; *keys != NULL; keys++)
		if (strcmp(key, *keys) == 0)
			return true;
	return false;
}

json_t *
stats_status_pick(const struct stats *st, const char *const *keys)
{
	const struct stats_part *p;
	json_t *j, *v, *m;
	size_t i, k;

	if (st->refresh != NULL)
		st->refresh(st->refresh_arg);
	if ((j = json_object()) == NULL)
		return NULL;
	for (i = 0; i < st->nparts; i++) {
		p = &st->parts[i];
		if (p->status == NULL ||
		    (keys != NULL && p->key != NULL &&
			!stats_key_in(p->key, keys)) ||
		    (v = p->status(p->arg)) == NULL)
			continue;
		if (p->key != NULL)
			json_object_set_new(j, p->key, v);
		else if (keys == NULL && json_is_object(v))
			/* Members in the part's order: jansson keeps it. */
			json_object_update_new(j, v);
		else {
			/* A top-level part: only the members asked for. */
			for (k = 0; keys != NULL && keys[k] != NULL; k++)
				if ((m = json_object_get(v, keys[k])) != NULL)
					json_object_set(j, keys[k], m);
			json_decref(v);
		}
	}
	return j;
}

char *
stats_metrics_text(const struct stats *st)
{
	struct evbuffer *b;
	char *out;
	size_t i, len;

	if (st->refresh != NULL)
		st->refresh(st->refresh_arg);
	if ((b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < st->nparts; i++)
		if (st->parts[i].metrics != NULL)
			st->parts[i].metrics(b, st->parts[i].arg);
	len = evbuffer_get_length(b);
	out = xmalloc(len + 1);
	if (evbuffer_remove(b, out, len) != (int)len)
		fatalx("%s: evbuffer_remove", __func__);
	out[len] = '\0';
	evbuffer_free(b);
	return out;
}

/* Count one duration of US microseconds into H. */
static void
stats_hist_add(struct stats_hist *h, int64_t us)
{
	double s = us > 0 ? (double)us / 1e6 : 0;
	size_t i;

	for (i = 0; i < STATS_NBUCKETS - 1 && s > stats_le[i]; i++)
		;
	h->bucket[i]++;
	h->count++;
	h->sum += s;
}

void
stats_answer(struct stats *st, unsigned side, unsigned status, int64_t us,
    int64_t upstream_us)
{
	if (side >= STATS_NSIDES)
		side = STATS_FLOE;
	if (status >= STATS_CODE_MIN && status < STATS_CODE_MIN + STATS_NCODES)
		st->codes[side][status - STATS_CODE_MIN]++;
	stats_hist_add(&st->duration[side], us);
	if (side < ROUTE_NSIDES && upstream_us >= 0)
		stats_hist_add(&st->upstream[side], upstream_us);
}

/* The samples of histogram H of family NAME for SIDE, cumulative. */
static void
stats_hist_print(struct evbuffer *b, const char *name, const char *side,
    const struct stats_hist *h)
{
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i < STATS_NBUCKETS - 1; i++) {
		cum += h->bucket[i];
		evbuffer_add_printf(b,
		    "%s_bucket{side=\"%s\",le=\"%g\"} %llu\n", name, side,
		    stats_le[i], (unsigned long long)cum);
	}
	evbuffer_add_printf(b,
	    "%s_bucket{side=\"%s\",le=\"+Inf\"} %llu\n"
	    "%s_sum{side=\"%s\"} %.6f\n"
	    "%s_count{side=\"%s\"} %llu\n",
	    name, side, (unsigned long long)h->count, name, side, h->sum, name,
	    side, (unsigned long long)h->count);
}

void
stats_requests_metrics(struct evbuffer *b, const struct stats *st)
{
	size_t s, c;

	evbuffer_add_printf(b,
	    "# HELP floe_requests_total Requests answered, by the side that "
	    "answered (floe: floe itself) and status code.\n"
	    "# TYPE floe_requests_total counter\n");
	for (s = 0; s < STATS_NSIDES; s++)
		for (c = 0; c < STATS_NCODES; c++)
			if (st->codes[s][c] != 0)
				evbuffer_add_printf(b,
				    "floe_requests_total{side=\"%s\","
				    "code=\"%zu\"} %llu\n",
				    stats_side_names[s], c + STATS_CODE_MIN,
				    (unsigned long long)st->codes[s][c]);
	evbuffer_add_printf(b,
	    "# HELP floe_request_duration_seconds Time from a request's head "
	    "to its answer, by the side that answered.\n"
	    "# TYPE floe_request_duration_seconds histogram\n");
	for (s = 0; s < STATS_NSIDES; s++)
		stats_hist_print(b, "floe_request_duration_seconds",
		    stats_side_names[s], &st->duration[s]);
	evbuffer_add_printf(b,
	    "# HELP floe_upstream_request_duration_seconds Time waiting for "
	    "a catalog's answer, by catalog.\n"
	    "# TYPE floe_upstream_request_duration_seconds histogram\n");
	for (s = 0; s < ROUTE_NSIDES; s++)
		stats_hist_print(b, "floe_upstream_request_duration_seconds",
		    stats_side_names[s], &st->upstream[s]);
}

/* Zero ST's counters (its parts stay). */
void
stats_counters_zero(struct stats *st)
{
	memset(st, 0, STATS_COUNTERS_SIZE);
}

/* H += A. */
static void
stats_hist_sum(struct stats_hist *h, const struct stats_hist *a)
{
	size_t i;

	for (i = 0; i < STATS_NBUCKETS; i++)
		h->bucket[i] += a->bucket[i];
	h->count += a->count;
	h->sum += a->sum;
}

/* DST's counters += SRC's. */
void
stats_counters_add(struct stats *dst, const struct stats *src)
{
	size_t i, j;

	dst->requests += src->requests;
	dst->local_errors += src->local_errors;
	dst->refused_full += src->refused_full;
	for (i = 0; i < ROUTE_NSIDES; i++) {
		dst->side[i].requests += src->side[i].requests;
		dst->side[i].errors_5xx += src->side[i].errors_5xx;
		dst->side[i].failures += src->side[i].failures;
		dst->side[i].not_modified += src->side[i].not_modified;
		dst->side[i].memo_hits += src->side[i].memo_hits;
		stats_hist_sum(&dst->upstream[i], &src->upstream[i]);
	}
	for (i = 0; i < STATS_NSIDES; i++) {
		for (j = 0; j < STATS_NCODES; j++)
			dst->codes[i][j] += src->codes[i][j];
		stats_hist_sum(&dst->duration[i], &src->duration[i]);
	}
}
