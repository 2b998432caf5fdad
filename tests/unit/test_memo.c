/*
 * floe: test_memo.c -- the memo of checked answers: a hit and what it
 * reuses (only with the same parameters, only of the same body); an
 * answer compared with the memo that differs at any offset, is shorter
 * or longer, has the verdict and error offset the JSON check gives it
 * alone, in pieces cut anywhere; the budget in LRU order, the entry cap,
 * the back-off of an entry that keeps missing; a buffer sent outlives
 * its entry; the figures /status shows (an entry per side and key, the
 * bytes held within the budget).
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

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "cache/memo.h"

#define K(s) (s), strlen(s)

/* A valid text with every kind of token, escapes and UTF-8 in it. */
static const char text[] =
    "{\"metadata-location\":\"s3://b/m.json\",\"metadata\":{\"v\":2,"
    "\"n\":[-1.5e3,0,true,false,null,{}],\"s\":\"a\\u00e9\\n\xc3\xa9"
    "\\ud83d\\ude00\"},\"config\":{\"k\":\"v\"}}  ";

/* A buffer holding a copy of the N bytes at S. */
static struct memo_buf *
mkbuf(const char *s, size_t n)
{
	struct memo_buf *b = memo_buf_new(n);

	memcpy(b->data, s, n);
	return b;
}

static void
test_hit(void **state __unused)
{
	struct memo *m = memo_new(1 << 20);
	struct memo_buf *in = mkbuf(K("{\"a\":1}")), *out, *got, *other;
	struct memo_stats st;

	assert_null(memo_get(m, 0, K("/v1/t")));
	out = mkbuf(K("{\"a\":1,\"config\":{}}"));
	memo_put(m, 0, K("/v1/t"), in, K("P1"), out, false);
	memo_buf_unref(out);
	/* Another side, another key: nothing. */
	assert_null(memo_get(m, 1, K("/v1/t")));
	assert_null(memo_get(m, 0, K("/v1/t2")));
	got = memo_get(m, 0, K("/v1/t"));
	assert_ptr_equal(got, in);
	assert_int_equal(memo_hit(m, 0, K("/v1/t"), got, K("P1"), &out),
	    MEMO_OUT_BUF);
	assert_int_equal(out->len, 19);
	assert_memory_equal(out->data, "{\"a\":1,\"config\":{}}", 19);
	memo_buf_unref(out);
	/* Other parameters: not reused. */
	assert_int_equal(memo_hit(m, 0, K("/v1/t"), got, K("P2"), &out),
	    MEMO_OUT_NONE);
	assert_null(out);
	assert_int_equal(memo_hit(m, 0, K("/v1/t"), got, K("P"), &out),
	    MEMO_OUT_NONE);
	/* Refreshed with another body: the old body's hit reuses nothing. */
	other = mkbuf(K("{\"a\":2}"));
	memo_put(m, 0, K("/v1/t"), other, K("P1"), NULL, true);
	assert_int_equal(memo_hit(m, 0, K("/v1/t"), got, K("P1"), &out),
	    MEMO_OUT_NONE);
	assert_int_equal(memo_hit(m, 0, K("/v1/t"), other, K("P1"), &out),
	    MEMO_OUT_SAME);
	/* Kept with no parameters: nothing reused. */
	memo_put(m, 0, K("/v1/t"), other, NULL, 0, NULL, true);
	assert_int_equal(memo_hit(m, 0, K("/v1/t"), other, NULL, 0, &out),
	    MEMO_OUT_NONE);
	memo_get_stats(m, &st);
	assert_int_equal(st.hits, 6);
	assert_int_equal(st.stores, 3);
	assert_int_equal(st.entries, 1);
	memo_buf_unref(got);
	memo_buf_unref(in);
	memo_buf_unref(other);
	memo_free(m);
}

