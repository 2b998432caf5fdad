/*
 * floe: test_listing.c -- the merged listing: union of both catalogs,
 * de-duplication, bytewise order by levels then name, paging with floe's
 * tokens (also across inserts), and refusal of bad tokens and bad bodies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "lib/compat.h"
#include "proxy/listing.h"

/*
 * Merge A and B (NULL: that side has nothing) and render the page as
 * "ns.ns.name,..." into OUT, the token into TOKEN ("-" absent, "null").
 */
static void
merge(const char *kind, const char *a, const char *b, const char *token,
    long size, char *out, size_t outlen, char *next, size_t nextlen)
{
	const char *bodies[2] = { a, b };
	size_t lens[2] = { a ? strlen(a) : 0, b ? strlen(b) : 0 }, len, i, l;
	json_t *j, *arr, *it, *ns, *tok;
	char err[256], *res;

	res = listing_merge(kind, bodies, lens, token, size, &len, err,
	    sizeof(err));
	if (res == NULL)
		fail_msg("merge failed: %s", err);
	assert_int_equal(len, strlen(res));
	j = json_loads(res, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_object_size(j),
	    json_object_get(j, "next-page-token") ? 2 : 1);
	arr = json_object_get(j, kind);
	assert_true(json_is_array(arr));
	out[0] = '\0';
	json_array_foreach(arr, i, it) {
		if (i > 0)
			strlcat(out, ",", outlen);
		ns = strcmp(kind, "namespaces") == 0 ?
		    it :
		    json_object_get(it, "namespace");
		for (l = 0; l < json_array_size(ns); l++) {
			if (l > 0)
				strlcat(out, ".", outlen);
			strlcat(out, json_string_value(json_array_get(ns, l)),
			    outlen);
		}
		if (ns != it) {
			assert_int_equal(json_object_size(it), 2);
			strlcat(out, ":", outlen);
			strlcat(out,
			    json_string_value(json_object_get(it, "name")),
			    outlen);
		}
	}
	tok = json_object_get(j, "next-page-token");
	if (tok == NULL)
		strlcpy(next, "-", nextlen);
	else if (json_is_null(tok))
		strlcpy(next, "null", nextlen);
	else
		strlcpy(next, json_string_value(tok), nextlen);
	json_decref(j);
	free(res);
}

/* One merge of everything (no token, no size) and what it must list. */
struct merge_case {
	const char *kind;
	const char *a, *b;
	const char *want;
};

#define ID(ns, n) "{\"namespace\":" ns ",\"name\":\"" n "\"}"

static const struct merge_case merge_cases[] = {
	/* Overlap and duplicates, inside one side and across both. */
	{ "identifiers",
	    "{\"identifiers\":[" ID("[\"db\"]", "b") "," ID("[\"db\"]",
		"a") "," ID("[\"a\"]", "z") "," ID("[\"db\",\"sub\"]",
		"c") "," ID("[\"db\"]", "a") "]}",
	    "{\"identifiers\":[" ID("[\"db\"]", "a") "," ID("[\"db\"]",
		"c") "," ID("[\"db\",\"sub\"]", "a") "," ID("[\"db\"]",
		"b") "],\"next-page-token\":null}",
	    "a:z,db:a,db:b,db:c,db.sub:a,db.sub:c" },
	/* Bytewise: upper case first, a prefix first, UTF-8 last. */
	{ "identifiers",
	    "{\"identifiers\":[" ID("[\"db\"]", "a") "," ID("[\"db\"]",
		"B") "," ID("[\"db\"]", "\\u00e9") "," ID("[\"db\"]",
		"ab") "," ID("[\"db\"]", "a b") "]}",
	    NULL, "db:B,db:a,db:a b,db:ab,db:\xc3\xa9" },
	/* Levels before names; level by level, not the joined string. */
	{ "identifiers",
	    "{\"identifiers\":[" ID("[\"a\",\"b\"]", "a") "," ID("[\"a\"]",
		"z") "," ID("[\"ab\"]", "a") "]}",
	    "{\"identifiers\":[" ID("[\"a\",\"c\"]", "a") "," ID("[\"a b\"]",
		"a") "]}",
	    "a:z,a.b:a,a.c:a,a b:a,ab:a" },
	/* Same name, other namespace: both stay. */
	{ "identifiers", "{\"identifiers\":[" ID("[\"x\"]", "t") "]}",
	    "{\"identifiers\":[" ID("[\"y\"]", "t") "]}", "x:t,y:t" },
	/* A side with nothing, or no list at all. */
	{ "identifiers", NULL, "{\"identifiers\":[" ID("[\"x\"]", "t") "]}",
	    "x:t" },
	{ "identifiers", "{\"identifiers\":[" ID("[\"x\"]", "t") "]}", NULL,
	    "x:t" },
	{ "identifiers", NULL, NULL, "" },
	{ "identifiers", "{}", "{\"identifiers\":[]}", "" },
	/* Namespaces: parents before children, duplicates once. */
	{ "namespaces", "{\"namespaces\":[[\"a\"],[\"a\",\"b\"],[\"c\"]]}",
	    "{\"namespaces\":[[\"c\"],[\"a\"],[\"B\"],[\"a\",\"a\"]]}",
	    "B,a,a.a,a.b,c" },
	{ "namespaces", NULL, "{\"namespaces\":[]}", "" },
};

