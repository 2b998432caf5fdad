/*
 * floe: upstream.c -- the data-path pool. Each upstream catalog has a LIFO
 * list of idle keep-alive connections, a cap on open ones and a FIFO of
 * requests waiting for one; an https catalog's TLS context (records read
 * ahead, its last session resumed). A request is made and written by
 * upstream_write.c; the answer is framed by h1 and handed to the caller,
 * then the connection goes back to the pool if the answer allowed it and
 * was read to its end.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "cache/memo.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/h1.h"
#include "proxy/server.h"
#include "proxy/sockio.h"
#include "proxy/tlsctx.h"
#include "proxy/upstream.h"
#include "proxy/upstream_impl.h"

#define UPSTREAM_SPARE 256 /* ended transfers kept for reuse */
#define UPSTREAM_TLS_READ (64 * 1024) /* a TLS connection's read(), at most */
/* Answers larger than this are refused (LoadTable with long histories). */
#define UPSTREAM_MAX_BODY (256u << 20)

static void upstream_read_cb(struct bufferevent *, void *);
static void upstream_sock_cb(evutil_socket_t, short, void *);
static void upstream_conn_free(struct upconn *);
static void upstream_unpause(struct upstream *);
static void upstream_finish(struct upstream_xfer *, enum upstream_fail,
    const char *);

/*
 * A session the catalog gave (a TLS 1.3 ticket, or a TLS 1.2 session):
 * the next connection offers it, and resumes without a full handshake.
 * The newest is kept, and each connection resumes a copy of its own:
 * OpenSSL marks a connection's session not resumable when the connection
 * ends without a close_notify sent, as when a catalog drops an idle one,
 * and a catalog need not give a new ticket on a resumed connection. Its
 * own client cache is not used.
 */
static int
upstream_session_cb(SSL *ssl, SSL_SESSION *sess)
{
	struct upstream *u = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	SSL_SESSION *copy;

	if ((copy = SSL_SESSION_dup(sess)) == NULL)
		return 0;
	if (u->sess != NULL)
		SSL_SESSION_free(u->sess);
	u->sess = copy;
	return 0; /* SESS stays OpenSSL's */
}

