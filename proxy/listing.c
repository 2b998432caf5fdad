/*
 * floe: listing.c -- merges the list answers of the warehouse and the
 * lakehouse into one listing: validate both bodies, collect their items,
 * sort bytewise by namespace levels then name, drop duplicates, and cut a
 * page after the item named by floe's own token (base64url of the item's
 * key as JSON), so a client pages through the union as through one catalog.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/xmalloc.h"
#include "proxy/listing.h"

/* One listed object; both members are borrowed from a parsed body. */
struct listing_item {
	json_t *ns; /* array of strings: the namespace levels */
	json_t *name; /* string, or NULL when listing namespaces */
};

static bool listing_is_levels(const json_t *);
static int listing_collect(json_t *, bool, struct listing_item **, size_t *,
    size_t *);
static int listing_strcmp(const json_t *, const json_t *);
static int listing_cmp(const struct listing_item *,
    const struct listing_item *);
static int listing_qsort_cmp(const void *, const void *);
static char *listing_b64_encode(const char *, size_t);
static char *listing_b64_decode(const char *, size_t *);
static json_t *listing_token_decode(const char *, bool, struct listing_item *);
static char *listing_page(const char *, const struct listing_item *, size_t,
    size_t, bool, bool, size_t *);

static const char listing_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Whether J is an array of strings (namespace levels). */
static bool
listing_is_levels(const json_t *j)
{
	size_t i;

	if (!json_is_array(j))
		return false;
	for (i = 0; i < json_array_size(j); i++)
		if (!json_is_string(json_array_get(j, i)))
			return false;
	return true;
}

/*
 * Append the items of ARR (the "identifiers" or "namespaces" array of one
 * body) to *ITEMS. -1 if an item has the wrong shape.
 */
static int
listing_collect(json_t *arr, bool ident, struct listing_item **items, size_t *n,
    size_t *cap)
{
	json_t *it, *ns, *name;
	size_t i;

	json_array_foreach(arr, i, it) {
		if (ident) {
			ns = json_object_get(it, "namespace");
			name = json_object_get(it, "name");
			if (!json_is_object(it) || !listing_is_levels(ns) ||
			    !json_is_string(name))
				return -1;
		} else {
			ns = it;
			name = NULL;
			if (!listing_is_levels(ns))
				return -1;
		}
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*items = xreallocarray(*items, *cap, sizeof(**items));
		}
		(*items)[*n].ns = ns;
		(*items)[*n].name = name;
		(*n)++;
	}
	return 0;
}

/* Compare two JSON strings bytewise, a prefix first. */
static int
listing_strcmp(const json_t *a, const json_t *b)
{
	size_t la = json_string_length(a), lb = json_string_length(b);
	int c;

	if ((c = memcmp(json_string_value(a), json_string_value(b),
		 la < lb ? la : lb)) != 0)
		return c;
	return la < lb ? -1 : la > lb;
}

/* Order items by namespace levels (a parent first), then by name. */
static int
listing_cmp(const struct listing_item *a, const struct listing_item *b)
{
	size_t i, na = json_array_size(a->ns), nb = json_array_size(b->ns);
	int c;

	for (i = 0; i < na && i < nb; i++)
		if ((c = listing_strcmp(json_array_get(a->ns, i),
			 json_array_get(b->ns, i))) != 0)
			return c;
	if (na != nb)
		return na < nb ? -1 : 1;
	if (a->name == NULL || b->name == NULL)
		return 0;
	return listing_strcmp(a->name, b->name);
}

/* qsort(3) adapter for listing_cmp. */
static int
listing_qsort_cmp(const void *a, const void *b)
{
	return listing_cmp(a, b);
}