/* Union, de-duplication and order, without paging. */
static void
test_listing_merge(void **state __unused)
{
	char out[1024], next[256];
	size_t i;

	for (i = 0; i < nitems(merge_cases); i++) {
		const struct merge_case *c = &merge_cases[i];

		merge(c->kind, c->a, c->b, NULL, 0, out, sizeof(out), next,
		    sizeof(next));
		if (strcmp(out, c->want) != 0)
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, out,
			    c->want);
		assert_string_equal(next, "-");
	}
}

/* The exact answer: identifiers are rebuilt with only their two keys. */
static void
test_listing_exact(void **state __unused)
{
	const char *a = "{\"identifiers\":[{\"name\":\"t\",\"namespace\":"
			"[\"db\"],\"extra\":1}]}trailing";
	const char *bodies[2] = { a, NULL };
	size_t lens[2] = { strlen(a) - strlen("trailing"), 0 }, len;
	char err[128], *res;

	res = listing_merge("identifiers", bodies, lens, NULL, 0, &len, err,
	    sizeof(err));
	assert_non_null(res);
	assert_string_equal(res,
	    "{\"identifiers\":[{\"namespace\":[\"db\"],\"name\":\"t\"}]}");
	free(res);
	res = listing_merge("identifiers", bodies, lens, "", 0, &len, err,
	    sizeof(err));
	assert_non_null(res);
	assert_string_equal(res,
	    "{\"identifiers\":[{\"namespace\":[\"db\"],\"name\":\"t\"}],"
	    "\"next-page-token\":null}");
	free(res);
}

/* Three pages of 3 + 3 + 1 with tokens, then the same from a NULL token. */
static void
test_listing_pages(void **state __unused)
{
	const char *a =
	    "{\"identifiers\":[" ID("[\"db\"]", "g") "," ID("[\"db\"]",
		"a") "," ID("[\"db\"]", "e") "," ID("[\"db\"]", "c") "]}";
	const char *b =
	    "{\"identifiers\":[" ID("[\"db\"]", "b") "," ID("[\"db\"]",
		"d") "," ID("[\"db\"]", "f") "," ID("[\"db\"]", "c") "]}";
	char out[1024], tok1[256], tok2[256], tok3[256];

	merge("identifiers", a, b, "", 3, out, sizeof(out), tok1, sizeof(tok1));
	assert_string_equal(out, "db:a,db:b,db:c");
	assert_true(listing_token_is_valid("identifiers", tok1));
	assert_false(listing_token_is_valid("namespaces", tok1));
	merge("identifiers", a, b, tok1, 3, out, sizeof(out), tok2,
	    sizeof(tok2));
	assert_string_equal(out, "db:d,db:e,db:f");
	assert_string_not_equal(tok1, tok2);
	merge("identifiers", a, b, tok2, 3, out, sizeof(out), tok3,
	    sizeof(tok3));
	assert_string_equal(out, "db:g");
	assert_string_equal(tok3, "null");

	/* A NULL token with a size pages too; an exact fit ends with null. */
	merge("identifiers", a, b, NULL, 3, out, sizeof(out), tok3,
	    sizeof(tok3));
	assert_string_equal(out, "db:a,db:b,db:c");
	assert_string_equal(tok3, tok1);
	merge("identifiers", a, b, tok1, 4, out, sizeof(out), tok3,
	    sizeof(tok3));
	assert_string_equal(out, "db:d,db:e,db:f,db:g");
	assert_string_equal(tok3, "null");
	merge("identifiers", a, b, "", 7, out, sizeof(out), tok3, sizeof(tok3));
	assert_string_equal(out, "db:a,db:b,db:c,db:d,db:e,db:f,db:g");
	assert_string_equal(tok3, "null");
}

