/*
 * floe: upstream_write.c -- a request on its way to a catalog: made in one
 * pass from the caller's head, the catalog's fixed headers, floe's
 * credential (a bearer token, or a SigV4 signature over the request as it
 * is sent) and the body, into a transfer's own bytes when nothing follows
 * Host; then written. A plain connection writes it with one sendmsg from
 * where the bytes are, a TLS one with SSL_write at once (tlsctx_sendv,
 * tlsctx_send); either copies only what the socket did not take, and has
 * write interest only while that waits.
 */
#include <sys/types.h>
#include <sys/uio.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "cache/memo.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/h1.h"
#include "proxy/sockio.h"
#include "proxy/tlsctx.h"
#include "proxy/upstream.h"
#include "proxy/upstream_impl.h"

#define UPSTREAM_WRITEV 16 /* pieces of a request written at once */

static int upstream_cred(struct upstream *, struct upstream_xfer *,
    struct evbuffer *, struct evbuffer *);

struct upstream_xfer *
upstream_send(struct upstream *u, struct upstream_req *r, upstream_done_cb cb,
    void *arg)
{
	struct upstream_xfer *x;
	struct evbuffer *req;
	char cl[48];
	size_t blen = r->body != NULL ? evbuffer_get_length(r->body) : 0;
	size_t need = r->head_len + u->fixed_len + 2;
	bool cred = u->cred != NULL && cred_on_data(u->cred);
	int n;

	if ((x = TAILQ_FIRST(&u->spare)) != NULL) {
		TAILQ_REMOVE(&u->spare, x, wait);
		u->nspare--;
		req = x->req;
		memset(&x->c, 0,
		    sizeof(*x) - offsetof(struct upstream_xfer, c));
		x->error[0] = '\0';
	} else {
		x = xcalloc(1, sizeof(*x));
		if ((req = evbuffer_new()) == NULL ||
		    (x->timer = evtimer_new(u->base, upstream_timer_cb, x)) ==
			NULL)
			fatalx("%s: out of memory", __func__);
	}
	x->check = r->check_json;
	x->body_cb = r->body_cb;
	x->json = -1;
	jscheck_init(&x->jsc);
	memo_cmp_init(&x->mc, r->check_json ? r->memo : NULL);
	x->hlen = 0;
	if (!cred && r->body == NULL) {
		/*
		 * Nothing to add after Host (and the blank line after it, in
		 * FIXED): the head goes into X's own bytes, kept with X, and
		 * is written from there, with no evbuffer to fill and empty.
		 */
		if (need > x->hcap) {
			x->hbuf = xreallocarray(x->hbuf, 1, need);
			x->hcap = need;
		}
		memcpy(x->hbuf, r->head, r->head_len);
		memcpy(x->hbuf + r->head_len, u->fixed, u->fixed_len + 2);
		x->hlen = need;
		goto queued;
	}
	evbuffer_add(req, r->head, r->head_len);
	evbuffer_add(req, u->fixed, u->fixed_len);
	if (cred && upstream_cred(u, x, req, r->body) == -1) {
		/* Failed from the loop: the caller is not ready to hear it. */
		evbuffer_drain(req, evbuffer_get_length(req));
		if (r->body != NULL)
			evbuffer_drain(r->body, blen);
		x->u = u;
		x->req = req;
		x->nocred = true;
		x->cb = cb;
		x->arg = arg;
		x->start_us = units_mono_us();
		event_active(x->timer, EV_TIMEOUT, 0);
		return x;
	}
	if (blen > 0 || r->body != NULL) {
		n = snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n\r\n",
		    blen);
		evbuffer_add(req, cl, n);
		if (blen > 0)
			evbuffer_add_buffer(req, r->body);
	} else
		evbuffer_add(req, "\r\n", 2);
queued:
	x->u = u;
	x->req = req;
	x->head_method = r->head_method;
	x->retryable = r->retryable;
	x->cb = cb;
	x->arg = arg;
	x->start_us = units_mono_us();
	upstream_xfer_due(x, x->start_us, u->t->timeout_ms, u->timeout_q);
	upstream_start(u, x);
	return x;
}

/*
 * Add floe's credential to REQ (the request line and headers so far) for
 * X, whose body is BODY (or NULL): the current bearer token, or a SigV4
 * signature. -1 when there is none now (the token is not there yet or
 * expired, or the request cannot be signed).
 */
static int
upstream_cred(struct upstream *u, struct upstream_xfer *x, struct evbuffer *req,
    struct evbuffer *body)
{
	const char *line;
	uint64_t gen;
	size_t len;

