/*
 * floe: test_catalog.c -- reading /v1/config answers (prefix, separator,
 * merged config, generation) and rewriting answers: config merge into
 * LoadTable results and upstream URLs pointed back at floe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "proxy/catalog.h"

#define UP "http://up:9001"
#define FLOE "http://floe:8181"

/* Feed BODY to C; returns catalog_update's result. */
static int
update(struct catalog *c, const char *body, int64_t now, char *err,
    size_t errlen)
{
	return catalog_update(c, body, strlen(body), now, err, errlen);
}

/* The JSON text of J, compact and sorted, for comparisons. Caller frees. */
static char *
dump(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
}

/* Prefix and separator from overrides or defaults; refused answers. */
static void
test_update_parse(void **state __unused)
{
	static const struct {
		const char *body;
		int rc;
		const char *prefix; /* when rc >= 0 */
		const char *separator; /* when rc >= 0 */
		const char *err; /* when rc == -1: exact message */
	} cases[] = {
		{ "{\"defaults\":{\"prefix\":\"d\"},"
		  "\"overrides\":{\"prefix\":\"o\"}}",
		    1, "o", NULL, NULL },
		{ "{\"defaults\":{\"prefix\":\"d\"},\"overrides\":{}}", 1, "d",
		    NULL, NULL },
		{ "{\"defaults\":{},\"overrides\":{}}", 1, NULL, NULL, NULL },
		{ "{\"defaults\":{},\"overrides\":{\"prefix\":\"\"}}", 1, NULL,
		    NULL, NULL },
		{ "{\"defaults\":{},\"overrides\":"
		  "{\"namespace-separator\":\"%2E\"}}",
		    1, NULL, ".", NULL },
		{ "{\"defaults\":{\"namespace-separator\":\"%1F\"},"
		  "\"overrides\":{}}",
		    1, NULL, "\x1f", NULL },
		{ "{\"defaults\":{\"namespace-separator\":\"::\"},"
		  "\"overrides\":{\"namespace-separator\":\"%2e%2E\"}}",
		    1, NULL, "..", NULL },
		{ "{\"defaults\":{},\"overrides\":{},"
		  "\"endpoints\":[\"GET /v1/{prefix}/namespaces\"]}",
		    1, NULL, NULL, NULL },
		{ "{", -1, NULL, NULL, "not JSON (line 1, column 1)" },
		{ "", -1, NULL, NULL, "not JSON (line 1, column 0)" },
		{ "[]", -1, NULL, NULL, "not a JSON object" },
		{ "{\"overrides\":{}}", -1, NULL, NULL,
		    "\"defaults\" is missing" },
		{ "{\"defaults\":{}}", -1, NULL, NULL,
		    "\"overrides\" is missing" },
		{ "{\"defaults\":[],\"overrides\":{}}", -1, NULL, NULL,
		    "\"defaults\" is not an object" },
		{ "{\"defaults\":{},\"overrides\":{\"a\":1}}", -1, NULL, NULL,
		    "\"overrides\": \"a\" is not a string" },
		{ "{\"defaults\":{},\"overrides\":{},\"endpoints\":\"x\"}", -1,
		    NULL, NULL, "\"endpoints\" is not an array" },
	};
	char err[256];
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		struct catalog *c = catalog_new();
		int rc;

		err[0] = '\0';
		rc = update(c, cases[i].body, 5, err, sizeof(err));
		assert_int_equal(rc, cases[i].rc);
		if (rc == -1) {
			assert_string_equal(err, cases[i].err);
			assert_false(c->known);
			assert_null(c->config);
			assert_int_equal(c->generation, 0);
		} else {
			assert_true(c->known);
			assert_int_equal(c->fetched_ms, 5);
			assert_non_null(c->config);
			assert_non_null(c->merge);
			if (cases[i].prefix == NULL)
				assert_null(c->prefix);
			else
				assert_string_equal(c->prefix, cases[i].prefix);
			if (cases[i].separator == NULL)
				assert_null(c->separator);
			else
				assert_string_equal(c->separator,
				    cases[i].separator);
		}
		catalog_free(c);
	}
}

/* The merged config: defaults, then overrides, minus catalog keys. */
static void
test_update_merge(void **state __unused)
{
	struct catalog *c = catalog_new();
	char err[128], *s;

	assert_int_equal(update(c,
			     "{\"defaults\":{\"a\":\"1\",\"prefix\":\"p\","
			     "\"warehouse\":\"w\",\"uri\":\"u\"},"
			     "\"overrides\":{\"a\":\"2\",\"uri\":\"x\","
			     "\"s3.endpoint\":\"http://minio:9000\","
			     "\"endpoints\":\"e\"},\"endpoints\":[]}",
			     1, err, sizeof(err)),
	    1);
	s = dump(c->merge);
	assert_string_equal(s,
	    "{\"a\":\"2\",\"s3.endpoint\":\"http://minio:9000\","
	    "\"warehouse\":\"w\"}");
	free(s);
	assert_string_equal(c->prefix, "p");
	/* The whole answer is kept as received. */
	assert_non_null(json_object_get(c->config, "endpoints"));
	catalog_free(c);
}

