/*
 * floe: request_stream.c -- a catalog's answer passed on as it arrives.
 * An answer that is not whole in the read that brought its head, to a
 * GET from an HTTP/1.1 client, is sent as it comes, each read's bytes at
 * once: a 2xx chunked, the config merged and the URLs rewritten on the
 * way (catalog_stream_run, which also checks it as JSON, in the same
 * pass, when the pool would have: upstream_xfer_check_take; but an
 * answer that is the memo's is compared by the pool, which checks it from
 * its first difference, and passed on with the edits the stream made of
 * the memo's body, a stream taking over at the first difference, or
 * rewritten unchecked: request_memo.c, catalog_edits.c); another,
 * which floe passes on unchanged, with the catalog's Content-Length. A
 * client that does not take it stops floe reading the catalog
 * (upstream_xfer_pause) until its output drains: floe holds about one
 * read per such answer, not the answer. Once the head is sent
 * a failure can no longer be a 502: the answer is cut short (no last
 * chunk, the connection closed), and counted as the catalog's error. The
 * LoadTable cache gets a copy of what was sent, while it fits an entry.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "lib/log.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"
#include "cache/memo.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/etag.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/request_impl.h"
#include "proxy/server.h"
#include "proxy/upstream.h"
#include "proxy/watch.h"
#include "routing/route.h"

/*
 * One answer at a time is copied for the memo, and one for the cache, of
 * a side's table (the memo's key: its target) or cache key (the shared
 * one: an answer kept per client is kept for one client at a time).
 * Loads of a table that arrive together would otherwise each keep a
 * copy of one answer, of which the memo, or the cache, takes one: 32
 * loads of a 1 MB table, 32 MB of copies and fresh pages; a fresh floe's
 * first 32 such loads took 184 to 207 ms each, and 35 to 40 with one.
 */
struct request_claim {
	LIST_ENTRY(request_claim) entry;
	enum route_side side;
	const void *key; /* in the request, which outlives its claim */
	size_t keylen;
	bool held;
};
LIST_HEAD(request_claims, request_claim);

struct request_stream {
	enum route_side side;
	/* The catalog's Content-Length (< 0: none): what copies start at. */
	int64_t body_len;
	struct catalog_stream *cst;
	bool checking; /* cst checks the answer as JSON (not the pool) */
	struct evbuffer *out; /* the client's next bytes */
	/* A copy for the cache: the head and the body as sent. */
	bool copying;
	char *hdrs;
	size_t hlen;
	char etag[ETAG_MAX];
	char *copy;
	size_t copylen, copycap, copymax;
	struct request_claim copier; /* the cache's copy is this one's */
	/*
	 * The memo (request_memo.c): while the answer is the memo's the
	 * pool compares it and checks from its first difference on, and
	 * the rewrite runs unchecked (POOL_CHECKS); the answer is kept as
	 * it passes when the memo will want it (KEEP, KEPT bytes, KEEPCAP
	 * allocated; KEEP_OFF: not kept). TAKEN: bytes passed on.
	 */
	bool pool_checks;
	bool keep_off;
	char *keep;
	size_t kept, keepcap, taken;
	struct request_claim keeping; /* the memo's copy is this one's */
	/*
	 * While it is the memo's, the answer is passed on with the edits a
	 * stream made of the memo's body with the same parameters (EDITS, a
	 * reference; REPLAYING, RP), CST unused; from its first difference
	 * CST takes over (catalog_stream_resume), its input RIN. PARAMS,
	 * PLEN: the rewrite's, as the answer began (the memo's key to them).
	 */
	bool replaying;
	struct catalog_replay rp;
	struct memo_buf *edits;
	struct evbuffer *rin;
	char params[REQUEST_MEMO_PARAMS];
	size_t plen;
};

static bool request_stream_start(struct request *, enum route_side,
    struct h1_msg *);
static void request_stream_give(struct request *, bool);
static void request_stream_fail(struct request *, const char *);
static void request_stream_not_json(struct request *, size_t);
static void request_drain_cb(void *);
static void request_stream_keep(struct request *, struct upstream_xfer *,
    struct evbuffer *);
