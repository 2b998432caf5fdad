/*
 * floe: admin_readers.c -- the reader inventory in the admin API: GET
 * /readers?object=X|wave=N (who loaded the tables from which side, newest
 * first, with when each identity was last seen anywhere, who is a stale
 * reader and who revalidated with the old side's ETag), POST
 * /readers/forget (an operator excuses a stale reader, as an event), and
 * the stale readers as the decommission gate asks for them.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/readers.h"
#include "proxy/admin_impl.h"
#include "proxy/cluster.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/inventory.h"
#include "proxy/worker.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

/* Rows GET /readers gives by default, and at most. */
#define ADMIN_READERS_LIMIT 1000
#define ADMIN_READERS_MAX 100000
/* floe_stale_readers is computed at most this often. */
#define ADMIN_STALE_EVERY_MS 60000

/* One record of an object: an identity on one side. */
struct admin_rd {
	char ident[READERS_IDENT_MAX];
	enum route_side side;
	struct store_reader r;
};

/* A row of the answer and the time it is ordered by. */
struct admin_rd_row {
	int64_t last_ms;
	json_t *j;
};

/* A scan over the objects of a wave (or one object). */
struct admin_rd_scan {
	struct admin_req *r;
	int64_t flipped_ms; /* 0: the wave never left the warehouse */
	int64_t horizon_ms;
	bool want_rows;
	/* The records of the object being read. */
	struct admin_rd *v;
	size_t n;
	size_t cap;
	/* What was found. */
	struct admin_rd_row *rows;
	size_t nrows;
	size_t rcap;
	json_t *stale; /* [{object, identity, last_load, last_seen}] */
	json_t *oldtag; /* the same for an old-side revalidation */
	bool failed;
};

static void admin_readers_get_run(struct admin_req *, struct evbuffer *);
static void admin_readers_forget_run(struct admin_req *, struct evbuffer *);
static int admin_rd_collect_cb(const void *, size_t,
    const struct store_reader *, void *);
static const struct store_reader *admin_rd_find(const struct admin_rd_scan *,
    enum route_side, const char *);
static json_t *admin_rd_last_seen(struct admin_req *, const char *);
static void admin_rd_object(struct admin_rd_scan *, const struct route_obj *,
    const char *);
static int admin_rd_row_cmp(const void *, const void *);
static void admin_rd_scan_clear(struct admin_rd_scan *);
static json_t *admin_rd_rows_json(struct admin_rd_scan *, size_t);
static void admin_rd_scan_wave(struct admin_rd_scan *,
    const struct admin_evidence *);
static void admin_rd_scan_init(struct admin_rd_scan *, struct admin_req *,
    const struct store_wave *, bool);
static int admin_rd_ident_cmp(const void *, const void *);
static const char *admin_rd_str(const json_t *, const char *, const char *);
static int admin_rd_recent_cb(const void *, size_t, const struct store_reader *,
    void *);

/* Keep one record of the object being read. */
/* O's string member KEY, or DEF when it has none (a time never seen). */
static const char *
admin_rd_str(const json_t *o, const char *key, const char *def)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : def;
}

static int
admin_rd_collect_cb(const void *key, size_t keylen,
    const struct store_reader *rec, void *arg)
{
	struct admin_rd_scan *sc = arg;
	struct route_obj obj;
	struct admin_rd *d;

	if (sc->n == sc->cap) {
		sc->cap = sc->cap != 0 ? sc->cap * 2 : 16;
		sc->v = xreallocarray(sc->v, sc->cap, sizeof(*sc->v));
	}
	d = &sc->v[sc->n];
	if (readers_key_split(key, keylen, &obj, &d->side, d->ident,
		sizeof(d->ident)) == -1 ||
	    obj.len == 0)
		return 0;
	d->r = *rec;
	sc->n++;
	return 0;
}

/* Order an identity against a record (bsearch). */
static int
admin_rd_ident_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct admin_rd *)elem)->ident);
}

