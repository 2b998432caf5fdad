/*
 * floe: upstream_body.c -- what the pool learns from an answer's body as
 * each read adds to it, so that nothing has to go over a large answer
 * again at its end, holding the loop: whether it names the catalog's uri
 * (the rewrite's cue) and, for an answer floe must vouch for, whether it
 * is JSON (lib/jscheck.c, resumed read after read; while it is the
 * memo's body, compared instead: cache/memo.h); and, for an answer
 * passed on as it arrives, what its taker took, and its pauses while the
 * client does not take it. Also what a transfer ended with: its failure,
 * its error text, its time.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "lib/log.h"
#include "lib/memfind.h"
#include "lib/units.h"
#include "cache/memo.h"
#include "proxy/conf.h"
#include "proxy/h1.h"
#include "proxy/server.h"
#include "proxy/tlsctx.h"
#include "proxy/upstream.h"
#include "proxy/upstream_impl.h"

static void upstream_watch(struct upstream_xfer *, struct evbuffer *, size_t);
static void upstream_check(struct upstream_xfer *, struct h1_msg *, size_t,
    bool);

/* The body's length is read once, for both. */
void
upstream_body(struct upstream_xfer *x, struct h1_msg *m, bool end)
{
	size_t len = evbuffer_get_length(m->body);

	upstream_watch(x, m->body, len);
	if (x->check)
		upstream_check(x, m, len, end);
}

/*
 * Search what BODY (LEN bytes) gained since the last read for the
 * catalog's uri, once
 * it is past UPSTREAM_WATCH_FROM: the search of a large answer is spread
 * over its reads instead of held up at its end. The N - 1 bytes before
 * the new ones are searched again, for a match across the seam; so are
 * those before each batch of pieces. Pieces too small for a seam window
 * give up (the caller searches the whole body at the end).
 */
static void
upstream_watch(struct upstream_xfer *x, struct evbuffer *body, size_t len)
{
	struct evbuffer_iovec v[8];
	struct evbuffer_ptr pos;
	const char *uri = x->u->t->uri;
	size_t n = x->u->t->uri_len, from;
	size_t start;
	char seam[1024];
	int i, nv;

	if (x->has_uri || x->watch_off || len < UPSTREAM_WATCH_FROM)
		return;
	if (n == 0 || n > sizeof(seam) / 2) {
		x->watch_off = true;
		return;
	}
	from = x->watched > n - 1 ? x->watched - (n - 1) : 0;
	x->watched = len;
	while (from < len) {
		start = from;
		if (evbuffer_ptr_set(body, &pos, from, EVBUFFER_PTR_SET) ==
			-1 ||
		    (nv = evbuffer_peek(body, len - from, &pos, v, nitems(v))) <
			1) {
			x->watch_off = true;
			return;
		}
		if (nv > (int)nitems(v))
			nv = nitems(v);
		for (i = 0; i < nv; i++) {
			if (memfind(v[i].iov_base, v[i].iov_len, uri, n) !=
			    NULL) {
				x->has_uri = true;
				return;
			}
			from += v[i].iov_len;
			if (i + 1 == nv)
				break;
			if (v[i].iov_len < n - 1 || v[i + 1].iov_len < n - 1) {
				x->watch_off = true;
				return;
			}
			memcpy(seam,
			    (char *)v[i].iov_base + v[i].iov_len - (n - 1),
			    n - 1);
			memcpy(seam + n - 1, v[i + 1].iov_base, n - 1);
			if (memfind(seam, 2 * (n - 1), uri, n) != NULL) {
				x->has_uri = true;
				return;
			}
		}
		/* The next batch starts N - 1 bytes back: its first seam. */
		if (from < len) {
			if (from - start <= n - 1) {
				x->watch_off = true;
				return;
			}
			from -= n - 1;
		}
	}
}

int
upstream_xfer_has_uri(const struct upstream_xfer *x)
{
	if (x->watch_off || x->watched < UPSTREAM_WATCH_FROM)
		return -1;
	return x->has_uri;
}

/*
 * Feed the JSON check what M's body (LEN bytes) gained since the last
 * read, a piece at a time where it lies (no copy): a 2xx answer's, once
 * its head is in (the status of a 1xx is never checked: it has no body).
 * Once it fails, the rest is not looked at. While the body is the memo's, its
 * bytes are compared instead; with END, the verdict is taken (a body equal to
 * the memo's, to its last byte, is JSON as the memo's was).
 */