static bool request_stream_run(struct request *, struct evbuffer *, bool);

static struct request_claims request_keeping =
    LIST_HEAD_INITIALIZER(request_keeping);
static struct request_claims request_copying =
    LIST_HEAD_INITIALIZER(request_copying);

/* Take C for SIDE and KEY in LIST: false when another holds them. */
static bool
request_claim(struct request_claims *list, struct request_claim *c,
    enum route_side side, const void *key, size_t keylen)
{
	struct request_claim *o;

	LIST_FOREACH(o, list, entry)
		if (o->side == side && o->keylen == keylen &&
		    memcmp(o->key, key, keylen) == 0)
			return false;
	c->side = side;
	c->key = key;
	c->keylen = keylen;
	c->held = true;
	LIST_INSERT_HEAD(list, c, entry);
	return true;
}

static void
request_unclaim(struct request_claim *c)
{
	if (c->held)
		LIST_REMOVE(c, entry);
	c->held = false;
}

bool
request_stream_wanted(const struct request *r)
{
	return r->mode != MODE_LIST && r->msg->method == H1_GET &&
	    r->msg->http_minor >= 1 && !r->revalidating;
}

void
request_stream_free(struct request *r)
{
	struct request_stream *st = r->stream;

	if (st == NULL)
		return;
	request_unclaim(&st->keeping);
	request_unclaim(&st->copier);
	catalog_stream_free(st->cst);
	memo_buf_unref(st->edits);
	if (st->rin != NULL)
		evbuffer_free(st->rin);
	evbuffer_free(st->out);
	free(st->hdrs);
	free(st->copy);
	free(st->keep);
	free(st);
	r->stream = NULL;
}

/* M's Content-Length: -1 when it has none, -2 when it is not a number. */
static int64_t
request_stream_clen(const struct h1_msg *m)
{
	const struct h1_header *h;
	unsigned long long v;
	char *end;

	if ((h = h1_get(m, H1_F_CONTENT_LENGTH)) == NULL)
		return -1;
	errno = 0;
	v = strtoull(h->value, &end, 10);
	if (errno != 0 || end != h->value + h->value_len || v > INT64_MAX)
		return -2;
	return (int64_t)v;
}

/*
 * The head of SIDE's answer M is in and its body is arriving: send the
 * head. False when the answer is not to be streamed (one without a body;
 * a URL the rewrite cannot match in pieces): it comes whole.
 */
