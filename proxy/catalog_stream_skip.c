/*
 * floe: catalog_stream_skip.c -- the streamed rewrite's skip over what is
 * nested deeper than the merge looks (stream_skip, for stream_scan in
 * catalog_stream.c): 64 bytes at a time, with SSE2, or AVX2 where the CPU
 * has it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
/* AVX2 where the CPU has it (asked once); CATALOG_STREAM_SSE2: never. */
#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__) &&           \
    !defined(CATALOG_STREAM_SSE2)
#define STREAM_AVX2 1
#include <immintrin.h>
#endif

#include "lib/jscheck.h"
#include "proxy/catalog.h"
#include "proxy/catalog_impl.h"

#if defined(__SSE2__)
static size_t stream_skip_blocks(struct catalog_stream *, const char *, size_t);
static void stream_skipped(struct catalog_stream *, const char *, size_t);
#endif

#if defined(__SSE2__)
/*
 * Skipping what is nested deeper than the merge looks (the top level and
 * its "config" object), where only a string that begins with the URL
 * prefix could be edited: 64 bytes at a time, in one pass that finds the
 * quotes, the brackets, any backslash and any quote followed by the
 * prefix's first two bytes. A block without the last two is skipped:
 * strings are found by the running parity of its quotes, and only the
 * brackets outside them are looked at one by one, for the depth and
 * whether each level is an object (stream_block). A block with either is
 * left to the byte-by-byte scan.
 */

/*
 * Take the block at P, its brackets found (bit i for byte i) and INS, the
 * running parity of its quotes (bit i: byte i is in a string, or is its
 * opening quote, when the block begins outside one): 64 when it was
 * skipped, else the offset of the bracket that would take the depth back
 * to WATCH (or past JSCHECK_MAX_DEPTH), up to which it was skipped.
 */
static inline __attribute__((always_inline)) size_t
stream_block(struct catalog_stream *st, const char *p, uint64_t ins,
    uint64_t br, unsigned watch)
{
	uint64_t b;
	unsigned d = st->depth;
	unsigned char c;
	int j;

	if (st->instr)
		ins = ~ins;
	for (b = br & ~ins; b != 0; b &= b - 1) {
		j = __builtin_ctzll(b);
		c = (unsigned char)p[j];
		if (c == '{' || c == '[') {
			if (d >= JSCHECK_MAX_DEPTH) {
				st->depth = d;
				st->instr = false;
				return (size_t)j;
			}
			if (c == '{')
				st->objs[d / 64] |= 1ULL << (d % 64);
			else
				st->objs[d / 64] &= ~(1ULL << (d % 64));
			d++;
		} else if (d - 1 <= watch) {
			st->depth = d;
			st->instr = false;
			return (size_t)j;
		} else
			d--;
	}
	st->depth = d;
	st->instr = ins >> 63;
	return 64;
}

/*
 * After N bytes at P were skipped: whether the next string is a key.
 * Not in a string, it is right after '{', or after a comma in an object
 * (the last byte but whitespace tells); as it was when the N bytes are
 * all whitespace.
 */
static void
stream_skipped(struct catalog_stream *st, const char *p, size_t n)
{
	unsigned d = st->depth;
	unsigned char c = ' ';

	if (st->instr) {
		st->want_key = false;
		return;
	}
	while (n > 0 &&
	    ((c = (unsigned char)p[n - 1]) == ' ' || c == '\n' || c == '\r' ||
		c == '\t'))
		n--;
	if (n > 0)
		st->want_key = c == '{' ||
		    (c == ',' &&
			(st->objs[(d - 1) / 64] >> ((d - 1) % 64) & 1));
}

#if defined(STREAM_AVX2)
/*
 * stream_skip_blocks with AVX2, 32 bytes to a compare, and the quotes'
 * running parity in one carry-less multiply.
 */
