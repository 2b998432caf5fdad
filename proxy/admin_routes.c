/*
 * floe: admin_routes.c -- the routes of the admin API: GET, POST and
 * DELETE /routes, GET /resolve/{object}, and POST /routes/import (run by
 * the worker: admin_job.c). Every change passes the guard, which keeps
 * an object from skipping a cutover gate or landing on a warehouse copy
 * no longer written; a refusal is recorded as an event.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/admin_impl.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

#define ADMIN_IMPORT_BLOCK (1 << 20) /* bytes of one block of import keys */
#define ADMIN_ROUTES_MAX 100000 /* the largest page of GET /routes */

/*
 * A page of GET /routes being written: JSON text straight into OUT (a
 * page is built on the loop; jansson's objects cost it three times as
 * much), its last object's text form in LAST.
 */
struct admin_routes_page {
	struct evbuffer *out;
	size_t n;
	size_t limit; /* 0: no limit */
	bool more; /* a route past the limit exists */
	char last[STORE_KEY_MAX * 3 + 8];
};

/*
 * A POST /routes/import being served: its routes in line order (then in
 * key order), their keys in blocks that never move, and why the guard
 * refused, when it did.
 */
struct admin_import {
	const char *unit; /* "line" or "record" */
	struct store_route_in *in;
	size_t n;
	size_t cap;
	size_t forced;
	unsigned char **blocks;
	size_t nblocks;
	size_t used; /* bytes of the last block */
	char msg[ADMIN_MSG_MAX];
	bool has_old; /* the refused route's assignment before */
	uint32_t old;
};

static bool admin_state_reads_warehouse(int);
static json_t *admin_route_json(const struct route_obj *,
    const struct store_route *);
static int admin_routes_list_cb(const void *, size_t,
    const struct store_route *, void *);
static void admin_json_str(struct evbuffer *, const char *);
static bool admin_guard_check(const struct route_obj *, bool, uint32_t, int,
    bool, uint32_t, int, char *, size_t);
static int admin_route_guard(struct admin_req *, const struct route_obj *,
    uint32_t, bool, uint32_t, bool);
static void admin_route_dry(struct admin_req *, const struct route_obj *,
    const struct store_route *, uint32_t, bool);
static const char *admin_read_side(const struct store_wave *, char *, size_t);
static void admin_import_clear(struct admin_import *);
static int admin_import_one(struct admin_req *, json_t *, size_t, void *);
static int admin_import_dups(struct admin_req *, struct admin_import *);
static int admin_import_guard_cb(size_t, const struct store_route *, int, int,
    void *);
static void admin_import_refused(struct admin_req *,
    const struct admin_import *, const struct store_route_in *);
static void admin_import_run(struct admin_req *, struct evbuffer *);

/* True for the states in which a wave's reads and writes stay on the warehouse.
 */
static bool
admin_state_reads_warehouse(int state)
{
	return state == WAVE_WAREHOUSE || state == WAVE_ROLLED_BACK;
}

/* One route as {object, wave, since}. */
static json_t *
admin_route_json(const struct route_obj *obj, const struct store_route *rt)
{
	char text[STORE_KEY_MAX * 3 + 8];

	route_obj_format(obj, text, sizeof(text));
	return json_pack("{s:s,s:I,s:o}", "object", text, "wave",
	    (json_int_t)rt->wave, "since", admin_time_json(rt->since_ms));
}

/* S as a JSON string into OUT. */
static void
admin_json_str(struct evbuffer *out, const char *s)
{
	const char *p;
	char esc[8];

	evbuffer_add(out, "\"", 1);
	for (p = s; *p != '\0'; p++) {
		/* A route's text form is ASCII: escape what JSON must. */
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) {
			evbuffer_add(out, s, (size_t)(p - s));
			snprintf(esc, sizeof(esc), "\\u%04x",
			    (unsigned char)*p);
			evbuffer_add(out, esc, 6);
			s = p + 1;
		}
	}
	evbuffer_add(out, s, (size_t)(p - s));
	evbuffer_add(out, "\"", 1);
}

/*
 * Append one route to the page, {object, wave, since} (admin_route_json's
 * fields); past its limit, only note that there are more and stop.
 */
