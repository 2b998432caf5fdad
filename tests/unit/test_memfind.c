/*
 * floe: test_memfind.c -- lib/memfind.c against memmem: fixed edge cases
 * (empty needle, needle longer than the buffer, matches at both ends and
 * straddling the 16- and 32-byte steps) and random buffers over a small
 * alphabet, so that partial matches are common.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "lib/memfind.h"

/* memfind must give what memmem gives. */
static void
check(const char *hay, size_t len, const char *needle, size_t nlen)
{
	const void *want = memmem(hay, len, needle, nlen);
	const void *got = memfind(hay, len, needle, nlen);

	assert_ptr_equal(got, want);
}

/* Edges: sizes around the needle and the SSE2 step, matches at the ends. */
static void
test_edges(void **state __unused)
{
	const char *url = "http://127.0.0.1:29002";
	size_t ulen = strlen(url), len, at;
	char buf[128];

	check("abc", 3, "", 0);
	check("", 0, "a", 1);
	check("abc", 3, "abcd", 4);
	check("abc", 3, "c", 1);
	check("abc", 3, "x", 1);
	check("ab", 2, "ab", 2);
	check("aab", 3, "ab", 2);
	for (len = ulen; len < sizeof(buf); len++) {
		for (at = 0; at + ulen <= len; at++) {
			memset(buf, 'h', len);
			memcpy(buf + at, url, ulen);
			check(buf, len, url, ulen);
			/* Same first and last byte, one byte off in between. */
			buf[at + ulen / 2] ^= 1;
			check(buf, len, url, ulen);
		}
		memset(buf, '2', len);
		check(buf, len, url, ulen);
	}
}

/* Random buffers over "ab" and "abc": many near misses. */
static void
test_random(void **state __unused)
{
	char hay[300], needle[24];
	size_t len, nlen, i;
	int round, k;

	srandom(7);
	for (round = 0; round < 20000; round++) {
		k = 2 + round % 2;
		len = (size_t)random() % sizeof(hay);
		nlen = 1 + (size_t)random() % (sizeof(needle) - 1);
		for (i = 0; i < len; i++)
			hay[i] = (char)('a' + random() % k);
		for (i = 0; i < nlen; i++)
			needle[i] = (char)('a' + random() % k);
		/* Now and then plant the needle. */
		if (round % 3 == 0 && nlen <= len)
			memcpy(hay + (size_t)random() % (len - nlen + 1),
			    needle, nlen);
		check(hay, len, needle, nlen);
	}
}

/* Run every case. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