/* The generation moves only when what floe uses changes. */
static void
test_generation(void **state __unused)
{
	static const struct {
		const char *body;
		int rc;
		uint64_t generation;
	} steps[] = {
		{ "{\"defaults\":{\"a\":\"1\",\"b\":\"2\"},\"overrides\":{}}",
		    1, 1 },
		/* Same content. */
		{ "{\"defaults\":{\"a\":\"1\",\"b\":\"2\"},\"overrides\":{}}",
		    0, 1 },
		/* Key order and whitespace do not matter. */
		{ "{ \"overrides\":{}, \"defaults\":{\"b\":\"2\",\"a\":\"1\"} }",
		    0, 1 },
		/* Neither does where a value came from, if the result is the
		 * same, nor what floe does not use. */
		{ "{\"defaults\":{\"a\":\"1\"},\"overrides\":{\"b\":\"2\"},"
		  "\"endpoints\":[\"GET /v1/config\"]}",
		    0, 1 },
		/* A failure changes nothing. */
		{ "{\"defaults\":{\"a\":\"9\"}}", -1, 1 },
		/* A value. */
		{ "{\"defaults\":{\"a\":\"1\",\"b\":\"3\"},\"overrides\":{}}",
		    1, 2 },
		/* The prefix (not part of the merge). */
		{ "{\"defaults\":{\"a\":\"1\",\"b\":\"3\"},"
		  "\"overrides\":{\"prefix\":\"p\"}}",
		    1, 3 },
		{ "{\"defaults\":{\"a\":\"1\",\"b\":\"3\"},"
		  "\"overrides\":{\"prefix\":\"p\"}}",
		    0, 3 },
		/* The separator. */
		{ "{\"defaults\":{\"a\":\"1\",\"b\":\"3\"},"
		  "\"overrides\":{\"prefix\":\"p\","
		  "\"namespace-separator\":\"%2E\"}}",
		    1, 4 },
		/* A dropped prefix. */
		{ "{\"defaults\":{\"a\":\"1\",\"b\":\"3\"},"
		  "\"overrides\":{\"namespace-separator\":\"%2E\"}}",
		    1, 5 },
	};
	struct catalog *c = catalog_new();
	char err[128];
	size_t i;

	for (i = 0; i < nitems(steps); i++) {
		c->last_error = strdup("earlier failure");
		assert_int_equal(update(c, steps[i].body, (int64_t)i * 1000,
				     err, sizeof(err)),
		    steps[i].rc);
		assert_int_equal(c->generation, steps[i].generation);
		assert_true(c->known);
		if (steps[i].rc >= 0) {
			assert_int_equal(c->fetched_ms, (int64_t)i * 1000);
			assert_null(c->last_error);
		} else {
			assert_int_not_equal(c->fetched_ms, (int64_t)i * 1000);
			assert_non_null(c->last_error);
			free(c->last_error);
			c->last_error = NULL;
		}
	}
	catalog_free(c);
}

/* A catalog read from BODY. */
static struct catalog *
catalog_from(const char *body)
{
	struct catalog *c = catalog_new();
	char err[128];

	assert_int_equal(update(c, body, 0, err, sizeof(err)), 1);
	return c;
}

