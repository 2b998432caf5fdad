/*
 * floe: jscheck.c -- a JSON well-formedness check (RFC 8259) in one pass
 * over the bytes, resumable at any byte: an explicit stack of open
 * containers (a bit each) and, for a token a piece ends inside, where in
 * it the check is, all in struct jscheck; no allocation. Strings are
 * scanned a run of plain ASCII at a time, 16 bytes at once with SSE2 on
 * x86-64 (8 with word arithmetic elsewhere, or with JSCHECK_SWAR defined);
 * digit and whitespace runs likewise. UTF-8 is checked as RFC 3629 has it
 * (no overlong forms, no surrogates, nothing past U+10FFFF), as jansson
 * checks it. A token whole in its piece is checked in a tight loop with
 * the state in locals; one a piece ends inside, or a string with an escape
 * or a byte past ASCII, goes on through the resumable code from where the
 * tight loop stopped.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__) && !defined(JSCHECK_SWAR)
#define JS_SSE2 1
#include <emmintrin.h>
#else
#define JS_SSE2 0
#endif

#include "lib/jscheck.h"
#include "lib/units.h"

#define JS_ONES 0x0101010101010101ULL
/* Whitespace as a bit set of the bytes up to ' '. */
#define JS_WS_SET (1ULL << ' ' | 1ULL << '\t' | 1ULL << '\n' | 1ULL << '\r')
#define JS_IS_WS(c) ((c) <= ' ' && ((JS_WS_SET >> (c)) & 1) != 0)

/* What may come next (next). */
enum {
	JS_VALUE, /* a value (the start, after ':', after ',' in an array) */
	JS_VALUE_OR_CLOSE, /* after '[' */
	JS_KEY_OR_CLOSE, /* after '{' */
	JS_KEY, /* after ',' in an object */
	JS_COLON,
	JS_NEXT, /* after a value: ',' or the container's end */
};

/* The token in progress (tok). */
enum {
	JT_NONE,
	JT_STRING,
	JT_NUMBER,
	JT_LITERAL, /* sub: which of js_literals */
};

/* Where in a string (sub). */
enum {
	JS_CHARS,
	JS_UTF8, /* LEFT continuation bytes due, the next in [LO, HI] */
	JS_ESC, /* after a backslash */
	JS_HEX, /* LEFT hex digits of a \u escape due */
	JS_LOW_BACKSLASH, /* after a high surrogate: its low one's \u */
	JS_LOW_U,
	JS_LOW_HEX, /* LEFT hex digits of the low surrogate due */
};

/* Where in a number (sub); the ones marked may end it. */
enum {
	JN_MINUS, /* after '-' */
	JN_ZERO, /* a leading 0 (may end) */
	JN_INT, /* (may end) */
	JN_DOT,
	JN_FRAC, /* (may end) */
	JN_E,
	JN_ESIGN,
	JN_EXP, /* (may end) */
};

static const char *const js_literals[] = { "true", "false", "null" };

static const unsigned char *jscheck_string(struct jscheck *,
    const unsigned char *, const unsigned char *, const unsigned char *);
static const unsigned char *jscheck_number(struct jscheck *,
    const unsigned char *, const unsigned char *);
static const unsigned char *jscheck_literal(struct jscheck *,
    const unsigned char *, const unsigned char *);

#ifndef JSCHECK_TAP
/*
 * OBJS is left as it is: a container's bit is written when it opens,
 * before anything reads it, and zeroing its 256 bytes was most of what a
 * check of a small answer cost to start.
 */
void
jscheck_init(struct jscheck *st)
{
	st->off = st->tok_at = st->err_at = 0;
	st->depth = 0;
	st->next = JS_VALUE;
	st->tok = JT_NONE;
	st->sub = st->left = st->lo = st->hi = 0;
	st->hex = 0;
	st->failed = false;
}
#endif

#if JS_SSE2
/*
 * The bytes of the 16 at P that end a run of plain string bytes. With
 * bit 1 flipped a quote is 0x20 and the bytes below 0x20 stay there, so
 * the plain bytes are those above 0x20 then (signed: not past ASCII) and
 * not a backslash.
 */
