/*
 * floe: server.c -- the bufferevent front end: accepts connections, frames
 * requests with h1, hands each complete request to its owner and writes the
 * answer (which server_reply.c puts together). Serves the REST listener and the
 * admin socket alike. Timers: an idle timeout between requests and a deadline
 * for a whole request head, so a slow or silent client holds a connection only
 * so long.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/server.h"
#include "proxy/server_impl.h"
#include "proxy/sockio.h"
#include "proxy/tlsctx.h"

/*
 * The bytes every connection's output buffer holds (as last accounted:
 * a buffer drained by its bufferevent is counted when it reaches
 * SERVER_CONN_BUDGET), the peak since the last look, and the budget.
 */
static size_t server_held, server_held_peak, server_budget = SIZE_MAX;
/* A connection of a server not budgeted that held this much, sent. */
#define SERVER_TRIM_HINT (4u << 20)

static void server_accept_cb(struct evconnlistener *, evutil_socket_t,
    struct sockaddr *, int, void *);
static void server_read_cb(struct bufferevent *, void *);
static void server_write_cb(struct bufferevent *, void *);
static void server_continue(struct server_conn *);
static void server_sock_cb(evutil_socket_t, short, void *);
static void server_event_cb(struct bufferevent *, short, void *);
static void server_timer_cb(evutil_socket_t, short, void *);
static void server_conn_free(struct server_conn *);
static void server_conn_process(struct server_conn *);
static void server_account(struct server_conn *);
static void server_account_len(struct server_conn *, size_t);
static void server_timer_add(struct server_conn *, const struct timeval *);
static void server_resume(struct server_conn *);

struct server *
server_new(struct event_base *base, const struct server_opts *opts,
    server_request_cb request_cb, server_error_cb error_cb, void *arg)
{
	struct server *s;

	s = xcalloc(1, sizeof(*s));
	s->base = base;
	s->opts = *opts;
	s->request_cb = request_cb;
	s->error_cb = error_cb;
	s->arg = arg;
	s->idle_tv = units_ms_tv(opts->idle_timeout_ms);
	s->head_tv = units_ms_tv(opts->header_timeout_ms);
	s->write_tv = units_ms_tv(opts->write_timeout_ms);
	if ((s->idle_q = event_base_init_common_timeout(base, &s->idle_tv)) ==
	    NULL)
		s->idle_q = &s->idle_tv;
	if ((s->head_q = event_base_init_common_timeout(base, &s->head_tv)) ==
	    NULL)
		s->head_q = &s->head_tv;
	LIST_INIT(&s->listeners);
	LIST_INIT(&s->conns);
	return s;
}

/* Close the listeners (and unlink Unix socket paths). */
static void
server_unlisten(struct server *s)
{
	struct server_listener *sl;

	while ((sl = LIST_FIRST(&s->listeners)) != NULL) {
		LIST_REMOVE(sl, entry);
		evconnlistener_free(sl->l);
		if (sl->path != NULL) {
			(void)unlink(sl->path);
			free(sl->path);
		}
		free(sl);
	}
}

void
server_free(struct server *s)
{
	struct server_conn *c;

	if (s == NULL)
		return;
	server_unlisten(s);
	while ((c = LIST_FIRST(&s->conns)) != NULL)
		server_conn_free(c);
	free(s);
}

/* Register a bound listening socket FD. */
static int
server_add_listener(struct server *s, int fd, int port, const char *path,
    struct tlsctx *tls, char *err, size_t errlen)
{
	struct server_listener *sl;

	sl = xcalloc(1, sizeof(*sl));
	sl->l = evconnlistener_new(s->base, server_accept_cb, s,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 1024, fd);
	if (sl->l == NULL) {
		snprintf(err, errlen, "listen: %s", strerror(errno));
		close(fd);
		free(sl);
		return -1;
	}
	sl->port = port;
	sl->is_unix = path != NULL;
	sl->path = path != NULL ? xstrdup(path) : NULL;
	sl->tls = tls;
	LIST_INSERT_HEAD(&s->listeners, sl, entry);
	return 0;
}

