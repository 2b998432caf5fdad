/*
 * floe: catalog.c -- one upstream's /v1/config answer, read into what floe
 * needs (prefix, namespace separator, the config merged into LoadTable
 * answers), and the answer rewrites that depend on it. No I/O. Bodies may
 * carry vended credentials: nothing here logs them or quotes them in errors.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "lib/compat.h"
#include "lib/memfind.h"
#include "lib/xmalloc.h"
#include "proxy/catalog.h"

/* Keys of the catalog config that describe the catalog, not the tables. */
static const char *const catalog_unmerged[] = { "prefix", "uri", "endpoints" };

/* What a string value is rewritten from and to. */
/*
 * catalog_body_has searches up to CATALOG_BODY_VECS pieces in place, for
 * strings of up to CATALOG_SEAM_MAX bytes; evbuffer_search does the rest.
 */
#define CATALOG_BODY_VECS 256
#define CATALOG_SEAM_MAX 512
/* Room for a rewritten URL prefix on the stack. */
#define CATALOG_URL_BUF 512

struct catalog_urls {
	const char *from; /* UPSTREAM_BASE "/v1/" [prefix "/"] */
	size_t fromlen;
	const char *to; /* FLOE_BASE "/v1/" [PINNED "/"] */
	size_t tolen;
};

static int catalog_check_strings(json_t *, const char *, char *, size_t);
static const char *catalog_lookup(json_t *, json_t *, const char *);
static char *catalog_decode(const char *);
static bool catalog_str_equal(const char *, const char *);

/* The merge members as JSON text, escaped once per config change. */
struct catalog_text {
	size_t n;
	struct {
		char *key; /* "key", quotes included */
		size_t klen;
		char *val; /* "value", quotes included */
		size_t vlen;
	} m[];
};

static void
catalog_text_free(struct catalog_text *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++) {
		free(t->m[i].key);
		free(t->m[i].val);
	}
	free(t);
}

/* MERGE as text. NULL if a key or value cannot be encoded. */
static struct catalog_text *
catalog_text_new(json_t *merge)
{
	struct catalog_text *t;
	const char *key;
	json_t *v, *k;

	t = xcalloc(1, sizeof(*t) + json_object_size(merge) * sizeof(t->m[0]));
	json_object_foreach(merge, key, v) {
		k = json_string(key);
		t->m[t->n].key = k != NULL ?
		    json_dumps(k, JSON_ENCODE_ANY | JSON_COMPACT) :
		    NULL;
		json_decref(k);
		t->m[t->n].val = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		if (t->m[t->n].key == NULL || t->m[t->n].val == NULL) {
			free(t->m[t->n].key);
			free(t->m[t->n].val);
			catalog_text_free(t);
			return NULL;
		}
		t->m[t->n].klen = strlen(t->m[t->n].key);
		t->m[t->n].vlen = strlen(t->m[t->n].val);
		t->n++;
	}
	return t;
}

/* An empty catalog: nothing known yet. */
struct catalog *
catalog_new(void)
{
	return xcalloc(1, sizeof(struct catalog));
}

/* Free C and everything it read. */
void
catalog_free(struct catalog *c)
{
	if (c == NULL)
		return;
	free(c->prefix);
	free(c->separator);
	json_decref(c->config);
	json_decref(c->merge);
	catalog_text_free(c->text);
	free(c->last_error);
	free(c);
}

/* 0 if OBJ (named NAME) is an object of strings, else -1 with ERR. */
static int
catalog_check_strings(json_t *obj, const char *name, char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	if (obj == NULL) {
		snprintf(err, errlen, "\"%s\" is missing", name);
		return -1;
	}
	if (!json_is_object(obj)) {
		snprintf(err, errlen, "\"%s\" is not an object", name);
		return -1;
	}
	json_object_foreach(obj, key, v) {
		if (!json_is_string(v)) {
			/* The key is a config name, never a secret value. */
			snprintf(err, errlen,
			    "\"%s\": \"%.64s\" is not a string", name, key);
			return -1;
		}
	}
	return 0;
}

/* KEY from OVERRIDES, else from DEFAULTS, else NULL. Borrowed. */
static const char *
catalog_lookup(json_t *defaults, json_t *overrides, const char *key)
{
	const char *v;

	if ((v = json_string_value(json_object_get(overrides, key))) != NULL)
		return v;
	return json_string_value(json_object_get(defaults, key));
}

