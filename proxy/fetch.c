/*
 * floe: fetch.c -- the control-plane HTTP client: libcurl multi driven by the
 * floe event loop (STYLE.md section 9). One CURLM per fetch, one evtimer for
 * libcurl's timeout, one EV_PERSIST event per socket; finished transfers, and
 * the pieces of streamed answers, are handed to their owners from a deferred
 * event, never from libcurl.
 */
#include <sys/socket.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/fetch.h"

#define FETCH_TIMEOUT_MS 10000
#define FETCH_CONNECT_TIMEOUT_MS 2000
#define FETCH_MAX_BODY (16 * 1024 * 1024)

/* One socket libcurl asked us to watch. */
struct fetch_sock {
	struct fetch *f;
	curl_socket_t fd;
	struct event *ev;
	LIST_ENTRY(fetch_sock) entry;
};

enum fetch_state {
	FETCH_RUNNING, /* on f->active, in libcurl */
	FETCH_DONE, /* on f->done, waiting for delivery */
	FETCH_CALLING, /* on no list: its callback runs */
};

/* One request, from fetch_start until its callback returned or it was
 * cancelled. */
struct fetch_req {
	struct fetch *f;
	CURL *easy; /* NULL once finished */
	struct curl_slist *headers;
	char *url;
	fetch_done_cb cb;
	fetch_data_cb data_cb; /* streaming, or NULL */
	void *arg;
	uint64_t timeout_ms;
	uint64_t connect_timeout_ms;
	uint64_t idle_timeout_ms;
	struct event *idle; /* fires after idle_timeout_ms without data */
	/*
	 * The answer body, NUL-terminated; when streaming, what arrived
	 * since the last delivery.
	 */
	char *buf;
	size_t len;
	size_t cap;
	size_t max_body;
	bool too_big;
	char *etag_out; /* the caller's buffer for the ETag, or NULL */
	size_t etag_size;
	char etag[256]; /* the answer's ETag */
	int data_status; /* the HTTP status seen by the write callback */
	bool queued; /* on f->pending: streamed data to deliver */
	bool cancelled; /* cancelled inside its own data callback */
	/* Outcome, set when the transfer ends. */
	int status;
	char *error;
	enum fetch_fail fail;
	char errbuf[CURL_ERROR_SIZE];
	enum fetch_state state;
	TAILQ_ENTRY(fetch_req) entry;
	TAILQ_ENTRY(fetch_req) pentry; /* on f->pending */
};

TAILQ_HEAD(fetch_reqs, fetch_req);

struct fetch {
	struct event_base *base;
	CURLM *multi;
	struct event *timer; /* libcurl's timeout */
	struct event *deliver; /* runs the callbacks of finished requests */
	struct fetch_reqs active; /* transfers in libcurl */
	struct fetch_reqs done; /* finished, callback pending */
	struct fetch_reqs pending; /* streamed data to deliver (pentry) */
	LIST_HEAD(, fetch_sock) socks;
	unsigned nreqs;
	struct fetch_req *calling; /* the request whose callback runs */
	bool dying; /* fetch_free was called from a callback */
};

static CURLM *fetch_multi_new(struct fetch *);
static int fetch_socket_cb(CURL *, curl_socket_t, int, void *, void *);
static int fetch_timer_cb(CURLM *, long, void *);
static void fetch_event_cb(evutil_socket_t, short, void *);
static void fetch_timeout_cb(evutil_socket_t, short, void *);
static void fetch_deliver_cb(evutil_socket_t, short, void *);
static void fetch_idle_cb(evutil_socket_t, short, void *);
static int fetch_deliver_data(struct fetch *, struct fetch_req *);
static void fetch_destroy(struct fetch *);
static void fetch_detach(struct fetch_req *);
static enum fetch_fail fetch_classify(CURL *, CURLcode);
static size_t fetch_write_cb(char *, size_t, size_t, void *);
static void fetch_action(struct fetch *, curl_socket_t, int);
static void fetch_drain(struct fetch *);
static void fetch_finish(struct fetch_req *, CURLcode);
static void fetch_hostport(const char *, char *, size_t);
static void fetch_fail(struct fetch_req *, const char *);
static void fetch_reset(struct fetch *, const char *);
static void fetch_req_free(struct fetch_req *);
static void fetch_sock_free(struct fetch_sock *);
static int fetch_setup(struct fetch_req *, const struct fetch_opts *);

