/*
 * floe: test_catalog_stream.c -- the streamed rewrite where it skips what
 * is nested deeper than the merge looks (64 bytes at a time, the URL
 * prefix and backslashes left to the byte-by-byte scan): the same bytes
 * as the whole rewrite, wherever the answer is cut and wherever its
 * strings, brackets and whitespace fall in the blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "proxy/catalog.h"

#define UP "http://up:9001"
#define FLOE "http://floe:8181"
#define URL UP "/v1/wh1/"
#define SP16 "                "
#define SP80 SP16 SP16 SP16 SP16 SP16

/* A catalog read from BODY. */
static struct catalog *
catalog_from(const char *body)
{
	struct catalog *c = catalog_new();
	char err[128];

	assert_int_equal(catalog_update(c, body, strlen(body), 0, err,
			     sizeof(err)),
	    1);
	return c;
}

/* evbuffer_add_reference's cleanup: free the piece. */
static void
piece_free(const void *data, size_t len __unused, void *arg __unused)
{
	free((void *)(uintptr_t)data);
}

/*
 * What catalog_stream_run gives for BODY (LEN bytes) fed in the calls
 * that end at CUTS[0..NCUTS) (the last call ends the answer), each call's
 * input in STEP-byte pieces. Caller frees.
 */
static char *
stream_out(struct catalog_stream *st, const char *body, size_t len,
    const size_t *cuts, size_t ncuts, size_t step, size_t *outlen)
{
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	size_t i, at = 0, end, k, n;
	char *o, *piece;

	for (i = 0; i <= ncuts; i++) {
		end = i < ncuts ? cuts[i] : len;
		/* Each piece on its own, a NUL after it. */
		for (k = at; k < end; k += step) {
			n = end - k < step ? end - k : step;
			piece = malloc(n + 1);
			memcpy(piece, body + k, n);
			piece[n] = '\0';
			evbuffer_add_reference(in, piece, n, piece_free, NULL);
		}
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

/*
 * BODY through C's stream in the pieces CUTS says, not checked as JSON,
 * checked from its start, and checked from after the first call's input
 * (checked ahead): WANT must come out.
 */
static void
stream_check(const struct catalog *c, const char *up, const char *body,
    size_t len, const size_t *cuts, size_t ncuts, size_t step, const char *want,
    size_t wantlen)
{
	struct catalog_stream *st;
	struct jscheck js;
	size_t gotlen;
	char *got;
	int check;

	for (check = 0; check < 3; check++) {
		st = catalog_stream_new(c, true, up, FLOE, "warehouse");
		assert_non_null(st);
		if (check == 1)
			catalog_stream_check(st, NULL);
		if (check == 2) {
			/* The first call's input checked ahead (the pool). */
			jscheck_init(&js);
			assert_true(
			    jscheck_feed(&js, body, ncuts > 0 ? cuts[0] : len));
			catalog_stream_check(st, &js);
		}
		got = stream_out(st, body, len, cuts, ncuts, step, &gotlen);
		if (gotlen != wantlen || memcmp(got, want, wantlen) != 0)
			fail_msg("check %d cut %zu/%zu step %zu:\n got %s\n"
				 "want %.*s",
			    check, ncuts > 0 ? cuts[0] : len, ncuts, step, got,
			    (int)wantlen, want);
		free(got);
		catalog_stream_free(st);
	}
}

/*
 * Answers whose deep parts hold what the skip must leave to the byte
 * scan or follow: URLs in values (rewritten) and in keys (not), strings
 * with brackets, escapes, a nested "config", whitespace runs longer
 * than a block after '{', ',' and '[', an "http" string of another
 * host, a prefix of another warehouse; each moved by 0 to 67 bytes of
 * padding, so that every byte falls everywhere in a block. Each cut in
 * two at every byte, in pieces of 1 to 130 bytes, and with and without
 * an upstream URL to rewrite.
 */
static void
test_stream_skip(void **state __unused)
{
	static const char *const parts[] = {
		"{\"metadata-location\":\"s3://b/m.json\",\"metadata\":{\"p\":\"",
		/* padding here */
		"\",\"s\":[{\"id\":1,\"u\":\"" URL "a\",\"k\":{\"" URL
		"key\":\"" URL
		"val\"}},[[[\"}{][\\\"\",{\"config\":{\"q\":\"" URL
		"deep\"}}]]]],\"h\":\"hyper\",\"w\":\"" UP "/v1/wh2/no\",\"t\":"
		"{\"a\":[1,2.5e3,true,null,{\"b\":\"[[[[[[[[[[[[[[[[[[[[[[[[[["
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}]},\"k2\":{" SP80
		    SP80 "\"" URL "key2\":1," SP80 SP80 "\"" URL "key3\":\"" URL
		"v3\",\"arr\":[" SP80 SP80 "\"" URL "a1\"," SP80 SP80 "\"" URL
		"a2\"]}," SP80 "\"x\"" SP80 ":" SP80 "[{}," SP80 "{\"y\":[" SP80
		"]}]},\"config\":{\"k\":\"t\",\"n\":{\"deep\":\"" URL
		"c\"," SP80 "\"l\":\"" SP80 "\"}},\"after\":[\"" URL "z\"]}",
	};
	struct catalog *c =
	    catalog_from("{\"defaults\":{\"k\":\"d\",\"z\":\"" UP
			 "/v1/wh1/sign\",\"w\":\"v\"},"
			 "\"overrides\":{\"prefix\":\"wh1\"}}");
	static const size_t steps[] = { 1, 63, 64, 65, 66, 67, 97, 130 };
	const char *ups[] = { UP, NULL };
	size_t pad, len, wantlen, a, u, k, cuts[2];
	char body[4096], *want;

	for (pad = 0; pad <= 67; pad++) {
		len = (size_t)snprintf(body, sizeof(body), "%s%*s%s", parts[0],
		    (int)pad, "", parts[1]);
		assert_true(len < sizeof(body));
		for (u = 0; u < nitems(ups); u++) {
			want = catalog_rewrite(c, true, body, len, ups[u], FLOE,
			    "warehouse", &wantlen);
			assert_non_null(want);
			for (k = 0; k < nitems(steps); k++)
				stream_check(c, ups[u], body, len, NULL, 0,
				    steps[k], want, wantlen);
			for (a = 0; a <= len; a++) {
				cuts[0] = a;
				stream_check(c, ups[u], body, len, cuts, 1,
				    len + 1, want, wantlen);
			}
			for (a = 0; a + 70 <= len; a += 7) {
				cuts[0] = a;
				cuts[1] = a + 66 + pad % 5;
				stream_check(c, ups[u], body, len, cuts, 2,
				    len + 1, want, wantlen);
			}
			free(want);
		}
	}
	catalog_free(c);
}

