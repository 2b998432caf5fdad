/*
 * floe: test_rest.c -- the Iceberg REST path grammar: all 35 operations with
 * and without a prefix, every wrong method of every path, namespace levels
 * and separators, percent-decoding, each error kind, and query parameters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "proxy/rest.h"

static const char *const test_mnames[] = { "GET", "HEAD", "POST", "PUT",
	"DELETE", "OTHER" };

/* One operation of the spec as a client sends it (path after "/v1"). */
struct op_case {
	enum rest_method m;
	const char *path;
	enum rest_op op;
	const char *name;
	const char *endpoint;
	enum rest_scope scope;
	bool write;
	bool ns; /* the path names namespace "db" */
	bool table; /* ... and object "t" */
	bool plan; /* ... and plan-id "p1" */
};

#define N "/namespaces/db"
#define T N "/tables/t"
#define NE "/v1/{prefix}/namespaces/{namespace}"
#define TE NE "/tables/{table}"

static const struct op_case op_cases[] = {
	{ REST_M_GET, "/config", REST_GET_CONFIG, "getConfig", NULL,
	    REST_SCOPE_CATALOG, false, false, false, false },
	{ REST_M_POST, "/oauth/tokens", REST_GET_TOKEN, "getToken", NULL,
	    REST_SCOPE_CATALOG, false, false, false, false },
	{ REST_M_GET, "/namespaces", REST_LIST_NAMESPACES, "listNamespaces",
	    "GET /v1/{prefix}/namespaces", REST_SCOPE_CATALOG, false, false,
	    false, false },
	{ REST_M_POST, "/namespaces", REST_CREATE_NAMESPACE, "createNamespace",
	    "POST /v1/{prefix}/namespaces", REST_SCOPE_CATALOG, true, false,
	    false, false },
	{ REST_M_GET, N, REST_LOAD_NAMESPACE, "loadNamespaceMetadata",
	    "GET " NE, REST_SCOPE_NAMESPACE, false, true, false, false },
	{ REST_M_HEAD, N, REST_NAMESPACE_EXISTS, "namespaceExists", "HEAD " NE,
	    REST_SCOPE_NAMESPACE, false, true, false, false },
	{ REST_M_DELETE, N, REST_DROP_NAMESPACE, "dropNamespace", "DELETE " NE,
	    REST_SCOPE_NAMESPACE, true, true, false, false },
	{ REST_M_POST, N "/properties", REST_UPDATE_PROPERTIES,
	    "updateProperties", "POST " NE "/properties", REST_SCOPE_NAMESPACE,
	    true, true, false, false },
	{ REST_M_GET, N "/tables", REST_LIST_TABLES, "listTables",
	    "GET " NE "/tables", REST_SCOPE_NAMESPACE, false, true, false,
	    false },
	{ REST_M_POST, N "/tables", REST_CREATE_TABLE, "createTable",
	    "POST " NE "/tables", REST_SCOPE_BODY, true, true, false, false },
	{ REST_M_POST, N "/register", REST_REGISTER_TABLE, "registerTable",
	    "POST " NE "/register", REST_SCOPE_BODY, true, true, false, false },
	{ REST_M_GET, T, REST_LOAD_TABLE, "loadTable", "GET " TE,
	    REST_SCOPE_TABLE, false, true, true, false },
	{ REST_M_POST, T, REST_UPDATE_TABLE, "updateTable", "POST " TE,
	    REST_SCOPE_TABLE, true, true, true, false },
	{ REST_M_DELETE, T, REST_DROP_TABLE, "dropTable", "DELETE " TE,
	    REST_SCOPE_TABLE, true, true, true, false },
	{ REST_M_HEAD, T, REST_TABLE_EXISTS, "tableExists", "HEAD " TE,
	    REST_SCOPE_TABLE, false, true, true, false },
	{ REST_M_POST, T "/unregister", REST_UNREGISTER_TABLE,
	    "unregisterTable", "POST " TE "/unregister", REST_SCOPE_TABLE, true,
	    true, true, false },
	{ REST_M_GET, T "/credentials", REST_LOAD_CREDENTIALS,
	    "loadCredentials", "GET " TE "/credentials", REST_SCOPE_TABLE,
	    false, true, true, false },
	{ REST_M_POST, T "/sign", REST_SIGN, "signRequest", "POST " TE "/sign",
	    REST_SCOPE_TABLE, false, true, true, false },
	{ REST_M_POST, T "/plan", REST_PLAN, "planTableScan",
	    "POST " TE "/plan", REST_SCOPE_TABLE, false, true, true, false },
	{ REST_M_GET, T "/plan/p1", REST_FETCH_PLAN, "fetchPlanningResult",
	    "GET " TE "/plan/{plan-id}", REST_SCOPE_TABLE, false, true, true,
	    true },
	{ REST_M_DELETE, T "/plan/p1", REST_CANCEL_PLAN, "cancelPlanning",
	    "DELETE " TE "/plan/{plan-id}", REST_SCOPE_TABLE, false, true, true,
	    true },
	{ REST_M_POST, T "/tasks", REST_FETCH_TASKS, "fetchScanTasks",
	    "POST " TE "/tasks", REST_SCOPE_TABLE, false, true, true, false },
	{ REST_M_POST, T "/metrics", REST_REPORT_METRICS, "reportMetrics",
	    "POST " TE "/metrics", REST_SCOPE_TABLE, false, true, true, false },
	{ REST_M_POST, "/tables/rename", REST_RENAME_TABLE, "renameTable",
	    "POST /v1/{prefix}/tables/rename", REST_SCOPE_BODY, true, false,
	    false, false },
	{ REST_M_POST, "/transactions/commit", REST_COMMIT_TRANSACTION,
	    "commitTransaction", "POST /v1/{prefix}/transactions/commit",
	    REST_SCOPE_BODY, true, false, false, false },
	{ REST_M_GET, N "/views", REST_LIST_VIEWS, "listViews",
	    "GET " NE "/views", REST_SCOPE_NAMESPACE, false, true, false,
	    false },
	{ REST_M_POST, N "/views", REST_CREATE_VIEW, "createView",
	    "POST " NE "/views", REST_SCOPE_VIEW, true, true, false, false },
	{ REST_M_GET, N "/views/t", REST_LOAD_VIEW, "loadView",
	    "GET " NE "/views/{view}", REST_SCOPE_VIEW, false, true, true,
	    false },
	{ REST_M_POST, N "/views/t", REST_REPLACE_VIEW, "replaceView",
	    "POST " NE "/views/{view}", REST_SCOPE_VIEW, true, true, true,
	    false },
	{ REST_M_DELETE, N "/views/t", REST_DROP_VIEW, "dropView",
	    "DELETE " NE "/views/{view}", REST_SCOPE_VIEW, true, true, true,
	    false },
	{ REST_M_HEAD, N "/views/t", REST_VIEW_EXISTS, "viewExists",
	    "HEAD " NE "/views/{view}", REST_SCOPE_VIEW, false, true, true,
	    false },
	{ REST_M_POST, "/views/rename", REST_RENAME_VIEW, "renameView",
	    "POST /v1/{prefix}/views/rename", REST_SCOPE_VIEW, true, false,
	    false, false },
	{ REST_M_POST, N "/register-view", REST_REGISTER_VIEW, "registerView",
	    "POST " NE "/register-view", REST_SCOPE_VIEW, true, true, false,
	    false },
	{ REST_M_GET, N "/functions", REST_LIST_FUNCTIONS, "listFunctions",
	    "GET " NE "/functions", REST_SCOPE_VIEW, false, true, false,
	    false },
	{ REST_M_GET, N "/functions/t", REST_LOAD_FUNCTION, "loadFunction",
	    "GET " NE "/functions/{function}", REST_SCOPE_VIEW, false, true,
	    true, false },
};

