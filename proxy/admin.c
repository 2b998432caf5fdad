/*
 * floe: admin.c -- the admin API on the Unix socket: status, metrics,
 * routes, resolve, waves and their transitions, events. Each request is
 * answered at once from the store; a change is one synced store write whose
 * actor is the peer's uid. Errors are {"error":{"message","type","code"}}
 * and leave the store as it was.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/admin.h"
#include "proxy/floe.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

#define ADMIN_MAX_SEGS 4
#define ADMIN_EVENTS_LIMIT 1000 /* default page of GET /events */
#define ADMIN_EVENTS_MAX 10000 /* largest page a client may ask for */
#define ADMIN_JSON_FLAGS (JSON_COMPACT)
#define ADMIN_CT_JSON "application/json"
#define ADMIN_CT_METRICS "text/plain; version=0.0.4"

/* One request being served. */
struct admin_req {
	struct floe *f;
	struct store *st;
	const char *method;
	char *path; /* raw path, without the query */
	char *query; /* raw query, or NULL */
	char *seg[ADMIN_MAX_SEGS]; /* decoded path segments */
	int nseg;
	const char *body;
	size_t body_len;
	char actor[32]; /* "uid N" */
	int64_t now_ms;
	struct admin_reply *reply;
};

/* One wave as GET /waves sees it: its record and what points at it. */
struct admin_wave_sum {
	uint32_t n;
	bool has_rec;
	struct store_wave w;
	unsigned objects;
	unsigned rules;
};

struct admin_wave_list {
	struct admin_wave_sum *v;
	size_t len;
	size_t cap;
};

/* The routes of one wave, for GET /waves/{n}. */
struct admin_wave_routes {
	uint32_t n;
	json_t *objects;
	json_t *rules;
};

/* Events being gathered for GET /events. */
struct admin_events {
	json_t *list;
};

static void admin_error(struct admin_req *, int, const char *, ...)
    __attribute__((__format__(__printf__, 3, 4)));
static void admin_reply_json(struct admin_req *, int, json_t *);
static int admin_split(struct admin_req *, const char *, size_t);
static char *admin_pct_decode(const char *, size_t, bool);
static int admin_query_get(const struct admin_req *, const char *, char **);
static bool admin_method_ok(struct admin_req *, const char *);
static json_t *admin_body(struct admin_req *, bool);
static int admin_body_check(struct admin_req *, json_t *, const char *const *);
static int admin_body_string(struct admin_req *, json_t *, const char *, bool,
    const char **);
static int admin_body_int(struct admin_req *, json_t *, const char *, bool,
    json_int_t, json_int_t, json_int_t, json_int_t *);
static int admin_body_bool(struct admin_req *, json_t *, const char *, bool *);
static int admin_parse_object(struct admin_req *, const char *,
    struct route_obj *);
static int admin_parse_wave(struct admin_req *, const char *, uint32_t *);
static json_t *admin_time_json(int64_t);
static json_t *admin_str_json(const char *);
static int admin_wave_state(struct admin_req *, uint32_t, struct store_wave *,
    bool *);
static bool admin_state_reads_warehouse(int);
static int admin_waves_collect(struct store *, struct admin_wave_list *);
static int admin_waves_rec_cb(const struct store_wave *, void *);
static int admin_waves_route_cb(const void *, size_t,
    const struct store_route *, void *);
static int admin_wave_sum_cmp(const void *, const void *);
static json_t *admin_wave_sum_json(const struct admin_wave_sum *);
static json_t *admin_route_json(const struct route_obj *,
    const struct store_route *);
static int admin_routes_list_cb(const void *, size_t,
    const struct store_route *, void *);
static int admin_wave_routes_cb(const void *, size_t,
    const struct store_route *, void *);
static int admin_events_cb(uint64_t, const char *, size_t, void *);
static void admin_status(struct admin_req *);
static void admin_metrics(struct admin_req *);
static void admin_routes_get(struct admin_req *);
static void admin_routes_post(struct admin_req *);
static void admin_routes_delete(struct admin_req *);
static int admin_route_guard(struct admin_req *, const char *, uint32_t, bool,
    uint32_t, bool);
static void admin_resolve(struct admin_req *);
static void admin_waves_get(struct admin_req *);
static void admin_wave_get(struct admin_req *);
static void admin_wave_move(struct admin_req *, const char *);
static void admin_events_get(struct admin_req *);
static void admin_dispatch(struct admin_req *);

