/*
 * floe: request.c -- the life of one engine request: the entry points the
 * REST listener calls, the request's allocation and free list, its checks
 * before routing (loop, path, credentials, prefix), the upstream's answer
 * handed to the mode that asked, and the access log. Deciding the side is
 * request_route.c's, the LoadTable cache request_cache.c's, the upstream
 * request request_forward.c's and the answer request_answer.c's.
 */
#include <sys/types.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"
#include "cache/memo.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/discover.h"
#include "proxy/floe.h"
#include "proxy/etag.h"
#include "proxy/h1.h"
#include "proxy/inventory.h"
#include "proxy/listing.h"
#include "proxy/request.h"
#include "proxy/request_impl.h"
#include "proxy/rest.h"
#include "proxy/server.h"
#include "proxy/stats.h"
#include "proxy/upstream.h"
#include "routing/route.h"
#include "policy/auth.h"
#include "policy/readers.h"

#define REQUEST_HEAD offsetof(struct request, ident)
/* Requests kept for reuse. */
#define REQUEST_POOL_MAX 256

static SLIST_HEAD(, request) request_pool = SLIST_HEAD_INITIALIZER(
    request_pool);
static unsigned request_npool;

static bool request_side_unknown(struct request *, enum route_side);
static size_t request_log_time(int64_t, char *, size_t);
static void request_log_line(const struct request *, unsigned, const char *,
    const char *, size_t);

char request_via[REQUEST_VIA_MAX] = "1.1 floe";
size_t request_via_len = 8;
static struct evbuffer *request_log;