/* The TLS client context: system trust store (plus ca_file), TLS >= 1.2. */
static SSL_CTX *
upstream_ssl_ctx(const struct conf_target *t, char *err, size_t errlen)
{
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(err, errlen, "TLS context: %s",
		    ERR_reason_error_string(ERR_get_error()));
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/*
	 * Records read ahead, several in one read(): the bufferevent reads
	 * one record a turn of the loop, with a read() for its header and
	 * another for its body; upstream_read_cb takes the rest that OpenSSL
	 * holds. Buffers are released while a connection idles in the pool.
	 */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, UPSTREAM_TLS_READ);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_cache_mode(ctx,
	    SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, upstream_session_cb);
	if (t->ca_file != NULL && access(t->ca_file, R_OK) == -1) {
		snprintf(err, errlen, "ca_file %s: %s", t->ca_file,
		    strerror(errno));
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_set_default_verify_paths(ctx) != 1 ||
	    (t->ca_file != NULL &&
		SSL_CTX_load_verify_locations(ctx, t->ca_file, NULL) != 1)) {
		snprintf(err, errlen, "TLS trust store%s%s: %s",
		    t->ca_file != NULL ? " " : "",
		    t->ca_file != NULL ? t->ca_file : "",
		    ERR_reason_error_string(ERR_get_error()));
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* Precompute the fixed headers and timeouts of target T. */
static void
upstream_configure(struct upstream *u, const struct conf_target *t)
{
	bool dflt_port = strcmp(t->port, t->tls ? "443" : "80") == 0;
	bool v6 = strchr(t->host, ':') != NULL;

	if (u->fixed != NULL) {
		explicit_bzero(u->fixed, u->fixed_len);
		free(u->fixed);
	}
	u->t = t;
	/*
	 * An IPv6 literal goes in brackets (RFC 9110 7.2). The blank line
	 * after it, not counted, ends a head with nothing more to add.
	 */
	u->fixed = xasprintf("Host: %s%s%s%s%s\r\n\r\n", v6 ? "[" : "", t->host,
	    v6 ? "]" : "", dflt_port ? "" : ":", dflt_port ? "" : t->port);
	u->fixed_len = strlen(u->fixed) - 2;
	u->timeout_tv = units_ms_tv(t->timeout_ms);
	u->connect_tv = units_ms_tv(t->connect_timeout_ms);
	u->idle_tv = units_ms_tv(t->pool_idle_ms);
	/* The same duration again gives the same queue: reloads add none. */
	if ((u->timeout_q = event_base_init_common_timeout(u->base,
		 &u->timeout_tv)) == NULL)
		u->timeout_q = &u->timeout_tv;
	if ((u->connect_q = event_base_init_common_timeout(u->base,
		 &u->connect_tv)) == NULL)
		u->connect_q = &u->connect_tv;
}

void
upstream_retarget(struct upstream *u, const struct conf_target *t)
{
	upstream_configure(u, t);
}

void
upstream_set_cred(struct upstream *u, struct cred *c)
{
	u->cred = c;
}

struct upstream *
upstream_new(struct event_base *base, struct evdns_base *dns,
    const struct conf_target *t, const char *name, char *err, size_t errlen)
{
	struct upstream *u;

	u = xcalloc(1, sizeof(*u));
	u->base = base;
	u->dns = dns;
	u->t = t;
	u->name = xstrdup(name);
	TAILQ_INIT(&u->spare);
	upstream_configure(u, t);
	if (t->tls && (u->ssl = upstream_ssl_ctx(t, err, errlen)) == NULL) {
		upstream_free(u);
		return NULL;
	}
	if (u->ssl != NULL)
		SSL_CTX_set_app_data(u->ssl, u);
	u->lim.max_head = 64 * 1024;
	u->lim.max_headers = 100;
	u->lim.max_body = UPSTREAM_MAX_BODY;
	LIST_INIT(&u->idle);
	LIST_INIT(&u->busy);
	TAILQ_INIT(&u->waiting);
	return u;
}

void
upstream_free(struct upstream *u)
{
	struct upstream_xfer *x;

	if (u == NULL)
		return;
	while ((x = TAILQ_FIRST(&u->waiting)) != NULL)
		upstream_cancel(x);
	while (!LIST_EMPTY(&u->busy))
		upstream_cancel(LIST_FIRST(&u->busy)->x);
	while (!LIST_EMPTY(&u->idle))
		upstream_conn_free(LIST_FIRST(&u->idle));
	while ((x = TAILQ_FIRST(&u->spare)) != NULL) {
		TAILQ_REMOVE(&u->spare, x, wait);
		event_free(x->timer);
		evbuffer_free(x->req);
		free(x->hbuf);
		free(x);
	}
	if (u->sess != NULL)
		SSL_SESSION_free(u->sess);
	if (u->ssl != NULL)
		SSL_CTX_free(u->ssl);
	if (u->fixed != NULL) {
		explicit_bzero(u->fixed, u->fixed_len);
		free(u->fixed);
	}
	free(u->name);
	free(u);
}

const char *
upstream_name(const struct upstream *u)
{
	return u->name;
}

/* Open a new connection (the connect completes later). */
static struct upconn *
upstream_conn_new(struct upstream *u)
{
	struct upconn *c;
	SSL *ssl = NULL;

	c = xcalloc(1, sizeof(*c));
	c->u = u;
	if (u->ssl != NULL) {
		if ((ssl = SSL_new(u->ssl)) == NULL)
			goto fail;
		SSL_set_tlsext_host_name(ssl, u->t->host);
		SSL_set1_host(ssl, u->t->host);
		if (u->sess != NULL) {
			SSL_SESSION *own = SSL_SESSION_dup(u->sess);

			if (own != NULL) {
				(void)SSL_set_session(ssl, own);
				SSL_SESSION_free(own);
			}
		}
		c->bev = bufferevent_openssl_socket_new(u->base, -1, ssl,
		    BUFFEREVENT_SSL_CONNECTING,
		    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	} else
		c->bev = bufferevent_socket_new(u->base, -1,
		    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (c->bev == NULL) {
		if (ssl != NULL)
			SSL_free(ssl);
		goto fail;
	}
	c->h1 = h1_new(H1_RESPONSE, &u->lim);
	bufferevent_setcb(c->bev, upstream_read_cb, upstream_write_cb,
	    upstream_event_cb, c);
	u->nconns++;
	LIST_INSERT_HEAD(&u->busy, c, entry);
	if (bufferevent_socket_connect_hostname(c->bev, u->dns, AF_UNSPEC,
		u->t->host, atoi(u->t->port)) == -1) {
		/* The failure is reported through the event callback too. */
		log_debug("%s: %s: connect to %s:%s failed at once", __func__,
		    u->name, u->t->host, u->t->port);
	}
	bufferevent_enable(c->bev, EV_READ);
	return c;
fail:
	free(c);
	return NULL;
}

static void
upstream_conn_free(struct upconn *c)
{
	struct upstream *u = c->u;

	LIST_REMOVE(c, entry);
	if (c->idle)
		u->nidle--;
	u->nconns--;
	if (c->rev != NULL)
		event_free(c->rev);
	if (c->idle_ev != NULL)
		event_free(c->idle_ev);
	if (u->ssl != NULL)
		tlsctx_close(c->bev);
	bufferevent_free(c->bev);
	h1_free(c->h1);
	free(c);
}

/*
 * X's deadline is MS from NOW; Q is the timer queue of that duration.
 * The timer is added only when it would not fire by then: a timer left
 * pending by an earlier request or phase (the deadline off is only
 * cleared) fires early and upstream_timer_cb waits out the rest. An event
 * added and deleted for every request cost a third of a microsecond;
 * whether it is added is ARMED_US's to say, not event_pending's.
 */
void
upstream_xfer_due(struct upstream_xfer *x, int64_t now, uint64_t ms,
    const struct timeval *q)
{
	x->due_us = now + (int64_t)ms * 1000;
	if (x->armed_us != 0 && x->armed_us <= x->due_us)
		return;
	evtimer_add(x->timer, q);
	x->armed_us = x->due_us;
}

/*
 * Reads of a plain connection, one read of up to 64 KiB each (libevent's
 * own read asks FIONREAD first and takes at most 4 KiB). The event has no
 * timeout: libevent would re-add a persistent event's timeout at every
 * read (upstream_idle.c bounds an idle connection).
 */
static void
upstream_sock_cb(evutil_socket_t fd, short what __unused, void *arg)
{
	struct upconn *c = arg;

	switch (sockio_read(c->bev, fd)) {
	case SOCKIO_READ:
		upstream_read_cb(c->bev, c);
		return;
	case SOCKIO_AGAIN:
		return;
	case SOCKIO_EOF:
		upstream_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_EOF, c);
		return;
	case SOCKIO_ERROR:
		upstream_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_ERROR,
		    c);
		return;
	}
}

/* Give X a connection: the most recently idle one, a new one, or a wait. */
void
upstream_start(struct upstream *u, struct upstream_xfer *x)
{
	struct upconn *c;

	if ((c = LIST_FIRST(&u->idle)) != NULL && !x->retried) {
		LIST_REMOVE(c, entry);
		u->nidle--;
		c->idle = false;
		LIST_INSERT_HEAD(&u->busy, c, entry);
		u->reused++;
		upstream_idle_timer(c, false, 0);
		upstream_write(c, x);
		return;
	}
	if (!upstream_has_slot(u)) {
		if ((c = LIST_FIRST(&u->idle)) == NULL) {
			TAILQ_INSERT_TAIL(&u->waiting, x, wait);
			u->nwaiting++;
			upstream_unpause(u);
			return;
		}
		/* A retry must not reuse an old connection: recycle one. */
		upstream_conn_free(c);
	}
	if ((c = upstream_conn_new(u)) == NULL) {
		upstream_finish(x, UPSTREAM_CONNECT, "out of memory");
		return;
	}
	/* The request waits in the output buffer until the connect ends. */
	upstream_write(c, x);
	if (x->retried)
		upstream_xfer_due(x, units_mono_us(), u->t->timeout_ms,
		    u->timeout_q);
	else
		upstream_xfer_due(x, units_mono_us(), u->t->connect_timeout_ms,
		    u->connect_q);
}

/*
 * May U open one more connection? Under max_conns, or over it by the
 * connections whose answers are streamed to their clients (a client that
 * reads slowly must not hold the catalog from others), up to
 * UPSTREAM_PAUSED_CONNS times max_conns.
 */
bool
upstream_has_slot(const struct upstream *u)
{
	unsigned max = u->t->max_conns;

	return u->nconns < max ||
	    (u->nconns - u->nstreaming < max &&
		u->nconns < max * UPSTREAM_PAUSED_CONNS);
}

/*
 * Requests wait and no connection can be lent: paused transfers read on
 * to their end, into their clients' output, while floe's output budget
 * allows it, so that their connections free up for the waiting ones.
 */
static void
upstream_unpause(struct upstream *u)
{
	struct upconn *c;

	if (u->nconns < u->t->max_conns * UPSTREAM_PAUSED_CONNS ||
	    server_over_budget())
		return;
	LIST_FOREACH(c, &u->busy, entry)
		if (c->x != NULL && c->x->paused)
			upstream_xfer_pause(c->x, false);
}

/*
 * The first waiting request, taken off the queue, or NULL. While the
 * clients' output buffers hold more than floe's budget, a waiting request
 * is not sent: it ends UPSTREAM_FULL (the client gets a 503), so that
 * answers for clients that do not read stop piling up. A request that
 * was never sent is safe to refuse, whatever its method.
 */
struct upstream_xfer *
upstream_dequeue(struct upstream *u)
{
	struct upstream_xfer *x;

	while ((x = TAILQ_FIRST(&u->waiting)) != NULL) {
		TAILQ_REMOVE(&u->waiting, x, wait);
		u->nwaiting--;
		if (!server_over_budget())
			return x;
		u->refused++;
		upstream_finish(x, UPSTREAM_FULL,
		    "floe holds its output_budget of answers for clients");
	}
	return NULL;
}

/*
 * Return C to the idle list (idle since NOW, units_mono_us), or hand it to
 * a waiting request.
 */
static void
upstream_release(struct upconn *c, int64_t now)
{
	struct upstream *u = c->u;
	struct upstream_xfer *x;

	c->x = NULL;
	if ((x = upstream_dequeue(u)) != NULL) {
		u->reused++;
		upstream_write(c, x);
		return;
	}
	LIST_REMOVE(c, entry);
	LIST_INSERT_HEAD(&u->idle, c, entry);
	c->idle = true;
	u->nidle++;
	upstream_idle_timer(c, true, now);
}

/* Keep X for the next request (up to a bound), or free it. */
static void
upstream_xfer_free(struct upstream_xfer *x)
{
	struct upstream *u = x->u;
	size_t n;

	/* The timer may stay pending: nothing is due (upstream_timer_cb). */
	x->due_us = 0;
	x->nocred = false;
	memo_cmp_stop(&x->mc, NULL);
	/* REQ holds the request only when X's own bytes did not. */
	if (x->hlen == 0 && (n = evbuffer_get_length(x->req)) > 0)
		evbuffer_drain(x->req, n);
	x->hlen = 0;
	if (x->paused) {
		x->paused = false;
		u->npaused--;
	}
	if (x->streaming) {
		x->streaming = false;
		u->nstreaming--;
	}
	if (u->nspare < UPSTREAM_SPARE) {
		TAILQ_INSERT_HEAD(&u->spare, x, wait);
		u->nspare++;
		return;
	}
	event_free(x->timer);
	evbuffer_free(x->req);
	free(x->hbuf);
	free(x);
}

/*
 * End X. The callback sees the answer (or the failure); then the
 * connection is pooled if the answer was complete and allowed keep-alive,
 * and closed otherwise.
 */
static void
upstream_finish(struct upstream_xfer *x, enum upstream_fail fail,
    const char *why)
{
	struct upconn *c = x->c;
	int64_t now = units_mono_us();
	bool keep;

	x->fail = fail;
	if (why != NULL)
		strlcpy(x->error, why, sizeof(x->error));
	x->usec = now - x->start_us;
	x->due_us = 0;
	if (fail == UPSTREAM_OK && c != NULL)
		upstream_body(x, h1_msg(c->h1), true);
	/* The catalog refused floe's token: one early refresh, not more. */
	if (fail == UPSTREAM_OK && x->bearer && c != NULL &&
	    h1_msg(c->h1)->status == 401 && x->u->cred != NULL)
		cred_unauthorized(x->u->cred, x->cred_gen);
	x->cb(x, x->arg);
	if (c != NULL) {
		keep = fail == UPSTREAM_OK && h1_msg(c->h1)->keep_alive &&
		    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
		    (c->u->ssl == NULL ||
			(!c->tls_ended && !tlsctx_pending(c->bev)));
		c->served++;
		if (keep) {
			h1_reset(c->h1);
			/* Idle from its answer's end (not after the reply). */
			upstream_release(c, now);
		} else {
			c->x = NULL;
			upstream_conn_free(c);
			/* A slot opened: start a waiting request. */
			if (upstream_has_slot(x->u)) {
				struct upstream_xfer *w;

				if ((w = upstream_dequeue(x->u)) != NULL)
					upstream_start(x->u, w);
			}
		}
	}
	upstream_xfer_free(x);
}

void
upstream_cancel(struct upstream_xfer *x)
{
	struct upconn *c = x->c;

	if (c != NULL) {
		/* Its answer would arrive for nobody: close the connection. */
		c->x = NULL;
		upstream_conn_free(c);
	} else if (!x->nocred) {
		TAILQ_REMOVE(&x->u->waiting, x, wait);
		x->u->nwaiting--;
	}
	upstream_xfer_free(x);
}

static void
upstream_read_cb(struct bufferevent *bev, void *arg)
{
	struct upconn *c = arg;
	struct upstream_xfer *x = c->x;
	char why[160];

	if (x == NULL) {
		/* Bytes on an idle connection: it is out of step. */
		log_debug("%s: %s: unexpected bytes on an idle connection",
		    __func__, c->u->name);
		upstream_conn_free(c);
		return;
	}
	/*
	 * A TLS catalog: the records OpenSSL read ahead beyond the one the
	 * bufferevent took, which the socket will not signal again; at most
	 * one read's worth (UPSTREAM_TLS_READ). A close_notify or a broken
	 * record among them ends the connection as its EOF would, once what
	 * came before is parsed (a deferred event: nothing if the connection
	 * is freed first).
	 */
	if (c->u->ssl != NULL && !c->tls_ended &&
	    tlsctx_read_pending(bev, SIZE_MAX) == -1) {
		c->tls_ended = true; /* never pooled again */
		bufferevent_trigger_event(bev,
		    BEV_EVENT_READING | BEV_EVENT_EOF,
		    BEV_TRIG_DEFER_CALLBACKS);
	}
	for (;;) {
		switch (h1_parse(c->h1, bufferevent_get_input(bev))) {
		case H1_MORE:
			upstream_body(x, h1_msg(c->h1), false);
			/* The callee may cancel X: nothing of it after. */
			if (x->body_cb != NULL && h1_awaits_body(c->h1))
				x->body_cb(x, h1_msg(c->h1), x->arg);
			return;
		case H1_DONE:
			/*
			 * Interim answers (100 Continue, 103 Early Hints) may
			 * come before the final one, asked for or not (RFC
			 * 9110 15.2): skip them and read on.
			 */
			if (h1_msg(c->h1)->status / 100 == 1 &&
			    h1_msg(c->h1)->status != 101) {
				h1_reset(c->h1);
				h1_set_head_response(c->h1, x->head_method);
				continue;
			}
			upstream_finish(x, UPSTREAM_OK, NULL);
			return;
		case H1_ERROR:
			snprintf(why, sizeof(why), "invalid answer from %s: %s",
			    c->u->name, h1_error_text(c->h1));
			upstream_finish(x, UPSTREAM_GARBAGE, why);
			return;
		}
	}
}

void
upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct upconn *c = arg;
	struct upstream *u = c->u;
	struct upstream_xfer *x = c->x;
	char why[192];
	unsigned long e;
	int serr, on = 1;

	if (what & BEV_EVENT_CONNECTED) {
		c->connected = true;
		/*
		 * No Nagle: a request that leaves in more than one write (over
		 * TLS, a record of at most 16 KiB each; a large body's tail
		 * after a partial write) must not wait for the ACK of the
		 * first, which a catalog waiting for the rest delays by 40 ms.
		 */
		(void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP,
		    TCP_NODELAY, &on, sizeof(on));
		/*
		 * From now on a plain connection is read by upstream_sock_cb
		 * and written by upstream_flush; see there.
		 */
		if (c->u->ssl == NULL) {
			bufferevent_disable(bev, EV_READ | EV_WRITE);
			c->fd = bufferevent_getfd(bev);
			c->rev = event_new(u->base, c->fd, EV_READ | EV_PERSIST,
			    upstream_sock_cb, c);
			if (c->rev == NULL || event_add(c->rev, NULL) == -1)
				fatalx("%s: out of memory", __func__);
			upstream_idle_start(c);
			sockio_own_input(bev);
			upstream_flush(c);
		} else if (evbuffer_get_length(bufferevent_get_output(bev)) ==
		    0)
			/*
			 * Handshake done, nothing queued: requests are written
			 * with SSL_write (upstream_write), and write interest
			 * is on only for what the socket does not take.
			 */
			bufferevent_disable(bev, EV_WRITE);
		if (x != NULL)
			upstream_xfer_due(x, units_mono_us(), u->t->timeout_ms,
			    u->timeout_q);
		/* Bytes the bufferevent read before the switch. */
		if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
			upstream_read_cb(bev, c);
		return;
	}
	if (x == NULL) {
		/* An idle connection closed or timed out. */
		upstream_conn_free(c);
		return;
	}
	if (!c->connected) {
		serr = evutil_socket_geterror(bufferevent_getfd(bev));
		if ((e = bufferevent_get_openssl_error(bev)) != 0)
			snprintf(why, sizeof(why), "TLS to %s %s:%s: %s",
			    u->name, u->t->host, u->t->port,
			    ERR_reason_error_string(e));
		else if (bufferevent_socket_get_dns_error(bev) != 0)
			snprintf(why, sizeof(why), "cannot resolve %s: %s",
			    u->t->host,
			    evutil_gai_strerror(
				bufferevent_socket_get_dns_error(bev)));
		else
			snprintf(why, sizeof(why), "connect to %s %s:%s: %s",
			    u->name, u->t->host, u->t->port,
			    serr != 0 ? evutil_socket_error_to_string(serr) :
					"failed");
		u->connect_failures++;
		c->x = NULL;
		x->c = NULL;
		upstream_conn_free(c);
		upstream_finish(x, UPSTREAM_CONNECT, why);
		return;
	}
	if (what & BEV_EVENT_EOF && h1_eof(c->h1) == H1_DONE) {
		upstream_finish(x, UPSTREAM_OK, NULL);
		return;
	}
	/*
	 * Closed before any byte of the answer on a connection that served
	 * before: the upstream dropped an idle connection as floe wrote.
	 * Retry once on a fresh connection if the request is idempotent.
	 */
	if (!h1_started(c->h1) && c->served > 0 && x->retryable &&
	    !x->retried) {
		c->x = NULL;
		x->c = NULL;
		x->retried = true;
		upstream_conn_free(c);
		log_debug("%s: %s: retrying on a fresh connection", __func__,
		    u->name);
		upstream_start(u, x);
		return;
	}
	snprintf(why, sizeof(why), "%s closed the connection %s", u->name,
	    h1_started(c->h1) ? "in the middle of its answer" :
				"without answering");
	upstream_finish(x, UPSTREAM_RESET, why);
}