/* Percent-decode S; a malformed escape is kept as written. Caller frees. */
static char *
catalog_decode(const char *s)
{
	char *out = xmalloc(strlen(s) + 1), *o = out;
	char hex[3] = { 0 };

	while (*s != '\0') {
		if (s[0] == '%' && isxdigit((unsigned char)s[1]) &&
		    isxdigit((unsigned char)s[2])) {
			hex[0] = s[1];
			hex[1] = s[2];
			*o++ = (char)strtol(hex, NULL, 16);
			s += 3;
		} else
			*o++ = *s++;
	}
	*o = '\0';
	return out;
}

/* Two optional strings are equal (both NULL counts). */
static bool
catalog_str_equal(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/*
 * Take a /v1/config answer (CatalogConfig). The generation moves only when
 * something floe uses changed (prefix, separator, merged config), so a
 * refresh that reads the same answer invalidates nothing.
 */
int
catalog_update(struct catalog *c, const char *body, size_t len, int64_t now_ms,
    char *err, size_t errlen)
{
	json_t *root, *defaults, *overrides, *merge;
	struct catalog_text *text;
	json_error_t jerr;
	const char *v;
	char *prefix = NULL, *separator = NULL;
	size_t i;
	bool changed;

	if ((root = json_loadb(body, len, 0, &jerr)) == NULL) {
		/* jerr.text may quote the body: give the place only. */
		snprintf(err, errlen, "not JSON (line %d, column %d)",
		    jerr.line, jerr.column);
		return -1;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "not a JSON object");
		goto fail;
	}
	defaults = json_object_get(root, "defaults");
	overrides = json_object_get(root, "overrides");
	if (catalog_check_strings(defaults, "defaults", err, errlen) == -1 ||
	    catalog_check_strings(overrides, "overrides", err, errlen) == -1)
		goto fail;
	if (json_object_get(root, "endpoints") != NULL &&
	    !json_is_array(json_object_get(root, "endpoints"))) {
		snprintf(err, errlen, "\"endpoints\" is not an array");
		goto fail;
	}

	/* Overrides apply after defaults (CatalogConfig). */
	if ((v = catalog_lookup(defaults, overrides, "prefix")) != NULL &&
	    *v != '\0')
		prefix = xstrdup(v);
	if ((v = catalog_lookup(defaults, overrides, "namespace-separator")) !=
		NULL &&
	    *v != '\0') {
		separator = catalog_decode(v);
		if (*separator == '\0') {
			free(separator);
			separator = NULL;
		}
	}
	if ((merge = json_deep_copy(defaults)) == NULL ||
	    json_object_update(merge, overrides) == -1) {
		json_decref(merge);
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (i = 0; i < nitems(catalog_unmerged); i++)
		(void)json_object_del(merge, catalog_unmerged[i]);
	if ((text = catalog_text_new(merge)) == NULL) {
		json_decref(merge);
		snprintf(err, errlen, "config values cannot be encoded");
		goto fail;
	}

	changed = !c->known || !catalog_str_equal(prefix, c->prefix) ||
	    !catalog_str_equal(separator, c->separator) ||
	    !json_equal(merge, c->merge);
	free(c->prefix);
	free(c->separator);
	json_decref(c->config);
	json_decref(c->merge);
	catalog_text_free(c->text);
	c->text = text;
	c->prefix = prefix;
	c->separator = separator;
	c->config = root;
	c->merge = merge;
	c->known = true;
	c->fetched_ms = now_ms;
	free(c->last_error);
	c->last_error = NULL;
	if (changed)
		c->generation++;
	return changed ? 1 : 0;
fail:
	json_decref(root);
	return -1;
}

/*
 * Answers are rewritten as text, in one pass and without a JSON parse: the
 * merge inserts members into the top-level "config" object (or inserts a
 * "config" object), and URLs are replaced where a string value starts with
 * the upstream's base. Everything else stays byte for byte as the catalog
 * wrote it (numbers keep their digits, keys their order). A body the
 * scanner cannot follow is passed on unchanged.
 */
#define SPLICE_MAX_DEPTH 64
#define SPLICE_MAX_MERGE 256

struct splice_edit {
	size_t at; /* offset in the body */
	size_t cut; /* bytes of the body replaced there */
	int kind; /* SPLICE_URL or SPLICE_MERGE */
};

enum { SPLICE_URL, SPLICE_MERGE };

struct splice {
	const char *body, *p, *end;
	const struct catalog_urls *u; /* NULL: no URL in the body */
	const struct catalog_urls *mu; /* for merged values, or NULL */
	/* Merge keys as they appear in JSON (quotes included). */
	const struct catalog *c;
	bool merge;
	bool partial; /* body is the tail of a longer answer */
	bool present[SPLICE_MAX_MERGE];
	bool config_seen;
	size_t config_at; /* the '}' that closes "config" */
	bool config_empty;
	size_t top_at; /* the '}' that closes the top level */
	bool top_empty;
	struct splice_edit *edits, stack[16];
	size_t nedits, cap;
};

static int splice_value(struct splice *, int, int);
static int splice_skip(struct splice *);

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

static void
splice_ws(struct splice *sp)
{
	while (sp->p < sp->end &&
	    (*sp->p == ' ' || *sp->p == '\t' || *sp->p == '\n' ||
		*sp->p == '\r'))
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
static void
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
			/* A "config" that is not an object is left alone. */
			sp->config_seen = true;
			sp->merge = false;
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
static int
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
static int
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

/* Append JSON-string text S (already escaped as jansson writes it). */
static void
splice_put(char **o, const char *s, size_t n)
{
	memcpy(*o, s, n);
	*o += n;
}

/* The merge members to insert, URLs in them rewritten. Caller frees. */
static char *
splice_members(struct splice *sp, bool lead_comma, size_t *outlen)
{
	const struct catalog_text *t = sp->c->text;
	const struct catalog_urls *u = sp->mu;
	size_t i, n = 0, cap = 0;
	char *buf, *o;
	bool first = true;

	for (i = 0; i < t->n; i++)
		cap += t->m[i].klen + t->m[i].vlen + 2 +
		    (u != NULL ? u->tolen : 0);
	o = buf = xmalloc(cap + 1);
	for (i = 0; i < t->n && i < SPLICE_MAX_MERGE; i++) {
		if (sp->present[i])
			continue;
		if (!first || lead_comma)
			*o++ = ',';
		first = false;
		splice_put(&o, t->m[i].key, t->m[i].klen);
		*o++ = ':';
		/* A merged value may be an upstream URL too (a signer's). */
		if (u != NULL && t->m[i].vlen > u->fromlen + 1 &&
		    t->m[i].val[0] == '"' &&
		    memcmp(t->m[i].val + 1, u->from, u->fromlen) == 0) {
			*o++ = '"';
			splice_put(&o, u->to, u->tolen);
			splice_put(&o, t->m[i].val + 1 + u->fromlen,
			    t->m[i].vlen - 1 - u->fromlen);
		} else
			splice_put(&o, t->m[i].val, t->m[i].vlen);
	}
	n = o - buf;
	*outlen = n;
	return buf;
}

bool
catalog_has_merge(const struct catalog *c)
{
	return c != NULL && c->text != NULL && c->text->n > 0;
}

/*
 * BASE (BLEN bytes) "/v1/" PREFIX, and "/" if SLASH: into BUF when it
 * fits, else into a new allocation left in *OWN for the caller to free.
 */
static const char *
catalog_url(char buf[CATALOG_URL_BUF], char **own, const char *base,
    size_t blen, const char *prefix, bool slash, size_t *outlen)
{
	size_t plen = strlen(prefix), n = blen + 4 + plen + slash;
	char *o;

	o = n < CATALOG_URL_BUF ? buf : (*own = xmalloc(n + 1));
	memcpy(o, base, blen);
	memcpy(o + blen, "/v1/", 4);
	memcpy(o + blen + 4, prefix, plen);
	if (slash)
		o[n - 1] = '/';
	o[n] = '\0';
	*outlen = n;
	return o;
}

/* The URL prefixes of one rewrite, and what holds them. */
struct catalog_urlbuf {
	struct catalog_urls u;
	char *from, *to; /* heap copies of long ones, or NULL */
	char frombuf[CATALOG_URL_BUF], tobuf[CATALOG_URL_BUF];
};

/* UPSTREAM_BASE without trailing slashes: its length (0: no rewrites). */
static size_t
catalog_base_len(const char *upstream_base, const char *floe_base)
{
	size_t blen;

	if (upstream_base == NULL || floe_base == NULL)
		return 0;
	blen = strlen(upstream_base);
	while (blen > 0 && upstream_base[blen - 1] == '/')
		blen--;
	return blen;
}

/*
 * Does a merged value start with the upstream URL (a signer's uri)? Only
 * such values are rewritten (see splice_members).
 */
static bool
catalog_merged_urls(const struct catalog *c, const char *upstream_base,
    size_t blen)
{
	size_t i;

	for (i = 0; blen > 0 && i < c->text->n; i++)
		if (c->text->m[i].vlen > blen + 1 &&
		    c->text->m[i].val[0] == '"' &&
		    memcmp(c->text->m[i].val + 1, upstream_base, blen) == 0)
			return true;
	return false;
}

/* Build the from and to prefixes of a rewrite into UB. */
static void
catalog_urls_make(struct catalog_urlbuf *ub, const struct catalog *c,
    const char *upstream_base, size_t blen, const char *floe_base,
    const char *pinned_prefix)
{
	const char *prefix = c != NULL ? c->prefix : NULL;
	size_t flen = strlen(floe_base);

	while (flen > 0 && floe_base[flen - 1] == '/')
		flen--;
	ub->u.from = catalog_url(ub->frombuf, &ub->from, upstream_base, blen,
	    prefix != NULL ? prefix : "", prefix != NULL, &ub->u.fromlen);
	ub->u.to = catalog_url(ub->tobuf, &ub->to, floe_base, flen,
	    pinned_prefix != NULL ? pinned_prefix : "",
	    pinned_prefix != NULL && *pinned_prefix != '\0', &ub->u.tolen);
}

/* Set up SP over BODY (LEN bytes). */
static void
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

/*
 * After a scan that left SP->merge set: the text to insert (caller frees;
 * NULL if none) and its offset in the scanned body, *AT.
 */
static char *
splice_insertion(struct splice *sp, size_t *inslen, size_t *at)
{
	size_t mlen;
	char *m, *ins, *o;

	if (sp->config_seen) {
		/* After the table's own keys, which win. */
		ins = splice_members(sp, !sp->config_empty, inslen);
		*at = sp->config_at;
	} else {
		/* Last, as a new key of the answer. */
		m = splice_members(sp, false, &mlen);
		o = ins = xmalloc(mlen + 16);
		if (!sp->top_empty)
			*o++ = ',';
		splice_put(&o, "\"config\":{", 10);
		splice_put(&o, m, mlen);
		*o++ = '}';
		*inslen = o - ins;
		free(m);
		*at = sp->top_at;
	}
	if (*inslen == 0) {
		free(ins);
		return NULL;
	}
	return ins;
}

/*
 * Rewrite an upstream answer for the client (see catalog.h). The common
 * case, nothing to merge and no upstream URL in the body, costs one scan
 * (memfind) and the caller passes the original bytes on.
 */
char *
catalog_rewrite(const struct catalog *c, bool merge, const char *body,
    size_t len, const char *upstream_base, const char *floe_base,
    const char *pinned_prefix, size_t *outlen)
{
	struct catalog_urlbuf ub = { 0 };
	struct splice sp;
	char *out = NULL, *o, *ins = NULL;
	size_t blen, inslen = 0, total, at = 0, i, ins_at = 0;
	bool urls, in_body, ins_done = true;

	merge = merge && c != NULL && c->text != NULL && c->text->n > 0;
	blen = catalog_base_len(upstream_base, floe_base);
	in_body = blen > 0 && memfind(body, len, upstream_base, blen) != NULL;
	urls =
	    in_body || (merge && catalog_merged_urls(c, upstream_base, blen));
	if (!merge && !urls)
		return NULL;
	if (urls)
		catalog_urls_make(&ub, c, upstream_base, blen, floe_base,
		    pinned_prefix);
	splice_init(&sp, c, merge, body, len);
	sp.u = in_body ? &ub.u : NULL;
	sp.mu = urls ? &ub.u : NULL;
	/*
	 * With no URL to rewrite only the top level and its config matter,
	 * and they are read from the end; otherwise every string value is
	 * looked at, front to back.
	 */
	if (sp.u == NULL && sp.merge && splice_tail(&sp) == 0)
		;
	else {
		memset(sp.present, 0, sizeof(sp.present));
		sp.config_seen = sp.config_empty = sp.top_empty = false;
		sp.merge = merge;
		sp.p = body;
		splice_ws(&sp);
		if (sp.p >= sp.end || *sp.p != '{' ||
		    splice_value(&sp, 0, 1) == -1)
			goto out;
		splice_ws(&sp);
		if (sp.p != sp.end)
			goto out; /* trailing bytes: not one JSON object */
	}
	if (sp.merge) {
		ins = splice_insertion(&sp, &inslen, &ins_at);
		ins_done = ins == NULL;
	}
	if (sp.nedits == 0 && ins_done)
		goto out;
	total = len + inslen;
	for (i = 0; i < sp.nedits; i++)
		total += ub.u.tolen - sp.edits[i].cut;
	o = out = xmalloc(total + 1);
	for (i = 0; i <= sp.nedits; i++) {
		size_t next = i < sp.nedits ? sp.edits[i].at : len;

		if (!ins_done && ins_at <= next) {
			splice_put(&o, body + at, ins_at - at);
			splice_put(&o, ins, inslen);
			at = ins_at;
			ins_done = true;
		}
		splice_put(&o, body + at, next - at);
		if (i == sp.nedits)
			break;
		splice_put(&o, ub.u.to, ub.u.tolen);
		at = next + sp.edits[i].cut;
	}
	*o = '\0';
	*outlen = o - out;
out:
	if (sp.edits != sp.stack)
		free(sp.edits);
	free(ins);
	free(ub.from);
	free(ub.to);
	return out;
}

/*
 * The config merge of a large answer from its tail (see catalog.h). Only
 * what splice_tail decides within the tail counts: a "config" member found
 * there, or, with the whole answer in hand, its absence.
 */
int
catalog_merge_tail(const struct catalog *c, const char *tail, size_t tlen,
    size_t len, const char *upstream_base, const char *floe_base,
    const char *pinned_prefix, char **ins, size_t *inslen, size_t *at)
{
	struct catalog_urlbuf ub = { 0 };
	struct splice sp;
	int rc = -1;

	*ins = NULL;
	*inslen = *at = 0;
	if (c == NULL || c->text == NULL || c->text->n == 0)
		return 0;
	if (tlen > len || tlen == 0)
		return -1;
	splice_init(&sp, c, true, tail, tlen);
	sp.partial = tlen < len;
	if (catalog_merged_urls(c, upstream_base,
		catalog_base_len(upstream_base, floe_base))) {
		catalog_urls_make(&ub, c, upstream_base,
		    catalog_base_len(upstream_base, floe_base), floe_base,
		    pinned_prefix);
		sp.mu = &ub.u;
	}
	if (splice_tail(&sp) == -1 || (!sp.config_seen && tlen < len))
		goto out;
	rc = 0;
	if (sp.merge && (*ins = splice_insertion(&sp, inslen, at)) != NULL) {
		*at += len - tlen;
		rc = 1;
	}
out:
	if (sp.edits != sp.stack)
		free(sp.edits);
	free(ub.from);
	free(ub.to);
	return rc;
}

/*
 * Does BODY hold S (N bytes)? Each piece is searched whole and each seam
 * between two pieces through a small window, so a large answer is never
 * made contiguous to be searched.
 */
bool
catalog_body_has(struct evbuffer *body, const char *s, size_t n)
{
	struct evbuffer_iovec v[CATALOG_BODY_VECS];
	char seam[2 * CATALOG_SEAM_MAX];
	size_t a, b;
	int i, nv;

	nv = evbuffer_peek(body, -1, NULL, v, nitems(v));
	if (n == 0 || n > CATALOG_SEAM_MAX || nv > (int)nitems(v))
		return evbuffer_search(body, s, n, NULL).pos != -1;
	for (i = 0; i < nv; i++) {
		if (memfind(v[i].iov_base, v[i].iov_len, s, n) != NULL)
			return true;
		if (i + 1 == nv)
			break;
		/* A match across a seam needs pieces of N - 1 bytes around. */
		if (v[i].iov_len < n - 1 || v[i + 1].iov_len < n - 1)
			return evbuffer_search(body, s, n, NULL).pos != -1;
		a = n - 1;
		b = n - 1;
		memcpy(seam, (char *)v[i].iov_base + v[i].iov_len - a, a);
		memcpy(seam + a, v[i + 1].iov_base, b);
		if (memfind(seam, a + b, s, n) != NULL)
			return true;
	}
	return false;
}