/* Base64url of IN[0..LEN), without padding. Caller frees. */
static char *
listing_b64_encode(const char *in, size_t len)
{
	const unsigned char *p = (const unsigned char *)in;
	char *out, *o;
	size_t i;
	unsigned long v;

	out = o = xmalloc(len / 3 * 4 + 5);
	for (i = 0; i + 2 < len; i += 3) {
		v = (unsigned long)p[i] << 16 | (unsigned long)p[i + 1] << 8 |
		    p[i + 2];
		*o++ = listing_b64[v >> 18 & 63];
		*o++ = listing_b64[v >> 12 & 63];
		*o++ = listing_b64[v >> 6 & 63];
		*o++ = listing_b64[v & 63];
	}
	if (len - i == 1) {
		v = (unsigned long)p[i] << 16;
		*o++ = listing_b64[v >> 18 & 63];
		*o++ = listing_b64[v >> 12 & 63];
	} else if (len - i == 2) {
		v = (unsigned long)p[i] << 16 | (unsigned long)p[i + 1] << 8;
		*o++ = listing_b64[v >> 18 & 63];
		*o++ = listing_b64[v >> 12 & 63];
		*o++ = listing_b64[v >> 6 & 63];
	}
	*o = '\0';
	return out;
}

/* Decode unpadded base64url IN; NULL if it is not. Caller frees. */
static char *
listing_b64_decode(const char *in, size_t *outlen)
{
	size_t len = strlen(in), i, o = 0;
	unsigned long v = 0;
	const char *c;
	char *out;
	int bits = 0;

	if (len % 4 == 1)
		return NULL;
	out = xmalloc(len / 4 * 3 + 3);
	for (i = 0; i < len; i++) {
		if ((c = strchr(listing_b64, in[i])) == NULL) {
			free(out);
			return NULL;
		}
		v = (v << 6 | (unsigned long)(c - listing_b64)) & 0xffffff;
		if ((bits += 6) >= 8) {
			bits -= 8;
			out[o++] = (char)(v >> bits & 0xff);
		}
	}
	/* Leftover bits must be zero, so each item has one token. */
	if ((v & ((1UL << bits) - 1)) != 0) {
		free(out);
		return NULL;
	}
	*outlen = o;
	return out;
}

/*
 * Decode TOKEN into KEY: the JSON [levels, name] for identifiers, [levels]
 * for namespaces. Returns the parsed JSON KEY borrows from, or NULL.
 */