/* Create a multi handle wired to F's timer and socket callbacks. */
static CURLM *
fetch_multi_new(struct fetch *f)
{
	CURLM *multi;

	if ((multi = curl_multi_init()) == NULL)
		return NULL;
	if (curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION,
		fetch_socket_cb) != CURLM_OK ||
	    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, f) != CURLM_OK ||
	    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, fetch_timer_cb) !=
		CURLM_OK ||
	    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, f) != CURLM_OK) {
		curl_multi_cleanup(multi);
		return NULL;
	}
	return multi;
}

/* Create the client on BASE. NULL if libcurl or libevent refuse. */
struct fetch *
fetch_new(struct event_base *base)
{
	struct fetch *f;

	f = xcalloc(1, sizeof(*f));
	f->base = base;
	TAILQ_INIT(&f->active);
	TAILQ_INIT(&f->done);
	TAILQ_INIT(&f->pending);
	LIST_INIT(&f->socks);
	if ((f->timer = evtimer_new(base, fetch_timeout_cb, f)) == NULL)
		goto fail;
	if ((f->deliver = event_new(base, -1, 0, fetch_deliver_cb, f)) == NULL)
		goto fail;
	if ((f->multi = fetch_multi_new(f)) == NULL)
		goto fail;
	return f;
fail:
	log_warnx("%s: cannot set up the control-plane client", __func__);
	if (f->deliver != NULL)
		event_free(f->deliver);
	if (f->timer != NULL)
		event_free(f->timer);
	free(f);
	return NULL;
}

/*
 * Cancel everything and free F. Called from inside a callback, the request
 * being delivered and F itself are freed once that callback returns.
 */
void
fetch_free(struct fetch *f)
{
	struct fetch_req *r, *next;
	struct fetch_sock *s;

	if (f == NULL)
		return;
	TAILQ_FOREACH_SAFE(r, &f->active, entry, next) {
		if (r == f->calling)
			fetch_detach(r);
		else
			fetch_req_free(r);
	}
	TAILQ_FOREACH_SAFE(r, &f->done, entry, next) {
		if (r == f->calling)
			fetch_detach(r);
		else
			fetch_req_free(r);
	}
	/* curl_multi_cleanup may still call the socket callback. */
	if (f->multi != NULL)
		curl_multi_cleanup(f->multi);
	f->multi = NULL;
	while ((s = LIST_FIRST(&f->socks)) != NULL)
		fetch_sock_free(s);
	event_del(f->deliver);
	evtimer_del(f->timer);
	if (f->calling != NULL) {
		f->dying = true;
		return;
	}
	fetch_destroy(f);
}

/* Free what is left of F once no callback runs. */
static void
fetch_destroy(struct fetch *f)
{
	event_free(f->deliver);
	event_free(f->timer);
	free(f);
}

/*
 * Take R, whose data callback runs, out of libcurl and off every list; it
 * is freed when that callback returns.
 */
static void
fetch_detach(struct fetch_req *r)
{
	struct fetch *f = r->f;

	if (r->easy != NULL) {
		if (f->multi != NULL)
			(void)curl_multi_remove_handle(f->multi, r->easy);
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
	}
	if (r->state == FETCH_DONE)
		TAILQ_REMOVE(&f->done, r, entry);
	else if (r->state == FETCH_RUNNING)
		TAILQ_REMOVE(&f->active, r, entry);
	if (r->queued)
		TAILQ_REMOVE(&f->pending, r, pentry);
	r->queued = false;
	if (r->state != FETCH_CALLING)
		f->nreqs--;
	r->state = FETCH_CALLING;
}

