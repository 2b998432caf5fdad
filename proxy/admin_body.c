/*
 * floe: admin_body.c -- what an admin request's body holds: one JSON
 * object and its fields, each checked with a message that names it, or
 * for a bulk import a JSON array or JSON lines walked record by record;
 * and the names in it, objects and wave numbers.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "proxy/admin_impl.h"
#include "routing/route.h"
#include "routing/wave.h"

static int admin_records_array(struct admin_req *, const char *, const char *,
    admin_record_fn, void *);
static int admin_record(struct admin_req *, const char *, size_t, json_t *,
    admin_record_fn, void *);
static void admin_req_body(struct admin_req *);

/*
 * Parse the body as a JSON object. An empty body is an empty object when
 * OPTIONAL. NULL (with the reply set) if it is not a JSON object.
 */
json_t *
admin_body(struct admin_req *r, bool optional)
{
	json_error_t je;
	json_t *j;
	size_t i;

	admin_req_body(r);
	for (i = 0; i < r->body_len; i++)
		if (!isspace((unsigned char)r->body[i]))
			break;
	if (i == r->body_len) {
		if (optional)
			return json_object();
		admin_error(r, 400, "body is empty: a JSON object is required");
		return NULL;
	}
	j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
	if (j == NULL) {
		admin_error(r, 400, "body is not JSON: %s at line %d column %d",
		    je.text, je.line, je.column);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		admin_error(r, 400, "body is not a JSON object");
		return NULL;
	}
	return j;
}

/*
 * Walk the body of a bulk import (POST /routes/import, POST /ledger): a
 * JSON array, element by element, never one tree of the whole body; or
 * JSON lines, one record a line, blank lines skipped, a single record
 * allowed to span lines. ONE gets each record with r->where naming it
 * ("line 3: "); *UNIT becomes "line" or "record". 0, or -1 with a 400
 * naming the record, or saying there were no NOUN at all.
 */
int
admin_records(struct admin_req *r, const char *noun, const char **unit,
    admin_record_fn one, void *arg)
{
	const char *p, *end, *nl, *q;
	json_error_t je;
	json_t *j;
	size_t line, n = 0;
	int rc;

	admin_req_body(r);
	end = r->body + r->body_len;
	for (p = r->body; p < end && isspace((unsigned char)*p); p++)
		;
	if (p == end) {
		admin_error(r, 400, "no %s: the body is empty", noun);
		return -1;
	}
	if (*p == '[') {
		*unit = "record";
		return admin_records_array(r, p, noun, one, arg);
	}
	*unit = "line";
	for (p = r->body, line = 1; p < end; p = nl + 1, line++) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		for (q = p; q < nl && isspace((unsigned char)*q); q++)
			;
		if (q == nl) {
			if (nl == end)
				break;
			continue;
		}
		j = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES,
		    &je);
		if (j == NULL && n == 0) {
			/* One record written over several lines. */
			j = json_loadb(r->body, r->body_len,
			    JSON_REJECT_DUPLICATES, NULL);
			if (j != NULL && json_is_object(j)) {
				rc = admin_record(r, "line", line, j, one, arg);
				json_decref(j);
				return rc;
			}
			json_decref(j);
			j = NULL;
		}
		if (j == NULL) {
			snprintf(r->where, sizeof(r->where),
			    "line %zu: ", line);
			admin_error(r, 400, "not JSON: %s at column %d",
			    je.text, je.column);
			return -1;
		}
		rc = admin_record(r, "line", line, j, one, arg);
		json_decref(j);
		if (rc == -1)
			return -1;
		n++;
		if (nl == end)
			break;
	}
	/* Not all blank (the body is not): at least one record was seen. */
	return 0;
}

