/*
 * floe: rest.c -- the Iceberg REST catalog path grammar. One pass splits the
 * request-target into segments, a switch on the segment count and literals
 * picks one of the spec's 23 paths, the method picks one of its 35
 * operations, and the namespace and table segments are percent-decoded into
 * struct rest_req for routing only. No allocation.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "lib/shortcopy.h"
#include "lib/units.h"
#include "proxy/rest.h"

/*
 * The spec's paths. P = /v1/{prefix} (optional), N = P/namespaces/{namespace},
 * T = N/tables/{table}.
 */
enum rest_shape {
	SH_CONFIG, /* /v1/config */
	SH_TOKEN, /* /v1/oauth/tokens */
	SH_NAMESPACES, /* P/namespaces */
	SH_NAMESPACE, /* N */
	SH_PROPERTIES, /* N/properties */
	SH_TABLES, /* N/tables */
	SH_REGISTER, /* N/register */
	SH_TABLE, /* T */
	SH_UNREGISTER, /* T/unregister */
	SH_CREDENTIALS, /* T/credentials */
	SH_SIGN, /* T/sign */
	SH_PLAN, /* T/plan */
	SH_PLAN_ID, /* T/plan/{plan-id} */
	SH_TASKS, /* T/tasks */
	SH_METRICS, /* T/metrics */
	SH_RENAME_TABLE, /* P/tables/rename */
	SH_COMMIT, /* P/transactions/commit */
	SH_VIEWS, /* N/views */
	SH_VIEW, /* N/views/{view} */
	SH_RENAME_VIEW, /* P/views/rename */
	SH_REGISTER_VIEW, /* N/register-view */
	SH_FUNCTIONS, /* N/functions */
	SH_FUNCTION, /* N/functions/{function} */
	SH_NSHAPES
};

/* The methods a path has; REST_NONE where it has none. */
struct rest_methods {
	enum rest_op get, head, post, del;
};

static const struct rest_methods rest_shapes[SH_NSHAPES] = {
	[SH_CONFIG] = { .get = REST_GET_CONFIG },
	[SH_TOKEN] = { .post = REST_GET_TOKEN },
	[SH_NAMESPACES] = { .get = REST_LIST_NAMESPACES,
	    .post = REST_CREATE_NAMESPACE },
	[SH_NAMESPACE] = { .get = REST_LOAD_NAMESPACE,
	    .head = REST_NAMESPACE_EXISTS,
	    .del = REST_DROP_NAMESPACE },
	[SH_PROPERTIES] = { .post = REST_UPDATE_PROPERTIES },
	[SH_TABLES] = { .get = REST_LIST_TABLES, .post = REST_CREATE_TABLE },
	[SH_REGISTER] = { .post = REST_REGISTER_TABLE },
	[SH_TABLE] = { .get = REST_LOAD_TABLE,
	    .head = REST_TABLE_EXISTS,
	    .post = REST_UPDATE_TABLE,
	    .del = REST_DROP_TABLE },
	[SH_UNREGISTER] = { .post = REST_UNREGISTER_TABLE },
	[SH_CREDENTIALS] = { .get = REST_LOAD_CREDENTIALS },
	[SH_SIGN] = { .post = REST_SIGN },
	[SH_PLAN] = { .post = REST_PLAN },
	[SH_PLAN_ID] = { .get = REST_FETCH_PLAN, .del = REST_CANCEL_PLAN },
	[SH_TASKS] = { .post = REST_FETCH_TASKS },
	[SH_METRICS] = { .post = REST_REPORT_METRICS },
	[SH_RENAME_TABLE] = { .post = REST_RENAME_TABLE },
	[SH_COMMIT] = { .post = REST_COMMIT_TRANSACTION },
	[SH_VIEWS] = { .get = REST_LIST_VIEWS, .post = REST_CREATE_VIEW },
	[SH_VIEW] = { .get = REST_LOAD_VIEW,
	    .head = REST_VIEW_EXISTS,
	    .post = REST_REPLACE_VIEW,
	    .del = REST_DROP_VIEW },
	[SH_RENAME_VIEW] = { .post = REST_RENAME_VIEW },
	[SH_REGISTER_VIEW] = { .post = REST_REGISTER_VIEW },
	[SH_FUNCTIONS] = { .get = REST_LIST_FUNCTIONS },
	[SH_FUNCTION] = { .get = REST_LOAD_FUNCTION },
};