/* Transfers started and not yet delivered nor cancelled. */
unsigned
fetch_active(const struct fetch *f)
{
	return f->nreqs;
}

/* How R failed (FETCH_FAIL_NONE if it was answered). */
enum fetch_fail
fetch_failure(const struct fetch_req *r)
{
	return r->fail;
}

/* Free R, taking it out of libcurl and of its list. */
static void
fetch_req_free(struct fetch_req *r)
{
	struct fetch *f = r->f;

	if (r->easy != NULL) {
		/* May call the socket callback (CURL_POLL_REMOVE). */
		if (f->multi != NULL)
			(void)curl_multi_remove_handle(f->multi, r->easy);
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
	}
	if (r->state == FETCH_DONE)
		TAILQ_REMOVE(&f->done, r, entry);
	else if (r->state == FETCH_RUNNING)
		TAILQ_REMOVE(&f->active, r, entry);
	if (r->queued)
		TAILQ_REMOVE(&f->pending, r, pentry);
	if (r->state != FETCH_CALLING)
		f->nreqs--;
	if (r->idle != NULL)
		event_free(r->idle);
	curl_slist_free_all(r->headers);
	free(r->url);
	free(r->buf);
	free(r->error);
	free(r);
}

/* Cancel R; its callback is not called. */
void
fetch_cancel(struct fetch_req *r)
{
	if (r == NULL)
		return;
	/* Inside its own callback: it is freed when the callback returns. */
	if (r->f->calling == r) {
		r->cancelled = true;
		return;
	}
	fetch_req_free(r);
}

/* Apply OPTS to R's easy handle. 0, or -1 if libcurl refused an option. */
static int
fetch_setup(struct fetch_req *r, const struct fetch_opts *o)
{
	CURL *e = r->easy;
	const char *method = o->method != NULL ? o->method : "GET";
	const char *const *h;
	struct curl_slist *l;
	CURLcode rc = CURLE_OK;

	for (h = o->headers; h != NULL && *h != NULL; h++) {
		if ((l = curl_slist_append(r->headers, *h)) == NULL)
			return -1;
		r->headers = l;
	}
	/* No "Expect: 100-continue" round trip for larger bodies. */
	if ((l = curl_slist_append(r->headers, "Expect:")) == NULL)
		return -1;
	r->headers = l;

	rc |= curl_easy_setopt(e, CURLOPT_URL, r->url);
	rc |= curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	rc |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	rc |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	rc |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)r->connect_timeout_ms);
	rc |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
	/* A stream has no total size; max_body bounds what is buffered. */
	if (r->data_cb == NULL)
		rc |= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
		    (curl_off_t)r->max_body);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fetch_write_cb);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	rc |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
	rc |= curl_easy_setopt(e, CURLOPT_USERAGENT, "floe");
	if (o->ca_file != NULL)
		rc |= curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
	if (o->cert_file != NULL)
		rc |= curl_easy_setopt(e, CURLOPT_SSLCERT, o->cert_file);
	if (o->key_file != NULL)
		rc |= curl_easy_setopt(e, CURLOPT_SSLKEY, o->key_file);
	if (o->body != NULL || strcmp(method, "POST") == 0) {
		/* COPYPOSTFIELDS copies: the caller's body lives for the call.
		 */
		rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)(o->body != NULL ? o->body_len : 0));
		rc |= curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS,
		    o->body != NULL ? o->body : "");
	}
	if (strcmp(method, "HEAD") == 0)
		rc |= curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
		rc |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	else if (strcmp(method, "GET") == 0 && o->body != NULL)
		rc |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "GET");
	return rc == CURLE_OK ? 0 : -1;
}

