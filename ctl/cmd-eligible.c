/*
 * floe: cmd-eligible.c -- floectl eligible: each wave's gate verdicts with
 * the evidence per object, and the drift triage (open mismatches by
 * bucket, each with what to do).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/xmalloc.h"

static void ctl_print_evidence(const char *, json_t *);

/* One gate's per-object evidence as an indented table. */
static void
ctl_print_evidence(const char *title, json_t *g)
{
	struct ctl_table t;
	json_t *objs = json_object_get(g, "objects"), *o;
	char *clean, *dirty, *buckets, *name;
	size_t i;

	printf("  %s: %s\n    %s\n", title,
	    json_is_true(json_object_get(g, "pass")) ? "holds" : "BLOCKED",
	    ctl_str(g, "message"));
	if (json_array_size(objs) == 0)
		return;
	ctl_table_init(&t, 6);
	ctl_table_add(&t, "    OBJECT", "CLEAN", "DIRTY", "BUCKETS", "NEWEST",
	    "PASS");
	json_array_foreach(objs, i, o) {
		clean = ctl_text(json_object_get(o, "clean"));
		dirty = ctl_text(json_object_get(o, "dirty"));
		buckets = ctl_buckets(json_object_get(o, "buckets"));
		name = xasprintf("    %s", ctl_str(o, "object"));
		ctl_table_add(&t, name, clean, dirty, buckets,
		    ctl_str(o, "newest"),
		    json_is_true(json_object_get(o, "pass")) ? "yes" : "no");
		free(name);
		free(clean);
		free(dirty);
		free(buckets);
	}
	ctl_table_print(&t);
}

/* floectl eligible [N]: the gates' evidence and the drift triage. */
int
ctl_eligible(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	char *pos[1] = { NULL }, *path;
	uint64_t n;
	json_t *waves, *w, *tr, *t, *o;
	size_t i, k, m;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, pos, 0, 1)) != 0)
		return rc;
	if (pos[0] != NULL) {
		if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
			return rc;
		path = xasprintf("/eligibility?wave=%" PRIu64, n);
	} else
		path = xstrdup("/eligibility");
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	if (rc != 0)
		return rc;
	waves = json_object_get(r.json, "waves");
	if (c->json)
		ctl_print_json(&r);
	else if (json_array_size(waves) == 0)
		printf("no waves: no routes and no wave state yet\n");
	json_array_foreach(c->json ? NULL : waves, i, w) {
		printf("%swave %" JSON_INTEGER_FORMAT "  %s\n",
		    i > 0 ? "\n" : "",
		    json_integer_value(json_object_get(w, "wave")),
		    ctl_str(w, "state"));
		ctl_print_evidence("cutover gate",
		    json_object_get(w, "cutover"));
		ctl_print_evidence("decommission gate",
		    json_object_get(w, "decommission"));
		tr = json_object_get(w, "triage");
		if (json_array_size(tr) == 0) {
			printf("  triage: no open mismatches\n");
			continue;
		}
		printf("  triage (open mismatches):\n");
		json_array_foreach(tr, k, t) {
			printf("    %s: %s\n", ctl_str(t, "bucket"),
			    ctl_str(t, "action"));
			json_array_foreach(json_object_get(t, "objects"), m, o)
				printf("      %s  %" JSON_INTEGER_FORMAT
				       " record%s since %s\n",
				    ctl_str(o, "object"),
				    json_integer_value(
					json_object_get(o, "records")),
				    json_integer_value(
					json_object_get(o, "records")) == 1 ?
					"" :
					"s",
				    ctl_str(o, "since"));
		}
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}
