/*
 * floe: admin.c -- the admin API on the Unix socket: a request's path
 * and query, the table of resources (method + path -> handler, one row
 * each; the handlers live in admin_*.c, one file per resource), and the
 * answers: JSON, and errors as {"error":{"message","type","code"}}.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/admin.h"
#include "proxy/admin_impl.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "routing/store.h"

static char *admin_pct_decode(const char *, size_t, bool);
static int admin_split(struct admin_req *, const char *, size_t);
static void admin_dispatch(struct admin_req *);
static bool admin_rows_many(const struct admin_req *, int);
static bool admin_path_match(const struct admin_req *, const char *);

/*
 * The admin API: METHOD on PATH runs FN. A resource's rows are
 * neighbours; a literal path comes before a "*" that also matches it.
 */
static const struct admin_cmd {
	const char *method;
	const char *path;
	void (*fn)(struct admin_req *);
	bool no_store; /* served while the store is not open */
	/*
	 * A read whose answer can be large (admin_rows_many): served by the
	 * worker's child when it is, so that the loop does not build it.
	 */
	int rows;
} admin_cmds[] = {
	{ "GET", "/status", admin_status, true, ADMIN_ROWS_NONE },
	{ "GET", "/metrics", admin_metrics, true, ADMIN_ROWS_NONE },
	{ "GET", "/routes", admin_routes_get, false, ADMIN_ROWS_ALL },
	{ "POST", "/routes", admin_routes_post, false, ADMIN_ROWS_NONE },
	{ "POST", "/routes/import", admin_routes_import, false,
	    ADMIN_ROWS_NONE },
	{ "DELETE", "/routes/*", admin_routes_delete, false, ADMIN_ROWS_NONE },
	{ "GET", "/resolve/*", admin_resolve, false, ADMIN_ROWS_NONE },
	{ "GET", "/waves", admin_waves_get, false, ADMIN_ROWS_NONE },
	{ "GET", "/waves/*", admin_wave_get, false, ADMIN_ROWS_ALL },
	{ "POST", "/waves/*/flip", admin_wave_flip, false, ADMIN_ROWS_NONE },
	{ "POST", "/waves/*/rollback", admin_wave_rollback, false,
	    ADMIN_ROWS_NONE },
	{ "POST", "/waves/*/ack", admin_wave_ack, false, ADMIN_ROWS_NONE },
	{ "POST", "/waves/*/signoff", admin_wave_signoff, false,
	    ADMIN_ROWS_NONE },
	{ "POST", "/waves/*/freeze", admin_wave_freeze, false,
	    ADMIN_ROWS_NONE },
	{ "POST", "/waves/*/retire", admin_wave_retire, false,
	    ADMIN_ROWS_NONE },
	{ "POST", "/waves/*/ack-alarm", admin_wave_ack_alarm, false,
	    ADMIN_ROWS_NONE },
	{ "POST", "/waves/*/set", admin_wave_set, false, ADMIN_ROWS_NONE },
	{ "POST", "/waves/*/errors", admin_wave_errors, false,
	    ADMIN_ROWS_NONE },
	{ "GET", "/rollbacks", admin_rollbacks_get, false, ADMIN_ROWS_FILE },
	{ "GET", "/ledger", admin_ledger_get, false, ADMIN_ROWS_PAGE },
	{ "POST", "/ledger", admin_ledger_post, false, ADMIN_ROWS_NONE },
	{ "GET", "/eligibility", admin_eligibility, false, ADMIN_ROWS_NONE },
	{ "GET", "/events", admin_events_get, false, ADMIN_ROWS_PAGE },
	{ "GET", "/readers", admin_readers_get, false, ADMIN_ROWS_NONE },
	{ "POST", "/readers/forget", admin_readers_forget, false,
	    ADMIN_ROWS_NONE },
	{ "GET", "/cluster", admin_cluster_get, false, ADMIN_ROWS_NONE },
};

