/*
 * floe: print.c -- floectl's human output shared by its commands: tables
 * with aligned columns, objects flattened into "key  value" rows, JSON
 * values as table text, a gate refusal's blocking objects, and an answer
 * printed as the API sent it (--json).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/xmalloc.h"

/* The most columns a table aligns; further ones are printed as they come. */
#define CTL_TABLE_MAXCOLS 16

/* Print the answer as the API wrote it, one line. */
void
ctl_print_json(const struct ctl_resp *r)
{
	fwrite(r->body, 1, r->len, stdout);
	if (r->len == 0 || r->body[r->len - 1] != '\n')
		putchar('\n');
}

/* {"KEY":LIST} on one line, as floe would answer it whole. */
void
ctl_print_list(const char *key, json_t *list)
{
	json_t *j = json_pack("{s:O}", key, list);
	char *s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

	if (s != NULL)
		printf("%s\n", s);
	free(s);
	json_decref(j);
}

/* A JSON value as table text: strings bare, null as "-". Caller frees. */
char *
ctl_text(const json_t *v)
{
	char *s, *out;

	if (v == NULL || json_is_null(v))
		return xstrdup("-");
	if (json_is_string(v))
		return xstrdup(json_string_value(v));
	if (json_is_integer(v))
		return xasprintf("%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
	if (json_is_true(v))
		return xstrdup("true");
	if (json_is_false(v))
		return xstrdup("false");
	if ((s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
		return xstrdup("?");
	out = xstrdup(s);
	free(s);
	return out;
}

/* String member KEY of O, or "-". */
const char *
ctl_str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : "-";
}

/*
 * An evidence object's dirty records by bucket ({"gap":1,"stale":2}) as
 * "gap 1, stale 2", or "-" for none. Caller frees.
 */
char *
ctl_buckets(json_t *b)
{
	const char *key;
	json_t *v;
	char *out, *p;

	out = xstrdup("");
	json_object_foreach(b, key, v) {
		p = xasprintf("%s%s%s %" JSON_INTEGER_FORMAT, out,
		    out[0] != '\0' ? ", " : "", key, json_integer_value(v));
		free(out);
		out = p;
	}
	if (out[0] == '\0') {
		free(out);
		out = xstrdup("-");
	}
	return out;
}

/* Start a table of NCOLS columns. */
void
ctl_table_init(struct ctl_table *t, int ncols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
}

/* Add a row of NCOLS strings (copied). */
void
ctl_table_add(struct ctl_table *t, ...)
{
	va_list ap;
	int i;

	t->cells = xreallocarray(t->cells, (t->nrows + 1) * (size_t)t->ncols,
	    sizeof(char *));
	va_start(ap, t);
	for (i = 0; i < t->ncols; i++)
		t->cells[t->nrows * (size_t)t->ncols + (size_t)i] =
		    xstrdup(va_arg(ap, const char *));
	va_end(ap);
	t->nrows++;
}

/* Print the table to stdout, aligned, and free it. */
void
ctl_table_print(struct ctl_table *t)
{
	ctl_table_fprint(stdout, t);
}

/* Print the table with columns aligned, two spaces apart, and free it. */
void
ctl_table_fprint(FILE *out, struct ctl_table *t)
{
	size_t w[CTL_TABLE_MAXCOLS], r, len;
	int i;

	memset(w, 0, sizeof(w));
	for (r = 0; r < t->nrows; r++)
		for (i = 0; i < t->ncols && i < CTL_TABLE_MAXCOLS; i++) {
			len =
			    strlen(t->cells[r * (size_t)t->ncols + (size_t)i]);
			if (len > w[i])
				w[i] = len;
		}
	for (r = 0; r < t->nrows; r++) {
		for (i = 0; i < t->ncols; i++) {
			char *cell = t->cells[r * (size_t)t->ncols + (size_t)i];

			if (i == t->ncols - 1)
				fprintf(out, "%s\n", cell);
			else
				fprintf(out, "%-*s  ",
				    i < CTL_TABLE_MAXCOLS ? (int)w[i] : 0,
				    cell);
			free(cell);
		}
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
}

/* Add V's members to T as "prefix.key  value" rows, objects flattened. */
void
ctl_flatten(struct ctl_table *t, const char *prefix, json_t *v)
{
	const char *key;
	json_t *m;
	char *name, *text;

	json_object_foreach(v, key, m) {
		name = prefix[0] != '\0' ? xasprintf("%s.%s", prefix, key) :
					   xstrdup(key);
		if (json_is_object(m) && json_object_size(m) > 0)
			ctl_flatten(t, name, m);
		else {
			text = ctl_text(m);
			ctl_table_add(t, name, text);
			free(text);
		}
		free(name);
	}
}

/*
 * The objects of a gate refusal's "blocking" list as a table on stderr:
 * object, clean and dirty counts, dirty records by bucket.
 */
void
ctl_print_blocking(json_t *list)
{
	struct ctl_table t;
	json_t *o;
	char *clean, *dirty, *buckets;
	size_t i;

	if (json_array_size(list) == 0)
		return;
	ctl_table_init(&t, 4);
	ctl_table_add(&t, "OBJECT", "CLEAN", "DIRTY", "BUCKETS");
	json_array_foreach(list, i, o) {
		clean = ctl_text(json_object_get(o, "clean"));
		dirty = ctl_text(json_object_get(o, "dirty"));
		buckets = ctl_buckets(json_object_get(o, "buckets"));
		ctl_table_add(&t, ctl_str(o, "object"), clean, dirty, buckets);
		free(clean);
		free(dirty);
		free(buckets);
	}
	ctl_table_fprint(stderr, &t);
}

/* A refusal's list of error strings, one a line on stderr. */
void
ctl_print_errors(json_t *list)
{
	json_t *m;
	size_t i;

	json_array_foreach(list, i, m) {
		if (json_is_string(m))
			fprintf(stderr, "  %s\n", json_string_value(m));
	}
}

/*
 * A dry run's answer (a wave move or a route set) for people: what would
 * happen, the gate, the tables it moves and who loaded them in the last
 * day. CTL_REFUSED when it would be refused, else CTL_OK.
 */
int
ctl_print_dry(const struct ctl *c, const struct ctl_resp *r)
{
	json_t *j = r->json, *rd = json_object_get(j, "readers_last_day");
	json_t *objs = json_object_get(j, "objects"), *g, *o;
	const char *would = ctl_str(j, "would");
	size_t i;

	if (c->json)
		ctl_print_json(r);
	else {
		if (json_is_string(json_object_get(j, "from")))
			printf("dry run: wave %" JSON_INTEGER_FORMAT
			       ": %s -> %s would %s\n",
			    json_integer_value(json_object_get(j, "wave")),
			    ctl_str(j, "from"), ctl_str(j, "to"), would);
		else
			printf("dry run: %s: wave %s (reads %s) -> wave "
			       "%" JSON_INTEGER_FORMAT
			       " %s (reads %s) would %s\n",
			    ctl_str(j, "object"),
			    json_is_null(json_object_get(j, "from_wave")) ?
				"none" :
				ctl_str(j, "from_state"),
			    ctl_str(j, "reads_now"),
			    json_integer_value(json_object_get(j, "wave")),
			    ctl_str(j, "state"), ctl_str(j, "reads_after"),
			    would);
		printf("  %s\n", ctl_str(j, "message"));
		if ((g = json_object_get(j, "gate")) != NULL)
			printf("  %s gate: %s\n", ctl_str(g, "name"),
			    json_is_true(json_object_get(g, "pass")) ?
				"holds" :
				"BLOCKED");
		if (json_is_array(objs)) {
			printf("  tables it moves: %zu", json_array_size(objs));
			json_array_foreach(objs, i, o) {
				if (i == 20) {
					printf(" ...");
					break;
				}
				printf("%s%s", i == 0 ? ": " : ", ",
				    json_string_value(o));
			}
			printf("\n");
		}
		if (json_is_object(rd)) {
			printf("  identities that loaded them since %s: "
			       "%" JSON_INTEGER_FORMAT,
			    ctl_str(rd, "since"),
			    json_integer_value(
				json_object_get(rd, "identities")));
			json_array_foreach(json_object_get(rd, "list"), i, o)
				printf("%s%s", i == 0 ? " (" : ", ",
				    json_string_value(o));
			printf("%s\n",
			    json_array_size(json_object_get(rd, "list")) > 0 ?
				")" :
				"");
		}
		printf("  nothing changed\n");
	}
	return strcmp(would, "be refused") == 0 ? CTL_REFUSED : CTL_OK;
}