/* What the rest of floe needs to know about each operation. */
struct rest_opinfo {
	const char *name; /* operationId */
	const char *endpoint; /* as announced in /v1/config endpoints */
	enum rest_scope scope;
	bool write;
};

#define NS_EP "/v1/{prefix}/namespaces/{namespace}"
#define TBL_EP NS_EP "/tables/{table}"

/*
 * Scopes: listings of tables and views are NAMESPACE (floe merges both
 * sides); everything about views and functions is VIEW (warehouse only);
 * create/register/rename/transactions name their tables in the body. Reads
 * and writes follow ENDPOINTS.md, except that reportMetrics, which changes
 * no table, is a read, and getToken, which changes nothing, too.
 */
static const struct rest_opinfo rest_ops[REST_NOPS] = {
	[REST_NONE] = { "none", NULL, REST_SCOPE_CATALOG, false },
	[REST_GET_CONFIG] = { "getConfig", NULL, REST_SCOPE_CATALOG, false },
	[REST_GET_TOKEN] = { "getToken", NULL, REST_SCOPE_CATALOG, false },
	[REST_LIST_NAMESPACES] = { "listNamespaces",
	    "GET /v1/{prefix}/namespaces", REST_SCOPE_CATALOG, false },
	[REST_CREATE_NAMESPACE] = { "createNamespace",
	    "POST /v1/{prefix}/namespaces", REST_SCOPE_CATALOG, true },
	[REST_LOAD_NAMESPACE] = { "loadNamespaceMetadata", "GET " NS_EP,
	    REST_SCOPE_NAMESPACE, false },
	[REST_NAMESPACE_EXISTS] = { "namespaceExists", "HEAD " NS_EP,
	    REST_SCOPE_NAMESPACE, false },
	[REST_DROP_NAMESPACE] = { "dropNamespace", "DELETE " NS_EP,
	    REST_SCOPE_NAMESPACE, true },
	[REST_UPDATE_PROPERTIES] = { "updateProperties",
	    "POST " NS_EP "/properties", REST_SCOPE_NAMESPACE, true },
	[REST_LIST_TABLES] = { "listTables", "GET " NS_EP "/tables",
	    REST_SCOPE_NAMESPACE, false },
	[REST_CREATE_TABLE] = { "createTable", "POST " NS_EP "/tables",
	    REST_SCOPE_BODY, true },
	[REST_REGISTER_TABLE] = { "registerTable", "POST " NS_EP "/register",
	    REST_SCOPE_BODY, true },
	[REST_LOAD_TABLE] = { "loadTable", "GET " TBL_EP, REST_SCOPE_TABLE,
	    false },
	[REST_UPDATE_TABLE] = { "updateTable", "POST " TBL_EP, REST_SCOPE_TABLE,
	    true },
	[REST_DROP_TABLE] = { "dropTable", "DELETE " TBL_EP, REST_SCOPE_TABLE,
	    true },
	[REST_TABLE_EXISTS] = { "tableExists", "HEAD " TBL_EP, REST_SCOPE_TABLE,
	    false },
	[REST_UNREGISTER_TABLE] = { "unregisterTable",
	    "POST " TBL_EP "/unregister", REST_SCOPE_TABLE, true },
	[REST_LOAD_CREDENTIALS] = { "loadCredentials",
	    "GET " TBL_EP "/credentials", REST_SCOPE_TABLE, false },
	[REST_SIGN] = { "signRequest", "POST " TBL_EP "/sign", REST_SCOPE_TABLE,
	    false },
	[REST_PLAN] = { "planTableScan", "POST " TBL_EP "/plan",
	    REST_SCOPE_TABLE, false },
	[REST_FETCH_PLAN] = { "fetchPlanningResult",
	    "GET " TBL_EP "/plan/{plan-id}", REST_SCOPE_TABLE, false },
	[REST_CANCEL_PLAN] = { "cancelPlanning",
	    "DELETE " TBL_EP "/plan/{plan-id}", REST_SCOPE_TABLE, false },
	[REST_FETCH_TASKS] = { "fetchScanTasks", "POST " TBL_EP "/tasks",
	    REST_SCOPE_TABLE, false },
	[REST_REPORT_METRICS] = { "reportMetrics", "POST " TBL_EP "/metrics",
	    REST_SCOPE_TABLE, false },
	[REST_RENAME_TABLE] = { "renameTable",
	    "POST /v1/{prefix}/tables/rename", REST_SCOPE_BODY, true },
	[REST_COMMIT_TRANSACTION] = { "commitTransaction",
	    "POST /v1/{prefix}/transactions/commit", REST_SCOPE_BODY, true },
	[REST_LIST_VIEWS] = { "listViews", "GET " NS_EP "/views",
	    REST_SCOPE_NAMESPACE, false },
	[REST_CREATE_VIEW] = { "createView", "POST " NS_EP "/views",
	    REST_SCOPE_VIEW, true },
	[REST_LOAD_VIEW] = { "loadView", "GET " NS_EP "/views/{view}",
	    REST_SCOPE_VIEW, false },
	[REST_REPLACE_VIEW] = { "replaceView", "POST " NS_EP "/views/{view}",
	    REST_SCOPE_VIEW, true },
	[REST_DROP_VIEW] = { "dropView", "DELETE " NS_EP "/views/{view}",
	    REST_SCOPE_VIEW, true },
	[REST_VIEW_EXISTS] = { "viewExists", "HEAD " NS_EP "/views/{view}",
	    REST_SCOPE_VIEW, false },
	[REST_RENAME_VIEW] = { "renameView", "POST /v1/{prefix}/views/rename",
	    REST_SCOPE_VIEW, true },
	[REST_REGISTER_VIEW] = { "registerView", "POST " NS_EP "/register-view",
	    REST_SCOPE_VIEW, true },
	[REST_LIST_FUNCTIONS] = { "listFunctions", "GET " NS_EP "/functions",
	    REST_SCOPE_VIEW, false },
	[REST_LOAD_FUNCTION] = { "loadFunction",
	    "GET " NS_EP "/functions/{function}", REST_SCOPE_VIEW, false },
};

