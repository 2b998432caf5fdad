/*
 * floe: memfind.c -- substring search by first and last byte. With SSE2
 * (every x86-64) sixteen positions are tested at once for the needle's
 * first byte there and its last byte NLEN - 1 further on; the two rarely
 * match together, and only where they do are the bytes between compared.
 * Where the CPU has AVX2 (asked once), thirty-two at once first. glibc's
 * memmem spends most of its time on the answers floe rewrites setting up
 * and stepping its two-way search.
 */
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MEMFIND_AVX2 1
#endif

#include "lib/memfind.h"

#ifdef MEMFIND_AVX2
/*
 * The 32-byte blocks of the search: the match, or NULL with *AT where the
 * narrower loops go on.
 */
__attribute__((__target__("avx2"))) static const unsigned char *
memfind_avx2(const unsigned char *h, size_t len, const unsigned char *n,
    size_t nlen, size_t *at)
{
	const __m256i first = _mm256_set1_epi8((char)n[0]);
	const __m256i last = _mm256_set1_epi8((char)n[nlen - 1]);
	__m256i a, b, m0, m1;
	unsigned mask;
	uint64_t mask64;
	size_t i;

	/* 64 positions a turn, one test for the two halves. */
	for (i = 0; i + nlen - 1 + 64 <= len; i += 64) {
		a = _mm256_loadu_si256((const __m256i *)(h + i));
		b = _mm256_loadu_si256((const __m256i *)(h + i + nlen - 1));
		m0 = _mm256_and_si256(_mm256_cmpeq_epi8(a, first),
		    _mm256_cmpeq_epi8(b, last));
		a = _mm256_loadu_si256((const __m256i *)(h + i + 32));
		b = _mm256_loadu_si256(
		    (const __m256i *)(h + i + 32 + nlen - 1));
		m1 = _mm256_and_si256(_mm256_cmpeq_epi8(a, first),
		    _mm256_cmpeq_epi8(b, last));
		a = _mm256_or_si256(m0, m1);
		if (_mm256_testz_si256(a, a))
			continue;
		mask64 = (uint32_t)_mm256_movemask_epi8(m0) |
		    (uint64_t)(uint32_t)_mm256_movemask_epi8(m1) << 32;
		while (mask64 != 0) {
			size_t pos = i + (size_t)__builtin_ctzll(mask64);

			if (memcmp(h + pos + 1, n + 1, nlen - 2) == 0)
				return h + pos;
			mask64 &= mask64 - 1;
		}
	}
	for (; i + nlen - 1 + 32 <= len; i += 32) {
		a = _mm256_loadu_si256((const __m256i *)(h + i));
		b = _mm256_loadu_si256((const __m256i *)(h + i + nlen - 1));
		mask = (unsigned)_mm256_movemask_epi8(
		    _mm256_and_si256(_mm256_cmpeq_epi8(a, first),
			_mm256_cmpeq_epi8(b, last)));
		while (mask != 0) {
			size_t pos = i + (size_t)__builtin_ctz(mask);

			if (memcmp(h + pos + 1, n + 1, nlen - 2) == 0)
				return h + pos;
			mask &= mask - 1;
		}
	}
	*at = i;
	return NULL;
}

/* Whether the CPU has AVX2, asked once. */
static int
memfind_has_avx2(void)
{
	static int has = -1;

	if (has == -1)
		has = __builtin_cpu_supports("avx2") ? 1 : 0;
	return has;
}
#endif

const void *
memfind(const void *hay, size_t len, const void *needle, size_t nlen)
{
	const unsigned char *h = hay, *n = needle;
	size_t i = 0;

	if (nlen == 0)
		return hay;
	if (len < nlen)
		return NULL;
	if (nlen == 1)
		return memchr(hay, n[0], len);
#ifdef MEMFIND_AVX2
	if (memfind_has_avx2()) {
		const unsigned char *r = memfind_avx2(h, len, n, nlen, &i);

		if (r != NULL)
			return r;
	}
#endif
#ifdef __SSE2__
	{
		const __m128i first = _mm_set1_epi8((char)n[0]);
		const __m128i last = _mm_set1_epi8((char)n[nlen - 1]);
		__m128i a, b;
		unsigned mask;

		for (; i + nlen - 1 + 16 <= len; i += 16) {
			a = _mm_loadu_si128((const __m128i *)(h + i));
			b = _mm_loadu_si128(
			    (const __m128i *)(h + i + nlen - 1));
			mask = (unsigned)_mm_movemask_epi8(
			    _mm_and_si128(_mm_cmpeq_epi8(a, first),
				_mm_cmpeq_epi8(b, last)));
			while (mask != 0) {
				size_t at = i + (size_t)__builtin_ctz(mask);

				if (memcmp(h + at + 1, n + 1, nlen - 2) == 0)
					return h + at;
				mask &= mask - 1;
			}
		}
	}
#endif
	/* The last positions (fewer than 16 with SSE2), one at a time. */
	for (; i + nlen <= len; i++)
		if (h[i] == n[0] && h[i + nlen - 1] == n[nlen - 1] &&
		    memcmp(h + i + 1, n + 1, nlen - 2) == 0)
			return h + i;
	return NULL;
}