/*
 * The lakehouse record of IDENT among the object's, or NULL. The store
 * gives them first ('l' < 'w'), in the order of their identities.
 */
static const struct store_reader *
admin_rd_find(const struct admin_rd_scan *sc, enum route_side side,
    const char *ident)
{
	const struct admin_rd *d;
	size_t nl;

	for (nl = 0; nl < sc->n && sc->v[nl].side == ROUTE_LAKEHOUSE; nl++)
		;
	if (side != ROUTE_LAKEHOUSE || nl == 0)
		return NULL;
	d = bsearch(ident, sc->v, nl, sizeof(*sc->v), admin_rd_ident_cmp);
	return d != NULL ? &d->r : NULL;
}

/* When IDENT was last seen loading any table, as JSON. */
static json_t *
admin_rd_last_seen(struct admin_req *r, const char *ident)
{
	unsigned char key[READERS_KEY_MAX];
	struct store_reader rec;
	size_t len;

	if ((len = readers_key(key, sizeof(key), NULL, ROUTE_WAREHOUSE, ident,
		 strlen(ident))) == 0 ||
	    store_reader_get(r->st, key, len, &rec) != STORE_OK)
		return json_null();
	return admin_time_json(rec.last_ms);
}

/* Read the records of OBJ (text NAME) into the scan's rows and lists. */
static void
admin_rd_object(struct admin_rd_scan *sc, const struct route_obj *obj,
    const char *name)
{
	unsigned char prefix[STORE_KEY_MAX + 1];
	const struct store_reader *wh, *lh;
	const struct admin_rd *d;
	json_t *j, *seen;
	bool stale, old;
	size_t i;

	if (obj->len + 1 > STORE_KEY_MAX)
		return;
	memcpy(prefix, obj->key, obj->len);
	prefix[obj->len] = '\0';
	sc->n = 0;
	if (store_reader_foreach(sc->r->st, prefix, obj->len + 1,
		admin_rd_collect_cb, sc) != STORE_OK) {
		sc->failed = true;
		return;
	}
	for (i = 0; i < sc->n; i++) {
		d = &sc->v[i];
		wh = d->side == ROUTE_WAREHOUSE ? &d->r : NULL;
		lh = admin_rd_find(sc, ROUTE_LAKEHOUSE, d->ident);
		stale = wh != NULL &&
		    readers_is_stale(wh, lh, sc->flipped_ms, sc->horizon_ms);
		old = sc->flipped_ms > 0 && d->r.oldtag_ms >= sc->flipped_ms;
		seen = admin_rd_last_seen(sc->r, d->ident);
		if (stale)
			json_array_append_new(sc->stale,
			    json_pack("{s:s,s:s,s:o,s:O}", "object", name,
				"identity", d->ident, "last_load",
				admin_time_json(d->r.last_ms), "last_seen",
				seen));
		if (old)
			json_array_append_new(sc->oldtag,
			    json_pack("{s:s,s:s,s:s,s:o,s:O}", "object", name,
				"identity", d->ident, "side",
				route_side_name(d->side), "revalidated",
				admin_time_json(d->r.oldtag_ms), "last_seen",
				seen));
		if (!sc->want_rows) {
			json_decref(seen);
			continue;
		}
		j = json_pack("{s:s,s:s,s:s,s:o,s:o,s:I,s:s,s:o,s:b,s:o}",
		    "object", name, "identity", d->ident, "side",
		    route_side_name(d->side), "first",
		    admin_time_json(d->r.first_ms), "last",
		    admin_time_json(d->r.last_ms), "count",
		    (json_int_t)d->r.count, "user_agent", d->r.ua, "last_seen",
		    seen, "stale", stale, "old_etag",
		    old ? admin_time_json(d->r.oldtag_ms) : json_null());
		if (sc->nrows == sc->rcap) {
			sc->rcap = sc->rcap != 0 ? sc->rcap * 2 : 64;
			sc->rows = xreallocarray(sc->rows, sc->rcap,
			    sizeof(*sc->rows));
		}
		sc->rows[sc->nrows].last_ms = d->r.last_ms;
		sc->rows[sc->nrows].j = j;
		sc->nrows++;
	}
}

