/*
 * floe: stats.c -- the registry behind GET /status and GET /metrics: a list
 * of parts, each a callback that gives its key's value or its metric
 * families, asked in the order they were added. The counters themselves
 * are plain fields the request path bumps.
 */
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

static struct stats_part *stats_part_add(struct stats *);

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
	const struct stats_part *p;
	json_t *j, *v;
	size_t i;

	if ((j = json_object()) == NULL)
		return NULL;
	for (i = 0; i < st->nparts; i++) {
		p = &st->parts[i];
		if (p->status == NULL || (v = p->status(p->arg)) == NULL)
			continue;
		if (p->key != NULL)
			json_object_set_new(j, p->key, v);
		else if (json_is_object(v))
			/* Members in the part's order: jansson keeps it. */
			json_object_update_new(j, v);
		else
			json_decref(v);
	}
	return j;
}

char *
stats_metrics_text(const struct stats *st)
{
	struct evbuffer *b;
	char *out;
	size_t i, len;

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