static inline unsigned
js_stops16(const unsigned char *p)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i plain = _mm_andnot_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\\')),
	    _mm_cmpgt_epi8(_mm_xor_si128(x, _mm_set1_epi8(0x02)),
		_mm_set1_epi8(0x20)));

	return ~(unsigned)_mm_movemask_epi8(plain) & 0xffff;
}

/*
 * The bytes of the 16 at P that are not digits: moved by 0x50, the digits
 * are the ten lowest signed bytes (-128 to -119).
 */
static inline unsigned
js_nondigits16(const unsigned char *p)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);

	return (unsigned)_mm_movemask_epi8(
	    _mm_cmpgt_epi8(_mm_add_epi8(x, _mm_set1_epi8(0x50)),
		_mm_set1_epi8(-119)));
}

/* The bytes of the 16 at P that are not whitespace. */
static inline unsigned
js_nonws16(const unsigned char *p)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i m =
	    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')),
			     _mm_cmpeq_epi8(x, _mm_set1_epi8('\n'))),
		_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\r')),
		    _mm_cmpeq_epi8(x, _mm_set1_epi8('\t'))));

	return ~(unsigned)_mm_movemask_epi8(m) & 0xffff;
}

/*
 * The first byte from P on (before END) whose bit STOPS sets, or END:
 * 16 bytes at a time, and the last few by the 16 that end at END when the
 * piece (from BASE) holds them.
 */
#define JS_SCAN16(stops)                                                       \
	do {                                                                   \
		unsigned m_;                                                   \
		if ((uintptr_t)p <= (uintptr_t)end - 16) {                     \
			/* The first 16 with nothing set up for a loop. */     \
			m_ = stops(p);                                         \
			while (m_ == 0) {                                      \
				p += 16;                                       \
				if ((uintptr_t)p > (uintptr_t)end - 16)        \
					goto tail_;                            \
				m_ = stops(p);                                 \
			}                                                      \
			return p + (unsigned)__builtin_ctz(m_);                \
		}                                                              \
	tail_:                                                                 \
		if (p < end && end - base >= 16) {                             \
			m_ = stops(end - 16) >> (16 - (end - p));              \
			return m_ != 0 ? p + (unsigned)__builtin_ctz(m_) :     \
					 end;                                  \
		}                                                              \
	} while (0)
#else
/*
 * Word arithmetic, 8 bytes at a time: a byte below 0x20, at or above
 * 0x80, a quote or a backslash sets its high bit (the usual tests). The
 * lowest byte set is exact (a borrow only runs upwards from a set byte),
 * so a little-endian word names it; elsewhere the bytes are read again.
 */
static inline uint64_t
js_stops8(const unsigned char *p)
{
	uint64_t w, q, b;

	memcpy(&w, p, 8);
	q = w ^ JS_ONES * '"';
	b = w ^ JS_ONES * '\\';
	return (((w - JS_ONES * 0x20) & ~w) | w | ((q - JS_ONES) & ~q) |
		   ((b - JS_ONES) & ~b)) &
	    JS_ONES * 0x80;
}