void
upstream_timer_cb(evutil_socket_t fd __unused, short ev __unused, void *arg)
{
	struct upstream_xfer *x = arg;
	struct upstream *u = x->u;
	char why[400];
	struct timeval tv;
	int64_t left;

	/*
	 * Fired, no longer added; or made active (no credential), when it
	 * may still be: added again then, which is harmless.
	 */
	x->armed_us = 0;
	if (!x->nocred) {
		/* Nothing due, or not yet: a timer left from before. */
		if (x->due_us == 0)
			return;
		if ((left = x->due_us - units_mono_us()) > 1000) {
			tv = units_us_tv(left);
			evtimer_add(x->timer, &tv);
			x->armed_us = x->due_us;
			return;
		}
	}
	if (x->nocred) {
		cred_why(u->cred, why, sizeof(why));
		upstream_finish(x, UPSTREAM_NOCRED, why);
		return;
	}
	if (x->c == NULL) {
		TAILQ_REMOVE(&u->waiting, x, wait);
		u->nwaiting--;
		snprintf(why, sizeof(why),
		    "no connection to %s free within %llu ms", u->name,
		    (unsigned long long)u->t->timeout_ms);
		upstream_finish(x, UPSTREAM_TIMEOUT, why);
		return;
	}
	if (!x->c->connected) {
		snprintf(why, sizeof(why),
		    "connect to %s %s:%s timed out "
		    "after %llu ms",
		    u->name, u->t->host, u->t->port,
		    (unsigned long long)u->t->connect_timeout_ms);
		u->connect_failures++;
		upstream_finish(x, UPSTREAM_CONNECT, why);
		return;
	}
	snprintf(why, sizeof(why), "%s did not answer within %llu ms", u->name,
	    (unsigned long long)u->t->timeout_ms);
	upstream_finish(x, UPSTREAM_TIMEOUT, why);
}

struct h1_msg *
upstream_xfer_msg(struct upstream_xfer *x)
{
	if (x->fail != UPSTREAM_OK || x->c == NULL)
		return NULL;
	return h1_msg(x->c->h1);
}

json_t *
upstream_status_json(const struct upstream *u)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
	    "uri", u->t->uri, "connections", (json_int_t)u->nconns, "idle",
	    (json_int_t)u->nidle, "waiting", (json_int_t)u->nwaiting, "paused",
	    (json_int_t)u->npaused, "streaming", (json_int_t)u->nstreaming,
	    "sent", (json_int_t)u->sent, "reused", (json_int_t)u->reused,
	    "connect_failures", (json_int_t)u->connect_failures,
	    "refused_over_budget", (json_int_t)u->refused);
}