static int
admin_routes_list_cb(const void *key, size_t keylen,
    const struct store_route *rt, void *arg)
{
	struct admin_routes_page *pg = arg;
	struct route_obj obj;
	char ts[40];

	if (route_obj_from_key(key, keylen, &obj) == -1) {
		log_warnx("%s: skipping a malformed route key (%zu bytes)",
		    __func__, keylen);
		return 0;
	}
	if (pg->limit > 0 && pg->n == pg->limit) {
		pg->more = true;
		return 1;
	}
	route_obj_format(&obj, pg->last, sizeof(pg->last));
	evbuffer_add(pg->out,
	    pg->n > 0 ? ",{\"object\":" : "{\"object\":", pg->n > 0 ? 11 : 10);
	admin_json_str(pg->out, pg->last);
	if (rt->since_ms != 0) {
		units_time_format(rt->since_ms, ts, sizeof(ts));
		evbuffer_add_printf(pg->out, ",\"wave\":%u,\"since\":\"%s\"}",
		    rt->wave, ts);
	} else
		evbuffer_add_printf(pg->out, ",\"wave\":%u,\"since\":null}",
		    rt->wave);
	pg->n++;
	return 0;
}

/*
 * GET /routes[?limit=N&after=OBJECT]: every object and rule with its
 * wave, in key order; with a limit, a page of them and "next", the
 * object to ask after for the next page (null: none).
 */
void
admin_routes_get(struct admin_req *r)
{
	struct admin_routes_page pg;
	struct route_obj after;
	unsigned long long limit = 0;
	bool has_after;
	size_t len;

	if (admin_query_uint(r, "limit", 1, ADMIN_ROUTES_MAX, NULL, &limit) ==
	    -1)
		return;
	if (admin_query_object(r, "after", &after, &has_after) == -1)
		return;
	memset(&pg, 0, sizeof(pg));
	pg.limit = (size_t)limit;
	if ((pg.out = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add(pg.out, "{\"routes\":[", 11);
	if (store_route_foreach_after(r->st, has_after ? after.key : NULL,
		has_after ? after.len : 0, admin_routes_list_cb, &pg) < 0) {
		evbuffer_free(pg.out);
		log_warnx("%s: listing routes failed: store error", __func__);
		admin_error(r, 500, "store error listing routes");
		return;
	}
	evbuffer_add(pg.out, "],\"next\":", 9);
	if (pg.more)
		admin_json_str(pg.out, pg.last);
	else
		evbuffer_add(pg.out, "null", 4);
	evbuffer_add(pg.out, "}", 1);
	len = evbuffer_get_length(pg.out);
	free(r->reply->body);
	r->reply->status = 200;
	r->reply->content_type = ADMIN_CT_JSON;
	r->reply->body = xmalloc(len + 1);
	evbuffer_remove(pg.out, r->reply->body, len);
	r->reply->body[len] = '\0';
	r->reply->len = len;
	evbuffer_free(pg.out);
}

/*
 * The guard on routes: whether OBJ may leave wave OLD (in state OLD_STATE;
 * if HAS_OLD) for wave NEW (in NEW_STATE; if HAS_NEW). A route change must
 * neither skip a cutover gate (an object joining a wave that already reads
 * from the lakehouse) nor send traffic to a warehouse copy that is no
 * longer written (an object leaving a frozen or retired wave). Leaving a
 * canary or lakehouse wave is the safe direction (the warehouse is still
 * dual-written) and is allowed. True when refused, with the reason in MSG.
 */
static bool
admin_guard_check(const struct route_obj *obj, bool has_old, uint32_t old,
    int old_state, bool has_new, uint32_t new, int new_state, char *msg,
    size_t len)
{
	char text[ADMIN_TEXT_MAX];

	if (has_new && !admin_state_reads_warehouse(new_state)) {
		route_obj_format(obj, text, sizeof(text));
		snprintf(msg, len,
		    "wave %u is %s: %s may join it only while the wave is on "
		    "the warehouse, or it would skip the cutover gate "
		    "(override with --force, or \"force\":true in an "
		    "import)",
		    new, wave_state_name(new_state), text);
		return true;
	}
	if (has_old &&
	    (old_state == WAVE_FROZEN || old_state == WAVE_RETIRED)) {
		route_obj_format(obj, text, sizeof(text));
		snprintf(msg, len,
		    "%s is in wave %u, which is %s: its warehouse copy is no "
		    "longer written (override with --force, or "
		    "\"force\":true in an import)",
		    text, old, wave_state_name(old_state));
		return true;
	}
	return false;
}

/*
 * Whether moving OBJ from wave OLD (if HAS_OLD) to wave NEW (if HAS_NEW)
 * is allowed (admin_guard_check). 0, or -1 with a 409 (or 500) reply; a
 * refusal is recorded as an event.
 */
static int
admin_route_guard(struct admin_req *r, const struct route_obj *obj,
    uint32_t old, bool has_old, uint32_t new, bool has_new)
{
	struct store_wave w;
	char msg[ADMIN_MSG_MAX], text[ADMIN_TEXT_MAX];
	int old_state = WAVE_WAREHOUSE, new_state = WAVE_WAREHOUSE;
	json_t *ev;

	if (has_new) {
		if (admin_wave_state(r, new, &w, NULL) == -1)
			return -1;
		new_state = w.state;
	}
	/* The old wave matters only if joining the new one is allowed. */
	if (has_old &&
	    !admin_guard_check(obj, false, 0, 0, has_new, new, new_state, msg,
		sizeof(msg))) {
		if (admin_wave_state(r, old, &w, NULL) == -1)
			return -1;
		old_state = w.state;
	}
	if (!admin_guard_check(obj, has_old, old, old_state, has_new, new,
		new_state, msg, sizeof(msg)))
		return 0;

	/* Like a refused transition, the refusal is recorded. */
	route_obj_format(obj, text, sizeof(text));
	log_info("route change of %s refused (%s): %s", text, r->actor, msg);
	ev = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s,s:s}", "type", "route.refused",
	    "action", has_new ? "set" : "rm", "object", text, "wave",
	    has_new ? json_integer(new) : json_null(), "from_wave",
	    has_old ? json_integer(old) : json_null(), "actor", r->actor,
	    "message", msg);
	if (ev == NULL || store_event_append(r->st, r->now_ms, ev) != STORE_OK)
		log_warnx("%s: recording the refusal for %s failed", __func__,
		    text);
	json_decref(ev);
	admin_error(r, 409, "%s", msg);
	return -1;
}