/* Newest first. */
static int
admin_rd_row_cmp(const void *a, const void *b)
{
	const struct admin_rd_row *x = a, *y = b;

	return x->last_ms > y->last_ms ? -1 : x->last_ms < y->last_ms;
}

/* Free what a scan holds (not the lists, which the caller takes). */
static void
admin_rd_scan_clear(struct admin_rd_scan *sc)
{
	size_t i;

	for (i = 0; i < sc->nrows; i++)
		json_decref(sc->rows[i].j);
	free(sc->rows);
	free(sc->v);
	json_decref(sc->stale);
	json_decref(sc->oldtag);
}

/* The first LIMIT rows, newest first (the scan keeps none). */
static json_t *
admin_rd_rows_json(struct admin_rd_scan *sc, size_t limit)
{
	json_t *a = json_array();
	size_t i;

	if (sc->nrows > 1)
		qsort(sc->rows, sc->nrows, sizeof(*sc->rows), admin_rd_row_cmp);
	for (i = 0; i < sc->nrows; i++) {
		if (i < limit)
			json_array_append(a, sc->rows[i].j);
	}
	return a;
}

/* Every object of a wave's evidence. */
static void
admin_rd_scan_wave(struct admin_rd_scan *sc, const struct admin_evidence *ev)
{
	size_t i;

	for (i = 0; i < ev->n && !sc->failed; i++)
		admin_rd_object(sc, &ev->keys[i], ev->names[i]);
}

/* Start a scan for a wave read as W. */
static void
admin_rd_scan_init(struct admin_rd_scan *sc, struct admin_req *r,
    const struct store_wave *w, bool rows)
{
	memset(sc, 0, sizeof(*sc));
	sc->r = r;
	sc->want_rows = rows;
	sc->flipped_ms = w != NULL && w->state != WAVE_WAREHOUSE &&
		w->state != WAVE_ROLLED_BACK ?
	    w->flipped_ms :
	    0;
	sc->horizon_ms = (int64_t)r->f->conf->policy.readers_horizon_ms;
	sc->stale = json_array();
	sc->oldtag = json_array();
}

/*
 * The stale readers of wave N (read as W, its objects in EV) into *STALE
 * (caller frees). Their count, or -1 with the reply set.
 */
int
admin_readers_stale(struct admin_req *r, const struct admin_evidence *ev,
    const struct store_wave *w, json_t **stale)
{
	struct admin_rd_scan sc;
	int n;

	*stale = NULL;
	/*
	 * On the loop, what was noted goes to the store first. A worker's
	 * child (GET /eligibility) has its own store and must not touch the
	 * loop's: the loop flushed before it forked.
	 */
	if (r->st == r->f->store && inventory_flush(r->f->inv) == -1)
		log_debug("%s: the inventory could not be flushed", __func__);
	admin_rd_scan_init(&sc, r, w, false);
	admin_rd_scan_wave(&sc, ev);
	if (sc.failed) {
		admin_rd_scan_clear(&sc);
		admin_error(r, 500, "store error reading the reader inventory");
		return -1;
	}
	*stale = json_incref(sc.stale);
	n = (int)json_array_size(sc.stale);
	admin_rd_scan_clear(&sc);
	return n;
}

/*
 * The decommission gate's readers part for wave N: 1 when it refuses
 * (decommission_readers = block and stale readers are left; MSG names
 * them), 0 when it allows (MSG names them under warn, else empty), -1
 * with the reply set. *STALE (caller frees) lists them.
 */