static json_t *
listing_token_decode(const char *token, bool ident, struct listing_item *key)
{
	json_t *j;
	char *raw;
	size_t len;

	if ((raw = listing_b64_decode(token, &len)) == NULL)
		return NULL;
	j = json_loadb(raw, len, 0, NULL);
	free(raw);
	if (j == NULL)
		return NULL;
	key->ns = json_array_get(j, 0);
	key->name = ident ? json_array_get(j, 1) : NULL;
	if (json_array_size(j) != (ident ? 2 : 1) ||
	    !listing_is_levels(key->ns) ||
	    (ident && !json_is_string(key->name))) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* Whether TOKEN is empty or a page token floe issued for KIND. */
bool
listing_token_is_valid(const char *kind, const char *token)
{
	struct listing_item key;
	json_t *j;

	if (token == NULL || *token == '\0')
		return true;
	j = listing_token_decode(token, strcmp(kind, "identifiers") == 0, &key);
	json_decref(j);
	return j != NULL;
}

/*
 * The answer for ITEMS[LO..END) under KIND, with a next-page-token naming
 * ITEMS[END - 1] if MORE, or null if only PAGED. NULL when out of memory.
 * Caller frees.
 */
static char *
listing_page(const char *kind, const struct listing_item *items, size_t lo,
    size_t end, bool more, bool paged, size_t *outlen)
{
	json_t *out, *arr, *o, *next = NULL;
	char *res = NULL, *dump, *t;
	size_t i;

	if ((out = json_object()) == NULL || (arr = json_array()) == NULL ||
	    json_object_set_new(out, kind, arr) == -1)
		goto fail;
	for (i = lo; i < end; i++) {
		if (items[i].name != NULL)
			o = json_pack("{sOsO}", "namespace", items[i].ns,
			    "name", items[i].name);
		else
			o = json_incref(items[i].ns);
		if (json_array_append_new(arr, o) == -1)
			goto fail;
	}
	if (more) {
		/* The token is the key of the last item returned. */
		if (items[end - 1].name != NULL)
			o = json_pack("[OO]", items[end - 1].ns,
			    items[end - 1].name);
		else
			o = json_pack("[O]", items[end - 1].ns);
		dump = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		if (dump == NULL)
			goto fail;
		t = listing_b64_encode(dump, strlen(dump));
		free(dump);
		next = json_string(t);
		free(t);
		if (next == NULL)
			goto fail;
	} else if (paged)
		next = json_null();
	if (next != NULL &&
	    json_object_set_new(out, "next-page-token", next) == -1)
		goto fail;
	if ((res = json_dumps(out, JSON_COMPACT)) != NULL)
		*outlen = strlen(res);
fail:
	json_decref(out);
	return res;
}

/* Merge two listings into one page; see listing.h. */
char *
listing_merge(const char *kind, const char *bodies[2], const size_t lens[2],
    const char *page_token, long page_size, size_t *outlen, char *err,
    size_t errlen)
{
	static const char *const side[2] = { "first", "second" };
	struct listing_item *items = NULL, key;
	json_t *root[2] = { NULL, NULL }, *tok = NULL, *arr, *next;
	json_error_t jerr;
	size_t n = 0, cap = 0, i, j, lo, hi, mid, end;
	bool ident, paged;
	char *res = NULL;

	ident = strcmp(kind, "identifiers") == 0;
	if (!ident && strcmp(kind, "namespaces") != 0) {
		snprintf(err, errlen, "unknown listing kind \"%s\"", kind);
		return NULL;
	}
	for (i = 0; i < 2; i++) {
		if (bodies[i] == NULL)
			continue;
		if ((root[i] = json_loadb(bodies[i], lens[i], 0, &jerr)) ==
		    NULL) {
			snprintf(err, errlen, "%s listing: %s (line %d)",
			    side[i], jerr.text, jerr.line);
			goto fail;
		}
		next = json_object_get(root[i], "next-page-token");
		arr = json_object_get(root[i], kind);
		if (!json_is_object(root[i]) ||
		    (arr != NULL && !json_is_array(arr)) ||
		    (next != NULL && !json_is_null(next))) {
			snprintf(err, errlen,
			    "%s listing: not a complete list of %s", side[i],
			    kind);
			goto fail;
		}
		if (arr != NULL &&
		    listing_collect(arr, ident, &items, &n, &cap) == -1) {
			snprintf(err, errlen, "%s listing: malformed %s item",
			    side[i], ident ? "identifier" : "namespace");
			goto fail;
		}
	}
	if (n > 0)
		qsort(items, n, sizeof(*items), listing_qsort_cmp);
	for (i = j = 0; i < n; i++)
		if (j == 0 || listing_cmp(&items[j - 1], &items[i]) != 0)
			items[j++] = items[i];
	n = j;

	/* The page: [lo, end) after the token's item. */
	paged = page_token != NULL || page_size > 0;
	lo = 0;
	end = n;
	if (page_token != NULL && *page_token != '\0') {
		if ((tok = listing_token_decode(page_token, ident, &key)) ==
		    NULL) {
			snprintf(err, errlen, "invalid page token");
			goto fail;
		}
		for (hi = n; lo < hi;) {
			mid = lo + (hi - lo) / 2;
			if (listing_cmp(&items[mid], &key) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (paged) {
		if (page_size <= 0)
			page_size = LISTING_PAGE_SIZE;
		if ((size_t)page_size < n - lo)
			end = lo + (size_t)page_size;
	}

	if ((res = listing_page(kind, items, lo, end, paged && end < n, paged,
		 outlen)) == NULL)
		snprintf(err, errlen, "out of memory building the listing");
fail:
	json_decref(tok);
	json_decref(root[1]);
	json_decref(root[0]);
	free(items);
	return res;
}