/* Where a wave in W's state reads from, for people ("canary 10%"). */
static const char *
admin_read_side(const struct store_wave *w, char *buf, size_t len)
{
	switch (w->state) {
	case WAVE_CANARY:
		snprintf(buf, len, "canary %u%% on the lakehouse", w->pct);
		return buf;
	case WAVE_LAKEHOUSE:
	case WAVE_FROZEN:
	case WAVE_RETIRED:
		return "lakehouse";
	default:
		return "warehouse";
	}
}

/*
 * A dry run of moving OBJ from its route OLD (NULL: none) to wave NEW:
 * where its readers go before and after, whether the guard would refuse
 * it (unless FORCE) and who loaded it in the last day. Nothing written.
 */
static void
admin_route_dry(struct admin_req *r, const struct route_obj *obj,
    const struct store_route *old, uint32_t new, bool force)
{
	struct store_wave ow, nw, cw;
	struct route_result res;
	char msg[ADMIN_MSG_MAX], text[ADMIN_TEXT_MAX], b1[64], b2[64];
	const char *would;
	bool refused;

	memset(&ow, 0, sizeof(ow));
	if ((old != NULL && admin_wave_state(r, old->wave, &ow, NULL) == -1) ||
	    admin_wave_state(r, new, &nw, NULL) == -1)
		return;
	route_obj_format(obj, text, sizeof(text));
	msg[0] = '\0';
	refused = !force &&
	    admin_guard_check(obj, old != NULL, old != NULL ? old->wave : 0,
		ow.state, true, new, nw.state, msg, sizeof(msg));
	if (old != NULL && old->wave == new) {
		would = "change nothing";
		snprintf(msg, sizeof(msg), "%s is already in wave %u", text,
		    new);
	} else if (refused)
		would = "be refused";
	else {
		would = "proceed";
		snprintf(msg, sizeof(msg), "%s would move to wave %u (%s)%s",
		    text, new, wave_state_name(nw.state),
		    force ? ", forced" : "");
	}
	(void)route_resolve(r->st, obj, 0, &res);
	memset(&cw, 0, sizeof(cw));
	if (res.assigned && admin_wave_state(r, res.wave, &cw, NULL) == -1)
		return;
	admin_reply_json(r, 200,
	    json_pack("{s:b,s:s,s:o,s:o,s:I,s:s,s:s,s:s,s:s,s:s,s:o}",
		"dry_run", true, "object", text, "from_wave",
		old != NULL ? json_integer(old->wave) : json_null(),
		"from_state",
		old != NULL ? json_string(wave_state_name(ow.state)) :
			      json_null(),
		"wave", (json_int_t) new, "state", wave_state_name(nw.state),
		"reads_now",
		obj->rule ? "(a rule: each table as its wave says)" :
			    admin_read_side(&cw, b1, sizeof(b1)),
		"reads_after", admin_read_side(&nw, b2, sizeof(b2)), "would",
		would, "message", msg, "readers_last_day",
		obj->rule ? json_null() :
			    admin_readers_recent(r, obj, 1,
				r->now_ms - ADMIN_DRY_READERS_MS)));
}