int
admin_readers_gate(struct admin_req *r, const struct admin_evidence *ev,
    const struct store_wave *w, char *msg, size_t msglen, json_t **stale)
{
	int mode = r->f->conf->policy.decommission_readers, n;
	size_t i, off;
	char why[512];
	json_t *s;

	msg[0] = '\0';
	*stale = NULL;
	if (mode == CONF_READERS_OFF)
		return 0;
	/* Block: not on an inventory a copy has yet to complete. */
	if (mode == CONF_READERS_BLOCK &&
	    cluster_readers_incomplete(r->f->cluster, why, sizeof(why))) {
		snprintf(msg, msglen, "wave %u: %s", ev->wave, why);
		return 1;
	}
	if ((n = admin_readers_stale(r, ev, w, stale)) <= 0)
		return n;
	off = (size_t)snprintf(msg, msglen,
	    "wave %u: %d stale reader%s still load%s the warehouse copy:",
	    ev->wave, n, n == 1 ? "" : "s", n == 1 ? "s" : "");
	json_array_foreach(*stale, i, s) {
		if (off >= msglen)
			break;
		off += (size_t)snprintf(msg + off, msglen - off,
		    "%s %s (%s, last load %s)", i == 0 ? "" : ",",
		    admin_rd_str(s, "identity", "?"),
		    admin_rd_str(s, "object", "?"),
		    admin_rd_str(s, "last_load", "never"));
	}
	if (off < msglen)
		snprintf(msg + off, msglen - off,
		    "; have them reload (docs/engines.md) or excuse them: "
		    "floectl readers forget IDENTITY [OBJECT]");
	return mode == CONF_READERS_BLOCK ? 1 : 0;
}

/*
 * GET /readers?object=X|wave=N[&limit=L]: by wave, the ledger and the
 * readers of every table of the wave are read: the worker's child does
 * it, after what was noted until now is stored (a job before it).
 */
void
admin_readers_get(struct admin_req *r)
{
	(void)inventory_flush(r->f->inv);
	admin_job_read(r, admin_readers_get_run);
}

/* admin_readers_get's work, in the worker's child (or at once). */
static void
admin_readers_get_run(struct admin_req *r, struct evbuffer *alarms __unused)
{
	struct admin_evidence ev;
	struct admin_rd_scan sc;
	struct route_result res;
	struct route_obj obj;
	struct store_wave w;
	unsigned long long limit = ADMIN_READERS_LIMIT;
	char *ov = NULL, *wv = NULL, name[ADMIN_TEXT_MAX], hz[32];
	bool has_wave = false, by_wave;
	uint32_t n = 0;
	json_t *j;

	memset(&ev, 0, sizeof(ev));
	memset(&sc, 0, sizeof(sc));
	by_wave = admin_query_get(r, "wave", &wv) == 1;
	if (admin_query_get(r, "object", &ov) == 1 && by_wave) {
		admin_error(r, 400, "give object= or wave=, not both");
		goto out;
	}
	if (ov == NULL && !by_wave) {
		admin_error(r, 400, "give object=OBJECT or wave=N");
		goto out;
	}
	if (admin_query_uint(r, "limit", 1, ADMIN_READERS_MAX,
		"a number of rows 1..100000", &limit) == -1)
		goto out;
	if (by_wave) {
		if (admin_parse_wave(r, wv, &n) == -1)
			goto out;
		has_wave = true;
	} else {
		if (admin_parse_object(r, ov, &obj) == -1)
			goto out;
		if (obj.rule) {
			admin_error(r, 400,
			    "%s is a namespace rule: give a table, or "
			    "wave=N",
			    ov);
			goto out;
		}
		(void)route_resolve(r->st, &obj, 0, &res);
		has_wave = res.assigned;
		n = res.wave;
	}
	if (has_wave && admin_wave_state(r, n, &w, NULL) == -1)
		goto out;
	admin_rd_scan_init(&sc, r, has_wave ? &w : NULL, true);
	if (by_wave) {
		if (admin_evidence(r, n, &w, &ev) == -1) {
			admin_error(r, 500, "store error reading wave %u", n);
			goto out;
		}
		admin_rd_scan_wave(&sc, &ev);
	} else {
		route_obj_format(&obj, name, sizeof(name));
		admin_rd_object(&sc, &obj, name);
	}
	if (sc.failed) {
		admin_error(r, 500, "store error reading the reader inventory");
		goto out;
	}
	units_format_duration(r->f->conf->policy.readers_horizon_ms, hz,
	    sizeof(hz));
	j = json_pack("{s:o,s:o,s:o,s:o,s:s,s:I,s:o,s:O,s:O}", "object",
	    by_wave ? json_null() : json_string(name), "wave",
	    has_wave ? json_integer(n) : json_null(), "state",
	    has_wave ? json_string(wave_state_name(w.state)) : json_null(),
	    "flipped", admin_time_json(sc.flipped_ms), "horizon", hz, "total",
	    (json_int_t)sc.nrows, "readers",
	    admin_rd_rows_json(&sc, (size_t)limit), "stale", sc.stale,
	    "old_etag", sc.oldtag);
	admin_reply_json(r, 200, j);
out:
	admin_rd_scan_clear(&sc);
	admin_evidence_clear(&ev);
	free(ov);
	free(wv);
}