/* Fill the reply with an error object; the message is printf-formatted. */
void
admin_error(struct admin_req *r, int status, const char *fmt, ...)
{
	const char *type;
	char msg[ADMIN_MSG_MAX + sizeof(r->where) + 64];
	json_t *j;
	va_list ap;
	size_t n;

	n = strlcpy(msg, r->where, sizeof(msg));
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	va_end(ap);
	/*
	 * A store failure says why, in the operator's words: "disk full
	 * (no space left on device)" rather than a bare "store error".
	 */
	if (status == 500 && r->st != NULL && !store_is_healthy(r->st) &&
	    strstr(msg, store_last_error(r->st)) == NULL) {
		strlcat(msg, " (", sizeof(msg));
		strlcat(msg, store_last_error(r->st), sizeof(msg));
		strlcat(msg, ")", sizeof(msg));
	}
	if (r->outcome != NULL)
		strlcat(msg, r->outcome, sizeof(msg));
	switch (status) {
	case 400:
		type = "BadRequestException";
		break;
	case 404:
		type = "NotFoundException";
		break;
	case 405:
		type = "MethodNotAllowedException";
		break;
	case 409:
		type = "RefusedException";
		break;
	case 503:
		type = "ServiceUnavailableException";
		break;
	default:
		type = "InternalServerError";
		break;
	}
	j = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", msg, "type",
	    type, "code", status);
	admin_reply_json(r, status, j);
}

/* Serialise J (stolen) as the reply body with STATUS. */
void
admin_reply_json(struct admin_req *r, int status, json_t *j)
{
	char *s;

	s = j != NULL ? json_dumps(j, ADMIN_JSON_FLAGS) : NULL;
	json_decref(j);
	if (s == NULL) {
		/* Out of memory in jansson: still answer something valid. */
		log_warnx("%s: cannot serialise the reply", __func__);
		status = 500;
		s = xstrdup("{\"error\":{\"message\":\"cannot build the "
			    "answer\",\"type\":\"InternalServerError\","
			    "\"code\":500}}");
	}
	free(r->reply->body);
	r->reply->status = status;
	r->reply->content_type = ADMIN_CT_JSON;
	r->reply->body = s;
	r->reply->len = strlen(s);
}

/*
 * Add the rollbacks the triggers made while REP's request was served
 * (watch_fired_take) to it as "rolled_back": [...], so that whoever
 * caused them is told. Only a JSON object answer of 2xx takes them.
 */
void
admin_reply_fired(struct floe *f, struct admin_reply *rep)
{
	json_t *fired, *j;
	char *s;

	if ((fired = watch_fired_take(f->watch)) == NULL)
		return;
	if (rep->status < 200 || rep->status > 299 || rep->body == NULL ||
	    (j = json_loadb(rep->body, rep->len, 0, NULL)) == NULL) {
		json_decref(fired);
		return;
	}
	if (!json_is_object(j)) {
		json_decref(fired);
		json_decref(j);
		return;
	}
	if (json_object_set_new(j, "rolled_back", fired) == -1 ||
	    (s = json_dumps(j, ADMIN_JSON_FLAGS)) == NULL) {
		log_warnx("%s: the rollbacks could not be added to the answer",
		    __func__);
		json_decref(j);
		return;
	}
	json_decref(j);
	free(rep->body);
	rep->body = s;
	rep->len = strlen(s);
}

/*
 * Percent-decode LEN bytes of S. PLUS turns '+' into a space (query
 * strings). A malformed escape is kept as written. Caller frees.
 */
static char *
admin_pct_decode(const char *s, size_t len, bool plus)
{
	char *out, *o;
	size_t i;

	out = o = xmalloc(len + 1);
	for (i = 0; i < len; i++) {
		if (s[i] == '%' && i + 2 < len &&
		    isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2])) {
			char hex[3] = { s[i + 1], s[i + 2], '\0' };

			*o++ = (char)strtoul(hex, NULL, 16);
			i += 2;
		} else if (plus && s[i] == '+')
			*o++ = ' ';
		else
			*o++ = s[i];
	}
	*o = '\0';
	return out;
}

/*
 * Split TARGET into path, query and decoded segments. A trailing '/' is
 * ignored. -1 (with the reply set) if the target is not a path or has too
 * many segments.
 */
