/*
 * floe: test_jscheck.c -- lib/jscheck.c: well-formed and malformed JSON
 * texts by hand (values, nesting, strings, escapes and surrogates, UTF-8
 * edges, numbers, what may surround a value, the body of a corrupt
 * catalog), and against jansson: random edits of real answers must be
 * judged as jansson judges them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/jscheck.h"

/* Texts by hand: each well-formed or not. */
static void
test_cases(void **state __unused)
{
	static const struct {
		const char *s;
		bool ok;
	} cases[] = {
		{ "{}", true },
		{ " [ ] ", true },
		{ "\"x\"", true },
		{ "0", true },
		{ "-0.5e+10", true },
		{ "true", true },
		{ "null", true },
		{ "{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}", true },
		{ "\t\r\n{\"a\" : 1 }\n", true },
		{ "\"\\u00e9\\n\\t\\\"\\\\\\/\\b\\f\\r\"", true },
		{ "\"\\ud83d\\ude00\"", true }, /* a surrogate pair */
		{ "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", true },
		{ "\"\xed\x9f\xbf\xf4\x8f\xbf\xbf\"",
		    true }, /* U+D7FF, U+10FFFF */
		{ "", false },
		{ " ", false },
		{ "{", false },
		{ "{}}", false },
		{ "{} {}", false },
		{ "[1,]", false },
		{ "[,1]", false },
		{ "{\"a\":1,}", false },
		{ "{\"a\" 1}", false },
		{ "{1:1}", false },
		{ "{\"a\"}", false },
		{ "[1 2]", false },
		{ "]", false },
		{ "[}", false },
		{ "{]", false },
		{ "01", false },
		{ "1.", false },
		{ ".5", false },
		{ "1e", false },
		{ "-", false },
		{ "+1", false },
		{ "tru", false },
		{ "nul", false },
		{ "True", false },
		{ "\"abc", false },
		{ "\"a\tb\"", false }, /* a control character */
		{ "\"\\x\"", false },
		{ "\"\\u12\"", false },
		{ "\"\\ud83d\"", false }, /* a high surrogate alone */
		{ "\"\\ude00\"", false }, /* a low surrogate alone */
		{ "\"\\ud83d\\u0041\"", false },
		{ "\"\xc0\xaf\"", false }, /* overlong */
		{ "\"\xe0\x80\xaf\"", false },
		{ "\"\xed\xa0\x80\"", false }, /* a surrogate in UTF-8 */
		{ "\"\xf4\x90\x80\x80\"", false }, /* past U+10FFFF */
		{ "\"\xff\xfe\"", false },
		{ "\"\xc3\"", false }, /* cut short */
		{ "{this is not json <html>\xff\xfe", false },
		{ "<html><body>502</body></html>", false },
	};
	size_t i, at;

	for (i = 0; i < nitems(cases); i++)
		if (jscheck_valid(cases[i].s, strlen(cases[i].s), &at) !=
		    cases[i].ok)
			fail_msg("case %zu (%s): want %s", i, cases[i].s,
			    cases[i].ok ? "valid" : "invalid");
	/* A NUL inside is a control character; the length is the caller's. */
	assert_false(jscheck_valid("\"a\0b\"", 5, NULL));
	assert_true(jscheck_valid("[1]xyz", 3, NULL));
	assert_false(jscheck_valid("{\"a\":x}", 7, &at));
	assert_int_equal(at, 5);
}

/* Nesting up to the limit, and one past it. */
static void
test_depth(void **state __unused)
{
	size_t n = JSCHECK_MAX_DEPTH;
	char *s = malloc(2 * n + 2);

	assert_non_null(s);
	memset(s, '[', n);
	memset(s + n, ']', n);
	assert_true(jscheck_valid(s, 2 * n, NULL));
	memset(s, '[', n + 1);
	memset(s + n + 1, ']', n + 1);
	assert_false(jscheck_valid(s, 2 * n + 2, NULL));
	free(s);
}

/* S fed in pieces of 1 to 17 bytes, cut where SEED says. */
static bool
split_valid(const char *s, size_t len, unsigned seed)
{
	struct jscheck j;
	size_t at = 0, n;

	jscheck_init(&j);
	while (at < len) {
		seed = seed * 1103515245 + 12345;
		n = 1 + (seed >> 16) % 17;
		if (n > len - at)
			n = len - at;
		if (!jscheck_feed(&j, s + at, n))
			break;
		at += n;
	}
	return jscheck_end(&j, NULL);
}

