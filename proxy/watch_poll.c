/*
 * floe: watch_poll.c -- the freshness and count polls: the list of the
 * tables of moved waves (rebuilt only when the store changed), and every
 * freshness_interval a LoadTable of each from both catalogs, a few at a
 * time, revalidating with If-None-Match; in a cluster, on the leader
 * only. What the answers mean is watch_trigger.c's (watch_cycle_end).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/trigger.h"
#include "proxy/catalog.h"
#include "proxy/cluster.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/fetch.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "proxy/watch_impl.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

#define WATCH_POLL_MAX 8 /* LoadTable polls in flight at once */
#define WATCH_POLL_BODY (16 << 20)

/* Collecting the objects and rules of the watched waves. */
struct watch_collect {
	struct watch *w;
	uint32_t *waves; /* sorted */
	uint8_t *count_off;
	size_t nwaves;
	struct route_obj *rules;
	uint32_t *rule_waves;
	size_t nrules;
	const struct route_obj *rule; /* while expanding one */
	uint32_t rule_wave;
	uint32_t cur_wave; /* the wave whose routes are being read */
	size_t nold; /* the poll list before, sorted by key: objs[0..nold) */
};

static void watch_poll_more(struct watch *);
static void watch_poll_done_cb(int, const char *, size_t, const char *, void *);

/* Order keys as the store does. */
static int
watch_key_cmp(const struct route_obj *a, const struct route_obj *b)
{
	return store_key_cmp(a->key, a->len, b->key, b->len);
}

/* Order poll list entries by key (qsort). */
static int
watch_obj_cmp(const void *a, const void *b)
{
	return watch_key_cmp(&(*(struct watch_obj *const *)a)->key,
	    &(*(struct watch_obj *const *)b)->key);
}

/* Find a key among poll list entries (bsearch). */
static int
watch_obj_find(const void *key, const void *elem)
{
	return watch_key_cmp(key, &(*(struct watch_obj *const *)elem)->key);
}

/* Order wave numbers. */
static int
watch_wave_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Keep the waves whose triggers are armed. */
static int
watch_waves_cb(const struct store_wave *sw, void *arg)
{
	struct watch_collect *c = arg;

	if (trigger_action_for(sw->state) == TRIGGER_NONE)
		return 0;
	c->waves = xreallocarray(c->waves, c->nwaves + 1, sizeof(*c->waves));
	c->count_off = xreallocarray(c->count_off, c->nwaves + 1, 1);
	c->waves[c->nwaves] = sw->n;
	c->count_off[c->nwaves] = (sw->flags & WAVE_F_NO_COUNT_CHECK) != 0;
	c->nwaves++;
	return 0;
}

/* Keep (or renew) one object of wave N in the poll list. */
static void
watch_obj_add(struct watch_collect *c, const struct route_obj *obj, uint32_t n)
{
	struct watch *w = c->w;
	struct watch_obj *o = NULL, **at;
	uint32_t *found;
	int s;

	/*
	 * The list as it was is sorted; what this rebuild adds goes after it
	 * (each key comes once: routes and ledger objects under a rule do
	 * not overlap).
	 */
	at = c->nold == 0 ?
	    NULL :
	    bsearch(obj, w->objs, c->nold, sizeof(*w->objs), watch_obj_find);
	if (at != NULL)
		o = *at;
	if (o != NULL && o->seen)
		return;
	if (o == NULL || o->wave != n) {
		if (o == NULL) {
			if (w->nobjs == w->objs_cap) {
				w->objs_cap =
				    w->objs_cap != 0 ? w->objs_cap * 2 : 64;
				w->objs = xreallocarray(w->objs, w->objs_cap,
				    sizeof(*w->objs));
			}
			o = w->objs[w->nobjs++] = xcalloc(1, sizeof(*o));
		} else
			memset(o, 0, sizeof(*o));
		o->w = w;
		o->key = *obj;
		route_obj_format(obj, o->name, sizeof(o->name));
		for (s = 0; s < ROUTE_NSIDES; s++) {
			o->p[s].o = o;
			o->p[s].side = (enum route_side)s;
			strlcpy(o->p[s].why, "not read yet",
			    sizeof(o->p[s].why));
		}
		o->count_why = "not compared yet";
	}
	o->wave = n;
	o->seen = true;
	found =
	    bsearch(&n, c->waves, c->nwaves, sizeof(*c->waves), watch_wave_cmp);
	o->count_off = found != NULL && c->count_off[found - c->waves];
}

/* Objects and rules routed to the watched wave C->cur_wave. */
static int
watch_routes_cb(const void *key, size_t keylen, void *arg)
{
	struct watch_collect *c = arg;
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	if (!obj.rule) {
		watch_obj_add(c, &obj, c->cur_wave);
		return 0;
	}
	c->rules = xreallocarray(c->rules, c->nrules + 1, sizeof(*c->rules));
	c->rule_waves =
	    xreallocarray(c->rule_waves, c->nrules + 1, sizeof(*c->rule_waves));
	c->rules[c->nrules] = obj;
	c->rule_waves[c->nrules] = c->cur_wave;
	c->nrules++;
	return 0;
}