/*
 * Where the whole rewrite once left an answer as it was and the stream
 * did not: nested deeper than 64 (up to the check's 2,048), and a second
 * top-level "config" in an answer with a URL (the first decides: merged
 * when it is an object, the merge off when it is not). The same bytes
 * both ways, cut anywhere.
 */
static void
test_stream_whole_agree(void **state __unused)
{
	struct catalog *c =
	    catalog_from("{\"defaults\":{\"k\":\"d\",\"z\":\"" UP
			 "/v1/wh1/sign\",\"w\":\"v\"},"
			 "\"overrides\":{\"prefix\":\"wh1\"}}");
	static const unsigned depths[] = { 63, 64, 65, 100, 2045 };
	static const char *const dups[] = {
		"{\"a\":\"" URL "x\",\"config\":{\"k\":\"t\"},\"config\":"
		"{\"z\":1}}",
		"{\"a\":\"" URL "x\",\"config\":null,\"config\":{}}",
		"{\"config\":{},\"a\":[\"" URL "x\"],\"config\":\"s\"}",
	};
	size_t len, wantlen, a, i, k, step, cuts[1];
	char *body, *o, *want;

	for (i = 0; i < nitems(depths); i++) {
		/*
		 * {"metadata":{"d":[[...["URL/x",{"u":"URL/y"}]...]]},
		 * "config":{}}: 2,048 levels at the most.
		 */
		body = o = malloc(2 * depths[i] + 256);
		o += sprintf(o, "{\"metadata\":{\"d\":");
		for (k = 0; k < depths[i]; k++)
			*o++ = '[';
		o += sprintf(o, "\"%sx\",{\"u\":\"%sy\"}", URL, URL);
		for (k = 0; k < depths[i]; k++)
			*o++ = ']';
		o += sprintf(o, "},\"config\":{}}");
		len = o - body;
		want = catalog_rewrite(c, true, body, len, UP, FLOE,
		    "warehouse", &wantlen);
		assert_non_null(want);
		assert_non_null(strstr(want, "\"" FLOE "/v1/warehouse/y\""));
		assert_non_null(strstr(want, "\"w\":\"v\""));
		step = len > 1000 ? 97 : 1;
		for (a = 0; a <= len; a += step) {
			cuts[0] = a;
			stream_check(c, UP, body, len, cuts, 1, len + 1, want,
			    wantlen);
		}
		stream_check(c, UP, body, len, NULL, 0, 1, want, wantlen);
		free(want);
		free(body);
	}
	for (i = 0; i < nitems(dups); i++) {
		len = strlen(dups[i]);
		want = catalog_rewrite(c, true, dups[i], len, UP, FLOE,
		    "warehouse", &wantlen);
		assert_non_null(want);
		/* The second "config" is as it was. */
		assert_non_null(strstr(want, strrchr(dups[i], ',')));
		/* Merged into the first, unless it is not an object. */
		assert_true((strstr(want, "\"w\":\"v\"") != NULL) == (i != 1));
		for (a = 0; a <= len; a++) {
			cuts[0] = a;
			stream_check(c, UP, dups[i], len, cuts, 1, len + 1,
			    want, wantlen);
		}
		free(want);
	}
	catalog_free(c);
}