/* POST /routes {"object","wave"[,"force"]}: assign an object or rule. */
void
admin_routes_post(struct admin_req *r)
{
	static const char *const known[] = { "object", "wave", "force",
		"dry_run", NULL };
	struct route_obj obj;
	struct store_route old = { 0 }, rt;
	const char *text;
	json_int_t wave;
	json_t *b, *ev = NULL;
	bool force, has_old, dry = false;
	char canon[STORE_KEY_MAX * 3 + 8];
	int rc;

	if ((b = admin_body(r, false)) == NULL)
		return;
	if (admin_body_check(r, b, known) == -1 ||
	    admin_body_string(r, b, "object", true, &text) == -1 ||
	    admin_body_int(r, b, "wave", true, 0, 0, WAVE_MAX, &wave) == -1 ||
	    admin_body_bool(r, b, "force", &force) == -1 ||
	    admin_body_bool(r, b, "dry_run", &dry) == -1 ||
	    admin_parse_object(r, text, &obj) == -1)
		goto out;
	route_obj_format(&obj, canon, sizeof(canon));

	rc = store_route_get(r->st, obj.key, obj.len, &old);
	if (rc != STORE_OK && rc != STORE_NOTFOUND) {
		log_warnx("%s: reading route %s failed: store error", __func__,
		    canon);
		admin_error(r, 500, "store error reading the route of %s",
		    canon);
		goto out;
	}
	has_old = rc == STORE_OK;
	if (dry) {
		admin_route_dry(r, &obj, has_old ? &old : NULL, (uint32_t)wave,
		    force);
		goto out;
	}
	if (has_old && old.wave == (uint32_t)wave) {
		/* Already so: nothing to write, no event. */
		admin_reply_json(r, 200, admin_route_json(&obj, &old));
		goto out;
	}
	if (!force &&
	    admin_route_guard(r, &obj, old.wave, has_old, (uint32_t)wave,
		true) == -1)
		goto out;

	ev = json_pack("{s:s,s:s,s:I,s:o,s:s}", "type", "route.set", "object",
	    canon, "wave", (json_int_t)wave, "from_wave",
	    has_old ? json_integer(old.wave) : json_null(), "actor", r->actor);
	if (force)
		json_object_set_new(ev, "forced", json_true());
	if (store_route_put(r->st, obj.key, obj.len, (uint32_t)wave, r->now_ms,
		ev) != STORE_OK) {
		log_warnx("%s: setting route %s -> wave %" JSON_INTEGER_FORMAT
			  " failed: store error",
		    __func__, canon, wave);
		admin_error(r, 500, "store error: the route of %s is unchanged",
		    canon);
		goto out;
	}
	log_info("route %s set to wave %" JSON_INTEGER_FORMAT " by %s%s", canon,
	    wave, r->actor, force ? " (forced)" : "");
	if (store_route_get(r->st, obj.key, obj.len, &rt) != STORE_OK) {
		/* Written and synced; answer with what was written. */
		rt.wave = (uint32_t)wave;
		rt.seq = store_last_seq(r->st);
		rt.since_ms = r->now_ms;
	}
	admin_reply_json(r, 200, admin_route_json(&obj, &rt));
out:
	json_decref(ev);
	json_decref(b);
}

