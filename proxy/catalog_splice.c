/*
 * floe: catalog_splice.c -- the scanner under catalog_rewrite. Answers are
 * rewritten as text, in one pass and without a JSON parse: the merge
 * inserts members into the top-level "config" object (or inserts a
 * "config" object), and URLs are replaced where a string value starts with
 * the upstream's base. Everything else stays byte for byte as the catalog
 * wrote it (numbers keep their digits, keys their order). A body the
 * scanner cannot follow is passed on unchanged. This file finds where the
 * edits go: forward over the whole answer, or backward from its end when
 * only the top level and its "config" matter.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "lib/xmalloc.h"
#include "proxy/catalog.h"
#include "proxy/catalog_impl.h"

/*
 * As deep as the JSON check lets an answer be (and the streamed rewrite
 * follows it): a value that deep is 2 frames of splice_value and
 * splice_object a level.
 */
#define SPLICE_MAX_DEPTH JSCHECK_MAX_DEPTH

/* Byte classes for the scanner. */
#define SPLICE_C_END 1 /* ends a number or literal */
#define SPLICE_C_STRUCT 2 /* a quote or a bracket */

static const unsigned char splice_class[256] = {
	[','] = SPLICE_C_END,
	['}'] = SPLICE_C_END | SPLICE_C_STRUCT,
	[']'] = SPLICE_C_END | SPLICE_C_STRUCT,
	['{'] = SPLICE_C_STRUCT,
	['['] = SPLICE_C_STRUCT,
	['"'] = SPLICE_C_STRUCT,
	[' '] = SPLICE_C_END,
	['\t'] = SPLICE_C_END,
	['\r'] = SPLICE_C_END,
	['\n'] = SPLICE_C_END,
};

static void splice_edit(struct splice *, size_t, size_t, int);
static int splice_string(struct splice *);
static int splice_object(struct splice *, int, int);
static int splice_skip(struct splice *);
static bool splice_is_ws(char);
static bool splice_is_literal(char);
static const char *splice_back_ws(const struct splice *, const char *);
static const char *splice_back_string(const struct splice *, const char *);
static const char *splice_back_value(const struct splice *, const char *);

/* Set up SP over BODY (LEN bytes). */
void
splice_init(struct splice *sp, const struct catalog *c, bool merge,
    const char *body, size_t len)
{
	memset(sp, 0, sizeof(*sp));
	sp->body = sp->p = body;
	sp->end = body + len;
	sp->c = c;
	sp->merge = merge;
	sp->edits = sp->stack;
	sp->cap = nitems(sp->stack);
}

/* Free what a scan of SP allocated. */
void
splice_clear(struct splice *sp)
{
	if (sp->edits != sp->stack)
		free(sp->edits);
}

/* Record an edit; edits arrive in body order. */
static void
splice_edit(struct splice *sp, size_t at, size_t cut, int kind)
{
	if (sp->nedits == sp->cap) {
		if (sp->edits == sp->stack) {
			sp->edits = xreallocarray(NULL, sp->cap * 2,
			    sizeof(*sp->edits));
			memcpy(sp->edits, sp->stack, sizeof(sp->stack));
		} else
			sp->edits = xreallocarray(sp->edits, sp->cap * 2,
			    sizeof(*sp->edits));
		sp->cap *= 2;
	}
	sp->edits[sp->nedits].at = at;
	sp->edits[sp->nedits].cut = cut;
	sp->edits[sp->nedits].kind = kind;
	sp->nedits++;
}

void
splice_ws(struct splice *sp)
{
	while (sp->p < sp->end && splice_is_ws(*sp->p))
		sp->p++;
}

/* Skip a string at p (on its quote). 0, or -1 if it does not end. */
static int
splice_string(struct splice *sp)
{
	const char *q = sp->p + 1, *b;

	for (;;) {
		q = memchr(q, '"', sp->end - q);
		if (q == NULL)
			return -1;
		/* A quote is escaped by an odd run of backslashes. */
		b = q;
		while (b > sp->p + 1 && b[-1] == '\\')
			b--;
		if ((q - b) % 2 == 0)
			break;
		q++;
	}
	sp->p = q + 1;
	return 0;
}

/* Which merge key, if any, the key string [k, k + n) (quotes included) is. */
void
splice_mark_key(struct splice *sp, const char *k, size_t n)
{
	const struct catalog_text *t = sp->c->text;
	size_t i;

	for (i = 0; i < t->n && i < SPLICE_MAX_MERGE; i++)
		if (n == t->m[i].klen && memcmp(k, t->m[i].key, n) == 0)
			sp->present[i] = true;
}