/* Whether span S of target T holds exactly WANT. */
static bool
span_is(const char *t, struct rest_span s, const char *want)
{
	return s.len == strlen(want) && memcmp(t + s.off, want, s.len) == 0;
}

/* Check one operation parsed from TARGET, with prefix PFX ("" if none). */
static void
check_op(const struct op_case *c, const char *target, const char *pfx)
{
	struct rest_req r;
	int rc;

	rc = rest_parse(c->m, target, strlen(target), NULL, &r);
	if (rc != REST_OK)
		fail_msg("%s %s: rc %d", test_mnames[c->m], target, rc);
	if (r.op != c->op)
		fail_msg("%s %s: op %s", test_mnames[c->m], target,
		    rest_op_name(r.op));
	assert_string_equal(rest_op_name(r.op), c->name);
	if (c->endpoint == NULL)
		assert_null(rest_op_endpoint(r.op));
	else
		assert_string_equal(rest_op_endpoint(r.op), c->endpoint);
	assert_int_equal(r.scope, c->scope);
	assert_int_equal(r.write, c->write);
	assert_true(span_is(target, r.prefix, pfx));
	assert_true(span_is(target, r.rest, c->path));
	assert_int_equal(r.query.len, 0);
	assert_int_equal(r.query.off, strlen(target));
	if (c->ns) {
		assert_true(span_is(target, r.ns_raw, "db"));
		assert_string_equal(r.ns, "db");
		assert_int_equal(r.ns_len, 2);
		assert_int_equal(r.nlevels, 1);
	} else {
		assert_int_equal(r.ns_raw.len, 0);
		assert_int_equal(r.nlevels, 0);
		assert_int_equal(r.ns_len, 0);
	}
	assert_int_equal(r.has_table, c->table);
	if (c->table) {
		assert_true(span_is(target, r.table_raw, "t"));
		assert_string_equal(r.table, "t");
		assert_int_equal(r.table_len, 1);
	} else
		assert_int_equal(r.table_raw.len, 0);
	if (c->plan)
		assert_true(span_is(target, r.plan_id, "p1"));
	else
		assert_int_equal(r.plan_id.len, 0);
}

