/*
 * floe: jscheck.h -- is a buffer one well-formed JSON text (RFC 8259, in
 * UTF-8)? A check without a parse: no allocation, one pass, for answers
 * floe passes on after editing only part of them (a LoadTable's config is
 * merged near its end), so that a catalog's 200 that is not JSON is never
 * passed on as one. Owns nothing.
 */
#ifndef FLOE_LIB_JSCHECK_H
#define FLOE_LIB_JSCHECK_H

#include <stdbool.h>
#include <stddef.h>

/* Deeper nesting is refused, as jansson refuses it. */
#define JSCHECK_MAX_DEPTH 2048

/*
 * Whether S (LEN bytes) is one JSON value with optional whitespace
 * around it, every string valid UTF-8 and every \u escape a code point
 * (surrogates in pairs). On false, *AT (may be NULL) is the offset of the
 * first byte that is wrong.
 */
bool jscheck_valid(const char *s, size_t len, size_t *at);

#endif