/* An object at p; ROLE 1 is the top level, 2 its "config". */
static int
splice_object(struct splice *sp, int depth, int role)
{
	const char *k;
	size_t klen;

	sp->p++;
	splice_ws(sp);
	if (sp->p < sp->end && *sp->p == '}') {
		if (role == 1) {
			sp->top_empty = true;
			sp->top_at = sp->p - sp->body;
		} else if (role == 2) {
			sp->config_empty = true;
			sp->config_at = sp->p - sp->body;
		}
		sp->p++;
		return 0;
	}
	for (;;) {
		splice_ws(sp);
		if (sp->p >= sp->end || *sp->p != '"')
			return -1;
		k = sp->p;
		if (splice_string(sp) == -1)
			return -1;
		klen = sp->p - k;
		if (role == 2 && sp->merge)
			splice_mark_key(sp, k, klen);
		splice_ws(sp);
		if (sp->p >= sp->end || *sp->p != ':')
			return -1;
		sp->p++;
		splice_ws(sp);
		if (role == 1 && klen == 8 && memcmp(k, "\"config\"", 8) == 0 &&
		    sp->p < sp->end && *sp->p == '{' && !sp->config_seen) {
			sp->config_seen = true;
			if (splice_object(sp, depth + 1, 2) == -1)
				return -1;
		} else if (role == 1 && klen == 8 &&
		    memcmp(k, "\"config\"", 8) == 0) {
			/*
			 * A "config" that is not an object is left alone, and
			 * so is a second one: the first decides, as it does
			 * for an answer streamed.
			 */
			if (!sp->config_seen)
				sp->merge = false;
			sp->config_seen = true;
			if (splice_value(sp, depth + 1, 0) == -1)
				return -1;
		} else if (splice_value(sp, depth + 1, 0) == -1)
			return -1;
		splice_ws(sp);
		if (sp->p >= sp->end)
			return -1;
		if (*sp->p == ',') {
			sp->p++;
			continue;
		}
		if (*sp->p != '}')
			return -1;
		if (role == 2)
			sp->config_at = sp->p - sp->body;
		else if (role == 1)
			sp->top_at = sp->p - sp->body;
		sp->p++;
		return 0;
	}
}

/* Any JSON value at p. */
int
splice_value(struct splice *sp, int depth, int role)
{
	const char *s;

	if (depth > SPLICE_MAX_DEPTH)
		return -1;
	splice_ws(sp);
	if (sp->p >= sp->end)
		return -1;
	/* Nothing in a nested value matters without URLs to rewrite. */
	if (role == 0 && sp->u == NULL && (*sp->p == '{' || *sp->p == '['))
		return splice_skip(sp);
	switch (*sp->p) {
	case '{':
		return splice_object(sp, depth, role);
	case '[':
		sp->p++;
		splice_ws(sp);
		if (sp->p < sp->end && *sp->p == ']') {
			sp->p++;
			return 0;
		}
		for (;;) {
			if (splice_value(sp, depth + 1, 0) == -1)
				return -1;
			splice_ws(sp);
			if (sp->p >= sp->end)
				return -1;
			if (*sp->p == ',') {
				sp->p++;
				continue;
			}
			if (*sp->p != ']')
				return -1;
			sp->p++;
			return 0;
		}
	case '"':
		s = sp->p;
		if (splice_string(sp) == -1)
			return -1;
		if (sp->u != NULL &&
		    (size_t)(sp->p - s - 2) >= sp->u->fromlen &&
		    memcmp(s + 1, sp->u->from, sp->u->fromlen) == 0)
			splice_edit(sp, s + 1 - sp->body, sp->u->fromlen,
			    SPLICE_URL);
		return 0;
	default:
		/* A number or a literal. */
		s = sp->p;
		while (sp->p < sp->end &&
		    !(splice_class[(unsigned char)*sp->p] & SPLICE_C_END))
			sp->p++;
		return sp->p > s ? 0 : -1;
	}
}

/*
 * Skip an object or array at p when nothing inside it matters (no URL to
 * rewrite, not the top level or its config): brackets are counted outside
 * strings, without following the grammar, sixteen bytes at a time where
 * SSE2 is there.
 */
static int
splice_skip(struct splice *sp)
{
	const char *p = sp->p, *end = sp->end;
	bool instr = false, esc = false;
	int depth = 0, i;
	unsigned m;
	char c;
#if defined(__SSE2__)
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i ob = _mm_set1_epi8('{'), cb = _mm_set1_epi8('}');
	const __m128i os = _mm_set1_epi8('['), cs = _mm_set1_epi8(']');
	__m128i v;

	/*
	 * Sixteen bytes at a time: a mask of the quotes, backslashes and
	 * brackets, then only those bytes are looked at, in order.
	 */
	while (end - p >= 16) {
		v = _mm_loadu_si128((const __m128i *)(const void *)p);
		m = (unsigned)_mm_movemask_epi8(
		    _mm_or_si128(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q),
						  _mm_cmpeq_epi8(v, bs)),
				     _mm_or_si128(_mm_cmpeq_epi8(v, ob),
					 _mm_cmpeq_epi8(v, cb))),
			_mm_or_si128(_mm_cmpeq_epi8(v, os),
			    _mm_cmpeq_epi8(v, cs))));
		if (esc) {
			/* The first byte was escaped in the block before. */
			m &= ~1u;
			esc = false;
		}
		while (m != 0) {
			i = __builtin_ctz(m);
			m &= m - 1;
			c = p[i];
			if (instr) {
				if (c == '"')
					instr = false;
				else if (c == '\\' && i == 15)
					esc = true;
				else if (c == '\\')
					m &= ~(1u << (i + 1));
				continue;
			}
			if (c == '"')
				instr = true;
			else if (c == '{' || c == '[')
				depth++;
			else if (c == '\\' || --depth < 0)
				return -1;
			else if (depth == 0) {
				sp->p = p + i + 1;
				return 0;
			}
		}
		p += 16;
	}