/*
 * Start a request. It always returns a request: a failure to set it up is
 * reported through CB like any other, on a later loop turn.
 */
struct fetch_req *
fetch_start(struct fetch *f, const char *url, const struct fetch_opts *opts,
    fetch_done_cb cb, void *arg)
{
	static const struct fetch_opts defaults;
	const struct fetch_opts *o = opts != NULL ? opts : &defaults;
	struct fetch_req *r;
	CURLMcode mrc;

	r = xcalloc(1, sizeof(*r));
	r->f = f;
	r->url = xstrdup(url);
	r->cb = cb;
	r->data_cb = o->data_cb;
	r->arg = arg;
	r->timeout_ms = o->timeout_ms != 0 ? o->timeout_ms : FETCH_TIMEOUT_MS;
	if (r->data_cb != NULL)
		r->timeout_ms = o->timeout_ms; /* 0: no limit */
	r->idle_timeout_ms = o->idle_timeout_ms;
	r->connect_timeout_ms = o->connect_timeout_ms != 0 ?
	    o->connect_timeout_ms :
	    FETCH_CONNECT_TIMEOUT_MS;
	r->max_body = o->max_body != 0 ? o->max_body : FETCH_MAX_BODY;
	r->etag_out = o->etag_size > 0 ? o->etag : NULL;
	r->etag_size = o->etag_size;
	TAILQ_INSERT_TAIL(&f->active, r, entry);
	f->nreqs++;

	if (f->multi == NULL) {
		fetch_fail(r, "control-plane client is not available");
		return r;
	}
	if ((r->easy = curl_easy_init()) == NULL) {
		fetch_fail(r, "cannot create a transfer");
		return r;
	}
	if (fetch_setup(r, o) == -1) {
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		fetch_fail(r, "cannot set up the transfer");
		return r;
	}
	if (r->idle_timeout_ms != 0) {
		struct timeval tv = units_ms_tv(r->idle_timeout_ms);

		if ((r->idle = evtimer_new(f->base, fetch_idle_cb, r)) ==
			NULL ||
		    evtimer_add(r->idle, &tv) == -1) {
			curl_easy_cleanup(r->easy);
			r->easy = NULL;
			fetch_fail(r, "cannot set up the idle timer");
			return r;
		}
	}
	/* Calls the timer callback only; the transfer starts on its timeout. */
	if ((mrc = curl_multi_add_handle(f->multi, r->easy)) != CURLM_OK) {
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		fetch_fail(r, curl_multi_strerror(mrc));
		return r;
	}
	return r;
}

/*
 * R's idle timer: no byte for idle_timeout_ms. Runs from the loop, so it
 * may take the transfer out of libcurl.
 */
static void
fetch_idle_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct fetch_req *r = arg;
	struct fetch *f = r->f;
	char msg[64];

	if (r->state != FETCH_RUNNING || r->easy == NULL)
		return;
	(void)curl_multi_remove_handle(f->multi, r->easy);
	curl_easy_cleanup(r->easy);
	r->easy = NULL;
	r->fail = FETCH_FAIL_TIMEOUT;
	snprintf(msg, sizeof(msg), "no data for %" PRIu64 " ms",
	    r->idle_timeout_ms);
	fetch_fail(r, msg);
}

/*
 * libcurl write callback: append to R's body, up to its max_body. A stream's
 * piece is queued for delivery from the loop: its owner may cancel it, and
 * libcurl must not be called from here.
 */