/* The longest path: {prefix}/namespaces/{ns}/tables/{t}/plan/{plan-id}. */
#define REST_SEGS_MAX 7

static int rest_match(const char *, const struct rest_span *, size_t);
static int rest_decode(const char *, size_t, const char *, size_t, char *,
    size_t *, int *);
static bool rest_key_is(const char *, size_t, const char *);

/* Whether span S of T is the literal L. */
#define SEG_IS(t, s, l)                                                        \
	((s).len == sizeof(l) - 1 && memcmp((t) + (s).off, l, (s).len) == 0)

/* The shape SEG[0..N) names, without a prefix, or -1. */
static int
rest_match(const char *t, const struct rest_span *seg, size_t n)
{
	if (n == 0)
		return -1;
	if (!SEG_IS(t, seg[0], "namespaces")) {
		if (n != 2)
			return -1;
		if (SEG_IS(t, seg[1], "rename")) {
			if (SEG_IS(t, seg[0], "tables"))
				return SH_RENAME_TABLE;
			if (SEG_IS(t, seg[0], "views"))
				return SH_RENAME_VIEW;
		} else if (SEG_IS(t, seg[0], "transactions") &&
		    SEG_IS(t, seg[1], "commit"))
			return SH_COMMIT;
		return -1;
	}
	switch (n) {
	case 1:
		return SH_NAMESPACES;
	case 2:
		return SH_NAMESPACE;
	case 3:
		if (SEG_IS(t, seg[2], "tables"))
			return SH_TABLES;
		if (SEG_IS(t, seg[2], "views"))
			return SH_VIEWS;
		if (SEG_IS(t, seg[2], "properties"))
			return SH_PROPERTIES;
		if (SEG_IS(t, seg[2], "register"))
			return SH_REGISTER;
		if (SEG_IS(t, seg[2], "register-view"))
			return SH_REGISTER_VIEW;
		if (SEG_IS(t, seg[2], "functions"))
			return SH_FUNCTIONS;
		return -1;
	case 4:
		if (SEG_IS(t, seg[2], "tables"))
			return SH_TABLE;
		if (SEG_IS(t, seg[2], "views"))
			return SH_VIEW;
		if (SEG_IS(t, seg[2], "functions"))
			return SH_FUNCTION;
		return -1;
	case 5:
		if (!SEG_IS(t, seg[2], "tables"))
			return -1;
		if (SEG_IS(t, seg[4], "plan"))
			return SH_PLAN;
		if (SEG_IS(t, seg[4], "tasks"))
			return SH_TASKS;
		if (SEG_IS(t, seg[4], "credentials"))
			return SH_CREDENTIALS;
		if (SEG_IS(t, seg[4], "sign"))
			return SH_SIGN;
		if (SEG_IS(t, seg[4], "metrics"))
			return SH_METRICS;
		if (SEG_IS(t, seg[4], "unregister"))
			return SH_UNREGISTER;
		return -1;
	case 6:
		if (SEG_IS(t, seg[2], "tables") && SEG_IS(t, seg[4], "plan"))
			return SH_PLAN_ID;
		return -1;
	}
	return -1;
}

