/*
 * floe: jscheck.c -- a JSON well-formedness check (RFC 8259) that is fed
 * a text in pieces as they arrive, with no allocation: the grammar's
 * state, an explicit stack of open containers, and the token being read
 * (a string, an escape, a UTF-8 sequence, a number, a literal) are kept
 * between pieces, so a piece may end anywhere. Strings are scanned a run
 * of plain ASCII 8 bytes at a time; UTF-8 is checked as RFC 3629 has it
 * (no overlong forms, no surrogates, nothing past U+10FFFF), as jansson
 * checks it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/jscheck.h"
#include "lib/units.h"

#define JS_ONES 0x0101010101010101ULL

/* What may come next, between tokens. */
enum jscheck_state {
	JS_VALUE, /* a value (the start, after ':', after ',' in an array) */
	JS_VALUE_OR_CLOSE, /* after '[' */
	JS_KEY_OR_CLOSE, /* after '{' */
	JS_KEY, /* after ',' in an object */
	JS_COLON,
	JS_NEXT, /* after a value: ',' or the container's end */
};

/* The token being read. */
enum jscheck_lex {
	JL_NONE, /* between tokens */
	JL_STR, /* in a string */
	JL_ESC, /* after a backslash */
	JL_U, /* the hex digits of \u (aux: how many so far) */
	JL_U2_BS, /* a high surrogate's low one: its backslash */
	JL_U2_U, /* ... its 'u' */
	JL_UTF8, /* continuation bytes (aux: how many are left) */
	JL_NUM, /* a number (aux: enum jscheck_num) */
	JL_LIT, /* true, false or null (u: which, aux: bytes matched) */
};

/* Where a number is. */
enum jscheck_num {
	JN_MINUS, /* after '-': a digit must follow */
	JN_ZERO, /* a leading 0: no more digits */
	JN_INT,
	JN_DOT, /* after '.': a digit must follow */
	JN_FRAC,
	JN_E, /* after 'e': a sign or a digit */
	JN_ESIGN, /* after its sign: a digit */
	JN_EXP,
};

static const char *const jscheck_lits[] = { "true", "false", "null" };

static const unsigned char *jscheck_run(const unsigned char *,
    const unsigned char *);
static bool jscheck_num(struct jscheck *, unsigned char);
static bool jscheck_num_done(const struct jscheck *);
static int jscheck_utf8_lead(struct jscheck *, unsigned char);

/*
 * Past the run of printable ASCII (not a quote or a backslash) at P, 8
 * bytes at a time: a byte below 0x20, at or above 0x80, a quote or a
 * backslash sets its high bit in T (the usual SWAR tests).
 */
static const unsigned char *
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

/* C starts a UTF-8 sequence of J's string: its rules in J. 0 or -1. */
static int
jscheck_utf8_lead(struct jscheck *j, unsigned char c)
{
	j->lo = 0x80;
	j->hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		j->aux = 1;
	else if (c >= 0xe0 && c <= 0xef) {
		j->aux = 2;
		if (c == 0xe0)
			j->lo = 0xa0; /* overlong */
		else if (c == 0xed)
			j->hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		j->aux = 3;
		if (c == 0xf0)
			j->lo = 0x90; /* overlong */
		else if (c == 0xf4)
			j->hi = 0x8f; /* past U+10FFFF */
	} else
		return -1;
	return 0;
}

/* Whether the number being read may end here. */
static bool
jscheck_num_done(const struct jscheck *j)
{
	return j->aux == JN_ZERO || j->aux == JN_INT || j->aux == JN_FRAC ||
	    j->aux == JN_EXP;
}

/* Whether C goes on the number being read (J's state moves on). */
static bool
jscheck_num(struct jscheck *j, unsigned char c)
{
	bool digit = c >= '0' && c <= '9';

	switch (j->aux) {
	case JN_MINUS:
		if (!digit)
			return false;
		j->aux = c == '0' ? JN_ZERO : JN_INT;
		return true;
	case JN_ZERO:
	case JN_INT:
		if (digit && j->aux == JN_INT)
			return true;
		if (c == '.')
			j->aux = JN_DOT;
		else if (c == 'e' || c == 'E')
			j->aux = JN_E;
		else
			return false;
		return true;
	case JN_DOT:
	case JN_FRAC:
		if (digit) {
			j->aux = JN_FRAC;
			return true;
		}
		if (j->aux == JN_FRAC && (c == 'e' || c == 'E')) {
			j->aux = JN_E;
			return true;
		}
		return false;
	case JN_E:
		if (c == '+' || c == '-') {
			j->aux = JN_ESIGN;
			return true;
		}
		/* FALLTHROUGH */
	case JN_ESIGN:
	case JN_EXP:
		if (!digit)
			return false;
		j->aux = JN_EXP;
		return true;
	}
	return false;
}

void
jscheck_init(struct jscheck *j)
{
	j->off = 0;
	j->bad_at = 0;
	j->depth = 0;
	j->st = JS_VALUE;
	j->lex = JL_NONE;
	j->aux = 0;
	j->u = 0;
	j->hs = false;
	j->key = false;
	j->bad = false;
}