static size_t
fetch_write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct fetch_req *r = arg;
	struct fetch *f = r->f;
	size_t n = size * nmemb;
	long status = 0;

	if (n > r->max_body - r->len) {
		/* A short count ends the transfer with CURLE_WRITE_ERROR. */
		r->too_big = true;
		return 0;
	}
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap != 0 ? r->cap : 4096;

		while (cap < r->len + n + 1)
			cap *= 2;
		r->buf = xreallocarray(r->buf, 1, cap);
		r->cap = cap;
	}
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	r->buf[r->len] = '\0';
	if (r->idle != NULL) {
		struct timeval tv = units_ms_tv(r->idle_timeout_ms);

		evtimer_add(r->idle, &tv);
	}
	if (r->data_cb != NULL) {
		if (r->data_status == 0 &&
		    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE,
			&status) == CURLE_OK)
			r->data_status = (int)status;
		if (!r->queued) {
			TAILQ_INSERT_TAIL(&f->pending, r, pentry);
			r->queued = true;
			event_active(f->deliver, EV_TIMEOUT, 1);
		}
	}
	return n;
}

/*
 * libcurl socket callback: (re)build the socket's event from WHAT, or drop it
 * on CURL_POLL_REMOVE ("stop watching", not "closed"). Without EV_PERSIST
 * transfers stall after the first readiness. Returns 0: -1 would kill every
 * transfer of the multi handle.
 */
static int
fetch_socket_cb(CURL *easy __unused, curl_socket_t fd, int what, void *arg,
    void *sockp)
{
	struct fetch *f = arg;
	struct fetch_sock *s = sockp;
	short kind = EV_PERSIST;

	if (what == CURL_POLL_REMOVE) {
		if (s != NULL)
			fetch_sock_free(s);
		return 0;
	}
	if (s == NULL) {
		s = xcalloc(1, sizeof(*s));
		s->f = f;
		s->fd = fd;
		LIST_INSERT_HEAD(&f->socks, s, entry);
		(void)curl_multi_assign(f->multi, fd, s);
	}
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	if (s->ev != NULL)
		event_free(s->ev);
	/* The argument is F: S may be freed inside socket_action. */
	if ((s->ev = event_new(f->base, fd, kind, fetch_event_cb, f)) == NULL ||
	    event_add(s->ev, NULL) == -1)
		log_debug("%s: cannot watch fd %d", __func__, (int)fd);
	return 0;
}

/* Stop watching S and free it. */
static void
fetch_sock_free(struct fetch_sock *s)
{
	if (s->ev != NULL)
		event_free(s->ev);
	LIST_REMOVE(s, entry);
	free(s);
}

/*
 * libcurl timer callback: -1 removes the timer, anything else (0 included)
 * replaces it. Never calls libcurl.
 */
static int
fetch_timer_cb(CURLM *multi __unused, long ms, void *arg)
{
	struct fetch *f = arg;
	struct timeval tv;

	if (ms < 0) {
		evtimer_del(f->timer);
		return 0;
	}
	tv = units_ms_tv((uint64_t)ms);
	evtimer_add(f->timer, &tv);
	return 0;
}

/* A watched socket is ready. */
static void
fetch_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fetch *f = arg;
	int mask = 0;

	if (what & EV_READ)
		mask |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		mask |= CURL_CSELECT_OUT;
	fetch_action(f, fd, mask);
}

/* libcurl's timeout expired. */
static void
fetch_timeout_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	fetch_action(arg, CURL_SOCKET_TIMEOUT, 0);
}

/* Let libcurl work on FD, then collect what finished. */
static void
fetch_action(struct fetch *f, curl_socket_t fd, int mask)
{
	CURLMcode mrc;
	int running;

	mrc = curl_multi_socket_action(f->multi, fd, mask, &running);
	if (mrc != CURLM_OK) {
		fetch_reset(f, curl_multi_strerror(mrc));
		return;
	}
	fetch_drain(f);
}

/* Take every finished transfer out of libcurl and queue its delivery. */
static void
fetch_drain(struct fetch *f)
{
	struct fetch_req *r;
	CURLMsg *msg;
	CURLcode result;
	CURL *easy;
	char *priv;
	int left;

	while ((msg = curl_multi_info_read(f->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		/* The message dies at remove: copy it first. */
		result = msg->data.result;
		easy = msg->easy_handle;
		if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv) !=
			CURLE_OK ||
		    priv == NULL)
			continue;
		r = (struct fetch_req *)priv;
		(void)curl_multi_remove_handle(f->multi, easy);
		fetch_finish(r, result);
	}
}

