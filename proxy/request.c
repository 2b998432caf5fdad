/*
 * floe: request.c -- the life of one engine request. The path is parsed
 * into an Iceberg operation; the route decides the side (reads follow the
 * wave, writes the authoritative side, listings ask both); the request is
 * forwarded on that side's pool with the prefix rewritten and the upstream
 * credentials; the answer goes back with floe's ETag, the side's catalog
 * config merged into LoadTable results, and X-Floe-Target/X-Floe-Wave.
 */
#include <sys/types.h>

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/memfind.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/etag.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/listing.h"
#include "proxy/request.h"
#include "proxy/rest.h"
#include "proxy/server.h"
#include "proxy/upstream.h"
#include "proxy/watch.h"
#include "routing/route.h"
#include "routing/wave.h"
#include "policy/auth.h"

/* The prefixes floe announces: routed, or pinned to one side. */
enum request_prefix {
	PFX_ROUTED,
	PFX_WAREHOUSE,
	PFX_LAKEHOUSE,
};

/* How the answer is put together. */
enum request_mode {
	MODE_ONE, /* one side answers */
	MODE_LIST, /* both sides list; floe merges and pages */
	MODE_NS_READ, /* warehouse, then the lakehouse if it has no such ns */
};

/* Objects a request names, kept to invalidate their cached answers. */
#define REQUEST_MAX_OBJS 8
/* An answer's head as floe sends it: an upstream head is at most 64 KiB. */
#define REQUEST_HDRS_MAX (64 * 1024 + 1024)
/* A cache key: object, side, versions, variant. */
#define REQUEST_CKEY_MAX 2048
/* A large answer's config is merged from at most its last 64 KiB. */
#define REQUEST_TAIL (64 * 1024)

/*
 * One request. Requests are recycled through a free list, and only the
 * head of the struct is cleared for each: the large buffers of the tail
 * (names, keys, the route) are written before they are read.
 */
struct request {
	struct floe *f;
	struct server_conn *conn;
	struct h1_msg *msg;
	SLIST_ENTRY(request) free;
	bool no_prefix; /* /v1/oauth/tokens: no catalog prefix */
	enum request_prefix pfx;
	enum request_mode mode;
	bool has_route;
	enum route_side side; /* the side asked (MODE_ONE, MODE_NS_READ) */
	bool commit; /* a lost answer is CommitStateUnknown */
	bool merge_config; /* the answer is a LoadTableResult */
	struct upstream_xfer *x[ROUTE_NSIDES];
	struct evbuffer *ans[ROUTE_NSIDES]; /* MODE_LIST answers */
	unsigned ans_status[ROUTE_NSIDES];
	int pending;
	int64_t start_us;
	uint64_t upstream_us;
	uint64_t client_hash;
	unsigned nobjs;
	bool objs_overflow;
	/* LoadTable cache: the keys, and what happened (for the log). */
	bool cacheable;
	bool revalidating;
	uint64_t cache_epoch; /* invalidations seen when it was sent */
	size_t ckeylen[2];
	const char *cache_state;

	/* The tail: not cleared; each field is set before it is read. */
	char ident[AUTH_IDENT_MAX]; /* the authenticated client, or "" */
	char ans_error[ROUTE_NSIDES][160];
	struct rest_req rr;
	struct route_result route; /* valid when has_route */
	struct route_obj objs[REQUEST_MAX_OBJS];
	unsigned char ckey[2][REQUEST_CKEY_MAX]; /* shared, per client */
};
#define REQUEST_HEAD offsetof(struct request, ident)
/* Requests kept for reuse. */
#define REQUEST_POOL_MAX 256

static SLIST_HEAD(, request) request_pool = SLIST_HEAD_INITIALIZER(
    request_pool);
static unsigned request_npool;

static char request_via[80] = "1.1 floe";
static struct evbuffer *request_log;

static void request_forward(struct request *, enum route_side);
static void request_done_cb(struct upstream_xfer *, void *);
static void request_put(char **, const void *, size_t);
static void request_free(struct request *);

