/*
 * floe: admin_evidence.c -- the gates' evidence of a wave, read from the
 * ledger for its objects and the tables its rules cover, their verdicts
 * (policy/gate.c decides), and GET /eligibility, which shows both gates,
 * when a frozen wave may retire, and the open mismatches by bucket.
 */
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
#include "policy/gate.h"
#include "proxy/admin_impl.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/inventory.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

static void admin_evidence_add(struct admin_evidence *,
    const struct route_obj *);
static int admin_evidence_route_cb(const void *, size_t, void *);
static int admin_evidence_ledger_cb(const void *, size_t, void *);
static int admin_evidence_rec_cb(int64_t, const void *, size_t, void *);
static json_t *admin_triage_json(const struct admin_evidence *, const size_t *,
    size_t);
static json_t *admin_evidence_sel_json(const struct admin_evidence *, bool,
    const size_t *, size_t);
static int admin_evidence_cmp(const void *, const void *, void *);
static size_t *admin_evidence_order(const struct admin_evidence *);
struct admin_elig_head;
static json_t *admin_elig_page_json(const struct admin_elig_head *,
    const struct admin_evidence *, const size_t *, size_t, size_t, bool);
static void admin_elig_ahead(const struct admin_elig_head *,
    const struct admin_evidence *, const size_t *, size_t, size_t,
    struct evbuffer *);
static json_t *admin_eligibility_wave(struct admin_req *, uint32_t, size_t,
    const struct route_obj *, struct evbuffer *);
static bool admin_elig_kept_answer(struct admin_req *, uint32_t, size_t,
    const char *);
static void admin_eligibility_run(struct admin_req *, struct evbuffer *);

/* The effective policy: floe.conf's [policy] (conf.c has its defaults). */
void
admin_policy(const struct admin_req *r, struct gate_params *p,
    uint64_t *grace_ms)
{
	const struct conf_policy *cp = &r->f->conf->policy;

	p->min_clean = cp->gate_min_clean;
	p->window_ms = (int64_t)cp->gate_window_ms;
	p->decom_min_clean = cp->decommission_min_clean;
	if (grace_ms != NULL)
		*grace_ms = cp->grace_ms;
}

/* Free what admin_evidence gathered. */
void
admin_evidence_clear(struct admin_evidence *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		free(e->names[i]);
	free(e->names);
	free(e->keys);
	free(e->cut);
	free(e->dec);
	free(e->recs);
	memset(e, 0, sizeof(*e));
}

/* Add OBJ (an object, or a rule with no tables) to the wave's list. */
static void
admin_evidence_add(struct admin_evidence *e, const struct route_obj *obj)
{
	char text[STORE_KEY_MAX * 3 + 8];

	if (e->n == e->cap) {
		e->cap = e->cap != 0 ? e->cap * 2 : 16;
		e->names = xreallocarray(e->names, e->cap, sizeof(*e->names));
		e->keys = xreallocarray(e->keys, e->cap, sizeof(*e->keys));
		e->cut = xreallocarray(e->cut, e->cap, sizeof(*e->cut));
		e->dec = xreallocarray(e->dec, e->cap, sizeof(*e->dec));
	}
	route_obj_format(obj, text, sizeof(text));
	e->names[e->n] = xstrdup(text);
	e->keys[e->n] = *obj;
	memset(&e->cut[e->n], 0, sizeof(e->cut[e->n]));
	memset(&e->dec[e->n], 0, sizeof(e->dec[e->n]));
	e->n++;
}

/* Collect the objects and rules routed to wave E->wave. */
static int
admin_evidence_route_cb(const void *key, size_t keylen, void *arg)
{
	struct admin_evidence *e = arg;
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	admin_evidence_add(e, &obj);
	return 0;
}

/*
 * A table found in the ledger under a rule of the wave: it belongs to the
 * wave if it resolves to it through exactly that rule.
 */
static int
admin_evidence_ledger_cb(const void *key, size_t keylen, void *arg)
{
	struct admin_evidence *e = arg;
	struct route_result res;
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1 || obj.rule)
		return 0;
	if (route_resolve(e->st, &obj, 0, &res) == -1) {
		e->failed = true;
		return 1;
	}
	if (res.assigned && res.why == ROUTE_WHY_RULE && res.wave == e->wave &&
	    res.matched.len == e->rule->len &&
	    memcmp(res.matched.key, e->rule->key, e->rule->len) == 0) {
		admin_evidence_add(e, &obj);
		e->found++;
	}
	return 0;
}