/* A token names an item, not an offset: inserts and deletes keep paging. */
static void
test_listing_pages_change(void **state __unused)
{
	const char *v1 = "{\"namespaces\":[[\"a\"],[\"b\"],[\"c\"],[\"d\"]]}";
	/* b is dropped, a0 and c0 are created between the two calls. */
	const char *v2 = "{\"namespaces\":[[\"a\"],[\"a0\"],[\"c\"],"
			 "[\"c\",\"0\"],[\"d\"]]}";
	char out[256], tok[256], tok2[256];

	merge("namespaces", v1, NULL, "", 2, out, sizeof(out), tok,
	    sizeof(tok));
	assert_string_equal(out, "a,b");
	merge("namespaces", NULL, v2, tok, 2, out, sizeof(out), tok2,
	    sizeof(tok2));
	assert_string_equal(out, "c,c.0");
	merge("namespaces", NULL, v2, tok2, 2, out, sizeof(out), tok,
	    sizeof(tok));
	assert_string_equal(out, "d");
	assert_string_equal(tok, "null");
}

/* Without a pageSize a paging client gets LISTING_PAGE_SIZE items. */
static void
test_listing_default_size(void **state __unused)
{
	char body[16384], out[16384], tok[256], tok2[256];
	size_t n, i;
	char *p;

	n = (size_t)snprintf(body, sizeof(body), "{\"identifiers\":[");
	for (i = 0; i < 150; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n,
		    "%s{\"namespace\":[\"db\"],\"name\":\"t%03zu\"}",
		    i ? "," : "", 149 - i);
	snprintf(body + n, sizeof(body) - n, "]}");

	merge("identifiers", body, NULL, "", 0, out, sizeof(out), tok,
	    sizeof(tok));
	for (i = 1, p = out; (p = strchr(p, ',')) != NULL; p++)
		i++;
	assert_int_equal(i, LISTING_PAGE_SIZE);
	assert_non_null(strstr(out, "db:t099"));
	assert_null(strstr(out, "db:t100"));
	merge("identifiers", body, NULL, tok, -1, out, sizeof(out), tok2,
	    sizeof(tok2));
	assert_int_equal(strncmp(out, "db:t100,", 8), 0);
	assert_non_null(strstr(out, "db:t149"));
	assert_string_equal(tok2, "null");
	/* No token and no size: everything, no token at all. */
	merge("identifiers", body, NULL, NULL, 0, out, sizeof(out), tok,
	    sizeof(tok));
	assert_non_null(strstr(out, "db:t000,db:t001"));
	assert_non_null(strstr(out, "db:t148,db:t149"));
	assert_string_equal(tok, "-");
}

