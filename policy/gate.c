/*
 * floe: gate.c -- the cutover and decommission gates: counting an object's
 * ledger records in a window (or after the flip), judging them, and saying
 * in one sentence which objects block a wave and why. Pure functions of the
 * records and the time they are given.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "lib/units.h"
#include "policy/gate.h"
#include "routing/ledger.h"

/* How many blocking objects the sentence names before "and N more". */
#define GATE_MSG_OBJECTS 4

static void gate_count(const struct ledger_rec *, size_t, int64_t, bool,
    struct gate_obj *);
static void gate_out(char *, size_t, size_t *, const char *, ...)
    __attribute__((__format__(__printf__, 4, 5)));

/* A wave's overrides over the policy's defaults. */
void
gate_params_for(const struct gate_params *defaults, uint32_t wave_min_clean,
    int64_t wave_window_ms, struct gate_params *out)
{
	*out = *defaults;
	if (wave_min_clean > 0)
		out->min_clean = wave_min_clean;
	if (wave_window_ms > 0)
		out->window_ms = wave_window_ms;
}

/*
 * Count the records dated at or after FROM_MS (strictly after, when
 * AFTER): clean, dirty by bucket, and the open mismatch at the end.
 */
static void
gate_count(const struct ledger_rec *recs, size_t n, int64_t from_ms, bool after,
    struct gate_obj *o)
{
	const struct ledger_rec *r;
	int64_t newest_clean = -1, open_newest = -1;
	size_t i;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < n; i++) {
		r = &recs[i];
		if (after ? r->ts_ms <= from_ms : r->ts_ms < from_ms)
			continue;
		if (r->ts_ms > o->newest_ms)
			o->newest_ms = r->ts_ms;
		if (ledger_rec_is_clean(r)) {
			o->clean++;
			if (r->ts_ms > newest_clean)
				newest_clean = r->ts_ms;
			continue;
		}
		o->dirty++;
		o->buckets[r->bucket < LEDGER_NBUCKETS ? r->bucket :
							 LEDGER_VALUE_DRIFT]++;
	}
	/* Records arrive in any order: the open run is judged by ts. */
	for (i = 0; i < n; i++) {
		r = &recs[i];
		if ((after ? r->ts_ms <= from_ms : r->ts_ms < from_ms) ||
		    ledger_rec_is_clean(r) || r->ts_ms <= newest_clean)
			continue;
		if (o->open == 0 || r->ts_ms < o->open_since_ms)
			o->open_since_ms = r->ts_ms;
		if (r->ts_ms > open_newest) {
			open_newest = r->ts_ms;
			o->open_bucket = r->bucket;
		}
		o->open++;
	}
}

/* Cutover evidence of one object. */
void
gate_cutover(const struct ledger_rec *recs, size_t n,
    const struct gate_params *p, int64_t now_ms, struct gate_obj *o)
{
	gate_count(recs, n, now_ms - p->window_ms, false, o);
	o->pass =
	    p->min_clean == 0 || (o->clean >= p->min_clean && o->dirty == 0);
}

/* Decommission evidence of one object. */
void
gate_decommission(const struct ledger_rec *recs, size_t n,
    const struct gate_params *p, int64_t flipped_ms, struct gate_obj *o)
{
	gate_count(recs, n, flipped_ms, true, o);
	o->pass = o->clean >= p->decom_min_clean && o->dirty == 0;
}

/* Append to BUF at *OFF, never past LEN. */
static void
gate_out(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
	if (*off >= len)
		*off = len;
}

