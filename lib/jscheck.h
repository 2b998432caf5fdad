/*
 * floe: jscheck.h -- is a text one well-formed JSON text (RFC 8259, in
 * UTF-8)? A check without a parse: no allocation, one pass, for answers
 * floe passes on after editing only part of them (a LoadTable's config is
 * merged near its end), so that a catalog's 200 that is not JSON is never
 * passed on as one. The text may come in pieces (an answer as it is
 * read): the check is resumed at each piece, whatever byte it was cut at.
 * Owns nothing.
 */
#ifndef FLOE_LIB_JSCHECK_H
#define FLOE_LIB_JSCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deeper nesting is refused, as jansson refuses it. */
#define JSCHECK_MAX_DEPTH 2048

/*
 * The whole state of a check between pieces (about 300 bytes): the open
 * containers (a bit each: object or array), what may come next, and the
 * token a piece ended inside (a string with a pending escape, \u digits,
 * the low half of a surrogate pair or UTF-8 continuation bytes; a number;
 * a literal). Opaque: use the functions.
 */
struct jscheck {
	uint64_t objs[JSCHECK_MAX_DEPTH / 64]; /* bit set: an object */
	size_t off; /* bytes taken so far */
	size_t tok_at; /* where the token in progress began */
	size_t err_at; /* failed: the offset of the first wrong byte */
	unsigned depth;
	unsigned char next; /* what may come next */
	unsigned char tok; /* the token in progress, if any */
	unsigned char sub; /* where in it */
	unsigned char left; /* hex digits, continuation or literal bytes due */
	unsigned char lo, hi; /* the range of the next continuation byte */
	unsigned short hex; /* the \u escape so far */
	bool failed;
};

void jscheck_init(struct jscheck *);
/*
 * Take the next N bytes of the text. False once the text cannot be JSON
 * whatever follows (and for every piece after); jscheck_end says where.
 */
bool jscheck_feed(struct jscheck *, const void *p, size_t n);
/*
 * The text ended: whether it was one JSON value with optional whitespace
 * around it, every string valid UTF-8 and every \u escape a code point
 * (surrogates in pairs). On false, *AT (may be NULL) is the offset of the
 * first byte that is wrong: the start of a string, number or literal that
 * is wrong or cut short, the length for a text cut short between tokens.
 */
bool jscheck_end(struct jscheck *, size_t *at);

/* The same for the LEN bytes at S in one piece. */
bool jscheck_valid(const char *s, size_t len, size_t *at);

#endif