/*
 * A TCP socket bound to HOSTPORT (SO_REUSEPORT too if REUSEPORT), its
 * address in *SS; -1 with ERR.
 */
static int
server_inet_bind(const char *hostport, bool reuseport,
    struct sockaddr_storage *ss, char *err, size_t errlen)
{
	int sslen = sizeof(*ss), fd, on = 1;
	socklen_t len = sizeof(*ss);

	memset(ss, 0, sizeof(*ss));
	if (evutil_parse_sockaddr_port(hostport, (struct sockaddr *)ss,
		&sslen) == -1) {
		snprintf(err, errlen, "listen %s: not host:port", hostport);
		return -1;
	}
	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    (reuseport &&
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) ==
		    -1) ||
	    bind(fd, (struct sockaddr *)ss, sslen) == -1 ||
	    getsockname(fd, (struct sockaddr *)ss, &len) == -1) {
		snprintf(err, errlen, "listen %s: %s", hostport,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

/* The port of SS. */
static int
server_ss_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ?
		((const struct sockaddr_in6 *)ss)->sin6_port :
		((const struct sockaddr_in *)ss)->sin_port);
}

/* Listen on HOSTPORT, speaking TLS with TLS unless it is NULL. */
static int
server_listen_inet(struct server *s, const char *hostport, struct tlsctx *tls,
    char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	int fd;

	if ((fd = server_inet_bind(hostport, s->opts.reuseport, &ss, err,
		 errlen)) == -1)
		return -1;
	if (listen(fd, 1024) == -1) {
		snprintf(err, errlen, "listen %s: %s", hostport,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return server_add_listener(s, fd, server_ss_port(&ss), NULL, tls, err,
	    errlen);
}

int
server_listen_tcp(struct server *s, const char *hostport, char *err,
    size_t errlen)
{
	return server_listen_inet(s, hostport, NULL, err, errlen);
}

int
server_listen_tls(struct server *s, const char *hostport, struct tlsctx *tls,
    char *err, size_t errlen)
{
	return server_listen_inet(s, hostport, tls, err, errlen);
}

/*
 * Bind a Unix socket with mode 0600. A leftover socket file from a floe
 * that died is replaced; a live one (connect succeeds) is an error.
 */
int
server_listen_unix(struct server *s, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd, probe;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path)) {
		snprintf(err, errlen, "admin socket %s: path too long", path);
		return -1;
	}
	if ((probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1) {
		if (connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			close(probe);
			snprintf(err, errlen,
			    "admin socket %s: another floe is listening", path);
			return -1;
		}
		close(probe);
	}
	(void)unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(err, errlen, "admin socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(path, 0600) == -1 || listen(fd, 64) == -1) {
		umask(old);
		snprintf(err, errlen, "admin socket %s: %s", path,
		    strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	return server_add_listener(s, fd, 0, path, NULL, err, errlen);
}

int
server_port(const struct server *s)
{
	struct server_listener *sl;

	LIST_FOREACH(sl, &s->listeners, entry)
		if (!sl->is_unix)
			return sl->port;
	return 0;
}

unsigned
server_nconns(const struct server *s)
{
	return s->nconns;
}

void
server_drain(struct server *s)
{
	struct server_conn *c, *tmp;

	s->draining = true;
	server_unlisten(s);
	LIST_FOREACH_SAFE(c, &s->conns, entry, tmp) {
		if (!c->busy && !h1_started(c->h1) &&
		    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
			server_conn_free(c);
		else
			c->close_after = true;
	}
}

static void
server_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen __unused, void *arg)
{
	struct server *s = arg;
	struct server_listener *sl;
	struct tlsctx *tls = NULL;
	struct server_conn *c;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int on = 1;

	c = xcalloc(1, sizeof(*c));
	c->srv = s;
	c->uid = (uid_t)-1;
	LIST_FOREACH(sl, &s->listeners, entry)
		if (sl->l == l) {
			c->port = sl->port;
			tls = sl->tls;
		}
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr,
		    c->peer, sizeof(c->peer));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr,
		    c->peer, sizeof(c->peer));
	else {
		strlcpy(c->peer, "unix", sizeof(c->peer));
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
			c->uid = cred.uid;
	}
	c->peerlen = strlen(c->peer);
	if (sa->sa_family != AF_UNIX)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	/*
	 * A TLS connection handshakes inside its bufferevent; header_timeout
	 * bounds a client that never finishes the handshake (it has sent no
	 * request yet, but it is not idle between two either).
	 */
	c->tls = tls != NULL;
	c->handshaking = c->tls;
	if (tls != NULL)
		c->bev = tlsctx_accept(tls, s->base, fd);
	else
		c->bev =
		    bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(s->base, server_timer_cb, c);
	if (c->bev == NULL || c->timer == NULL) {
		log_warnx("%s: %s: out of memory", __func__, s->opts.name);
		if (c->bev == NULL && tls == NULL)
			close(fd);
		else
			bufferevent_free(c->bev);
		if (c->timer != NULL)
			event_free(c->timer);
		free(c);
		return;
	}
	c->h1 = h1_new(H1_REQUEST, &s->opts.lim);
	/*
	 * A plain connection is read by server_sock_cb and written by
	 * server_flush (see there); TLS ones read by their bufferevent and
	 * written by tlsctx_send. Either has write interest only while its
	 * output holds what the socket did not take (the handshake's own
	 * writes are the TLS bufferevent's business).
	 */
	bufferevent_disable(c->bev, EV_WRITE);
	c->fd = fd;
	if (tls == NULL) {
		c->rev = event_new(s->base, fd, EV_READ | EV_PERSIST,
		    server_sock_cb, c);
		if (c->rev == NULL)
			fatalx("%s: out of memory", __func__);
		sockio_own_input(c->bev);
	}
	bufferevent_setcb(c->bev, server_read_cb, server_write_cb,
	    server_event_cb, c);
	bufferevent_set_timeouts(c->bev, NULL, &s->write_tv);
	/* server_write_cb resumes a stalled connection at this mark. */
	bufferevent_setwatermark(c->bev, EV_WRITE, SERVER_CONN_BUDGET, 0);
	/*
	 * Stop reading while a large backlog waits behind a busy request:
	 * server_sock_cb sees to it on a plain connection, a watermark on a
	 * TLS one (a watermark costs a callback at every change of the
	 * input buffer).
	 */
	if (c->rev != NULL) {
		event_add(c->rev, NULL);
		c->reading = true;
	} else {
		bufferevent_setwatermark(c->bev, EV_READ, 0,
		    s->opts.lim.max_head + s->opts.lim.max_body + 65536);
		bufferevent_enable(c->bev, EV_READ);
	}
	c->idle_us = units_mono_us();
	server_timer_add(c, c->handshaking ? s->head_q : s->idle_q);
	LIST_INSERT_HEAD(&s->conns, c, entry);
	s->nconns++;
}

static void
server_conn_free(struct server_conn *c)
{
	if (c->abort_cb != NULL) {
		server_abort_cb cb = c->abort_cb;

		c->abort_cb = NULL;
		cb(c->abort_arg);
	}
	LIST_REMOVE(c, entry);
	c->srv->nconns--;
	if (c->srv->opts.budgeted)
		server_held -= c->held;
	event_free(c->timer);
	if (c->rev != NULL)
		event_free(c->rev);
	if (c->tls && !c->handshaking)
		tlsctx_close(c->bev);
	bufferevent_free(c->bev);
	h1_free(c->h1);
	/* server_conn_memo's key may be a client's bearer token. */
	explicit_bzero(c->memo_key, sizeof(c->memo_key));
	free(c);
}

/*
 * A client that sent "Expect: 100-continue" waits for a word before it
 * sends its body (curl waits a second): floe has no reason to refuse a
 * body it has not seen, so it says go on once the head is read.
 */
static void
server_continue(struct server_conn *c)
{
	const struct h1_header *h;

	if (c->continued || !h1_awaits_body(c->h1) ||
	    (h = h1_get(h1_msg(c->h1), H1_F_EXPECT)) == NULL ||
	    !h1_name_is(h->value, h->value_len, "100-continue") ||
	    h1_msg(c->h1)->http_minor < 1)
		return;
	c->continued = true;
	evbuffer_add(bufferevent_get_output(c->bev),
	    "HTTP/1.1 100 Continue\r\n\r\n", 25);
	server_flush(c);
}

/* Parse and dispatch what the client sent, one request at a time. */
static void
server_conn_process(struct server_conn *c)
{
	struct server *s = c->srv;
	struct evbuffer *in = bufferevent_get_input(c->bev);
	bool was_started;

	if (c->busy || c->closing || c->stalled)
		return;
	was_started = h1_started(c->h1);
	switch (h1_parse(c->h1, in)) {
	case H1_MORE:
		if (!was_started && h1_started(c->h1))
			server_timer_add(c, s->head_q);
		server_continue(c);
		return;
	case H1_ERROR:
		evtimer_del(c->timer);
		c->timed = false;
		c->busy = true;
		c->close_after = true;
		s->error_cb(c, h1_error_status(c->h1), h1_error_text(c->h1),
		    s->arg);
		return;
	case H1_DONE:
		break;
	}
	/* The idle timer stays: it finds the connection busy (see there). */
	c->busy = true;
	c->head_req = h1_msg(c->h1)->method == H1_HEAD;
	if (!h1_msg(c->h1)->keep_alive || s->draining)
		c->close_after = true;
	s->request_cb(c, h1_msg(c->h1), s->arg);
}

/*
 * A TLS connection read: first what OpenSSL read ahead beyond the record
 * the bufferevent took (see tlsctx_read_pending).
 */
static void
server_read_cb(struct bufferevent *bev __unused, void *arg)
{
	struct server_conn *c = arg;
	struct server *s = c->srv;

	if (c->tls &&
	    tlsctx_read_pending(c->bev,
		s->opts.lim.max_head + s->opts.lim.max_body + 65536) == -1) {
		server_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_EOF, c);
		return;
	}
	server_conn_process(c);
}