/* The verdict over a wave, and its sentence. */
bool
gate_verdict(bool decom, uint32_t wave, const struct gate_params *p,
    const struct gate_item *items, size_t n, const char *signoff, char *msg,
    size_t msglen)
{
	char dur[32];
	size_t i, nblock = 0, named = 0, off = 0;
	bool has_signoff = signoff != NULL && signoff[0] != '\0';
	unsigned b;
	int first;

	for (i = 0; i < n; i++)
		if (!items[i].ev.pass)
			nblock++;
	if (!decom && p->min_clean == 0) {
		gate_out(msg, msglen, &off,
		    "wave %u: the cutover gate is off (gate_min_clean = 0)",
		    wave);
		return true;
	}
	if (nblock == 0 && (!decom || has_signoff)) {
		units_format_duration((uint64_t)p->window_ms, dur, sizeof(dur));
		if (decom)
			gate_out(msg, msglen, &off,
			    "wave %u: decommission gate holds: %zu object%s "
			    "with at least %u clean records since the flip, "
			    "none dirty; signed off by %s",
			    wave, n, n == 1 ? "" : "s", p->decom_min_clean,
			    signoff);
		else
			gate_out(msg, msglen, &off,
			    "wave %u: cutover gate holds: %zu object%s with "
			    "at least %u clean records in the last %s, none "
			    "dirty",
			    wave, n, n == 1 ? "" : "s", p->min_clean, dur);
		return true;
	}

	if (decom)
		gate_out(msg, msglen, &off,
		    "wave %u: decommission gate: need at least %u clean "
		    "records per object dated after the flip, none dirty, "
		    "and a sign-off",
		    wave, p->decom_min_clean);
	else {
		units_format_duration((uint64_t)p->window_ms, dur, sizeof(dur));
		gate_out(msg, msglen, &off,
		    "wave %u: cutover gate: need at least %u clean records "
		    "per object in the last %s, none dirty",
		    wave, p->min_clean, dur);
	}
	if (decom && !has_signoff)
		gate_out(msg, msglen, &off,
		    "; no sign-off (floectl wave signoff %u --by NAME)", wave);
	if (nblock > 0)
		gate_out(msg, msglen, &off,
		    "; %zu of %zu object%s blocking:", nblock, n,
		    n == 1 ? "" : "s");
	for (i = 0; i < n && named < GATE_MSG_OBJECTS; i++) {
		const struct gate_obj *o = &items[i].ev;

		if (o->pass)
			continue;
		gate_out(msg, msglen, &off, "%s %s %u clean, %u dirty",
		    named > 0 ? ";" : "", items[i].name, o->clean, o->dirty);
		for (b = 0, first = 1; b < LEDGER_NBUCKETS; b++) {
			if (o->buckets[b] == 0)
				continue;
			gate_out(msg, msglen, &off, "%s%s %u",
			    first ? " (" : ", ", ledger_bucket_name(b),
			    o->buckets[b]);
			first = 0;
		}
		if (!first)
			gate_out(msg, msglen, &off, ")");
		named++;
	}
	if (nblock > named)
		gate_out(msg, msglen, &off,
		    "; and %zu more (floectl eligible %u)", nblock - named,
		    wave);
	return false;
}

/* One object's evidence as JSON. */
json_t *
gate_obj_json(const char *name, const struct gate_obj *o)
{
	char ts[40], since[40];
	json_t *buckets = json_object();
	unsigned b;

	for (b = 0; b < LEDGER_NBUCKETS; b++)
		if (o->buckets[b] > 0)
			json_object_set_new(buckets, ledger_bucket_name(b),
			    json_integer(o->buckets[b]));
	if (o->newest_ms > 0)
		units_time_format(o->newest_ms, ts, sizeof(ts));
	if (o->open > 0)
		units_time_format(o->open_since_ms, since, sizeof(since));
	return json_pack("{s:s,s:b,s:i,s:i,s:o,s:o,s:o}", "object", name,
	    "pass", o->pass, "clean", o->clean, "dirty", o->dirty, "buckets",
	    buckets, "newest", o->newest_ms > 0 ? json_string(ts) : json_null(),
	    "open",
	    o->open > 0 ? json_pack("{s:s,s:i,s:s,s:s}", "bucket",
			      ledger_bucket_name(o->open_bucket), "records",
			      o->open, "since", since, "action",
			      ledger_bucket_action(o->open_bucket)) :
			  json_null());
}
