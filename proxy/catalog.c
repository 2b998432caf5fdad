/*
 * floe: catalog.c -- one upstream's /v1/config answer, read into what floe
 * needs: its prefix, its namespace separator, and the config merged into
 * LoadTable answers, kept also as JSON text for the splice. The rewrites
 * that use it are catalog_rewrite.c's. No I/O. Bodies may carry vended
 * credentials: nothing here logs them or quotes them in errors.
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
#include "proxy/catalog_impl.h"

/* Keys of the catalog config that describe the catalog, not the tables. */
static const char *const catalog_unmerged[] = { "prefix", "uri", "endpoints" };

static struct catalog_text *catalog_text_new(json_t *);
static int catalog_check_strings(json_t *, const char *, char *, size_t);
static const char *catalog_lookup(json_t *, json_t *, const char *);
static char *catalog_decode(const char *);
static bool catalog_str_equal(const char *, const char *);

struct catalog_text *
catalog_text_ref(struct catalog_text *t)
{
	t->refs++;
	return t;
}

void
catalog_text_free(struct catalog_text *t)
{
	size_t i;

	if (t == NULL || --t->refs > 0)
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
	t->refs = 1;
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

/* Whether C has config members to merge into LoadTable answers. */
bool
catalog_has_merge(const struct catalog *c)
{
	return c != NULL && c->text != NULL && c->text->n > 0;
}