/* Tokens floe did not issue are refused, by the check and the merge. */
static void
test_listing_bad_token(void **state __unused)
{
	static const char *const bad[] = {
		"!!!", /* not base64url */
		"abc=", /* padding is never issued */
		"a", /* one character cannot be base64 */
		"YWJj", /* "abc": not JSON */
		"eyJhIjoxfQ", /* {"a":1} */
		"W1siZGIiXV0", /* [["db"]]: a namespaces token */
		"W1siZGIiXSwxXQ", /* [["db"],1] */
		"W1tdLCJ0IiwxXQ", /* [[],"t",1] */
		"W1siZGIiXSwidCJd+", /* a valid token plus junk */
		"W1siZGIiXSwidCJf", /* [["db"],"t"_ */
	};
	const char *body = "{\"identifiers\":[" ID("[\"db\"]", "t") "]}";
	const char *bodies[2] = { body, NULL };
	size_t lens[2] = { strlen(body), 0 }, len, i;
	char err[128], *res;

	for (i = 0; i < nitems(bad); i++) {
		if (listing_token_is_valid("identifiers", bad[i]))
			fail_msg("token %s accepted", bad[i]);
		err[0] = '\0';
		res = listing_merge("identifiers", bodies, lens, bad[i], 10,
		    &len, err, sizeof(err));
		assert_null(res);
		assert_string_equal(err, "invalid page token");
	}
	/* [["db"]] with non-zero leftover bits: one item, one token. */
	assert_true(listing_token_is_valid("namespaces", "W1siZGIiXV0"));
	assert_false(listing_token_is_valid("namespaces", "W1siZGIiXV1"));
	/* [["db"],"t"] is well formed, and "" or NULL mean the start. */
	assert_true(listing_token_is_valid("identifiers", "W1siZGIiXSwidCJd"));
	assert_true(listing_token_is_valid("namespaces", "W1siZGIiXV0"));
	assert_true(listing_token_is_valid("identifiers", ""));
	assert_true(listing_token_is_valid("identifiers", NULL));
	res = listing_merge("identifiers", bodies, lens, "W1siZGIiXSwidCJd", 10,
	    &len, err, sizeof(err));
	assert_non_null(res);
	assert_string_equal(res,
	    "{\"identifiers\":[],\"next-page-token\":null}");
	free(res);
}

/* A body that is not a complete listing of its kind fails the merge. */
static void
test_listing_bad_body(void **state __unused)
{
	static const struct {
		const char *kind, *body, *err;
	} bad[] = {
		{ "identifiers", "not json", "second listing: " },
		{ "identifiers", "{\"identifiers\":[]} x", "second listing: " },
		{ "identifiers", "[]", "second listing: not a complete" },
		{ "identifiers", "{\"identifiers\":{}}",
		    "second listing: not a complete" },
		{ "identifiers",
		    "{\"identifiers\":[],\"next-page-token\":\"x\"}",
		    "second listing: not a complete" },
		{ "identifiers",
		    "{\"identifiers\":[{\"namespace\":\"db\","
		    "\"name\":\"t\"}]}",
		    "second listing: malformed identifier" },
		{ "identifiers", "{\"identifiers\":[{\"namespace\":[\"db\"]}]}",
		    "second listing: malformed identifier" },
		{ "identifiers", "{\"identifiers\":[[\"db\"]]}",
		    "second listing: malformed identifier" },
		{ "namespaces", "{\"namespaces\":[[\"a\",1]]}",
		    "second listing: malformed namespace" },
		{ "namespaces", "{\"namespaces\":[\"a\"]}",
		    "second listing: malformed namespace" },
		{ "tables", "{}", "unknown listing kind" },
	};
	const char *ok = "{\"identifiers\":[],\"next-page-token\":null}";
	const char *bodies[2];
	size_t lens[2], len, i;
	char err[256], *res;

	for (i = 0; i < nitems(bad); i++) {
		bodies[0] = ok;
		bodies[1] = bad[i].body;
		lens[0] = strlen(ok);
		lens[1] = strlen(bad[i].body);
		err[0] = '\0';
		res = listing_merge(bad[i].kind, bodies, lens, NULL, 0, &len,
		    err, sizeof(err));
		if (res != NULL)
			fail_msg("%s accepted: %s", bad[i].body, res);
		if (strncmp(err, bad[i].err, strlen(bad[i].err)) != 0)
			fail_msg("%s: err \"%s\"", bad[i].body, err);
	}
	/* The first side is named as such. */
	bodies[0] = "{";
	lens[0] = 1;
	bodies[1] = NULL;
	assert_null(listing_merge("namespaces", bodies, lens, NULL, 0, &len,
	    err, sizeof(err)));
	assert_int_equal(strncmp(err, "first listing: ", 15), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listing_merge),
		cmocka_unit_test(test_listing_exact),
		cmocka_unit_test(test_listing_pages),
		cmocka_unit_test(test_listing_pages_change),
		cmocka_unit_test(test_listing_default_size),
		cmocka_unit_test(test_listing_bad_token),
		cmocka_unit_test(test_listing_bad_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
