/*
 * floe: etcd.c -- floe's etcd v3 client: endpoints, auth and calls. Every
 * call is a POST of JSON to one endpoint's gateway through the fetch client;
 * a call that gets no answer moves on to the next endpoint when that cannot
 * apply it twice, and an invalid auth token is renewed once. Watches are in
 * etcd_watch.c.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/xmalloc.h"
#include "proxy/etcd.h"
#include "proxy/etcd_json.h"
#include "proxy/etcd_impl.h"
#include "proxy/fetch.h"

#define ETCD_TIMEOUT_MS 2000
#define ETCD_PAGE 1000

/* What a call asks etcd, and where. */
enum etcd_kind {
	ETCD_K_RANGE,
	ETCD_K_PAGES, /* etcd_range_all */
	ETCD_K_TXN,
	ETCD_K_GRANT,
	ETCD_K_KEEPALIVE,
	ETCD_K_REVOKE,
	ETCD_K_AUTH,
};

static const char *const etcd_paths[] = {
	[ETCD_K_RANGE] = "/v3/kv/range",
	[ETCD_K_PAGES] = "/v3/kv/range",
	[ETCD_K_TXN] = "/v3/kv/txn",
	[ETCD_K_GRANT] = "/v3/lease/grant",
	[ETCD_K_KEEPALIVE] = "/v3/lease/keepalive",
	[ETCD_K_REVOKE] = "/v3/lease/revoke",
	[ETCD_K_AUTH] = "/v3/auth/authenticate",
};

/* One call, from its start until its callback returned or it was cancelled. */
struct etcd_call {
	struct etcd *e;
	enum etcd_kind kind;
	char *body;
	bool safe; /* sending it twice changes nothing */
	etcd_done_cb cb;
	void *arg;
	struct fetch_req *req;
	int ep; /* the endpoint of this attempt */
	int tried; /* endpoints tried after the first */
	bool renewed; /* its token was renewed once */
	unsigned gen; /* the token generation it was sent with */
	enum etcd_state state;
	bool calling; /* its callback runs */
	bool cancelled; /* cancelled inside its callback */
	enum etcd_err ferr; /* ETCD_S_FAILED: why */
	char *ferror;
	/* etcd_range_all: the next page's start, the end, the revision. */
	struct etcd_op page;
	char *pkey;
	size_t pkey_len;
	char *pend;
	size_t pend_len;
	TAILQ_ENTRY(etcd_call) entry;
};

static int etcd_endpoints(struct etcd *, const char *, char *, size_t);
static int etcd_password(struct etcd *, const char *, char *, size_t);
static void etcd_auth_done(struct etcd *, const struct etcd_result *);
static void etcd_fail_cb(evutil_socket_t, short, void *);
static struct etcd_call *etcd_call_new(struct etcd *, enum etcd_kind, char *,
    bool, etcd_done_cb, void *);
static struct etcd_call *etcd_call_start(struct etcd_call *, struct etcd *,
    enum etcd_kind, char *, bool, etcd_done_cb, void *);
static void etcd_call_send(struct etcd_call *);
static void etcd_call_done_cb(int, const char *, size_t, const char *, void *);
static int etcd_call_decode(struct etcd_call *, const char *, size_t,
    struct etcd_result *, char *, size_t);
static int etcd_call_deliver(struct etcd_call *, const struct etcd_result *);
static void etcd_call_end(struct etcd_call *, const struct etcd_result *);
static int etcd_page_next(struct etcd_call *, const struct etcd_result *);
static void etcd_call_free(struct etcd_call *);

/* A short name for ERR. */
const char *
etcd_strerror(enum etcd_err err)
{
	static const char *const names[] = {
		[ETCD_OK] = "ok",
		[ETCD_EUNAVAILABLE] = "unavailable",
		[ETCD_ETIMEDOUT] = "timed out",
		[ETCD_EAUTH] = "authentication refused",
		[ETCD_ECOMPACTED] = "compacted",
		[ETCD_EFUTURE] = "future revision",
		[ETCD_ENOTFOUND] = "not found",
		[ETCD_EREFUSED] = "refused",
		[ETCD_EPROTO] = "unreadable answer",
		[ETCD_ECLOSED] = "stream ended",
		[ETCD_ECANCELED] = "cancelled",
		[ETCD_ESERVER] = "etcd error",
	};

	if ((size_t)err >= nitems(names) || names[err] == NULL)
		return "unknown";
	return names[err];
}