/* Bytes a name does not decode to as they are: controls, '%' and '+'. */
static const unsigned char rest_unplain[256] = {
	[0x00 ... 0x1f] = 1,
	['%'] = 1,
	['+'] = 1,
};

/*
 * Percent-decode IN[0..LEN) into OUT (REST_NAME_MAX, NUL-terminated). With
 * NLEVELS non-NULL it is a namespace: 0x1f and SEP[0..SEPLEN) (compared
 * after decoding, so "." and "%2E" both split) end a level, levels are
 * joined by 0x1f in OUT and none may be empty. Without, it is one name and
 * every byte below 0x20 is malformed.
 */
static int
rest_decode(const char *in, size_t len, const char *sep, size_t seplen,
    char *out, size_t *outlen, int *nlevels)
{
	size_t i, o = 0, lstart = 0;
	int c, hi, lo, nl = 1;
	unsigned char last =
	    nlevels != NULL && seplen > 0 ? sep[seplen - 1] : 0;

	/*
	 * Nearly every name is plain: no escape, no '+', no control byte and
	 * no separator. Such a name decodes to itself, one level.
	 */
	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		if (rest_unplain[c] | (c == last))
			break;
	}
	if (i == len && len > 0 && len < REST_NAME_MAX) {
		short_copy(out, in, len);
		out[len] = '\0';
		*outlen = len;
		if (nlevels != NULL)
			*nlevels = 1;
		return REST_OK;
	}
	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		if (c == '+')
			c = ' ';
		else if (c == '%') {
			if (len - i < 3 || (hi = units_hexval(in[i + 1])) < 0 ||
			    (lo = units_hexval(in[i + 2])) < 0)
				return REST_MALFORMED;
			c = hi << 4 | lo;
			i += 2;
		}
		if (c < 0x20 &&
		    (nlevels == NULL ||
			(c != 0x1f &&
			    (seplen == 0 || memchr(sep, c, seplen) == NULL))))
			return REST_MALFORMED;
		if (o >= REST_NAME_MAX - 1)
			return REST_TOOLONG;
		out[o++] = (char)c;
		if (nlevels == NULL)
			continue;
		if (c == 0x1f)
			o--;
		else if (seplen > 0 && c == (unsigned char)sep[seplen - 1] &&
		    o - lstart >= seplen &&
		    memcmp(out + o - seplen, sep, seplen) == 0)
			o -= seplen;
		else
			continue;
		/* A level ends here. */
		if (o == lstart)
			return REST_MALFORMED;
		out[o++] = 0x1f;
		lstart = o;
		nl++;
	}
	if (o == lstart)
		return REST_MALFORMED;
	out[o] = '\0';
	*outlen = o;
	if (nlevels != NULL)
		*nlevels = nl;
	return REST_OK;
}

/*
 * The first '/' or '?' at or after S of the LEN bytes at T, or LEN: 16
 * bytes at a time with SSE2 (the last ones in the last 16, those before
 * S masked off), one by one in a target shorter than 16.
 */
static size_t
rest_next_sep(const char *t, size_t s, size_t len)
{
#ifdef __SSE2__
	const __m128i sl = _mm_set1_epi8('/'), qm = _mm_set1_epi8('?');
	__m128i x;
	unsigned m;

	for (; len - s >= 16; s += 16) {
		x = _mm_loadu_si128((const __m128i *)(const void *)(t + s));
		m = (unsigned)_mm_movemask_epi8(
		    _mm_or_si128(_mm_cmpeq_epi8(x, sl), _mm_cmpeq_epi8(x, qm)));
		if (m != 0)
			return s + (size_t)__builtin_ctz(m);
	}
	if (s < len && len >= 16) {
		x = _mm_loadu_si128(
		    (const __m128i *)(const void *)(t + len - 16));
		m = (unsigned)_mm_movemask_epi8(
		    _mm_or_si128(_mm_cmpeq_epi8(x, sl), _mm_cmpeq_epi8(x, qm)));
		m &= ~0u << (s - (len - 16));
		return m != 0 ? len - 16 + (size_t)__builtin_ctz(m) : len;
	}
#endif
	for (; s < len; s++)
		if (t[s] == '/' || t[s] == '?')
			return s;
	return len;
}