/* A streamed rewrite's edits: kept per body and parameters, charged. */
static void
test_edits(void **state __unused)
{
	struct memo *m = memo_new(1 << 20);
	struct memo_buf *in = mkbuf(K("{\"a\":1}")), *ed = mkbuf(K("E1"));
	struct memo_buf *ed2 = mkbuf(K("E22")), *other = mkbuf(K("{}")), *got;
	struct memo_stats st0, st;

	memo_put(m, 0, K("/v1/t"), in, NULL, 0, NULL, false);
	assert_null(memo_edits(m, 0, K("/v1/t"), in, K("P1")));
	memo_get_stats(m, &st0);
	memo_put_edits(m, 0, K("/v1/t"), in, K("P1"), ed);
	memo_get_stats(m, &st);
	assert_int_equal(st.bytes, st0.bytes + 2 + 2);
	got = memo_edits(m, 0, K("/v1/t"), in, K("P1"));
	assert_ptr_equal(got, ed);
	memo_buf_unref(got);
	/* Other parameters, another body, another key: none. */
	assert_null(memo_edits(m, 0, K("/v1/t"), in, K("P2")));
	assert_null(memo_edits(m, 0, K("/v1/t"), other, K("P1")));
	assert_null(memo_edits(m, 1, K("/v1/t"), in, K("P1")));
	/* For another body than the entry's: not kept. */
	memo_put_edits(m, 0, K("/v1/t"), other, K("P2"), ed2);
	assert_null(memo_edits(m, 0, K("/v1/t"), other, K("P2")));
	/* Other parameters: they replace the first. */
	memo_put_edits(m, 0, K("/v1/t"), in, K("P2"), ed2);
	assert_null(memo_edits(m, 0, K("/v1/t"), in, K("P1")));
	got = memo_edits(m, 0, K("/v1/t"), in, K("P2"));
	assert_ptr_equal(got, ed2);
	memo_buf_unref(got);
	/* The whole rewrite with the same parameters: the edits stay. */
	memo_put(m, 0, K("/v1/t"), in, K("P2"), other, false);
	got = memo_edits(m, 0, K("/v1/t"), in, K("P2"));
	assert_ptr_equal(got, ed2);
	memo_buf_unref(got);
	/* ... with others: they go. */
	memo_put(m, 0, K("/v1/t"), in, K("P3"), NULL, false);
	assert_null(memo_edits(m, 0, K("/v1/t"), in, K("P2")));
	assert_null(memo_edits(m, 0, K("/v1/t"), in, K("P3")));
	memo_put_edits(m, 0, K("/v1/t"), in, K("P2"), ed2);
	/* The entry refreshed: its edits go. */
	memo_put(m, 0, K("/v1/t"), other, K("P2"), NULL, false);
	assert_null(memo_edits(m, 0, K("/v1/t"), other, K("P2")));
	memo_get_stats(m, &st);
	assert_int_equal(st.bytes, st0.bytes - 7 + 2 + 2);
	/* The memo off: none. */
	memo_put_edits(m, 0, K("/v1/t"), other, K("P2"), ed);
	memo_configure(m, 0);
	assert_null(memo_edits(m, 0, K("/v1/t"), other, K("P2")));
	memo_buf_unref(in);
	memo_buf_unref(ed);
	memo_buf_unref(ed2);
	memo_buf_unref(other);
	memo_free(m);
}

/*
 * ANS (N bytes) against MEMO in pieces of STEP bytes: the verdict and
 * offset must be jscheck_valid's of ANS alone, and a hit only for ANS
 * equal to MEMO.
 */
static void
check_against(struct memo_buf *memo, const char *ans, size_t n, size_t step)
{
	struct memo_cmp mc;
	struct jscheck js;
	size_t at = 0, want_at = 0, off, take;
	bool ok, want, hit;

	want = jscheck_valid(ans, n, &want_at);
	jscheck_init(&js);
	memo_cmp_init(&mc, memo);
	for (off = 0; off < n; off += take) {
		take = n - off < step ? n - off : step;
		memo_cmp_feed(&mc, &js, ans + off, take);
	}
	hit = memo_cmp_end(&mc, &js);
	assert_null(mc.memo);
	if (n == memo->len && memcmp(ans, memo->data, n) == 0) {
		assert_true(hit);
		assert_int_equal(js.off, 0); /* nothing was checked */
		return;
	}
	assert_false(hit);
	ok = jscheck_end(&js, &at);
	if (ok != want || (!ok && at != want_at))
		fail_msg("%zu bytes in steps of %zu: %s at %zu, alone %s at "
			 "%zu",
		    n, step, ok ? "valid" : "invalid", at,
		    want ? "valid" : "invalid", want_at);
}