/* The records an excuse just set, to publish to the other nodes. */
struct admin_rd_excused {
	const char *ident;
	int64_t at_ms;
	struct store_reader_in *in;
	unsigned char *keys; /* STORE_KEY_MAX per record */
	size_t n;
	size_t cap;
};

/* Keep a record of the identity excused at the time of the excuse. */
static int
admin_rd_excused_cb(const void *key, size_t keylen,
    const struct store_reader *rec, void *arg)
{
	struct admin_rd_excused *x = arg;
	char ident[READERS_IDENT_MAX];
	struct route_obj obj;
	enum route_side side;

	if (rec->excused_ms != x->at_ms || keylen > STORE_KEY_MAX ||
	    readers_key_split(key, keylen, &obj, &side, ident, sizeof(ident)) ==
		-1 ||
	    strcmp(ident, x->ident) != 0)
		return 0;
	if (x->n == x->cap) {
		x->cap = x->cap == 0 ? 16 : x->cap * 2;
		x->in = xreallocarray(x->in, x->cap, sizeof(*x->in));
		x->keys = xreallocarray(x->keys, x->cap, STORE_KEY_MAX);
	}
	memcpy(x->keys + x->n * STORE_KEY_MAX, key, keylen);
	memset(&x->in[x->n], 0, sizeof(x->in[x->n]));
	x->in[x->n].keylen = keylen;
	x->in[x->n].r.excused_ms = x->at_ms;
	x->n++;
	return 0;
}

/*
 * Cluster mode: the excuse of IDENT (of OBJ's records, or all) reaches the
 * other nodes as reader records carrying only excused_ms.
 */
static void
admin_rd_excuse_publish(struct admin_req *r, const char *ident,
    const struct route_obj *obj)
{
	struct admin_rd_excused x = { .ident = ident, .at_ms = r->now_ms };
	size_t i;

	if (r->f->cluster == NULL)
		return;
	(void)store_reader_foreach(r->st, obj->key, obj->len,
	    admin_rd_excused_cb, &x);
	for (i = 0; i < x.n; i++)
		x.in[i].key = x.keys + i * STORE_KEY_MAX;
	cluster_readers_publish(r->f->cluster, x.in, x.n);
	free(x.in);
	free(x.keys);
}

/*
 * POST /readers/forget {"identity","object"}: excuse a stale reader,
 * once what was noted until now is stored (a job of the worker's child
 * before this one, which the child makes too).
 */
void
admin_readers_forget(struct admin_req *r)
{
	(void)inventory_flush(r->f->inv);
	admin_job_change(r, admin_readers_forget_run);
}