/*
 * Parse a request-target; see rest.h.
 *
 * The {prefix} segment is optional, so "/v1/namespaces/x" could be the
 * namespace x with no prefix or the listing under a prefix named
 * "namespaces" followed by junk. The rule: segments after "/v1/" are first
 * matched as a path without a prefix; only if that names no path are they
 * matched with the first segment as the prefix. So "/v1/namespaces/db/tables"
 * and "/v1/p/namespaces/db/tables" both list tables, and a prefix that is a
 * keyword ("namespaces", "tables", "views", "config", ...) works wherever
 * the rest does not also read as a whole path: "/v1/namespaces/namespaces"
 * is the namespace "namespaces", never the listing under that prefix. The
 * method never breaks the tie, so one URL names one resource. config and
 * oauth/tokens exist only without a prefix.
 *
 * An empty segment (a double slash, a trailing slash, "/v1//namespaces")
 * names no path: REST_NOTFOUND, like any unknown path. A known path with a
 * method it lacks is REST_BADMETHOD, found before the names are decoded.
 */
int
rest_parse(enum rest_method m, const char *t, size_t len, const char *sep,
    struct rest_req *r)
{
	struct rest_span seg[REST_SEGS_MAX];
	const struct rest_methods *ms;
	const struct rest_opinfo *oi;
	const char *q;
	size_t plen = 0, i, start, n = 0, k = 0, seplen;
	int shape = -1, rc;
	enum rest_op op;

	r->op = REST_NONE;
	r->scope = REST_SCOPE_CATALOG;
	r->write = false;
	r->prefix = r->rest = r->ns_raw = r->table_raw = r->plan_id =
	    (struct rest_span) { 0, 0 };
	r->ns[0] = r->table[0] = '\0';
	r->ns_len = r->table_len = 0;
	r->nlevels = 0;
	r->has_table = false;
	r->allow[0] = '\0';

	/*
	 * The path's segments after "/v1/" and where the query starts, in
	 * one pass: each segment ends at a '/', the last at the first '?' or
	 * the end. None may be empty (a trailing '/' makes one).
	 */
	if (len >= 4 && memcmp(t, "/v1/", 4) == 0)
		for (start = 4;; start = i + 1) {
			i = rest_next_sep(t, start, len);
			if (i == start || n == REST_SEGS_MAX)
				break;
			seg[n++] = (struct rest_span) { start, i - start };
			if (i == len || t[i] == '?') {
				plen = i;
				break;
			}
		}
	if (plen == 0) {
		/* Not a path of floe's: the query as it is, for the caller. */
		q = memchr(t, '?', len);
		r->query = q != NULL ? (struct rest_span) { (size_t)(q - t) + 1,
			len - (size_t)(q - t) - 1 } :
				       (struct rest_span) { len, 0 };
		return REST_NOTFOUND;
	}
	r->query = plen < len ?
	    (struct rest_span) { plen + 1, len - plen - 1 } :
	    (struct rest_span) { len, 0 };

	if (n == 1 && SEG_IS(t, seg[0], "config"))
		shape = SH_CONFIG;
	else if (n == 2 && SEG_IS(t, seg[0], "oauth") &&
	    SEG_IS(t, seg[1], "tokens"))
		shape = SH_TOKEN;
	else if ((shape = rest_match(t, seg, n)) < 0 &&
	    (shape = rest_match(t, seg + 1, n - 1)) >= 0) {
		r->prefix = seg[0];
		k = 1;
	}
	if (shape < 0)
		return REST_NOTFOUND;