	switch (cred_kind(u->cred)) {
	case CRED_NONE:
		return 0;
	case CRED_SIGV4:
		return cred_sign(u->cred, req, body);
	case CRED_BEARER:
		break;
	}
	if ((line = cred_authz(u->cred, &len, &gen)) == NULL)
		return -1;
	evbuffer_add(req, line, len);
	x->bearer = true;
	x->cred_gen = gen;
	return 0;
}

/* Whether C is a TLS connection to write on now: connected, nothing queued. */
static bool
upstream_tls_now(const struct upconn *c)
{
	return c->u->ssl != NULL && c->connected &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0;
}

/*
 * A request went to SSL_write (RC: tlsctx_send's or tlsctx_sendv's): write
 * interest only for what the socket did not take, as on a plain
 * connection; a failure reported through upstream_event_cb, from the loop.
 */
static void
upstream_tls_sent(struct upconn *c, int rc)
{
	if (rc == -1)
		bufferevent_trigger_event(c->bev,
		    BEV_EVENT_WRITING | BEV_EVENT_ERROR,
		    BEV_TRIG_DEFER_CALLBACKS);
	else if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
		bufferevent_enable(c->bev, EV_WRITE);
}

/*
 * Write X's request on C. Bytes kept for a retry (X's own head, or its
 * request buffer peeked) are written from where they are when C is
 * connected with nothing queued: with SSL_write (tlsctx_sendv), or with
 * one sendmsg, copying only what the socket did not take (or all, on an
 * error, which upstream_flush then reports). Bytes not kept move.
 */
void
upstream_write(struct upconn *c, struct upstream_xfer *x)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct evbuffer_iovec v[UPSTREAM_WRITEV];
	size_t done = 0;
	ssize_t w;
	int i, n = 1;

	c->x = x;
	x->c = c;
	c->u->sent++;
	h1_reset(c->h1);
	h1_set_head_response(c->h1, x->head_method);
	if (x->hlen > 0) {
		v[0].iov_base = x->hbuf;
		v[0].iov_len = x->hlen;
	} else if (!x->retryable || x->retried ||
	    (n = evbuffer_peek(x->req, -1, NULL, v, nitems(v))) >
		(int)nitems(v)) {
		/* Not kept: a retry would find nothing to send. */
		x->retryable = false;
		if (upstream_tls_now(c)) {
			upstream_tls_sent(c,
			    tlsctx_send(c->bev, NULL, 0, x->req));
			return;
		}
		evbuffer_add_buffer(out, x->req);
		upstream_flush(c);
		return;
	}
	if (upstream_tls_now(c)) {
		upstream_tls_sent(c, tlsctx_sendv(c->bev, v, n));
		return;
	}
	if (c->u->ssl == NULL && c->connected &&
	    evbuffer_get_length(out) == 0 &&
	    (w = sockio_sendv(c->fd, v, n)) > 0)
		done = (size_t)w;
	for (i = 0; i < n && done >= v[i].iov_len; i++)
		done -= v[i].iov_len;
	if (i == n)
		return; /* all written: nothing for upstream_flush */
	for (; i < n; i++, done = 0)
		evbuffer_add(out, (char *)v[i].iov_base + done,
		    v[i].iov_len - done);
	upstream_flush(c);
}

/*
 * Write a plain connected connection's request now, as the front end does
 * its answers: one write, and write interest (an epoll_ctl each way) only
 * for what the socket did not take. TLS connections and connections still
 * connecting write through their bufferevent.
 */
void
upstream_flush(struct upconn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	ssize_t n;

	if (c->u->ssl != NULL || !c->connected || evbuffer_get_length(out) == 0)
		return;
	/* A bufferevent keeps its output's start frozen; so do we. */
	evbuffer_unfreeze(out, 1);
	n = sockio_write(out, c->fd);
	evbuffer_freeze(out, 1);
	/*
	 * What is left, or an error, goes to the bufferevent: it writes the
	 * rest or reports the error through upstream_event_cb.
	 */
	if (n == -1 || evbuffer_get_length(out) > 0)
		bufferevent_enable(c->bev, EV_WRITE);
}

/*
 * The bufferevent wrote what upstream_flush or SSL_write left: write
 * interest off.
 */
void
upstream_write_cb(struct bufferevent *bev, void *arg)
{
	struct upconn *c = arg;

	if (c->connected &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		bufferevent_disable(bev, EV_WRITE);
}
