/*
 * floe: admin_sock.c -- the admin socket's glue. A request from a uid that
 * may not use the socket gets a 403. Reads are answered at once. A change
 * waits behind the imports running on the worker, in order, so that it
 * never blocks the loop on their LMDB txn (one writer at a time); an
 * import itself is answered when the worker is done with it.
 */
#include <sys/types.h>
#include <sys/queue.h>

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
#include "lib/xmalloc.h"
#include "proxy/admin.h"
#include "proxy/admin_sock.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/server.h"
#include "proxy/stats.h"
#include "proxy/worker.h"

/* A change held back while imports run on the worker. */
struct admin_sock_held {
	struct admin_sock *as;
	struct server_conn *conn;
	struct h1_msg *m;
	TAILQ_ENTRY(admin_sock_held) entry;
};

struct admin_sock {
	struct floe *f;
	TAILQ_HEAD(, admin_sock_held) held; /* oldest first */
};

/* An admin request answered later (a bulk import): its peer, if still there. */
struct admin_sock_wait {
	struct admin_sock *as;
	struct server_conn *conn; /* NULL: the peer went away */
};

static bool admin_sock_uid_ok(const struct conf *, uid_t);
static json_t *admin_sock_status_cb(void *);
static void admin_sock_gone(void *);
static void admin_sock_later(struct admin_reply *, void *);
static void admin_sock_reply(struct server_conn *, const struct admin_reply *);
static void admin_sock_held_gone(void *);
static void admin_sock_release(struct admin_sock *);
static void admin_sock_idle(void *);
static void admin_sock_run(struct admin_sock *, struct server_conn *,
    struct h1_msg *);
static void admin_sock_reload(struct admin_sock *, struct server_conn *,
    const struct h1_msg *);

struct admin_sock *
admin_sock_new(struct floe *f)
{
	struct admin_sock *as;

	as = xcalloc(1, sizeof(*as));
	as->f = f;
	TAILQ_INIT(&as->held);
	stats_add_status(&f->stats, "admin", admin_sock_status_cb, as);
	stats_add_status(&f->stats, "store", admin_store_status_cb, f);
	stats_add_status(&f->stats, "waves", admin_waves_status_cb, f);
	stats_add_metrics(&f->stats, admin_readers_metrics_cb, f);
	/*
	 * Not only imports keep the worker busy (the reader inventory's
	 * flushes, the rollback log's retries): the changes held go on when
	 * its last job is done, whichever it was.
	 */
	if (f->worker != NULL)
		worker_on_idle(f->worker, admin_sock_idle, as);
	return as;
}

/* worker_idle_fn: serve the changes held behind the worker's jobs. */
static void
admin_sock_idle(void *arg)
{
	admin_sock_release(arg);
}

void
admin_sock_free(struct admin_sock *as)
{
	struct admin_sock_held *h;

	if (as == NULL)
		return;
	stats_remove(&as->f->stats, as);
	if (as->f->worker != NULL)
		worker_on_idle(as->f->worker, NULL, NULL);
	admin_readers_metrics_free();
	admin_elig_keep(NULL, 0, NULL, 0);
	/* Freed before its server: the changes held go unanswered. */
	while ((h = TAILQ_FIRST(&as->held)) != NULL) {
		TAILQ_REMOVE(&as->held, h, entry);
		server_conn_on_abort(h->conn, NULL, NULL);
		free(h);
	}
	free(as);
}

/*
 * May UID use the admin socket? admin_uids when set, else floe's own uid
 * and root. The socket's mode 0600 is the first fence; this is the second.
 */
static bool
admin_sock_uid_ok(const struct conf *c, uid_t uid)
{
	int i;

	if (uid == (uid_t)-1)
		return false;
	if (c->nadmin_uids == 0)
		return uid == 0 || uid == getuid();
	for (i = 0; i < c->nadmin_uids; i++)
		if (c->admin_uids[i] == uid)
			return true;
	return false;
}

