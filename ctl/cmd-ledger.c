/*
 * floe: cmd-ledger.c -- floectl's ledger commands: record one reconcile
 * result, import many as JSON lines, and show an object's newest records.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/units.h"
#include "lib/xmalloc.h"

/*
 * floectl ledger add OBJECT --count ok|fail --aggregate ok|fail
 * --hash ok|fail [--bucket B] [--at TIME] [--source S]
 */
int
ctl_ledger_add(struct ctl *c, int argc, char **argv)
{
	static const char *const tiers[] = { "count_match", "aggregate_match",
		"hash_match" };
	struct ctl_opt opts[] = { { "--count", true, false, NULL },
		{ "--aggregate", true, false, NULL },
		{ "--hash", true, false, NULL },
		{ "--bucket", true, false, NULL },
		{ "--at", true, false, NULL },
		{ "--source", true, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	char *pos[1], ts[40];
	int64_t at;
	json_t *body;
	int rc, i;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	body = json_pack("{s:s}", "object", pos[0]);
	for (i = 0; i < 3; i++) {
		if (!opts[i].set) {
			json_decref(body);
			return ctl_usage_error(c, "%s ok|fail is required",
			    opts[i].name);
		}
		if (strcmp(opts[i].val, "ok") != 0 &&
		    strcmp(opts[i].val, "fail") != 0) {
			json_decref(body);
			return ctl_usage_error(c,
			    "%s takes ok or fail, not \"%s\"", opts[i].name,
			    opts[i].val);
		}
		json_object_set_new(body, tiers[i],
		    json_boolean(strcmp(opts[i].val, "ok") == 0));
	}
	if (opts[4].set) {
		if (units_time_parse(opts[4].val, &at) == -1) {
			json_decref(body);
			return ctl_usage_error(c,
			    "--at takes an RFC 3339 time, not \"%s\"",
			    opts[4].val);
		}
	} else
		at = units_now_ms();
	units_time_format(at, ts, sizeof(ts));
	json_object_set_new(body, "ts", json_string(ts));
	if (opts[3].set)
		json_object_set_new(body, "bucket", json_string(opts[3].val));
	json_object_set_new(body, "source",
	    json_string(opts[5].set ? opts[5].val : "floectl"));
	c->one_record = true;
	rc = ctl_call(c, "POST", "/ledger", body, &r);
	json_decref(body);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%s at %s: %s\n", pos[0], ts,
		    json_integer_value(json_object_get(r.json, "added")) > 0 ?
			"recorded" :
			"already recorded");
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl ledger import FILE|- : JSON lines, one synced import. */
int
ctl_ledger_import(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	int rc;

	if ((rc = ctl_import(c, argc, argv, "/ledger", &r)) != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("imported %" JSON_INTEGER_FORMAT
		       " records: %" JSON_INTEGER_FORMAT
		       " new, %" JSON_INTEGER_FORMAT " already recorded\n",
		    json_integer_value(json_object_get(r.json, "records")),
		    json_integer_value(json_object_get(r.json, "added")),
		    json_integer_value(json_object_get(r.json, "duplicates")));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl ledger show OBJECT [--limit N] */
int
ctl_ledger_show(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--limit", true, false, NULL },
		{ NULL, false, false, NULL } };
	static const char *const keys[] = { "ts", "count_match",
		"aggregate_match", "hash_match", "bucket", "source" };
	struct ctl_resp r;
	struct ctl_table t;
	char *pos[1], *obj, *path, *cells[6];
	uint64_t limit = 20;
	json_t *recs, *rec;
	size_t i, k;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	if (opts[0].set && ctl_parse_u64(opts[0].val, 1, 100000, &limit) == -1)
		return ctl_usage_error(c, "--limit takes 1..100000, not \"%s\"",
		    opts[0].val);
	obj = ctl_escape(c, pos[0]);
	path = xasprintf("/ledger?object=%s&limit=%" PRIu64, obj, limit);
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	free(obj);
	if (rc != 0)
		return rc;
	recs = json_object_get(r.json, "records");
	if (c->json)
		ctl_print_json(&r);
	else if (json_array_size(recs) == 0)
		printf("%s: no ledger records\n", ctl_str(r.json, "object"));
	else {
		printf("%s: %" JSON_INTEGER_FORMAT " records%s\n",
		    ctl_str(r.json, "object"),
		    json_integer_value(json_object_get(r.json, "total")),
		    (json_int_t)json_array_size(recs) <
			    json_integer_value(
				json_object_get(r.json, "total")) ?
			", the newest shown" :
			"");
		ctl_table_init(&t, 6);
		ctl_table_add(&t, "TS", "COUNT", "AGGREGATE", "HASH", "BUCKET",
		    "SOURCE");
		json_array_foreach(recs, i, rec) {
			for (k = 0; k < 6; k++) {
				json_t *v = json_object_get(rec, keys[k]);

				cells[k] = json_is_boolean(v) ?
				    xstrdup(json_is_true(v) ? "ok" : "FAIL") :
				    ctl_text(v);
			}
			ctl_table_add(&t, cells[0], cells[1], cells[2],
			    cells[3], cells[4], cells[5]);
			for (k = 0; k < 6; k++)
				free(cells[k]);
		}
		ctl_table_print(&t);
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}
