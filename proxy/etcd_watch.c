/*
 * floe: etcd_watch.c -- etcd watches: one long-lived POST to /v3/watch per
 * watch, whose answer the gateway streams as newline-separated
 * {"result":...} messages (a message may arrive in pieces, or several in
 * one). A stream that fails before its first message moves to the next
 * endpoint; after that, every end is the owner's to handle.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "proxy/etcd.h"
#include "proxy/etcd_json.h"
#include "proxy/etcd_impl.h"
#include "proxy/fetch.h"

/* One watch stream. */
struct etcd_watch {
	struct etcd *e;
	char *body;
	etcd_watch_cb cb;
	void *arg;
	uint64_t idle_ms;
	struct fetch_req *req;
	int ep;
	int tried;
	bool renewed;
	unsigned gen;
	enum etcd_state state;
	bool delivered; /* a message reached the owner: no silent retry */
	bool calling;
	bool cancelled;
	enum etcd_err ferr;
	char *ferror;
	int status; /* the HTTP status of the stream */
	char *buf; /* the start of a line, or an error answer */
	size_t len;
	size_t cap;
	TAILQ_ENTRY(etcd_watch) entry;
};

static void etcd_watch_send(struct etcd_watch *);
static void etcd_watch_data_cb(int, const char *, size_t, void *);
static void etcd_watch_done_cb(int, const char *, size_t, const char *, void *);
static int etcd_watch_line(struct etcd_watch *, const char *, size_t);
static int etcd_watch_deliver(struct etcd_watch *,
    const struct etcd_watch_msg *);
static int etcd_watch_end(struct etcd_watch *, const struct etcd_watch_msg *,
    enum etcd_err, const char *);
static void etcd_watch_free(struct etcd_watch *);

/* Start a watch. */
struct etcd_watch *
etcd_watch(struct etcd *e, const struct etcd_watch_opts *o, etcd_watch_cb cb,
    void *arg)
{
	struct etcd_watch *w;

	w = xcalloc(1, sizeof(*w));
	w->e = e;
	w->cb = cb;
	w->arg = arg;
	w->idle_ms = o->idle_timeout_ms;
	w->ep = e->cur;
	TAILQ_INSERT_TAIL(&e->watches, w, entry);
	if ((w->body = etcdjson_watch(o)) == NULL) {
		w->state = ETCD_S_FAILED;
		w->ferr = ETCD_EREFUSED;
		w->ferror = xstrdup("an etcd watch without a key");
		etcd_fail_later(e);
		return w;
	}
	etcd_watch_send(w);
	return w;
}

/* Open W's stream, or have it wait for a token. */
static void
etcd_watch_send(struct etcd_watch *w)
{
	struct etcd *e = w->e;

	if (etcd_need_auth(e)) {
		w->state = ETCD_S_AUTH;
		etcd_auth_start(e);
		return;
	}
	w->state = ETCD_S_RUNNING;
	w->gen = e->gen;
	w->len = 0;
	w->status = 0;
	w->req = etcd_post(e, w->ep, "/v3/watch", w->body, etcd_watch_data_cb,
	    w->idle_ms, etcd_watch_done_cb, w);
}

/*
 * A piece of W's stream: complete lines are messages. An error answer (not
 * 200) is kept whole for the done callback.
 */
static void
etcd_watch_data_cb(int status, const char *data, size_t len, void *arg)
{
	struct etcd_watch *w = arg;
	size_t off = 0, n;
	char *nl;
	int rc;

	w->status = status;
	if (len > ETCD_MAX_BODY - w->len) {
		etcd_watch_end(w, NULL, ETCD_EPROTO,
		    "etcd watch message larger than 64 MiB");
		return;
	}
	if (w->len + len + 1 > w->cap) {
		w->cap = w->len + len + 1 > 2 * w->cap ? w->len + len + 1 :
							 2 * w->cap;
		w->buf = xreallocarray(w->buf, 1, w->cap);
	}
	memcpy(w->buf + w->len, data, len);
	w->len += len;
	if (status != 200)
		return;
	while ((nl = memchr(w->buf + off, '\n', w->len - off)) != NULL) {
		n = (size_t)(nl - (w->buf + off));
		if (n > 0 && w->buf[off + n - 1] == '\r')
			n--;
		rc = n == 0 ? 0 : etcd_watch_line(w, w->buf + off, n);
		if (rc == -1)
			return; /* W is gone */
		if (rc == 1) {
			/* W restarted on a new stream: the rest is stale. */
			w->len = 0;
			return;
		}
		off = (size_t)(nl - w->buf) + 1;
	}
	memmove(w->buf, w->buf + off, w->len - off);
	w->len -= off;
}