/*
 * A stream checked as JSON refuses the call whose input lets the check
 * fail (or ends the answer cut short), with nothing of that input passed
 * on, at the offset jscheck_valid gives; each answer cut in two at every
 * byte.
 */
static void
test_stream_not_json(void **state __unused)
{
	static const char *const bodies[] = {
		"{\"metadata\":{\"a\":[1,2,{\"b\":\"" URL
		"x\"}]},\"config\":{}",
		"{\"metadata\":{\"a\":[1,2,,3]},\"config\":{}}",
		"{\"config\":{\"k\":\"t\"}} x",
		"{\"u\":\"" URL "\x01\"}",
		"{\"metadata\":{\"s\":\"caf\xc3\"},\"config\":{}}",
		"{\"a\":\"" URL "b\",\"config\":{\"k\":tru}}",
		"[{\"a\":1}]]",
	};
	struct catalog *c = catalog_from("{\"defaults\":{\"k\":\"d\"},"
					 "\"overrides\":{\"prefix\":\"wh1\"}}");
	struct catalog_stream *st;
	struct evbuffer *in, *out;
	struct jscheck js;
	size_t i, a, len, want, before;

	for (i = 0; i < nitems(bodies); i++) {
		len = strlen(bodies[i]);
		assert_false(jscheck_valid(bodies[i], len, &want));
		for (a = 0; a <= len; a++) {
			st = catalog_stream_new(c, true, UP, FLOE, "warehouse");
			catalog_stream_check(st, NULL);
			in = evbuffer_new();
			out = evbuffer_new();
			evbuffer_add(in, bodies[i], a);
			/* As the check alone fails on the first piece or not.
			 */
			jscheck_init(&js);
			if (jscheck_feed(&js, bodies[i], a)) {
				assert_true(
				    catalog_stream_run(st, in, out, false));
				before = evbuffer_get_length(out);
				evbuffer_add(in, bodies[i] + a, len - a);
				assert_false(
				    catalog_stream_run(st, in, out, true));
				assert_int_equal(evbuffer_get_length(out),
				    before);
			} else {
				assert_false(
				    catalog_stream_run(st, in, out, false));
				assert_int_equal(evbuffer_get_length(out), 0);
			}
			assert_int_equal(catalog_stream_error_at(st), want);
			evbuffer_free(in);
			evbuffer_free(out);
			catalog_stream_free(st);
		}
	}
	catalog_free(c);
}