	ms = &rest_shapes[shape];
	switch (m) {
	case REST_M_GET:
		op = ms->get;
		break;
	case REST_M_HEAD:
		op = ms->head;
		break;
	case REST_M_POST:
		op = ms->post;
		break;
	case REST_M_DELETE:
		op = ms->del;
		break;
	default:
		op = REST_NONE;
		break;
	}
	if (op == REST_NONE) {
		snprintf(r->allow, sizeof(r->allow), "%s%s%s%s",
		    ms->get != REST_NONE ? "GET, " : "",
		    ms->head != REST_NONE ? "HEAD, " : "",
		    ms->post != REST_NONE ? "POST, " : "",
		    ms->del != REST_NONE ? "DELETE, " : "");
		/* Drop the last ", ": a path always has a method. */
		r->allow[strlen(r->allow) - 2] = '\0';
		return REST_BADMETHOD;
	}

	oi = &rest_ops[op];
	r->op = op;
	r->scope = oi->scope;
	r->write = oi->write;
	r->rest = (struct rest_span) { seg[k].off - 1, plen - seg[k].off + 1 };

	/* Every path with {namespace} starts "namespaces/{namespace}". */
	if (n - k < 2 || !SEG_IS(t, seg[k], "namespaces"))
		return REST_OK;
	r->ns_raw = seg[k + 1];
	seplen = sep != NULL ? strlen(sep) : 0;
	if ((rc = rest_decode(t + r->ns_raw.off, r->ns_raw.len, sep, seplen,
		 r->ns, &r->ns_len, &r->nlevels)) != REST_OK)
		return rc;
	if (n - k < 4)
		return REST_OK;
	r->table_raw = seg[k + 3];
	if ((rc = rest_decode(t + r->table_raw.off, r->table_raw.len, NULL, 0,
		 r->table, &r->table_len, NULL)) != REST_OK)
		return rc;
	r->has_table = true;
	if (shape == SH_PLAN_ID)
		r->plan_id = seg[k + 5];
	return REST_OK;
}

/* The spec's operationId of OP. */
const char *
rest_op_name(enum rest_op op)
{
	if ((unsigned)op >= REST_NOPS)
		return "unknown";
	return rest_ops[op].name;
}

/* The endpoint string of OP for /v1/config, or NULL. */
const char *
rest_op_endpoint(enum rest_op op)
{
	if ((unsigned)op >= REST_NOPS)
		return NULL;
	return rest_ops[op].endpoint;
}

/* Whether the percent-encoded query key S[0..LEN) decodes to NAME. */
static bool
rest_key_is(const char *s, size_t len, const char *name)
{
	size_t i;
	int c, hi, lo;

	for (i = 0; i < len; i++, name++) {
		c = (unsigned char)s[i];
		if (c == '+')
			c = ' ';
		else if (c == '%') {
			if (len - i < 3 || (hi = units_hexval(s[i + 1])) < 0 ||
			    (lo = units_hexval(s[i + 2])) < 0)
				return false;
			c = hi << 4 | lo;
			i += 2;
		}
		if (*name == '\0' || (unsigned char)*name != c)
			return false;
	}
	return *name == '\0';
}

/*
 * Decode the first parameter NAME of QUERY into BUF. -1 when it is absent,
 * badly encoded, holds %00, or does not fit BUF with its NUL.
 */
int
rest_query_get(const char *query, size_t len, const char *name, char *buf,
    size_t buflen)
{
	const char *p = query, *end = query + len, *amp, *eq, *v;
	size_t o;
	int c, hi, lo;

	for (; p < end; p = amp + 1) {
		if ((amp = memchr(p, '&', (size_t)(end - p))) == NULL)
			amp = end;
		if ((eq = memchr(p, '=', (size_t)(amp - p))) == NULL)
			eq = amp;
		if (!rest_key_is(p, (size_t)(eq - p), name))
			continue;
		if (buflen == 0)
			return -1;
		for (o = 0, v = eq + (eq < amp); v < amp; v++) {
			c = (unsigned char)*v;
			if (c == '+')
				c = ' ';
			else if (c == '%') {
				if (amp - v < 3 ||
				    (hi = units_hexval(v[1])) < 0 ||
				    (lo = units_hexval(v[2])) < 0)
					return -1;
				c = hi << 4 | lo;
				v += 2;
			}
			if (c == '\0' || o + 1 >= buflen)
				return -1;
			buf[o++] = (char)c;
		}
		buf[o] = '\0';
		return 0;
	}
	return -1;
}