/* Merging into LoadTable answers: the table's keys win. */
static void
test_rewrite_merge(void **state __unused)
{
	static const struct {
		const char *body;
		bool merge;
		const char *want; /* NULL: unchanged */
	} cases[] = {
		/* The table's own keys win; order is kept. */
		{ "{\"metadata-location\":\"s3://b/m.json\","
		  "\"config\":{\"s3.endpoint\":\"table\"},\"z\":1}",
		    true,
		    "{\"metadata-location\":\"s3://b/m.json\","
		    "\"config\":{\"s3.endpoint\":\"table\",\"warehouse\":\"w\"},"
		    "\"z\":1}" },
		/* No config: created, defaults then overrides. */
		{ "{\"a\":1}", true,
		    "{\"a\":1,\"config\":{\"warehouse\":\"w\","
		    "\"s3.endpoint\":\"http://minio\"}}" },
		/* Nothing to add. */
		{ "{\"config\":{\"warehouse\":\"t\",\"s3.endpoint\":\"t\"}}",
		    true, NULL },
		/* Not asked to. */
		{ "{\"a\":1}", false, NULL },
		/* Not an object config: left alone. */
		{ "{\"config\":[1]}", true, NULL },
		/* Not a JSON object. */
		{ "[{\"a\":1}]", true, NULL },
		{ "\"str\"", true, NULL },
		{ "{\"a\":", true, NULL },
		{ "", true, NULL },
	};
	struct catalog *c = catalog_from("{\"defaults\":{\"warehouse\":\"w\"},"
					 "\"overrides\":{\"s3.endpoint\":"
					 "\"http://minio\",\"prefix\":\"p\"}}");
	size_t i, outlen;
	char *out;

	for (i = 0; i < nitems(cases); i++) {
		outlen = 0;
		out = catalog_rewrite(c, cases[i].merge, cases[i].body,
		    strlen(cases[i].body), UP, FLOE, "warehouse", &outlen);
		if (cases[i].want == NULL) {
			assert_null(out);
			continue;
		}
		assert_non_null(out);
		assert_string_equal(out, cases[i].want);
		assert_int_equal(outlen, strlen(cases[i].want));
		free(out);
	}
	catalog_free(c);
}

/*
 * The rewrite works on the text: what it does not change stays byte for
 * byte (numbers keep their digits, whitespace its place), escapes are
 * respected, and a body it cannot follow is passed on unchanged.
 */
static void
test_rewrite_text(void **state __unused)
{
	static const struct {
		const char *body;
		const char *want; /* NULL: unchanged */
	} cases[] = {
		/* Numbers and spacing survive; only config changes. */
		{ "{ \"n\": 0.1, \"big\": 18446744073709551615,\n"
		  "  \"config\" : { \"k\":\"v\" } }",
		    "{ \"n\": 0.1, \"big\": 18446744073709551615,\n"
		    "  \"config\" : { \"k\":\"v\" ,\"warehouse\":\"w\"} }" },
		/* An escaped quote does not end a string early. */
		{ "{\"s\":\"a\\\"config\\\":{\",\"config\":{}}",
		    "{\"s\":\"a\\\"config\\\":{\",\"config\":{\"warehouse\":"
		    "\"w\"}}" },
		/* A backslash before the closing quote is its own escape. */
		{ "{\"s\":\"x\\\\\",\"config\":{}}",
		    "{\"s\":\"x\\\\\",\"config\":{\"warehouse\":\"w\"}}" },
		/* Only the top-level "config" is the table's. */
		{ "{\"metadata\":{\"config\":{}},\"config\":{\"a\":\"b\"}}",
		    "{\"metadata\":{\"config\":{}},\"config\":{\"a\":\"b\","
		    "\"warehouse\":\"w\"}}" },
		/* Read from the end: brackets and quotes inside strings. */
		{ "{\"metadata\":{\"a\":\"}\"},\"x\":\"\\\"config\\\":{\","
		  "\"config\":{\"k\":\"v\"}}",
		    "{\"metadata\":{\"a\":\"}\"},\"x\":\"\\\"config\\\":{\","
		    "\"config\":{\"k\":\"v\",\"warehouse\":\"w\"}}" },
		/* The config first, then members of every kind. */
		{ "{\"config\":{\"k\":\"v\"},\"metadata\":{\"x\":[1,-2.5e3,"
		  "{\"y\":\"]\\\\\"}]},\"t\":true,\"z\":null}",
		    "{\"config\":{\"k\":\"v\",\"warehouse\":\"w\"},\"metadata\":"
		    "{\"x\":[1,-2.5e3,{\"y\":\"]\\\\\"}]},\"t\":true,\"z\":null}" },
		/* A key spelled with an escape is not "config". */
		{ "{\"conf\\u0069g\":{}}",
		    "{\"conf\\u0069g\":{},\"config\":{\"warehouse\":\"w\"}}" },
		/* An empty answer gets a config. */
		{ "{}", "{\"config\":{\"warehouse\":\"w\"}}" },
		/* config: null is the table's choice. */
		{ "{\"config\":null}", NULL },
		/*
		 * Truncated, trailing bytes, two objects, a missing value, a
		 * trailing comma: passed on unchanged. (Only what the scan
		 * reads is checked: the config is found from the end.)
		 */
		{ "{\"config\":{\"a\":\"b\"}", NULL },
		{ "{\"config\":{}} x", NULL },
		{ "{}{}", NULL },
		{ "{\"config\":{},\"a\":}", NULL },
		{ "{\"config\":{},\"a\":1,}", NULL },
		{ "{\"a\":\"unterminated}", NULL },
	};
	struct catalog *c = catalog_from("{\"defaults\":{\"warehouse\":\"w\"},"
					 "\"overrides\":{}}");
	size_t i, outlen;
	char *out;

	for (i = 0; i < nitems(cases); i++) {
		out = catalog_rewrite(c, true, cases[i].body,
		    strlen(cases[i].body), UP, FLOE, "warehouse", &outlen);
		if (cases[i].want == NULL) {
			assert_null(out);
			continue;
		}
		assert_non_null(out);
		assert_string_equal(out, cases[i].want);
		assert_int_equal(outlen, strlen(cases[i].want));
		free(out);
	}
	catalog_free(c);
}

