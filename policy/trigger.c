/*
 * floe: trigger.c -- the rollback triggers of DESIGN.md: error counters in
 * rings of buckets with running sums (counting is O(1) and never
 * allocates), the error judgement against the baseline taken at the flip,
 * freshness runs per object, the metadata count check and the reconcile
 * rule. Pure functions of the state and the time they are given.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/xmalloc.h"
#include "policy/trigger.h"
#include "routing/ledger.h"
#include "routing/wave.h"

static const char *const trigger_names[TRIGGER_NKINDS] = {
	[TRIGGER_RECONCILE] = "reconcile",
	[TRIGGER_FRESHNESS] = "freshness",
	[TRIGGER_ERRORS] = "errors",
};

static void trigger_ring_slide(const struct trigger_window *,
    struct trigger_ring *, int64_t);
static bool trigger_json_int(json_t *, int64_t *);

/* The name of trigger K. */
const char *
trigger_name(enum trigger_kind k)
{
	if ((unsigned)k >= TRIGGER_NKINDS)
		return "unknown";
	return trigger_names[k];
}

/*
 * Canary and lakehouse waves go back on their own; a frozen wave's
 * warehouse copy no longer gets writes, so only an operator may send
 * readers back to it.
 */
enum trigger_action
trigger_action_for(unsigned state)
{
	switch (state) {
	case WAVE_CANARY:
	case WAVE_LAKEHOUSE:
		return TRIGGER_ROLLBACK;
	case WAVE_FROZEN:
		return TRIGGER_PAGE;
	default:
		return TRIGGER_NONE;
	}
}

/* Buckets for a window of WINDOW_MS. */
void
trigger_window_init(struct trigger_window *w, uint64_t window_ms)
{
	uint64_t width = TRIGGER_MIN_WIDTH_MS;

	if (window_ms == 0)
		window_ms = TRIGGER_MIN_WIDTH_MS;
	if (window_ms > width * TRIGGER_MAX_BUCKETS)
		width =
		    (window_ms + TRIGGER_MAX_BUCKETS - 1) / TRIGGER_MAX_BUCKETS;
	w->width_ms = (int64_t)width;
	w->n = (unsigned)((window_ms + width - 1) / width);
	if (w->n < 1)
		w->n = 1;
	if (w->n > TRIGGER_MAX_BUCKETS)
		w->n = TRIGGER_MAX_BUCKETS;
}

/* Make room for CAP waves (a power of two, at least 16). */
void
trigger_table_init(struct trigger_table *t, uint64_t window_ms, size_t cap)
{
	size_t c = 16;

	while (c < cap)
		c *= 2;
	memset(t, 0, sizeof(*t));
	trigger_window_init(&t->win, window_ms);
	t->slots = xcalloc(c, sizeof(*t->slots));
	t->cap = c;
}

/* Free the slots of T. */
void
trigger_table_clear(struct trigger_table *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* Open addressing, linear probing on a multiplicative hash. */
struct trigger_wave *
trigger_table_get(struct trigger_table *t, uint32_t wave, bool claim)
{
	size_t i, mask = t->cap - 1, n;
	struct trigger_wave *s;
	int k;

	if (t->cap == 0)
		return NULL;
	i = (size_t)(((uint64_t)wave * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
	for (n = 0; n < t->cap; n++, i = (i + 1) & mask) {
		s = &t->slots[i];
		if (s->used && s->wave == wave)
			return s;
		if (!s->used) {
			/* Keep one slot in four free: probes stay short. */
			if (!claim || (t->used + 1) * 4 > t->cap * 3) {
				if (claim)
					t->dropped++;
				return NULL;
			}
			s->used = true;
			s->wave = wave;
			for (k = 0; k < ROUTE_NSIDES; k++) {
				s->side[k].head = -1;
				s->side[k].req_sum = s->side[k].err_sum = 0;
			}
			t->used++;
			return s;
		}
	}
	if (claim)
		t->dropped++;
	return NULL;
}

/* Rehash into twice the slots once half are used. */
bool
trigger_table_grow(struct trigger_table *t)
{
	struct trigger_table nt;
	struct trigger_wave *s;
	size_t i;

	if (t->used * 2 <= t->cap)
		return false;
	nt = *t;
	nt.cap = t->cap * 2;
	nt.used = 0;
	nt.slots = xcalloc(nt.cap, sizeof(*nt.slots));
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i].used)
			continue;
		s = trigger_table_get(&nt, t->slots[i].wave, true);
		*s = t->slots[i];
	}
	free(t->slots);
	*t = nt;
	return true;
}