/* Keep one ledger record of the object being read. */
static int
admin_evidence_rec_cb(int64_t ts, const void *val, size_t len, void *arg)
{
	struct admin_evidence *e = arg;
	struct ledger_rec *rec;

	if (e->nrecs == e->rcap) {
		e->rcap = e->rcap != 0 ? e->rcap * 2 : 64;
		e->recs = xreallocarray(e->recs, e->rcap, sizeof(*e->recs));
	}
	rec = &e->recs[e->nrecs];
	rec->ts_ms = ts;
	if (ledger_decode(val, len, rec) == -1) {
		log_warnx("%s: skipping a damaged ledger record", __func__);
		return 0;
	}
	e->nrecs++;
	return 0;
}

/*
 * Gather wave N's evidence (W is its record): its objects -- its own
 * tables, and for each rule the tables of the ledger that resolve to the
 * wave through it (a rule without any stands for itself, with no
 * records) -- and for each the cutover and decommission evidence. 0, or -1
 * on a store error.
 */
int
admin_evidence(struct admin_req *r, uint32_t n, const struct store_wave *w,
    struct admin_evidence *e)
{
	struct route_obj *rules = NULL, sub;
	struct gate_params *p = &e->p;
	size_t i, nrules = 0, nown;
	int64_t from;
	int k;

	memset(e, 0, sizeof(*e));
	e->wave = n;
	e->st = r->st;
	admin_policy(r, &e->defaults, NULL);
	gate_params_for(&e->defaults, w->gate_min_clean, w->gate_window_ms, p);
	if (store_wave_routes(r->st, n, NULL, 0, admin_evidence_route_cb, e) <
	    0)
		goto fail;
	/* Take the rules out; their tables take their place. */
	for (i = 0, nown = 0; i < e->n; i++) {
		if (e->keys[i].rule) {
			rules =
			    xreallocarray(rules, nrules + 1, sizeof(*rules));
			rules[nrules++] = e->keys[i];
			free(e->names[i]);
			continue;
		}
		e->names[nown] = e->names[i];
		e->keys[nown] = e->keys[i];
		nown++;
	}
	e->n = nown;
	for (i = 0; i < nrules; i++) {
		e->rule = &rules[i];
		e->found = 0;
		/* The namespace's own tables, then those of its children. */
		for (k = 0; k < 2; k++) {
			sub = rules[i];
			sub.key[sub.len - 1] =
			    k == 0 ? ROUTE_SEP_TABLE : ROUTE_SEP_LEVEL;
			if (store_ledger_objects(r->st, sub.key, sub.len,
				admin_evidence_ledger_cb, e) < 0 ||
			    e->failed)
				goto fail;
		}
		if (e->found == 0)
			admin_evidence_add(e, &rules[i]);
	}
	free(rules);
	rules = NULL;

	for (i = 0; i < e->n; i++) {
		e->nrecs = 0;
		from = r->now_ms - p->window_ms;
		if (w->flipped_ms != 0 && w->flipped_ms + 1 < from)
			from = w->flipped_ms + 1;
		if (!e->keys[i].rule &&
		    store_ledger_foreach(r->st, e->keys[i].key, e->keys[i].len,
			from, INT64_MAX, admin_evidence_rec_cb, e) < 0)
			goto fail;
		gate_cutover(e->recs, e->nrecs, p, r->now_ms, &e->cut[i]);
		/* Before any flip nothing counts for the decommission gate. */
		gate_decommission(e->recs, w->flipped_ms != 0 ? e->nrecs : 0, p,
		    w->flipped_ms, &e->dec[i]);
	}
	return 0;
fail:
	free(rules);
	admin_evidence_clear(e);
	return -1;
}

/*
 * The verdict of one gate over E into G (its sentence in MSG), with the
 * evidence as JSON: every object (ALL) or only the blocking ones.
 */