/* admin_readers_forget's work, in the worker's child (or at once). */
static void
admin_readers_forget_run(struct admin_req *r, struct evbuffer *alarms __unused)
{
	static const char *const known[] = { "identity", "object", NULL };
	const char *ident = NULL, *text = NULL;
	struct route_obj obj;
	json_t *b, *ev = NULL;
	int rc;

	obj.len = 0;
	if ((b = admin_body(r, false)) == NULL)
		return;
	if (admin_body_check(r, b, known) == -1 ||
	    admin_body_string(r, b, "identity", true, &ident) == -1 ||
	    admin_body_string(r, b, "object", false, &text) == -1)
		goto out;
	if (ident[0] == '\0' || strlen(ident) >= READERS_IDENT_MAX) {
		admin_error(r, 400, "identity must be 1..%d bytes",
		    READERS_IDENT_MAX - 1);
		goto out;
	}
	if (text != NULL && admin_parse_object(r, text, &obj) == -1)
		goto out;
	if (text != NULL && obj.rule) {
		admin_error(r, 400, "%s is a namespace rule: give a table",
		    text);
		goto out;
	}
	ev = json_pack("{s:s,s:s,s:o,s:s}", "type", "readers.forget",
	    "identity", ident, "object",
	    text != NULL ? json_string(text) : json_null(), "actor", r->actor);
	rc = store_readers_excuse(r->st, ident, strlen(ident), obj.key, obj.len,
	    r->now_ms, ev);
	if (rc == STORE_NOTFOUND) {
		admin_error(r, 404,
		    "%s has no warehouse load%s%s in the reader inventory",
		    ident, text != NULL ? " of " : "",
		    text != NULL ? text : "");
		goto out;
	}
	if (rc != STORE_OK) {
		admin_error(r, 500, "store error; nothing changed");
		goto out;
	}
	log_info("reader %s excused%s%s by %s", ident,
	    text != NULL ? " for " : "", text != NULL ? text : "", r->actor);
	admin_rd_excuse_publish(r, ident, &obj);
	admin_reply_json(r, 200, json_incref(ev));
out:
	json_decref(ev);
	json_decref(b);
}

/* Collect the identities of an object's records loaded since a time. */
struct admin_rd_recent {
	int64_t since_ms;
	json_t *ids; /* identity -> true */
};

/* Keep IDENT if it loaded at or after the time asked. */
static int
admin_rd_recent_cb(const void *key, size_t keylen,
    const struct store_reader *rec, void *arg)
{
	struct admin_rd_recent *rc = arg;
	char ident[READERS_IDENT_MAX];
	struct route_obj obj;
	enum route_side side;

	if (rec->last_ms >= rc->since_ms &&
	    readers_key_split(key, keylen, &obj, &side, ident, sizeof(ident)) ==
		0 &&
	    obj.len > 0)
		json_object_set_new(rc->ids, ident, json_true());
	return 0;
}

/*
 * The identities that loaded any of the N tables KEYS (from either side)
 * since SINCE_MS: {"since","identities":count,"list":[first 50]}; null if
 * the store cannot say. Caller frees.
 */
json_t *
admin_readers_recent(struct admin_req *r, const struct route_obj *keys,
    size_t n, int64_t since_ms)
{
	unsigned char prefix[STORE_KEY_MAX + 1];
	struct admin_rd_recent rc = { since_ms, json_object() };
	const char *id;
	json_t *v, *list = json_array();
	size_t i;

	/* A worker's child must not touch the loop's store: it flushed. */
	if (r->st == r->f->store)
		(void)inventory_flush(r->f->inv);
	for (i = 0; i < n; i++) {
		if (keys[i].rule || keys[i].len + 1 > STORE_KEY_MAX)
			continue;
		memcpy(prefix, keys[i].key, keys[i].len);
		prefix[keys[i].len] = '\0';
		if (store_reader_foreach(r->st, prefix, keys[i].len + 1,
			admin_rd_recent_cb, &rc) != STORE_OK) {
			json_decref(rc.ids);
			json_decref(list);
			return json_null();
		}
	}
	json_object_foreach(rc.ids, id, v) {
		if (json_array_size(list) == 50)
			break;
		json_array_append_new(list, json_string(id));
	}
	v = json_pack("{s:o,s:I,s:o}", "since", admin_time_json(since_ms),
	    "identities", (json_int_t)json_object_size(rc.ids), "list", list);
	json_decref(rc.ids);
	return v;
}

