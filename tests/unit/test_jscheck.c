/*
 * floe: test_jscheck.c -- lib/jscheck.c: well-formed and malformed JSON
 * texts by hand (values, nesting, strings, escapes and surrogates, UTF-8
 * edges, numbers, what may surround a value, the body of a corrupt
 * catalog), and against jansson: random edits of real answers must be
 * judged as jansson judges them. Each text is also fed in pieces (cut at
 * every byte, and a byte at a time): the verdict and the offset of the
 * first wrong byte must be those of the text in one piece. Each piece is
 * fed from a copy of its own size, so that a read past a piece's end is
 * seen (make SAN=1, valgrind). The bytes that end a run (a quote, an
 * escape, a control byte, UTF-8; a digit run's end; whitespace's end) are
 * put at every offset of two blocks of 16 bytes (SSE2) or 8 (words).
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

/* Feed the N bytes at S from a copy of exactly N bytes. */
static bool
feed_copy(struct jscheck *st, const char *s, size_t n)
{
	char *c = malloc(n > 0 ? n : 1);
	bool ok;

	assert_non_null(c);
	memcpy(c, s, n);
	ok = jscheck_feed(st, c, n);
	free(c);
	return ok;
}

/* jscheck_valid over a copy of exactly LEN bytes. */
static bool
valid_copy(const char *s, size_t len, size_t *at)
{
	char *c = malloc(len > 0 ? len : 1);
	bool ok;

	assert_non_null(c);
	memcpy(c, s, len);
	ok = jscheck_valid(c, len, at);
	free(c);
	return ok;
}

/*
 * S (LEN bytes) fed cut at every byte, and a byte at a time, must be
 * judged as in one piece, the wrong byte at the same offset.
 */
static void
check_pieces(const char *s, size_t len)
{
	struct jscheck st;
	size_t i, at, whole_at = 0, piece_at;
	bool whole, got;

	whole = valid_copy(s, len, &whole_at);
	for (i = 0; i <= len; i++) {
		jscheck_init(&st);
		feed_copy(&st, s, i);
		feed_copy(&st, s + i, len - i);
		piece_at = (size_t)-1;
		got = jscheck_end(&st, &piece_at);
		if (got != whole || (!whole && piece_at != whole_at))
			fail_msg("%.*s cut at %zu: %s at %zu, whole: %s at %zu",
			    (int)len, s, i, got ? "valid" : "invalid", piece_at,
			    whole ? "valid" : "invalid", whole_at);
	}
	jscheck_init(&st);
	for (i = 0; i < len; i++)
		if (!feed_copy(&st, s + i, 1))
			break;
	/* A wrong text is wrong from its first wrong byte on. */
	if (i < len) {
		assert_false(whole);
		assert_false(feed_copy(&st, s + i, len - i));
	}
	at = (size_t)-1;
	if (jscheck_end(&st, &at) != whole || (!whole && at != whole_at))
		fail_msg("%.*s a byte at a time: %s at %zu", (int)len, s,
		    whole ? "invalid" : "valid", at);
}

