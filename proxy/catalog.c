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

#include <jansson.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "proxy/catalog.h"

/* Keys of the catalog config that describe the catalog, not the tables. */
static const char *const catalog_unmerged[] = { "prefix", "uri", "endpoints" };

/* What a string value is rewritten from and to. */
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
static bool catalog_merge_into(json_t *, json_t *);
static bool catalog_walk(json_t *, const struct catalog_urls *);
static json_t *catalog_rewrite_string(json_t *, const struct catalog_urls *);

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

	changed = !c->known || !catalog_str_equal(prefix, c->prefix) ||
	    !catalog_str_equal(separator, c->separator) ||
	    !json_equal(merge, c->merge);
	free(c->prefix);
	free(c->separator);
	json_decref(c->config);
	json_decref(c->merge);
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
 * Add each key of MERGE that ROOT's "config" lacks (creating "config" when
 * absent; a "config" that is not an object is left alone). True if
 * anything was added.
 */
static bool
catalog_merge_into(json_t *root, json_t *merge)
{
	json_t *config, *v;
	const char *key;
	bool added = false;

	config = json_object_get(root, "config");
	if (config == NULL) {
		if ((config = json_object()) == NULL ||
		    json_object_set_new(root, "config", config) == -1)
			return false;
	} else if (!json_is_object(config))
		return false;
	json_object_foreach(merge, key, v) {
		if (json_object_get(config, key) != NULL)
			continue;
		/* A copy: the walk below may replace values, never C's. */
		if (json_object_set_new(config, key, json_deep_copy(v)) == 0)
			added = true;
	}
	return added;
}

/* S rewritten if it starts with U->from, else NULL. New reference. */
static json_t *
catalog_rewrite_string(json_t *s, const struct catalog_urls *u)
{
	const char *v = json_string_value(s);
	size_t len = json_string_length(s), n;
	json_t *out;
	char *buf;

	if (len < u->fromlen || memcmp(v, u->from, u->fromlen) != 0)
		return NULL;
	n = u->tolen + (len - u->fromlen);
	buf = xmalloc(n + 1);
	memcpy(buf, u->to, u->tolen);
	memcpy(buf + u->tolen, v + u->fromlen, len - u->fromlen);
	buf[n] = '\0';
	out = json_stringn(buf, n);
	free(buf);
	return out;
}

/*
 * Rewrite every string value under J (keys are left alone). Values are
 * replaced, not changed in place, so shared values stay intact. True if
 * anything changed. jansson caps nesting at parse time, which bounds the
 * recursion.
 */
static bool
catalog_walk(json_t *j, const struct catalog_urls *u)
{
	const char *key;
	json_t *v, *nv;
	size_t i;
	bool changed = false;

	if (json_is_object(j)) {
		json_object_foreach(j, key, v) {
			if (json_is_string(v)) {
				if ((nv = catalog_rewrite_string(v, u)) !=
					NULL &&
				    json_object_set_new(j, key, nv) == 0)
					changed = true;
			} else if (catalog_walk(v, u))
				changed = true;
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v) {
			if (json_is_string(v)) {
				if ((nv = catalog_rewrite_string(v, u)) !=
					NULL &&
				    json_array_set_new(j, i, nv) == 0)
					changed = true;
			} else if (catalog_walk(v, u))
				changed = true;
		}
	}
	return changed;
}

/*
 * Rewrite an upstream answer for the client (see catalog.h). The common
 * case, nothing to merge and no upstream URL in the body, is answered
 * without parsing, and the caller passes the original bytes on.
 */
char *
catalog_rewrite(const struct catalog *c, bool merge, const char *body,
    size_t len, const char *upstream_base, const char *floe_base,
    const char *pinned_prefix, size_t *outlen)
{
	struct catalog_urls u = { 0 };
	char *from = NULL, *to = NULL, *out = NULL;
	size_t blen = 0;
	bool changed = false, urls;
	json_t *root;

	merge = merge && c != NULL && json_object_size(c->merge) > 0;
	if (upstream_base != NULL && floe_base != NULL) {
		blen = strlen(upstream_base);
		while (blen > 0 && upstream_base[blen - 1] == '/')
			blen--;
	}
	/* Merged values may hold upstream URLs too (a signer's uri). */
	urls = blen > 0 &&
	    (merge || memmem(body, len, upstream_base, blen) != NULL);
	if (!merge && !urls)
		return NULL;
	if ((root = json_loadb(body, len, 0, NULL)) == NULL)
		return NULL;
	if (!json_is_object(root))
		goto out;
	if (merge && catalog_merge_into(root, c->merge))
		changed = true;
	if (urls) {
		const char *prefix = c != NULL ? c->prefix : NULL;
		size_t flen = strlen(floe_base);

		while (flen > 0 && floe_base[flen - 1] == '/')
			flen--;
		from = xasprintf("%.*s/v1/%s%s", (int)blen, upstream_base,
		    prefix != NULL ? prefix : "", prefix != NULL ? "/" : "");
		to = xasprintf("%.*s/v1/%s%s", (int)flen, floe_base,
		    pinned_prefix != NULL ? pinned_prefix : "",
		    pinned_prefix != NULL && *pinned_prefix != '\0' ? "/" : "");
		u.from = from;
		u.fromlen = strlen(from);
		u.to = to;
		u.tolen = strlen(to);
		if (catalog_walk(root, &u))
			changed = true;
	}
	if (changed &&
	    (out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER)) !=
		NULL)
		*outlen = strlen(out);
out:
	free(from);
	free(to);
	json_decref(root);
	return out;
}