void
request_init(const char *node_id)
{
	snprintf(request_via, sizeof(request_via), "1.1 %s", node_id);
	request_via_len = strlen(request_via);
	if (request_log == NULL && (request_log = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
}

/* The wave for X-Floe-Wave and the access log. */
void
request_wave_str(const struct request *r, char *buf, size_t len)
{
	if (r->has_route && r->route.assigned)
		snprintf(buf, len, "%u", r->route.wave);
	else
		strlcpy(buf, "none", len);
}

/* bench/callgrind.sh CG_OFF=1 builds floe without the note, to measure it. */
#ifdef FLOE_BENCH_NO_READERS
#define REQUEST_NOTE_READERS 0
#else
#define REQUEST_NOTE_READERS 1
#endif

/*
 * A table load answered: note its reader in the inventory under the canary
 * identity, as it is shown (the authenticated client, else a hash of the
 * credential, never the credential, else the address).
 */
static void
request_note_reader(struct request *r)
{
	const struct h1_header *ua = h1_get(r->msg, H1_F_USER_AGENT);
	const struct h1_header *inm = h1_get(r->msg, H1_F_IF_NONE_MATCH);
	struct readers_who who = { r->client_hash, NULL, 0 };

	/* client_hash is of the same name, token or address. */
	if (r->ident[0] != '\0')
		who.name = r->ident;
	else if (!r->authz)
		who.name = server_conn_peer(r->conn);
	if (who.name != NULL &&
	    ((who.namelen = strlen(who.name)) == 0 ||
		who.namelen >= READERS_IDENT_MAX))
		return;
	inventory_note(r->f->inv, &r->objs[0], r->side, &who,
	    ua != NULL ? ua->value : NULL, ua != NULL ? ua->value_len : 0,
	    inm != NULL &&
		etag_is_other_side(inm->value, inm->value_len, r->side));
}

/*
 * The answer to R is STATUS from TARGET ("warehouse", "lakehouse", or
 * floe's own: "floe", "both"): counted by side and code with its
 * latencies (stats.h), and one access log line appended (buffered;
 * flushed on the tick).
 */
void
request_log_access(struct request *r, unsigned status, const char *target)
{
	struct floe *f = r->f;
	char ts[40];
	unsigned side = STATS_FLOE;
	size_t tslen;

	/* Nearly always route_side_name's own string: no compare. */
	if (target == route_side_name(ROUTE_WAREHOUSE) ||
	    (target != route_side_name(ROUTE_LAKEHOUSE) &&
		strcmp(target, "warehouse") == 0))
		side = ROUTE_WAREHOUSE;
	else if (target == route_side_name(ROUTE_LAKEHOUSE) ||
	    strcmp(target, "lakehouse") == 0)
		side = ROUTE_LAKEHOUSE;
	stats_answer(&f->stats, side, status, units_mono_us() - r->start_us,
	    r->upstream_us > 0 ? (int64_t)r->upstream_us : -1);
	if (REQUEST_NOTE_READERS && r->rr.op == REST_LOAD_TABLE &&
	    (status == 200 || status == 304) && r->nobjs == 1 &&
	    r->msg->method == H1_GET)
		request_note_reader(r);
	if (f->access_fd == -1 || request_log == NULL)
		return;
	tslen = request_log_time(units_now_ms(), ts, sizeof(ts));
	request_log_line(r, status, target, ts, tslen);
	if (evbuffer_get_length(request_log) > 64 * 1024)
		request_flush_log(f);
}

/*
 * units_time_format(MS) into TS (TSLEN bytes), its length: the date and
 * the time to the second formatted once a second and kept, the
 * milliseconds written in (a snprintf of seven numbers and a gmtime_r
 * were a third of what a logged request cost). A second whose text does
 * not end ".000Z" (a time gmtime refuses) is formatted whole each time.
 */
static size_t
request_log_time(int64_t ms, char *ts, size_t tslen)
{
	static int64_t sec = INT64_MIN;
	static char base[40];
	static size_t blen; /* 0: BASE is not to be used */
	int64_t s = ms / 1000, rem = ms % 1000;

	/* Floor, as units_time_format. */
	if (rem < 0) {
		rem += 1000;
		s--;
	}
	if (s != sec) {
		units_time_format(s * 1000, base, sizeof(base));
		sec = s;
		blen = strlen(base);
		blen = blen > 5 && memcmp(base + blen - 5, ".000Z", 5) == 0 ?
		    blen - 5 :
		    0;
	}
	if (blen == 0 || blen + 6 > tslen) {
		units_time_format(ms, ts, tslen);
		return strlen(ts);
	}
	memcpy(ts, base, blen);
	ts[blen] = '.';
	ts[blen + 1] = (char)('0' + rem / 100);
	ts[blen + 2] = (char)('0' + rem / 10 % 10);
	ts[blen + 3] = (char)('0' + rem % 10);
	ts[blen + 4] = 'Z';
	ts[blen + 5] = '\0';
	return blen + 5;
}

/*
 * Append R's access log line to the log buffer: the timestamp TS (TSLEN
 * bytes), the client, the method, the path without its query, then
 * target=, wave=, status=, upstream_ms= (three decimals), cache= and,
 * for a known client, client=. Written by hand into the buffer's own
 * space: a printf of the line, and the gmtime_r and snprintf behind its
 * timestamp (request_log_time), were most of what a logged request cost.
 */
static void
request_log_line(const struct request *r, unsigned status, const char *target,
    const char *ts, size_t tslen)
{
	static const char words[] =
	    "   target= wave= status= upstream_ms=. cache= client=\n";
	const struct h1_msg *m = r->msg;
	const char *cache = r->cache_state != NULL ? r->cache_state : "-";
	uint64_t us = r->upstream_us;
	size_t peerlen = server_conn_peer_len(r->conn),
	       mlen = strlen(m->method_name), tlen = strlen(target),
	       clen = strlen(cache), ilen = strlen(r->ident), plen;
	struct evbuffer_iovec v;
	char *o;

	/* The path up to its query, and never past a NUL. */
	plen = strnlen(m->target,
	    r->rr.query.len > 0 ? r->rr.query.off - 1 : m->target_len);
	/* The text, and 20 digits for each of the three numbers. */
	if (evbuffer_reserve_space(request_log,
		tslen + peerlen + mlen + plen + tlen + clen + ilen + 3 * 20 +
		    sizeof(words),
		&v, 1) != 1)
		return;
	o = v.iov_base;
	request_put(&o, ts, tslen);
	*o++ = ' ';
	request_put(&o, server_conn_peer(r->conn), peerlen);
	*o++ = ' ';
	request_put(&o, m->method_name, mlen);
	*o++ = ' ';
	request_put(&o, m->target, plen);
	request_put(&o, " target=", 8);
	request_put(&o, target, tlen);
	request_put(&o, " wave=", 6);
	request_put_wave(&o, r);
	request_put(&o, " status=", 8);
	o += units_utoa(o, status);
	request_put(&o, " upstream_ms=", 13);
	o += units_utoa(o, us / 1000);
	*o++ = '.';
	*o++ = (char)('0' + us % 1000 / 100);
	*o++ = (char)('0' + us % 100 / 10);
	*o++ = (char)('0' + us % 10);
	request_put(&o, " cache=", 7);
	request_put(&o, cache, clen);
	if (ilen > 0) {
		request_put(&o, " client=", 8);
		request_put(&o, r->ident, ilen);
	}
	*o++ = '\n';
	v.iov_len = (size_t)(o - (char *)v.iov_base);
	evbuffer_commit_space(request_log, &v, 1);
}

void
request_flush_log(struct floe *f)
{
	if (request_log == NULL || f->access_fd == -1)
		return;
	while (evbuffer_get_length(request_log) > 0)
		if (evbuffer_write(request_log, f->access_fd) <= 0) {
			log_warn("%s: access log", __func__);
			evbuffer_drain(request_log,
			    evbuffer_get_length(request_log));
		}
}

void
request_serve_error(struct server_conn *conn, int status, const char *why,
    void *arg)
{
	struct floe *f = arg;
	char msg[256];

	f->stats.requests++;
	stats_answer(&f->stats, STATS_FLOE, (unsigned)status, 0, -1);
	snprintf(msg, sizeof(msg), "Malformed HTTP request: %s", why);
	request_error_conn(f, conn, status,
	    status == 408 ? "RequestTimeoutException" : "BadRequestException",
	    msg, NULL);
}

void
request_free(struct request *r)
{
	int i;

	request_stream_free(r);
	memo_buf_unref(r->memo_in);
	r->memo_in = NULL;
	for (i = 0; i < ROUTE_NSIDES; i++) {
		if (r->x[i] != NULL)
			upstream_cancel(r->x[i]);
		if (r->ans[i] != NULL)
			evbuffer_free(r->ans[i]);
	}
	if (request_npool < REQUEST_POOL_MAX) {
		SLIST_INSERT_HEAD(&request_pool, r, free);
		request_npool++;
	} else
		free(r);
}

/* A cleared request, from the free list when it has one. */
struct request *
request_new(void)
{
	struct request *r;

	if ((r = SLIST_FIRST(&request_pool)) != NULL) {
		SLIST_REMOVE_HEAD(&request_pool, free);
		request_npool--;
	} else
		r = xmalloc(sizeof(*r));
	memset(r, 0, REQUEST_HEAD);
	r->ident[0] = '\0';
	r->err_hdrs[0] = '\0';
	r->ans_error[0][0] = r->ans_error[1][0] = '\0';
	/* Read by the access log even before the path is parsed. */
	r->rr.op = REST_NONE;
	r->rr.write = false;
	r->rr.query.off = r->rr.query.len = 0;
	return r;
}

/* The client went away: drop the transfers. */
static void
request_abort_cb(void *arg)
{
	struct request *r = arg;

	log_debug("%s: client %s went away", __func__,
	    server_conn_peer(r->conn));
	request_free(r);
}

/* FNV-1a of the LEN bytes at P (as /resolve?client=), four bytes a turn. */
static uint64_t
request_fnv(const void *key, size_t n)
{
	const unsigned char *p = key;
	uint64_t x = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i + 4 <= n; i += 4) {
		x = (x ^ p[i]) * 0x100000001b3ULL;
		x = (x ^ p[i + 1]) * 0x100000001b3ULL;
		x = (x ^ p[i + 2]) * 0x100000001b3ULL;
		x = (x ^ p[i + 3]) * 0x100000001b3ULL;
	}
	for (; i < n; i++)
		x = (x ^ p[i]) * 0x100000001b3ULL;
	return x;
}

/*
 * A hash of the client's identity: the name authentication gave it (so
 * floectl resolve --client NAME predicts its canary side), else its bearer
 * token, else its address. After request_authenticate (its header). The
 * connection remembers the last one: a client sends the same every time.
 */
static uint64_t
request_client_hash(struct request *r)
{
	const struct h1_header *h = r->authz_hdr;
	const char *p;

	r->authz = h != NULL;
	if (r->ident[0] != '\0')
		return route_client_hash(r->ident, strlen(r->ident));
	if (h != NULL)
		return server_conn_memo(r->conn, h->value, h->value_len,
		    request_fnv);
	p = server_conn_peer(r->conn);
	return server_conn_memo(r->conn, p, server_conn_peer_len(r->conn),
	    request_fnv);
}

/*
 * One side's listing is in (or failed, which fails the whole listing):
 * keep it, and answer when the other side's is in too.
 */
static void
request_done_list(struct request *r, enum route_side side,
    struct upstream_xfer *x)
{
	struct h1_msg *m = upstream_xfer_msg(x);

	if (m == NULL) {
		/* The other side's transfer is cancelled by the free. */
		snprintf(r->ans_error[side], sizeof(r->ans_error[side]), "%s",
		    upstream_xfer_error(x));
		request_reply_failure(r, side, upstream_xfer_fail(x),
		    upstream_xfer_error(x));
		return;
	}
	/* A page that is not JSON: that catalog failed, the listing too. */
	if (m->status == 200 &&
	    !request_body_is_json(r, m->body, evbuffer_get_length(m->body),
		r->ans_error[side], sizeof(r->ans_error[side]))) {
		request_reply_failure(r, side, UPSTREAM_GARBAGE,
		    r->ans_error[side]);
		return;
	}
	if ((r->ans[side] = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add_buffer(r->ans[side], m->body);
	r->ans_status[side] = m->status;
	if (r->pending == 0)
		request_reply_list(r);
}

/*
 * upstream_done_cb: the answer (or the failure) of SIDE's transfer, given
 * to the mode that asked.
 */
void
request_done_cb(struct upstream_xfer *x, void *arg)
{
	struct request *r = arg;
	enum route_side side =
	    r->x[ROUTE_WAREHOUSE] == x ? ROUTE_WAREHOUSE : ROUTE_LAKEHOUSE;
	struct h1_msg *m = upstream_xfer_msg(x);
	enum upstream_fail fail = upstream_xfer_fail(x);

	r->x[side] = NULL;
	r->pending--;
	r->has_uri = upstream_xfer_has_uri(x);
	r->json = upstream_xfer_json(x, &r->json_at);
	r->memo_hit = upstream_xfer_memo_hit(x);
	/* Listings ask both sides at once: the slower one is the wait. */
	if (upstream_xfer_usec(x) > r->upstream_us || r->mode != MODE_LIST)
		r->upstream_us = r->mode == MODE_LIST ?
		    upstream_xfer_usec(x) :
		    r->upstream_us + upstream_xfer_usec(x);
	/* Its head is sent: the answer ends as it was begun. */
	if (r->stream != NULL) {
		request_stream_done(r, x);
		return;
	}
	switch (r->mode) {
	case MODE_ONE:
		if (r->rr.write)
			request_cache_invalidate(r);
		if (m == NULL) {
			request_reply_failure(r, side, fail,
			    upstream_xfer_error(x));
			return;
		}
		if (r->revalidating && request_revalidated(r, m))
			return;
		request_reply_upstream(r, side, m);
		return;
	case MODE_NS_READ:
		if (m == NULL) {
			request_reply_failure(r, side, fail,
			    upstream_xfer_error(x));
			return;
		}
		/*
		 * A namespace only the lakehouse has; without the lakehouse's
		 * config floe cannot tell it is not there.
		 */
		if (m->status == 404 && side == ROUTE_WAREHOUSE) {
			if (!request_side_unknown(r, ROUTE_LAKEHOUSE))
				request_forward(r, ROUTE_LAKEHOUSE);
			return;
		}
		request_reply_upstream(r, side, m);
		return;
	case MODE_LIST:
		request_done_list(r, side, x);
		return;
	}
}

/* Which prefix the client used; -1 if it is none of floe's. */
static int
request_prefix(struct request *r)
{
	const char *p = r->msg->target + r->rr.prefix.off;
	size_t n = r->rr.prefix.len;

	if (n == 0 || (n == 6 && memcmp(p, "routed", 6) == 0))
		r->pfx = PFX_ROUTED;
	else if (n == 9 && memcmp(p, "warehouse", 9) == 0)
		r->pfx = PFX_WAREHOUSE;
	else if (n == 9 && memcmp(p, "lakehouse", 9) == 0)
		r->pfx = PFX_LAKEHOUSE;
	else
		return -1;
	return 0;
}

/* Has this request already passed through this floe? */
static bool
request_is_loop(const struct h1_msg *m)
{
	size_t n;
	unsigned i;

	if (m->first[H1_F_VIA] == 0)
		return false;
	n = request_via_len;
	for (i = m->first[H1_F_VIA] - 1; i < m->nhdrs; i++)
		if (m->hdrs[i].field == H1_F_VIA &&
		    memmem(m->hdrs[i].value, m->hdrs[i].value_len, request_via,
			n) != NULL)
			return true;
	return false;
}

/*
 * Check the client's credentials ([auth] mode) and keep its identity.
 * 0 to go on, -1 if R was answered 401. The reason in the answer never
 * holds any part of the credential, and nothing of it is logged.
 */
static int
request_authenticate(struct request *r)
{
	const struct h1_header *h = r->authz_hdr =
	    h1_get(r->msg, H1_F_AUTHORIZATION);
	const char *why = "not authorized";
	char msg[256];

	if (r->f->auth == NULL ||
	    auth_check(r->f->auth, h != NULL ? h->value : NULL,
		h != NULL ? h->value_len : 0, units_now_ms() / 1000, r->ident,
		sizeof(r->ident), &why) == 0)
		return 0;
	log_debug("%s: client %s: 401: %s", __func__, server_conn_peer(r->conn),
	    why);
	snprintf(msg, sizeof(msg), "Not authorized: %s", why);
	request_log_access(r, 401, "floe");
	r->f->stats.requests++;
	request_error_conn(r->f, r->conn, 401, "NotAuthorizedException", msg,
	    "WWW-Authenticate: Bearer realm=\"floe\"\r\n");
	request_free(r);
	return -1;
}

/*
 * Refuse a token request as the spec answers that operation: a 400
 * OAuthError ({"error":"invalid_request","error_description":DESC}, RFC
 * 6749 5.2), not an ErrorModel, which an OAuth client cannot read.
 */
static void
request_oauth_error(struct request *r, const char *desc)
{
	struct evbuffer *b;
	json_t *j;
	char *body;
	static const char hdrs[] = "Content-Type: application/json\r\n"
				   "Cache-Control: no-store\r\n";

	j = json_pack("{s:s, s:s}", "error", "invalid_request",
	    "error_description", desc);
	if (j == NULL || (body = json_dumps(j, JSON_COMPACT)) == NULL ||
	    (b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	json_decref(j);
	evbuffer_add(b, body, strlen(body));
	request_log_access(r, 400, "floe");
	r->f->stats.requests++;
	r->f->stats.local_errors++;
	server_reply(r->conn, 400, hdrs, sizeof(hdrs) - 1, b, strlen(body));
	free(body);
	evbuffer_free(b);
	request_free(r);
}

/*
 * POST /v1/oauth/tokens, deprecated by the spec: forwarded to the warehouse
 * catalog when clients authenticate there (passthrough), refused otherwise
 * with what to configure instead.
 */
static void
request_oauth_tokens(struct request *r)
{
	char desc[512];

	if (auth_mode(r->f->auth) != AUTH_PASSTHROUGH) {
		snprintf(desc, sizeof(desc),
		    "floe does not serve the deprecated /v1/oauth/tokens "
		    "endpoint with [auth] mode = %s: configure the client with "
		    "a \"token\" (%s), or set \"oauth2-server-uri\" to your "
		    "identity provider",
		    auth_mode_name(auth_mode(r->f->auth)),
		    auth_mode(r->f->auth) == AUTH_JWT ?
			"a JWT from your identity provider" :
			"one listed in floe's token file");
		request_oauth_error(r, desc);
		return;
	}
	r->mode = MODE_ONE;
	r->side = ROUTE_WAREHOUSE;
	r->no_prefix = true;
	request_forward(r, ROUTE_WAREHOUSE);
}

/* The REST method of an HTTP one. */
static enum rest_method
request_method(enum h1_method method)
{
	switch (method) {
	case H1_GET:
		return REST_M_GET;
	case H1_HEAD:
		return REST_M_HEAD;
	case H1_POST:
		return REST_M_POST;
	case H1_PUT:
		return REST_M_PUT;
	case H1_DELETE:
		return REST_M_DELETE;
	default:
		return REST_M_OTHER;
	}
}

/* Parse R's path into an Iceberg operation. 0, or -1 if R was answered. */
static int
request_parse(struct request *r)
{
	const struct h1_msg *m = r->msg;

	switch (rest_parse(request_method(m->method), m->target, m->target_len,
	    r->f->conf->namespace_separator, &r->rr)) {
	case REST_OK:
		return 0;
	case REST_NOTFOUND:
		request_errorf(r, 404, "NotFoundException",
		    "No Iceberg REST endpoint at %s %.*s", m->method_name,
		    (int)strcspn(m->target, "?"), m->target);
		return -1;
	case REST_BADMETHOD:
		/* RFC 9110 15.5.6: a 405 says what is allowed. */
		snprintf(r->err_hdrs, sizeof(r->err_hdrs), "Allow: %s\r\n",
		    r->rr.allow);
		request_errorf(r, 405, "MethodNotAllowedException",
		    "%s is not allowed on %.*s", m->method_name,
		    (int)strcspn(m->target, "?"), m->target);
		return -1;
	case REST_TOOLONG:
		request_errorf(r, 414, "BadRequestException",
		    "A namespace or table name in the path is too long");
		return -1;
	default:
		request_errorf(r, 400, "BadRequestException",
		    "Malformed path %.*s: bad percent-encoding, an empty "
		    "namespace level or a control character",
		    (int)strcspn(m->target, "?"), m->target);
		return -1;
	}
}

/*
 * Is SIDE's catalog config still unknown? Then R was answered 503 naming
 * the side, with Retry-After: a merged listing or a namespace the
 * warehouse lacks needs both catalogs, and half an answer could make a
 * job create a table that exists.
 */
static bool
request_side_unknown(struct request *r, enum route_side side)
{
	const struct catalog *cat = r->f->cat[side];

	uint64_t s;

	if (cat->known)
		return false;
	/* When to ask again: the next read of that config, 1 to 30 s. */
	s = (discover_retry_ms(r->f->discover, side) + 999) / 1000;
	snprintf(r->err_hdrs, sizeof(r->err_hdrs), "Retry-After: %llu\r\n",
	    (unsigned long long)(s < 1 ? 1 :
		    s > 30	       ? 30 :
					 s));
	request_errorf(r, 503, "ServiceUnavailableException",
	    "The %s catalog's config is not known yet (%s): floe is still "
	    "trying to reach it, and this request needs it",
	    route_side_name(side),
	    cat->last_error != NULL ? cat->last_error : "no answer yet");
	return true;
}

/*
 * A listing: check the page token is floe's, then ask both sides at once
 * (request_reply_list merges their answers).
 */
static void
request_serve_list(struct request *r)
{
	char token[1024];
	int i;

	if (rest_query_get(r->msg->target + r->rr.query.off, r->rr.query.len,
		"pageToken", token, sizeof(token)) == 0 &&
	    !listing_token_is_valid(r->rr.op == REST_LIST_NAMESPACES ?
		    "namespaces" :
		    "identifiers",
		token)) {
		request_errorf(r, 400, "BadRequestException",
		    "Invalid pageToken: floe did not issue it; start again "
		    "without one");
		return;
	}
	for (i = 0; i < ROUTE_NSIDES; i++)
		if (request_side_unknown(r, i))
			return;
	request_forward(r, ROUTE_WAREHOUSE);
	request_forward(r, ROUTE_LAKEHOUSE);
}

void
request_serve(struct server_conn *conn, struct h1_msg *m, void *arg)
{
	struct floe *f = arg;
	struct request *r;

	/* /healthz and /readyz (8 and 7 bytes): no call for a longer target. */
	if (m->target_len <= 8 && request_health(f, conn, m))
		return;
	r = request_new();
	r->f = f;
	r->conn = conn;
	r->msg = m;
	r->start_us = units_mono_us();
	server_conn_on_abort(conn, request_abort_cb, r);
	/* Answers clients have not taken fill floe's budget: no new work. */
	if (server_over_budget()) {
		request_reply_full(r);
		return;
	}
	if (request_is_loop(m)) {
		request_errorf(r, 508, "LoopDetectedException",
		    "Request loop: this request already passed through this "
		    "floe (Via: %s); a catalog uri points back at floe",
		    request_via);
		return;
	}
	if (request_parse(r) == -1)
		return;
	if (r->rr.op == REST_GET_TOKEN) {
		request_oauth_tokens(r);
		return;
	}
	if (request_authenticate(r) == -1)
		return;
	if (r->rr.op == REST_GET_CONFIG) {
		request_config(r);
		return;
	}
	if (request_prefix(r) == -1) {
		request_errorf(r, 404, "NoSuchWarehouseException",
		    "Unknown prefix \"%.*s\": floe serves \"routed\", "
		    "\"warehouse\" and \"lakehouse\" (see GET /v1/config)",
		    (int)r->rr.prefix.len, m->target + r->rr.prefix.off);
		return;
	}
	r->client_hash = request_client_hash(r);
	if (request_route(r) == -1)
		return;
	if (r->mode == MODE_LIST) {
		request_serve_list(r);
		return;
	}
	if (request_side_unknown(r, r->side))
		return;
	if (r->rr.op == REST_LOAD_TABLE && m->method == H1_GET &&
	    r->nobjs == 1 && cache_is_on(f->cache) && request_cache_lookup(r)) {
		request_free(r);
		return;
	}
	request_forward(r, r->side);
}