/* The moved waves' stale reader counts, as /metrics last computed them. */
static struct admin_stale_count {
	uint32_t wave;
	unsigned n;
} * admin_stale_counts;
static size_t admin_stale_ncounts;
static int64_t admin_stale_at_ms;
static bool admin_stale_running; /* a job helper counts */

static void admin_stale_recount(struct floe *, struct store *, int64_t);
static void admin_stale_send(struct floe *);
static void admin_stale_done(void *, struct evbuffer *, const char *);

/* Count the stale readers of one moved wave (store_wave_cb). */
static int
admin_stale_wave_cb(const struct store_wave *w, void *arg)
{
	struct admin_req *r = arg;
	struct admin_evidence ev;
	struct admin_rd_scan sc;

	if (w->state != WAVE_CANARY && w->state != WAVE_LAKEHOUSE &&
	    w->state != WAVE_FROZEN)
		return 0;
	if (admin_evidence(r, w->n, w, &ev) == -1)
		return 0;
	admin_rd_scan_init(&sc, r, w, false);
	admin_rd_scan_wave(&sc, &ev);
	if (!sc.failed) {
		admin_stale_counts = xreallocarray(admin_stale_counts,
		    admin_stale_ncounts + 1, sizeof(*admin_stale_counts));
		admin_stale_counts[admin_stale_ncounts].wave = w->n;
		admin_stale_counts[admin_stale_ncounts].n =
		    (unsigned)json_array_size(sc.stale);
		admin_stale_ncounts++;
	}
	admin_rd_scan_clear(&sc);
	admin_evidence_clear(&ev);
	return 0;
}

/* Count them on ST, as of NOW (admin_stale_counts). */
static void
admin_stale_recount(struct floe *f, struct store *st, int64_t now)
{
	struct admin_req r;

	memset(&r, 0, sizeof(r));
	r.f = f;
	r.st = st;
	r.now_ms = now;
	admin_stale_ncounts = 0;
	(void)store_wave_foreach(st, admin_stale_wave_cb, &r);
}

/*
 * Ask a job helper to count: it gets [policy] (its webhook, a pointer of
 * this process's, left out) and the state directory, the string and its
 * NUL.
 */
static void
admin_stale_send(struct floe *f)
{
	struct conf_policy p = f->conf->policy;
	const char *dir = f->conf->state_dir;
	struct evbuffer *b;

	p.webhook = NULL;
	if ((b = evbuffer_new()) == NULL ||
	    evbuffer_add(b, &p, sizeof(p)) == -1 ||
	    evbuffer_add(b, dir, strlen(dir) + 1) == -1)
		fatalx("%s: out of memory", __func__);
	worker_send(f->worker, ADMIN_STALE_JOB, b, admin_stale_done, f);
}

/*
 * In a job helper: count in a floe of its own (the [policy] and the
 * store sent, nothing else), and answer how many counts (uint64_t) and
 * the counts; nothing when it could not count.
 */