/* Nothing to merge: the body passes through. */
static void
test_rewrite_merge_empty(void **state __unused)
{
	struct catalog *c = catalog_from("{\"defaults\":{\"prefix\":\"p\"},"
					 "\"overrides\":{\"uri\":\"x\"}}");
	struct catalog *unknown = catalog_new();
	const char *body = "{\"a\":1}";
	size_t outlen;

	assert_int_equal(json_object_size(c->merge), 0);
	assert_null(catalog_rewrite(c, true, body, strlen(body), UP, FLOE,
	    "warehouse", &outlen));
	assert_null(catalog_rewrite(unknown, true, body, strlen(body), UP, FLOE,
	    "warehouse", &outlen));
	catalog_free(unknown);
	catalog_free(c);
}

/* Upstream URLs under /v1/{prefix}/ point back at floe. */
static void
test_rewrite_urls(void **state __unused)
{
	static const struct {
		bool prefixed; /* the catalog has prefix "wh1" */
		const char *pinned;
		const char *body;
		const char *want; /* NULL: unchanged */
	} cases[] = {
		{ true, "warehouse",
		    "{\"a\":\"" UP "/v1/wh1/namespaces/db/tables/t\"}",
		    "{\"a\":\"" FLOE
		    "/v1/warehouse/namespaces/db/tables/t\"}" },
		/* Nested in objects and arrays; key order kept. */
		{ true, "lakehouse",
		    "{\"z\":[{\"u\":\"" UP "/v1/wh1/a\"},\"" UP
		    "/v1/wh1/b\",3,null],\"a\":{\"b\":{\"c\":\"" UP
		    "/v1/wh1/c?x=1\"}}}",
		    "{\"z\":[{\"u\":\"" FLOE "/v1/lakehouse/a\"},\"" FLOE
		    "/v1/lakehouse/b\",3,null],\"a\":{\"b\":{\"c\":\"" FLOE
		    "/v1/lakehouse/c?x=1\"}}}" },
		/* Other hosts, other prefixes, the bare base: untouched. */
		{ true, "warehouse", "{\"a\":\"http://other:9001/v1/wh1/a\"}",
		    NULL },
		{ true, "warehouse", "{\"a\":\"" UP "/v1/wh2/a\"}", NULL },
		{ true, "warehouse", "{\"a\":\"" UP "\"}", NULL },
		{ true, "warehouse", "{\"a\":\"" UP "/v1\"}", NULL },
		{ true, "warehouse", "{\"a\":\"" UP "/v1/wh1\"}", NULL },
		{ true, "warehouse", "{\"a\":\"x " UP "/v1/wh1/a\"}", NULL },
		{ true, "warehouse", "{\"a\":\"" UP "9/v1/wh1/a\"}", NULL },
		/* Keys are not values. */
		{ true, "warehouse", "{\"" UP "/v1/wh1/a\":1}", NULL },
		/* Without an upstream prefix. */
		{ false, "warehouse", "{\"a\":\"" UP "/v1/namespaces/db\"}",
		    "{\"a\":\"" FLOE "/v1/warehouse/namespaces/db\"}" },
		{ false, "warehouse", "{\"a\":\"" UP "/v1\"}", NULL },
		/* Without a pinned prefix. */
		{ true, "", "{\"a\":\"" UP "/v1/wh1/x\"}",
		    "{\"a\":\"" FLOE "/v1/x\"}" },
		/* Other strings are kept byte for byte. */
		{ true, "warehouse",
		    "{\"n\":\"caf\xc3\xa9\",\"u\":\"" UP "/v1/wh1/x\"}",
		    "{\"n\":\"caf\xc3\xa9\",\"u\":\"" FLOE
		    "/v1/warehouse/x\"}" },
		/* The top level must be an object. */
		{ true, "warehouse", "[\"" UP "/v1/wh1/x\"]", NULL },
	};
	struct catalog *with =
	    catalog_from("{\"defaults\":{},"
			 "\"overrides\":{\"prefix\":\"wh1\"}}");
	struct catalog *without = catalog_from("{\"defaults\":{},"
					       "\"overrides\":{}}");
	size_t i, outlen;
	char *out;

	for (i = 0; i < nitems(cases); i++) {
		out = catalog_rewrite(cases[i].prefixed ? with : without, false,
		    cases[i].body, strlen(cases[i].body), UP, FLOE,
		    cases[i].pinned, &outlen);
		if (cases[i].want == NULL) {
			assert_null(out);
			continue;
		}
		assert_non_null(out);
		assert_string_equal(out, cases[i].want);
		assert_int_equal(outlen, strlen(cases[i].want));
		free(out);
	}
	/* A base given with a trailing slash matches the same way. */
	out = catalog_rewrite(with, false, cases[0].body, strlen(cases[0].body),
	    UP "/", FLOE "/", "warehouse", &outlen);
	assert_non_null(out);
	assert_string_equal(out, cases[0].want);
	free(out);
	catalog_free(with);
	catalog_free(without);
}

