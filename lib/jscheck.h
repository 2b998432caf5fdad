/*
 * floe: jscheck.h -- is a text one well-formed JSON value (RFC 8259, in
 * UTF-8)? A check without a parse: no allocation, fed in pieces as they
 * arrive (so a large answer is checked read by read, never in one go at
 * its end), for answers floe passes on after editing only part of them (a
 * LoadTable's config is merged near its end): a catalog's 200 that is not
 * JSON is never passed on as one. The caller owns the struct jscheck
 * (about 2 kB: the stack of open containers).
 */
#ifndef FLOE_LIB_JSCHECK_H
#define FLOE_LIB_JSCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deeper nesting is refused, as jansson refuses it. */
#define JSCHECK_MAX_DEPTH 2048

/* A check under way; its members are jscheck.c's. */
struct jscheck {
	uint64_t off; /* bytes fed so far */
	uint64_t bad_at; /* the first wrong byte, once bad */
	size_t depth;
	uint8_t st; /* what may come between tokens */
	uint8_t lex; /* the token being read */
	uint8_t aux; /* its detail */
	uint8_t lo, hi; /* the next UTF-8 continuation byte's range */
	uint16_t u; /* a \u escape's value, or a literal's index */
	bool hs; /* a high surrogate waits for its low one */
	bool key; /* the string being read is a key */
	bool bad;
	unsigned char stack[JSCHECK_MAX_DEPTH]; /* '{' or '[' */
};

void jscheck_init(struct jscheck *);
/*
 * Feed the next N bytes of the text. false once the text cannot be JSON
 * (what follows is not looked at).
 */
bool jscheck_feed(struct jscheck *, const char *s, size_t n);
/*
 * The text has ended: whether it is one JSON value with optional
 * whitespace around it. On false, *AT (may be NULL) is the offset of the
 * first byte that is wrong, or the length for a text that ends too soon.
 */
bool jscheck_end(struct jscheck *, size_t *at);
/* The check of S (LEN bytes) in one piece. */
bool jscheck_valid(const char *s, size_t len, size_t *at);

#endif