/* DELETE /routes/{object}: remove an assignment. */
void
admin_routes_delete(struct admin_req *r)
{
	struct route_obj obj;
	struct store_route old;
	json_t *ev;
	char canon[STORE_KEY_MAX * 3 + 8], *force_q = NULL;
	bool force;
	int rc;

	if (admin_parse_object(r, r->seg[1], &obj) == -1)
		return;
	route_obj_format(&obj, canon, sizeof(canon));
	force = admin_query_get(r, "force", &force_q) == 1 &&
	    (strcmp(force_q, "") == 0 || strcmp(force_q, "1") == 0 ||
		strcmp(force_q, "true") == 0);
	free(force_q);

	rc = store_route_get(r->st, obj.key, obj.len, &old);
	if (rc == STORE_NOTFOUND) {
		admin_error(r, 404, "%s has no route", canon);
		return;
	}
	if (rc != STORE_OK) {
		log_warnx("%s: reading route %s failed: store error", __func__,
		    canon);
		admin_error(r, 500, "store error reading the route of %s",
		    canon);
		return;
	}
	if (!force &&
	    admin_route_guard(r, &obj, old.wave, true, 0, false) == -1)
		return;
	ev = json_pack("{s:s,s:s,s:I,s:s}", "type", "route.rm", "object", canon,
	    "from_wave", (json_int_t)old.wave, "actor", r->actor);
	if (force)
		json_object_set_new(ev, "forced", json_true());
	rc = store_route_del(r->st, obj.key, obj.len, r->now_ms, ev);
	json_decref(ev);
	if (rc == STORE_NOTFOUND) {
		admin_error(r, 404, "%s has no route", canon);
		return;
	}
	if (rc != STORE_OK) {
		log_warnx("%s: removing route %s failed: store error", __func__,
		    canon);
		admin_error(r, 500, "store error: the route of %s is unchanged",
		    canon);
		return;
	}
	log_info("route %s (wave %u) removed by %s%s", canon, old.wave,
	    r->actor, force ? " (forced)" : "");
	admin_reply_json(r, 200,
	    json_pack("{s:s,s:b,s:I}", "object", canon, "removed", 1, "wave",
		(json_int_t)old.wave));
}

/* Free what an import holds. */
static void
admin_import_clear(struct admin_import *im)
{
	size_t i;

	for (i = 0; i < im->nblocks; i++)
		free(im->blocks[i]);
	free(im->blocks);
	free(im->in);
	memset(im, 0, sizeof(*im));
}

/*
 * Check one route J (line or array element NO) exactly as POST /routes
 * checks its body, and add it to the import: its key is copied into the
 * key blocks. 0, or -1 with a 400 naming the line and the object.
 */
static int
admin_import_one(struct admin_req *r, json_t *j, size_t no, void *arg)
{
	static const char *const known[] = { "object", "wave", "force", NULL };
	struct admin_import *im = arg;
	struct store_route_in *in;
	struct route_obj obj;
	const char *text;
	json_int_t wave;
	bool force;

	if (!json_is_object(j)) {
		admin_error(r, 400, "not a JSON object");
		return -1;
	}
	if (json_is_string(json_object_get(j, "object")))
		snprintf(r->where, sizeof(r->where),
		    "%s %zu (%.*s): ", im->unit, no, ADMIN_TEXT_MAX,
		    json_string_value(json_object_get(j, "object")));
	if (admin_body_check(r, j, known) == -1 ||
	    admin_body_string(r, j, "object", true, &text) == -1 ||
	    admin_body_int(r, j, "wave", true, 0, 0, WAVE_MAX, &wave) == -1 ||
	    admin_body_bool(r, j, "force", &force) == -1 ||
	    admin_parse_object(r, text, &obj) == -1)
		return -1;

	if (im->nblocks == 0 || im->used + obj.len > ADMIN_IMPORT_BLOCK) {
		im->blocks = xreallocarray(im->blocks, im->nblocks + 1,
		    sizeof(*im->blocks));
		im->blocks[im->nblocks++] = xmalloc(ADMIN_IMPORT_BLOCK);
		im->used = 0;
	}
	if (im->n == im->cap) {
		im->cap = im->cap != 0 ? im->cap * 2 : 64;
		im->in = xreallocarray(im->in, im->cap, sizeof(*im->in));
	}
	in = &im->in[im->n++];
	memcpy(im->blocks[im->nblocks - 1] + im->used, obj.key, obj.len);
	in->key = im->blocks[im->nblocks - 1] + im->used;
	in->keylen = (uint32_t)obj.len;
	in->wave = (uint32_t)wave;
	in->no = (uint32_t)no;
	in->force = force;
	im->used += obj.len;
	if (force)
		im->forced++;
	return 0;
}