/* S (LEN bytes) cut at CUT: judged as in one piece. */
static void
check_pieces_at(const char *s, size_t len, size_t cut)
{
	struct jscheck st;
	size_t at = 0, piece_at = 0;
	bool whole = jscheck_valid(s, len, &at);

	jscheck_init(&st);
	jscheck_feed(&st, s, cut);
	jscheck_feed(&st, s + cut, len - cut);
	if (jscheck_end(&st, &piece_at) != whole || (!whole && piece_at != at))
		fail_msg("%.*s cut at %zu: not as whole", (int)len, s, cut);
}

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
		{ "[1", false },
		{ "[\"\\", false },
		{ "\"\\u", false },
		{ "\"\\ud83d\\", false },
		{ "\"\xf0\x9f\x98", false },
		{ "-1.5e", false },
		{ "-1.5e+", false },
		{ "[-0.0e-0,1E9,0.125]", true },
		{ "[true,false,null]", true },
		{ "[truefalse]", false },
		{ "{\"a\":nulx}", false },
	};
	size_t i, at;

	for (i = 0; i < nitems(cases); i++) {
		if (jscheck_valid(cases[i].s, strlen(cases[i].s), &at) !=
		    cases[i].ok)
			fail_msg("case %zu (%s): want %s", i, cases[i].s,
			    cases[i].ok ? "valid" : "invalid");
		check_pieces(cases[i].s, strlen(cases[i].s));
	}
	/* A NUL inside is a control character; the length is the caller's. */
	assert_false(jscheck_valid("\"a\0b\"", 5, NULL));
	check_pieces("\"a\0b\"", 5);
	assert_true(jscheck_valid("[1]xyz", 3, NULL));
	/* Where it goes wrong: the byte, or the token it begins. */
	assert_false(jscheck_valid("{\"a\":x}", 7, &at));
	assert_int_equal(at, 5);
	assert_false(jscheck_valid("[1, \"ab\\q\"]", 11, &at));
	assert_int_equal(at, 4);
	assert_false(jscheck_valid("[1, 2.x]", 8, &at));
	assert_int_equal(at, 4);
	assert_false(jscheck_valid("[1, tru", 7, &at));
	assert_int_equal(at, 4);
	assert_false(jscheck_valid("{\"a\":[1", 7, &at));
	assert_int_equal(at, 7);
	assert_false(jscheck_valid("{\"a\" 1}", 8, &at));
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
	check_pieces(s, 2 * n);
	memset(s, '[', n + 1);
	memset(s + n + 1, ']', n + 1);
	assert_false(jscheck_valid(s, 2 * n + 2, NULL));
	check_pieces(s, 2 * n + 2);
	free(s);
}

/*
 * Objects and arrays mixed to the limit, over every word of the stack: a
 * close of the wrong kind anywhere is wrong.
 */