/* Fill the reply with an error object; the message is printf-formatted. */
static void
admin_error(struct admin_req *r, int status, const char *fmt, ...)
{
	const char *type;
	char msg[1024];
	json_t *j;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
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
static void
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
static int
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
 * True if the request's method is one of ALLOWED ("GET,POST"); otherwise
 * answer 405.
 */
static bool
admin_method_ok(struct admin_req *r, const char *allowed)
{
	const char *p = allowed;
	size_t mlen = strlen(r->method);
	char list[64], *c;

	while (p != NULL && *p != '\0') {
		const char *comma = strchr(p, ',');
		size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);

		if (n == mlen && memcmp(p, r->method, n) == 0)
			return true;
		p = comma != NULL ? comma + 1 : NULL;
	}
	/* "GET,POST" reads "GET, POST" in the message. */
	list[0] = '\0';
	for (p = allowed; (c = strchr(p, ',')) != NULL; p = c + 1)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
		    "%.*s, ", (int)(c - p), p);
	snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s", p);
	admin_error(r, 405, "%s is not allowed on %s (allowed: %s)", r->method,
	    r->path, list);
	return false;
}

/*
 * Parse the body as a JSON object. An empty body is an empty object when
 * OPTIONAL. NULL (with the reply set) if it is not a JSON object.
 */
static json_t *
admin_body(struct admin_req *r, bool optional)
{
	json_error_t je;
	json_t *j;
	size_t i;

	for (i = 0; i < r->body_len; i++)
		if (!isspace((unsigned char)r->body[i]))
			break;
	if (i == r->body_len) {
		if (optional)
			return json_object();
		admin_error(r, 400, "body is empty: a JSON object is required");
		return NULL;
	}
	j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
	if (j == NULL) {
		admin_error(r, 400, "body is not JSON: %s at line %d column %d",
		    je.text, je.line, je.column);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		admin_error(r, 400, "body is not a JSON object");
		return NULL;
	}
	return j;
}

/* Refuse fields of B not in KNOWN (NULL-terminated). 0 or -1. */
static int
admin_body_check(struct admin_req *r, json_t *b, const char *const *known)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(b, key, v) {
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(known[i], key) == 0)
				break;
		if (known[i] == NULL) {
			admin_error(r, 400, "unknown field \"%s\"", key);
			return -1;
		}
	}
	return 0;
}