/* Where a piece ends never matters: each case cut at every byte. */
static void
test_pieces(void **state __unused)
{
	static const char *const texts[] = {
		"{\"a\":[1,-2.5e+10,true,false,null,\"\\u00e9\\ud83d\\ude00\\n\"]}",
		"\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 a long enough run\"",
		"[0, 10, 1.5, 2e3]",
		"\"\\ud83d\\u0041\"",
		"[1,]",
		"123",
		"nul",
	};
	struct jscheck j;
	size_t i, cut, at, at2;
	bool whole, ok;

	for (i = 0; i < nitems(texts); i++) {
		size_t len = strlen(texts[i]);

		whole = jscheck_valid(texts[i], len, &at);
		for (cut = 0; cut <= len; cut++) {
			jscheck_init(&j);
			(void)jscheck_feed(&j, texts[i], cut);
			(void)jscheck_feed(&j, texts[i] + cut, len - cut);
			ok = jscheck_end(&j, &at2);
			if (ok != whole || (!ok && at2 != at))
				fail_msg(
				    "text %zu cut at %zu: %d (at %zu), whole "
				    "%d (at %zu)",
				    i, cut, ok, at2, whole, at);
		}
	}
	/* A text that ends too soon is wrong at its end. */
	assert_false(jscheck_valid("{\"a\":", 5, &at));
	assert_int_equal(at, 5);
}

/*
 * Random edits (a byte replaced, dropped or doubled) of answers a catalog
 * gives, judged by jansson: the same verdict, except where jansson
 * refuses a number it cannot hold (well-formed JSON all the same).
 */
static void
test_against_jansson(void **state __unused)
{
	static const char *const seeds[] = {
		"{\"metadata-location\":\"s3://b/t/m.json\",\"metadata\":{"
		"\"format-version\":2,\"schemas\":[{\"type\":\"struct\","
		"\"fields\":[{\"id\":1,\"name\":\"\xc3\xa9t\xc3\xa9\","
		"\"required\":false,\"type\":\"long\"}]}],\"last-updated-ms\":"
		"1743410787268,\"properties\":{\"k\":\"v\\u00e9\\ud83d\\ude00\"}},"
		"\"config\":{\"s3.endpoint\":\"http://x\",\"n\":-1.5e-3,"
		"\"t\":true,\"f\":false,\"z\":null}}",
		"{\"namespaces\":[[\"db\"],[\"a\",\"b\"]],\"next-page-token\":null}",
		"[[],{},[{}],\"\",0,-0,1e5,2.25E-2]",
	};
	static const char alphabet[] = "{}[]\",:\\0123456789.eE+-tfnrul "
				       "\xc3\xa9\xff\x01";
	char buf[1024];
	json_error_t jerr;
	json_t *j;
	size_t i, len, pos;
	unsigned seed = 12345, k, mismatches = 0, runs = 0;
	bool want;

	for (k = 0; k < 60000; k++) {
		const char *src = seeds[k % nitems(seeds)];

		len = strlen(src);
		memcpy(buf, src, len);
		for (i = 0; i < 1 + k % 3; i++) {
			seed = seed * 1103515245 + 12345;
			pos = (seed >> 8) % len;
			switch ((seed >> 4) % 3) {
			case 0:
				buf[pos] = alphabet[(seed >> 16) %
				    (sizeof(alphabet) - 1)];
				break;
			case 1:
				memmove(buf + pos, buf + pos + 1,
				    len - pos - 1);
				len--;
				break;
			default:
				if (len + 1 < sizeof(buf)) {
					memmove(buf + pos + 1, buf + pos,
					    len - pos);
					len++;
				}
				break;
			}
		}
		j = json_loadb(buf, len, JSON_DECODE_ANY | JSON_ALLOW_NUL,
		    &jerr);
		want = j != NULL;
		json_decref(j);
		if (!want &&
		    (strstr(jerr.text, "too big") != NULL ||
			strstr(jerr.text, "overflow") != NULL))
			continue;
		runs++;
		/* Fed in one piece, and in pieces cut anywhere. */
		if (jscheck_valid(buf, len, NULL) != want ||
		    split_valid(buf, len, seed) != want) {
			if (mismatches++ < 5)
				print_message(
				    "mismatch (jansson %s: %s): %.*s\n",
				    want ? "ok" : "error",
				    want ? "" : jerr.text, (int)len, buf);
		}
	}
	assert_true(runs > 50000);
	assert_int_equal(mismatches, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_against_jansson),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