static void
test_cmp_every_offset(void **state __unused)
{
	static const char subs[] = { 'x', '"', '}', ']', '0', '\\', ' ', ',',
		':', '\0', (char)0xff, (char)0xc3, '{' };
	static const size_t steps[] = { 1, 2, 3, 7, 64, 4096 };
	size_t n = sizeof(text) - 1, k, i, j;
	struct memo_buf *memo = mkbuf(text, n);
	char ans[sizeof(text) + 16];

	assert_true(jscheck_valid(text, n, NULL));
	for (j = 0; j < nitems(steps); j++) {
		/* The same: a hit. */
		check_against(memo, text, n, steps[j]);
		for (k = 0; k < n; k++) {
			/* One byte changed at K. */
			for (i = 0; i < nitems(subs); i++) {
				if (subs[i] == text[k])
					continue;
				memcpy(ans, text, n);
				ans[k] = subs[i];
				check_against(memo, ans, n, steps[j]);
			}
			/* Cut short at K; the memo's prefix, then garbage. */
			check_against(memo, text, k, steps[j]);
			memcpy(ans, text, k);
			memcpy(ans + k, "<html>", 6);
			check_against(memo, ans, k + 6, steps[j]);
		}
		/* Longer: valid and not. */
		memcpy(ans, text, n);
		memcpy(ans + n, " \n", 2);
		check_against(memo, ans, n + 2, steps[j]);
		memcpy(ans + n, "{}", 2);
		check_against(memo, ans, n + 2, steps[j]);
	}
	memo_buf_unref(memo);
}

/*
 * A text of many blocks (the comparison's memcmp steps): a change at
 * every offset, found where it is.
 */
static void
test_cmp_long(void **state __unused)
{
	static const size_t steps[] = { 5, 1000, 1 << 16 };
	char *t = malloc(4096), *ans = malloc(4096);
	struct memo_buf *memo;
	struct memo_cmp mc;
	struct jscheck js;
	size_t n = 0, k, j;
	int i;

	assert_non_null(t);
	assert_non_null(ans);
	n += snprintf(t + n, 4096 - n, "{\"a\":[");
	for (i = 0; i < 150; i++)
		n += snprintf(t + n, 4096 - n, "\"0123456789abcde%c\",",
		    'a' + i % 26);
	n += snprintf(t + n, 4096 - n, "1]}");
	assert_true(n > 3 * 256);
	memo = mkbuf(t, n);
	for (j = 0; j < nitems(steps); j++)
		for (k = 0; k < n; k++) {
			memcpy(ans, t, n);
			ans[k] = ans[k] == 'x' ? 'y' : 'x';
			check_against(memo, ans, n, steps[j]);
			/* The difference is found at K: the bytes before. */
			jscheck_init(&js);
			memo_cmp_init(&mc, memo);
			memo_cmp_feed(&mc, &js, ans, n);
			assert_null(mc.memo);
			assert_true(js.off >= k);
		}
	/* Each byte of a word, with equal words after it. */
	for (k = 0; k < 16; k++) {
		memcpy(ans, t, n);
		ans[300 + k] ^= 1;
		jscheck_init(&js);
		memo_cmp_init(&mc, memo);
		memo_cmp_feed(&mc, &js, ans, 256 + 64);
		memo_cmp_feed(&mc, &js, ans + 320, n - 320);
		assert_null(mc.memo);
		assert_int_equal(mc.at, 300 + k);
	}
	memo_buf_unref(memo);
	free(t);
	free(ans);
}