static void
upstream_check(struct upstream_xfer *x, struct h1_msg *m, size_t len, bool end)
{
	struct evbuffer_iovec v[16];
	struct evbuffer_ptr pos;
	size_t take;
	int i, nv;

	if (m->status < 200 || m->status > 299)
		return;
	while (x->checked < len) {
		/* From the start (the whole body at once, nearly always). */
		if ((x->checked > 0 &&
			evbuffer_ptr_set(m->body, &pos, x->checked,
			    EVBUFFER_PTR_SET) == -1) ||
		    (nv = evbuffer_peek(m->body, len - x->checked,
			 x->checked > 0 ? &pos : NULL, v, nitems(v))) < 1) {
			x->check = false; /* not checked: the caller does */
			return;
		}
		if (nv > (int)nitems(v))
			nv = nitems(v);
		for (i = 0; i < nv && x->checked < len; i++) {
			take = v[i].iov_len < len - x->checked ?
			    v[i].iov_len :
			    len - x->checked;
			x->checked += take;
			/* Wrong: the rest need not be looked at. */
			if (!memo_cmp_feed(&x->mc, &x->jsc, v[i].iov_base,
				take))
				x->checked = len;
		}
	}
	if (!end)
		return;
	if (memo_cmp_end(&x->mc, &x->jsc)) {
		x->memo_hit = true;
		x->json = 1;
		return;
	}
	x->json = jscheck_end(&x->jsc, &x->json_at) ? 1 : 0;
	if (x->json == 0)
		log_debug("%s: %s: the answer is not JSON at byte %zu",
		    __func__, x->u->name, x->json_at);
}

bool
upstream_xfer_memo_hit(const struct upstream_xfer *x)
{
	return x->memo_hit;
}

bool
upstream_xfer_memo_on(const struct upstream_xfer *x)
{
	return x->check && x->mc.memo != NULL;
}

int
upstream_xfer_json(const struct upstream_xfer *x, size_t *at)
{
	if (x->json == 0 && at != NULL)
		*at = x->json_at;
	return x->json;
}

void
upstream_xfer_taken(struct upstream_xfer *x, size_t n)
{
	struct upstream *u = x->u;
	struct upstream_xfer *w;

	/*
	 * Every byte taken was checked (or compared: the comparison counts
	 * its own offsets): the check's count follows.
	 */
	x->checked = x->checked > n ? x->checked - n : 0;
	/* The taker searches for the uri itself. */
	x->watch_off = true;
	if (x->streaming)
		return;
	/* Its slot is lent to a waiting request. */
	x->streaming = true;
	u->nstreaming++;
	while (u->nwaiting > 0 && upstream_has_slot(u) &&
	    (w = upstream_dequeue(u)) != NULL)
		upstream_start(u, w);
}

void
upstream_xfer_pause(struct upstream_xfer *x, bool on)
{
	struct upconn *c = x->c;
	struct upstream *u = x->u;
	struct upstream_xfer *w;

	if (c == NULL || !c->connected || x->paused == on)
		return;
	/*
	 * Requests wait and no connection can be lent: read on, while the
	 * budget allows, so that this one frees up.
	 */
	if (on && u->nwaiting > 0 &&
	    u->nconns >= u->t->max_conns * UPSTREAM_PAUSED_CONNS &&
	    !server_over_budget())
		return;
	x->paused = on;
	if (on) {
		u->npaused++;
		x->due_us = 0; /* the timer may stay pending */
		if (c->rev != NULL)
			event_del(c->rev);
		else
			bufferevent_disable(c->bev, EV_READ);
		/*
		 * Past the budget the waiting requests are refused now
		 * (upstream_dequeue), not left to wait for connections that
		 * will not free up.
		 */
		while (u->nwaiting > 0 &&
		    (upstream_has_slot(u) || server_over_budget()) &&
		    (w = upstream_dequeue(u)) != NULL)
			upstream_start(u, w);
		return;
	}
	u->npaused--;
	upstream_xfer_due(x, units_mono_us(), u->t->timeout_ms, u->timeout_q);
	if (c->rev != NULL)
		event_add(c->rev, NULL);
	else
		bufferevent_enable(c->bev, EV_READ);
	/*
	 * Bytes read before the pause (a TLS record's rest, or records
	 * OpenSSL read ahead): on next turn.
	 */
	if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0 ||
	    (u->ssl != NULL && tlsctx_pending(c->bev)))
		bufferevent_trigger(c->bev, EV_READ,
		    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

bool
upstream_xfer_check_take(struct upstream_xfer *x, struct jscheck *js,
    size_t *checked)
{
	if (!x->check)
		return false;
	x->check = false;
	/* The memo's bytes equal so far are the check's, first. */
	memo_cmp_stop(&x->mc, &x->jsc);
	*js = x->jsc;
	*checked = x->checked;
	return true;
}

bool
upstream_xfer_json_failed(const struct upstream_xfer *x, size_t *at)
{
	if (!x->check || !x->jsc.failed)
		return false;
	*at = x->jsc.err_at;
	return true;
}

enum upstream_fail
upstream_xfer_fail(const struct upstream_xfer *x)
{
	return x->fail;
}

const char *
upstream_xfer_error(const struct upstream_xfer *x)
{
	return x->error;
}

uint64_t
upstream_xfer_usec(const struct upstream_xfer *x)
{
	return x->usec;
}