/* Merged values are rewritten too, in a copy. */
static void
test_rewrite_merged_urls(void **state __unused)
{
	struct catalog *c = catalog_from("{\"defaults\":{},\"overrides\":{"
					 "\"prefix\":\"wh1\",\"s3.signer.uri\":"
					 "\"" UP "/v1/wh1/sign\"}}");
	const char *body = "{\"config\":{}}";
	size_t outlen;
	char *out;

	out = catalog_rewrite(c, true, body, strlen(body), UP, FLOE,
	    "warehouse", &outlen);
	assert_non_null(out);
	assert_string_equal(out,
	    "{\"config\":{\"s3.signer.uri\":\"" FLOE "/v1/warehouse/sign\"}}");
	free(out);
	/* The catalog's own copy is untouched. */
	assert_string_equal(json_string_value(
				json_object_get(c->merge, "s3.signer.uri")),
	    UP "/v1/wh1/sign");
	catalog_free(c);
}

/*
 * catalog_merge_tail on every tail of each answer: when it decides, its
 * insertion spliced in gives exactly what catalog_rewrite gives; a tail
 * that holds the whole "config" member always decides.
 */
static void
test_merge_tail(void **state __unused)
{
	static const char *const bodies[] = {
		"{\"metadata\":{\"a\":[1,2,{\"b\":\"}\"}]},\"config\":{\"k\":\"t\"}}",
		"{\"metadata\":{},\"config\":{}}",
		"{\"metadata\":{\"x\":\"q\\\\\"}\"},\"config\":{\"s\":\"\\\\\"}",
		"{\"metadata\":{\"x\":1}, \"config\" : { \"k\" : \"t\" } ,"
		"\"storage-credentials\":[{\"prefix\":\"s3://b\",\"config\":{}}]}\n",
		"{\"config\":{\"k\":\"t\"},\"metadata\":{\"x\":[true,null,-1.5e3]}}",
		"{\"metadata\":{\"x\":\"\\\\\\\\\"}}",
		"{\"metadata\":{\"config\":{}},\"n\":12345}",
		"{\"config\":\"not an object\"}",
		"{}",
		"[1,2]",
		"{\"metadata\":{\"x\":1},\"config\":{\"k\":\"t\"}} trailing",
	};
	struct catalog *c =
	    catalog_from("{\"defaults\":{\"k\":\"d\",\"z\":"
			 "\"" UP "/v1/sign\"},\"overrides\":{}}");
	size_t i, tlen, len, inslen, at, wantlen;
	char *ins, *want, got[512];
	int rc, decided, partial = 0;

	for (i = 0; i < nitems(bodies); i++) {
		len = strlen(bodies[i]);
		want = catalog_rewrite(c, true, bodies[i], len, UP, FLOE,
		    "warehouse", &wantlen);
		decided = 0;
		for (tlen = 1; tlen <= len; tlen++) {
			rc = catalog_merge_tail(c, bodies[i] + len - tlen, tlen,
			    len, UP, FLOE, "warehouse", &ins, &inslen, &at);
			if (rc == -1) {
				assert_null(ins);
				continue;
			}
			decided++;
			if (rc == 0) {
				assert_null(ins);
				assert_null(want);
				continue;
			}
			assert_int_equal(rc, 1);
			assert_non_null(want);
			assert_true(at <= len && len + inslen < sizeof(got));
			memcpy(got, bodies[i], at);
			memcpy(got + at, ins, inslen);
			memcpy(got + at + inslen, bodies[i] + at, len - at);
			assert_int_equal(len + inslen, wantlen);
			assert_memory_equal(got, want, wantlen);
			free(ins);
			partial += tlen < len;
		}
		/* The whole answer in hand decides whenever rewrite does. */
		if (want != NULL)
			assert_true(decided > 0);
		free(want);
	}
	/* Tails short of the whole answer decided often enough. */
	assert_true(partial > 20);
	catalog_free(c);
}