static int
admin_split(struct admin_req *r, const char *target, size_t len)
{
	const char *q, *p, *end, *slash;

	q = memchr(target, '?', len);
	end = q != NULL ? q : target + len;
	r->path = xstrndup(target, (size_t)(end - target));
	if (q != NULL)
		r->query = xstrndup(q + 1, (size_t)(target + len - q - 1));
	if (r->path[0] != '/' || strlen(r->path) != (size_t)(end - target)) {
		admin_error(r, 400, "request target is not a path");
		return -1;
	}
	/*
	 * A decoded NUL would cut a name short ("db.a%00b" naming db.a):
	 * refuse it anywhere in the target.
	 */
	if (memmem(target, len, "%00", 3) != NULL) {
		admin_error(r, 400, "request target holds %%00");
		return -1;
	}
	p = r->path + 1;
	end = r->path + strlen(r->path);
	if (end > p && end[-1] == '/')
		end--;
	while (p < end) {
		slash = memchr(p, '/', (size_t)(end - p));
		if (slash == NULL)
			slash = end;
		if (r->nseg == ADMIN_MAX_SEGS) {
			admin_error(r, 404, "no such resource: %s", r->path);
			return -1;
		}
		r->seg[r->nseg++] =
		    admin_pct_decode(p, (size_t)(slash - p), false);
		p = slash + 1;
	}
	return 0;
}

/*
 * Find KEY in the query string: 1 and the decoded value in *VAL (caller
 * frees), or 0 if absent.
 */
int
admin_query_get(const struct admin_req *r, const char *key, char **val)
{
	const char *p, *amp, *eq;
	size_t klen = strlen(key);

	*val = NULL;
	for (p = r->query; p != NULL && *p != '\0'; p = amp + 1) {
		amp = strchr(p, '&');
		if (amp == NULL)
			amp = p + strlen(p);
		eq = memchr(p, '=', (size_t)(amp - p));
		if (eq == NULL)
			eq = amp;
		if ((size_t)(eq - p) == klen && memcmp(p, key, klen) == 0) {
			*val = eq < amp ? admin_pct_decode(eq + 1,
					      (size_t)(amp - eq - 1), true) :
					  xstrdup("");
			return 1;
		}
		if (*amp == '\0')
			break;
	}
	return 0;
}

/*
 * Query parameter KEY as a whole number in MIN..MAX, into *OUT (left as
 * it was when KEY is absent). 0, or -1 with a 400 saying KEY must be WHAT
 * (NULL: "MIN..MAX").
 */
int
admin_query_uint(struct admin_req *r, const char *key, unsigned long long min,
    unsigned long long max, const char *what, unsigned long long *out)
{
	unsigned long long n;
	char *v, *end;

	if (admin_query_get(r, key, &v) != 1)
		return 0;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || n < min ||
	    n > max) {
		if (what != NULL)
			admin_error(r, 400, "%s must be %s, not \"%s\"", key,
			    what, v);
		else
			admin_error(r, 400, "%s must be %llu..%llu, not \"%s\"",
			    key, min, max, v);
		free(v);
		return -1;
	}
	free(v);
	*out = n;
	return 0;
}