/* Split LIST ("URL[,URL...]") into E's endpoints. -1 with ERR set. */
static int
etcd_endpoints(struct etcd *e, const char *list, char *err, size_t errlen)
{
	char *copy, *p, *tok, *end;
	size_t n;

	if (list == NULL || *list == '\0') {
		snprintf(err, errlen, "no etcd endpoint");
		return -1;
	}
	copy = xstrdup(list);
	for (p = copy; (tok = strsep(&p, ",")) != NULL;) {
		while (isspace((unsigned char)*tok))
			tok++;
		end = tok + strlen(tok);
		while (end > tok &&
		    (isspace((unsigned char)end[-1]) || end[-1] == '/'))
			*--end = '\0';
		n = strncmp(tok, "http://", 7) == 0  ? 7 :
		    strncmp(tok, "https://", 8) == 0 ? 8 :
						       0;
		if (n == 0 || tok[n] == '\0' ||
		    strpbrk(tok + n, "/?#") != NULL) {
			snprintf(err, errlen,
			    "etcd endpoint \"%s\" is not http(s)://HOST:PORT",
			    tok);
			free(copy);
			return -1;
		}
		if (e->neps == ETCD_MAX_ENDPOINTS) {
			snprintf(err, errlen, "more than %d etcd endpoints",
			    ETCD_MAX_ENDPOINTS);
			free(copy);
			return -1;
		}
		e->eps[e->neps++] = xstrdup(tok);
	}
	free(copy);
	return 0;
}

