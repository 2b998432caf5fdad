/*
 * floe: request_answer.c -- what the client gets back: Iceberg ErrorModel
 * answers, floe's own (health, readiness, GET /v1/config), an upstream
 * answer with floe's ETag, X-Floe-* headers, the side's catalog config
 * merged and its URLs pointed back at floe, a failed side's 502/504, and
 * the merged page of a listing asked of both sides.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "lib/log.h"
#include "lib/memfind.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "cache/memo.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/etag.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/listing.h"
#include "proxy/request_impl.h"
#include "proxy/rest.h"
#include "proxy/server.h"
#include "proxy/upstream.h"
#include "proxy/watch.h"
#include "proxy/workers.h"
#include "routing/route.h"
#include "routing/store.h"

/* The largest answer copied into one piece (see request_rewrite). */
#define REQUEST_PULLUP_MAX (4u << 20)

/* Answer with an Iceberg ErrorModel. */
void
request_error_conn(struct floe *f, struct server_conn *conn, unsigned status,
    const char *type, const char *msg, const char *extra_hdrs)
{
	json_t *j;
	char *body, hdrs[512];
	struct evbuffer *b;
	int n;

	f->stats.local_errors++;
	j = json_pack("{s:{s:s, s:s, s:i}}", "error", "message", msg, "type",
	    type, "code", (int)status);
	body = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (body == NULL)
		fatalx("%s: out of memory", __func__);
	n = snprintf(hdrs, sizeof(hdrs), "Content-Type: application/json\r\n%s",
	    extra_hdrs != NULL ? extra_hdrs : "");
	if ((b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add(b, body, strlen(body));
	free(body);
	server_reply(conn, status, hdrs, n, b, -1);
	evbuffer_free(b);
}

/* Answer R with an ErrorModel and end it. */
void
request_errorf(struct request *r, unsigned status, const char *type,
    const char *fmt, ...)
{
	char msg[1024], hdr[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hdr[0] = '\0';
	if (r->has_route) {
		char wave[16];

		request_wave_str(r, wave, sizeof(wave));
		snprintf(hdr, sizeof(hdr), "X-Floe-Wave: %s\r\n", wave);
	}
	strlcat(hdr, r->err_hdrs, sizeof(hdr));
	request_log_access(r, status, "floe");
	r->f->stats.requests++;
	request_error_conn(r->f, r->conn, status, type, msg, hdr);
	request_free(r);
}

/*
 * floe holds its output_budget of answers that clients have not taken:
 * R is refused with a 503 the client may retry (never sent to a catalog,
 * and no catalog's error: the error trigger does not count it).
 */
void
request_reply_full(struct request *r)
{
	char msg[256];

	snprintf(msg, sizeof(msg),
	    "floe holds its output_budget (%llu bytes) of answers that "
	    "clients have not read; retry shortly",
	    (unsigned long long)r->f->conf->output_budget);
	request_log_access(r, 503, "floe");
	r->f->stats.requests++;
	r->f->stats.refused_full++;
	request_error_conn(r->f, r->conn, 503, "SlowDownException", msg,
	    "Retry-After: 1\r\n");
	request_free(r);
}

/* GET /healthz and /readyz. */
bool
request_health(struct floe *f, struct server_conn *conn, const struct h1_msg *m)
{
	char body[512];
	int n;

	if (m->target_len == 8 && memcmp(m->target, "/healthz", 8) == 0) {
		f->stats.requests++;
		server_reply_mem(conn, 200, "application/json",
		    "{\"status\":\"alive\"}", 18);
		return true;
	}
	if (m->target_len == 7 && memcmp(m->target, "/readyz", 7) == 0) {
		f->stats.requests++;
		n = snprintf(body, sizeof(body),
		    "{\"ready\":%s,\"store\":%s,\"warehouse_config\":%s,"
		    "\"lakehouse_config\":%s}",
		    floe_is_ready(f) ? "true" : "false",
		    f->store != NULL && store_is_healthy(f->store) ? "true" :
								     "false",
		    f->cat[ROUTE_WAREHOUSE]->known ? "true" : "false",
		    f->cat[ROUTE_LAKEHOUSE]->known ? "true" : "false");
		server_reply_mem(conn, floe_is_ready(f) ? 200 : 503,
		    "application/json", body, n);
		return true;
	}
	return false;
}

/* GET /v1/config: floe's own catalog config. */
void
request_config(struct request *r)
{
	struct floe *f = r->f;
	char wh[256], sep[32];
	const char *prefix = "routed", *ep;
	json_t *j, *eps;
	struct evbuffer *b;
	char *body;
	int op;

	if (rest_query_get(r->msg->target + r->rr.query.off, r->rr.query.len,
		"warehouse", wh, sizeof(wh)) == 0) {
		if (strcmp(wh, "warehouse") == 0)
			prefix = "warehouse";
		else if (strcmp(wh, "lakehouse") == 0)
			prefix = "lakehouse";
	}
	eps = json_array();
	for (op = REST_NONE + 1; op < REST_NOPS; op++)
		if ((ep = rest_op_endpoint(op)) != NULL)
			json_array_append_new(eps, json_string(ep));
	j = json_pack("{s:{}, s:{s:s}, s:o}", "defaults", "overrides", "prefix",
	    prefix, "endpoints", eps);
	if (f->conf->namespace_separator != NULL) {
		const unsigned char *s =
		    (const unsigned char *)f->conf->namespace_separator;
		size_t i, n = 0;

		for (i = 0; s[i] != '\0' && n + 4 < sizeof(sep); i++)
			n += snprintf(sep + n, sizeof(sep) - n, "%%%02X", s[i]);
		sep[n] = '\0';
		json_object_set_new(json_object_get(j, "overrides"),
		    "namespace-separator", json_string(sep));
	}
	body = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (body == NULL || (b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add(b, body, strlen(body));
	free(body);
	request_log_access(r, 200, "floe");
	f->stats.requests++;
	server_reply(r->conn, 200, "Content-Type: application/json\r\n", 32, b,
	    -1);
	evbuffer_free(b);
	request_free(r);
}

/* Headers passed back to the client as they came. */
static const bool request_back_headers[H1_F_COUNT] = {
	[H1_F_CONTENT_TYPE] = true,
	[H1_F_RETRY_AFTER] = true,
	[H1_F_CACHE_CONTROL] = true,
	[H1_F_WWW_AUTHENTICATE] = true,
	[H1_F_LOCATION] = true,
};

/*
 * The two parts of request_floe_base's URL written into LEN bytes: the
 * scheme (*SCHEME, *SLEN bytes) and the host, returned (*HLEN bytes).
 */
const char *
request_floe_host(struct request *r, size_t len, const char **scheme,
    size_t *slen, size_t *hlen)
{
	const struct h1_header *h = h1_get(r->msg, H1_F_HOST);
	const char *host;
	bool tls = server_conn_is_tls(r->conn);

	*scheme = tls ? "https://" : "http://";
	*slen = tls ? 8 : 7;
	if (h != NULL && h->value_len > 0 && *slen + h->value_len < len) {
		*hlen = h->value_len;
		return h->value;
	}
	host = r->f->conf->listen;
	*hlen = strlen(host);
	if (*slen + *hlen >= len)
		*hlen = len - *slen - 1;
	return host;
}

/* The base URL clients reach floe at, from their Host header. */
void
request_floe_base(struct request *r, char *buf, size_t len)
{
	const char *scheme, *host;
	size_t slen, hlen;

	host = request_floe_host(r, len, &scheme, &slen, &hlen);
	/* Every LoadTable with config to merge: no printf. */
	memcpy(buf, scheme, slen);
	memcpy(buf + slen, host, hlen);
	buf[slen + hlen] = '\0';
}

/* evbuffer_add_reference cleanup for a rewritten body. */
static void
request_free_body_cb(const void *data, size_t len __unused, void *arg __unused)
{
	free((void *)(uintptr_t)data);
}

/* Append "Name: value\r\n" at *O. */
static void
request_put_header(char **o, const char *name, size_t nlen, const char *value,
    size_t vlen)
{
	request_put(o, name, nlen);
	request_put(o, ": ", 2);
	request_put(o, value, vlen);
	request_put(o, "\r\n", 2);
}

/*
 * Merge the catalog's config into a 2xx answer BODY (BLEN bytes) and
 * rewrite the upstream URLs in it to floe's (catalog_rewrite). An answer
 * in one piece (nearly all) is rewritten into a new buffer. A larger one
 * is searched for upstream URLs piece by piece; with none, its config is
 * merged from its tail (catalog_merge_tail) and the members spliced in
 * between its pieces, so it is copied once instead of twice. Returns the
 * answer's new length. With OUT (not NULL), what the rewrite made for the
 * memo: *OUT the body rewritten whole (a reference for the caller), or
 * NULL and *SAME when the body was left as it is (NULL and !*SAME: a
 * large one's config spliced in, not kept).
 */
size_t
request_rewrite(struct request *r, enum route_side side, struct evbuffer *body,
    size_t blen, struct memo_buf **out, bool *same)
{
	static char tail[REQUEST_TAIL];
	static const size_t tails[] = { 4096, REQUEST_TAIL };
	struct floe *f = r->f;
	const struct catalog *cat = f->cat[side];
	const char *uri = f->conf->target[side].uri;
	size_t ulen = f->conf->target[side].uri_len;
	const char *pinned = route_side_name(side);
	bool merge = r->merge_config && catalog_has_merge(cat);
	char base[REQUEST_FLOE_BASE], *nb, *ins;
	struct evbuffer *head;
	size_t nblen, tlen, inslen, at, i;
	struct evbuffer_ptr pos;
	int rc = -1;

	if (out != NULL) {
		*out = NULL;
		*same = true;
	}
	if (evbuffer_get_contiguous_space(body) == blen) {
		if (!merge &&
		    memfind(evbuffer_pullup(body, -1), blen, uri, ulen) == NULL)
			return blen;
		goto whole;
	}
	/* A large answer was searched as it arrived (upstream_watch). */
	if (r->has_uri == 1 ||
	    (r->has_uri == -1 && catalog_body_has(body, uri, ulen)))
		goto whole;
	if (!merge)
		return blen;
	/* The config is nearly always last: try a short tail first. */
	request_floe_base(r, base, sizeof(base));
	for (i = 0; i < nitems(tails) && rc == -1; i++) {
		tlen = blen < tails[i] ? blen : tails[i];
		if (evbuffer_ptr_set(body, &pos, blen - tlen,
			EVBUFFER_PTR_SET) == -1 ||
		    evbuffer_copyout_from(body, &pos, tail, tlen) !=
			(ev_ssize_t)tlen)
			break;
		rc = catalog_merge_tail(cat, tail, tlen, blen, uri, base,
		    pinned, &ins, &inslen, &at);
		if (tlen == blen)
			break;
	}
	if (rc == 0)
		return blen;
	if (rc == 1) {
		if (out != NULL)
			*same = false;
		if ((head = evbuffer_new()) == NULL ||
		    evbuffer_remove_buffer(body, head, at) != (int)at ||
		    evbuffer_add(head, ins, inslen) == -1 ||
		    evbuffer_add_buffer(head, body) == -1 ||
		    evbuffer_add_buffer(body, head) == -1)
			fatalx("%s: out of memory", __func__);
		evbuffer_free(head);
		free(ins);
		/*
		 * One copy into one piece, measured: sent from a megabyte of
		 * 64 KiB pieces held until written, the answer cost more CPU
		 * than copied once, its pieces freed (and reused, warm, by
		 * the next read) at once. Not past REQUEST_PULLUP_MAX: the
		 * copy of a 200 MB answer held the loop for 300 ms.
		 */
		if (blen + inslen <= REQUEST_PULLUP_MAX)
			evbuffer_pullup(body, -1);
		return blen + inslen;
	}
whole:
	request_floe_base(r, base, sizeof(base));
	nb = catalog_rewrite(cat, r->merge_config,
	    (const char *)evbuffer_pullup(body, -1), blen, uri, base, pinned,
	    &nblen);
	if (nb == NULL)
		return blen;
	if (out != NULL) {
		*out = memo_buf_take(nb, nblen);
		*same = false;
		request_memo_send(body, blen, memo_buf_ref(*out));
		return nblen;
	}
	evbuffer_drain(body, blen);
	if (evbuffer_add_reference(body, nb, nblen, request_free_body_cb,
		NULL) == -1)
		fatalx("%s: out of memory", __func__);
	return nblen;
}

/*
 * Whether BODY (BLEN bytes), R's answer, is one well-formed JSON text.
 * The answers asked about were checked as they arrived, read by read
 * (upstream_xfer_json): nothing is gone over at their end, when a large
 * one would hold the loop. One that was not (not expected) is checked
 * here, piece by piece where it lies. On false, WHY says where it goes
 * wrong.
 */
bool
request_body_is_json(const struct request *r, struct evbuffer *body,
    size_t blen, char *why, size_t whylen)
{
	struct evbuffer_iovec v[16];
	struct evbuffer_ptr pos;
	struct jscheck st;
	size_t at = r->json_at, done = 0, take, step;
	int i, nv;
	bool ok = r->json == 1;

	if (r->json == -1) {
		jscheck_init(&st);
		if (evbuffer_ptr_set(body, &pos, 0, EVBUFFER_PTR_SET) == -1)
			fatalx("%s: evbuffer_ptr_set", __func__);
		while (done < blen) {
			nv = evbuffer_peek(body, blen - done, &pos, v,
			    nitems(v));
			if (nv < 1)
				fatalx("%s: evbuffer_peek", __func__);
			if (nv > (int)nitems(v))
				nv = nitems(v);
			for (i = 0, step = 0; i < nv && done < blen; i++) {
				take = v[i].iov_len < blen - done ?
				    v[i].iov_len :
				    blen - done;
				jscheck_feed(&st, v[i].iov_base, take);
				done += take;
				step += take;
			}
			if (done < blen &&
			    evbuffer_ptr_set(body, &pos, step,
				EVBUFFER_PTR_ADD) == -1)
				fatalx("%s: evbuffer_ptr_set", __func__);
		}
		ok = jscheck_end(&st, &at);
	}
	if (!ok)
		snprintf(why, whylen,
		    "answered 2xx with a body that is not JSON (at byte %zu "
		    "of %zu)",
		    at, blen);
	return ok;
}

/*
 * The head floe sends for SIDE's answer M, into HDRS (REQUEST_HDRS_MAX
 * bytes): the headers that matter, copied (an upstream head is at most
 * 64 KiB), floe's ETag (also into ETAG, ETAG_MAX bytes; "" without one),
 * X-Floe-Target and X-Floe-Wave. Its length.
 */
size_t
request_head(struct request *r, enum route_side side, const struct h1_msg *m,
    char *hdrs, char *etag)
{
	const struct h1_header *h;
	const char *pinned = route_side_name(side);
	char *o = hdrs;
	size_t i;

	etag[0] = '\0';
	for (i = 0; i < m->nhdrs; i++) {
		h = &m->hdrs[i];
		/*
		 * One ETag, minted, and only while it fits with the 512
		 * bytes kept for floe's own lines: a catalog's head of 64 KiB
		 * could otherwise grow past HDRS as its ETags are rewritten.
		 */
		if (h->field == H1_F_ETAG) {
			if (etag[0] == '\0' &&
			    etag_mint(h->value, h->value_len, side,
				r->has_route ? r->route.version : 0, etag,
				ETAG_MAX) == 0 &&
			    (size_t)(o - hdrs) + strlen(etag) + 8 <
				REQUEST_HDRS_MAX - 512)
				request_put_header(&o, "ETag", 4, etag,
				    strlen(etag));
			continue;
		}
		if (request_back_headers[h->field] &&
		    (size_t)(o - hdrs) + h->name_len + h->value_len + 4 <
			REQUEST_HDRS_MAX - 512)
			request_put_header(&o, h->name, h->name_len, h->value,
			    h->value_len);
	}
	request_put(&o, "X-Floe-Target: ", 15);
	request_put(&o, pinned, ROUTE_SIDE_NAME_LEN);
	request_put(&o, "\r\nX-Floe-Wave: ", 15);
	request_put_wave(&o, r);
	request_put(&o, "\r\n", 2);
	/* workers = N: which one answered. */
	if (r->f->wslot != NULL) {
		request_put(&o, "X-Floe-Worker: ", 15);
		o += units_utoa(o,
		    (uint64_t)(r->f->wslot - r->f->workers->slot));
		request_put(&o, "\r\n", 2);
	}
	return o - hdrs;
}

/*
 * The error trigger counts the table reads of assigned waves: this one,
 * by SIDE, BAD if it failed (4xx: not). A worker counts it for its master.
 */
void
request_count_read(struct request *r, enum route_side side, bool bad)
{
	if (!r->has_route || !r->route.assigned || r->rr.write)
		return;
	watch_count(r->f->watch, r->route.wave, r->route.state, side, bad);
	if (r->f->wslot != NULL)
		workers_count(r->f->wslot, r->route.wave, r->route.state, side,
		    bad);
}

/*
 * Pass the upstream answer M from SIDE back to the client and end R. The
 * headers that matter are copied into one buffer (an upstream head is at
 * most 64 KiB), floe's ETag and X-Floe-* added; a LoadTable result gets
 * the side's catalog config merged in, and URLs under the catalog's base
 * point back at floe, pinned to the side that answered. A LoadTable
 * result that is not JSON is the catalog's failure (502), never passed
 * on: floe would pass on a 200 it cannot vouch for.
 */
void
request_reply_upstream(struct request *r, enum route_side side,
    struct h1_msg *m)
{
	static char hdrs[REQUEST_HDRS_MAX];
	struct floe *f = r->f;
	struct evbuffer *body = m->body;
	char etag[ETAG_MAX], *o, why[128];
	const char *pinned = route_side_name(side);
	struct memo_buf *send = NULL;
	size_t blen, hlen;
	int64_t cl;

	o = hdrs + request_head(r, side, m, hdrs, etag);
	blen = evbuffer_get_length(body);
	if (m->status >= 200 && m->status < 300 && blen > 0 &&
	    r->merge_config &&
	    !request_body_is_json(r, body, blen, why, sizeof(why))) {
		request_reply_failure(r, side, UPSTREAM_GARBAGE, why);
		return;
	}
	if (m->status >= 200 && m->status < 300 && blen > 0)
		blen = r->merge_config && memo_is_on(f->memo) ?
		    request_memo_rewrite(r, side, body, blen,
			r->cacheable ? NULL : &send) :
		    request_rewrite(r, side, body, blen, NULL, NULL);
	if (m->status >= 500)
		f->stats.side[side].errors_5xx++;
	/* The error trigger counts table reads of assigned waves (4xx: ok). */
	request_count_read(r, side, m->status >= 500);
	if (m->status == 304)
		f->stats.side[side].not_modified++;
	if (r->cacheable) {
		request_cache_store(r, m, hdrs, o - hdrs, body, etag);
		request_put(&o, "X-Floe-Cache: ", 14);
		request_put(&o, r->cache_state, strlen(r->cache_state));
		request_put(&o, "\r\n", 2);
	}
	hlen = o - hdrs;
	request_log_access(r, m->status, pinned);
	f->stats.requests++;
	cl = r->msg->method == H1_HEAD || m->status == 304 ? (int64_t)blen : -1;
	/* The memo's rewrite is sent from where it is; BODY is let go. */
	if (send != NULL)
		request_memo_reply(r, m->status, hdrs, hlen, send, cl);
	else
		server_reply(r->conn, m->status, hdrs, hlen, body, cl);
	request_free(r);
}

/*
 * SIDE failed to answer: 502 or 504 naming the target; 503 when floe had
 * no credential for it (its token expired), naming the token endpoint.
 */
void
request_reply_failure(struct request *r, enum route_side side,
    enum upstream_fail fail, const char *why)
{
	unsigned status = fail == UPSTREAM_TIMEOUT ? 504 : 502;

	if (fail == UPSTREAM_FULL) {
		request_reply_full(r);
		return;
	}
	r->f->stats.side[side].failures++;
	request_count_read(r, side, true);
	/*
	 * Nothing was sent (a commit either: its state is known). The token
	 * holder logged the outage once; a line per request would drown it.
	 */
	if (fail == UPSTREAM_NOCRED) {
		request_errorf(r, 503, "ServiceUnavailableException",
		    "No %s for the %s catalog: %s",
		    cred_kind(r->f->cred[side]) == CRED_SIGV4 ? "signature" :
								"token",
		    route_side_name(side), why);
		return;
	}
	log_warnx("%s %.*s: %s catalog failed: %s", r->msg->method_name,
	    (int)r->rr.rest.len, r->msg->target + r->rr.rest.off,
	    route_side_name(side), why);
	if (r->commit)
		request_errorf(r, status, "CommitStateUnknownException",
		    "Invalid response from the upstream server: the %s "
		    "catalog (%s) %s; the commit state is unknown",
		    route_side_name(side), r->f->conf->target[side].uri, why);
	else
		request_errorf(r, status,
		    status == 504 ? "GatewayTimeoutException" :
				    "BadGatewayException",
		    "The %s catalog (%s) failed: %s", route_side_name(side),
		    r->f->conf->target[side].uri, why);
}

static const char request_list_hdrs[] =
    "Content-Type: application/json\r\nX-Floe-Target: both\r\n"
    "X-Floe-Wave: none\r\n";

/*
 * A side that does not know the namespace lists nothing; anything other
 * than 200 or 404 from either side is passed on as it came. True if R was
 * answered so.
 */
static bool
request_reply_list_passed(struct request *r, int ok)
{
	char hdr[128];
	int i, n;

	for (i = 0; i < ROUTE_NSIDES; i++) {
		if (r->ans_status[i] == 200 ||
		    (r->ans_status[i] == 404 && ok > 0))
			continue;
		request_log_access(r, r->ans_status[i], route_side_name(i));
		r->f->stats.requests++;
		n = snprintf(hdr, sizeof(hdr),
		    "Content-Type: application/json\r\n"
		    "X-Floe-Target: %s\r\n",
		    route_side_name(i));
		server_reply(r->conn, r->ans_status[i], hdr, n, r->ans[i], -1);
		request_free(r);
		return true;
	}
	return false;
}

/*
 * The client's page of a listing: its pageToken into TOKEN (*TOK NULL
 * without one) and its pageSize (0 without one). -1 if R was answered.
 */
static int
request_list_page(struct request *r, char *token, size_t len, const char **tok,
    long *page_size)
{
	const char *q = r->msg->target + r->rr.query.off;
	char size[32], *end;

	*tok = NULL;
	*page_size = 0;
	if (rest_query_get(q, r->rr.query.len, "pageToken", token, len) == 0)
		*tok = token;
	if (rest_query_get(q, r->rr.query.len, "pageSize", size,
		sizeof(size)) != 0)
		return 0;
	errno = 0;
	*page_size = strtol(size, &end, 10);
	if (errno != 0 || *end != '\0' || *page_size < 1) {
		request_errorf(r, 400, "BadRequestException",
		    "Invalid pageSize \"%s\": must be an integer >= 1", size);
		return -1;
	}
	return 0;
}

/* Both listings are in: merge, sort, page, answer. */
void
request_reply_list(struct request *r)
{
	const char *bodies[ROUTE_NSIDES];
	size_t lens[ROUTE_NSIDES], outlen;
	char token[1024], err[256], *out;
	const char *tok;
	long page_size;
	int i, ok = 0;
	struct evbuffer *b;

	for (i = 0; i < ROUTE_NSIDES; i++) {
		if (r->ans_error[i][0] != '\0')
			return; /* answered by request_done_cb */
		if (r->ans_status[i] == 200)
			ok++;
	}
	if (request_reply_list_passed(r, ok))
		return;
	for (i = 0; i < ROUTE_NSIDES; i++) {
		bodies[i] = r->ans_status[i] == 200 ?
		    (const char *)evbuffer_pullup(r->ans[i], -1) :
		    NULL;
		lens[i] = r->ans_status[i] == 200 ?
		    evbuffer_get_length(r->ans[i]) :
		    0;
	}
	if (request_list_page(r, token, sizeof(token), &tok, &page_size) == -1)
		return;
	out = listing_merge(r->rr.op == REST_LIST_NAMESPACES ? "namespaces" :
							       "identifiers",
	    bodies, lens, tok, page_size, &outlen, err, sizeof(err));
	if (out == NULL) {
		request_errorf(r, 502, "BadGatewayException",
		    "Cannot merge the catalogs' listings: %s", err);
		return;
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add(b, out, outlen);
	free(out);
	request_log_access(r, 200, "both");
	r->f->stats.requests++;
	server_reply(r->conn, 200, request_list_hdrs,
	    sizeof(request_list_hdrs) - 1, b, -1);
	evbuffer_free(b);
	request_free(r);
}