/* A byte that is not a digit: a high nibble not 3, or a low one past 9. */
static inline uint64_t
js_nondigits8(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return ((w & JS_ONES * 0xf0) ^ JS_ONES * 0x30) |
	    (((w + JS_ONES * 0x06) & JS_ONES * 0xf0) ^ JS_ONES * 0x30);
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JS_SCAN8(stops)                                                        \
	do {                                                                   \
		uint64_t m_;                                                   \
		(void)base;                                                    \
		while (end - p >= 8) {                                         \
			if ((m_ = stops(p)) != 0)                              \
				return p + __builtin_ctzll(m_) / 8;            \
			p += 8;                                                \
		}                                                              \
	} while (0)
#else
#define JS_SCAN8(stops)                                                        \
	do {                                                                   \
		(void)base;                                                    \
		while (end - p >= 8 && stops(p) == 0)                          \
			p += 8;                                                \
	} while (0)
#endif
#endif

/*
 * Past the run of printable ASCII (not a quote or a backslash) at P, the
 * common case in a string; the piece began at BASE.
 */
static inline const unsigned char *
js_run(const unsigned char *p, const unsigned char *end,
    const unsigned char *base)
{
#if JS_SSE2
	JS_SCAN16(js_stops16);
#else
	JS_SCAN8(js_stops8);
#endif
	while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
		p++;
	return p;
}

#if JS_SSE2
/* js_run out of line, for what the first 16 bytes did not end. */
static __attribute__((noinline)) const unsigned char *
js_run_rest(const unsigned char *p, const unsigned char *end,
    const unsigned char *base)
{
	return js_run(p, end, base);
}

/*
 * P past the plain bytes of the string whose text starts at P, in the
 * tight loop: the first 16 at once (keys and most values end in them),
 * the rest out of line. Goes to STOP when P is then before END (a quote
 * or another byte that ends the run).
 */
#define JS_STR(stop)                                                           \
	do {                                                                   \
		unsigned m_;                                                   \
		if ((uintptr_t)p <= (uintptr_t)end - 16) {                     \
			if ((m_ = js_stops16(p)) != 0) {                       \
				p += (unsigned)__builtin_ctz(m_);              \
				goto stop;                                     \
			}                                                      \
			p += 16;                                               \
		}                                                              \
		if ((p = js_run_rest(p, end, base)) < end)                     \
			goto stop;                                             \
	} while (0)
#else
#define JS_STR(stop)                                                           \
	do {                                                                   \
		if ((p = js_run(p, end, base)) < end)                          \
			goto stop;                                             \
	} while (0)
#endif

/* Past the digits at P. */
static inline const unsigned char *
js_digits(const unsigned char *p, const unsigned char *end,
    const unsigned char *base)
{
#if JS_SSE2
	JS_SCAN16(js_nondigits16);
#else
	JS_SCAN8(js_nondigits8);
#endif
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p;
}

/*
 * Past the whitespace at P: byte by byte for the first few (one space
 * around a colon, a newline and a short indent: a loop the processor runs
 * ahead of), 16 at a time past them.
 */
static inline __attribute__((always_inline)) const unsigned char *
js_space(const unsigned char *p, const unsigned char *end,
    const unsigned char *base)
{
	const unsigned char *few = end - p > 4 ? p + 4 : end;

	while (p < few && JS_IS_WS(*p))
		p++;
	if (p < few || p == end || !JS_IS_WS(*p))
		return p;
#if JS_SSE2
	JS_SCAN16(js_nonws16);
#else
	(void)base;
#endif
	while (p < end && JS_IS_WS(*p))
		p++;
	return p;
}

/*
 * The string in progress from P: past its closing quote (tok is then
 * JT_NONE), END when it goes on past END, or NULL when it is wrong.
 */
static const unsigned char *
jscheck_string(struct jscheck *st, const unsigned char *p,
    const unsigned char *end, const unsigned char *base)
{
	unsigned char c;
	int d, i;

	for (;;) {
		if (p == end)
			return p;
		switch (st->sub) {
		case JS_CHARS:
			if ((p = js_run(p, end, base)) == end)
				return p;
			c = *p++;
			if (c == '"') {
				st->tok = JT_NONE;
				return p;
			}
			if (c == '\\')
				st->sub = JS_ESC;
			else if (c < 0x20)
				return NULL;
			else {
				/* A UTF-8 lead byte. */
				st->lo = 0x80;
				st->hi = 0xbf;
				if (c >= 0xc2 && c <= 0xdf)
					st->left = 1;
				else if (c >= 0xe0 && c <= 0xef) {
					st->left = 2;
					if (c == 0xe0)
						st->lo = 0xa0; /* overlong */
					else if (c == 0xed)
						st->hi = 0x9f; /* surrogates */
				} else if (c >= 0xf0 && c <= 0xf4) {
					st->left = 3;
					if (c == 0xf0)
						st->lo = 0x90; /* overlong */
					else if (c == 0xf4)
						st->hi = 0x8f; /* > U+10FFFF */
				} else
					return NULL;
				if (end - p < st->left) {
					st->sub = JS_UTF8;
					break;
				}
				/* Whole in this piece: no state to keep. */
				if (p[0] < st->lo || p[0] > st->hi)
					return NULL;
				for (i = 1; i < st->left; i++)
					if (p[i] < 0x80 || p[i] > 0xbf)
						return NULL;
				p += st->left;
			}
			break;
		case JS_UTF8:
			c = *p++;
			if (c < st->lo || c > st->hi)
				return NULL;
			st->lo = 0x80;
			st->hi = 0xbf;
			if (--st->left == 0)
				st->sub = JS_CHARS;
			break;
		case JS_ESC:
			c = *p++;
			if (c == 'u') {
				st->sub = JS_HEX;
				st->left = 4;
				st->hex = 0;
			} else if (c != 0 && memchr("\"\\/bfnrt", c, 8) != NULL)
				st->sub = JS_CHARS;
			else
				return NULL;
			break;
		case JS_HEX:
		case JS_LOW_HEX:
			if ((d = units_hexval(*p++)) < 0)
				return NULL;
			st->hex = (unsigned short)(st->hex << 4 | d);
			if (--st->left > 0)
				break;
			if (st->hex >= 0xdc00 && st->hex <= 0xdfff) {
				/* A low surrogate: only after a high one. */
				if (st->sub != JS_LOW_HEX)
					return NULL;
			} else if (st->sub == JS_LOW_HEX)
				return NULL;
			else if (st->hex >= 0xd800 && st->hex <= 0xdbff) {
				st->sub = JS_LOW_BACKSLASH;
				break;
			}
			st->sub = JS_CHARS;
			break;
		case JS_LOW_BACKSLASH:
			if (*p++ != '\\')
				return NULL;
			st->sub = JS_LOW_U;
			break;
		case JS_LOW_U:
			if (*p++ != 'u')
				return NULL;
			st->sub = JS_LOW_HEX;
			st->left = 4;
			st->hex = 0;
			break;
		}
	}
}

/*
 * The number in progress from P: past it (tok is then JT_NONE; the byte
 * there is not the number's), END when it may go on past END, or NULL
 * when it is wrong.
 */
static const unsigned char *
jscheck_number(struct jscheck *st, const unsigned char *p,
    const unsigned char *end)
{
	unsigned char c;

	while (p < end) {
		c = *p;
		switch (st->sub) {
		case JN_MINUS:
			if (c < '0' || c > '9')
				return NULL;
			st->sub = c == '0' ? JN_ZERO : JN_INT;
			p++;
			continue;
		case JN_INT:
			while (p < end && *p >= '0' && *p <= '9')
				p++;
			if (p == end)
				return p;
			c = *p;
			__attribute__((__fallthrough__));
		case JN_ZERO:
			if (c == '.')
				st->sub = JN_DOT;
			else if (c == 'e' || c == 'E')
				st->sub = JN_E;
			else
				break;
			p++;
			continue;
		case JN_DOT:
			if (c < '0' || c > '9')
				return NULL;
			st->sub = JN_FRAC;
			p++;
			continue;
		case JN_FRAC:
			while (p < end && *p >= '0' && *p <= '9')
				p++;
			if (p == end)
				return p;
			if (*p != 'e' && *p != 'E')
				break;
			st->sub = JN_E;
			p++;
			continue;
		case JN_E:
			if (c == '+' || c == '-') {
				st->sub = JN_ESIGN;
				p++;
				continue;
			}
			__attribute__((__fallthrough__));
		case JN_ESIGN:
			if (c < '0' || c > '9')
				return NULL;
			st->sub = JN_EXP;
			p++;
			continue;
		case JN_EXP:
			while (p < end && *p >= '0' && *p <= '9')
				p++;
			if (p == end)
				return p;
			break;
		}
		/* Ended by the byte at P. */
		st->tok = JT_NONE;
		return p;
	}
	return p;
}

/* The literal in progress from P: as jscheck_string. */
static const unsigned char *
jscheck_literal(struct jscheck *st, const unsigned char *p,
    const unsigned char *end)
{
	const char *lit = js_literals[st->sub];

	for (; p < end; p++) {
		if (*p != (unsigned char)lit[st->left])
			return NULL;
		if (lit[++st->left] == '\0') {
			st->tok = JT_NONE;
			return p + 1;
		}
	}
	return p;
}

/* Go on with the token in progress from P (as jscheck_string). */
static const unsigned char *
jscheck_token(struct jscheck *st, const unsigned char *p,
    const unsigned char *end, const unsigned char *base)
{
	switch (st->tok) {
	case JT_STRING:
		return jscheck_string(st, p, end, base);
	case JT_NUMBER:
		return jscheck_number(st, p, end);
	default:
		return jscheck_literal(st, p, end);
	}
}

/* Whether the container at DEPTH (1 the outermost) is an object. */
static inline bool
js_is_obj(const struct jscheck *st, unsigned depth)
{
	return depth > 0 &&
	    (st->objs[(depth - 1) / 64] >> ((depth - 1) % 64) & 1);
}

/*
 * Past the number at P whole in the piece (a byte after it that is not
 * its own), or NULL: wrong, or cut by the piece's end (the resumable code
 * then says which).
 */
static inline const unsigned char *
js_number(const unsigned char *p, const unsigned char *end,
    const unsigned char *base)
{
	if (*p == '-' && ++p == end)
		return NULL;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		p = js_digits(p + 1, end, base);
	else
		return NULL;
	if (p == end)
		return NULL;
	if (*p == '.') {
		if (++p == end || *p < '0' || *p > '9')
			return NULL;
		if ((p = js_digits(p + 1, end, base)) == end)
			return NULL;
	}
	if (*p == 'e' || *p == 'E') {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || *p < '0' || *p > '9')
			return NULL;
		if ((p = js_digits(p + 1, end, base)) == end)
			return NULL;
	}
	return p;
}

