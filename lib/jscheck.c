/*
 * floe: jscheck.c -- a JSON well-formedness check (RFC 8259) in one pass
 * over the bytes, resumable at any byte: an explicit stack of open
 * containers (a bit each) and, for a token a piece ends inside, where in
 * it the check is, all in struct jscheck; no allocation. Strings are
 * scanned a run of plain ASCII at a time; UTF-8 is checked as RFC 3629
 * has it (no overlong forms, no surrogates, nothing past U+10FFFF), as
 * jansson checks it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/jscheck.h"
#include "lib/units.h"

#define JS_ONES 0x0101010101010101ULL

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
static const size_t js_lens[] = { 4, 5, 4 };

static const unsigned char *jscheck_run(const unsigned char *,
    const unsigned char *);
static const unsigned char *jscheck_string(struct jscheck *,
    const unsigned char *, const unsigned char *);
static const unsigned char *jscheck_number(struct jscheck *,
    const unsigned char *, const unsigned char *);
static const unsigned char *jscheck_literal(struct jscheck *,
    const unsigned char *, const unsigned char *);

void
jscheck_init(struct jscheck *st)
{
	memset(st, 0, sizeof(*st));
	st->next = JS_VALUE;
	st->tok = JT_NONE;
}

/*
 * Past the run of printable ASCII (not a quote or a backslash) at P, the
 * common case in a string, 8 bytes at a time: a byte below 0x20, at or
 * above 0x80, a quote or a backslash sets its high bit in T (the usual
 * SWAR tests).
 */
static inline const unsigned char *
jscheck_run(const unsigned char *p, const unsigned char *end)
{
	uint64_t w, q, b, t;

	while (end - p >= 8) {
		memcpy(&w, p, 8);
		q = w ^ JS_ONES * '"';
		b = w ^ JS_ONES * '\\';
		t = (((w - JS_ONES * 0x20) & ~w) | w | ((q - JS_ONES) & ~q) |
			((b - JS_ONES) & ~b)) &
		    JS_ONES * 0x80;
		if (t != 0)
			break;
		p += 8;
	}
	while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
		p++;
	return p;
}

/*
 * The string in progress from P: past its closing quote (tok is then
 * JT_NONE), END when it goes on past END, or NULL when it is wrong.
 */
static const unsigned char *
jscheck_string(struct jscheck *st, const unsigned char *p,
    const unsigned char *end)
{
	unsigned char c;
	int d;

	for (;;) {
		if (p == end)
			return p;
		switch (st->sub) {
		case JS_CHARS:
			if ((p = jscheck_run(p, end)) == end)
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
				st->sub = JS_UTF8;
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
			/* FALLTHROUGH */
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
			/* FALLTHROUGH */
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
    const unsigned char *end)
{
	switch (st->tok) {
	case JT_STRING:
		return jscheck_string(st, p, end);
	case JT_NUMBER:
		return jscheck_number(st, p, end);
	default:
		return jscheck_literal(st, p, end);
	}
}

bool
jscheck_feed(struct jscheck *st, const void *buf, size_t n)
{
	const unsigned char *p = buf, *base = p, *end = p + n, *q;
	unsigned char c;
	bool obj;

	if (st->failed)
		return false;
	if (st->tok != JT_NONE && (p = jscheck_token(st, p, end)) == NULL)
		goto bad_token;
	while (p < end) {
		c = *p;
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			p++;
			continue;
		}
		switch (st->next) {
		case JS_COLON:
			if (c != ':')
				goto bad;
			p++;
			st->next = JS_VALUE;
			continue;
		case JS_NEXT:
			if (st->depth == 0)
				goto bad; /* something after the value */
			obj = st->objs[(st->depth - 1) / 64] >>
				((st->depth - 1) % 64) &
			    1;
			if (c == ',')
				st->next = obj ? JS_KEY : JS_VALUE;
			else if (c == (obj ? '}' : ']'))
				st->depth--;
			else
				goto bad;
			p++;
			continue;
		case JS_KEY_OR_CLOSE:
		case JS_KEY:
			if (c == '}' && st->next == JS_KEY_OR_CLOSE) {
				st->depth--;
				p++;
				st->next = JS_NEXT;
				continue;
			}
			if (c != '"')
				goto bad;
			st->next = JS_COLON; /* once the key ends */
			goto string;
		case JS_VALUE_OR_CLOSE:
			if (c == ']') {
				st->depth--;
				p++;
				st->next = JS_NEXT;
				continue;
			}
			break;
		}
		/* A value. */
		st->tok_at = st->off + (size_t)(p - base);
		switch (c) {
		case '{':
		case '[':
			if (st->depth == JSCHECK_MAX_DEPTH)
				goto bad;
			if (c == '{')
				st->objs[st->depth / 64] |= 1ULL
				    << (st->depth % 64);
			else
				st->objs[st->depth / 64] &=
				    ~(1ULL << (st->depth % 64));
			st->depth++;
			st->next =
			    c == '{' ? JS_KEY_OR_CLOSE : JS_VALUE_OR_CLOSE;
			p++;
			continue;
		case '"':
			st->next = JS_NEXT;
			goto string;
		case 't':
		case 'f':
		case 'n':
			st->sub = c == 't' ? 0 : c == 'f' ? 1 : 2;
			/* Whole in this piece: no state to keep. */
			if ((size_t)(end - p) >= js_lens[st->sub] &&
			    memcmp(p, js_literals[st->sub], js_lens[st->sub]) ==
				0) {
				p += js_lens[st->sub];
				break;
			}
			st->tok = JT_LITERAL;
			st->left = 0;
			p = jscheck_literal(st, p, end);
			break;
		case '-':
		case '0':
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7':
		case '8':
		case '9':
			/*
			 * An integer whole in this piece (followed by
			 * something that is not its own): no state to keep.
			 */
			q = p + (c == '-');
			if (q < end && *q >= '1' && *q <= '9') {
				while (++q < end && *q >= '0' && *q <= '9')
					;
				if (q < end && *q != '.' && *q != 'e' &&
				    *q != 'E') {
					p = q;
					break;
				}
			}
			st->tok = JT_NUMBER;
			st->sub = c == '-' ? JN_MINUS :
			    c == '0'	   ? JN_ZERO :
					     JN_INT;
			p = jscheck_number(st, p + 1, end);
			break;
		default:
			goto bad;
		}
		if (p == NULL)
			goto bad_token;
		st->next = JS_NEXT;
		continue;
	string:
		st->tok_at = st->off + (size_t)(p - base);
		/* Plain ASCII to its end in this piece: no state to keep. */
		if ((p = jscheck_run(p + 1, end)) < end && *p == '"') {
			p++;
			continue;
		}
		st->tok = JT_STRING;
		st->sub = JS_CHARS;
		if ((p = jscheck_string(st, p, end)) == NULL)
			goto bad_token;
	}
	st->off += n;
	return true;
bad_token:
	st->err_at = st->tok_at;
	st->failed = true;
	return false;
bad:
	st->err_at = st->off + (size_t)(p - base);
	st->failed = true;
	return false;
}

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