/* Every operation, without a prefix and under two prefixes. */
static void
test_rest_ops(void **state __unused)
{
	static const char *const pfxs[] = { "warehouse", "p%20x" };
	char target[256];
	size_t i, j;

	for (i = 0; i < nitems(op_cases); i++) {
		const struct op_case *c = &op_cases[i];

		snprintf(target, sizeof(target), "/v1%s", c->path);
		check_op(c, target, "");
		if (c->endpoint == NULL)
			continue; /* config and token have no prefix */
		for (j = 0; j < nitems(pfxs); j++) {
			snprintf(target, sizeof(target), "/v1/%s%s", pfxs[j],
			    c->path);
			check_op(c, target, pfxs[j]);
		}
	}
}

/* Config and token exist only without a prefix. */
static void
test_rest_noprefix_only(void **state __unused)
{
	static const char *const paths[] = { "/v1/p/config",
		"/v1/p/oauth/tokens" };
	struct rest_req r;
	size_t i;

	for (i = 0; i < nitems(paths); i++) {
		assert_int_equal(rest_parse(REST_M_GET, paths[i],
				     strlen(paths[i]), NULL, &r),
		    REST_NOTFOUND);
		assert_int_equal(rest_parse(REST_M_POST, paths[i],
				     strlen(paths[i]), NULL, &r),
		    REST_NOTFOUND);
	}
}

/* Every method a path does not have is 405, with and without prefix. */
static void
test_rest_badmethod(void **state __unused)
{
	char target[256];
	struct rest_req r;
	size_t i, j, p, n405 = 0;
	int m, rc;
	bool has;

	for (i = 0; i < nitems(op_cases); i++) {
		for (j = 0; j < i; j++)
			if (strcmp(op_cases[j].path, op_cases[i].path) == 0)
				break;
		if (j < i)
			continue; /* this path was done */
		for (m = REST_M_GET; m <= REST_M_OTHER; m++) {
			has = false;
			for (j = 0; j < nitems(op_cases); j++)
				if (op_cases[j].m == (enum rest_method)m &&
				    strcmp(op_cases[j].path,
					op_cases[i].path) == 0)
					has = true;
			if (has)
				continue;
			for (p = 0; p < 2; p++) {
				if (p == 1 && op_cases[i].endpoint == NULL)
					continue;
				snprintf(target, sizeof(target), "/v1%s%s",
				    p ? "/pfx" : "", op_cases[i].path);
				rc = rest_parse((enum rest_method)m, target,
				    strlen(target), NULL, &r);
				if (rc != REST_BADMETHOD)
					fail_msg("%s %s: rc %d", test_mnames[m],
					    target, rc);
				n405++;
			}
		}
	}
	/* 23 paths x 6 methods - 35 operations, 21 paths with a prefix. */
	assert_int_equal(n405, (6 * 23 - 35) + (6 * 21 - 33));
}

/* One parse with what it must give. */
struct parse_case {
	enum rest_method m;
	const char *target;
	const char *sep;
	int rc;
	enum rest_op op;
	const char *prefix;
	const char *ns; /* decoded, levels split by 0x1f */
	int nlevels;
	const char *table; /* decoded, NULL if none */
	const char *query;
	const char *rest;
};