/*
 * The tight loop: each state a label, what may come next, the depth and
 * the kinds of the outermost 64 containers in locals (written back when
 * the piece ends or a token goes on through the resumable code). A byte
 * that cannot come where it is fails there (BAD); a token that is wrong
 * fails at its start (BAD_TOKEN, T).
 */
/*
 * Built twice: jscheck_feed here, and jscheck_feed_tap in jscheck_tap.c
 * (JSCHECK_TAP), which tells its tap of the structure (JS_TELL_IF), so
 * that the check alone is not slowed by what it does not use.
 */
#ifdef JSCHECK_TAP
/* When COND, tell TAP of an event and take what it asks next. */
#define JS_TELL_IF(cond, ev, at, d)                                            \
	do {                                                                   \
		if (cond) {                                                    \
			tap->fn(tap->arg, (ev), (at), (d));                    \
			tdepth = tap->depth;                                   \
			tfirst = tap->first;                                   \
		}                                                              \
	} while (0)
#else
#define JS_TELL_IF(cond, ev, at, d)                                            \
	do {                                                                   \
	} while (0)
#endif

#ifndef JSCHECK_TAP
bool
jscheck_feed(struct jscheck *st, const void *buf, size_t n)
#else
bool
jscheck_feed_tap(struct jscheck *st, const void *buf, size_t n,
    struct jscheck_tap *tap)