/*
 * catalog_body_has on a body cut into pieces every way around the needle:
 * inside a piece, across one seam, across a piece shorter than the needle
 * (two seams), and pieces too many to search in place.
 */
static void
test_body_has(void **state __unused)
{
	static const char needle[] = "http://up:9001/v1";
	char text[200];
	size_t nlen = sizeof(needle) - 1, at, cut1, cut2, len;
	struct evbuffer *b;
	int i;

	memset(text, 'h', sizeof(text));
	len = sizeof(text);
	for (at = 0; at + nlen <= len; at += 7) {
		memset(text, 'h', len);
		memcpy(text + at, needle, nlen);
		for (cut1 = 1; cut1 < len; cut1 += 5)
			for (cut2 = cut1 + 1; cut2 < len; cut2 += 11) {
				b = evbuffer_new();
				evbuffer_add_reference(b, text, cut1, NULL,
				    NULL);
				evbuffer_add_reference(b, text + cut1,
				    cut2 - cut1, NULL, NULL);
				evbuffer_add_reference(b, text + cut2,
				    len - cut2, NULL, NULL);
				assert_true(catalog_body_has(b, needle, nlen));
				/* One byte off: no match anywhere. */
				text[at + nlen / 2] ^= 1;
				assert_false(catalog_body_has(b, needle, nlen));
				text[at + nlen / 2] ^= 1;
				evbuffer_free(b);
			}
	}
	/* More pieces than are searched in place: one byte each. */
	b = evbuffer_new();
	for (i = 0; i < (int)len; i++)
		evbuffer_add_reference(b, text + i, 1, NULL, NULL);
	assert_true(catalog_body_has(b, needle, nlen));
	evbuffer_free(b);
	b = evbuffer_new();
	assert_false(catalog_body_has(b, needle, nlen));
	evbuffer_free(b);
}

/* URL prefixes longer than the stack buffer are rewritten all the same. */
static void
test_rewrite_long_prefix(void **state __unused)
{
	char prefix[700], pinned[700], conf[1024], body[1024], want[2048];
	struct catalog *c;
	size_t outlen;
	char *out;

	memset(prefix, 'p', sizeof(prefix) - 1);
	prefix[sizeof(prefix) - 1] = '\0';
	memset(pinned, 'q', sizeof(pinned) - 1);
	pinned[sizeof(pinned) - 1] = '\0';
	snprintf(conf, sizeof(conf),
	    "{\"defaults\":{},\"overrides\":{\"prefix\":\"%s\"}}", prefix);
	c = catalog_from(conf);
	snprintf(body, sizeof(body), "{\"u\":\"" UP "/v1/%s/x\"}", prefix);
	snprintf(want, sizeof(want), "{\"u\":\"" FLOE "/v1/%s/x\"}", pinned);
	out = catalog_rewrite(c, false, body, strlen(body), UP, FLOE, pinned,
	    &outlen);
	assert_non_null(out);
	assert_string_equal(out, want);
	assert_int_equal(outlen, strlen(want));
	free(out);
	catalog_free(c);
}

/*
 * Streams checked as JSON from the start (1: test_stream_split_checked),
 * from after the first call's input, checked ahead (2:
 * test_stream_split_handed), or not (0).
 */
static int stream_checked;

/*
 * What catalog_stream_run gives for BODY (LEN bytes) fed in the pieces
 * CUTS[0..NCUTS) end at (one call each; the last ends the answer), every
 * piece of a call in STEP-byte pieces of its input. Caller frees.
 */
static char *
stream_out(struct catalog_stream *st, const char *body, size_t len,
    const size_t *cuts, size_t ncuts, size_t step, size_t *outlen)
{
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	struct jscheck js;
	size_t i, at = 0, end, k;
	char *o;

	for (i = 0; i <= ncuts; i++) {
		end = i < ncuts ? cuts[i] : len;
		if (i == 0 && stream_checked == 2) {
			/* The first input checked ahead, as the pool does. */
			jscheck_init(&js);
			assert_true(jscheck_feed(&js, body, end));
			catalog_stream_check(st, &js);
		}
		for (k = at; k < end; k += step)
			evbuffer_add_reference(in, body + k,
			    end - k < step ? end - k : step, NULL, NULL);
		at = end;
		assert_true(catalog_stream_run(st, in, out, i == ncuts));
	}
	assert_int_equal(evbuffer_get_length(in), 0);
	*outlen = evbuffer_get_length(out);
	o = malloc(*outlen + 1);
	evbuffer_remove(out, o, *outlen);
	o[*outlen] = '\0';
	evbuffer_free(in);
	evbuffer_free(out);
	return o;
}