bool
admin_verdict(const struct admin_evidence *e, bool decom, const char *signoff,
    char *msg, size_t msglen)
{
	struct gate_item *items;
	size_t i;
	bool pass;

	items = xcalloc(e->n != 0 ? e->n : 1, sizeof(*items));
	for (i = 0; i < e->n; i++) {
		items[i].name = e->names[i];
		items[i].ev = decom ? e->dec[i] : e->cut[i];
	}
	pass = gate_verdict(decom, e->wave, &e->p, items, e->n, signoff, msg,
	    msglen);
	free(items);
	return pass;
}

/* The evidence of one gate as a JSON array; only the blocking ones if
 * ONLY_BLOCKING. */
json_t *
admin_evidence_json(const struct admin_evidence *e, bool decom,
    bool only_blocking)
{
	const struct gate_obj *o;
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < e->n; i++) {
		o = decom ? &e->dec[i] : &e->cut[i];
		if (only_blocking && o->pass)
			continue;
		json_array_append_new(a, gate_obj_json(e->names[i], o));
	}
	return a;
}

/*
 * The open mismatches of E's objects SEL (N of them, indexes into E) by
 * bucket, each with what to do.
 */
static json_t *
admin_triage_json(const struct admin_evidence *e, const size_t *sel, size_t n)
{
	const struct gate_obj *o;
	json_t *triage, *list;
	unsigned b;
	size_t j, i;

	triage = json_array();
	for (b = 1; b < LEDGER_NBUCKETS; b++) {
		list = json_array();
		for (j = 0; j < n; j++) {
			i = sel[j];
			o = &e->cut[i];
			if (o->open == 0 || o->open_bucket != b)
				continue;
			json_array_append_new(list,
			    json_pack("{s:s,s:i,s:o}", "object", e->names[i],
				"records", o->open, "since",
				admin_time_json(o->open_since_ms)));
		}
		if (json_array_size(list) == 0) {
			json_decref(list);
			continue;
		}
		json_array_append_new(triage,
		    json_pack("{s:s,s:s,s:o}", "bucket", ledger_bucket_name(b),
			"action", ledger_bucket_action(b), "objects", list));
	}
	return triage;
}

/* The evidence of one gate for E's objects SEL (N of them), as JSON. */
static json_t *
admin_evidence_sel_json(const struct admin_evidence *e, bool decom,
    const size_t *sel, size_t n)
{
	json_t *a = json_array();
	size_t j;

	for (j = 0; j < n; j++)
		json_array_append_new(a,
		    gate_obj_json(e->names[sel[j]],
			decom ? &e->dec[sel[j]] : &e->cut[sel[j]]));
	return a;
}

/* Order E's objects (ARG) by key, as the store orders routes. */
static int
admin_evidence_cmp(const void *a, const void *b, void *arg)
{
	const struct admin_evidence *e = arg;
	const struct route_obj *x = &e->keys[*(const size_t *)a],
			       *y = &e->keys[*(const size_t *)b];

	return store_key_cmp(x->key, x->len, y->key, y->len);
}

/* E's objects in key order: their indexes into E. Caller frees. */
static size_t *
admin_evidence_order(const struct admin_evidence *e)
{
	size_t *order, i;

	order = xreallocarray(NULL, e->n != 0 ? e->n : 1, sizeof(*order));
	for (i = 0; i < e->n; i++)
		order[i] = i;
	if (e->n > 1)
		qsort_r(order, e->n, sizeof(*order), admin_evidence_cmp,
		    (void *)(uintptr_t)e);
	return order;
}

/* What every page of a wave's eligibility says besides its objects. */
struct admin_elig_head {
	uint32_t n;
	struct store_wave w;
	bool cpass, dpass, rpass;
	char cmsg[1024], dmsg[1024], rmsg[256], smsg[1024];
	char dur[32], grace[32], ends[40];
	json_t *stale;
};

/*
 * The page of the objects SEL (NSEL of them) of E, H saying the rest:
 * with LIMIT (0: none), "next" (null: MORE is false). Caller frees.
 */