#endif
{
	const unsigned char *p = buf, *base = p, *end = p + n, *t = p, *q;
	unsigned depth;
#ifdef JSCHECK_TAP
	/* What TAP asks, in locals: FN may change it. */
	unsigned tdepth = tap->depth;
	int tfirst = tap->first;
#endif
	unsigned char c;
	uint64_t w0; /* objs[0] while the piece is checked */
	bool obj;

	if (st->failed)
		return false;
	if (st->tok != JT_NONE) {
		if ((p = jscheck_token(st, p, end, base)) == NULL)
			goto bad_token;
		if (st->tok != JT_NONE)
			goto out; /* still in it at the piece's end */
		/* A key that ended here: its closing quote. */
		JS_TELL_IF(st->next == JS_COLON && st->depth <= tdepth,
		    JSCHECK_KEY_END, p - 1, st->depth);
	}
	depth = st->depth;
	obj = js_is_obj(st, depth);
	w0 = st->objs[0];
	switch (st->next) {
	case JS_VALUE:
		goto value;
	case JS_VALUE_OR_CLOSE:
		goto value_or_close;
	case JS_KEY_OR_CLOSE:
		goto key_or_close;
	case JS_KEY:
		goto key;
	case JS_COLON:
		goto colon;
	default:
		goto next;
	}

/* Past whitespace; at the piece's end, keep STATE for the next. */
#define JS_SKIP(state)                                                         \
	do {                                                                   \
		if (p == end || *p <= ' ') {                                   \
			p = js_space(p, end, base);                            \
			if (p == end) {                                        \
				st->next = (state);                            \
				goto save;                                     \
			}                                                      \
		}                                                              \
	} while (0)

value_or_close:
	JS_SKIP(JS_VALUE_OR_CLOSE);
	if (*p == ']')
		goto close;
	goto value_here;
value:
	if (p == end || *p != '"')
		JS_SKIP(JS_VALUE);
value_here:
	t = p;
	if ((c = *p) == '"') {
		JS_TELL_IF(tfirst >= 0 && (p + 1 == end || p[1] == tfirst),
		    JSCHECK_STRING, p, depth);
		/* Plain ASCII to its end in this piece: no state to keep. */
		p++;
		JS_STR(value_stop);
		goto value_string;
	value_stop:
		if (*p == '"') {
			p++;
			goto next;
		}
	value_string:
		st->next = JS_NEXT;
		goto string;
	}
	if ((unsigned)(c - '1') < 9) {
		/*
		 * A positive integer, most often of one digit: past it, unless
		 * a fraction or an exponent follows, or the piece's end (the
		 * general code then, from its start).
		 */
		if (++p < end && (unsigned)(*p - '0') < 10)
			p = js_digits(p + 1, end, base);
		if (p < end) {
			if ((c = *p) == ',')
				goto comma;
			if (c != '.' && (c | 0x20) != 'e')
				goto next;
		}
		p = t;
		c = *p;
		goto number;
	}
	if (c == '{' || c == '[') {
		obj = c == '{';
		if (depth < 64)
			w0 = (w0 & ~(1ULL << depth)) | (uint64_t)obj << depth;
		else if (depth == JSCHECK_MAX_DEPTH)
			goto bad;
		else if (obj)
			st->objs[depth / 64] |= 1ULL << (depth % 64);
		else
			st->objs[depth / 64] &= ~(1ULL << (depth % 64));
		JS_TELL_IF(depth <= tdepth, JSCHECK_OPEN, p, depth);
		depth++;
		p++;
		if (obj)
			goto key_or_close;
		goto value_or_close;
	}
	switch (c) {
	case 't':
		/* Whole in this piece: no state to keep. */
		if (end - p >= 4 && memcmp(p, "true", 4) == 0) {
			p += 4;
			goto next;
		}
		st->sub = 0;
		goto literal;
	case 'f':
		if (end - p >= 5 && memcmp(p, "false", 5) == 0) {
			p += 5;
			goto next;
		}
		st->sub = 1;
		goto literal;
	case 'n':
		if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
			p += 4;
			goto next;
		}
		st->sub = 2;
	literal:
		st->tok = JT_LITERAL;
		st->left = 0;
		st->next = JS_NEXT;
		st->tok_at = st->off + (size_t)(t - base);
		p = jscheck_literal(st, p, end);
		goto token_ended;
	case '-':
	case '0':
	number:
		if ((q = js_number(p, end, base)) != NULL) {
			p = q;
			goto next;
		}
		/* Wrong, or cut by the piece's end. */
		st->tok = JT_NUMBER;
		st->sub = c == '-' ? JN_MINUS : c == '0' ? JN_ZERO : JN_INT;
		st->next = JS_NEXT;
		st->tok_at = st->off + (size_t)(t - base);
		p = jscheck_number(st, p + 1, end);
		goto token_ended;
	default:
		goto bad;
	}