/* catalog_stream_new, and catalog_stream_check for stream_checked 1. */
static struct catalog_stream *
stream_new(const struct catalog *c, bool merge, const char *up,
    const char *floe, const char *pinned)
{
	struct catalog_stream *st =
	    catalog_stream_new(c, merge, up, floe, pinned);

	if (st != NULL && stream_checked == 1)
		catalog_stream_check(st, NULL);
	return st;
}

/*
 * The streamed rewrite against the whole one, for answers cut at every
 * byte: in two pieces at each offset, in three around each, one byte at a
 * time, and in one call whose input is pieces of one byte. The bytes a
 * URL prefix keeps back never outlast the prefix.
 */
static void
test_stream_split(void **state __unused)
{
	static const struct {
		int cat; /* 0: merge + prefix wh1 + a signer URL; 1: none */
		bool merge;
		const char *body;
	} cases[] = {
		{ 0, true,
		    "{\"metadata-location\":\"s3://b/m.json\",\"metadata\":{"
		    "\"a\":[1,2,{\"b\":\"}\"}],\"u\":\"" UP "/v1/wh1/x\"},"
		    "\"config\":{\"k\":\"t\"}}" },
		{ 0, true, "{\"metadata\":{},\"config\":{}}" },
		{ 0, true,
		    "{\"metadata\":{\"x\":\"q\\\\\\\"}\"},\"config\":"
		    "{\"s\":\"\\\\\"}}" },
		{ 0, true,
		    " {\"metadata\":{\"x\":1}, \"config\" : { \"k\" : \"t\" } ,"
		    "\"storage-credentials\":[{\"prefix\":\"s3://b\","
		    "\"config\":{}}]}\n" },
		{ 0, true,
		    "{\"config\":{\"k\":\"t\",\"z\":\"" UP "/v1/wh1/own\"},"
		    "\"metadata\":{\"x\":[true,null,-1.5e3,\"" UP
		    "/v1/wh1/a\\\"b\"]}}" },
		{ 0, true, "{\"metadata\":{\"config\":{}},\"n\":12345}" },
		{ 0, true, "{\"config\":\"not an object\"}" },
		{ 0, true, "{\"config\":null,\"a\":1}" },
		{ 0, true, "{\"config\":[{\"k\":1}]}" },
		{ 0, true, "{}" },
		{ 0, true, "[1,\"" UP "/v1/wh1/x\"]" },
		{ 0, false,
		    "{\"a\":\"" UP "/v1/wh1/a\",\"" UP "/v1/wh1/key\":\"" UP
		    "/v1/wh1\",\"b\":\"x" UP "/v1/wh1/a\",\"c\":[\"" UP
		    "/v1/wh1/\",\"" UP "/v1/wh2/\"]}" },
		{ 0, true,
		    "{\"a\":\"\\\\\",\"b\":\"\\\"" UP "/v1/wh1/x\","
		    "\"\\u0063onfig\":{},\"config\":{\"k\\\"\":1,\"k\":2}}" },
		{ 1, true,
		    "{\"u\":\"" UP "/v1/namespaces/db\",\"config\":{}}" },
		{ 1, false, "{\"caf\xc3\xa9\":\"" UP "/v1/x\"}" },
	};
	struct catalog *cats[2] = {
		catalog_from("{\"defaults\":{\"k\":\"d\",\"z\":\"" UP
			     "/v1/wh1/sign\",\"w\":\"v\"},\"overrides\":"
			     "{\"prefix\":\"wh1\"}}"),
		catalog_from("{\"defaults\":{},\"overrides\":{}}"),
	};
	struct catalog_stream *st;
	size_t i, len, wantlen, gotlen, a, b, cuts[4096];
	const char *want;
	char *whole, *got;

	for (i = 0; i < nitems(cases); i++) {
		len = strlen(cases[i].body);
		assert_true(len < nitems(cuts));
		whole = catalog_rewrite(cats[cases[i].cat], cases[i].merge,
		    cases[i].body, len, UP, FLOE, "warehouse", &wantlen);
		want = whole != NULL ? whole : cases[i].body;
		if (whole == NULL)
			wantlen = len;
		/* Two pieces, and three around each cut. */
		for (a = 0; a <= len; a++)
			for (b = a; b <= len; b += (b < a + 40 ? 1 : 17)) {
				st = stream_new(cats[cases[i].cat],
				    cases[i].merge, UP, FLOE, "warehouse");
				assert_non_null(st);
				cuts[0] = a;
				cuts[1] = b;
				got = stream_out(st, cases[i].body, len, cuts,
				    2, len + 1, &gotlen);
				assert_int_equal(gotlen, wantlen);
				assert_memory_equal(got, want, wantlen);
				free(got);
				catalog_stream_free(st);
			}
		/* One byte a call, and one byte a piece of one call. */
		for (a = 0; a < len; a++)
			cuts[a] = a + 1;
		st = stream_new(cats[cases[i].cat], cases[i].merge, UP, FLOE,
		    "warehouse");
		got = stream_out(st, cases[i].body, len, cuts, len, 1, &gotlen);
		assert_int_equal(gotlen, wantlen);
		assert_memory_equal(got, want, wantlen);
		free(got);
		catalog_stream_free(st);
		st = stream_new(cats[cases[i].cat], cases[i].merge, UP, FLOE,
		    "warehouse");
		got = stream_out(st, cases[i].body, len, cuts, 0, 1, &gotlen);
		assert_int_equal(gotlen, wantlen);
		assert_memory_equal(got, want, wantlen);
		free(got);
		catalog_stream_free(st);
		free(whole);
	}
	catalog_free(cats[0]);
	catalog_free(cats[1]);
}