static bool
request_stream_start(struct request *r, enum route_side side, struct h1_msg *m)
{
	static char hdrs[REQUEST_HDRS_MAX];
	struct floe *f = r->f;
	struct request_stream *st;
	struct catalog_stream *cst;
	char base[REQUEST_FLOE_BASE], *o;
	int64_t clen;
	size_t hlen;

	if (m->status < 200 || m->status == 204 || m->status == 304)
		return false;
	clen = request_stream_clen(m);
	/*
	 * What floe passes on unchanged (an answer that is not a 2xx) goes
	 * with its own Content-Length, or chunked when the catalog chunked
	 * it; a 2xx may be rewritten, which changes its length: chunked.
	 */
	if (m->status > 299) {
		/* A namespace read's 404 sends it to the other side. */
		if (r->mode != MODE_ONE)
			return false;
		cst = NULL;
		if (clen == -2)
			return false;
	} else {
		request_floe_base(r, base, sizeof(base));
		if ((cst = catalog_stream_new(f->cat[side], r->merge_config,
			 f->conf->target[side].uri, base,
			 route_side_name(side))) == NULL)
			return false;
	}
	st = xcalloc(1, sizeof(*st));
	st->side = side;
	/*
	 * The copies the answer may be kept in start at the catalog's length
	 * instead of growing to it by doubling, a copy of all they held and
	 * fresh pages each time.
	 */
	st->body_len = clen;
	st->cst = cst;
	if ((st->out = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	r->stream = st;
	hlen = request_head(r, side, m, hdrs, st->etag);
	o = hdrs + hlen;
	if (r->cacheable) {
		st->copymax = cache_entry_max(f->cache);
		st->copying = m->status == 200 && st->copymax > 0 &&
		    request_claim(&request_copying, &st->copier, side,
			r->ckey[0], r->ckeylen[0]);
		if (st->copying) {
			st->hdrs = xmalloc(hlen);
			memcpy(st->hdrs, hdrs, hlen);
			st->hlen = hlen;
		}
		request_put(&o, "X-Floe-Cache: ", 14);
		request_put(&o, r->cache_state, strlen(r->cache_state));
		request_put(&o, "\r\n", 2);
	}
	/* A 2xx may be rewritten: chunked. */
	server_stream_start(r->conn, m->status, hdrs, o - hdrs,
	    cst != NULL ? -1 : clen);
	server_conn_on_drain(r->conn, request_drain_cb, r);
	return true;
}

/*
 * Give the client what ST->out holds (a copy to the cache first, while
 * it fits an entry). Unless LAST, a client that holds its share pauses
 * the catalog's transfer.
 */
static void
request_stream_give(struct request *r, bool last)
{
	struct request_stream *st = r->stream;
	size_t n = evbuffer_get_length(st->out);

	if (st->copying && st->copylen + n > st->copymax) {
		/* Larger than an entry may be: not stored. */
		st->copying = false;
		free(st->copy);
		st->copy = NULL;
	}
	if (st->copying && n > 0) {
		if (st->copylen + n > st->copycap) {
			/*
			 * The first: room for the catalog's length and an
			 * eighth more (the rewrite changes the length); then
			 * twice as much. Never past an entry: the check above.
			 */
			uint64_t want = st->copy == NULL && st->body_len > 0 ?
			    (uint64_t)st->body_len +
				(uint64_t)st->body_len / 8 :
			    (uint64_t)st->copycap * 2;

			if (want < st->copylen + n)
				want = st->copylen + n;
			st->copycap =
			    want < st->copymax ? (size_t)want : st->copymax;
			st->copy = xreallocarray(st->copy, st->copycap, 1);
		}
		evbuffer_copyout(st->out, st->copy + st->copylen, n);
		st->copylen += n;
	}
	if (!server_stream_add(r->conn, st->out) && !last &&
	    r->x[st->side] != NULL)
		upstream_xfer_pause(r->x[st->side], true);
}

/* The answer is not JSON, from its byte AT on: cut it short. */
static void
request_stream_not_json(struct request *r, size_t at)
{
	char why[128];

	snprintf(why, sizeof(why),
	    "answered 2xx with a body that is not JSON (at byte %zu)", at);
	request_stream_fail(r, why);
}

/* The client took what it held: read the catalog again. */
static void
request_drain_cb(void *arg)
{
	struct request *r = arg;

	if (r->stream != NULL && r->x[r->stream->side] != NULL)
		upstream_xfer_pause(r->x[r->stream->side], false);
}

/*
 * Keep a copy of what BODY holds that is not kept yet, for the memo: once
 * the answer is no longer the memo's (the bytes passed on before it were
 * the memo's: they are copied from it), while the memo wants it and it
 * fits an entry.
 */
static void
request_stream_keep(struct request *r, struct upstream_xfer *x,
    struct evbuffer *body)
{
	struct request_stream *st = r->stream;
	size_t len = evbuffer_get_length(body), n, max;
	struct evbuffer_ptr pos;

	if (st->keep_off || st->cst == NULL)
		return;
	if (st->keep == NULL) {
		/* Equal so far: nothing to keep, perhaps ever. */
		if (upstream_xfer_memo_on(x))
			return;
		if (!request_memo_wants(r, st->side) ||
		    (st->taken > 0 &&
			(r->memo_in == NULL || r->memo_in->len < st->taken)) ||
		    !request_claim(&request_keeping, &st->keeping, st->side,
			r->msg->target, r->msg->target_len)) {
			st->keep_off = true;
			return;
		}
		st->keepcap = st->taken + len > 65536 ? st->taken + len : 65536;
		if (st->body_len > (int64_t)st->keepcap &&
		    (uint64_t)st->body_len <= request_memo_max(r))
			st->keepcap = (size_t)st->body_len;
		st->keep = xmalloc(st->keepcap);
		if (st->taken > 0)
			memcpy(st->keep, r->memo_in->data, st->taken);
		st->kept = st->taken;
	}
	n = st->taken + len - st->kept;
	max = request_memo_max(r);
	if (st->kept + n > max) {
		/* Larger than an entry may be: not kept. */
		st->keep_off = true;
		free(st->keep);
		st->keep = NULL;
		return;
	}
	if (st->kept + n > st->keepcap) {
		st->keepcap = st->keepcap * 2 > st->kept + n ? st->keepcap * 2 :
							       st->kept + n;
		if (st->keepcap > max)
			st->keepcap = max;
		st->keep = xreallocarray(st->keep, st->keepcap, 1);
	}
	if (n == 0)
		return;
	if (evbuffer_ptr_set(body, &pos, st->kept - st->taken,
		EVBUFFER_PTR_SET) == -1 ||
	    evbuffer_copyout_from(body, &pos, st->keep + st->kept, n) !=
		(ev_ssize_t)n)
		fatalx("%s: evbuffer_copyout_from", __func__);
	st->kept += n;
}

/*
 * Rewrite what BODY holds of the answer (END: all that is left) with the
 * stream; at the answer's first difference from the memo's, which was
 * replayed up to here, the stream takes over. False when the answer was
 * found not JSON (R is freed).
 */
static bool
request_stream_run(struct request *r, struct evbuffer *body, bool end)
{
	struct request_stream *st = r->stream;
	struct evbuffer *in = body;

	if (st->replaying) {
		st->replaying = false;
		if ((st->rin = evbuffer_new()) == NULL)
			fatalx("%s: out of memory", __func__);
		catalog_stream_resume(st->cst, st->rin, r->memo_in->data,
		    st->rp.at);
	}
	/* All of BODY is taken: the stream keeps back in its own input. */
	if (st->rin != NULL) {
		evbuffer_add_buffer(st->rin, body);
		in = st->rin;
	}
	if (!catalog_stream_run(st->cst, in, st->out, end)) {
		request_stream_not_json(r, catalog_stream_error_at(st->cst));
		return false;
	}
	return true;
}

/*
 * upstream body_cb: pass on what arrived. The first call decides whether
 * the answer is streamed at all.
 */
void
request_body_cb(struct upstream_xfer *x, struct h1_msg *m, void *arg)
{
	struct request *r = arg;
	enum route_side side =
	    r->x[ROUTE_WAREHOUSE] == x ? ROUTE_WAREHOUSE : ROUTE_LAKEHOUSE;
	struct request_stream *st;
	struct jscheck js;
	size_t len, at, checked;

	if (r->stream == NULL) {
		if (r->stream_off)
			return;
		if (!request_stream_start(r, side, m)) {
			r->stream_off = true;
			return;
		}
	}
	/* Nothing of a read that holds the wrong byte is passed on. */
	if (upstream_xfer_json_failed(x, &at)) {
		request_stream_not_json(r, at);
		return;
	}
	/*
	 * A rewritten answer is checked by the rewrite, in the same pass,
	 * from where the pool's check is (what arrived so far, untaken);
	 * but while it is the memo's, the pool compares it and checks it
	 * from its first difference on (each read before it gets here),
	 * and the rewrite runs unchecked: the cheaper, as long as the
	 * answer does not change.
	 */
	st = r->stream;
	len = evbuffer_get_length(m->body);
	if (st->cst != NULL && !st->checking && !st->pool_checks) {
		st->edits =
		    request_memo_stream_edits(r, side, st->params, &st->plen);
		if (upstream_xfer_memo_on(x)) {
			st->pool_checks = true;
			st->replaying = st->edits != NULL &&
			    catalog_replay_init(&st->rp, st->edits->data,
				st->edits->len, r->memo_in);
		} else if (upstream_xfer_check_take(x, &js, &checked)) {
			catalog_stream_check(st->cst,
			    checked == len ? &js : NULL);
			st->checking = true;
		}
	}
	request_stream_keep(r, x, m->body);
	if (st->replaying && upstream_xfer_memo_on(x))
		catalog_replay_run(&st->rp, m->body, st->out, st->taken + len,
		    false);
	else if (st->cst != NULL) {
		if (!request_stream_run(r, m->body, false))
			return;
	} else
		evbuffer_add_buffer(st->out, m->body);
	st->taken += len - evbuffer_get_length(m->body);
	upstream_xfer_taken(x, len - evbuffer_get_length(m->body));
	request_stream_give(r, false);
}

/*
 * The catalog's answer cannot be finished (it failed, or is not JSON)
 * after its head was sent: cut the client's answer short, and count a
 * 502 from that side, as the access log and the error trigger see it.
 */
static void
request_stream_fail(struct request *r, const char *why)
{
	struct floe *f = r->f;
	enum route_side side = r->stream->side;

	log_warnx("%s %.*s: %s catalog failed in the middle of its answer, "
		  "which was cut short: %s",
	    r->msg->method_name, (int)r->rr.rest.len,
	    r->msg->target + r->rr.rest.off, route_side_name(side), why);
	f->stats.side[side].failures++;
	request_count_read(r, side, true);
	request_log_access(r, 502, route_side_name(side));
	f->stats.requests++;
	server_stream_abort(r->conn);
	request_free(r);
}

/* The streamed answer's transfer X ended: finish it, or cut it short. */
void
request_stream_done(struct request *r, struct upstream_xfer *x)
{
	struct request_stream *st = r->stream;
	struct h1_msg *m = upstream_xfer_msg(x);
	struct floe *f = r->f;
	struct evbuffer *copy;
	size_t at;

	if (m == NULL) {
		request_stream_fail(r, upstream_xfer_error(x));
		return;
	}
	if (upstream_xfer_json(x, &at) == 0) {
		request_stream_not_json(r, at);
		return;
	}
	if (!upstream_xfer_memo_hit(x))
		request_stream_keep(r, x, m->body);
	if (st->replaying && upstream_xfer_memo_hit(x)) {
		catalog_replay_run(&st->rp, m->body, st->out,
		    st->taken + evbuffer_get_length(m->body), true);
		request_memo_streamed(r, st->side, true, NULL, 0, st->params,
		    st->plen, NULL);
	} else if (st->cst != NULL) {
		if (!request_stream_run(r, m->body, true))
			return;
		/* JSON: checked by the rewrite, or by the pool. */
		if (st->checking || upstream_xfer_json(x, NULL) == 1) {
			request_memo_streamed(r, st->side,
			    upstream_xfer_memo_hit(x),
			    st->keep_off ? NULL : st->keep, st->kept,
			    st->params, st->plen, st->cst);
			st->keep = NULL;
		}
	} else
		evbuffer_add_buffer(st->out, m->body);
	request_stream_give(r, true);
	if (st->copying && st->copylen > 0) {
		if ((copy = evbuffer_new()) == NULL)
			fatalx("%s: out of memory", __func__);
		if (st->copylen > 0)
			evbuffer_add_reference(copy, st->copy, st->copylen,
			    NULL, NULL);
		request_cache_store(r, m, st->hdrs, st->hlen, copy, st->etag);
		evbuffer_free(copy);
	}
	if (m->status >= 500)
		f->stats.side[st->side].errors_5xx++;
	/* The error trigger counts table reads of assigned waves (4xx: ok). */
	request_count_read(r, st->side, m->status >= 500);
	request_log_access(r, m->status, route_side_name(st->side));
	f->stats.requests++;
	server_stream_end(r->conn);
	request_free(r);
}