void
request_init(const char *node_id)
{
	snprintf(request_via, sizeof(request_via), "1.1 %s", node_id);
	if (request_log == NULL && (request_log = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
}

/* The wave for X-Floe-Wave and the access log. */
static void
request_wave_str(const struct request *r, char *buf, size_t len)
{
	if (r->has_route && r->route.assigned)
		snprintf(buf, len, "%u", r->route.wave);
	else
		strlcpy(buf, "none", len);
}

/* Append one access log line (buffered; flushed on the tick). */
static void
request_log_access(struct request *r, unsigned status, const char *target)
{
	struct floe *f = r->f;
	char ts[40], wave[16];
	int64_t us;

	if (f->access_fd == -1 || request_log == NULL)
		return;
	units_time_format(units_now_ms(), ts, sizeof(ts));
	request_wave_str(r, wave, sizeof(wave));
	us = r->upstream_us;
	evbuffer_add_printf(request_log,
	    "%s %s %s %.*s target=%s wave=%s status=%u upstream_ms=%lld.%03lld"
	    " cache=%s%s%s\n",
	    ts, server_conn_peer(r->conn), r->msg->method_name,
	    (int)(r->rr.query.len > 0 ? r->rr.query.off - 1 :
					r->msg->target_len),
	    r->msg->target, target, wave, status, (long long)(us / 1000),
	    (long long)(us % 1000),
	    r->cache_state != NULL ? r->cache_state : "-",
	    r->ident[0] != '\0' ? " client=" : "", r->ident);
	if (evbuffer_get_length(request_log) > 64 * 1024)
		request_flush_log(f);
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

/* Answer with an Iceberg ErrorModel. */
static void
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

static void request_errorf(struct request *, unsigned, const char *,
    const char *, ...) __attribute__((__format__(__printf__, 4, 5)));

/* Answer R with an ErrorModel and end it. */
static void
request_errorf(struct request *r, unsigned status, const char *type,
    const char *fmt, ...)
{
	char msg[1024], hdr[160];
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
	request_log_access(r, status, "floe");
	r->f->stats.requests++;
	request_error_conn(r->f, r->conn, status, type, msg, hdr);
	request_free(r);
}

void
request_serve_error(struct server_conn *conn, int status, const char *why,
    void *arg)
{
	struct floe *f = arg;
	char msg[256];

	f->stats.requests++;
	snprintf(msg, sizeof(msg), "Malformed HTTP request: %s", why);
	request_error_conn(f, conn, status,
	    status == 408 ? "RequestTimeoutException" : "BadRequestException",
	    msg, NULL);
}

static void
request_free(struct request *r)
{
	int i;

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
static struct request *
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

/*
 * A hash of the client's identity: the name authentication gave it (so
 * floectl resolve --client NAME predicts its canary side), else its bearer
 * token, else its address.
 */
static uint64_t
request_client_hash(struct request *r)
{
	const struct h1_header *h = h1_find(r->msg, "Authorization");
	const char *p;
	size_t n, i;
	uint64_t x = 0xcbf29ce484222325ULL; /* FNV-1a, as /resolve?client= */

	if (r->ident[0] != '\0')
		return route_client_hash(r->ident, strlen(r->ident));
	if (h != NULL) {
		p = h->value;
		n = h->value_len;
	} else {
		p = server_conn_peer(r->conn);
		n = strlen(p);
	}
	for (i = 0; i < n; i++) {
		x ^= (unsigned char)p[i];
		x *= 0x100000001b3ULL;
	}
	return x;
}

/* GET /v1/config: floe's own catalog config. */
static void
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

/* GET /healthz and /readyz. */
static bool
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

/* Resolve the table named by NS (levels joined by 0x1f) and NAME. */
static int
request_resolve(struct request *r, const char *ns, size_t nslen,
    const char *name, size_t namelen, struct route_result *res)
{
	struct route_obj obj;

	if (route_obj_table(ns, nslen, name, namelen, &obj) == -1)
		return -1;
	if (r->nobjs < REQUEST_MAX_OBJS)
		r->objs[r->nobjs++] = obj;
	else
		r->objs_overflow = true;
	if (r->f->store == NULL) {
		memset(res, 0, sizeof(*res));
		res->why = ROUTE_WHY_STORE_ERROR;
		return 0;
	}
	(void)route_resolve(r->f->store, &obj, r->client_hash, res);
	return 0;
}

/* Join a JSON array of namespace levels with 0x1f into BUF. */
static int
request_json_ns(json_t *levels, char *buf, size_t len, size_t *outlen)
{
	size_t i, n = 0, l;
	json_t *v;

	if (!json_is_array(levels) || json_array_size(levels) == 0)
		return -1;
	json_array_foreach(levels, i, v) {
		if (!json_is_string(v))
			return -1;
		l = json_string_length(v);
		if (n + l + 1 >= len)
			return -1;
		if (i > 0)
			buf[n++] = ROUTE_SEP_LEVEL;
		memcpy(buf + n, json_string_value(v), l);
		n += l;
	}
	*outlen = n;
	return 0;
}

/* Resolve a TableIdentifier object {namespace, name}. */
static int
request_resolve_ident(struct request *r, json_t *ident,
    struct route_result *res, char *text, size_t textlen)
{
	char ns[REST_NAME_MAX];
	size_t nslen;
	json_t *name = json_object_get(ident, "name");
	struct route_obj obj;

	if (!json_is_string(name) ||
	    request_json_ns(json_object_get(ident, "namespace"), ns, sizeof(ns),
		&nslen) == -1)
		return -1;
	if (route_obj_table(ns, nslen, json_string_value(name),
		json_string_length(name), &obj) == -1)
		return -1;
	route_obj_format(&obj, text, textlen);
	return request_resolve(r, ns, nslen, json_string_value(name),
	    json_string_length(name), res);
}

/*
 * Do A and B resolve to the same side? Writes must match; reads too,
 * except within one wave: a canary picks each name's read side by a hash,
 * but names of one wave move together, so the route still follows.
 */
static bool
request_same_side(const struct route_result *a, const struct route_result *b)
{
	if (a->write != b->write)
		return false;
	return a->read == b->read ||
	    (a->assigned && b->assigned && a->wave == b->wave);
}

/*
 * Operations that name their tables only in the body: create, register,
 * rename, multi-table transactions. All tables must be on one side, or
 * floe refuses rather than split what no catalog can do atomically.
 */
static int
request_route_body(struct request *r)
{
	struct evbuffer *body = r->msg->body;
	size_t len = evbuffer_get_length(body), i;
	json_error_t jerr;
	json_t *j, *name, *changes, *c;
	struct route_result res[2];
	char text[2][600];
	int rc = -1;

	j = json_loadb(len > 0 ? (const char *)evbuffer_pullup(body, -1) : "",
	    len, 0, &jerr);
	if (j == NULL || !json_is_object(j)) {
		request_errorf(r, 400, "BadRequestException",
		    "Invalid JSON body for %s: %s", rest_op_name(r->rr.op),
		    j == NULL ? jerr.text : "not an object");
		json_decref(j);
		return -1;
	}
	switch (r->rr.op) {
	case REST_CREATE_TABLE:
	case REST_REGISTER_TABLE:
		name = json_object_get(j, "name");
		if (!json_is_string(name) ||
		    request_resolve(r, r->rr.ns, r->rr.ns_len,
			json_string_value(name), json_string_length(name),
			&r->route) == -1) {
			request_errorf(r, 400, "BadRequestException",
			    "Invalid %s request: \"name\" must be a table name",
			    rest_op_name(r->rr.op));
			goto out;
		}
		r->has_route = true;
		break;
	case REST_RENAME_TABLE:
		if (request_resolve_ident(r, json_object_get(j, "source"),
			&res[0], text[0], sizeof(text[0])) == -1 ||
		    request_resolve_ident(r, json_object_get(j, "destination"),
			&res[1], text[1], sizeof(text[1])) == -1) {
			request_errorf(r, 400, "BadRequestException",
			    "Invalid renameTable request: \"source\" and "
			    "\"destination\" must be table identifiers");
			goto out;
		}
		/*
		 * Reads must follow the table too: renaming a lakehouse-read
		 * table to a warehouse-read name would move its readers.
		 */
		if (!request_same_side(&res[0], &res[1])) {
			request_errorf(r, 400, "BadRequestException",
			    "Cannot rename %s (read from the %s, written to the "
			    "%s) to %s (read from the %s, written to the %s): "
			    "the two names are served by different catalogs; "
			    "put both in the same wave first",
			    text[0], route_side_name(res[0].read),
			    route_side_name(res[0].write), text[1],
			    route_side_name(res[1].read),
			    route_side_name(res[1].write));
			goto out;
		}
		r->route = res[0];
		r->has_route = true;
		break;
	case REST_COMMIT_TRANSACTION:
		changes = json_object_get(j, "table-changes");
		if (!json_is_array(changes) || json_array_size(changes) == 0) {
			request_errorf(r, 400, "BadRequestException",
			    "Invalid commitTransaction request: "
			    "\"table-changes\" must be a non-empty array");
			goto out;
		}
		json_array_foreach(changes, i, c) {
			struct route_result *cur = i == 0 ? &res[0] : &res[1];

			if (request_resolve_ident(r,
				json_object_get(c, "identifier"), cur,
				text[i == 0 ? 0 : 1], sizeof(text[0])) == -1) {
				request_errorf(r, 400, "BadRequestException",
				    "Invalid commitTransaction request: "
				    "table-changes[%zu] has no valid "
				    "\"identifier\"",
				    i);
				goto out;
			}
			if (i > 0 && !request_same_side(&res[0], &res[1])) {
				request_errorf(r, 400, "BadRequestException",
				    "Cannot commit one transaction across "
				    "catalogs: %s is read from the %s and "
				    "written to the %s, %s is read from the %s "
				    "and written to the %s",
				    text[0], route_side_name(res[0].read),
				    route_side_name(res[0].write), text[1],
				    route_side_name(res[1].read),
				    route_side_name(res[1].write));
				goto out;
			}
			if (i > 0 && res[1].warehouse_writes_refused &&
			    res[1].write == ROUTE_WAREHOUSE)
				res[0].warehouse_writes_refused = true;
		}
		r->route = res[0];
		r->has_route = true;
		break;
	default:
		break;
	}
	rc = 0;
out:
	json_decref(j);
	return rc;
}

/* Decide the side(s) for R. 0 to forward, -1 if R was answered. */
static int
request_route(struct request *r)
{
	const struct rest_req *rr = &r->rr;
	enum route_side pinned =
	    r->pfx == PFX_LAKEHOUSE ? ROUTE_LAKEHOUSE : ROUTE_WAREHOUSE;
	char text[600];

	r->mode = MODE_ONE;
	switch (rr->scope) {
	case REST_SCOPE_TABLE:
		if (request_resolve(r, rr->ns, rr->ns_len, rr->table,
			rr->table_len, &r->route) == -1) {
			request_errorf(r, 400, "BadRequestException",
			    "Invalid table identifier");
			return -1;
		}
		r->has_route = true;
		break;
	case REST_SCOPE_BODY:
		if (request_route_body(r) == -1)
			return -1;
		break;
	case REST_SCOPE_NAMESPACE:
	case REST_SCOPE_CATALOG:
		if (r->pfx != PFX_ROUTED)
			break;
		if (rr->op == REST_LIST_NAMESPACES ||
		    rr->op == REST_LIST_TABLES || rr->op == REST_LIST_VIEWS)
			r->mode = MODE_LIST;
		else if (rr->op == REST_LOAD_NAMESPACE ||
		    rr->op == REST_NAMESPACE_EXISTS)
			r->mode = MODE_NS_READ;
		break;
	case REST_SCOPE_VIEW:
		break;
	}
	if (r->pfx != PFX_ROUTED)
		r->side = pinned;
	else if (!r->has_route)
		r->side = ROUTE_WAREHOUSE;
	else
		r->side = rr->write ? r->route.write : r->route.read;
	if (rr->write && r->side == ROUTE_WAREHOUSE && r->has_route &&
	    r->route.warehouse_writes_refused) {
		char since[40];

		route_obj_format(&r->route.matched, text, sizeof(text));
		units_time_format(r->route.since_ms, since, sizeof(since));
		request_errorf(r, 403, "ForbiddenException",
		    "Writes to the warehouse copy of %.*s are refused: wave %u "
		    "is %s since %s; write to the lakehouse",
		    (int)rr->table_len, rr->table, r->route.wave,
		    wave_state_name(r->route.state), since);
		return -1;
	}
	r->commit = rr->op == REST_UPDATE_TABLE ||
	    rr->op == REST_COMMIT_TRANSACTION || rr->op == REST_REPLACE_VIEW;
	r->merge_config = rr->op == REST_LOAD_TABLE ||
	    rr->op == REST_CREATE_TABLE || rr->op == REST_REGISTER_TABLE;
	return 0;
}

/* Headers forwarded to the upstream as they came. */
static const char *const request_fwd_headers[] = {
	"Content-Type",
	"Accept",
	"X-Iceberg-Access-Delegation",
	"Idempotency-Key",
	"User-Agent",
	"X-Client-Version",
	"X-Client-Git-Commit-Short",
	"X-Request-Id",
	"traceparent",
};

/* Is this query parameter one floe consumes for listings? */
static bool
request_paging_param(const char *p, size_t len)
{
	return (len >= 10 && strncmp(p, "pageToken=", 10) == 0) ||
	    (len >= 9 && strncmp(p, "pageToken", 9) == 0 && len == 9) ||
	    (len >= 9 && strncmp(p, "pageSize=", 9) == 0);
}

/* Bumped by every write through floe: a read sent before it may be stale. */
static uint64_t request_cache_epoch;

/*
 * Keys of answers that may carry secrets: such answers are cached for
 * the client that got them, never shared.
 */
static const char *const request_secret_keys[] = {
	"\"storage-credentials\"",
	"\"remote-signing-config\"",
	"\"token\"",
	"\"s3.access-key-id\"",
	"\"s3.secret-access-key\"",
	"\"s3.session-token\"",
	"\"gcs.oauth2.token\"",
	"\"adls.sas-token",
};

static bool
request_has_secrets(const char *body, size_t len)
{
	size_t i;

	for (i = 0; i < nitems(request_secret_keys); i++)
		if (memfind(body, len, request_secret_keys[i],
			strlen(request_secret_keys[i])) != NULL)
			return true;
	return false;
}

/* Append N bytes to the key being built; false when it does not fit. */
static bool
request_key_add(unsigned char *k, size_t *at, const void *p, size_t n)
{
	if (*at + n > REQUEST_CKEY_MAX)
		return false;
	memcpy(k + *at, p, n);
	*at += n;
	return true;
}

/*
 * The cache keys of a LoadTable for SIDE: the object, then everything that
 * changes the answer -- the side, the route version, the side's config
 * generation, the query (snapshots, referenced-by), the access delegation
 * and the Host (URLs are rewritten to it). Key 0 is shared by clients;
 * key 1 adds the client's identity, for answers that carry credentials or
 * from a side that sees the client's own Authorization.
 */
static bool
request_cache_keys(struct request *r, enum route_side side)
{
	const struct route_obj *obj = &r->objs[0];
	const struct h1_header *h;
	unsigned char head[REQUEST_CKEY_MAX], *k;
	uint64_t v[2];
	size_t n = 0, i, at;
	unsigned char zero = 0, sb = side;
	bool ok;

	v[0] = r->route.version;
	v[1] = r->f->cat[side]->generation;
	ok = request_key_add(head, &n, obj->key, obj->len) &&
	    request_key_add(head, &n, &zero, 1) &&
	    request_key_add(head, &n, &sb, 1) &&
	    request_key_add(head, &n, v, sizeof(v));
	for (i = 0; i < 2 && ok; i++) {
		k = r->ckey[i];
		at = 0;
		ok = request_key_add(k, &at, head, n) &&
		    request_key_add(k, &at, i == 0 ? "s" : "c", 1);
		if (ok && i == 1)
			ok = request_key_add(k, &at, &r->client_hash,
			    sizeof(r->client_hash));
		ok = ok &&
		    request_key_add(k, &at, r->msg->target + r->rr.query.off,
			r->rr.query.len) &&
		    request_key_add(k, &at, &zero, 1);
		if (ok && (h = h1_find(r->msg, "X-Iceberg-Access-Delegation")))
			ok = request_key_add(k, &at, h->value, h->value_len);
		ok = ok && request_key_add(k, &at, &zero, 1);
		if (ok && (h = h1_find(r->msg, "Host")) != NULL)
			ok = request_key_add(k, &at, h->value, h->value_len);
		r->ckeylen[i] = at;
	}
	return ok;
}

/* Does the client's If-None-Match name ETAG (weak comparison)? */
static bool
request_inm_matches(const struct h1_msg *m, const char *etag)
{
	const struct h1_header *h = h1_find(m, "If-None-Match");
	size_t n;

	if (h == NULL || etag[0] == '\0')
		return false;
	if (strncmp(etag, "W/", 2) == 0)
		etag += 2;
	n = strlen(etag);
	return h->value_len >= n && memmem(h->value, h->value_len, etag, n);
}

/* Answer R from the cached entry E. */
static void
request_cache_reply(struct request *r, const struct cache_entry *e,
    const char *how)
{
	/* Cached heads were built in request_reply_upstream's buffer. */
	static char hdr[REQUEST_HDRS_MAX + 64];
	static struct evbuffer *b;
	bool not_modified = request_inm_matches(r->msg, e->etag);
	char *o = hdr;

	if (b == NULL && (b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	r->cache_state = how;
	request_put(&o, e->headers, e->hlen);
	request_put(&o, "X-Floe-Cache: ", 14);
	request_put(&o, how, strlen(how));
	request_put(&o, "\r\n", 2);
	request_log_access(r, not_modified ? 304 : e->status,
	    route_side_name(r->side));
	r->f->stats.requests++;
	if (not_modified) {
		r->f->stats.side[r->side].not_modified++;
		server_reply(r->conn, 304, hdr, o - hdr, NULL, -1);
	} else {
		evbuffer_add(b, e->body, e->len);
		server_reply(r->conn, e->status, hdr, o - hdr, b, -1);
	}
}

/*
 * Look a LoadTable up in the cache. True if R was answered from it;
 * false to forward (a miss, or an expired entry to revalidate, when
 * r->revalidating is set).
 */
static bool
request_cache_lookup(struct request *r)
{
	struct floe *f = r->f;
	const struct cache_entry *e = NULL;
	bool expired = false;
	int i = 1;

	r->cacheable = request_cache_keys(r, r->side);
	if (!r->cacheable)
		return false;
	r->cache_state = "miss";
	r->cache_epoch = request_cache_epoch;
	/* A side with floe's own token answers every client alike. */
	if (f->conf->target[r->side].token != NULL &&
	    cache_peek(f->cache, r->ckey[0], r->ckeylen[0]) != NULL)
		i = 0;
	e = cache_get(f->cache, r->ckey[i], r->ckeylen[i], units_now_ms(),
	    &expired);
	if (e == NULL)
		return false;
	if (expired) {
		r->revalidating = true;
		return false;
	}
	request_cache_reply(r, e, "hit");
	return true;
}

/* Store the answer being sent for R (HDRS and BODY as sent). */
static void
request_cache_store(struct request *r, const struct h1_msg *m, const char *hdrs,
    size_t hlen, struct evbuffer *body, const char *etag)
{
	const struct h1_header *up = h1_find(m, "ETag");
	const struct h1_header *cc = h1_find(m, "Cache-Control");
	struct cache_entry e;
	char upbuf[ETAG_MAX];
	int i;

	if (!r->cacheable || m->status != 200 ||
	    r->cache_epoch != request_cache_epoch)
		return;
	if (cc != NULL &&
	    (memmem(cc->value, cc->value_len, "no-store", 8) ||
		memmem(cc->value, cc->value_len, "private", 7)))
		return;
	memset(&e, 0, sizeof(e));
	e.status = m->status;
	e.hlen = hlen;
	e.headers = hdrs;
	e.len = evbuffer_get_length(body);
	e.body = (const char *)evbuffer_pullup(body, -1);
	e.etag = etag;
	upbuf[0] = '\0';
	if (up != NULL && up->value_len < sizeof(upbuf)) {
		memcpy(upbuf, up->value, up->value_len);
		upbuf[up->value_len] = '\0';
	}
	e.up_etag = upbuf;
	i = r->f->conf->target[r->side].token != NULL &&
		!request_has_secrets(e.body, e.len) ?
	    0 :
	    1;
	cache_put(r->f->cache, r->ckey[i], r->ckeylen[i], r->objs[0].len, &e,
	    units_now_ms());
}

/* A write through floe: its objects' cached answers are dropped. */
static void
request_cache_invalidate(struct request *r)
{
	unsigned i;

	request_cache_epoch++;
	if (!cache_is_on(r->f->cache))
		return;
	if (r->objs_overflow) {
		cache_clear(r->f->cache);
		return;
	}
	for (i = 0; i < r->nobjs; i++)
		cache_drop_object(r->f->cache, r->objs[i].key, r->objs[i].len);
}

/* Copy N bytes to *O. */
static void
request_put(char **o, const void *p, size_t n)
{
	memcpy(*o, p, n);
	*o += n;
}

/* The request-header fields floe forwards or reads while forwarding. */
enum request_fwd {
	FWD_NO,
	FWD_AS_IS, /* passed on as it came */
	FWD_AUTHZ, /* only to a catalog without floe's own token */
	FWD_INM, /* translated from floe's ETags */
};

/* What to do with the client's header NAME. */
static enum request_fwd
request_fwd_kind(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < nitems(request_fwd_headers); i++)
		if (h1_name_is(name, len, request_fwd_headers[i]))
			return FWD_AS_IS;
	if (h1_name_is(name, len, "Authorization"))
		return FWD_AUTHZ;
	if (h1_name_is(name, len, "If-None-Match"))
		return FWD_INM;
	return FWD_NO;
}

/*
 * Encode the namespace NS (levels joined by 0x1f) for a catalog whose
 * separator is SEP (NULL: 0x1f), each byte outside Java's URLEncoder safe
 * set as %XX. The length, or -1 if it does not fit OUT.
 */
static ssize_t
request_ns_encode(const char *ns, size_t nslen, const char *sep, char *out,
    size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *p, *end = ns + nslen, *s;
	unsigned char c;
	size_t n = 0;

	if (sep == NULL)
		sep = "\x1f";
	for (p = ns; p < end; p++) {
		s = *p == ROUTE_SEP_LEVEL ? sep : p;
		do {
			c = (unsigned char)*s;
			if (n + 3 > outlen)
				return -1;
			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '.' || c == '-' ||
			    c == '*' || c == '_')
				out[n++] = c;
			else {
				out[n++] = '%';
				out[n++] = hex[c >> 4];
				out[n++] = hex[c & 15];
			}
		} while (s != p && *++s != '\0');
	}
	return n;
}

/*
 * The namespace of R in SIDE's form, when it must be rewritten: it has
 * more than one level and floe or that catalog announces a separator of
 * its own, so the client's form (floe's) is not the catalog's. NS gets
 * the path segment, PARENT the value of a list's parent parameter (length
 * 0 when there is none to rewrite). False when the path goes on as the
 * client wrote it.
 */
static bool
request_ns_translate(const struct request *r, const struct catalog *cat,
    char *ns, size_t nssize, size_t *nslen, char *parent, size_t psize,
    size_t *plen)
{
	const char *fsep = r->f->conf->namespace_separator;
	char raw[REST_NAME_MAX], lv[REST_NAME_MAX];
	size_t i, j, n = 0, sl;
	ssize_t len;

	*nslen = *plen = 0;
	if (fsep == NULL && cat->separator == NULL)
		return false;
	if (r->rr.op == REST_LIST_NAMESPACES &&
	    rest_query_get(r->msg->target + r->rr.query.off, r->rr.query.len,
		"parent", raw, sizeof(raw)) == 0) {
		/* Levels split on floe's separator or 0x1f, as in the path. */
		sl = fsep != NULL ? strlen(fsep) : 0;
		for (i = 0; raw[i] != '\0' && n < sizeof(lv); i++) {
			if (sl > 0 && strncmp(raw + i, fsep, sl) == 0) {
				lv[n++] = ROUTE_SEP_LEVEL;
				i += sl - 1;
			} else
				lv[n++] = raw[i];
		}
		for (j = 0; j < n && lv[j] != ROUTE_SEP_LEVEL; j++)
			;
		if (j < n && n < sizeof(lv) &&
		    (len = request_ns_encode(lv, n, cat->separator, parent,
			 psize)) > 0)
			*plen = len;
	}
	if (r->rr.nlevels > 1 && r->rr.ns_raw.len > 0 &&
	    (len = request_ns_encode(r->rr.ns, r->rr.ns_len, cat->separator, ns,
		 nssize)) > 0)
		*nslen = len;
	return *nslen > 0 || *plen > 0;
}

/*
 * Forward R to SIDE. The request head is written in one pass into one
 * reserved extent of the head buffer: the request line with the catalog's
 * prefix, the headers that matter (one walk over the client's), and floe's
 * own X-Forwarded-For and Via. Host, the catalog's Authorization and
 * Content-Length are added by the pool.
 */
static void
request_forward(struct request *r, enum route_side side)
{
	static struct evbuffer *head;
	struct floe *f = r->f;
	const struct conf_target *t = &f->conf->target[side];
	const struct catalog *cat = f->cat[side];
	const struct h1_msg *m = r->msg;
	const struct h1_header *h;
	const struct cache_entry *e;
	struct evbuffer_iovec v;
	struct upstream_req ur;
	const char *q, *qe, *amp, *peer = server_conn_peer(r->conn);
	char inm[ETAG_MAX], *o, nsb[REST_NAME_MAX * 3 + 64];
	char pb[REST_NAME_MAX * 3 + 64];
	bool first = true, pass_authz, idem = false, tr;
	size_t need, plen = cat->prefix != NULL ? strlen(cat->prefix) : 0;
	size_t nsl, pl;
	unsigned i;
	int n;

	if (head == NULL && (head = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	/*
	 * The client's own credential goes on only to a catalog without a
	 * token of floe's, and never in token mode: those tokens are floe's.
	 */
	pass_authz = t->token == NULL && auth_mode(f->auth) != AUTH_TOKEN;
	tr = request_ns_translate(r, cat, nsb, sizeof(nsb), &nsl, pb,
	    sizeof(pb), &pl);
	need = strlen(m->method_name) + strlen(t->path) + plen + m->target_len +
	    sizeof(inm) + strlen(peer) + strlen(request_via) + 128;
	if (tr)
		need += nsl + pl;
	for (i = 0; i < m->nhdrs; i++)
		need += m->hdrs[i].name_len + m->hdrs[i].value_len + 4;
	if (evbuffer_reserve_space(head, need, &v, 1) != 1)
		fatalx("%s: out of memory", __func__);
	o = v.iov_base;
	request_put(&o, m->method_name, strlen(m->method_name));
	*o++ = ' ';
	request_put(&o, t->path, strlen(t->path));
	request_put(&o, "/v1", 3);
	if (plen > 0 && !r->no_prefix) {
		*o++ = '/';
		request_put(&o, cat->prefix, plen);
	}
	if (tr && nsl > 0) {
		/* The namespace segment in the catalog's form. */
		request_put(&o, m->target + r->rr.rest.off,
		    r->rr.ns_raw.off - r->rr.rest.off);
		request_put(&o, nsb, nsl);
		request_put(&o, m->target + r->rr.ns_raw.off + r->rr.ns_raw.len,
		    r->rr.rest.off + r->rr.rest.len - r->rr.ns_raw.off -
			r->rr.ns_raw.len);
	} else
		request_put(&o, m->target + r->rr.rest.off, r->rr.rest.len);
	/* The query, without the paging floe does itself for listings. */
	q = m->target + r->rr.query.off;
	qe = q + r->rr.query.len;
	while (q < qe) {
		amp = memchr(q, '&', qe - q);
		if (amp == NULL)
			amp = qe;
		if (amp > q &&
		    !(r->mode == MODE_LIST &&
			request_paging_param(q, amp - q))) {
			*o++ = first ? '?' : '&';
			if (tr && pl > 0 && amp - q >= 7 &&
			    strncmp(q, "parent=", 7) == 0) {
				request_put(&o, "parent=", 7);
				request_put(&o, pb, pl);
			} else
				request_put(&o, q, amp - q);
			first = false;
		}
		q = amp + 1;
	}
	request_put(&o, " HTTP/1.1\r\n", 11);
	for (i = 0; i < m->nhdrs; i++) {
		h = &m->hdrs[i];
		switch (request_fwd_kind(h->name, h->name_len)) {
		case FWD_NO:
			continue;
		case FWD_AUTHZ:
			if (!pass_authz)
				continue;
			break;
		case FWD_INM:
			/*
			 * Only when floe minted it for this side and this route
			 * version: a 304 must never keep a client on the side
			 * its table has left.
			 */
			if (r->revalidating || r->rr.op != REST_LOAD_TABLE)
				continue;
			n = etag_unmint(h->value, h->value_len, side,
			    r->has_route ? r->route.version : 0, inm,
			    sizeof(inm));
			if (n > 0) {
				request_put(&o, "If-None-Match: ", 15);
				request_put(&o, inm, n);
				request_put(&o, "\r\n", 2);
			}
			continue;
		case FWD_AS_IS:
			if (h1_name_is(h->name, h->name_len, "Idempotency-Key"))
				idem = true;
			break;
		}
		request_put(&o, h->name, h->name_len);
		request_put(&o, ": ", 2);
		request_put(&o, h->value, h->value_len);
		request_put(&o, "\r\n", 2);
	}
	/* A cached entry past its TTL is revalidated with the catalog's tag. */
	if (r->revalidating) {
		e = cache_peek(f->cache, r->ckey[0], r->ckeylen[0]);
		if (e == NULL)
			e = cache_peek(f->cache, r->ckey[1], r->ckeylen[1]);
		if (e != NULL && e->up_etag[0] != '\0' &&
		    strlen(e->up_etag) < sizeof(inm)) {
			request_put(&o, "If-None-Match: ", 15);
			request_put(&o, e->up_etag, strlen(e->up_etag));
			request_put(&o, "\r\n", 2);
		} else
			r->revalidating = false;
	}
	request_put(&o, "X-Forwarded-For: ", 17);
	request_put(&o, peer, strlen(peer));
	request_put(&o, "\r\nVia: ", 7);
	request_put(&o, request_via, strlen(request_via));
	request_put(&o, "\r\n", 2);
	v.iov_len = o - (char *)v.iov_base;
	evbuffer_commit_space(head, &v, 1);

	memset(&ur, 0, sizeof(ur));
	ur.head = head;
	ur.body = evbuffer_get_length(m->body) > 0 || m->method == H1_POST ||
		m->method == H1_PUT ?
	    m->body :
	    NULL;
	/* Listings and namespace reads are GET/HEAD: no body to share. */
	if (r->mode != MODE_ONE)
		ur.body = NULL;
	ur.head_method = m->method == H1_HEAD;
	ur.retryable = m->method == H1_GET || m->method == H1_HEAD || idem;
	r->pending++;
	f->stats.side[side].requests++;
	r->x[side] = upstream_send(f->up[side], &ur, request_done_cb, r);
}

/* Headers passed back to the client as they came. */
static const char *const request_back_headers[] = {
	"Content-Type",
	"Retry-After",
	"Cache-Control",
	"WWW-Authenticate",
	"Location",
};

/* The base URL clients reach floe at, from their Host header. */
static void
request_floe_base(struct request *r, char *buf, size_t len)
{
	const struct h1_header *h = h1_find(r->msg, "Host");
	const char *scheme =
	    server_conn_is_tls(r->conn) ? "https://" : "http://";
	const char *host = r->f->conf->listen;
	size_t hlen = strlen(host), slen = strlen(scheme);

	if (h != NULL && h->value_len > 0 && slen + h->value_len < len) {
		host = h->value;
		hlen = h->value_len;
	}
	if (slen + hlen >= len)
		hlen = len - slen - 1;
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
 * answer's new length.
 */
static size_t
request_rewrite(struct request *r, enum route_side side, struct evbuffer *body,
    size_t blen)
{
	static char tail[REQUEST_TAIL];
	static const size_t tails[] = { 4096, REQUEST_TAIL };
	struct floe *f = r->f;
	const struct catalog *cat = f->cat[side];
	const char *uri = f->conf->target[side].uri;
	size_t ulen = f->conf->target[side].uri_len;
	const char *pinned = route_side_name(side);
	bool merge = r->merge_config && catalog_has_merge(cat);
	char base[300], *nb, *ins;
	struct evbuffer *head;
	size_t nblen, tlen, inslen, at, i;
	struct evbuffer_ptr pos;
	int rc = -1;

	if (evbuffer_get_contiguous_space(body) == blen) {
		if (!merge &&
		    memfind(evbuffer_pullup(body, -1), blen, uri, ulen) == NULL)
			return blen;
		goto whole;
	}
	if (catalog_body_has(body, uri, ulen))
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
		 * the next read) at once.
		 */
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
	evbuffer_drain(body, blen);
	if (evbuffer_add_reference(body, nb, nblen, request_free_body_cb,
		NULL) == -1)
		fatalx("%s: out of memory", __func__);
	return nblen;
}

/*
 * Pass the upstream answer M from SIDE back to the client. The headers
 * that matter are copied into one buffer (an upstream head is at most
 * 64 KiB), floe's ETag and X-Floe-* added; a LoadTable result gets the
 * side's catalog config merged in, and URLs under the catalog's base
 * point back at floe, pinned to the side that answered.
 */
static void
request_reply_upstream(struct request *r, enum route_side side,
    struct h1_msg *m)
{
	static char hdrs[REQUEST_HDRS_MAX];
	struct floe *f = r->f;
	const struct h1_header *h;
	struct evbuffer *body = m->body;
	char etag[ETAG_MAX], *o = hdrs;
	const char *pinned = route_side_name(side);
	size_t blen, hlen, i, j;

	etag[0] = '\0';
	for (i = 0; i < m->nhdrs; i++) {
		h = &m->hdrs[i];
		if (h1_name_is(h->name, h->name_len, "ETag")) {
			if (etag_mint(h->value, h->value_len, side,
				r->has_route ? r->route.version : 0, etag,
				sizeof(etag)) == 0)
				request_put_header(&o, "ETag", 4, etag,
				    strlen(etag));
			continue;
		}
		for (j = 0; j < nitems(request_back_headers); j++)
			if (h1_name_is(h->name, h->name_len,
				request_back_headers[j]))
				break;
		if (j < nitems(request_back_headers) &&
		    (size_t)(o - hdrs) + h->name_len + h->value_len + 4 <
			sizeof(hdrs) - 512)
			request_put_header(&o, h->name, h->name_len, h->value,
			    h->value_len);
	}
	request_put(&o, "X-Floe-Target: ", 15);
	request_put(&o, pinned, strlen(pinned));
	request_put(&o, "\r\nX-Floe-Wave: ", 15);
	if (r->has_route && r->route.assigned)
		o += units_utoa(o, r->route.wave);
	else
		request_put(&o, "none", 4);
	request_put(&o, "\r\n", 2);
	blen = evbuffer_get_length(body);
	if (m->status >= 200 && m->status < 300 && blen > 0)
		blen = request_rewrite(r, side, body, blen);
	if (m->status >= 500)
		f->stats.side[side].errors_5xx++;
	/* The error trigger counts table reads of assigned waves (4xx: ok). */
	if (r->has_route && r->route.assigned && !r->rr.write)
		watch_count(f->watch, r->route.wave, r->route.state, side,
		    m->status >= 500);
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
	server_reply(r->conn, m->status, hdrs, hlen, body,
	    r->msg->method == H1_HEAD || m->status == 304 ? (int64_t)blen : -1);
}

/* SIDE failed to answer: 502 or 504 naming the target. */
static void
request_reply_failure(struct request *r, enum route_side side,
    enum upstream_fail fail, const char *why)
{
	unsigned status = fail == UPSTREAM_TIMEOUT ? 504 : 502;

	r->f->stats.side[side].failures++;
	if (r->has_route && r->route.assigned && !r->rr.write)
		watch_count(r->f->watch, r->route.wave, r->route.state, side,
		    true);
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

/* Both listings are in: merge, sort, page, answer. */
static void
request_reply_list(struct request *r)
{
	const char *bodies[ROUTE_NSIDES];
	size_t lens[ROUTE_NSIDES], outlen;
	char token[1024], size[32], err[256], *out;
	const char *tok = NULL;
	long page_size = 0;
	int i, ok = 0;
	struct evbuffer *b;
	char hdr[128];
	int n;

	for (i = 0; i < ROUTE_NSIDES; i++) {
		if (r->ans_error[i][0] != '\0')
			return; /* answered by request_done_cb */
		if (r->ans_status[i] == 200)
			ok++;
	}
	/*
	 * A side that does not know the namespace lists nothing; anything
	 * other than 200 or 404 from either side is passed on as it came.
	 */
	for (i = 0; i < ROUTE_NSIDES; i++) {
		if (r->ans_status[i] != 200 &&
		    (r->ans_status[i] != 404 || ok == 0)) {
			b = r->ans[i];
			request_log_access(r, r->ans_status[i],
			    route_side_name(i));
			r->f->stats.requests++;
			n = snprintf(hdr, sizeof(hdr),
			    "Content-Type: application/json\r\n"
			    "X-Floe-Target: %s\r\n",
			    route_side_name(i));
			server_reply(r->conn, r->ans_status[i], hdr, n, b, -1);
			request_free(r);
			return;
		}
	}
	for (i = 0; i < ROUTE_NSIDES; i++) {
		bodies[i] = r->ans_status[i] == 200 ?
		    (const char *)evbuffer_pullup(r->ans[i], -1) :
		    NULL;
		lens[i] = r->ans_status[i] == 200 ?
		    evbuffer_get_length(r->ans[i]) :
		    0;
	}
	if (rest_query_get(r->msg->target + r->rr.query.off, r->rr.query.len,
		"pageToken", token, sizeof(token)) == 0)
		tok = token;
	if (rest_query_get(r->msg->target + r->rr.query.off, r->rr.query.len,
		"pageSize", size, sizeof(size)) == 0) {
		char *end;

		errno = 0;
		page_size = strtol(size, &end, 10);
		if (errno != 0 || *end != '\0' || page_size < 1) {
			request_errorf(r, 400, "BadRequestException",
			    "Invalid pageSize \"%s\": must be an integer >= 1",
			    size);
			return;
		}
	}
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

/*
 * The answer to a revalidation. A 304 renews the cached entry and serves
 * it; anything else replaces or drops it. True if R was answered.
 */
static bool
request_revalidated(struct request *r, struct h1_msg *m)
{
	const struct cache_entry *e;
	int i;

	for (i = 0; i < 2; i++) {
		if ((e = cache_peek(r->f->cache, r->ckey[i], r->ckeylen[i])) ==
		    NULL)
			continue;
		if (m->status == 304) {
			cache_renew(r->f->cache, r->ckey[i], r->ckeylen[i],
			    units_now_ms());
			request_cache_reply(r, e, "revalidated");
			request_free(r);
			return true;
		}
		cache_drop(r->f->cache, r->ckey[i], r->ckeylen[i]);
	}
	if (m->status == 304) {
		/* The entry went meanwhile: ask again, unconditionally. */
		r->revalidating = false;
		request_forward(r, r->side);
		return true;
	}
	r->cache_state = "miss";
	return false;
}

static void
request_done_cb(struct upstream_xfer *x, void *arg)
{
	struct request *r = arg;
	enum route_side side =
	    r->x[ROUTE_WAREHOUSE] == x ? ROUTE_WAREHOUSE : ROUTE_LAKEHOUSE;
	struct h1_msg *m = upstream_xfer_msg(x);
	enum upstream_fail fail = upstream_xfer_fail(x);

	r->x[side] = NULL;
	r->pending--;
	/* Listings ask both sides at once: the slower one is the wait. */
	if (upstream_xfer_usec(x) > r->upstream_us || r->mode != MODE_LIST)
		r->upstream_us = r->mode == MODE_LIST ?
		    upstream_xfer_usec(x) :
		    r->upstream_us + upstream_xfer_usec(x);
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
		request_free(r);
		return;
	case MODE_NS_READ:
		if (m == NULL) {
			request_reply_failure(r, side, fail,
			    upstream_xfer_error(x));
			return;
		}
		/* A namespace only the lakehouse has. */
		if (m->status == 404 && side == ROUTE_WAREHOUSE &&
		    r->f->cat[ROUTE_LAKEHOUSE]->known) {
			request_forward(r, ROUTE_LAKEHOUSE);
			return;
		}
		request_reply_upstream(r, side, m);
		request_free(r);
		return;
	case MODE_LIST:
		if (m == NULL) {
			/* The other side's transfer is cancelled by the free.
			 */
			snprintf(r->ans_error[side], sizeof(r->ans_error[side]),
			    "%s", upstream_xfer_error(x));
			request_reply_failure(r, side, fail,
			    upstream_xfer_error(x));
			return;
		}
		if ((r->ans[side] = evbuffer_new()) == NULL)
			fatalx("%s: out of memory", __func__);
		evbuffer_add_buffer(r->ans[side], m->body);
		r->ans_status[side] = m->status;
		if (r->pending == 0)
			request_reply_list(r);
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
	size_t n = strlen(request_via);
	unsigned i;

	for (i = 0; i < m->nhdrs; i++)
		if (h1_name_is(m->hdrs[i].name, m->hdrs[i].name_len, "Via") &&
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
	const struct h1_header *h = h1_find(r->msg, "Authorization");
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
 * POST /v1/oauth/tokens, deprecated by the spec: forwarded to the warehouse
 * catalog when clients authenticate there (passthrough), refused otherwise
 * with what to configure instead.
 */
static void
request_oauth_tokens(struct request *r)
{
	if (auth_mode(r->f->auth) != AUTH_PASSTHROUGH) {
		request_errorf(r, 400, "BadRequestException",
		    "floe does not serve the deprecated /v1/oauth/tokens "
		    "endpoint with [auth] mode = %s: configure the client with "
		    "a \"token\" (%s), or set \"oauth2-server-uri\" to your "
		    "identity provider",
		    auth_mode_name(auth_mode(r->f->auth)),
		    auth_mode(r->f->auth) == AUTH_JWT ?
			"a JWT from your identity provider" :
			"one listed in floe's token file");
		return;
	}
	r->mode = MODE_ONE;
	r->side = ROUTE_WAREHOUSE;
	r->no_prefix = true;
	request_forward(r, ROUTE_WAREHOUSE);
}

void
request_serve(struct server_conn *conn, struct h1_msg *m, void *arg)
{
	struct floe *f = arg;
	struct request *r;
	enum rest_method rm;
	int rc, i;

	if (request_health(f, conn, m))
		return;
	r = request_new();
	r->f = f;
	r->conn = conn;
	r->msg = m;
	r->start_us = units_mono_us();
	server_conn_on_abort(conn, request_abort_cb, r);
	if (request_is_loop(m)) {
		request_errorf(r, 508, "LoopDetectedException",
		    "Request loop: this request already passed through this "
		    "floe (Via: %s); a catalog uri points back at floe",
		    request_via);
		return;
	}
	switch (m->method) {
	case H1_GET:
		rm = REST_M_GET;
		break;
	case H1_HEAD:
		rm = REST_M_HEAD;
		break;
	case H1_POST:
		rm = REST_M_POST;
		break;
	case H1_PUT:
		rm = REST_M_PUT;
		break;
	case H1_DELETE:
		rm = REST_M_DELETE;
		break;
	default:
		rm = REST_M_OTHER;
		break;
	}
	rc = rest_parse(rm, m->target, m->target_len,
	    f->conf->namespace_separator, &r->rr);
	switch (rc) {
	case REST_OK:
		break;
	case REST_NOTFOUND:
		request_errorf(r, 404, "NotFoundException",
		    "No Iceberg REST endpoint at %s %.*s", m->method_name,
		    (int)strcspn(m->target, "?"), m->target);
		return;
	case REST_BADMETHOD:
		request_errorf(r, 405, "MethodNotAllowedException",
		    "%s is not allowed on %.*s", m->method_name,
		    (int)strcspn(m->target, "?"), m->target);
		return;
	case REST_TOOLONG:
		request_errorf(r, 414, "BadRequestException",
		    "A namespace or table name in the path is too long");
		return;
	default:
		request_errorf(r, 400, "BadRequestException",
		    "Malformed path %.*s: bad percent-encoding, an empty "
		    "namespace level or a control character",
		    (int)strcspn(m->target, "?"), m->target);
		return;
	}
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
		char token[1024];

		if (rest_query_get(m->target + r->rr.query.off, r->rr.query.len,
			"pageToken", token, sizeof(token)) == 0 &&
		    !listing_token_is_valid(r->rr.op == REST_LIST_NAMESPACES ?
			    "namespaces" :
			    "identifiers",
			token)) {
			request_errorf(r, 400, "BadRequestException",
			    "Invalid pageToken: floe did not issue it; start "
			    "again without one");
			return;
		}
		for (i = 0; i < ROUTE_NSIDES; i++)
			if (!f->cat[i]->known) {
				request_errorf(r, 503,
				    "ServiceUnavailableException",
				    "The %s catalog's config is not known yet "
				    "(%s): floe is still trying to reach it",
				    route_side_name(i),
				    f->cat[i]->last_error != NULL ?
					f->cat[i]->last_error :
					"no answer yet");
				return;
			}
		request_forward(r, ROUTE_WAREHOUSE);
		request_forward(r, ROUTE_LAKEHOUSE);
		return;
	}
	if (!f->cat[r->side]->known) {
		request_errorf(r, 503, "ServiceUnavailableException",
		    "The %s catalog's config is not known yet (%s): floe is "
		    "still trying to reach it",
		    route_side_name(r->side),
		    f->cat[r->side]->last_error != NULL ?
			f->cat[r->side]->last_error :
			"no answer yet");
		return;
	}
	if (r->rr.op == REST_LOAD_TABLE && m->method == H1_GET &&
	    r->nobjs == 1 && cache_is_on(f->cache) && request_cache_lookup(r)) {
		request_free(r);
		return;
	}
	request_forward(r, r->side);
}