#endif
	for (; p < end; p++) {
		c = *p;
		if (esc) {
			esc = false;
			continue;
		}
		if (instr) {
			if (c == '"')
				instr = false;
			else if (c == '\\')
				esc = true;
			continue;
		}
		if (c == '"')
			instr = true;
		else if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']') {
			if (--depth < 0)
				return -1;
			if (depth == 0) {
				sp->p = p + 1;
				return 0;
			}
		}
	}
	return -1;
}

/* Is C JSON whitespace? */
static bool
splice_is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Can C be part of a number or of true, false, null? */
static bool
splice_is_literal(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') || c == '-' || c == '+' || c == '.';
}

/* Back over whitespace from Q (inclusive); NULL past the start. */
static const char *
splice_back_ws(const struct splice *sp, const char *q)
{
	while (q >= sp->body && splice_is_ws(*q))
		q--;
	return q >= sp->body ? q : NULL;
}

/* Q is a string's closing quote: its opening quote, or NULL. */
static const char *
splice_back_string(const struct splice *sp, const char *q)
{
	const char *b;

	for (;;) {
		if (q <= sp->body)
			return NULL;
		q = memrchr(sp->body, '"', q - sp->body);
		if (q == NULL)
			return NULL;
		/* A quote is escaped by an odd run of backslashes. */
		for (b = q; b > sp->body && b[-1] == '\\'; b--)
			;
		/* A run from the start of a tail may go on before it. */
		if (b == sp->body && sp->partial && b != q)
			return NULL;
		if ((q - b) % 2 == 0)
			return q;
	}
}

/* Q is the last byte of a value: its first byte, or NULL. */
static const char *
splice_back_value(const struct splice *sp, const char *q)
{
	int depth = 0;

	if (*q == '"')
		return splice_back_string(sp, q);
	if (*q != '}' && *q != ']') {
		/* A number or a literal: true, false, null, -1.5e3. */
		if (!splice_is_literal(*q))
			return NULL;
		while (q > sp->body && splice_is_literal(q[-1]))
			q--;
		return q;
	}
	for (; q >= sp->body; q--) {
		if (*q == '"') {
			if ((q = splice_back_string(sp, q)) == NULL)
				return NULL;
		} else if (*q == '}' || *q == ']')
			depth++;
		else if ((*q == '{' || *q == '[') && --depth == 0)
			return q;
	}
	return NULL;
}

/*
 * Find the top-level "config" reading the answer's members from its end.
 * Catalogs write a LoadTableResult's config after its metadata, so this
 * reads a few hundred bytes where the forward scan reads the whole table
 * history. Fills what splice_object would for roles 1 and 2. Returns -1
 * when the end is not that of one object (the forward scan decides).
 */
int
splice_tail(struct splice *sp)
{
	const char *q, *v, *k, *first;

	first = sp->body;
	while (first < sp->end && splice_is_ws(*first))
		first++;
	if ((q = splice_back_ws(sp, sp->end - 1)) == NULL || *q != '}')
		return -1;
	sp->top_at = q - sp->body;
	if ((q = splice_back_ws(sp, q - 1)) == NULL)
		return -1;
	if (*q == '{') {
		sp->top_empty = true;
		return q == first ? 0 : -1;
	}
	for (;;) {
		if ((v = splice_back_value(sp, q)) == NULL ||
		    (q = splice_back_ws(sp, v - 1)) == NULL || *q != ':' ||
		    (q = splice_back_ws(sp, q - 1)) == NULL || *q != '"' ||
		    (k = splice_back_string(sp, q)) == NULL)
			return -1;
		if (q - k + 1 == 8 && memcmp(k, "\"config\"", 8) == 0) {
			sp->config_seen = true;
			if (*v != '{') {
				/* Not an object: the table's choice. */
				sp->merge = false;
				return 0;
			}
			sp->p = v;
			return splice_object(sp, 1, 2);
		}
		if ((q = splice_back_ws(sp, k - 1)) == NULL)
			return -1;
		if (*q == '{')
			return q == first ? 0 : -1;
		if (*q != ',' || (q = splice_back_ws(sp, q - 1)) == NULL)
			return -1;
	}
}