static void
test_depth_mixed(void **state __unused)
{
	size_t n = JSCHECK_MAX_DEPTH, i, len = 0, wrong;
	char *s = malloc(7 * n + 2);

	assert_non_null(s);
	for (i = 0; i < n; i++) {
		if (i % 3 == 0)
			s[len++] = '[';
		else {
			memcpy(s + len, "{\"k\":", 5);
			len += 5;
		}
	}
	s[len++] = '0';
	for (i = n; i-- > 0;)
		s[len++] = i % 3 == 0 ? ']' : '}';
	assert_true(jscheck_valid(s, len, NULL));
	check_pieces(s, len);
	for (wrong = len - n; wrong < len; wrong += 61) {
		s[wrong] ^= ']' ^ '}';
		assert_false(jscheck_valid(s, len, NULL));
		s[wrong] ^= ']' ^ '}';
	}
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
 * S (LEN bytes, no NUL) judged as jansson judges it, whole and in pieces
 * cut at every byte; false when jansson cannot say (a number too big for
 * it, which is well-formed JSON all the same).
 */
static bool
judge(const char *s, size_t len)
{
	json_error_t jerr;
	json_t *j;
	bool want;

	j = json_loadb(s, len, JSON_DECODE_ANY, &jerr);
	want = j != NULL;
	json_decref(j);
	if (!want &&
	    (strstr(jerr.text, "too big") != NULL ||
		strstr(jerr.text, "overflow") != NULL))
		return false;
	if (valid_copy(s, len, NULL) != want)
		fail_msg("%.*s: jansson says %s", (int)len, s,
		    want ? "valid" : "invalid");
	check_pieces(s, len);
	return true;
}

/*
 * In a string, each byte or escape that ends a run of plain ASCII, after
 * 0 to 33 plain bytes and before 0, 1, 7, 8, 9, 15, 16 or 17 more, the
 * string after 0 to 3 bytes of the text: every offset of two blocks of
 * 16 and four of 8, a string that ends exactly at a block's end, before
 * and after a piece's (each text is also cut at every byte). And every
 * byte value in a string, at offsets over two blocks.
 */
static void
test_string_blocks(void **state __unused)
{
	static const char *const stops[] = {
		"\\n",
		"\\\"",
		"\\u00e9",
		"\\ud83d\\ude00",
		"\\ud83d",
		"\\q",
		"\x01",
		"\x1f",
		"\x7f",
		"\xc3\xa9",
		"\xe2\x82\xac",
		"\xf0\x9f\x98\x80",
		"\xc3",
		"\xed\xa0\x80",
		"\xf4\x90\x80\x80",
		"\xff",
		"\"",
		"",
	};
	static const size_t afters[] = { 0, 1, 7, 8, 9, 15, 16, 17 };
	char buf[128];
	size_t lead, k, x, m, len;

	for (lead = 0; lead < 4; lead++)
		for (x = 0; x < nitems(stops); x++)
			for (k = 0; k <= 33; k++)
				for (m = 0; m < nitems(afters); m++) {
					len = 0;
					memcpy(buf, "[[[", lead);
					len += lead;
					buf[len++] = '"';
					memset(buf + len, 'a', k);
					len += k;
					memcpy(buf + len, stops[x],
					    strlen(stops[x]));
					len += strlen(stops[x]);
					memset(buf + len, 'b', afters[m]);
					len += afters[m];
					buf[len++] = '"';
					memcpy(buf + len, "]]]", lead);
					len += lead;
					assert_true(judge(buf, len));
				}
	/* Every byte but NUL (a case of its own) alone at each offset. */
	for (x = 1; x < 256; x++)
		for (k = 0; k <= 33; k += 3) {
			len = 0;
			buf[len++] = '"';
			memset(buf + len, 'a', k);
			len += k;
			buf[len++] = (char)x;
			memset(buf + len, 'b', 17);
			len += 17;
			buf[len++] = '"';
			assert_true(judge(buf, len));
		}
}

/*
 * Numbers with runs of 1 to 40 digits, in each part, followed by what
 * ends them or by something wrong, alone (ended by the text's end) and
 * in an array.
 */
static void
test_number_blocks(void **state __unused)
{
	static const char *const forms[] = { "%s", "-%s", "1.%s", "%s.5",
		"%se%s", "0.%sE-%s", "%s.", "%se", "%s.%sx", "-0%s", "%s-1",
		"%s/", "%s:1", "1.%s/", "1e%s:" };
	char digits[48], num[160], buf[200];
	size_t d, f;
	int len;

	for (d = 1; d <= 40; d++) {
		for (f = 0; f < d; f++)
			digits[f] = (char)('1' + (d + f) % 9);
		digits[d] = '\0';
		for (f = 0; f < nitems(forms); f++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
			snprintf(num, sizeof(num), forms[f], digits, digits);
#pragma GCC diagnostic pop
			judge(num, strlen(num));
			len = snprintf(buf, sizeof(buf), "[%s]", num);
			judge(buf, (size_t)len);
			len = snprintf(buf, sizeof(buf), "{\"k\":%s,\"l\":0}",
			    num);
			judge(buf, (size_t)len);
		}
	}
	/* Every byte but NUL after runs of digits over two blocks. */
	for (d = 1; d <= 33; d += 4)
		for (f = 1; f < 256; f++) {
			memset(buf, '7', d);
			buf[0] = '[';
			buf[d] = (char)f;
			buf[d + 1] = ']';
			judge(buf, d + 2);
			judge(buf + 1, d);
		}
	/* Integers jansson holds are judged, not skipped. */
	assert_true(judge("[123456789012345678]", 20));
}

/*
 * Whitespace runs of 0 to 40 bytes (each of the four kinds) between
 * every two tokens, and a control byte that is not whitespace ending one.
 */
static void
test_space_blocks(void **state __unused)
{
	static const char ws[] = " \t\n\r";
	static const char *const ends[] = { "", "\x0b", "\x0c", "\x01" };
	char run[48], buf[640];
	size_t r, w, e, i;
	int len;

	for (r = 0; r <= 40; r++)
		for (w = 0; w < 4; w++)
			for (e = 0; e < nitems(ends); e++) {
				for (i = 0; i < r; i++)
					run[i] = ws[(w + i / 3) % 4];
				run[r] = '\0';
				len = snprintf(buf, sizeof(buf),
				    "%s%s{%s\"a\"%s:%s[%s1%s,%s\"b\"%s]%s,%s"
				    "\"c\":true%s}%s",
				    run, ends[e], run, run, run, run, run, run,
				    run, run, run, run, run);
				assert_true(
				    len > 0 && (size_t)len < sizeof(buf));
				assert_true(judge(buf, (size_t)len));
			}
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
		check_pieces_at(buf, len, (seed >> 3) % (len + 1));
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
		cmocka_unit_test(test_depth_mixed),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_string_blocks),
		cmocka_unit_test(test_number_blocks),
		cmocka_unit_test(test_space_blocks),
		cmocka_unit_test(test_against_jansson),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