/* test_stream_split, the streams checked as JSON: in one pass. */
static void
test_stream_split_checked(void **state)
{
	stream_checked = 1;
	test_stream_split(state);
	stream_checked = 0;
}

/* The same, the check handed over after the first call's input. */
static void
test_stream_split_handed(void **state)
{
	stream_checked = 2;
	test_stream_split(state);
	stream_checked = 0;
}

/* What the streamed rewrite keeps back is never more than a URL prefix. */
static void
test_stream_keeps_little(void **state __unused)
{
	struct catalog *c = catalog_from("{\"defaults\":{},\"overrides\":"
					 "{\"prefix\":\"wh1\"}}");
	static const char body[] = "{\"a\":\"" UP "/v1/wh1/x\"}";
	struct catalog_stream *st =
	    catalog_stream_new(c, true, UP, FLOE, "warehouse");
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	size_t i, held = 0;

	for (i = 0; i < sizeof(body) - 1; i++) {
		evbuffer_add(in, body + i, 1);
		catalog_stream_run(st, in, out, false);
		if (evbuffer_get_length(in) > held)
			held = evbuffer_get_length(in);
	}
	assert_int_equal(held, strlen(UP "/v1/wh1/") - 1);
	assert_int_equal(evbuffer_get_length(in), 0);
	catalog_stream_free(st);
	/* A prefix with a quote in it is not streamed. */
	assert_null(catalog_stream_new(c, true, UP "\"", FLOE, "warehouse"));
	evbuffer_free(in);
	evbuffer_free(out);
	catalog_free(c);
}

/* The merge a streamed answer gets is the config as it was at its start. */
static void
test_stream_config_change(void **state __unused)
{
	static const char conf1[] = "{\"defaults\":{\"k\":\"one\"},"
				    "\"overrides\":{}}";
	static const char conf2[] = "{\"defaults\":{\"a\":\"x\",\"k\":\"two\","
				    "\"z\":\"y\"},\"overrides\":{}}";
	static const char body[] = "{\"metadata\":{},\"config\":{\"b\":1}}";
	struct catalog *c = catalog_from(conf1), *old = catalog_from(conf1);
	struct catalog_stream *st =
	    catalog_stream_new(c, true, UP, FLOE, "warehouse");
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	size_t wantlen;
	char err[128], *want;

	evbuffer_add(in, body, 10);
	catalog_stream_run(st, in, out, false);
	assert_int_equal(update(c, conf2, 1, err, sizeof(err)), 1);
	evbuffer_add(in, body + 10, sizeof(body) - 1 - 10);
	catalog_stream_run(st, in, out, true);
	want = catalog_rewrite(old, true, body, sizeof(body) - 1, UP, FLOE,
	    "warehouse", &wantlen);
	assert_non_null(want);
	assert_int_equal(evbuffer_get_length(out), wantlen);
	assert_memory_equal(evbuffer_pullup(out, -1), want, wantlen);
	free(want);
	catalog_stream_free(st);
	evbuffer_free(in);
	evbuffer_free(out);
	catalog_free(c);
	catalog_free(old);
}

/* Run every table. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_parse),
		cmocka_unit_test(test_update_merge),
		cmocka_unit_test(test_generation),
		cmocka_unit_test(test_rewrite_merge),
		cmocka_unit_test(test_rewrite_merge_empty),
		cmocka_unit_test(test_rewrite_text),
		cmocka_unit_test(test_rewrite_urls),
		cmocka_unit_test(test_rewrite_merged_urls),
		cmocka_unit_test(test_rewrite_long_prefix),
		cmocka_unit_test(test_merge_tail),
		cmocka_unit_test(test_body_has),
		cmocka_unit_test(test_stream_split),
		cmocka_unit_test(test_stream_split_checked),
		cmocka_unit_test(test_stream_split_handed),
		cmocka_unit_test(test_stream_keeps_little),
		cmocka_unit_test(test_stream_config_change),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