/* What memo_cmp says of an answer not JSON with the memo's exact prefix. */
static void
test_cmp_not_json(void **state __unused)
{
	struct memo_buf *memo = mkbuf(K("{\"a\":[1,2,3]}"));
	static const char ans[] = "{\"a\":[1,2,3]}}";
	struct memo_cmp mc;
	struct jscheck js;
	size_t at = 0;

	jscheck_init(&js);
	memo_cmp_init(&mc, memo);
	assert_true(memo_cmp_feed(&mc, &js, ans, 5));
	assert_int_equal(mc.at, 5);
	assert_false(memo_cmp_feed(&mc, &js, ans + 5, sizeof(ans) - 6));
	assert_false(memo_cmp_end(&mc, &js));
	assert_false(jscheck_end(&js, &at));
	assert_int_equal(at, 13);
	/* Stopped midway: the check has the bytes compared so far. */
	jscheck_init(&js);
	memo_cmp_init(&mc, memo);
	assert_true(memo_cmp_feed(&mc, &js, ans, 6));
	memo_cmp_stop(&mc, &js);
	assert_int_equal(js.off, 6);
	assert_true(memo_cmp_feed(&mc, &js, ans + 6, 7));
	assert_true(jscheck_end(&js, NULL));
	/* No memo: a plain check. */
	jscheck_init(&js);
	memo_cmp_init(&mc, NULL);
	assert_true(memo_cmp_feed(&mc, &js, ans, 13));
	assert_false(memo_cmp_end(&mc, &js));
	assert_true(jscheck_end(&js, NULL));
	memo_buf_unref(memo);
}

/* Put an entry of about N bytes under KEY. */
static void
put_n(struct memo *m, const char *key, size_t n)
{
	struct memo_buf *b = memo_buf_new(n);

	memset(b->data, ' ', n);
	memo_put(m, 0, key, strlen(key), b, NULL, 0, NULL, true);
	memo_buf_unref(b);
}

static bool
has(struct memo *m, const char *key)
{
	struct memo_buf *b = memo_get(m, 0, key, strlen(key));

	memo_buf_unref(b);
	return b != NULL;
}

static void
test_budget_lru_cap(void **state __unused)
{
	struct memo *m = memo_new(16384);
	struct memo_buf *b, *out;
	struct memo_stats st;

	assert_true(memo_is_on(m));
	assert_int_equal(memo_entry_max(m), 4096);
	put_n(m, "a", 3000);
	put_n(m, "b", 3000);
	put_n(m, "c", 3000);
	put_n(m, "d", 3000);
	put_n(m, "e", 3000);
	/* A hit makes "a" the most recent: "b" goes first. */
	b = memo_get(m, 0, K("a"));
	memo_hit(m, 0, K("a"), b, NULL, 0, &out);
	memo_buf_unref(b);
	put_n(m, "f", 3000);
	assert_true(has(m, "a"));
	assert_false(has(m, "b"));
	assert_true(has(m, "f"));
	memo_get_stats(m, &st);
	assert_true(st.bytes <= 16384);
	assert_int_equal(st.evictions, 1);
	/* Larger than an entry may be: neither stored nor asked to be. */
	assert_false(memo_miss(m, 0, K("big"), 4097));
	put_n(m, "big", 4097);
	assert_false(has(m, "big"));
	assert_true(memo_miss(m, 0, K("big"), 4096));
	/* A smaller budget evicts down to it; 0 turns it off. */
	memo_configure(m, 4000);
	memo_get_stats(m, &st);
	assert_true(st.bytes <= 4000);
	assert_int_equal(st.entries, 1);
	memo_configure(m, 0);
	assert_false(memo_is_on(m));
	assert_int_equal(memo_entry_max(m), 0);
	assert_false(has(m, "f"));
	assert_false(memo_miss(m, 0, K("f"), 10));
	put_n(m, "g", 10);
	assert_false(has(m, "g"));
	assert_false(memo_wants(m, 0, K("g")));
	memo_free(m);
	/* The cap is MEMO_ENTRY_MAX for a large budget. */
	m = memo_new(1ull << 30);
	assert_int_equal(memo_entry_max(m), MEMO_ENTRY_MAX);
	memo_free(m);
	memo_free(NULL);
}