/* A parse that fails with RC. */
#define ERR(m, t, sep, rc)                                                     \
	{                                                                      \
		m, t, sep, rc, REST_NONE, NULL, NULL, 0, NULL, NULL, NULL      \
	}

static const struct parse_case parse_cases[] = {
	/* Levels: %1F in either case, the extra separator raw or encoded. */
	{ REST_M_GET, "/v1/namespaces/a%1Fb/tables/t", NULL, REST_OK,
	    REST_LOAD_TABLE, "",
	    "a\x1f"
	    "b",
	    2, "t", "", "/namespaces/a%1Fb/tables/t" },
	{ REST_M_GET, "/v1/p/namespaces/a%1fb%1Fc", NULL, REST_OK,
	    REST_LOAD_NAMESPACE, "p",
	    "a\x1f"
	    "b\x1f"
	    "c",
	    3, NULL, "", "/namespaces/a%1fb%1Fc" },
	{ REST_M_GET, "/v1/namespaces/a.b/tables/t", ".", REST_OK,
	    REST_LOAD_TABLE, "",
	    "a\x1f"
	    "b",
	    2, "t", "", NULL },
	{ REST_M_GET, "/v1/namespaces/a%2Eb%2ec/tables/t", ".", REST_OK,
	    REST_LOAD_TABLE, "",
	    "a\x1f"
	    "b\x1f"
	    "c",
	    3, "t", "", NULL },
	{ REST_M_GET, "/v1/namespaces/a%1Fb.c/tables/x.y", ".", REST_OK,
	    REST_LOAD_TABLE, "",
	    "a\x1f"
	    "b\x1f"
	    "c",
	    3, "x.y", "", NULL },
	{ REST_M_GET, "/v1/namespaces/a.b/tables/t", NULL, REST_OK,
	    REST_LOAD_TABLE, "", "a.b", 1, "t", "", NULL },
	{ REST_M_GET, "/v1/namespaces/a::b:c/tables/t", "::", REST_OK,
	    REST_LOAD_TABLE, "",
	    "a\x1f"
	    "b:c",
	    2, "t", "", NULL },
	{ REST_M_GET, "/v1/namespaces/a:::b/tables/t", "::", REST_OK,
	    REST_LOAD_TABLE, "",
	    "a\x1f"
	    ":b",
	    2, "t", "", NULL },
	{ REST_M_GET, "/v1/namespaces/a.b/tables/t", "", REST_OK,
	    REST_LOAD_TABLE, "", "a.b", 1, "t", "", NULL },
	/* Spaces: '+' (Java's URLEncoder) and %20 (encodeURIComponent). */
	{ REST_M_GET, "/v1/namespaces/my+db/tables/my+t", NULL, REST_OK,
	    REST_LOAD_TABLE, "", "my db", 1, "my t", "", NULL },
	{ REST_M_GET, "/v1/namespaces/my%20db/tables/my%20t", NULL, REST_OK,
	    REST_LOAD_TABLE, "", "my db", 1, "my t", "", NULL },
	/* Encoded names: '/', '?', '%', '+', UTF-8 stay inside the name. */
	{ REST_M_GET, "/v1/namespaces/db/tables/a%2Fb%3Fc%25d%2Be", NULL,
	    REST_OK, REST_LOAD_TABLE, "", "db", 1, "a/b?c%d+e", "", NULL },
	{ REST_M_HEAD, "/v1/namespaces/caf%C3%A9/views/%C3%A9t%C3%A9", NULL,
	    REST_OK, REST_VIEW_EXISTS, "", "caf\xc3\xa9", 1,
	    "\xc3\xa9t\xc3\xa9", "", NULL },
	{ REST_M_DELETE, "/v1/p/namespaces/db/tables/t/plan/p%2F1", NULL,
	    REST_OK, REST_CANCEL_PLAN, "p", "db", 1, "t", "", NULL },
	/* Queries: the span excludes '?'; the path stops at the first '?'. */
	{ REST_M_GET, "/v1/namespaces?parent=a%1Fb&pageToken=", NULL, REST_OK,
	    REST_LIST_NAMESPACES, "", NULL, 0, NULL,
	    "parent=a%1Fb&pageToken=", "/namespaces" },
	{ REST_M_GET, "/v1/config?warehouse=w?x", NULL, REST_OK,
	    REST_GET_CONFIG, "", NULL, 0, NULL, "warehouse=w?x", "/config" },
	{ REST_M_GET, "/v1/p/namespaces/db/tables/t?", NULL, REST_OK,
	    REST_LOAD_TABLE, "p", "db", 1, "t", "", "/namespaces/db/tables/t" },
	{ REST_M_GET, "/v1/namespaces/db/tables/t?snapshots=refs", NULL,
	    REST_OK, REST_LOAD_TABLE, "", "db", 1, "t", "snapshots=refs",
	    NULL },
	/* A keyword as prefix, where the rest is not itself a path. */
	{ REST_M_GET, "/v1/namespaces/namespaces/db/tables", NULL, REST_OK,
	    REST_LIST_TABLES, "namespaces", "db", 1, NULL, "",
	    "/namespaces/db/tables" },
	{ REST_M_GET, "/v1/tables/namespaces/db/tables/t", NULL, REST_OK,
	    REST_LOAD_TABLE, "tables", "db", 1, "t", "", NULL },
	{ REST_M_GET, "/v1/config/namespaces", NULL, REST_OK,
	    REST_LIST_NAMESPACES, "config", NULL, 0, NULL, "", NULL },
	{ REST_M_DELETE, "/v1/oauth/namespaces/db", NULL, REST_OK,
	    REST_DROP_NAMESPACE, "oauth", "db", 1, NULL, "", NULL },
	{ REST_M_POST, "/v1/namespaces/tables/rename", NULL, REST_OK,
	    REST_RENAME_TABLE, "namespaces", NULL, 0, NULL, "",
	    "/tables/rename" },
	{ REST_M_POST, "/v1/transactions/transactions/commit", NULL, REST_OK,
	    REST_COMMIT_TRANSACTION, "transactions", NULL, 0, NULL, "", NULL },
	{ REST_M_GET, "/v1/views/namespaces/db/views/v", NULL, REST_OK,
	    REST_LOAD_VIEW, "views", "db", 1, "v", "", NULL },
	/* ... and where it is: the reading without a prefix wins. */
	{ REST_M_GET, "/v1/namespaces/namespaces", NULL, REST_OK,
	    REST_LOAD_NAMESPACE, "", "namespaces", 1, NULL, "", NULL },
	{ REST_M_GET, "/v1/namespaces/namespaces/tables", NULL, REST_OK,
	    REST_LIST_TABLES, "", "namespaces", 1, NULL, "", NULL },
	{ REST_M_GET, "/v1/namespaces/tables/tables/views", NULL, REST_OK,
	    REST_LOAD_TABLE, "", "tables", 1, "views", "", NULL },
	{ REST_M_POST, "/v1/namespaces/namespaces", NULL, REST_BADMETHOD,
	    REST_NONE, "", NULL, 0, NULL, "", NULL },
	/* Unknown paths, empty segments and too many segments. */
	ERR(REST_M_GET, "/v1", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v2/namespaces", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/namespaces", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "v1/namespaces", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/foo", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/Namespaces", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/config/x", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/namespaces/", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/namespaces/db/", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1//namespaces", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/p//namespaces", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/namespaces//tables", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/namespaces/db/tables//", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/p/q/namespaces", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/namespaces/db/unknown", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/namespaces/db/tables/t/unknown", NULL,
	    REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/namespaces/db/views/v/plan", NULL, REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/p/namespaces/db/tables/t/plan/p1/x", NULL,
	    REST_NOTFOUND),
	ERR(REST_M_GET, "/v1/p/q/namespaces/db/tables/t/plan/p1", NULL,
	    REST_NOTFOUND),
	ERR(REST_M_POST, "/v1/tables/renamed", NULL, REST_NOTFOUND),
	ERR(REST_M_POST, "/v1/p/transactions", NULL, REST_NOTFOUND),
	ERR(REST_M_POST, "/v1/%6Eamespaces", NULL, REST_NOTFOUND),
	/* Bad encodings and control bytes. */
	ERR(REST_M_GET, "/v1/namespaces/a%ZZ", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a%4", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a%", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a%4/tables", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/db/tables/t%G1", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/db/tables/t%", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a%00b", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/db/tables/a%00", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a%0Ab", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a\tb", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/db/tables/a%1Fb", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/db/tables/a%0D", NULL, REST_MALFORMED),
	/* Empty levels. */
	ERR(REST_M_GET, "/v1/namespaces/%1Fa", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a%1F", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a%1F%1Fb", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/%1F", NULL, REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a..b/tables/t", ".", REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a./tables/t", ".", REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/%2Ea/tables/t", ".", REST_MALFORMED),
	ERR(REST_M_GET, "/v1/namespaces/a.%1Fb/tables/t", ".", REST_MALFORMED),
	/* The method is checked before the names. */
	ERR(REST_M_PUT, "/v1/namespaces/a%ZZ", NULL, REST_BADMETHOD),
	ERR(REST_M_OTHER, "/v1/config", NULL, REST_BADMETHOD),
};

/* Paths of every kind, what they hold and every error kind. */
static void
test_rest_parse(void **state __unused)
{
	struct rest_req r;
	size_t i;
	int rc;

	for (i = 0; i < nitems(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		const char *t = c->target;

		rc = rest_parse(c->m, t, strlen(t), c->sep, &r);
		if (rc != c->rc)
			fail_msg("%s: rc %d, want %d", t, rc, c->rc);
		if (rc != REST_OK)
			continue;
		if (r.op != c->op)
			fail_msg("%s: op %s", t, rest_op_name(r.op));
		if (!span_is(t, r.prefix, c->prefix))
			fail_msg("%s: prefix %.*s", t, (int)r.prefix.len,
			    t + r.prefix.off);
		if (c->ns != NULL) {
			assert_string_equal(r.ns, c->ns);
			assert_int_equal(r.ns_len, strlen(c->ns));
		} else
			assert_int_equal(r.ns_len, 0);
		assert_int_equal(r.nlevels, c->nlevels);
		assert_int_equal(r.has_table, c->table != NULL);
		if (c->table != NULL) {
			assert_string_equal(r.table, c->table);
			assert_int_equal(r.table_len, strlen(c->table));
		}
		if (!span_is(t, r.query, c->query))
			fail_msg("%s: query %.*s", t, (int)r.query.len,
			    t + r.query.off);
		if (c->rest != NULL && !span_is(t, r.rest, c->rest))
			fail_msg("%s: rest %.*s", t, (int)r.rest.len,
			    t + r.rest.off);
	}
}

/* Raw spans point at the bytes as sent, plan-id included. */
static void
test_rest_raw_spans(void **state __unused)
{
	const char *t = "/v1/w%20h/namespaces/a+b%1Fc/tables/t%2Ex/plan/id%2F9"
			"?x=1";
	struct rest_req r;

	assert_int_equal(rest_parse(REST_M_GET, t, strlen(t), NULL, &r),
	    REST_OK);
	assert_int_equal(r.op, REST_FETCH_PLAN);
	assert_true(span_is(t, r.prefix, "w%20h"));
	assert_true(span_is(t, r.ns_raw, "a+b%1Fc"));
	assert_true(span_is(t, r.table_raw, "t%2Ex"));
	assert_true(span_is(t, r.plan_id, "id%2F9"));
	assert_true(span_is(t, r.query, "x=1"));
	assert_true(
	    span_is(t, r.rest, "/namespaces/a+b%1Fc/tables/t%2Ex/plan/id%2F9"));
	assert_string_equal(r.ns,
	    "a b\x1f"
	    "c");
	assert_string_equal(r.table, "t.x");
	/* The target need not be NUL-terminated: only LEN bytes count. */
	assert_int_equal(rest_parse(REST_M_GET, "/v1/config/xyz", 10, NULL, &r),
	    REST_OK);
	assert_int_equal(r.op, REST_GET_CONFIG);
}

/* Names up to REST_NAME_MAX - 1 decoded bytes fit; longer is 414. */
static void
test_rest_toolong(void **state __unused)
{
	static char t[8 * REST_NAME_MAX];
	struct rest_req r;
	size_t n;

	/* A table of 1023 bytes fits, 1024 does not. */
	n = (size_t)snprintf(t, sizeof(t), "/v1/namespaces/db/tables/");
	memset(t + n, 'x', REST_NAME_MAX - 1);
	assert_int_equal(rest_parse(REST_M_GET, t, n + REST_NAME_MAX - 1, NULL,
			     &r),
	    REST_OK);
	assert_int_equal(r.table_len, REST_NAME_MAX - 1);
	memset(t + n, 'x', REST_NAME_MAX);
	assert_int_equal(rest_parse(REST_M_GET, t, n + REST_NAME_MAX, NULL, &r),
	    REST_TOOLONG);

	/* The same for a namespace, counted after decoding. */
	n = (size_t)snprintf(t, sizeof(t), "/v1/namespaces/");
	memset(t + n, 'y', REST_NAME_MAX - 1);
	assert_int_equal(rest_parse(REST_M_GET, t, n + REST_NAME_MAX - 1, NULL,
			     &r),
	    REST_OK);
	assert_int_equal(r.ns_len, REST_NAME_MAX - 1);
	for (size_t i = 0; i < REST_NAME_MAX; i++)
		memcpy(t + n + 3 * i, "%61", 3);
	assert_int_equal(rest_parse(REST_M_GET, t, n + 3 * REST_NAME_MAX, NULL,
			     &r),
	    REST_TOOLONG);

	/* Separators count too: 512 levels of one byte need 1023. */
	for (size_t i = 0; i < 512; i++)
		memcpy(t + n + 4 * i, "a%1F", 4);
	assert_int_equal(rest_parse(REST_M_GET, t, n + 4 * 512 - 3, NULL, &r),
	    REST_OK);
	assert_int_equal(r.nlevels, 512);
	assert_int_equal(r.ns_len, REST_NAME_MAX - 1);
	memcpy(t + n + 4 * 512 - 3, "%1Fa", 4);
	assert_int_equal(rest_parse(REST_M_GET, t, n + 4 * 512 + 1, NULL, &r),
	    REST_TOOLONG);
}

/* Names, endpoints and out-of-range operations. */
static void
test_rest_op_names(void **state __unused)
{
	int op, i, nep = 0;

	for (op = REST_GET_CONFIG; op < REST_NOPS; op++) {
		assert_non_null(rest_op_name((enum rest_op)op));
		if (rest_op_endpoint((enum rest_op)op) == NULL)
			continue;
		nep++;
		for (i = REST_GET_CONFIG; i < op; i++)
			if (rest_op_endpoint((enum rest_op)i) != NULL)
				assert_string_not_equal(rest_op_endpoint(
							    (enum rest_op)op),
				    rest_op_endpoint((enum rest_op)i));
	}
	assert_int_equal(nep, 33);
	assert_string_equal(rest_op_name(REST_NOPS), "unknown");
	assert_null(rest_op_endpoint(REST_NOPS));
	assert_null(rest_op_endpoint(REST_NONE));
}

/* One query lookup. */
struct query_case {
	const char *query;
	const char *name;
	size_t buflen;
	int rc;
	const char *value;
};

static const struct query_case query_cases[] = {
	{ "warehouse=abc", "warehouse", 64, 0, "abc" },
	{ "a=1&warehouse=x+y%20z", "warehouse", 64, 0, "x y z" },
	{ "pageToken=", "pageToken", 64, 0, "" },
	{ "pageToken", "pageToken", 64, 0, "" },
	{ "pageToken&pageSize=5", "pageSize", 64, 0, "5" },
	{ "pageSize=10&pageSize=20", "pageSize", 64, 0, "10" },
	{ "parent=a%1Fb", "parent", 64, 0,
	    "a\x1f"
	    "b" },
	{ "parent=a%2eb", "parent", 64, 0, "a.b" },
	{ "page%54oken=t", "pageToken", 64, 0, "t" },
	{ "a=b=c", "a", 64, 0, "b=c" },
	{ "&&a=1&", "a", 64, 0, "1" },
	{ "snapshots=refs&x", "x", 64, 0, "" },
	{ "abc=3", "abc", 4, 0, "3" },
	{ "abc=abc", "abc", 4, 0, "abc" },
	{ "abc=abcd", "abc", 4, -1, NULL },
	{ "abc=", "abc", 0, -1, NULL },
	{ "warehouse=abc", "house", 64, -1, NULL },
	{ "pageTokenX=1", "pageToken", 64, -1, NULL },
	{ "page=1", "pageToken", 64, -1, NULL },
	{ "", "a", 64, -1, NULL },
	{ "x=%ZZ", "x", 64, -1, NULL },
	{ "x=%0", "x", 64, -1, NULL },
	{ "x=%", "x", 64, -1, NULL },
	{ "x=%00", "x", 64, -1, NULL },
	{ "x%=1", "x", 64, -1, NULL },
};

/* Query parameters: decoding, absence, first wins, buffer bounds. */
static void
test_rest_query(void **state __unused)
{
	char buf[64];
	size_t i;
	int rc;

	for (i = 0; i < nitems(query_cases); i++) {
		const struct query_case *c = &query_cases[i];

		memset(buf, '#', sizeof(buf));
		rc = rest_query_get(c->query, strlen(c->query), c->name, buf,
		    c->buflen);
		if (rc != c->rc)
			fail_msg("%s [%s]: rc %d", c->query, c->name, rc);
		if (c->value != NULL)
			assert_string_equal(buf, c->value);
	}
	/* Only LEN bytes of the query are read. */
	assert_int_equal(rest_query_get("a=12&b=3", 3, "a", buf, sizeof(buf)),
	    0);
	assert_string_equal(buf, "1");
	assert_int_equal(rest_query_get("a=12&b=3", 4, "b", buf, sizeof(buf)),
	    -1);
}

/*
 * The path is split at '/' and ends at the first '?' in one pass, 16
 * bytes at a time: for names of 1 to 40 bytes (segments across every
 * block boundary), with and without a prefix, a LoadTable parses with
 * its names; a '?' cut in anywhere parses as the path before it, the
 * query after it; a trailing '/' or a '//' is not a path of floe's, and
 * its query is still found.
 */
static void
test_rest_split(void **state __unused)
{
	char ns[48], tb[48], path[160], t[200];
	struct rest_req r, w;
	size_t nl, pl, k, plen;
	int rc, wrc, pfx;

	for (nl = 1; nl <= 40; nl++)
		for (pfx = 0; pfx < 2; pfx++) {
			memset(ns, 'n', nl);
			ns[nl] = '\0';
			memset(tb, 't', 41 - nl);
			tb[41 - nl] = '\0';
			snprintf(path, sizeof(path),
			    "/v1/%snamespaces/%s/tables/%s", pfx ? "pfx/" : "",
			    ns, tb);
			plen = strlen(path);
			assert_int_equal(rest_parse(REST_M_GET, path, plen,
					     NULL, &r),
			    REST_OK);
			assert_int_equal(r.op, REST_LOAD_TABLE);
			assert_string_equal(r.ns, ns);
			assert_string_equal(r.table, tb);
			assert_int_equal(r.query.off, plen);
			assert_int_equal(r.query.len, 0);
			assert_int_equal(r.prefix.len, pfx ? 3 : 0);
			/* A '?' anywhere: the path before it, the query after.
			 */
			for (k = 0; k <= plen; k++) {
				snprintf(t, sizeof(t), "%.*s?x/y?%s", (int)k,
				    path, path + k);
				rc = rest_parse(REST_M_GET, t, strlen(t), NULL,
				    &r);
				wrc = rest_parse(REST_M_GET, path, k, NULL, &w);
				if (rc != wrc || r.op != w.op ||
				    r.query.off != k + 1 ||
				    r.query.len != strlen(t) - k - 1)
					fail_msg("%s: %d %d, want %d %d", t, rc,
					    r.op, wrc, w.op);
				if (rc == REST_OK &&
				    (strcmp(r.ns, w.ns) != 0 ||
					strcmp(r.table, w.table) != 0 ||
					r.rest.off != w.rest.off ||
					r.rest.len != w.rest.len))
					fail_msg("%s: other names", t);
			}
			/* A trailing '/', a '//': none, the query still found.
			 */
			snprintf(t, sizeof(t), "%s/?q=1", path);
			assert_int_equal(rest_parse(REST_M_GET, t, strlen(t),
					     NULL, &r),
			    REST_NOTFOUND);
			assert_int_equal(r.query.off, plen + 2);
			assert_int_equal(r.query.len, 3);
			for (pl = 4; pl < plen; pl++) {
				if (path[pl] != '/')
					continue;
				snprintf(t, sizeof(t), "%.*s/%s", (int)pl, path,
				    path + pl);
				assert_int_equal(rest_parse(REST_M_GET, t,
						     strlen(t), NULL, &r),
				    REST_NOTFOUND);
				assert_int_equal(r.query.off, strlen(t));
			}
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rest_ops),
		cmocka_unit_test(test_rest_noprefix_only),
		cmocka_unit_test(test_rest_badmethod),
		cmocka_unit_test(test_rest_parse),
		cmocka_unit_test(test_rest_raw_spans),
		cmocka_unit_test(test_rest_toolong),
		cmocka_unit_test(test_rest_op_names),
		cmocka_unit_test(test_rest_query),
		cmocka_unit_test(test_rest_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