/*
 * Refuse an object given twice with different waves (the import is
 * sorted: equal keys are neighbours, in line order). 0, or -1 with a 400
 * naming both lines.
 */
static int
admin_import_dups(struct admin_req *r, struct admin_import *im)
{
	const struct store_route_in *a, *b;
	struct route_obj obj;
	char text[ADMIN_TEXT_MAX];
	size_t i;

	for (i = 1; i < im->n; i++) {
		a = &im->in[i - 1];
		b = &im->in[i];
		if (a->keylen != b->keylen ||
		    memcmp(a->key, b->key, a->keylen) != 0 ||
		    a->wave == b->wave)
			continue;
		text[0] = '\0';
		if (route_obj_from_key(b->key, b->keylen, &obj) == 0)
			route_obj_format(&obj, text, sizeof(text));
		snprintf(r->where, sizeof(r->where), "%s %u (%s): ", im->unit,
		    b->no, text);
		admin_error(r, 400,
		    "wave %u, but %s %u gives it wave %u: an object may "
		    "appear once per import",
		    b->wave, im->unit, a->no, a->wave);
		return -1;
	}
	return 0;
}

/*
 * store_route_import's guard: route I may change unless admin_guard_check
 * refuses it, on the wave states the import's own txn reads. Keeps no
 * state but the reason, as a retry needs.
 */
static int
admin_import_guard_cb(size_t i, const struct store_route *old, int old_state,
    int new_state, void *arg)
{
	struct admin_import *im = arg;
	const struct store_route_in *in = &im->in[i];
	struct route_obj obj;

	if (route_obj_from_key(in->key, in->keylen, &obj) == -1)
		return STORE_ERROR;
	if (!admin_guard_check(&obj, old != NULL, old != NULL ? old->wave : 0,
		old_state, true, in->wave, new_state, im->msg, sizeof(im->msg)))
		return STORE_OK;
	im->has_old = old != NULL;
	im->old = old != NULL ? old->wave : 0;
	return STORE_REFUSED;
}

/*
 * POST /routes/import: assign many objects and rules (JSON lines or a
 * JSON array of POST /routes bodies) in one synced txn: all of them or,
 * at the first bad line, an object given twice with two waves, or a
 * route the guard refuses (unless forced), none. Routes already on
 * their wave are unchanged. One route.import event with the counts per
 * wave; a refusal is recorded as one route.refused event. Run by the
 * worker (admin_import_run).
 */
void
admin_routes_import(struct admin_req *r)
{
	admin_job_start(r, admin_import_run);
}

/*
 * Refuse import IM: the guard refused its route IN (IM->msg says why).
 * The refusal is recorded as one route.refused event and answered 409.
 */
static void
admin_import_refused(struct admin_req *r, const struct admin_import *im,
    const struct store_route_in *in)
{
	struct route_obj obj;
	char text[ADMIN_TEXT_MAX];
	json_t *ev;

	text[0] = '\0';
	if (route_obj_from_key(in->key, in->keylen, &obj) == 0)
		route_obj_format(&obj, text, sizeof(text));
	log_info("route import refused (%s): %s %u: %s", r->actor, im->unit,
	    in->no, im->msg);
	ev = json_pack("{s:s,s:s,s:s,s:I,s:o,s:I,s:I,s:s,s:s}", "type",
	    "route.refused", "action", "import", "object", text, "wave",
	    (json_int_t)in->wave, "from_wave",
	    im->has_old ? json_integer(im->old) : json_null(), im->unit,
	    (json_int_t)in->no, "records", (json_int_t)im->n, "actor", r->actor,
	    "message", im->msg);
	if (ev == NULL || store_event_append(r->st, r->now_ms, ev) != STORE_OK)
		log_warnx("%s: recording the import refusal failed", __func__);
	json_decref(ev);
	snprintf(r->where, sizeof(r->where), "%s %u: ", im->unit, in->no);
	admin_error(r, 409, "%s", im->msg);
}