/* Get string field NAME of B into *OUT (borrowed; NULL if absent). */
static int
admin_body_string(struct admin_req *r, json_t *b, const char *name,
    bool required, const char **out)
{
	json_t *v = json_object_get(b, name);

	*out = NULL;
	if (v == NULL || json_is_null(v)) {
		if (!required)
			return 0;
		admin_error(r, 400, "field \"%s\" is required", name);
		return -1;
	}
	if (!json_is_string(v)) {
		admin_error(r, 400, "field \"%s\" must be a string", name);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

/*
 * Get integer field NAME of B, MIN..MAX, into *OUT (DEF if absent and not
 * REQUIRED).
 */
static int
admin_body_int(struct admin_req *r, json_t *b, const char *name, bool required,
    json_int_t def, json_int_t min, json_int_t max, json_int_t *out)
{
	json_t *v = json_object_get(b, name);

	*out = def;
	if (v == NULL || json_is_null(v)) {
		if (!required)
			return 0;
		admin_error(r, 400, "field \"%s\" is required", name);
		return -1;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max) {
		admin_error(r, 400,
		    "field \"%s\" must be an integer %" JSON_INTEGER_FORMAT
		    "..%" JSON_INTEGER_FORMAT,
		    name, min, max);
		return -1;
	}
	*out = json_integer_value(v);
	return 0;
}

/* Get boolean field NAME of B into *OUT (false if absent). */
static int
admin_body_bool(struct admin_req *r, json_t *b, const char *name, bool *out)
{
	json_t *v = json_object_get(b, name);

	*out = false;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		admin_error(r, 400, "field \"%s\" must be true or false", name);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

/* Parse an object's text form; answer 400 with route's message if bad. */
static int
admin_parse_object(struct admin_req *r, const char *text, struct route_obj *obj)
{
	char err[256];

	err[0] = '\0';
	if (route_obj_parse(text, obj, err, sizeof(err)) == -1) {
		admin_error(r, 400, "%s",
		    err[0] != '\0' ? err : "malformed object");
		return -1;
	}
	return 0;
}

/* Parse a wave number from the path; answer 400 if bad. */
static int
admin_parse_wave(struct admin_req *r, const char *text, uint32_t *n)
{
	if (wave_parse(text, n) == -1) {
		admin_error(r, 400, "wave \"%s\" is not a number 0..%u", text,
		    WAVE_MAX);
		return -1;
	}
	return 0;
}

/* A timestamp as JSON: RFC 3339 text, or null for 0 (never). */
static json_t *
admin_time_json(int64_t ms)
{
	char buf[40];

	if (ms == 0)
		return json_null();
	units_time_format(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* A stored string as JSON: null when empty. */
static json_t *
admin_str_json(const char *s)
{
	return s[0] != '\0' ? json_string(s) : json_null();
}

/*
 * Read wave N into *W (zero-filled, state warehouse, when it has no record;
 * *HAS_REC says which). 0, or -1 with a 500 reply.
 */
static int
admin_wave_state(struct admin_req *r, uint32_t n, struct store_wave *w,
    bool *has_rec)
{
	int rc;

	memset(w, 0, sizeof(*w));
	rc = store_wave_get(r->st, n, w);
	if (rc == STORE_NOTFOUND) {
		memset(w, 0, sizeof(*w));
		w->n = n;
		w->state = WAVE_WAREHOUSE;
		if (has_rec != NULL)
			*has_rec = false;
		return 0;
	}
	if (rc != STORE_OK) {
		log_warnx("admin: reading wave %u from the store failed", n);
		admin_error(r, 500, "store error reading wave %u", n);
		return -1;
	}
	if (has_rec != NULL)
		*has_rec = true;
	return 0;
}

/* True for the states in which a wave's reads and writes stay on the warehouse.
 */
static bool
admin_state_reads_warehouse(int state)
{
	return state == WAVE_WAREHOUSE || state == WAVE_ROLLED_BACK;
}

/* Append a wave record to the list. */
static int
admin_waves_rec_cb(const struct store_wave *w, void *arg)
{
	struct admin_wave_list *l = arg;
	struct admin_wave_sum *s;

	if (l->len == l->cap) {
		l->cap = l->cap != 0 ? l->cap * 2 : 16;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	s = &l->v[l->len++];
	memset(s, 0, sizeof(*s));
	s->n = w->n;
	s->has_rec = true;
	s->w = *w;
	return 0;
}

/* Append a route's wave to the list, counted as an object or a rule. */
static int
admin_waves_route_cb(const void *key, size_t keylen,
    const struct store_route *rt, void *arg)
{
	struct admin_wave_list *l = arg;
	struct admin_wave_sum *s;
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	if (l->len == l->cap) {
		l->cap = l->cap != 0 ? l->cap * 2 : 16;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	s = &l->v[l->len++];
	memset(s, 0, sizeof(*s));
	s->n = rt->wave;
	if (obj.rule)
		s->rules = 1;
	else
		s->objects = 1;
	return 0;
}

/* Order by wave, the record first. */
static int
admin_wave_sum_cmp(const void *a, const void *b)
{
	const struct admin_wave_sum *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return (int)y->has_rec - (int)x->has_rec;
}

/*
 * Every wave that has a record or a route, in order, with its counts.
 * 0 or -1 (store error).
 */
static int
admin_waves_collect(struct store *st, struct admin_wave_list *l)
{
	size_t i, o;

	memset(l, 0, sizeof(*l));
	if (store_wave_foreach(st, admin_waves_rec_cb, l) < 0 ||
	    store_route_foreach(st, admin_waves_route_cb, l) < 0) {
		free(l->v);
		memset(l, 0, sizeof(*l));
		return -1;
	}
	if (l->len == 0)
		return 0;
	qsort(l->v, l->len, sizeof(*l->v), admin_wave_sum_cmp);
	for (i = 1, o = 0; i < l->len; i++) {
		if (l->v[i].n == l->v[o].n) {
			l->v[o].objects += l->v[i].objects;
			l->v[o].rules += l->v[i].rules;
			continue;
		}
		if (!l->v[o].has_rec)
			l->v[o].w.state = WAVE_WAREHOUSE;
		l->v[++o] = l->v[i];
	}
	l->len = o + 1;
	return 0;
}

/* The summary object of one wave (GET /waves and transitions). */
static json_t *
admin_wave_sum_json(const struct admin_wave_sum *s)
{
	const struct store_wave *w = &s->w;
	int state = s->has_rec ? w->state : WAVE_WAREHOUSE;

	return json_pack("{s:I,s:s,s:i,s:o,s:o,s:o,s:I,s:I}", "wave",
	    (json_int_t)s->n, "state", wave_state_name(state), "pct",
	    s->has_rec ? w->pct : 0, "since",
	    admin_time_json(s->has_rec ? w->since_ms : 0), "reason",
	    s->has_rec ? admin_str_json(w->reason) : json_null(), "actor",
	    s->has_rec ? admin_str_json(w->actor) : json_null(), "objects",
	    (json_int_t)s->objects, "rules", (json_int_t)s->rules);
}

/* One route as {object, wave, since}. */
static json_t *
admin_route_json(const struct route_obj *obj, const struct store_route *rt)
{
	char text[STORE_KEY_MAX * 3 + 8];

	route_obj_format(obj, text, sizeof(text));
	return json_pack("{s:s,s:I,s:o}", "object", text, "wave",
	    (json_int_t)rt->wave, "since", admin_time_json(rt->since_ms));
}

/* Append one route to the JSON array ARG. */
static int
admin_routes_list_cb(const void *key, size_t keylen,
    const struct store_route *rt, void *arg)
{
	struct route_obj obj;

	if (route_obj_from_key(key, keylen, &obj) == -1) {
		log_warnx("admin: skipping a malformed route key (%zu bytes)",
		    keylen);
		return 0;
	}
	return json_array_append_new(arg, admin_route_json(&obj, rt));
}

/* Collect the objects and rules of one wave. */
static int
admin_wave_routes_cb(const void *key, size_t keylen,
    const struct store_route *rt, void *arg)
{
	struct admin_wave_routes *wr = arg;
	struct route_obj obj;
	char text[STORE_KEY_MAX * 3 + 8];

	if (rt->wave != wr->n || route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	route_obj_format(&obj, text, sizeof(text));
	return json_array_append_new(obj.rule ? wr->rules : wr->objects,
	    json_string(text));
}

/* Append one stored event to the list, parsed. */
static int
admin_events_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	struct admin_events *ev = arg;
	json_t *j;

	j = json_loadb(json, len, 0, NULL);
	if (j == NULL) {
		/* Never hide an event: pass on what the store holds. */
		j = json_pack("{s:I,s:s%}", "seq", (json_int_t)seq, "raw", json,
		    len);
	}
	return json_array_append_new(ev->list, j);
}

/* GET /status: floe's own status plus the store and a wave summary. */
static void
admin_status(struct admin_req *r)
{
	struct admin_wave_list l;
	unsigned counts[WAVE_NSTATES];
	json_t *j, *waves;
	size_t i;
	int s;

	j = floe_status_json(r->f);
	if (j == NULL)
		j = json_object();
	if (!json_is_object(j)) {
		json_decref(j);
		admin_error(r, 500, "floe status is not an object");
		return;
	}
	json_object_set_new(j, "store",
	    json_pack("{s:b,s:I}", "healthy",
		r->st != NULL && store_is_healthy(r->st), "last_seq",
		(json_int_t)(r->st != NULL ? store_last_seq(r->st) : 0)));
	memset(counts, 0, sizeof(counts));
	if (r->st != NULL && admin_waves_collect(r->st, &l) == 0) {
		for (i = 0; i < l.len; i++)
			if (l.v[i].w.state < WAVE_NSTATES)
				counts[l.v[i].w.state]++;
		free(l.v);
		waves = json_object();
		for (s = 0; s < WAVE_NSTATES; s++)
			json_object_set_new(waves, wave_state_name(s),
			    json_integer(counts[s]));
	} else
		waves = json_null();
	json_object_set_new(j, "waves", waves);
	admin_reply_json(r, 200, j);
}

/* GET /metrics: Prometheus text. */
static void
admin_metrics(struct admin_req *r)
{
	char *text;

	if ((text = floe_metrics_text(r->f)) == NULL) {
		admin_error(r, 500, "metrics are not available");
		return;
	}
	free(r->reply->body);
	r->reply->status = 200;
	r->reply->content_type = ADMIN_CT_METRICS;
	r->reply->body = text;
	r->reply->len = strlen(text);
}

/* GET /routes: every object and rule with its wave. */
static void
admin_routes_get(struct admin_req *r)
{
	json_t *list = json_array();

	if (store_route_foreach(r->st, admin_routes_list_cb, list) < 0) {
		json_decref(list);
		log_warnx("admin: listing routes failed: store error");
		admin_error(r, 500, "store error listing routes");
		return;
	}
	admin_reply_json(r, 200, json_pack("{s:o}", "routes", list));
}

/*
 * Whether moving TEXT from wave OLD (if HAS_OLD) to wave NEW (if HAS_NEW)
 * is allowed. A route change must neither skip a cutover gate (an object
 * joining a wave that already reads from the lakehouse) nor send traffic to
 * a warehouse copy that is no longer written (an object leaving a frozen or
 * retired wave). Leaving a canary or lakehouse wave is the safe direction
 * (the warehouse is still dual-written) and is allowed. 0, or -1 with a 409
 * (or 500) reply.
 */
static int
admin_route_guard(struct admin_req *r, const char *text, uint32_t old,
    bool has_old, uint32_t new, bool has_new)
{
	struct store_wave w;
	char msg[512];
	json_t *ev;

	msg[0] = '\0';
	if (has_new) {
		if (admin_wave_state(r, new, &w, NULL) == -1)
			return -1;
		if (!admin_state_reads_warehouse(w.state))
			snprintf(msg, sizeof(msg),
			    "wave %u is %s: %s may join it only while the wave "
			    "is on the warehouse, or it would skip the cutover "
			    "gate (force to override)",
			    new, wave_state_name(w.state), text);
	}
	if (has_old && msg[0] == '\0') {
		if (admin_wave_state(r, old, &w, NULL) == -1)
			return -1;
		if (w.state == WAVE_FROZEN || w.state == WAVE_RETIRED)
			snprintf(msg, sizeof(msg),
			    "%s is in wave %u, which is %s: its warehouse copy "
			    "is no longer written (force to override)",
			    text, old, wave_state_name(w.state));
	}
	if (msg[0] == '\0')
		return 0;

	/* Like a refused transition, the refusal is recorded. */
	log_info("route change of %s refused (%s): %s", text, r->actor, msg);
	ev = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s,s:s}", "type", "route.refused",
	    "action", has_new ? "set" : "rm", "object", text, "wave",
	    has_new ? json_integer(new) : json_null(), "from_wave",
	    has_old ? json_integer(old) : json_null(), "actor", r->actor,
	    "message", msg);
	if (ev == NULL || store_event_append(r->st, r->now_ms, ev) != STORE_OK)
		log_warnx("admin: recording the refusal for %s failed", text);
	json_decref(ev);
	admin_error(r, 409, "%s", msg);
	return -1;
}

/* POST /routes {"object","wave"[,"force"]}: assign an object or rule. */
static void
admin_routes_post(struct admin_req *r)
{
	static const char *const known[] = { "object", "wave", "force", NULL };
	struct route_obj obj;
	struct store_route old = { 0 }, rt;
	const char *text;
	json_int_t wave;
	json_t *b, *ev = NULL;
	bool force, has_old;
	char canon[STORE_KEY_MAX * 3 + 8];
	int rc;

	if ((b = admin_body(r, false)) == NULL)
		return;
	if (admin_body_check(r, b, known) == -1 ||
	    admin_body_string(r, b, "object", true, &text) == -1 ||
	    admin_body_int(r, b, "wave", true, 0, 0, WAVE_MAX, &wave) == -1 ||
	    admin_body_bool(r, b, "force", &force) == -1 ||
	    admin_parse_object(r, text, &obj) == -1)
		goto out;
	route_obj_format(&obj, canon, sizeof(canon));

	rc = store_route_get(r->st, obj.key, obj.len, &old);
	if (rc != STORE_OK && rc != STORE_NOTFOUND) {
		log_warnx("admin: reading route %s failed: store error", canon);
		admin_error(r, 500, "store error reading the route of %s",
		    canon);
		goto out;
	}
	has_old = rc == STORE_OK;
	if (has_old && old.wave == (uint32_t)wave) {
		/* Already so: nothing to write, no event. */
		admin_reply_json(r, 200, admin_route_json(&obj, &old));
		goto out;
	}
	if (!force &&
	    admin_route_guard(r, canon, old.wave, has_old, (uint32_t)wave,
		true) == -1)
		goto out;

	ev = json_pack("{s:s,s:s,s:I,s:o,s:s}", "type", "route.set", "object",
	    canon, "wave", (json_int_t)wave, "from_wave",
	    has_old ? json_integer(old.wave) : json_null(), "actor", r->actor);
	if (force)
		json_object_set_new(ev, "forced", json_true());
	if (store_route_put(r->st, obj.key, obj.len, (uint32_t)wave, r->now_ms,
		ev) != STORE_OK) {
		log_warnx(
		    "admin: setting route %s -> wave %" JSON_INTEGER_FORMAT
		    " failed: store error",
		    canon, wave);
		admin_error(r, 500, "store error: the route of %s is unchanged",
		    canon);
		goto out;
	}
	log_info("route %s set to wave %" JSON_INTEGER_FORMAT " by %s%s", canon,
	    wave, r->actor, force ? " (forced)" : "");
	if (store_route_get(r->st, obj.key, obj.len, &rt) != STORE_OK) {
		/* Written and synced; answer with what was written. */
		rt.wave = (uint32_t)wave;
		rt.seq = store_last_seq(r->st);
		rt.since_ms = r->now_ms;
	}
	admin_reply_json(r, 200, admin_route_json(&obj, &rt));
out:
	json_decref(ev);
	json_decref(b);
}

/* DELETE /routes/{object}: remove an assignment. */
static void
admin_routes_delete(struct admin_req *r)
{
	struct route_obj obj;
	struct store_route old;
	json_t *ev;
	char canon[STORE_KEY_MAX * 3 + 8], *force_q = NULL;
	bool force;
	int rc;

	if (admin_parse_object(r, r->seg[1], &obj) == -1)
		return;
	route_obj_format(&obj, canon, sizeof(canon));
	force = admin_query_get(r, "force", &force_q) == 1 &&
	    (strcmp(force_q, "") == 0 || strcmp(force_q, "1") == 0 ||
		strcmp(force_q, "true") == 0);
	free(force_q);

	rc = store_route_get(r->st, obj.key, obj.len, &old);
	if (rc == STORE_NOTFOUND) {
		admin_error(r, 404, "%s has no route", canon);
		return;
	}
	if (rc != STORE_OK) {
		log_warnx("admin: reading route %s failed: store error", canon);
		admin_error(r, 500, "store error reading the route of %s",
		    canon);
		return;
	}
	if (!force &&
	    admin_route_guard(r, canon, old.wave, true, 0, false) == -1)
		return;
	ev = json_pack("{s:s,s:s,s:I,s:s}", "type", "route.rm", "object", canon,
	    "from_wave", (json_int_t)old.wave, "actor", r->actor);
	if (force)
		json_object_set_new(ev, "forced", json_true());
	rc = store_route_del(r->st, obj.key, obj.len, r->now_ms, ev);
	json_decref(ev);
	if (rc == STORE_NOTFOUND) {
		admin_error(r, 404, "%s has no route", canon);
		return;
	}
	if (rc != STORE_OK) {
		log_warnx("admin: removing route %s failed: store error",
		    canon);
		admin_error(r, 500, "store error: the route of %s is unchanged",
		    canon);
		return;
	}
	log_info("route %s (wave %u) removed by %s%s", canon, old.wave,
	    r->actor, force ? " (forced)" : "");
	admin_reply_json(r, 200,
	    json_pack("{s:s,s:b,s:I}", "object", canon, "removed", 1, "wave",
		(json_int_t)old.wave));
}

/* GET /resolve/{object}[?client=ID]: where the object goes, and why. */
static void
admin_resolve(struct admin_req *r)
{
	static const char *const why[] = {
		[ROUTE_WHY_UNASSIGNED] = "unassigned",
		[ROUTE_WHY_OBJECT] = "object",
		[ROUTE_WHY_RULE] = "rule",
		[ROUTE_WHY_STORE_ERROR] = "store error",
	};
	struct route_obj obj;
	struct route_result res;
	char canon[STORE_KEY_MAX * 3 + 8], matched[STORE_KEY_MAX * 3 + 8];
	char *client = NULL;
	bool assigned;
	json_t *j;

	if (admin_parse_object(r, r->seg[1], &obj) == -1)
		return;
	route_obj_format(&obj, canon, sizeof(canon));
	(void)admin_query_get(r, "client", &client);
	memset(&res, 0, sizeof(res));
	(void)route_resolve(r->st, &obj, client != NULL ? route_client_hash(client, strlen(client)) : 0, &res);
	assigned = res.assigned && res.why != ROUTE_WHY_STORE_ERROR &&
	    res.why != ROUTE_WHY_UNASSIGNED;
	if (assigned)
		route_obj_format(&res.matched, matched, sizeof(matched));
	j = json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:I,s:s,s:o,s:b,s:o}", "object",
	    canon, "target", route_side_name(res.read), "write_target",
	    route_side_name(res.write), "wave",
	    assigned ? json_integer(res.wave) : json_null(), "state",
	    assigned ? json_string(wave_state_name(res.state)) : json_null(),
	    "pct", assigned ? res.pct : 0, "version", (json_int_t)res.version,
	    "why",
	    (size_t)res.why < sizeof(why) / sizeof(why[0]) ? why[res.why] :
							     "store error",
	    "matched", assigned ? json_string(matched) : json_null(),
	    "refuses_warehouse_writes", res.warehouse_writes_refused, "since",
	    assigned ? admin_time_json(res.since_ms) : json_null());
	if (client != NULL)
		json_object_set_new(j, "client", json_string(client));
	free(client);
	admin_reply_json(r, 200, j);
}

/* GET /waves: every wave with a record or a route. */
static void
admin_waves_get(struct admin_req *r)
{
	struct admin_wave_list l;
	json_t *list;
	size_t i;

	if (admin_waves_collect(r->st, &l) == -1) {
		log_warnx("admin: listing waves failed: store error");
		admin_error(r, 500, "store error listing waves");
		return;
	}
	list = json_array();
	for (i = 0; i < l.len; i++)
		json_array_append_new(list, admin_wave_sum_json(&l.v[i]));
	free(l.v);
	admin_reply_json(r, 200, json_pack("{s:o}", "waves", list));
}

/* GET /waves/{n}: one wave in detail with its objects and rules. */
static void
admin_wave_get(struct admin_req *r)
{
	struct admin_wave_routes wr;
	struct store_wave w;
	uint32_t n;
	bool has_rec;
	char dur[32];
	json_t *j;

	if (admin_parse_wave(r, r->seg[1], &n) == -1 ||
	    admin_wave_state(r, n, &w, &has_rec) == -1)
		return;
	wr.n = n;
	wr.objects = json_array();
	wr.rules = json_array();
	if (store_route_foreach(r->st, admin_wave_routes_cb, &wr) < 0) {
		json_decref(wr.objects);
		json_decref(wr.rules);
		log_warnx("admin: listing routes of wave %u failed", n);
		admin_error(r, 500, "store error listing the routes of wave %u",
		    n);
		return;
	}
	if (!has_rec && json_array_size(wr.objects) == 0 &&
	    json_array_size(wr.rules) == 0) {
		json_decref(wr.objects);
		json_decref(wr.rules);
		admin_error(r, 404, "wave %u has no routes and no state", n);
		return;
	}
	if (w.gate_window_ms > 0)
		units_format_duration((uint64_t)w.gate_window_ms, dur,
		    sizeof(dur));
	j = json_pack("{s:I,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
		      "s:o,s:o}",
	    "wave", (json_int_t)n, "state", wave_state_name(w.state), "pct",
	    w.pct, "since", admin_time_json(w.since_ms), "reason",
	    admin_str_json(w.reason), "actor", admin_str_json(w.actor),
	    "flipped", admin_time_json(w.flipped_ms), "frozen",
	    admin_time_json(w.frozen_ms), "rolled_back",
	    admin_time_json(w.rollback_ms), "signoff",
	    admin_str_json(w.signoff), "gate_min_clean",
	    w.gate_min_clean > 0 ? json_integer(w.gate_min_clean) : json_null(),
	    "gate_window",
	    w.gate_window_ms > 0 ? json_string(dur) : json_null(), "objects",
	    wr.objects, "rules", wr.rules);
	admin_reply_json(r, 200, j);
}

/*
 * POST /waves/{n}/flip|rollback|ack: one transition through wave.h.
 * Answers the wave's summary with "from", the state it left.
 */
static void
admin_wave_move(struct admin_req *r, const char *what)
{
	static const char *const flip_known[] = { "to", "pct", "reason", NULL };
	static const char *const rb_known[] = { "reason", "force_stale", NULL };
	static const char *const ack_known[] = { NULL };
	struct admin_wave_sum s;
	struct store_wave before;
	const char *to = NULL, *reason = NULL;
	json_int_t pct = 0;
	bool force_stale = false, has_rec;
	char msg[512];
	uint32_t n;
	json_t *b, *j;
	int rc, state = WAVE_LAKEHOUSE;

	if (admin_parse_wave(r, r->seg[1], &n) == -1)
		return;
	if ((b = admin_body(r, strcmp(what, "flip") != 0)) == NULL)
		return;
	if (strcmp(what, "flip") == 0) {
		if (admin_body_check(r, b, flip_known) == -1 ||
		    admin_body_string(r, b, "to", true, &to) == -1 ||
		    admin_body_string(r, b, "reason", false, &reason) == -1)
			goto out;
		state = wave_state_parse(to);
		if (state != WAVE_LAKEHOUSE && state != WAVE_CANARY) {
			admin_error(r, 400,
			    "field \"to\" must be \"lakehouse\" or \"canary\"");
			goto out;
		}
		if (state == WAVE_CANARY) {
			if (admin_body_int(r, b, "pct", true, 0, 1, 100,
				&pct) == -1)
				goto out;
		} else if (json_object_get(b, "pct") != NULL) {
			if (admin_body_int(r, b, "pct", false, 100, 100, 100,
				&pct) == -1)
				goto out;
		} else
			pct = 100;
	} else if (strcmp(what, "rollback") == 0) {
		if (admin_body_check(r, b, rb_known) == -1 ||
		    admin_body_string(r, b, "reason", false, &reason) == -1 ||
		    admin_body_bool(r, b, "force_stale", &force_stale) == -1)
			goto out;
	} else if (admin_body_check(r, b, ack_known) == -1)
		goto out;

	if (admin_wave_state(r, n, &before, NULL) == -1)
		goto out;
	msg[0] = '\0';
	if (strcmp(what, "flip") == 0)
		rc = wave_flip(r->st, n, state, (unsigned)pct, r->actor, reason,
		    r->now_ms, msg, sizeof(msg));
	else if (strcmp(what, "rollback") == 0)
		rc = wave_rollback(r->st, n, r->actor, reason, force_stale,
		    r->now_ms, msg, sizeof(msg));
	else
		rc = wave_ack(r->st, n, r->actor, r->now_ms, msg, sizeof(msg));
	/* wave.c logged the outcome and recorded it, refusals included. */
	if (rc == WAVE_REFUSED) {
		admin_error(r, 409, "%s",
		    msg[0] != '\0' ? msg : "the transition was refused");
		goto out;
	}
	if (rc != WAVE_OK) {
		admin_error(r, 500, "%s",
		    msg[0] != '\0' ? msg : "the store failed; nothing changed");
		goto out;
	}

	/* An operator's rollback goes to the rollback log, like a trigger's. */
	if (strcmp(what, "rollback") == 0)
		floe_rollback_logged(r->f, n, wave_state_name(before.state),
		    "operator", r->actor, reason);

	memset(&s, 0, sizeof(s));
	s.n = n;
	if (admin_wave_state(r, n, &s.w, &has_rec) == -1)
		goto out;
	s.has_rec = has_rec;
	j = admin_wave_sum_json(&s);
	/* The counts are not gathered here; a transition moves no route. */
	json_object_del(j, "objects");
	json_object_del(j, "rules");
	json_object_set_new(j, "from",
	    json_string(wave_state_name(before.state)));
	admin_reply_json(r, 200, j);
out:
	json_decref(b);
}

/* GET /events?after=SEQ&limit=N: stored events, oldest first. */
static void
admin_events_get(struct admin_req *r)
{
	struct admin_events ev;
	unsigned long long after = 0, limit = ADMIN_EVENTS_LIMIT;
	char *v, *end;

	if (admin_query_get(r, "after", &v) == 1) {
		errno = 0;
		after = strtoull(v, &end, 10);
		if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0) {
			admin_error(r, 400,
			    "after must be an event sequence number, not "
			    "\"%s\"",
			    v);
			free(v);
			return;
		}
		free(v);
	}
	if (admin_query_get(r, "limit", &v) == 1) {
		errno = 0;
		limit = strtoull(v, &end, 10);
		if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 ||
		    limit < 1 || limit > ADMIN_EVENTS_MAX) {
			admin_error(r, 400, "limit must be 1..%d, not \"%s\"",
			    ADMIN_EVENTS_MAX, v);
			free(v);
			return;
		}
		free(v);
	}
	ev.list = json_array();
	if (store_event_foreach(r->st, after, limit, admin_events_cb, &ev) <
	    0) {
		json_decref(ev.list);
		log_warnx("admin: reading events failed: store error");
		admin_error(r, 500, "store error reading events");
		return;
	}
	admin_reply_json(r, 200,
	    json_pack("{s:o,s:I}", "events", ev.list, "last_seq",
		(json_int_t)store_last_seq(r->st)));
}

/* Find the handler for the path and method. */
static void
admin_dispatch(struct admin_req *r)
{
	const char *s0 = r->nseg > 0 ? r->seg[0] : "";
	int n = r->nseg;

	if (n == 1 && strcmp(s0, "status") == 0) {
		if (admin_method_ok(r, "GET"))
			admin_status(r);
	} else if (n == 1 && strcmp(s0, "metrics") == 0) {
		if (admin_method_ok(r, "GET"))
			admin_metrics(r);
	} else if (n == 1 && strcmp(s0, "routes") == 0) {
		if (admin_method_ok(r, "GET,POST")) {
			if (strcmp(r->method, "GET") == 0)
				admin_routes_get(r);
			else
				admin_routes_post(r);
		}
	} else if (n == 2 && strcmp(s0, "routes") == 0) {
		if (admin_method_ok(r, "DELETE"))
			admin_routes_delete(r);
	} else if (n == 2 && strcmp(s0, "resolve") == 0) {
		if (admin_method_ok(r, "GET"))
			admin_resolve(r);
	} else if (n == 1 && strcmp(s0, "waves") == 0) {
		if (admin_method_ok(r, "GET"))
			admin_waves_get(r);
	} else if (n == 2 && strcmp(s0, "waves") == 0) {
		if (admin_method_ok(r, "GET"))
			admin_wave_get(r);
	} else if (n == 3 && strcmp(s0, "waves") == 0 &&
	    (strcmp(r->seg[2], "flip") == 0 ||
		strcmp(r->seg[2], "rollback") == 0 ||
		strcmp(r->seg[2], "ack") == 0)) {
		if (admin_method_ok(r, "POST"))
			admin_wave_move(r, r->seg[2]);
	} else if (n == 1 && strcmp(s0, "events") == 0) {
		if (admin_method_ok(r, "GET"))
			admin_events_get(r);
	} else
		admin_error(r, 404, "no such resource: %s", r->path);
}

/* Serve one admin request into REPLY. */
void
admin_handle(struct floe *f, const char *method, const char *target,
    size_t target_len, const char *body, size_t body_len, uid_t peer_uid,
    struct admin_reply *reply)
{
	struct admin_req r;
	int i;

	memset(reply, 0, sizeof(*reply));
	memset(&r, 0, sizeof(r));
	r.f = f;
	r.st = f->store;
	r.method = method;
	r.body = body;
	r.body_len = body != NULL ? body_len : 0;
	r.reply = reply;
	r.now_ms = units_now_ms();
	snprintf(r.actor, sizeof(r.actor), "uid %lu", (unsigned long)peer_uid);

	if (admin_split(&r, target, target_len) == 0) {
		if (r.st == NULL &&
		    !(r.nseg == 1 &&
			(strcmp(r.seg[0], "status") == 0 ||
			    strcmp(r.seg[0], "metrics") == 0)))
			admin_error(&r, 503, "the store is not open");
		else
			admin_dispatch(&r);
	}
	for (i = 0; i < r.nseg; i++)
		free(r.seg[i]);
	free(r.path);
	free(r.query);
}