key_or_close:
	JS_SKIP(JS_KEY_OR_CLOSE);
	if (*p == '}')
		goto close;
	goto key_here;
key:
	/* The quote right there, most often. */
	if (p == end || *p != '"') {
		JS_SKIP(JS_KEY);
	key_here:
		if (*p != '"')
			goto bad;
	}
	JS_TELL_IF(depth <= tdepth, JSCHECK_KEY, p, depth);
	t = p++;
	JS_STR(key_stop);
	goto key_string;
key_stop:
	if (*p == '"') {
		JS_TELL_IF(depth <= tdepth, JSCHECK_KEY_END, p, depth);
		/* The colon most often right after. */
		if (++p < end && *p == ':') {
			p++;
			goto value;
		}
		goto colon;
	}
key_string:
	st->next = JS_COLON;
string:
	/* An escape, a byte past ASCII, wrong, or cut: the resumable code. */
	st->tok = JT_STRING;
	st->sub = JS_CHARS;
	st->tok_at = st->off + (size_t)(t - base);
	p = jscheck_string(st, p, end, base);
token_ended:
	if (p == NULL)
		goto bad_token;
	if (st->tok != JT_NONE)
		goto save; /* the piece ended inside it */
	if (st->next == JS_COLON) {
		JS_TELL_IF(depth <= tdepth, JSCHECK_KEY_END, p - 1, depth);
		goto colon;
	}
	goto next;