/*
 * Keys that go through the check's slower code (past ASCII, escaped)
 * and still count: a merge key the table has, in UTF-8, and "config"
 * after one; cut at every byte, checked and not.
 */
static void
test_stream_keys(void **state __unused)
{
	static const char *const bodies[] = {
		"{\"metadata\":{},\"config\":{\"caf\xc3\xa9\":\"t\"}}",
		"{\"\xc3\xa9\\n\":1,\"config\":{\"k\\n\":1,\"caf\xc3\xa9\":2}}",
		"{\"a\\\"\":{\"config\":{}},\"config\":{\"caf\xc3\xa9\":[]}}",
	};
	struct catalog *c = catalog_from("{\"defaults\":{\"caf\xc3\xa9\":\"d\","
					 "\"k\":\"d\"},\"overrides\":{}}");
	size_t i, a, len, wantlen, cuts[1];
	char *want;

	for (i = 0; i < nitems(bodies); i++) {
		len = strlen(bodies[i]);
		want = catalog_rewrite(c, true, bodies[i], len, UP, FLOE,
		    "warehouse", &wantlen);
		assert_non_null(want);
		/* The table's own café is kept, the catalog's k added. */
		assert_null(strstr(want, "\"d\",\"caf"));
		assert_non_null(strstr(want, "\"k\":\"d\""));
		for (a = 0; a <= len; a++) {
			cuts[0] = a;
			stream_check(c, UP, bodies[i], len, cuts, 1, len + 1,
			    want, wantlen);
		}
		free(want);
	}
	catalog_free(c);
}

/*
 * The merge a stream makes is the catalog's as the answer began: the
 * config read anew in the middle of the answer (and the catalog freed
 * before the stream) changes nothing in it; a stream begun after the
 * read merges the new config.
 */
static void
test_stream_config_anew(void **state __unused)
{
	static const char body[] = "{\"metadata\":{\"a\":1},\"config\":{}}";
	static const char fresh[] = "{\"defaults\":{\"k\":\"new\"},"
				    "\"overrides\":{}}";
	struct catalog *c = catalog_from("{\"defaults\":{\"k\":\"old\"},"
					 "\"overrides\":{}}");
	struct catalog_stream *st, *st2;
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	size_t len = strlen(body), half = len / 2, wantlen, newlen, gotlen;
	char *want, *wantnew, *got, err[128];

	want = catalog_rewrite(c, true, body, len, UP, FLOE, "warehouse",
	    &wantlen);
	assert_non_null(want);
	assert_non_null(strstr(want, "\"k\":\"old\""));
	st = catalog_stream_new(c, true, UP, FLOE, "warehouse");
	assert_non_null(st);
	/* Half the answer, then the config read anew. */
	evbuffer_add(in, body, half);
	assert_true(catalog_stream_run(st, in, out, false));
	assert_int_equal(catalog_update(c, fresh, strlen(fresh), 0, err,
			     sizeof(err)),
	    1);
	wantnew =
	    catalog_rewrite(c, true, body, len, UP, FLOE, "warehouse", &newlen);
	assert_non_null(strstr(wantnew, "\"k\":\"new\""));
	st2 = catalog_stream_new(c, true, UP, FLOE, "warehouse");
	catalog_free(c);
	evbuffer_add(in, body + half, len - half);
	assert_true(catalog_stream_run(st, in, out, true));
	gotlen = evbuffer_get_length(out);
	got = malloc(gotlen + 1);
	evbuffer_remove(out, got, gotlen);
	assert_int_equal(gotlen, wantlen);
	assert_memory_equal(got, want, wantlen);
	free(got);
	evbuffer_free(in);
	evbuffer_free(out);
	catalog_stream_free(st);
	/* The stream begun after the read: the new merge. */
	got = stream_out(st2, body, len, NULL, 0, len, &gotlen);
	assert_int_equal(gotlen, newlen);
	assert_memory_equal(got, wantnew, newlen);
	free(got);
	catalog_stream_free(st2);
	free(want);
	free(wantnew);
}

/* Run every table. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_skip),
		cmocka_unit_test(test_stream_whole_agree),
		cmocka_unit_test(test_stream_not_json),
		cmocka_unit_test(test_stream_keys),
		cmocka_unit_test(test_stream_config_anew),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