/*
 * "host:port" of URL into BUF, for error messages. libcurl leaves
 * CURLINFO_PRIMARY_IP empty when the connect failed, so parse the URL.
 */
static void
fetch_hostport(const char *url, char *buf, size_t len)
{
	CURLU *u;
	char *host = NULL, *port = NULL;

	snprintf(buf, len, "%s", url);
	if ((u = curl_url()) == NULL)
		return;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ==
		CURLUE_OK)
		snprintf(buf, len, "%s:%s", host, port);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
}

/* Record how R ended from RESULT, release its handle, queue its delivery. */
static void
fetch_finish(struct fetch_req *r, CURLcode result)
{
	CURL *e = r->easy;
	struct curl_header *h;
	char where[300];
	long status = 0, oserr = 0;
	curl_off_t sent = 0;

	r->fail = fetch_classify(e, result);
	if (r->too_big)
		r->fail = FETCH_FAIL_TOOBIG;
	if (result == CURLE_OK) {
		(void)curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
		r->status = (int)status;
		if (r->etag_out != NULL &&
		    curl_easy_header(e, "ETag", 0, CURLH_HEADER, -1, &h) ==
			CURLHE_OK &&
		    h->value != NULL)
			strlcpy(r->etag, h->value, sizeof(r->etag));
	} else if (r->too_big || result == CURLE_FILESIZE_EXCEEDED) {
		r->error =
		    xasprintf("answer larger than %zu bytes", r->max_body);
	} else if (result == CURLE_COULDNT_CONNECT) {
		(void)curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &oserr);
		fetch_hostport(r->url, where, sizeof(where));
		if (oserr == ECONNREFUSED)
			r->error = xasprintf("connect to %s refused", where);
		else if (oserr != 0)
			r->error = xasprintf("connect to %s: %s", where,
			    strerror((int)oserr));
		else
			r->error = xasprintf("connect to %s: %s", where,
			    r->errbuf[0] != '\0' ? r->errbuf :
						   curl_easy_strerror(result));
	} else if (result == CURLE_OPERATION_TIMEDOUT) {
		/*
		 * Nothing sent yet: the connect (or TLS handshake) hung. A
		 * reused connection has no connect time, so ask about the
		 * request instead.
		 */
		(void)curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &sent);
		if (sent == 0) {
			/* Whichever limit was the tighter one ran out. */
			fetch_hostport(r->url, where, sizeof(where));
			r->error =
			    xasprintf("connect to %s timed out after %" PRIu64
				      " ms",
				where,
				r->connect_timeout_ms < r->timeout_ms ?
				    r->connect_timeout_ms :
				    r->timeout_ms);
		} else
			r->error = xasprintf("timed out after %" PRIu64 " ms",
			    r->timeout_ms);
	} else {
		r->error =
		    xstrdup(r->errbuf[0] != '\0' ? r->errbuf :
						   curl_easy_strerror(result));
	}
	curl_easy_cleanup(e);
	r->easy = NULL;
	fetch_fail(r, NULL);
}

/*
 * Sort a libcurl failure by what its owner may do next: above all, whether
 * the request may have reached the server (nothing is sent before the
 * transfer's "pretransfer" moment).
 */
static enum fetch_fail
fetch_classify(CURL *e, CURLcode result)
{
	curl_off_t pretransfer = 0;

	switch (result) {
	case CURLE_OK:
		return FETCH_FAIL_NONE;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return FETCH_FAIL_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		(void)curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T,
		    &pretransfer);
		return pretransfer == 0 ? FETCH_FAIL_CONNECT :
					  FETCH_FAIL_TIMEOUT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		return FETCH_FAIL_TLS;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return FETCH_FAIL_IO;
	case CURLE_FILESIZE_EXCEEDED:
		return FETCH_FAIL_TOOBIG;
	default:
		return FETCH_FAIL_OTHER;
	}
}