/*
 * One message of W's stream. 0 if W goes on, 1 if it restarted (a new
 * token), -1 if it is over or gone.
 */
static int
etcd_watch_line(struct etcd_watch *w, const char *line, size_t len)
{
	struct etcd *e = w->e;
	const char *ep = e->eps[w->ep];
	struct etcd_watch_msg m;
	char err[512], msg[640];
	int rc;

	if (etcdjson_watch_msg(line, len, &m, err, sizeof(err)) == -1) {
		snprintf(msg, sizeof(msg), "etcd %s: watch: %s", ep, err);
		etcd_watch_end(w, NULL, ETCD_EPROTO, msg);
		return -1;
	}
	etcd_saw(e, &m.header);
	if (m.err == ETCD_OK && m.canceled) {
		if (m.cancel_reason != NULL &&
		    strstr(m.cancel_reason, "invalid auth token") != NULL &&
		    !w->delivered && etcd_renew(e, &w->renewed, w->gen)) {
			etcdjson_watch_msg_clear(&m);
			fetch_cancel(w->req);
			w->req = NULL;
			etcd_watch_send(w);
			return 1;
		}
		if (m.compact_revision > 0) {
			m.err = ETCD_ECOMPACTED;
			snprintf(msg, sizeof(msg),
			    "etcd %s: watch: compacted; the oldest revision "
			    "left is %" PRId64,
			    ep, m.compact_revision);
		} else {
			snprintf(msg, sizeof(msg),
			    "etcd %s: watch cancelled: %s", ep,
			    m.cancel_reason != NULL ? m.cancel_reason : "");
			m.err = m.cancel_reason != NULL &&
				(strstr(m.cancel_reason, "Unauthenticated") ||
				    strstr(m.cancel_reason,
					"PermissionDenied") ||
				    strstr(m.cancel_reason, "user name")) ?
			    ETCD_EAUTH :
			    ETCD_ECANCELED;
		}
		m.error = msg;
	} else if (m.err != ETCD_OK) {
		snprintf(msg, sizeof(msg), "etcd %s: watch: %s", ep, m.error);
		m.error = msg;
	}
	if (m.err != ETCD_OK) {
		etcd_watch_end(w, &m, m.err, m.error);
		etcdjson_watch_msg_clear(&m);
		return -1;
	}
	w->delivered = true;
	rc = etcd_watch_deliver(w, &m);
	etcdjson_watch_msg_clear(&m);
	return rc == ETCD_LIVE ? 0 : -1;
}

/* Hand M to W's owner; returns as etcd_call_deliver. */
static int
etcd_watch_deliver(struct etcd_watch *w, const struct etcd_watch_msg *m)
{
	struct etcd *e = w->e;

	w->calling = true;
	e->calling = true;
	w->cb(m, w->arg);
	w->calling = false;
	e->calling = false;
	if (e->dying) {
		etcd_watch_free(w);
		etcd_destroy(e);
		return ETCD_DEAD;
	}
	if (w->cancelled) {
		etcd_watch_free(w);
		return ETCD_GONE;
	}
	return ETCD_LIVE;
}

/*
 * End W with M (ERR and MSG if M is NULL): close its stream, tell its
 * owner, free it. ETCD_DEAD if the owner freed the client.
 */
static int
etcd_watch_end(struct etcd_watch *w, const struct etcd_watch_msg *m,
    enum etcd_err err, const char *msg)
{
	struct etcd_watch_msg end;
	int rc;

	if (m == NULL) {
		memset(&end, 0, sizeof(end));
		end.err = err;
		end.error = msg;
		m = &end;
	}
	fetch_cancel(w->req);
	w->req = NULL;
	if ((rc = etcd_watch_deliver(w, m)) == ETCD_LIVE) {
		etcd_watch_free(w);
		rc = ETCD_GONE;
	}
	return rc;
}

/*
 * W's stream is over: retry elsewhere if it never got going, else tell
 * the owner. A 200 stream that ends is ETCD_ECLOSED; a timeout is never a
 * revision advance.
 */