/* admin_records of a JSON array starting at P ('['). */
static int
admin_records_array(struct admin_req *r, const char *p, const char *noun,
    admin_record_fn one, void *arg)
{
	const char *end = r->body + r->body_len;
	json_error_t je;
	json_t *j;
	size_t no = 0;
	int rc;

	for (p++; p < end && isspace((unsigned char)*p); p++)
		;
	if (p < end && *p == ']') {
		admin_error(r, 400, "no %s: the array is empty", noun);
		return -1;
	}
	for (;;) {
		no++;
		snprintf(r->where, sizeof(r->where), "record %zu: ", no);
		j = json_loadb(p, (size_t)(end - p),
		    JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
		if (j == NULL) {
			admin_error(r, 400, "not a JSON object: %s", je.text);
			return -1;
		}
		rc = admin_record(r, "record", no, j, one, arg);
		json_decref(j);
		if (rc == -1)
			return -1;
		/* On success the position is the bytes read. */
		for (p += je.position; p < end && isspace((unsigned char)*p);
		     p++)
			;
		if (p < end && *p == ']')
			break;
		if (p == end || *p != ',') {
			snprintf(r->where, sizeof(r->where),
			    "record %zu: ", no);
			admin_error(r, 400, "',' or ']' expected after it");
			return -1;
		}
		p++;
	}
	for (p++; p < end && isspace((unsigned char)*p); p++)
		;
	if (p < end) {
		admin_error(r, 400, "data after the array");
		return -1;
	}
	return 0;
}

/* Hand record J (UNIT NO) to ONE, with r->where naming it meanwhile. */
static int
admin_record(struct admin_req *r, const char *unit, size_t no, json_t *j,
    admin_record_fn one, void *arg)
{
	int rc;

	snprintf(r->where, sizeof(r->where), "%s %zu: ", unit, no);
	if ((rc = one(r, j, no, arg)) == 0)
		r->where[0] = '\0';
	return rc;
}

/* Refuse fields of B not in KNOWN (NULL-terminated). 0 or -1. */
int
admin_body_check(struct admin_req *r, json_t *b, const char *const *known)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(b, key, v) {
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(known[i], key) == 0)
				break;
		if (known[i] == NULL) {
			admin_error(r, 400, "unknown field \"%s\"", key);
			return -1;
		}
	}
	return 0;
}

/* Get string field NAME of B into *OUT (borrowed; NULL if absent). */
int
admin_body_string(struct admin_req *r, json_t *b, const char *name,
    bool required, const char **out)
{
	json_t *v = json_object_get(b, name);

	*out = NULL;
	if (v == NULL || json_is_null(v)) {
		if (!required)
			return 0;
		admin_error(r, 400, "field \"%s\" is required", name);
		return -1;
	}
	if (!json_is_string(v)) {
		admin_error(r, 400, "field \"%s\" must be a string", name);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

/*
 * Get integer field NAME of B, MIN..MAX, into *OUT (DEF if absent and not
 * REQUIRED).
 */
int
admin_body_int(struct admin_req *r, json_t *b, const char *name, bool required,
    json_int_t def, json_int_t min, json_int_t max, json_int_t *out)
{
	json_t *v = json_object_get(b, name);

	*out = def;
	if (v == NULL || json_is_null(v)) {
		if (!required)
			return 0;
		admin_error(r, 400, "field \"%s\" is required", name);
		return -1;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max) {
		admin_error(r, 400,
		    "field \"%s\" must be an integer %" JSON_INTEGER_FORMAT
		    "..%" JSON_INTEGER_FORMAT,
		    name, min, max);
		return -1;
	}
	*out = json_integer_value(v);
	return 0;
}

/* Get boolean field NAME of B into *OUT (false if absent). */
int
admin_body_bool(struct admin_req *r, json_t *b, const char *name, bool *out)
{
	json_t *v = json_object_get(b, name);

	*out = false;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		admin_error(r, 400, "field \"%s\" must be true or false", name);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

/* Parse an object's text form; answer 400 with route's message if bad. */
int
admin_parse_object(struct admin_req *r, const char *text, struct route_obj *obj)
{
	char err[256];

	err[0] = '\0';
	if (route_obj_parse(text, obj, err, sizeof(err)) == -1) {
		admin_error(r, 400, "%s",
		    err[0] != '\0' ? err : "malformed object");
		return -1;
	}
	return 0;
}

/*
 * Query parameter KEY as an object into *OBJ; *HAS says whether it was
 * given. 0, or -1 with a 400.
 */
int
admin_query_object(struct admin_req *r, const char *key, struct route_obj *obj,
    bool *has)
{
	char *text = NULL;
	int rc = 0;

	if ((*has = admin_query_get(r, key, &text) == 1))
		rc = admin_parse_object(r, text, obj);
	free(text);
	return rc;
}

/* Parse a wave number from the path; answer 400 if bad. */
int
admin_parse_wave(struct admin_req *r, const char *text, uint32_t *n)
{
	if (wave_parse(text, n) == -1) {
		admin_error(r, 400, "wave \"%s\" is not a number 0..%u", text,
		    WAVE_MAX);
		return -1;
	}
	return 0;
}

/* Set BODY and BODY_LEN: the body as one block, pulled up once. */
static void
admin_req_body(struct admin_req *r)
{
	if (r->body != NULL)
		return;
	r->body_len = r->in != NULL ? evbuffer_get_length(r->in) : 0;
	r->body =
	    r->body_len > 0 ? (const char *)evbuffer_pullup(r->in, -1) : "";
}