/*
 * Reads of a plain connection: one read of up to 64 KiB (libevent's own
 * read asks FIONREAD first and takes at most 4 KiB). Past the backlog
 * limit reading stops until the request in flight is answered.
 */
static void
server_sock_cb(evutil_socket_t fd, short what __unused, void *arg)
{
	struct server_conn *c = arg;
	struct server *s = c->srv;

	switch (sockio_read(c->bev, fd)) {
	case SOCKIO_READ:
		if (evbuffer_get_length(bufferevent_get_input(c->bev)) >
		    s->opts.lim.max_head + s->opts.lim.max_body + 65536) {
			event_del(c->rev);
			c->reading = false;
		}
		server_conn_process(c);
		return;
	case SOCKIO_AGAIN:
		return;
	case SOCKIO_EOF:
		server_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_EOF, c);
		return;
	case SOCKIO_ERROR:
		server_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_ERROR, c);
		return;
	}
}

/*
 * The output drained to SERVER_CONN_BUDGET or below (after each write
 * that leaves it there): a stalled connection is read again; once it is
 * empty, close, or wait for the next request.
 */
static void
server_write_cb(struct bufferevent *bev __unused, void *arg)
{
	struct server_conn *c = arg;

	server_account(c);
	if (c->stalled)
		server_resume(c);
	/* A streamed answer's source may give more. */
	if (c->streaming && c->drain_cb != NULL &&
	    c->held <= SERVER_CONN_BUDGET) {
		c->drain_cb(c->drain_arg);
		return;
	}
	if (c->held > 0)
		return;
	bufferevent_disable(c->bev, EV_WRITE);
	if (c->closing)
		server_conn_free(c);
	else
		c->idle_us = units_mono_us(); /* idle from the last byte out */
}