void
admin_readers_stale_serve(const void *in, size_t len, struct evbuffer *out)
{
	struct conf c;
	struct floe f;
	struct store *st;
	char err[512];
	uint64_t n;

	if (len <= sizeof(c.policy) || ((const char *)in)[len - 1] != '\0') {
		log_warnx("%s: a job of %zu bytes", __func__, len);
		return;
	}
	memset(&c, 0, sizeof(c));
	memset(&f, 0, sizeof(f));
	memcpy(&c.policy, in, sizeof(c.policy));
	c.state_dir = xstrdup((const char *)in + sizeof(c.policy));
	f.conf = &c;
	if ((st = store_open(c.state_dir, err, sizeof(err))) == NULL)
		log_warnx("%s: %s", __func__, err);
	else {
		admin_stale_recount(&f, st, units_now_ms());
		store_free(st);
		n = admin_stale_ncounts;
		evbuffer_add(out, &n, sizeof(n));
		evbuffer_add(out, admin_stale_counts,
		    admin_stale_ncounts * sizeof(*admin_stale_counts));
		admin_readers_metrics_free();
	}
	free(c.state_dir);
}

/* On the loop: the helper's counts are the ones shown now. */
static void
admin_stale_done(void *arg __unused, struct evbuffer *out, const char *status)
{
	size_t len = evbuffer_get_length(out);
	uint64_t n = 0;

	admin_stale_running = false;
	if (status != NULL || len < sizeof(n))
		return;
	evbuffer_remove(out, &n, sizeof(n));
	len -= sizeof(n);
	if (len % sizeof(*admin_stale_counts) != 0 ||
	    n != len / sizeof(*admin_stale_counts))
		return;
	admin_stale_counts = xreallocarray(admin_stale_counts, n != 0 ? n : 1,
	    sizeof(*admin_stale_counts));
	evbuffer_remove(out, admin_stale_counts,
	    n * sizeof(*admin_stale_counts));
	admin_stale_ncounts = n;
}

/*
 * Count the moved waves' stale readers again if the last count is a
 * minute old: finding a wave's tables and reading their ledger and
 * readers costs seconds on a large store, so a job helper counts
 * (after what was noted is stored: a job before it) while the loop shows
 * the last counts; without a worker, the loop counts.
 */
static void
admin_stale_refresh(struct floe *f)
{
	int64_t now = units_now_ms();

	if (f->store == NULL || admin_stale_running ||
	    (admin_stale_at_ms != 0 &&
		now - admin_stale_at_ms < ADMIN_STALE_EVERY_MS))
		return;
	admin_stale_at_ms = now;
	(void)inventory_flush(f->inv);
	if (f->worker != NULL && f->cluster == NULL) {
		admin_stale_running = true;
		admin_stale_send(f);
		return;
	}
	admin_stale_recount(f, f->store, now);
}

/* Wave N's stale readers as last counted (at most a minute old). */
bool
admin_readers_stale_of(struct floe *f, uint32_t n, unsigned *count)
{
	size_t i;

	admin_stale_refresh(f);
	for (i = 0; i < admin_stale_ncounts; i++)
		if (admin_stale_counts[i].wave == n) {
			*count = admin_stale_counts[i].n;
			return true;
		}
	return false;
}

/*
 * stats_metrics_cb (ARG: the struct floe): floe_stale_readers{wave} for
 * each canary, lakehouse or frozen wave. Finding a wave's tables scans
 * the routes, so the counts are computed at most once a minute and
 * shown as computed then.
 */
void
admin_readers_metrics_cb(struct evbuffer *out, void *arg)
{
	size_t i;

	admin_stale_refresh(arg);
	evbuffer_add_printf(out,
	    "# HELP floe_stale_readers Clients that loaded a moved wave's "
	    "tables from the warehouse before the flip and not from the "
	    "lakehouse since (computed at most once a minute).\n"
	    "# TYPE floe_stale_readers gauge\n");
	for (i = 0; i < admin_stale_ncounts; i++)
		evbuffer_add_printf(out, "floe_stale_readers{wave=\"%u\"} %u\n",
		    admin_stale_counts[i].wave, admin_stale_counts[i].n);
}

/* Free what the metrics keep (at exit). */
void
admin_readers_metrics_free(void)
{
	free(admin_stale_counts);
	admin_stale_counts = NULL;
	admin_stale_ncounts = 0;
	admin_stale_at_ms = 0;
	admin_stale_running = false;
}