/* A timestamp as JSON: RFC 3339 text, or null for 0 (never). */
json_t *
admin_time_json(int64_t ms)
{
	char buf[40];

	if (ms == 0)
		return json_null();
	units_time_format(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* A stored string as JSON: null when empty. */
json_t *
admin_str_json(const char *s)
{
	return s[0] != '\0' ? json_string(s) : json_null();
}

/* A 409 for a refused transition; BLOCKING (stolen, may be NULL) added. */
void
admin_refused(struct admin_req *r, const char *msg, json_t *blocking)
{
	json_t *j;

	j = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", msg, "type",
	    "RefusedException", "code", 409);
	if (j != NULL && blocking != NULL)
		json_object_set_new(json_object_get(j, "error"), "blocking",
		    blocking);
	else
		json_decref(blocking);
	admin_reply_json(r, 409, j);
}

/*
 * Find the resource of the request's path, in table order (the first row
 * whose PATH matches names it), and run the row of its method; or answer
 * 404, 405 with the methods it allows, or 503 while the store is not
 * open and the resource needs it.
 */
static void
admin_dispatch(struct admin_req *r)
{
	const struct admin_cmd *c = NULL;
	char allowed[64];
	size_t i, k;

	for (i = 0; i < nitems(admin_cmds); i++)
		if (admin_path_match(r, admin_cmds[i].path)) {
			c = &admin_cmds[i];
			break;
		}
	if (r->st == NULL && (c == NULL || !c->no_store)) {
		admin_error(r, 503, "the store is not open");
		return;
	}
	if (c == NULL) {
		admin_error(r, 404, "no such resource: %s", r->path);
		return;
	}
	allowed[0] = '\0';
	for (k = i; k < nitems(admin_cmds); k++) {
		if (strcmp(admin_cmds[k].path, c->path) != 0)
			continue;
		if (strcmp(admin_cmds[k].method, r->method) == 0) {
			if (admin_cluster_captures(r))
				admin_cluster_run(r, admin_cmds[k].fn);
			else if (admin_rows_many(r, admin_cmds[k].rows))
				admin_job_read_cmd(r, admin_cmds[k].fn);
			else
				admin_cmds[k].fn(r);
			return;
		}
		snprintf(allowed + strlen(allowed),
		    sizeof(allowed) - strlen(allowed), "%s%s",
		    allowed[0] != '\0' ? ", " : "", admin_cmds[k].method);
	}
	/* RFC 9110 15.5.6: a 405 says what is allowed, in Allow. */
	strlcpy(r->reply->allow, allowed, sizeof(r->reply->allow));
	admin_error(r, 405, "%s is not allowed on %s (allowed: %s)", r->method,
	    r->path, allowed);
}

/*
 * Whether R (a read of kind ROWS) asks for more than the loop builds at
 * once: a page of more than ADMIN_LOOP_ROWS rows (1,000 routes: about
 * 2 ms), every row (ADMIN_ROWS_ALL without a limit), or lines of the
 * rollback log (each names every table of its wave: megabytes).
 */
static bool
admin_rows_many(const struct admin_req *r, int rows)
{
	unsigned long long limit;
	char *v = NULL, *end;
	bool many;

	if (rows == ADMIN_ROWS_NONE)
		return false;
	if (rows == ADMIN_ROWS_FILE)
		return true;
	if (admin_query_get(r, "limit", &v) != 1)
		return rows == ADMIN_ROWS_ALL;
	limit = strtoull(v, &end, 10);
	/* A malformed limit is the handler's to refuse, here and now. */
	many = *v != '\0' && *end == '\0' && limit > ADMIN_LOOP_ROWS;
	free(v);
	return many;
}

/*
 * True if the request's decoded segments match PATTERN, a path in which
 * a segment written "*" matches any one segment.
 */
static bool
admin_path_match(const struct admin_req *r, const char *pattern)
{
	const char *p = pattern + 1;
	size_t len;
	int i;

	for (i = 0; i < r->nseg; i++) {
		if (*p == '\0')
			return false;
		len = strcspn(p, "/");
		if (!(len == 1 && *p == '*') &&
		    (strlen(r->seg[i]) != len ||
			memcmp(r->seg[i], p, len) != 0))
			return false;
		p += len;
		if (*p == '/')
			p++;
	}
	return *p == '\0';
}

/* Serve one admin request into REPLY, or later through LATER. */
int
admin_handle(struct floe *f, const char *method, const char *target,
    size_t target_len, struct evbuffer *body, uid_t peer_uid,
    struct admin_reply *reply, admin_later_cb later, void *arg)
{
	struct admin_req r;
	int i;

	memset(reply, 0, sizeof(*reply));
	memset(&r, 0, sizeof(r));
	r.f = f;
	r.st = f->store;
	r.method = method;
	r.in = body;
	r.later_cb = later;
	r.later_arg = arg;
	r.reply = reply;
	r.now_ms = units_now_ms();
	snprintf(r.actor, sizeof(r.actor), "uid %lu", (unsigned long)peer_uid);

	/* A change answers with the rollbacks it caused, and only those. */
	if (strcmp(method, "GET") != 0)
		json_decref(watch_fired_take(f->watch));
	if (admin_split(&r, target, target_len) == 0)
		admin_dispatch(&r);
	if (strcmp(method, "GET") != 0 && !r.later)
		admin_reply_fired(f, reply);
	for (i = 0; i < r.nseg; i++)
		free(r.seg[i]);
	free(r.path);
	free(r.query);
	return r.later ? 1 : 0;
}