/* Read the first line of PATH as the password. -1 with ERR set. */
static int
etcd_password(struct etcd *e, const char *path, char *err, size_t errlen)
{
	FILE *fp;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (path == NULL) {
		snprintf(err, errlen, "etcd user %s has no password file",
		    e->user);
		return -1;
	}
	if ((fp = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = getline(&line, &cap, fp);
	fclose(fp);
	if (n <= 0) {
		free(line);
		snprintf(err, errlen, "%s: empty", path);
		return -1;
	}
	line[strcspn(line, "\r\n")] = '\0';
	e->password = line;
	return 0;
}

/* Create a client; see etcd.h. */
struct etcd *
etcd_new(struct event_base *base, struct fetch *fetch,
    const struct etcd_conf *conf, char *err, size_t errlen)
{
	struct etcd *e;

	e = xcalloc(1, sizeof(*e));
	e->fetch = fetch;
	TAILQ_INIT(&e->calls);
	TAILQ_INIT(&e->watches);
	e->timeout_ms =
	    conf->timeout_ms != 0 ? conf->timeout_ms : ETCD_TIMEOUT_MS;
	if (etcd_endpoints(e, conf->endpoints, err, errlen) == -1)
		goto fail;
	if (conf->user != NULL && *conf->user != '\0') {
		e->user = xstrdup(conf->user);
		if (etcd_password(e, conf->password_file, err, errlen) == -1)
			goto fail;
	}
	if (conf->ca_file != NULL)
		e->ca_file = xstrdup(conf->ca_file);
	if (conf->cert_file != NULL)
		e->cert_file = xstrdup(conf->cert_file);
	if (conf->key_file != NULL)
		e->key_file = xstrdup(conf->key_file);
	e->fail_ev = event_new(base, -1, 0, etcd_fail_cb, e);
	if (e->fail_ev == NULL) {
		snprintf(err, errlen, "cannot create an event");
		goto fail;
	}
	return e;
fail:
	etcd_destroy(e);
	return NULL;
}

/* Cancel every call and watch and free E; see etcd.h. */
void
etcd_free(struct etcd *e)
{
	struct etcd_call *c, *cn;

	if (e == NULL)
		return;
	TAILQ_FOREACH_SAFE(c, &e->calls, entry, cn) {
		if (c->calling)
			c->cancelled = true;
		else
			etcd_call_free(c);
	}
	etcd_watches_free(e);
	if (e->auth != NULL)
		etcd_call_free(e->auth);
	e->auth = NULL;
	if (e->calling) {
		e->dying = true;
		return;
	}
	etcd_destroy(e);
}

/* Free E itself, once nothing is left in flight. */
void
etcd_destroy(struct etcd *e)
{
	int i;

	for (i = 0; i < e->neps; i++)
		free(e->eps[i]);
	free(e->user);
	if (e->password != NULL)
		explicit_bzero(e->password, strlen(e->password));
	free(e->password);
	if (e->token != NULL)
		explicit_bzero(e->token, strlen(e->token));
	free(e->token);
	free(e->ca_file);
	free(e->cert_file);
	free(e->key_file);
	if (e->fail_ev != NULL)
		event_free(e->fail_ev);
	free(e);
}

/* The cluster of the last answer. */
uint64_t
etcd_cluster_id(const struct etcd *e)
{
	return e->cluster_id;
}

/* The member of the last answer. */
uint64_t
etcd_member_id(const struct etcd *e)
{
	return e->member_id;
}

/* Where calls go first. */
const char *
etcd_endpoint(const struct etcd *e)
{
	return e->eps[e->cur];
}

/* Remember who answered. */
void
etcd_saw(struct etcd *e, const struct etcd_header *h)
{
	if (h->cluster_id != 0)
		e->cluster_id = h->cluster_id;
	if (h->member_id != 0)
		e->member_id = h->member_id;
}

/*
 * POST BODY to PATH of endpoint EP, with the token if there is one. With
 * DATA_CB the answer is a stream: no total timeout, IDLE_MS instead.
 */
struct fetch_req *
etcd_post(struct etcd *e, int ep, const char *path, const char *body,
    fetch_data_cb data_cb, uint64_t idle_ms, fetch_done_cb cb, void *arg)
{
	const char *headers[3] = { "Content-Type: application/json", NULL,
		NULL };
	struct fetch_opts o = {
		.method = "POST",
		.headers = headers,
		.body = body,
		.body_len = strlen(body),
		.timeout_ms = data_cb != NULL ? 0 : e->timeout_ms,
		.connect_timeout_ms = e->timeout_ms,
		.ca_file = e->ca_file,
		.cert_file = e->cert_file,
		.key_file = e->key_file,
		.max_body = ETCD_MAX_BODY,
		.data_cb = data_cb,
		.idle_timeout_ms = idle_ms,
	};
	struct fetch_req *r;
	char *url, *auth = NULL;

	url = xasprintf("%s%s", e->eps[ep], path);
	if (e->token != NULL) {
		auth = xasprintf("Authorization: %s", e->token);
		headers[1] = auth;
	}
	r = fetch_start(e->fetch, url, &o, cb, arg);
	free(url);
	if (auth != NULL) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	return r;
}

/* Whether a call must wait for a token first. */
bool
etcd_need_auth(const struct etcd *e)
{
	return e->user != NULL && e->token == NULL;
}

/* Authenticate, unless that is under way already. */
void
etcd_auth_start(struct etcd *e)
{
	struct etcd_call *c;

	if (e->auth != NULL)
		return;
	c = xcalloc(1, sizeof(*c));
	c->e = e;
	c->kind = ETCD_K_AUTH;
	c->body = etcdjson_auth(e->user, e->password);
	c->safe = true;
	c->ep = e->cur;
	e->auth = c;
	etcd_call_send(c);
}

/*
 * The authentication ended with R: send what waited for it, or fail it
 * (from the fail event, as several owners may be told).
 */
static void
etcd_auth_done(struct etcd *e, const struct etcd_result *r)
{
	struct etcd_call *c, *cn;

	TAILQ_FOREACH_SAFE(c, &e->calls, entry, cn) {
		if (c->state != ETCD_S_AUTH)
			continue;
		if (r->err == ETCD_OK)
			etcd_call_send(c);
		else {
			c->state = ETCD_S_FAILED;
			c->ferr = r->err;
			c->ferror = xstrdup(r->error);
		}
	}
	(void)etcd_watches_authed(e, r);
	if (r->err != ETCD_OK)
		etcd_fail_later(e);
}

/*
 * An attempt on endpoint *EP failed with FAIL. Move *EP to the next
 * endpoint if one is left and the call cannot be applied twice: nothing
 * was sent, or it is SAFE. Either way, later calls start elsewhere.
 */
bool
etcd_failover(struct etcd *e, int *ep, int *tried, bool safe,
    enum fetch_fail fail)
{
	bool sent = fail != FETCH_FAIL_CONNECT && fail != FETCH_FAIL_TLS;
	int next = (*ep + 1) % e->neps;

	if (fail == FETCH_FAIL_TOOBIG || fail == FETCH_FAIL_OTHER)
		return false;
	if (e->cur == *ep)
		e->cur = next;
	if ((sent && !safe) || *tried + 1 >= e->neps)
		return false;
	log_debug("%s: %s failed, trying %s", __func__, e->eps[*ep],
	    e->eps[next]);
	(*tried)++;
	*ep = next;
	return true;
}

/*
 * etcd said the token sent with generation GEN is invalid (it expired, or
 * another member issued it). Drop it unless a newer one came meanwhile;
 * true if the call should be sent once more.
 */
bool
etcd_renew(struct etcd *e, bool *renewed, unsigned gen)
{
	if (e->user == NULL || *renewed)
		return false;
	*renewed = true;
	if (e->gen == gen && e->token != NULL) {
		explicit_bzero(e->token, strlen(e->token));
		free(e->token);
		e->token = NULL;
	}
	return true;
}

/* Have the fail event run. */
void
etcd_fail_later(struct etcd *e)
{
	event_active(e->fail_ev, EV_TIMEOUT, 1);
}

/* Fail, one at a time, the calls and watches that could not start. */
static void
etcd_fail_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct etcd *e = arg;
	struct etcd_result r;
	struct etcd_call *c;
	int rc;

	for (;;) {
		TAILQ_FOREACH(c, &e->calls, entry)
			if (c->state == ETCD_S_FAILED)
				break;
		if (c != NULL) {
			memset(&r, 0, sizeof(r));
			r.err = c->ferr;
			r.error = c->ferror;
			r.endpoint = "";
			rc = etcd_call_deliver(c, &r);
			if (rc == ETCD_DEAD)
				return;
			if (rc == ETCD_LIVE)
				etcd_call_free(c);
			continue;
		}
		if (etcd_watches_fail(e) != ETCD_GONE)
			return;
	}
}

/*
 * A new call of KIND with request BODY (taken), on the calls list; SAFE if
 * sending it twice changes nothing.
 */
static struct etcd_call *
etcd_call_new(struct etcd *e, enum etcd_kind kind, char *body, bool safe,
    etcd_done_cb cb, void *arg)
{
	return etcd_call_start(xcalloc(1, sizeof(struct etcd_call)), e, kind,
	    body, safe, cb, arg);
}

/* Start C, as etcd_call_new; fail it later if there is no BODY. */
static struct etcd_call *
etcd_call_start(struct etcd_call *c, struct etcd *e, enum etcd_kind kind,
    char *body, bool safe, etcd_done_cb cb, void *arg)
{
	c->e = e;
	c->kind = kind;
	c->body = body;
	c->cb = cb;
	c->arg = arg;
	c->ep = e->cur;
	c->safe = safe;
	TAILQ_INSERT_TAIL(&e->calls, c, entry);
	if (body == NULL) {
		c->state = ETCD_S_FAILED;
		c->ferr = ETCD_EREFUSED;
		c->ferror = xstrdup("an etcd request without a key");
		etcd_fail_later(e);
		return c;
	}
	etcd_call_send(c);
	return c;
}

/* Send C to its endpoint, or have it wait for a token. */
static void
etcd_call_send(struct etcd_call *c)
{
	struct etcd *e = c->e;

	if (c->kind != ETCD_K_AUTH && etcd_need_auth(e)) {
		c->state = ETCD_S_AUTH;
		etcd_auth_start(e);
		return;
	}
	c->state = ETCD_S_RUNNING;
	c->gen = e->gen;
	c->req = etcd_post(e, c->ep, etcd_paths[c->kind], c->body, NULL, 0,
	    etcd_call_done_cb, c);
}

/* Read a 200 answer to C into R. -1 with ERR set. */
static int
etcd_call_decode(struct etcd_call *c, const char *body, size_t len,
    struct etcd_result *r, char *err, size_t errlen)
{
	switch (c->kind) {
	case ETCD_K_RANGE:
	case ETCD_K_PAGES:
		return etcdjson_range_answer(body, len, r, err, errlen);
	case ETCD_K_TXN:
		return etcdjson_txn_answer(body, len, r, err, errlen);
	case ETCD_K_GRANT:
	case ETCD_K_KEEPALIVE:
	case ETCD_K_REVOKE:
		if (etcdjson_lease_answer(body, len, r, err, errlen) == -1)
			return -1;
		if (c->kind == ETCD_K_KEEPALIVE && r->ttl <= 0) {
			/* The gateway's way of saying "no such lease". */
			r->err = ETCD_ENOTFOUND;
			snprintf(err, errlen, "lease %" PRId64 " is gone",
			    r->lease);
		}
		return 0;
	case ETCD_K_AUTH:
		break;
	}
	return -1;
}

/*
 * libcurl is done with C's request: retry it elsewhere, renew the token,
 * or tell its owner.
 */
static void
etcd_call_done_cb(int status, const char *body, size_t len, const char *error,
    void *arg)
{
	struct etcd_call *c = arg;
	struct etcd *e = c->e;
	enum fetch_fail fail = fetch_failure(c->req);
	struct etcd_result r;
	char msg[512], why[400];
	char *token = NULL;
	int code;

	c->req = NULL;
	memset(&r, 0, sizeof(r));
	r.error = "";
	r.endpoint = "";
	if (status == 0) {
		if (etcd_failover(e, &c->ep, &c->tried, c->safe, fail)) {
			etcd_call_send(c);
			return;
		}
		r.err = fail == FETCH_FAIL_CONNECT || fail == FETCH_FAIL_TLS ?
		    ETCD_EUNAVAILABLE :
		    fail == FETCH_FAIL_TOOBIG ? ETCD_EPROTO :
		    fail == FETCH_FAIL_OTHER  ? ETCD_EUNAVAILABLE :
						ETCD_ETIMEDOUT;
		snprintf(msg, sizeof(msg), "etcd %s: %s", e->eps[c->ep], error);
	} else if (status != 200) {
		r.endpoint = e->eps[c->ep];
		if (etcdjson_error(body, len, &code, why, sizeof(why)) == -1) {
			r.err = ETCD_EPROTO;
			snprintf(msg, sizeof(msg), "etcd %s: HTTP %d",
			    e->eps[c->ep], status);
		} else {
			r.err = etcdjson_classify(code, why);
			if (strstr(why, "invalid auth token") != NULL &&
			    etcd_renew(e, &c->renewed, c->gen)) {
				etcd_call_send(c);
				return;
			}
			/*
			 * "no leader": nothing was applied, so any call may
			 * go elsewhere. "leader changed", "request timed
			 * out": a write may have been, so only a safe one.
			 */
			if ((r.err == ETCD_EUNAVAILABLE ||
				(r.err == ETCD_ETIMEDOUT && c->safe)) &&
			    etcd_failover(e, &c->ep, &c->tried, true,
				FETCH_FAIL_CONNECT)) {
				etcd_call_send(c);
				return;
			}
			snprintf(msg, sizeof(msg), "etcd %s: %s", e->eps[c->ep],
			    why);
		}
	} else {
		r.endpoint = e->eps[c->ep];
		e->cur = c->ep;
		msg[0] = '\0';
		if (c->kind == ETCD_K_AUTH)
			r.err = etcdjson_auth_answer(body, len, &r.header,
				    &token, why, sizeof(why)) == -1 ?
			    ETCD_EPROTO :
			    ETCD_OK;
		else if (etcd_call_decode(c, body, len, &r, why, sizeof(why)) ==
		    -1)
			r.err = ETCD_EPROTO;
		if (r.err != ETCD_OK)
			snprintf(msg, sizeof(msg), "etcd %s: %s", e->eps[c->ep],
			    why);
		etcd_saw(e, &r.header);
	}
	if (r.err != ETCD_OK)
		r.error = msg;
	if (c->kind == ETCD_K_AUTH) {
		if (r.err == ETCD_OK) {
			e->token = token;
			e->gen++;
		} else if (r.err == ETCD_EAUTH)
			snprintf(msg, sizeof(msg),
			    "etcd %s refused user %s: %s", e->eps[c->ep],
			    e->user, why);
		e->auth = NULL;
		etcd_call_free(c);
		etcd_auth_done(e, &r);
		return;
	}
	if (c->kind == ETCD_K_PAGES && r.err == ETCD_OK) {
		if (etcd_page_next(c, &r) == 0)
			etcd_call_send(c);
		etcdjson_result_clear(&r);
		return;
	}
	etcd_call_end(c, &r);
	etcdjson_result_clear(&r);
}

/*
 * Hand R to C's owner. ETCD_LIVE, ETCD_GONE if its owner cancelled C (it is
 * freed), ETCD_DEAD if its owner freed the client (all is freed).
 */
static int
etcd_call_deliver(struct etcd_call *c, const struct etcd_result *r)
{
	struct etcd *e = c->e;

	c->calling = true;
	e->calling = true;
	c->cb(r, c->arg);
	c->calling = false;
	e->calling = false;
	if (e->dying) {
		etcd_call_free(c);
		etcd_destroy(e);
		return ETCD_DEAD;
	}
	if (c->cancelled) {
		etcd_call_free(c);
		return ETCD_GONE;
	}
	return ETCD_LIVE;
}

/* Hand C's last result to its owner and free it. */
static void
etcd_call_end(struct etcd_call *c, const struct etcd_result *r)
{
	if (etcd_call_deliver(c, r) == ETCD_LIVE)
		etcd_call_free(c);
}

/*
 * Deliver a page of etcd_range_all and set up the next one. 0 if another
 * page is to be sent; -1 if the walk is over (C is freed).
 */
static int
etcd_page_next(struct etcd_call *c, const struct etcd_result *page)
{
	struct etcd_result r = *page;
	const struct etcd_kv *last;
	char *next = NULL;
	size_t nlen = 0;

	if (c->page.revision == 0)
		c->page.revision = page->header.revision;
	r.revision = c->page.revision;
	r.more = page->more && page->nkvs > 0 && !c->page.count_only;
	if (r.more) {
		/* The next page starts just past the last key. */
		last = &page->kvs[page->nkvs - 1];
		nlen = last->key_len + 1;
		next = xmalloc(nlen);
		memcpy(next, last->key, last->key_len);
		next[last->key_len] = '\0';
	}
	if (etcd_call_deliver(c, &r) != ETCD_LIVE) {
		free(next);
		return -1;
	}
	if (!r.more) {
		etcd_call_free(c);
		return -1;
	}
	free(c->pkey);
	c->pkey = next;
	c->pkey_len = nlen;
	c->page.key = c->pkey;
	c->page.key_len = c->pkey_len;
	free(c->body);
	c->body = etcdjson_range(&c->page);
	c->tried = 0;
	c->renewed = false;
	return 0;
}

/* Take C off every list and free it. */
static void
etcd_call_free(struct etcd_call *c)
{
	struct etcd *e = c->e;

	fetch_cancel(c->req);
	if (c->kind != ETCD_K_AUTH)
		TAILQ_REMOVE(&e->calls, c, entry);
	free(c->body);
	free(c->ferror);
	free(c->pkey);
	free(c->pend);
	free(c);
}

/* Cancel C; its callback is not called. */
void
etcd_cancel(struct etcd_call *c)
{
	if (c == NULL)
		return;
	if (c->calling) {
		c->cancelled = true;
		return;
	}
	etcd_call_free(c);
}

/* A range. */
struct etcd_call *
etcd_range(struct etcd *e, const struct etcd_op *op, etcd_done_cb cb, void *arg)
{
	return etcd_call_new(e, ETCD_K_RANGE, etcdjson_range(op), true, cb,
	    arg);
}

/* Walk a whole range in pages at one revision. */
struct etcd_call *
etcd_range_all(struct etcd *e, const struct etcd_op *op, etcd_done_cb cb,
    void *arg)
{
	struct etcd_call *c;
	size_t klen;

	c = xcalloc(1, sizeof(*c));
	c->page = *op;
	c->page.type = ETCD_OP_RANGE;
	c->page.prefix = false;
	if (c->page.limit <= 0)
		c->page.limit = ETCD_PAGE;
	if (op->key != NULL) {
		klen = op->key_len != 0 ? op->key_len : strlen(op->key);
		c->pkey = xmalloc(klen + 1);
		memcpy(c->pkey, op->key, klen);
		c->pkey[klen] = '\0';
		c->pkey_len = klen;
		if (op->prefix) {
			c->pend = xmalloc(klen + 1);
			etcdjson_prefix_end(op->key, klen, c->pend,
			    &c->pend_len);
		} else if (op->range_end != NULL) {
			c->pend_len = op->range_end_len != 0 ?
			    op->range_end_len :
			    strlen(op->range_end);
			c->pend = xmalloc(c->pend_len + 1);
			memcpy(c->pend, op->range_end, c->pend_len);
		}
	}
	c->page.key = c->pkey;
	c->page.key_len = c->pkey_len;
	c->page.range_end = c->pend;
	c->page.range_end_len = c->pend_len;
	return etcd_call_start(c, e, ETCD_K_PAGES, etcdjson_range(&c->page),
	    true, cb, arg);
}

/* A txn; safe to resend only if it only reads. */
struct etcd_call *
etcd_txn(struct etcd *e, const struct etcd_txn *t, etcd_done_cb cb, void *arg)
{
	bool reads = true;
	size_t i;

	for (i = 0; i < t->nsuccess; i++)
		reads = reads && t->success[i].type == ETCD_OP_RANGE;
	for (i = 0; i < t->nfailure; i++)
		reads = reads && t->failure[i].type == ETCD_OP_RANGE;
	return etcd_call_new(e, ETCD_K_TXN, etcdjson_txn(t), reads, cb, arg);
}

/* Grant a lease. */
struct etcd_call *
etcd_lease_grant(struct etcd *e, int64_t ttl, int64_t id, etcd_done_cb cb,
    void *arg)
{
	return etcd_call_new(e, ETCD_K_GRANT, etcdjson_lease_grant(ttl, id),
	    false, cb, arg);
}

/*
 * Renew a lease once. The gateway's keepalive is a stream, but it ends
 * after one answer once the request body has been read, so it is a call.
 */
struct etcd_call *
etcd_lease_keepalive(struct etcd *e, int64_t id, etcd_done_cb cb, void *arg)
{
	return etcd_call_new(e, ETCD_K_KEEPALIVE, etcdjson_lease_id(id), true,
	    cb, arg);
}

/* Revoke a lease. */
struct etcd_call *
etcd_lease_revoke(struct etcd *e, int64_t id, etcd_done_cb cb, void *arg)
{
	return etcd_call_new(e, ETCD_K_REVOKE, etcdjson_lease_id(id), true, cb,
	    arg);
}