/*
 * A table of the ledger under a rule: watched if it resolves to the
 * rule's wave through exactly that rule (as the gates see it).
 */
static int
watch_rule_obj_cb(const void *key, size_t keylen, void *arg)
{
	struct watch_collect *c = arg;
	struct route_result res;
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1 || obj.rule)
		return 0;
	if (route_resolve(c->w->f->store, &obj, 0, &res) == -1)
		return 1;
	if (res.assigned && res.why == ROUTE_WHY_RULE &&
	    res.wave == c->rule_wave && res.matched.len == c->rule->len &&
	    memcmp(res.matched.key, c->rule->key, c->rule->len) == 0)
		watch_obj_add(c, &obj, c->rule_wave);
	return 0;
}

/*
 * The poll list anew: the tables of canary, lakehouse and frozen waves
 * (their own entries, and the tables of the ledger their rules cover).
 * An object that stays keeps what was learnt of it.
 */
void
watch_rebuild(struct watch *w)
{
	struct watch_collect c;
	struct route_obj sub;
	size_t i, j;
	int k;

	memset(&c, 0, sizeof(c));
	c.w = w;
	for (i = 0; i < w->nobjs; i++)
		w->objs[i]->seen = false;
	/* Thousands of watched tables: find each in O(log n), not O(n). */
	if (w->nobjs > 1)
		qsort(w->objs, w->nobjs, sizeof(*w->objs), watch_obj_cmp);
	c.nold = w->nobjs;
	if (store_wave_foreach(w->f->store, watch_waves_cb, &c) < 0)
		goto out;
	/* Each watched wave's routes, from the store's by-wave index. */
	for (i = 0; i < c.nwaves; i++) {
		c.cur_wave = c.waves[i];
		if (store_wave_routes(w->f->store, c.waves[i], NULL, 0,
			watch_routes_cb, &c) < 0)
			break;
	}
	if (c.nwaves > 0 && i == c.nwaves) {
		for (i = 0; i < c.nrules; i++) {
			c.rule = &c.rules[i];
			c.rule_wave = c.rule_waves[i];
			for (k = 0; k < 2; k++) {
				sub = c.rules[i];
				sub.key[sub.len - 1] =
				    k == 0 ? ROUTE_SEP_TABLE : ROUTE_SEP_LEVEL;
				(void)store_ledger_objects(w->f->store, sub.key,
				    sub.len, watch_rule_obj_cb, &c);
			}
		}
	}
out:
	for (i = 0, j = 0; i < w->nobjs; i++) {
		if (w->objs[i]->seen)
			w->objs[j++] = w->objs[i];
		else
			free(w->objs[i]);
	}
	w->nobjs = j;
	free(c.waves);
	free(c.count_off);
	free(c.rules);
	free(c.rule_waves);
}

/* Append S percent-encoded (RFC 3986 unreserved kept) to BUF at *OFF. */
static void
watch_pct(char *buf, size_t len, size_t *off, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n && *off + 4 < len; i++) {
		if ((s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    strchr("-._~", s[i]) != NULL)
			buf[(*off)++] = (char)s[i];
		else {
			buf[(*off)++] = '%';
			buf[(*off)++] = hex[s[i] >> 4];
			buf[(*off)++] = hex[s[i] & 0xf];
		}
	}
	buf[*off] = '\0';
}

/* The LoadTable URL of O on SIDE (snapshots=refs: the current one). */
static char *
watch_url(struct watch *w, const struct watch_obj *o, enum route_side side)
{
	const struct conf_target *t = &w->f->conf->target[side];
	const struct catalog *cat = w->f->cat[side];
	const unsigned char *k = o->key.key, *tab;
	size_t n = o->key.len, off = 0, cap = n * 3 + 64, nslen;
	char *path = xmalloc(cap);

	if ((tab = memchr(k, ROUTE_SEP_TABLE, n)) == NULL)
		tab = k + n;
	nslen = (size_t)(tab - k);
	/* Levels are joined by 0x1f in the key and by %1F in the path. */
	watch_pct(path, cap, &off, k, nslen);
	strlcpy(path + off, "/tables/", cap - off);
	off += strlen(path + off);
	if (tab < k + n)
		watch_pct(path, cap, &off, tab + 1, (size_t)(k + n - tab - 1));
	{
		char *url = xasprintf("%s/v1%s%s/namespaces/%s?snapshots=refs",
		    t->uri, cat->prefix != NULL ? "/" : "",
		    cat->prefix != NULL ? cat->prefix : "", path);

		free(path);
		return url;
	}
}