bool
jscheck_feed(struct jscheck *j, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	unsigned char c;
	int d;

	if (j->bad)
		return false;
	while (p < end) {
		c = *p;
		switch (j->lex) {
		case JL_STR:
			if ((p = jscheck_run(p, end)) == end)
				continue;
			c = *p++;
			if (c == '"') {
				j->lex = JL_NONE;
				j->st = j->key ? JS_COLON : JS_NEXT;
			} else if (c == '\\')
				j->lex = JL_ESC;
			else if (c < 0x20 || jscheck_utf8_lead(j, c) == -1)
				goto bad_prev;
			else
				j->lex = JL_UTF8;
			continue;
		case JL_UTF8:
			if (c < j->lo || c > j->hi)
				goto bad;
			j->lo = 0x80;
			j->hi = 0xbf;
			if (--j->aux == 0)
				j->lex = JL_STR;
			p++;
			continue;
		case JL_ESC:
			if (c == 'u') {
				j->lex = JL_U;
				j->aux = 0;
				j->u = 0;
			} else if (c != 0 && memchr("\"\\/bfnrt", c, 8) != NULL)
				j->lex = JL_STR;
			else
				goto bad;
			p++;
			continue;
		case JL_U:
			if ((d = units_hexval(c)) < 0)
				goto bad;
			j->u = (uint16_t)(j->u << 4 | d);
			p++;
			if (++j->aux < 4)
				continue;
			if (j->hs) {
				/* The low surrogate after a high one. */
				if (j->u < 0xdc00 || j->u > 0xdfff)
					goto bad_prev;
				j->hs = false;
				j->lex = JL_STR;
			} else if (j->u >= 0xdc00 && j->u <= 0xdfff)
				goto bad_prev; /* a low surrogate alone */
			else if (j->u >= 0xd800 && j->u <= 0xdbff) {
				j->hs = true;
				j->lex = JL_U2_BS;
			} else
				j->lex = JL_STR;
			continue;
		case JL_U2_BS:
		case JL_U2_U:
			if (c != (j->lex == JL_U2_BS ? '\\' : 'u'))
				goto bad;
			if (j->lex == JL_U2_U) {
				j->aux = 0;
				j->u = 0;
			}
			j->lex = j->lex == JL_U2_BS ? JL_U2_U : JL_U;
			p++;
			continue;
		case JL_NUM:
			/* A run of digits, the bulk of a number, in one go. */
			if (j->aux == JN_INT || j->aux == JN_FRAC ||
			    j->aux == JN_EXP) {
				while (p < end && *p >= '0' && *p <= '9')
					p++;
				if (p == end)
					continue;
				c = *p;
			}
			if (jscheck_num(j, c)) {
				p++;
				continue;
			}
			if (!jscheck_num_done(j))
				goto bad;
			/* C ends the number: read it again between tokens. */
			j->lex = JL_NONE;
			j->st = JS_NEXT;
			continue;
		case JL_LIT:
			if (c != (unsigned char)jscheck_lits[j->u][j->aux])
				goto bad;
			p++;
			if (jscheck_lits[j->u][++j->aux] == '\0') {
				j->lex = JL_NONE;
				j->st = JS_NEXT;
			}
			continue;
		case JL_NONE:
			break;
		}
		/* Between tokens. */
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			p++;
			continue;
		}
		switch (j->st) {
		case JS_COLON:
			if (c != ':')
				goto bad;
			j->st = JS_VALUE;
			p++;
			continue;
		case JS_NEXT:
			if (j->depth == 0)
				goto bad; /* something after the value */
			if (c == ',')
				j->st = j->stack[j->depth - 1] == '{' ?
				    JS_KEY :
				    JS_VALUE;
			else if (c ==
			    (j->stack[j->depth - 1] == '{' ? '}' : ']'))
				j->depth--;
			else
				goto bad;
			p++;
			continue;
		case JS_KEY_OR_CLOSE:
		case JS_KEY:
			if (c == '}' && j->st == JS_KEY_OR_CLOSE) {
				j->depth--;
				j->st = JS_NEXT;
			} else if (c == '"') {
				j->lex = JL_STR;
				j->key = true;
			} else
				goto bad;
			p++;
			continue;
		case JS_VALUE_OR_CLOSE:
			if (c == ']') {
				j->depth--;
				j->st = JS_NEXT;
				p++;
				continue;
			}
			break;
		case JS_VALUE:
			break;
		}
		/* A value starts. */
		switch (c) {
		case '{':
		case '[':
			if (j->depth == sizeof(j->stack))
				goto bad;
			j->stack[j->depth++] = c;
			j->st = c == '{' ? JS_KEY_OR_CLOSE : JS_VALUE_OR_CLOSE;
			break;
		case '"':
			j->lex = JL_STR;
			j->key = false;
			break;
		case 't':
		case 'f':
		case 'n':
			j->lex = JL_LIT;
			j->u = c == 't' ? 0 : c == 'f' ? 1 : 2;
			j->aux = 1;
			break;
		case '-':
			j->lex = JL_NUM;
			j->aux = JN_MINUS;
			break;
		default:
			if (c < '0' || c > '9')
				goto bad;
			j->lex = JL_NUM;
			j->aux = c == '0' ? JN_ZERO : JN_INT;
			break;
		}
		p++;
	}
	j->off += n;
	return true;
bad_prev:
	p--;
bad:
	j->bad = true;
	j->bad_at = j->off + (size_t)(p - (const unsigned char *)s);
	return false;
}

bool
jscheck_end(struct jscheck *j, size_t *at)
{
	if (!j->bad && j->lex == JL_NUM && jscheck_num_done(j)) {
		j->lex = JL_NONE;
		j->st = JS_NEXT;
	}
	if (!j->bad &&
	    (j->lex != JL_NONE || j->st != JS_NEXT || j->depth != 0)) {
		j->bad = true;
		j->bad_at = j->off; /* it ends too soon */
	}
	if (j->bad && at != NULL)
		*at = (size_t)j->bad_at;
	return !j->bad;
}

bool
jscheck_valid(const char *s, size_t len, size_t *at)
{
	struct jscheck j;

	jscheck_init(&j);
	(void)jscheck_feed(&j, s, len);
	return jscheck_end(&j, at);
}
