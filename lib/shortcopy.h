/*
 * floe: shortcopy.h -- a copy of a few bytes without a call. Most of
 * what floe copies on a request's path (header names and values, a
 * method, a path's pieces) is 16 bytes or less: those are moved in two
 * loads and two stores that may overlap each other but stay within the
 * N bytes (three or fewer: the first, the middle and the last byte, with
 * no loop), anything longer by memcpy. Owns nothing.
 */
#ifndef FLOE_LIB_SHORTCOPY_H
#define FLOE_LIB_SHORTCOPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copy N bytes from S to D; the two ranges must not overlap. */
static inline __attribute__((always_inline)) void
short_copy(void *dst, const void *src, size_t n)
{
	char *d = dst;
	const char *s = src;
	uint64_t a, b;
	uint32_t c, e;

	if (n >= 8 && n <= 16) {
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(&c, s, 4);
		memcpy(&e, s + n - 4, 4);
		memcpy(d, &c, 4);
		memcpy(d + n - 4, &e, 4);
	} else if (n < 4) {
		/* 1 to 3 bytes: the first, the middle and the last. */
		if (n > 0) {
			d[0] = s[0];
			d[n / 2] = s[n / 2];
			d[n - 1] = s[n - 1];
		}
	} else
		memcpy(d, s, n);
}

#endif