static void
etcd_watch_done_cb(int status, const char *body __unused, size_t len __unused,
    const char *error, void *arg)
{
	struct etcd_watch *w = arg;
	struct etcd *e = w->e;
	enum fetch_fail fail = fetch_failure(w->req);
	enum etcd_err err;
	char msg[640], why[400];
	int code;

	w->req = NULL;
	if (status == 0) {
		if (!w->delivered &&
		    etcd_failover(e, &w->ep, &w->tried, true, fail)) {
			etcd_watch_send(w);
			return;
		}
		err = fail == FETCH_FAIL_CONNECT || fail == FETCH_FAIL_TLS ?
		    ETCD_EUNAVAILABLE :
		    fail == FETCH_FAIL_TIMEOUT ? ETCD_ETIMEDOUT :
		    fail == FETCH_FAIL_TOOBIG  ? ETCD_EPROTO :
						 ETCD_ECLOSED;
		snprintf(msg, sizeof(msg), "etcd %s: watch: %s", e->eps[w->ep],
		    error);
	} else if (status != 200) {
		if (etcdjson_error(w->buf != NULL ? w->buf : "", w->len, &code,
			why, sizeof(why)) == -1) {
			err = ETCD_EPROTO;
			snprintf(msg, sizeof(msg), "etcd %s: watch: HTTP %d",
			    e->eps[w->ep], status);
		} else {
			err = etcdjson_classify(code, why);
			if (strstr(why, "invalid auth token") != NULL &&
			    !w->delivered &&
			    etcd_renew(e, &w->renewed, w->gen)) {
				etcd_watch_send(w);
				return;
			}
			snprintf(msg, sizeof(msg), "etcd %s: watch: %s",
			    e->eps[w->ep], why);
		}
	} else {
		err = ETCD_ECLOSED;
		snprintf(msg, sizeof(msg), "etcd %s: the watch stream ended",
		    e->eps[w->ep]);
	}
	(void)etcd_watch_end(w, NULL, err, msg);
}

/* Take W off the list, close its stream and free it. */
static void
etcd_watch_free(struct etcd_watch *w)
{
	fetch_cancel(w->req);
	TAILQ_REMOVE(&w->e->watches, w, entry);
	free(w->body);
	free(w->buf);
	free(w->ferror);
	free(w);
}

/* Stop W; its callback is not called again. */
void
etcd_watch_cancel(struct etcd_watch *w)
{
	if (w == NULL)
		return;
	if (w->calling) {
		w->cancelled = true;
		return;
	}
	etcd_watch_free(w);
}

/*
 * etcd_free: free every watch, but only close the stream of one whose
 * callback runs now; it is freed when that returns.
 */
void
etcd_watches_free(struct etcd *e)
{
	struct etcd_watch *w, *wn;

	TAILQ_FOREACH_SAFE(w, &e->watches, entry, wn) {
		if (w->calling) {
			/* Its stream may be the one calling back now. */
			fetch_cancel(w->req);
			w->req = NULL;
			w->cancelled = true;
		} else
			etcd_watch_free(w);
	}
}

/*
 * The authentication ended with R: open the watches that waited for it,
 * or mark them failed (true if any was: the fail event tells them).
 */
bool
etcd_watches_authed(struct etcd *e, const struct etcd_result *r)
{
	struct etcd_watch *w, *wn;
	bool failed = false;

	TAILQ_FOREACH_SAFE(w, &e->watches, entry, wn) {
		if (w->state != ETCD_S_AUTH)
			continue;
		if (r->err == ETCD_OK)
			etcd_watch_send(w);
		else {
			w->state = ETCD_S_FAILED;
			w->ferr = r->err;
			w->ferror = xstrdup(r->error);
			failed = true;
		}
	}
	return failed;
}

/*
 * From the fail event: end one watch that could not start. ETCD_GONE if
 * one was ended (look for more), ETCD_LIVE if none was left, ETCD_DEAD if
 * its owner freed the client.
 */
int
etcd_watches_fail(struct etcd *e)
{
	struct etcd_watch *w;

	TAILQ_FOREACH(w, &e->watches, entry)
		if (w->state == ETCD_S_FAILED)
			return etcd_watch_end(w, NULL, w->ferr, w->ferror);
	return ETCD_LIVE;
}