/*
 * Move the head of R to the bucket of NOW_MS, zeroing (and taking out of
 * the sums) every bucket that slid out of the window on the way.
 */
static void
trigger_ring_slide(const struct trigger_window *w, struct trigger_ring *r,
    int64_t now_ms)
{
	int64_t b = now_ms / w->width_ms, i;
	unsigned slot;

	if (r->head >= 0 && b <= r->head)
		return;
	if (r->head < 0 || b - r->head >= (int64_t)w->n) {
		memset(r->req, 0, sizeof(r->req[0]) * w->n);
		memset(r->err, 0, sizeof(r->err[0]) * w->n);
		r->req_sum = r->err_sum = 0;
		r->head = b;
		return;
	}
	for (i = r->head + 1; i <= b; i++) {
		slot = (unsigned)(i % (int64_t)w->n);
		r->req_sum -= r->req[slot];
		r->err_sum -= r->err[slot];
		r->req[slot] = r->err[slot] = 0;
	}
	r->head = b;
}

/* Count outcomes into the bucket of NOW_MS. */
void
trigger_ring_add(const struct trigger_window *w, struct trigger_ring *r,
    int64_t now_ms, uint32_t requests, uint32_t errors)
{
	unsigned slot;

	trigger_ring_slide(w, r, now_ms);
	slot = (unsigned)(r->head % (int64_t)w->n);
	/* Saturate rather than wrap: a bucket holds at most 2^32-1. */
	if (r->req[slot] > UINT32_MAX - requests)
		requests = UINT32_MAX - r->req[slot];
	if (r->err[slot] > UINT32_MAX - errors)
		errors = UINT32_MAX - r->err[slot];
	r->req[slot] += requests;
	r->err[slot] += errors;
	r->req_sum += requests;
	r->err_sum += errors;
}

/* The window's totals as of NOW_MS. */
void
trigger_ring_totals(const struct trigger_window *w, struct trigger_ring *r,
    int64_t now_ms, uint64_t *requests, uint64_t *errors)
{
	trigger_ring_slide(w, r, now_ms);
	*requests = r->req_sum;
	*errors = r->err_sum;
}

/* Judge the lakehouse's error rate against the baseline. */
void
trigger_errors(const struct trigger_error_params *p, uint64_t base_req,
    uint64_t base_err, uint64_t lh_req, uint64_t lh_err,
    struct trigger_error_verdict *v)
{
	double ref;

	memset(v, 0, sizeof(*v));
	v->baseline = base_req > 0 ? (double)base_err / (double)base_req : 0;
	if (v->baseline > 1)
		v->baseline = 1;
	ref = v->baseline > p->floor ? v->baseline : p->floor;
	v->threshold = p->ratio * ref;
	v->requests = lh_req;
	v->errors = lh_err;
	v->measured = lh_req > 0 ? (double)lh_err / (double)lh_req : 0;
	v->fire = lh_req > 0 && lh_req >= p->min_requests &&
	    v->measured > v->threshold;
}

/* An integer member, as a JSON integer or a decimal string. */
static bool
trigger_json_int(json_t *j, int64_t *out)
{
	const char *s;
	char *end;
	long long v;

	if (json_is_integer(j)) {
		*out = json_integer_value(j);
		return true;
	}
	if (!json_is_string(j))
		return false;
	s = json_string_value(j);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (s[0] == '\0' || *end != '\0' || errno != 0)
		return false;
	*out = v;
	return true;
}

