/*
 * floe: jscheck.c -- a JSON well-formedness check (RFC 8259) in one pass
 * over the bytes, with an explicit stack of open containers and no
 * allocation. Strings are scanned a run of plain ASCII at a time; UTF-8
 * is checked as RFC 3629 has it (no overlong forms, no surrogates, nothing
 * past U+10FFFF), as jansson checks it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/jscheck.h"
#include "lib/units.h"

#define JS_ONES 0x0101010101010101ULL

/* What may come next. */
enum jscheck_state {
	JS_VALUE, /* a value (the start, after ':', after ',' in an array) */
	JS_VALUE_OR_CLOSE, /* after '[' */
	JS_KEY_OR_CLOSE, /* after '{' */
	JS_KEY, /* after ',' in an object */
	JS_COLON,
	JS_NEXT, /* after a value: ',' or the container's end */
};

static const unsigned char *jscheck_string(const unsigned char *,
    const unsigned char *);
static const unsigned char *jscheck_escape(const unsigned char *,
    const unsigned char *);
static const unsigned char *jscheck_utf8(const unsigned char *,
    const unsigned char *);
static const unsigned char *jscheck_number(const unsigned char *,
    const unsigned char *);
static int jscheck_hex4(const unsigned char *, const unsigned char *);

/* The value of the 4 hex digits at P, or -1. */
static int
jscheck_hex4(const unsigned char *p, const unsigned char *end)
{
	int v = 0, d, i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		if ((d = units_hexval(p[i])) < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

/* The escape after the backslash at P; past it, or NULL. */
static const unsigned char *
jscheck_escape(const unsigned char *p, const unsigned char *end)
{
	int u, lo;

	if (++p == end)
		return NULL;
	if (*p != 'u')
		return memchr("\"\\/bfnrt", *p, 8) != NULL ? p + 1 : NULL;
	if ((u = jscheck_hex4(p + 1, end)) < 0)
		return NULL;
	p += 5;
	if (u >= 0xdc00 && u <= 0xdfff)
		return NULL; /* a low surrogate alone */
	if (u < 0xd800 || u > 0xdbff)
		return p;
	/* A high surrogate: its low one must follow. */
	if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
	    (lo = jscheck_hex4(p + 2, end)) < 0xdc00 || lo > 0xdfff)
		return NULL;
	return p + 6;
}

/* The UTF-8 sequence at P (its lead byte >= 0x80); past it, or NULL. */
static const unsigned char *
jscheck_utf8(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = *p, lo = 0x80, hi = 0xbf;
	int n, i;

	if (c >= 0xc2 && c <= 0xdf)
		n = 1;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 2;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 3;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* past U+10FFFF */
	} else
		return NULL;
	if (end - p <= n)
		return NULL;
	if (p[1] < lo || p[1] > hi)
		return NULL;
	for (i = 2; i <= n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return NULL;
	return p + n + 1;
}

/* The string whose opening quote is at P; past its closing quote, or NULL. */
static const unsigned char *
jscheck_string(const unsigned char *p, const unsigned char *end)
{
	uint64_t w, q, b, t;

	p++;
	for (;;) {
		/*
		 * The common case: a run of printable ASCII, 8 bytes at a
		 * time: a byte below 0x20, at or above 0x80, a quote or a
		 * backslash sets its high bit in T (the usual SWAR tests).
		 */
		while (end - p >= 8) {
			memcpy(&w, p, 8);
			q = w ^ JS_ONES * '"';
			b = w ^ JS_ONES * '\\';
			t = (((w - JS_ONES * 0x20) & ~w) | w |
				((q - JS_ONES) & ~q) | ((b - JS_ONES) & ~b)) &
			    JS_ONES * 0x80;
			if (t != 0)
				break;
			p += 8;
		}
		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' &&
		    *p != '\\')
			p++;
		if (p == end)
			return NULL;
		if (*p == '"')
			return p + 1;
		if (*p == '\\')
			p = jscheck_escape(p, end);
		else if (*p < 0x20)
			return NULL;
		else
			p = jscheck_utf8(p, end);
		if (p == NULL)
			return NULL;
	}
}

/* The number at P; past it, or NULL. */
static const unsigned char *
jscheck_number(const unsigned char *p, const unsigned char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p == end || *p < '0' || *p > '9')
		return NULL;
	if (*p++ != '0')
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	if (p < end && *p == '.') {
		if (++p == end || *p < '0' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || *p < '0' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	return p;
}

bool
jscheck_valid(const char *s, size_t len, size_t *at)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len, *q;
	unsigned char stack[JSCHECK_MAX_DEPTH];
	enum jscheck_state st = JS_VALUE;
	size_t depth = 0;

	for (;;) {
		while (p < end &&
		    (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if (p == end) {
			if (st == JS_NEXT && depth == 0)
				return true;
			goto bad;
		}
		switch (st) {
		case JS_COLON:
			if (*p++ != ':')
				goto bad_prev;
			st = JS_VALUE;
			continue;
		case JS_NEXT:
			if (depth == 0)
				goto bad; /* something after the value */
			if (*p == ',')
				st =
				    stack[depth - 1] == '{' ? JS_KEY : JS_VALUE;
			else if (*p == (stack[depth - 1] == '{' ? '}' : ']'))
				depth--;
			else
				goto bad;
			p++;
			continue;
		case JS_KEY_OR_CLOSE:
		case JS_KEY:
			if (*p == '}' && st == JS_KEY_OR_CLOSE) {
				depth--;
				p++;
				st = JS_NEXT;
				continue;
			}
			if (*p != '"' || (q = jscheck_string(p, end)) == NULL)
				goto bad;
			p = q;
			st = JS_COLON;
			continue;
		case JS_VALUE_OR_CLOSE:
			if (*p == ']') {
				depth--;
				p++;
				st = JS_NEXT;
				continue;
			}
			break;
		case JS_VALUE:
			break;
		}
		/* A value. */
		switch (*p) {
		case '{':
		case '[':
			if (depth == sizeof(stack))
				goto bad;
			stack[depth++] = *p;
			st = *p++ == '{' ? JS_KEY_OR_CLOSE : JS_VALUE_OR_CLOSE;
			continue;
		case '"':
			q = jscheck_string(p, end);
			break;
		case 't':
			q = end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 :
									NULL;
			break;
		case 'f':
			q = end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 :
									 NULL;
			break;
		case 'n':
			q = end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 :
									NULL;
			break;
		default:
			q = jscheck_number(p, end);
			break;
		}
		if (q == NULL)
			goto bad;
		p = q;
		st = JS_NEXT;
	}
bad_prev:
	p--;
bad:
	if (at != NULL)
		*at = (size_t)(p - (const unsigned char *)s);
	return false;
}