/* Start polls until WATCH_POLL_MAX are in flight or none is left. */
static void
watch_poll_more(struct watch *w)
{
	struct floe *f = w->f;
	struct watch_obj *o;
	struct watch_poll *p;
	const struct conf_target *t;
	const char *headers[CRED_MAX_HDRS + 3];
	struct fetch_opts fo;
	char *url, *inm, *ch[CRED_MAX_HDRS];
	int h, i, n;

	while (w->inflight < WATCH_POLL_MAX && w->next_job < w->nobjs * 2) {
		o = w->objs[w->next_job / 2];
		p = &o->p[w->next_job % 2];
		w->next_job++;
		t = &f->conf->target[p->side];
		if (!f->cat[p->side]->known) {
			snprintf(p->why, sizeof(p->why),
			    "the %s catalog's config is not known yet",
			    route_side_name(p->side));
			continue;
		}
		url = watch_url(w, o, p->side);
		/* floe's credential for that catalog, in every [auth] mode. */
		n = 0;
		if (f->cred[p->side] != NULL)
			(void)cred_bearer(f->cred[p->side], &p->cred_gen);
		if (f->cred[p->side] != NULL &&
		    (n = cred_headers(f->cred[p->side], "GET", url, NULL, 0, ch,
			 p->why, sizeof(p->why))) == -1) {
			free(url);
			continue;
		}
		inm = NULL;
		h = 0;
		headers[h++] = "Accept: application/json";
		for (i = 0; i < n; i++)
			headers[h++] = ch[i];
		if (p->ever && p->etag[0] != '\0')
			headers[h++] = inm =
			    xasprintf("If-None-Match: %s", p->etag);
		headers[h] = NULL;
		memset(&fo, 0, sizeof(fo));
		fo.headers = headers;
		fo.timeout_ms = t->timeout_ms;
		fo.connect_timeout_ms = t->connect_timeout_ms;
		fo.ca_file = t->ca_file;
		fo.max_body = WATCH_POLL_BODY;
		fo.etag = p->etag_new;
		fo.etag_size = sizeof(p->etag_new);
		w->inflight++;
		p->req = fetch_start(f->fetch, url, &fo, watch_poll_done_cb, p);
		free(url);
		free(inm);
		cred_headers_clear(ch, n);
	}
}

/* One LoadTable answer of the poll. */
static void
watch_poll_done_cb(int status, const char *body, size_t len, const char *error,
    void *arg)
{
	struct watch_poll *p = arg;
	struct watch *w = p->o->w;
	struct trigger_snap snap;
	char err[128];

	p->req = NULL;
	w->inflight--;
	if (status == 304 && p->ever) {
		p->known = true;
	} else if (status == 200) {
		if (trigger_snap_parse(body, len, &snap, err, sizeof(err)) ==
		    0) {
			p->snap = snap;
			p->known = p->ever = true;
			strlcpy(p->etag, p->etag_new, sizeof(p->etag));
		} else
			snprintf(p->why, sizeof(p->why),
			    "not a LoadTable result: %s", err);
	} else if (status == 0)
		snprintf(p->why, sizeof(p->why), "%s",
		    error != NULL ? error : "no answer");
	else
		snprintf(p->why, sizeof(p->why), "HTTP %d", status);
	/* floe's token refused: one early refresh (rate-limited there). */
	if (status == 401 && w->f->cred[p->side] != NULL)
		cred_unauthorized(w->f->cred[p->side], p->cred_gen);
	watch_poll_more(w);
	if (w->inflight == 0 && w->next_job >= w->nobjs * 2)
		watch_cycle_end(w);
}

/* Every freshness_interval: read every watched object from both sides. */
void
watch_poll_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct watch *w = arg;
	uint64_t seq = 0;
	size_t i;
	int s;

	watch_schedule(w->poll, w->f->conf->policy.freshness_interval_ms);
	w->next_poll_ms =
	    units_now_ms() + (int64_t)w->f->conf->policy.freshness_interval_ms;
	if (w->cycling || w->f->store == NULL)
		return;
	/*
	 * In a cluster only the leader polls, so that the catalogs are read
	 * once per cluster. A node that starts polling (again) starts every
	 * freshness run afresh: what it saw before may be long stale.
	 */
	if (w->f->cluster != NULL && !cluster_is_leader(w->f->cluster)) {
		w->polling = false;
		return;
	}
	if (!w->polling)
		for (i = 0; i < w->nobjs; i++)
			memset(&w->objs[i]->fresh, 0,
			    sizeof(w->objs[i]->fresh));
	w->polling = true;
	/*
	 * Routes, waves and the ledger change only with a new event: with a
	 * million routes, the scan that builds the list is worth skipping.
	 */
	if (store_seq_read(w->f->store, &seq) != STORE_OK || !w->built ||
	    seq != w->built_seq) {
		watch_rebuild(w);
		w->built = true;
		w->built_seq = seq;
	}
	if (w->nobjs == 0)
		return;
	for (i = 0; i < w->nobjs; i++)
		for (s = 0; s < ROUTE_NSIDES; s++)
			w->objs[i]->p[s].known = false;
	w->cycling = true;
	w->next_job = 0;
	watch_poll_more(w);
	if (w->inflight == 0)
		watch_cycle_end(w);
}