static json_t *
admin_elig_page_json(const struct admin_elig_head *h,
    const struct admin_evidence *ev, const size_t *sel, size_t nsel,
    size_t limit, bool more)
{
	json_t *j;

	j = json_pack("{s:I,s:s,s:i,s:{s:b,s:i,s:s,s:b,s:s,s:o},"
		      "s:{s:b,s:i,s:o,s:o,s:s,s:o},s:{s:b,s:s,s:o,s:s},s:o}",
	    "wave", (json_int_t)h->n, "state", wave_state_name(h->w.state),
	    "pct", h->w.pct, "cutover", "pass", h->cpass, "min_clean",
	    ev->p.min_clean, "window", h->dur, "off", ev->p.min_clean == 0,
	    "message", h->cmsg, "objects",
	    admin_evidence_sel_json(ev, false, sel, nsel), "decommission",
	    "pass", h->dpass, "min_clean", ev->p.decom_min_clean, "after",
	    admin_time_json(h->w.flipped_ms), "signoff",
	    admin_str_json(h->w.signoff), "message", h->dmsg, "objects",
	    admin_evidence_sel_json(ev, true, sel, nsel), "retire", "pass",
	    h->rpass, "grace", h->grace, "grace_ends",
	    h->w.state == WAVE_FROZEN ? json_string(h->ends) : json_null(),
	    "message", h->rmsg, "triage", admin_triage_json(ev, sel, nsel));
	json_object_set_new(json_object_get(j, "decommission"), "stale_readers",
	    h->stale != NULL ? json_deep_copy(h->stale) : json_array());
	json_object_set_new(json_object_get(j, "decommission"), "readers",
	    h->smsg[0] != '\0' ? json_string(h->smsg) : json_null());
	json_object_set_new(j, "objects_total",
	    json_integer((json_int_t)ev->n));
	if (limit > 0)
		json_object_set_new(j, "next",
		    more ? json_string(ev->names[sel[nsel - 1]]) : json_null());
	return j;
}

/*
 * The pages after the first, into AHEAD for the loop to answer the next
 * requests with (admin_elig_keep): [wave u32][limit u32], then per page
 * [after length u32][after][body length u32][body], AFTER the name of
 * the page's last object before it. At most ADMIN_ELIGIBLE_AHEAD bytes.
 */
static void
admin_elig_ahead(const struct admin_elig_head *h,
    const struct admin_evidence *ev, const size_t *order, size_t from,
    size_t limit, struct evbuffer *ahead)
{
	uint32_t u[2] = { h->n, (uint32_t)limit };
	size_t nsel;
	json_t *j;
	char *s;

	evbuffer_add(ahead, u, sizeof(u));
	while (
	    from < ev->n && evbuffer_get_length(ahead) < ADMIN_ELIGIBLE_AHEAD) {
		nsel = ev->n - from < limit ? ev->n - from : limit;
		j = json_pack("{s:[o]}", "waves",
		    admin_elig_page_json(h, ev, order + from, nsel, limit,
			from + nsel < ev->n));
		s = j != NULL ? json_dumps(j, ADMIN_JSON_FLAGS) : NULL;
		json_decref(j);
		if (s == NULL)
			break;
		u[0] = (uint32_t)strlen(ev->names[order[from - 1]]);
		u[1] = (uint32_t)strlen(s);
		evbuffer_add(ahead, &u[0], sizeof(u[0]));
		evbuffer_add(ahead, ev->names[order[from - 1]], u[0]);
		evbuffer_add(ahead, &u[1], sizeof(u[1]));
		evbuffer_add(ahead, s, u[1]);
		free(s);
		from += nsel;
	}
}

/*
 * The eligibility of one wave: both gates' verdicts (over all its
 * objects) and the evidence and triage of its objects in key order --
 * with LIMIT (0: none), a page of them after AFTER (NULL: from the
 * first) and "next", the one to ask after (null: the last page). With
 * AHEAD (not NULL), the pages that follow go there too: the evidence is
 * read once per wave, not once per page.
 */
