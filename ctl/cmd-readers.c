/*
 * floe: cmd-readers.c -- floectl readers: who loaded a table (or the
 * tables of a wave) from which side, newest first, with when each
 * identity was last seen anywhere; the stale readers a freeze waits for
 * and the clients that revalidated with the old side's ETag; and readers
 * forget, an operator's excuse for one.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/compat.h"
#include "lib/xmalloc.h"

static void ctl_readers_print(json_t *);
static void ctl_readers_list(const char *, const char *, json_t *,
    const char *);

/* A list of {object, identity, ...} under TITLE, with the time at WHEN. */
static void
ctl_readers_list(const char *title, const char *what, json_t *list,
    const char *when)
{
	struct ctl_table t;
	json_t *e;
	size_t i;

	if (json_array_size(list) == 0)
		return;
	printf("\n%s (%zu):\n", title, json_array_size(list));
	ctl_table_init(&t, 5);
	ctl_table_add(&t, "  IDENTITY", "OBJECT", what, "LAST SEEN", "");
	json_array_foreach(list, i, e) {
		char *id = xasprintf("  %s", ctl_str(e, "identity"));

		ctl_table_add(&t, id, ctl_str(e, "object"), ctl_str(e, when),
		    ctl_str(e, "last_seen"), "");
		free(id);
	}
	ctl_table_print(&t);
}

/* GET /readers's answer, for people. */
static void
ctl_readers_print(json_t *j)
{
	json_t *rows = json_object_get(j, "readers"), *e;
	struct ctl_table t;
	const char *obj = ctl_str(j, "object");
	char *count;
	size_t i;

	if (json_is_integer(json_object_get(j, "wave")))
		printf("%s%swave %" JSON_INTEGER_FORMAT " (%s%s%s)",
		    strcmp(obj, "-") != 0 ? obj : "",
		    strcmp(obj, "-") != 0 ? ": " : "",
		    json_integer_value(json_object_get(j, "wave")),
		    ctl_str(j, "state"),
		    json_is_string(json_object_get(j, "flipped")) ?
			", left the warehouse " :
			"",
		    json_is_string(json_object_get(j, "flipped")) ?
			ctl_str(j, "flipped") :
			"");
	else
		printf("%s: no wave (read from the warehouse)", obj);
	printf(": %" JSON_INTEGER_FORMAT " reader records%s\n",
	    json_integer_value(json_object_get(j, "total")),
	    (json_int_t)json_array_size(rows) <
		    json_integer_value(json_object_get(j, "total")) ?
		", the newest shown" :
		"");
	if (json_array_size(rows) > 0) {
		ctl_table_init(&t, 9);
		ctl_table_add(&t, "IDENTITY", "OBJECT", "SIDE", "LAST LOAD",
		    "FIRST LOAD", "LOADS", "LAST SEEN", "USER AGENT", "NOTE");
		json_array_foreach(rows, i, e) {
			count = ctl_text(json_object_get(e, "count"));
			ctl_table_add(&t, ctl_str(e, "identity"),
			    ctl_str(e, "object"), ctl_str(e, "side"),
			    ctl_str(e, "last"), ctl_str(e, "first"), count,
			    ctl_str(e, "last_seen"), ctl_str(e, "user_agent"),
			    json_is_true(json_object_get(e, "stale")) ?
				"STALE" :
				json_is_string(json_object_get(e, "old_etag")) ?
				"old-etag" :
				"");
			free(count);
		}
		ctl_table_print(&t);
	}
	ctl_readers_list("Stale readers: loaded the warehouse copy within "
			 "the horizon before the flip, not the lakehouse "
			 "since (a freeze waits for them)",
	    "LAST LOAD", json_object_get(j, "stale"), "last_load");
	ctl_readers_list("Revalidated with an old-side ETag since the flip "
			 "(live: they switch on their next load)",
	    "REVALIDATED", json_object_get(j, "old_etag"), "revalidated");
}

/* floectl readers OBJECT | --wave N [--limit N] */
int
ctl_readers(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--wave", true, false, NULL },
		{ "--limit", true, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	char *pos[1] = { NULL }, *q, *path;
	uint64_t wave = 0, limit = 1000;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 0, 1)) != 0)
		return rc;
	if ((pos[0] == NULL) == !opts[0].set)
		return ctl_usage_error(c, "give an OBJECT or --wave N");
	if (opts[0].set && (rc = ctl_wave_arg(c, opts[0].val, &wave)) != 0)
		return rc;
	if (opts[1].set && ctl_parse_u64(opts[1].val, 1, 100000, &limit) == -1)
		return ctl_usage_error(c, "--limit takes 1..100000, not \"%s\"",
		    opts[1].val);
	if (pos[0] != NULL) {
		q = ctl_escape(c, pos[0]);
		path = xasprintf("/readers?object=%s&limit=%" PRIu64, q, limit);
		free(q);
	} else
		path = xasprintf("/readers?wave=%" PRIu64 "&limit=%" PRIu64,
		    wave, limit);
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		ctl_readers_print(r.json);
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl readers forget IDENTITY [OBJECT] */
int
ctl_readers_forget(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { NULL, false, false, NULL } };
	struct ctl_resp r;
	char *pos[2] = { NULL, NULL };
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 2)) != 0)
		return rc;
	body = json_pack("{s:s}", "identity", pos[0]);
	if (pos[1] != NULL)
		json_object_set_new(body, "object", json_string(pos[1]));
	rc = ctl_call(c, "POST", "/readers/forget", body, &r);
	json_decref(body);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%s excused as a reader of the warehouse copy of %s "
		       "(%" JSON_INTEGER_FORMAT " records); a new load from "
		       "the warehouse makes it stale again\n",
		    pos[0], pos[1] != NULL ? pos[1] : "every table",
		    json_integer_value(json_object_get(r.json, "records")));
	ctl_resp_clear(&r);
	return CTL_OK;
}
