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
/* What a tap is told (see jscheck_feed_tap). */
enum jscheck_event {
	JSCHECK_OPEN, /* '{' or '[' at AT, in DEPTH containers (0: the top) */
	JSCHECK_CLOSE, /* '}' or ']' at AT, ending the DEPTH-th container */
	JSCHECK_KEY, /* a key's opening quote at AT, in the DEPTH-th */
	JSCHECK_KEY_END, /* that key's closing quote at AT */
	JSCHECK_STRING, /* a value string's opening quote at AT */
};

/*
 * Who is told of the text's structure as it is checked, so that one
 * pass over the bytes both checks and follows it: FN (ARG, the event,
 * where in the piece, DEPTH as the event says) for each container opened
 * in DEPTH containers or fewer, each end of the DEPTH-th container or an
 * outer one, each key of an object that deep or less, and each value
 * string whose first byte is FIRST (or is not in the piece; FIRST -1:
 * none). FN may change DEPTH and FIRST. Only what was checked is told:
 * nothing past a wrong byte.
 */
struct jscheck_tap {
	unsigned depth;
	int first;
	void (*fn)(void *arg, enum jscheck_event, const unsigned char *at,
	    unsigned depth);
	void *arg;
};

/* jscheck_feed, telling TAP (not NULL) of the structure. */
bool jscheck_feed_tap(struct jscheck *, const void *p, size_t n,
    struct jscheck_tap *tap);

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