static json_t *
admin_eligibility_wave(struct admin_req *r, uint32_t n, size_t limit,
    const struct route_obj *after, struct evbuffer *ahead)
{
	struct admin_elig_head h;
	struct admin_evidence ev;
	struct gate_params gp;
	size_t *order, from = 0, nsel;
	uint64_t grace_ms;
	json_t *j;

	memset(&h, 0, sizeof(h));
	h.n = n;
	if (admin_wave_state(r, n, &h.w, NULL) == -1)
		return NULL;
	if (admin_evidence(r, n, &h.w, &ev) == -1) {
		admin_error(r, 500, "store error reading the ledger");
		return NULL;
	}
	h.cpass =
	    admin_verdict(&ev, false, h.w.signoff, h.cmsg, sizeof(h.cmsg));
	h.dpass = admin_verdict(&ev, true, h.w.signoff, h.dmsg, sizeof(h.dmsg));
	/* The stale readers a freeze would wait for (decommission_readers). */
	switch (admin_readers_gate(r, &ev, &h.w, h.smsg, sizeof(h.smsg),
	    &h.stale)) {
	case -1:
		admin_evidence_clear(&ev);
		return NULL;
	case 1:
		h.dpass = false;
		break;
	}
	units_format_duration((uint64_t)ev.p.window_ms, h.dur, sizeof(h.dur));

	/* Retire, as wave_retire decides it: frozen and the grace over. */
	admin_policy(r, &gp, &grace_ms);
	units_format_duration(grace_ms, h.grace, sizeof(h.grace));
	units_time_format(wave_grace_ends(&h.w, grace_ms), h.ends,
	    sizeof(h.ends));
	h.rpass = h.w.state == WAVE_FROZEN &&
	    r->now_ms >= wave_grace_ends(&h.w, grace_ms);
	if (h.w.state != WAVE_FROZEN)
		snprintf(h.rmsg, sizeof(h.rmsg),
		    "wave %u is %s: only a frozen wave can retire", n,
		    wave_state_name(h.w.state));
	else if (h.rpass)
		snprintf(h.rmsg, sizeof(h.rmsg),
		    "wave %u: the grace period (%s) ended %s: it can retire", n,
		    h.grace, h.ends);
	else
		snprintf(h.rmsg, sizeof(h.rmsg),
		    "wave %u is in its grace period (%s) until %s: it can "
		    "retire after that",
		    n, h.grace, h.ends);

	order = admin_evidence_order(&ev);
	if (after != NULL)
		while (from < ev.n &&
		    store_key_cmp(ev.keys[order[from]].key,
			ev.keys[order[from]].len, after->key, after->len) <= 0)
			from++;
	nsel = ev.n - from;
	if (limit > 0 && nsel > limit)
		nsel = limit;
	j = admin_elig_page_json(&h, &ev, order + from, nsel, limit,
	    from + nsel < ev.n);
	if (ahead != NULL && limit > 0 && from + nsel < ev.n)
		admin_elig_ahead(&h, &ev, order, from + nsel, limit, ahead);
	free(order);
	json_decref(h.stale);
	admin_evidence_clear(&ev);
	return j;
}

/*
 * The pages a child read ahead (admin_elig_ahead's), kept by the loop for
 * ADMIN_ELIGIBLE_KEEP_MS while the store's sequence stays SEQ: the next
 * page floectl asks for is answered from here, at once. One wave's.
 */
static struct admin_elig_kept {
	const struct floe *f;
	uint32_t wave;
	uint32_t limit;
	uint64_t seq;
	int64_t at_ms;
	unsigned char *buf; /* the pages, as admin_elig_ahead wrote them */
	size_t len;
	size_t off; /* the next page's */
} admin_elig_kept;

void
admin_elig_keep(const struct floe *f, uint64_t seq, const void *buf, size_t len)
{
	struct admin_elig_kept *k = &admin_elig_kept;
	uint32_t u[2];

	free(k->buf);
	memset(k, 0, sizeof(*k));
	if (len < sizeof(u))
		return;
	memcpy(u, buf, sizeof(u));
	k->f = f;
	k->wave = u[0];
	k->limit = u[1];
	k->seq = seq;
	k->at_ms = units_now_ms();
	k->buf = xmalloc(len);
	memcpy(k->buf, buf, len);
	k->len = len;
	k->off = sizeof(u);
}

/*
 * Answer R (wave N, LIMIT, AFTER as the client wrote it) with the next
 * page kept, if it is that one and still true. Whether it did.
 */