/* stats_status_cb: the queue: imports, and changes waiting behind them. */
static json_t *
admin_sock_status_cb(void *arg)
{
	struct admin_sock *as = arg;
	struct admin_sock_held *h;
	struct worker *wk = as->f->worker;
	json_int_t held = 0;
	uint64_t forks, avg, max;

	TAILQ_FOREACH(h, &as->held, entry)
		held++;
	max = worker_fork_us_max(wk, &forks, &avg);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "imports",
	    (json_int_t)worker_pending(wk), "changes_waiting", held, "forks",
	    (json_int_t)forks, "fork_avg_us", (json_int_t)avg, "fork_max_us",
	    (json_int_t)max, "helper_starts",
	    (json_int_t)worker_helper_starts(wk));
}

/* The peer of an import went away: the import goes on, unanswered. */
static void
admin_sock_gone(void *arg)
{
	struct admin_sock_wait *w = arg;

	w->conn = NULL;
}

/* Send REP (its body borrowed) on CONN, with its Allow header if any. */
static void
admin_sock_reply(struct server_conn *conn, const struct admin_reply *rep)
{
	struct evbuffer *b;
	char hdr[192];
	int n;

	if (rep->buf != NULL) {
		n = snprintf(hdr, sizeof(hdr), "Content-Type: %s\r\n",
		    rep->content_type != NULL ? rep->content_type :
						"application/json");
		server_reply(conn, rep->status, hdr, n, rep->buf,
		    evbuffer_get_length(rep->buf));
		return;
	}
	if (rep->allow[0] == '\0') {
		server_reply_mem(conn, rep->status,
		    rep->content_type != NULL ? rep->content_type :
						"application/json",
		    rep->body, rep->len);
		return;
	}
	n = snprintf(hdr, sizeof(hdr), "Content-Type: %s\r\nAllow: %s\r\n",
	    rep->content_type != NULL ? rep->content_type : "application/json",
	    rep->allow);
	if ((b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add(b, rep->body, rep->len);
	server_reply(conn, rep->status, hdr, n, b, rep->len);
	evbuffer_free(b);
}

/* The import is done: answer its peer, then serve the changes held. */
static void
admin_sock_later(struct admin_reply *rep, void *arg)
{
	struct admin_sock_wait *w = arg;
	struct admin_sock *as = w->as;

	if (w->conn != NULL)
		admin_sock_reply(w->conn, rep);
	free(rep->body);
	if (rep->buf != NULL)
		evbuffer_free(rep->buf);
	free(w);
	admin_sock_release(as);
}

/* The peer of a held change went away: forget it. */
static void
admin_sock_held_gone(void *arg)
{
	struct admin_sock_held *h = arg;

	TAILQ_REMOVE(&h->as->held, h, entry);
	free(h);
}

/* Serve the changes held, oldest first, until one is an import again. */
static void
admin_sock_release(struct admin_sock *as)
{
	struct admin_sock_held *h;
	struct server_conn *conn;
	struct h1_msg *m;

	while (worker_pending(as->f->worker) == 0 &&
	    (h = TAILQ_FIRST(&as->held)) != NULL) {
		TAILQ_REMOVE(&as->held, h, entry);
		conn = h->conn;
		m = h->m;
		free(h);
		server_conn_on_abort(conn, NULL, NULL);
		admin_sock_run(as, conn, m);
	}
}

void
admin_sock_serve(struct server_conn *conn, struct h1_msg *m, void *arg)
{
	struct admin_sock *as = arg;
	struct admin_sock_held *h;
	uid_t uid = server_conn_uid(conn);
	char body[256];
	int n;

	if (!admin_sock_uid_ok(as->f->conf, uid)) {
		log_warnx("%s: uid %ld refused: not in admin_uids", __func__,
		    uid == (uid_t)-1 ? -1L : (long)uid);
		n = snprintf(body, sizeof(body),
		    "{\"error\":{\"message\":\"uid %ld may not use the admin "
		    "socket (admin_uids)\",\"type\":\"ForbiddenException\","
		    "\"code\":403}}",
		    uid == (uid_t)-1 ? -1L : (long)uid);
		server_conn_close_after(conn);
		server_reply_mem(conn, 403, "application/json", body, n);
		return;
	}
	/* A reload writes nothing to the store: it need not wait. */
	if (m->target_len == 7 && memcmp(m->target, "/reload", 7) == 0 &&
	    as->f->reload != NULL) {
		admin_sock_reload(as, conn, m);
		return;
	}
	if (m->method != H1_GET && m->method != H1_HEAD &&
	    (worker_pending(as->f->worker) > 0 || !TAILQ_EMPTY(&as->held))) {
		h = xcalloc(1, sizeof(*h));
		h->as = as;
		h->conn = conn;
		h->m = m;
		TAILQ_INSERT_TAIL(&as->held, h, entry);
		server_conn_on_abort(conn, admin_sock_held_gone, h);
		return;
	}
	admin_sock_run(as, conn, m);
}

/* Serve one admin request: now, or later for an import. */
static void
admin_sock_run(struct admin_sock *as, struct server_conn *conn,
    struct h1_msg *m)
{
	struct admin_sock_wait *w;
	struct admin_reply rep;

	memset(&rep, 0, sizeof(rep));
	w = xcalloc(1, sizeof(*w));
	w->as = as;
	w->conn = conn;
	if (admin_handle(as->f, m->method_name, m->target, m->target_len,
		m->body, server_conn_uid(conn), &rep, admin_sock_later,
		w) == 1) {
		server_conn_on_abort(conn, admin_sock_gone, w);
		return;
	}
	free(w);
	admin_sock_reply(conn, &rep);
	free(rep.body);
}

/*
 * POST /reload: read floe.conf again, as SIGHUP does. 200 with the outcome
 * when the file applied (its restart_needed keys kept their running
 * value); 409 naming every error when the file changed nothing; 405 for
 * another method.
 */
static void
admin_sock_reload(struct admin_sock *as, struct server_conn *conn,
    const struct h1_msg *m)
{
	static const char not_post[] =
	    "{\"error\":{\"message\":\"/reload takes POST\",\"type\":"
	    "\"MethodNotAllowedException\",\"code\":405}}";
	struct admin_reply rep;
	json_t *o, *e;
	char *s;
	int status = 200;

	if (m->method != H1_POST) {
		memset(&rep, 0, sizeof(rep));
		rep.status = 405;
		rep.body = (char *)(uintptr_t)not_post;
		rep.len = sizeof(not_post) - 1;
		strlcpy(rep.allow, "POST", sizeof(rep.allow));
		admin_sock_reply(conn, &rep);
		return;
	}
	o = as->f->reload(as->f);
	if (!json_is_true(json_object_get(o, "applied"))) {
		status = 409;
		e = json_pack("{s:{s:O, s:s, s:i, s:O, s:O}}", "error",
		    "message", json_object_get(o, "message"), "type",
		    "RefusedException", "code", 409, "errors",
		    json_object_get(o, "errors"), "generation",
		    json_object_get(o, "generation"));
		json_decref(o);
		o = e;
	}
	if (o == NULL || (s = json_dumps(o, JSON_COMPACT)) == NULL)
		fatalx("admin: out of memory");
	json_decref(o);
	server_reply_mem(conn, status, "application/json", s, strlen(s));
	free(s);
}

void
admin_sock_error(struct server_conn *conn, int status, const char *why,
    void *arg __unused)
{
	char body[512];
	json_t *j;
	char *s;

	j = json_pack("{s:{s:s, s:s, s:i}}", "error", "message", why, "type",
	    "BadRequestException", "code", status);
	s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	snprintf(body, sizeof(body), "%s", s != NULL ? s : "{}");
	free(s);
	server_reply_mem(conn, status, "application/json", body, strlen(body));
}