/* The current snapshot of a LoadTableResult. */
int
trigger_snap_parse(const char *body, size_t len, struct trigger_snap *s,
    char *err, size_t errlen)
{
	json_error_t je;
	json_t *j, *md, *cur, *snaps, *sn, *sum;
	int64_t id, v;
	size_t i;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	if ((j = json_loadb(body, len, 0, &je)) == NULL) {
		snprintf(err, errlen, "not JSON: %s", je.text);
		return -1;
	}
	if ((md = json_object_get(j, "metadata")) == NULL ||
	    !json_is_object(md)) {
		snprintf(err, errlen, "no \"metadata\" object");
		goto out;
	}
	rc = 0;
	cur = json_object_get(md, "current-snapshot-id");
	if (cur == NULL || json_is_null(cur) || !trigger_json_int(cur, &id) ||
	    id == -1)
		goto out; /* no current snapshot */
	snaps = json_object_get(md, "snapshots");
	json_array_foreach(snaps, i, sn) {
		if (!trigger_json_int(json_object_get(sn, "snapshot-id"), &v) ||
		    v != id)
			continue;
		if (!trigger_json_int(json_object_get(sn, "timestamp-ms"),
			&s->ts_ms)) {
			snprintf(err, errlen,
			    "the current snapshot has no timestamp-ms");
			rc = -1;
			goto out;
		}
		s->has = true;
		s->id = id;
		sum = json_object_get(sn, "summary");
		s->has_total =
		    trigger_json_int(json_object_get(sum, "total-records"),
			&s->total_records);
		(void)trigger_json_int(json_object_get(sum,
					   "total-position-deletes"),
		    &s->position_deletes);
		(void)trigger_json_int(json_object_get(sum,
					   "total-equality-deletes"),
		    &s->equality_deletes);
		goto out;
	}
	snprintf(err, errlen,
	    "current snapshot %lld is not among the snapshots", (long long)id);
	rc = -1;
out:
	json_decref(j);
	return rc;
}

/* The lag of the lakehouse behind the warehouse. */
enum trigger_lag
trigger_lag_of(const struct trigger_snap *wh, const struct trigger_snap *lh,
    int64_t *lag_ms)
{
	*lag_ms = 0;
	if (!wh->has)
		return TRIGGER_LAG_KNOWN;
	if (!lh->has)
		return TRIGGER_LAG_EMPTY;
	*lag_ms = wh->ts_ms - lh->ts_ms;
	return TRIGGER_LAG_KNOWN;
}

/* One freshness sample into F. */
bool
trigger_fresh_sample(struct trigger_fresh *f,
    const struct trigger_fresh_params *p, enum trigger_lag kind, int64_t lag_ms,
    int64_t now_ms, int64_t *held_ms)
{
	bool above;

	*held_ms = 0;
	f->last_ms = now_ms;
	f->kind = kind;
	if (kind == TRIGGER_LAG_UNKNOWN)
		return false;
	if (kind == TRIGGER_LAG_KNOWN)
		f->lag_ms = lag_ms;
	above = kind == TRIGGER_LAG_EMPTY || lag_ms > p->max_lag_ms;
	if (!above) {
		f->held_since_ms = 0;
		return false;
	}
	if (f->held_since_ms == 0)
		f->held_since_ms = now_ms;
	*held_ms = now_ms - f->held_since_ms;
	return *held_ms >= p->for_ms;
}

/* The metadata count check. */
enum trigger_count
trigger_count_check(const struct trigger_snap *wh,
    const struct trigger_snap *lh, const char **why)
{
	*why = NULL;
	if (!wh->has || !lh->has) {
		*why = "a side has no current snapshot";
		return TRIGGER_COUNT_UNKNOWN;
	}
	if (!wh->has_total || !lh->has_total) {
		*why = "a snapshot summary has no total-records";
		return TRIGGER_COUNT_UNKNOWN;
	}
	if (lh->ts_ms < wh->ts_ms) {
		*why = "the lakehouse snapshot is older than the warehouse one";
		return TRIGGER_COUNT_UNKNOWN;
	}
	if (wh->position_deletes != 0 || wh->equality_deletes != 0 ||
	    lh->position_deletes != 0 || lh->equality_deletes != 0) {
		*why = "delete files: total-records is not the row count";
		return TRIGGER_COUNT_UNKNOWN;
	}
	return wh->total_records == lh->total_records ? TRIGGER_COUNT_MATCH :
							TRIGGER_COUNT_MISMATCH;
}

/* The name of a count outcome. */
const char *
trigger_count_name(enum trigger_count c)
{
	switch (c) {
	case TRIGGER_COUNT_MATCH:
		return "match";
	case TRIGGER_COUNT_MISMATCH:
		return "mismatch";
	default:
		return "unknown";
	}
}

/* A dirty, non-stale record dated after the flip of a watched wave. */
bool
trigger_reconcile(const struct ledger_rec *rec, unsigned state,
    int64_t flipped_ms)
{
	if (trigger_action_for(state) == TRIGGER_NONE)
		return false;
	if (ledger_rec_is_clean(rec) || rec->bucket == LEDGER_STALE)
		return false;
	return rec->ts_ms > flipped_ms;
}