/*
 * Write a plain connection's answer now rather than on the next loop turn:
 * an answer that fits the socket buffer (nearly all do) costs one write
 * and no epoll_ctl to switch write interest on and off around it. What
 * does not fit is left to the bufferevent, with write interest, until it
 * drains (server_write_cb). A connection to close once written is freed
 * from its timer, never under the caller's feet.
 */
void
server_flush(struct server_conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	size_t len;
	ssize_t n;

	if (c->tls) {
		/* tlsctx_send wrote; the bufferevent writes what is left. */
		server_account(c);
		if (c->held > 0)
			bufferevent_enable(c->bev, EV_WRITE);
		else if (c->closing)
			event_active(c->timer, EV_TIMEOUT, 1);
		return;
	}
	/* Nearly always empty: the answer was written straight. */
	if ((len = evbuffer_get_length(out)) > 0) {
		/* A bufferevent keeps its output's start frozen; so do we. */
		evbuffer_unfreeze(out, 1);
		errno = 0;
		n = sockio_write(out, c->fd);
		evbuffer_freeze(out, 1);
		if (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR) {
			log_debug("%s: %s: write to %s: %s", __func__,
			    c->srv->opts.name, c->peer, strerror(errno));
			evbuffer_drain(out, evbuffer_get_length(out));
			c->closing = true;
		}
		len = evbuffer_get_length(out);
	}
	server_account_len(c, len);
	if (c->held > 0)
		bufferevent_enable(c->bev, EV_WRITE);
	else if (c->closing)
		event_active(c->timer, EV_TIMEOUT, 1);
}