/* Parse, check and write an import; answer R. Nothing for the loop. */
static void
admin_import_run(struct admin_req *r, struct evbuffer *alarms __unused)
{
	struct admin_import im;
	struct store_import_res res;
	json_t *ev = NULL;
	int rc;

	memset(&im, 0, sizeof(im));
	r->outcome = "; nothing was imported";
	if (admin_records(r, "routes", &im.unit, admin_import_one, &im) == -1)
		goto out;
	store_route_in_sort(im.in, im.n);
	if (admin_import_dups(r, &im) == -1)
		goto out;
	ev = json_pack("{s:s,s:s,s:I}", "type", "route.import", "actor",
	    r->actor, "records", (json_int_t)im.n);
	if (ev != NULL && im.forced > 0)
		json_object_set_new(ev, "forced", json_integer(im.forced));
	rc = store_route_import(r->st, im.in, im.n, r->now_ms,
	    admin_import_guard_cb, &im, ev, &res);
	if (rc == STORE_REFUSED) {
		admin_import_refused(r, &im, &im.in[res.refused]);
		goto out;
	}
	if (rc != STORE_OK) {
		log_warnx("%s: route import of %zu routes failed: store "
			  "error",
		    __func__, im.n);
		admin_error(r, 500, "store error");
		goto out;
	}
	log_info("routes: %zu imported by %s (%zu set, %zu unchanged%s)", im.n,
	    r->actor, res.set, res.unchanged, im.forced > 0 ? ", forced" : "");
	admin_reply_json(r, 200,
	    json_pack("{s:I,s:I,s:I}", "set", (json_int_t)res.set, "unchanged",
		(json_int_t)res.unchanged, "seq",
		(json_int_t)store_last_seq(r->st)));
out:
	json_decref(ev);
	admin_import_clear(&im);
}

/* GET /resolve/{object}[?client=ID]: where the object goes, and why. */
void
admin_resolve(struct admin_req *r)
{
	static const char *const why[] = {
		[ROUTE_WHY_UNASSIGNED] = "unassigned",
		[ROUTE_WHY_OBJECT] = "object",
		[ROUTE_WHY_RULE] = "rule",
		[ROUTE_WHY_STORE_ERROR] = "store error",
	};
	struct route_obj obj;
	struct route_result res;
	char canon[STORE_KEY_MAX * 3 + 8], matched[STORE_KEY_MAX * 3 + 8];
	char *client = NULL;
	bool assigned;
	json_t *j;

	if (admin_parse_object(r, r->seg[1], &obj) == -1)
		return;
	route_obj_format(&obj, canon, sizeof(canon));
	(void)admin_query_get(r, "client", &client);
	memset(&res, 0, sizeof(res));
	(void)route_resolve(r->st, &obj,
	    client != NULL ? route_client_hash(client, strlen(client)) : 0,
	    &res);
	assigned = res.assigned && res.why != ROUTE_WHY_STORE_ERROR &&
	    res.why != ROUTE_WHY_UNASSIGNED;
	if (assigned)
		route_obj_format(&res.matched, matched, sizeof(matched));
	j = json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:I,s:s,s:o,s:b,s:o}", "object",
	    canon, "target", route_side_name(res.read), "write_target",
	    route_side_name(res.write), "wave",
	    assigned ? json_integer(res.wave) : json_null(), "state",
	    assigned ? json_string(wave_state_name(res.state)) : json_null(),
	    "pct", assigned ? res.pct : 0, "version", (json_int_t)res.version,
	    "why",
	    (size_t)res.why < sizeof(why) / sizeof(why[0]) ? why[res.why] :
							     "store error",
	    "matched", assigned ? json_string(matched) : json_null(),
	    "refuses_warehouse_writes", res.warehouse_writes_refused, "since",
	    assigned ? admin_time_json(res.since_ms) : json_null());
	if (client != NULL)
		json_object_set_new(j, "client", json_string(client));
	free(client);
	admin_reply_json(r, 200, j);
}