__attribute__((__target__("avx2,pclmul"))) static size_t
stream_skip_avx2(struct catalog_stream *st, const char *p, size_t n,
    unsigned watch, char f0, char f1)
{
	const __m256i q = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\');
	const __m256i ob = _mm256_set1_epi8('{'), cb = _mm256_set1_epi8('}');
	const __m256i up = _mm256_set1_epi8(0x20);
	const __m256i a0 = _mm256_set1_epi8(f0), a1 = _mm256_set1_epi8(f1);
	__m256i v0, v1, q0, q1, x0, x1, bad;
	uint64_t quotes, br;
	size_t i, k;

	for (i = 0; n - i >= 66; i += 64) {
		v0 = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
		v1 = _mm256_loadu_si256(
		    (const __m256i *)(const void *)(p + i + 32));
		q0 = _mm256_cmpeq_epi8(v0, q);
		q1 = _mm256_cmpeq_epi8(v1, q);
		/* A backslash, or a quote and the prefix's first two bytes. */
		x0 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_loadu_si256((
							    const __m256i
								*)(const void
								*)(p + i + 1)),
					  a0),
		    _mm256_cmpeq_epi8(_mm256_loadu_si256(
					  (const __m256i *)(const void *)(p +
					      i + 2)),
			a1));
		x1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_loadu_si256((
							    const __m256i
								*)(const void
								*)(p + i + 33)),
					  a0),
		    _mm256_cmpeq_epi8(_mm256_loadu_si256(
					  (const __m256i *)(const void *)(p +
					      i + 34)),
			a1));
		bad = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v0, bs),
					  _mm256_cmpeq_epi8(v1, bs)),
		    _mm256_or_si256(_mm256_and_si256(q0, x0),
			_mm256_and_si256(q1, x1)));
		if (!_mm256_testz_si256(bad, bad))
			return i;
		quotes = (uint32_t)_mm256_movemask_epi8(q0) |
		    (uint64_t)(uint32_t)_mm256_movemask_epi8(q1) << 32;
		v0 = _mm256_or_si256(v0, up);
		v1 = _mm256_or_si256(v1, up);
		br = (uint32_t)_mm256_movemask_epi8(
			 _mm256_or_si256(_mm256_cmpeq_epi8(v0, ob),
			     _mm256_cmpeq_epi8(v0, cb))) |
		    (uint64_t)(uint32_t)_mm256_movemask_epi8(
			_mm256_or_si256(_mm256_cmpeq_epi8(v1, ob),
			    _mm256_cmpeq_epi8(v1, cb)))
			<< 32;
		/* The running parity: a carry-less multiply by all ones. */
		quotes = (uint64_t)_mm_cvtsi128_si64(
		    _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)quotes),
			_mm_set1_epi8(-1), 0));
		if ((k = stream_block(st, p + i, quotes, br, watch)) < 64)
			return i + k;
	}
	return i;
}
#endif

/*
 * Skip from P (N bytes left in the piece) while nothing can be edited:
 * the bytes skipped. Blocks need two bytes after them in the piece (a
 * quote at a block's end followed by the prefix is seen).
 */
size_t
stream_skip(struct catalog_stream *st, const char *p, size_t n)
{
	size_t k = stream_skip_blocks(st, p, n);

	if (k > 0)
		stream_skipped(st, p, k);
	return k;
}

/* stream_skip's blocks: the bytes skipped. */
static size_t
stream_skip_blocks(struct catalog_stream *st, const char *p, size_t n)
{
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i ob = _mm_set1_epi8('{'), cb = _mm_set1_epi8('}');
	const __m128i up = _mm_set1_epi8(0x20);
	__m128i a0, a1, v, w, x, y, bad;
	unsigned watch = st->cfg_depth > 0 ? st->cfg_depth : 1;
	/* Without URLs, a quote after a quote: never in JSON here. */
	char f0 = st->urls ? st->ub.u.from[0] : '"';
	char f1 = st->urls ? st->ub.u.from[1] : '"';
	uint64_t quotes, br;
	size_t i, k;
	int c;
#if defined(STREAM_AVX2)
	static int avx2 = -1;

	if (avx2 == -1)
		avx2 = __builtin_cpu_supports("avx2") &&
		    __builtin_cpu_supports("pclmul");
	if (avx2)
		return stream_skip_avx2(st, p, n, watch, f0, f1);
#endif
	a0 = _mm_set1_epi8(f0);
	a1 = _mm_set1_epi8(f1);
	for (i = 0; n - i >= 66; i += 64) {
		bad = _mm_setzero_si128();
		quotes = br = 0;
		for (c = 0; c < 64; c += 16) {
			v = _mm_loadu_si128(
			    (const __m128i *)(const void *)(p + i + c));
			x = _mm_loadu_si128(
			    (const __m128i *)(const void *)(p + i + c + 1));
			y = _mm_loadu_si128(
			    (const __m128i *)(const void *)(p + i + c + 2));
			w = _mm_cmpeq_epi8(v, q);
			/* A backslash, or a quote and the prefix's start. */
			x = _mm_and_si128(_mm_cmpeq_epi8(x, a0),
			    _mm_cmpeq_epi8(y, a1));
			bad = _mm_or_si128(bad,
			    _mm_or_si128(_mm_cmpeq_epi8(v, bs),
				_mm_and_si128(w, x)));
			quotes |= (uint64_t)(uint32_t)_mm_movemask_epi8(w) << c;
			v = _mm_or_si128(v, up);
			br |= (uint64_t)(uint32_t)_mm_movemask_epi8(
				  _mm_or_si128(_mm_cmpeq_epi8(v, ob),
				      _mm_cmpeq_epi8(v, cb)))
			    << c;
		}
		if (_mm_movemask_epi8(bad) != 0)
			return i;
		quotes ^= quotes << 1;
		quotes ^= quotes << 2;
		quotes ^= quotes << 4;
		quotes ^= quotes << 8;
		quotes ^= quotes << 16;
		quotes ^= quotes << 32;
		if ((k = stream_block(st, p + i, quotes, br, watch)) < 64)
			return i + k;
	}
	return i;
}
#endif