static void
server_event_cb(struct bufferevent *bev __unused, short what, void *arg)
{
	struct server_conn *c = arg;

	/* A TLS handshake completed: the request comes next. */
	if (what & BEV_EVENT_CONNECTED) {
		if (c->handshaking) {
			c->handshaking = false;
			c->idle_us = units_mono_us();
			server_timer_add(c, c->srv->idle_q);
		}
		/*
		 * A request sent right behind the client's Finished may be
		 * in OpenSSL's buffer, off the socket: read it now.
		 */
		if (tlsctx_pending(c->bev))
			server_read_cb(c->bev, c);
		return;
	}
	if (what & BEV_EVENT_EOF && !c->busy && !c->closing &&
	    h1_started(c->h1)) {
		/* Half a request and a close: nothing to answer. */
		log_debug("%s: %s: %s closed mid-request", __func__,
		    c->srv->opts.name, c->peer);
	}
	if (what & BEV_EVENT_TIMEOUT)
		log_debug("%s: %s: write timeout to %s", __func__,
		    c->srv->opts.name, c->peer);
	server_conn_free(c);
}

/*
 * Idle too long, the request head did not arrive in time, or the TLS
 * handshake did not end within header_timeout. The idle
 * timer is not moved for every request (two timer operations each): it
 * stays armed while a request is served and, when it fires, is armed again
 * for what is left of idle_timeout since the connection last went idle.
 * A busy connection ignores it; its answer arms it again if it is not.
 */
static void
server_timer_cb(evutil_socket_t fd __unused, short ev __unused, void *arg)
{
	struct server_conn *c = arg;
	struct timeval left;
	int64_t left_us;

	/*
	 * Fired, the timer is no longer added; made active by server_flush
	 * (a close), it may still be.
	 */
	c->timed = evtimer_pending(c->timer, NULL);
	if (c->closing) {
		/* Answered and written: server_flush asked for the close. */
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
			server_conn_free(c);
		return;
	}
	if (c->busy)
		return;
	if (c->handshaking) {
		log_debug("%s: %s: %s: TLS handshake not finished in "
			  "header_timeout",
		    __func__, c->srv->opts.name, c->peer);
		server_conn_free(c);
		return;
	}
	if (!h1_started(c->h1)) {
		/*
		 * A client still taking its answer is not idle: write_timeout
		 * bounds a client that stops reading, and server_write_cb
		 * starts idle_timeout when the last byte is out.
		 */
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
			c->idle_us = units_mono_us();
		left_us =
		    units_left_us(c->idle_us, c->srv->opts.idle_timeout_ms);
		if (left_us > 0) {
			left = units_us_tv(left_us);
			server_timer_add(c, &left);
			return;
		}
		server_conn_free(c);
		return;
	}
	c->busy = true;
	c->close_after = true;
	c->srv->error_cb(c, 408, "request not received in time", c->srv->arg);
}

/*
 * C's answer is queued whole: close after it, or wait for the next
 * request (and stall while the client does not take what it was given).
 */