/*
 * Queue R for delivery, with ERROR if given (status 0). The callback runs
 * from the deliver event, so never inside fetch_start or libcurl.
 */
static void
fetch_fail(struct fetch_req *r, const char *error)
{
	struct fetch *f = r->f;

	if (error != NULL) {
		free(r->error);
		r->error = xstrdup(error);
		r->status = 0;
		if (r->fail == FETCH_FAIL_NONE)
			r->fail = FETCH_FAIL_OTHER;
	}
	if (r->idle != NULL)
		evtimer_del(r->idle);
	TAILQ_REMOVE(&f->active, r, entry);
	TAILQ_INSERT_TAIL(&f->done, r, entry);
	r->state = FETCH_DONE;
	event_active(f->deliver, EV_TIMEOUT, 1);
}

/*
 * curl_multi_socket_action itself failed: fail every transfer and start
 * over with a new multi handle.
 */
static void
fetch_reset(struct fetch *f, const char *why)
{
	struct fetch_req *r;
	struct fetch_sock *s;

	log_debug("%s: curl multi: %s", __func__, why);
	while ((r = TAILQ_FIRST(&f->active)) != NULL) {
		if (r->easy != NULL) {
			(void)curl_multi_remove_handle(f->multi, r->easy);
			curl_easy_cleanup(r->easy);
			r->easy = NULL;
		}
		fetch_fail(r, why);
	}
	curl_multi_cleanup(f->multi);
	while ((s = LIST_FIRST(&f->socks)) != NULL)
		fetch_sock_free(s);
	evtimer_del(f->timer);
	f->multi = fetch_multi_new(f);
}

/*
 * Hand R's streamed data to its owner. 0 if R lives on, 1 if its owner
 * cancelled it (it is freed), -1 if its owner freed the whole client (F is
 * gone too).
 */
static int
fetch_deliver_data(struct fetch *f, struct fetch_req *r)
{
	if (r->len == 0)
		return 0;
	f->calling = r;
	r->data_cb(r->data_status, r->buf, r->len, r->arg);
	f->calling = NULL;
	if (f->dying) {
		/* fetch_free ran inside the callback and detached R. */
		fetch_req_free(r);
		fetch_destroy(f);
		return -1;
	}
	if (r->cancelled) {
		fetch_req_free(r);
		return 1;
	}
	r->len = 0;
	return 0;
}

/*
 * Deliver streamed data, then run the callbacks of finished requests and
 * free them. A stream's last data always comes before its done callback.
 */
static void
fetch_deliver_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct fetch *f = arg;
	struct fetch_req *r;
	int rc;

	while ((r = TAILQ_FIRST(&f->pending)) != NULL) {
		TAILQ_REMOVE(&f->pending, r, pentry);
		r->queued = false;
		if (fetch_deliver_data(f, r) == -1)
			return;
	}
	while ((r = TAILQ_FIRST(&f->done)) != NULL) {
		if (r->data_cb != NULL) {
			if ((rc = fetch_deliver_data(f, r)) == -1)
				return;
			if (rc == 1)
				continue; /* cancelled by its data callback */
		}
		TAILQ_REMOVE(&f->done, r, entry);
		r->state = FETCH_CALLING;
		f->nreqs--;
		f->calling = r;
		if (r->etag_out != NULL)
			strlcpy(r->etag_out, r->etag, r->etag_size);
		if (r->data_cb != NULL)
			r->cb(r->status, "", 0, r->error, r->arg);
		else
			r->cb(r->status, r->buf != NULL ? r->buf : "", r->len,
			    r->error, r->arg);
		f->calling = NULL;
		fetch_req_free(r);
		if (f->dying) {
			/* fetch_free ran inside the callback. */
			fetch_destroy(f);
			return;
		}
	}
}