static bool
admin_elig_kept_answer(struct admin_req *r, uint32_t n, size_t limit,
    const char *after)
{
	struct admin_elig_kept *k = &admin_elig_kept;
	uint32_t alen, blen;
	char *body;

	if (k->buf == NULL || k->f != r->f || k->wave != n ||
	    k->limit != limit || r->f->store == NULL ||
	    store_last_seq(r->f->store) != k->seq ||
	    r->now_ms - k->at_ms > ADMIN_ELIGIBLE_KEEP_MS ||
	    k->len - k->off < sizeof(alen))
		return false;
	memcpy(&alen, k->buf + k->off, sizeof(alen));
	if (k->len - k->off - sizeof(alen) < (size_t)alen + sizeof(blen) ||
	    strlen(after) != alen ||
	    memcmp(k->buf + k->off + sizeof(alen), after, alen) != 0)
		return false;
	memcpy(&blen, k->buf + k->off + sizeof(alen) + alen, sizeof(blen));
	if (k->len - k->off - sizeof(alen) - alen - sizeof(blen) < blen)
		return false;
	body = xmalloc((size_t)blen + 1);
	memcpy(body, k->buf + k->off + sizeof(alen) + alen + sizeof(blen),
	    blen);
	body[blen] = '\0';
	k->off += sizeof(alen) + alen + sizeof(blen) + blen;
	if (k->off >= k->len)
		admin_elig_keep(NULL, 0, NULL, 0);
	free(r->reply->body);
	r->reply->status = 200;
	r->reply->content_type = ADMIN_CT_JSON;
	r->reply->body = body;
	r->reply->len = blen;
	return true;
}

/*
 * GET /eligibility[?wave=N][&limit=L][&after=OBJECT]: the gates' evidence
 * for one wave or all. With a limit, each wave's objects come L at a
 * time in key order with "next" (after= only with wave=): an answer the
 * size of a page, not of a million tables. It reads each wave's routes
 * and the ledger of each object: on a large store, seconds. The worker's
 * child does it, so that the loop goes on serving engine requests.
 */
void
admin_eligibility(struct admin_req *r)
{
	unsigned long wave, limit;
	char *w = NULL, *l = NULL, *a = NULL, *end;
	bool kept = false;

	/* The next page of a wave read ahead: no child, no evidence read. */
	if (admin_query_get(r, "wave", &w) == 1 &&
	    admin_query_get(r, "limit", &l) == 1 &&
	    admin_query_get(r, "after", &a) == 1) {
		wave = strtoul(w, &end, 10);
		if (*w != '\0' && *end == '\0' && wave <= UINT32_MAX) {
			limit = strtoul(l, &end, 10);
			kept = *l != '\0' && *end == '\0' &&
			    admin_elig_kept_answer(r, (uint32_t)wave,
				(size_t)limit, a);
		}
	}
	free(w);
	free(l);
	free(a);
	if (kept)
		return;
	/* The stale readers the child reads: what was noted until now. */
	(void)inventory_flush(r->f->inv);
	admin_job_read(r, admin_eligibility_run);
}

/* admin_eligibility's work, in the worker's child (or at once). */
static void
admin_eligibility_run(struct admin_req *r, struct evbuffer *alarms __unused)
{
	struct admin_wave_list l;
	struct route_obj after;
	unsigned long long limit = 0;
	json_t *list, *one;
	uint32_t n;
	char *v = NULL;
	size_t i;
	bool has_after;

	if (admin_query_uint(r, "limit", 1, ADMIN_ELIGIBLE_MAX, NULL, &limit) ==
		-1 ||
	    admin_query_object(r, "after", &after, &has_after) == -1)
		return;
	list = json_array();
	if (admin_query_get(r, "wave", &v) == 1) {
		if (admin_parse_wave(r, v, &n) == -1) {
			free(v);
			json_decref(list);
			return;
		}
		free(v);
		if ((one = admin_eligibility_wave(r, n, (size_t)limit,
			 has_after ? &after : NULL, r->ahead)) == NULL) {
			json_decref(list);
			return;
		}
		json_array_append_new(list, one);
	} else {
		free(v);
		if (has_after) {
			json_decref(list);
			admin_error(r, 400,
			    "after names an object of one wave: give wave too");
			return;
		}
		if (admin_waves_collect(r->st, &l) == -1) {
			json_decref(list);
			admin_error(r, 500, "store error listing waves");
			return;
		}
		for (i = 0; i < l.len; i++) {
			if ((one = admin_eligibility_wave(r, l.v[i].n,
				 (size_t)limit, NULL, NULL)) == NULL) {
				free(l.v);
				json_decref(list);
				return;
			}
			json_array_append_new(list, one);
		}
		free(l.v);
	}
	admin_reply_json(r, 200, json_pack("{s:o}", "waves", list));
}