void
server_answered(struct server_conn *c)
{
	c->busy = false;
	if (c->close_after) {
		c->closing = true;
		if (c->rev != NULL) {
			event_del(c->rev);
			c->reading = false;
		} else
			bufferevent_disable(c->bev, EV_READ);
		server_flush(c);
		return;
	}
	h1_reset(c->h1);
	c->idle_us = units_mono_us();
	if (!c->timed)
		server_timer_add(c, c->srv->idle_q);
	server_flush(c);
	/*
	 * A client that does not take its answers is not read: its next
	 * request waits (in its socket) until the output drains.
	 */
	if (c->held > SERVER_CONN_BUDGET && !c->closing) {
		c->stalled = true;
		if (c->rev != NULL) {
			event_del(c->rev);
			c->reading = false;
		} else
			bufferevent_disable(c->bev, EV_READ);
		return;
	}
	server_resume(c);
}

/*
 * Read C again and parse a pipelined request that may already be waiting,
 * on a later loop turn, so answers never recurse into the next request.
 */
static void
server_resume(struct server_conn *c)
{
	c->stalled = false;
	if (c->closing || c->busy)
		return;
	if (c->rev != NULL) {
		if (!c->reading) {
			event_add(c->rev, NULL);
			c->reading = true;
		}
	} else
		bufferevent_enable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0 ||
	    (c->tls && tlsctx_pending(c->bev)))
		bufferevent_trigger(c->bev, EV_READ,
		    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/*
 * Note C's output buffer as it is now, and count it in the total held if
 * its server is budgeted.
 */
static void
server_account(struct server_conn *c)
{
	server_account_len(c,
	    evbuffer_get_length(bufferevent_get_output(c->bev)));
}

/* ... whose length N the caller has just read. */
static void
server_account_len(struct server_conn *c, size_t n)
{
	if (c->srv->opts.budgeted) {
		/* Unsigned arithmetic: a shrink wraps to the right sum. */
		server_held += n - c->held;
		if (server_held > server_held_peak)
			server_held_peak = server_held;
	} else if (c->held >= SERVER_TRIM_HINT && n < c->held / 4)
		/* A large admin answer is gone: its heap is worth a trim. */
		server_held_hint(c->held);
	c->held = n;
}

/* Arm C's timer for TV, noted so that no one asks libevent whether it is. */
static void
server_timer_add(struct server_conn *c, const struct timeval *tv)
{
	c->timed = evtimer_add(c->timer, tv) == 0;
}

void
server_set_budget(size_t max)
{
	server_budget = max > 0 ? max : SIZE_MAX;
}

bool
server_over_budget(void)
{
	return server_held > server_budget;
}

size_t
server_held_bytes(void)
{
	return server_held;
}

void
server_held_hint(size_t bytes)
{
	if (server_held + bytes > server_held_peak)
		server_held_peak = server_held + bytes;
}

size_t
server_held_peak_take(void)
{
	size_t peak = server_held_peak;

	server_held_peak = server_held;
	return peak;
}

void
server_conn_close_after(struct server_conn *c)
{
	c->close_after = true;
}

void
server_conn_on_abort(struct server_conn *c, server_abort_cb cb, void *arg)
{
	c->abort_cb = cb;
	c->abort_arg = arg;
}

const char *
server_conn_peer(const struct server_conn *c)
{
	return c->peer;
}
size_t
server_conn_peer_len(const struct server_conn *c)
{
	return c->peerlen;
}

uid_t
server_conn_uid(const struct server_conn *c)
{
	return c->uid;
}

int
server_conn_port(const struct server_conn *c)
{
	return c->port;
}

bool
server_conn_is_tls(const struct server_conn *c)
{
	return c->tls;
}

/* FN of KEY, from the connection's memo when it was the last one asked. */
uint64_t
server_conn_memo(struct server_conn *c, const void *key, size_t len,
    uint64_t (*fn)(const void *, size_t))
{
	if (c->memo_fn == fn && c->memo_len == len &&
	    memcmp(c->memo_key, key, len) == 0)
		return c->memo_val;
	if (len > sizeof(c->memo_key))
		return fn(key, len);
	c->memo_val = fn(key, len);
	c->memo_fn = fn;
	c->memo_len = len;
	memcpy(c->memo_key, key, len);
	return c->memo_val;
}