/* What /status and /metrics show: bytes, entries, budget. */
static void
test_figures(void **state __unused)
{
	struct memo *m = memo_new(1 << 20);
	struct memo_buf *b = mkbuf(K("{\"a\":1}"));
	struct memo_stats st, st1;

	memo_get_stats(m, &st);
	assert_int_equal(st.budget, 1 << 20);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.entries, 0);
	/* One entry per side and key; the same key again replaces it. */
	memo_put(m, 0, K("/v1/t"), b, NULL, 0, NULL, true);
	memo_get_stats(m, &st1);
	assert_int_equal(st1.entries, 1);
	assert_true(st1.bytes > 7);
	memo_put(m, 0, K("/v1/t"), b, NULL, 0, NULL, true);
	memo_get_stats(m, &st);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.bytes, st1.bytes);
	memo_put(m, 1, K("/v1/t"), b, NULL, 0, NULL, true);
	memo_put(m, 0, K("/v1/u"), b, NULL, 0, NULL, true);
	memo_get_stats(m, &st);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.bytes, 3 * st1.bytes);
	assert_true(st.bytes <= st.budget);
	/* Off: nothing held, no budget. */
	memo_configure(m, 0);
	memo_get_stats(m, &st);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.budget, 0);
	memo_buf_unref(b);
	memo_free(m);
}

static void
test_backoff(void **state __unused)
{
	struct memo *m = memo_new(1 << 20);
	struct memo_buf *b, *out;
	unsigned i;
	char want[32];
	char got[32];

	/* No entry: always stored (and wanted). */
	assert_true(memo_wants(m, 0, K("t")));
	assert_true(memo_miss(m, 0, K("t"), 10));
	assert_true(memo_miss(m, 0, K("t"), 10));
	put_n(m, "t", 10);
	/* Misses in a row: stored at the 1st, 2nd, 4th, 8th, 16th. */
	for (i = 1; i <= 15; i++) {
		/*
		 * memo_wants says beforehand what the miss will say, and
		 * memo_get gives the body to compare only then.
		 */
		assert_int_equal(memo_wants(m, 0, K("t")), (i & (i - 1)) == 0);
		assert_int_equal(has(m, "t"), (i & (i - 1)) == 0);
		got[i - 1] = memo_miss(m, 0, K("t"), 10) ? 'y' : '.';
		want[i - 1] = (i & (i - 1)) == 0 ? 'y' : '.';
	}
	got[15] = want[15] = '\0';
	assert_string_equal(got, want);
	/* The 16th is compared, and is the memo's: a hit starts it again. */
	b = memo_get(m, 0, K("t"));
	assert_non_null(b);
	memo_hit(m, 0, K("t"), b, NULL, 0, &out);
	memo_buf_unref(b);
	assert_true(memo_miss(m, 0, K("t"), 10));
	assert_true(memo_miss(m, 0, K("t"), 10));
	assert_false(memo_miss(m, 0, K("t"), 10));
	/* A refresh keeps the count. */
	put_n(m, "t", 10);
	assert_true(memo_miss(m, 0, K("t"), 10));
	memo_free(m);
}

static void
test_ref_outlives_entry(void **state __unused)
{
	struct memo *m = memo_new(1 << 20);
	struct memo_buf *in = mkbuf(K("{}")), *out = mkbuf(K("{\"c\":1}"));
	struct memo_buf *sent, *held;

	memo_put(m, 1, K("t"), in, K("p"), out, false);
	memo_buf_unref(out);
	held = memo_get(m, 1, K("t"));
	assert_int_equal(memo_hit(m, 1, K("t"), held, K("p"), &sent),
	    MEMO_OUT_BUF);
	/* Evicted (and the memo gone) while the answer is being sent. */
	memo_configure(m, 0);
	memo_free(m);
	assert_int_equal(sent->refs, 1);
	assert_memory_equal(sent->data, "{\"c\":1}", 7);
	assert_int_equal(held->refs, 2);
	memo_buf_unref(sent);
	memo_buf_unref(held);
	assert_int_equal(in->refs, 1);
	assert_memory_equal(in->data, "{}", 2);
	memo_buf_unref(in);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit),
		cmocka_unit_test(test_edits),
		cmocka_unit_test(test_cmp_every_offset),
		cmocka_unit_test(test_cmp_long),
		cmocka_unit_test(test_cmp_not_json),
		cmocka_unit_test(test_budget_lru_cap),
		cmocka_unit_test(test_figures),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_ref_outlives_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