colon:
	JS_SKIP(JS_COLON);
	if (*p != ':')
		goto bad;
	p++;
	goto value;

next:
	/* A comma right there, most often. */
	if (p == end || *p != ',') {
		JS_SKIP(JS_NEXT);
		if (*p != ',') {
			if (depth == 0 || *p != (obj ? '}' : ']'))
				goto bad;
			goto close;
		}
	}
comma:
	p++;
	if (obj)
		goto key;
	if (depth == 0)
		goto bad_comma; /* something after the value */
	goto value;
close:
	JS_TELL_IF(depth <= tdepth, JSCHECK_CLOSE, p, depth);
	p++;
	depth--;
	if (depth - 1 < 64)
		obj = w0 >> (depth - 1) & 1;
	else
		obj = js_is_obj(st, depth);
	goto next;
#undef JS_SKIP
#undef JS_TELL_IF

save:
	st->depth = depth;
	st->objs[0] = w0;
out:
	st->off += n;
	return true;
bad_token:
	st->err_at = st->tok_at;
	st->failed = true;
	return false;
bad_comma:
	p--;
bad:
	st->err_at = st->off + (size_t)(p - base);
	st->failed = true;
	return false;
}

#ifndef JSCHECK_TAP
bool
jscheck_end(struct jscheck *st, size_t *at)
{
	if (!st->failed) {
		/* A number may end with the text; nothing else may. */
		if (st->tok == JT_NUMBER &&
		    (st->sub == JN_ZERO || st->sub == JN_INT ||
			st->sub == JN_FRAC || st->sub == JN_EXP))
			st->tok = JT_NONE;
		if (st->tok != JT_NONE) {
			st->err_at = st->tok_at;
			st->failed = true;
		} else if (st->next != JS_NEXT || st->depth != 0) {
			st->err_at = st->off;
			st->failed = true;
		}
	}
	if (st->failed && at != NULL)
		*at = st->err_at;
	return !st->failed;
}

bool
jscheck_valid(const char *s, size_t len, size_t *at)
{
	struct jscheck st;

	jscheck_init(&st);
	jscheck_feed(&st, s, len);
	return jscheck_end(&st, at);
}
#endif
