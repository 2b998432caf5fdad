/*
 * floe: cmd-eligible.c -- floectl eligible: for each wave, the gate its
 * next step must pass (by its state) with the evidence per object, and the
 * drift triage (open mismatches by bucket, each with what to do); exit 1
 * when a wave asked for is blocked.
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

/* The gate a wave's next step must pass, by the wave's state. */
struct ctl_gate {
	const char *state;
	const char *member; /* of the wave in GET /eligibility */
	const char *title;
};

static const struct ctl_gate ctl_gates[] = {
	{ "warehouse", "cutover", "cutover gate" },
	{ "canary", "cutover", "cutover gate" },
	{ "rolled_back", "cutover", "cutover gate" },
	{ "lakehouse", "decommission", "decommission gate" },
	{ "frozen", "retire", "retire (grace period)" },
};

static void ctl_print_evidence(const char *, json_t *);
static void ctl_print_stale(json_t *);

/* The stale readers a freeze waits for, as an indented table. */
static void
ctl_print_stale(json_t *stale)
{
	struct ctl_table t;
	json_t *o;
	char *id;
	size_t i;

	if (json_array_size(stale) == 0)
		return;
	printf("    stale readers: loaded the warehouse copy, not the "
	       "lakehouse since the flip\n");
	ctl_table_init(&t, 4);
	ctl_table_add(&t, "    IDENTITY", "OBJECT", "LAST LOAD", "LAST SEEN");
	json_array_foreach(stale, i, o) {
		id = xasprintf("    %s", ctl_str(o, "identity"));
		ctl_table_add(&t, id, ctl_str(o, "object"),
		    ctl_str(o, "last_load"), ctl_str(o, "last_seen"));
		free(id);
	}
	ctl_table_print(&t);
}
static bool ctl_eligible_wave(json_t *, bool, bool);

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
	ctl_print_stale(json_object_get(g, "stale_readers"));
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

/*
 * Print wave W's next gate (unless QUIET) and its triage; whether that
 * gate is blocked. A retired wave has nothing left to pass: blocked.
 */
static bool
ctl_eligible_wave(json_t *w, bool first, bool quiet)
{
	const struct ctl_gate *g = NULL;
	const char *state = ctl_str(w, "state");
	json_t *tr, *t, *o, *verdict;
	size_t i, k, m;

	for (i = 0; i < nitems(ctl_gates); i++)
		if (strcmp(ctl_gates[i].state, state) == 0)
			g = &ctl_gates[i];
	verdict = g != NULL ? json_object_get(w, g->member) : NULL;
	if (quiet)
		return !json_is_true(json_object_get(verdict, "pass"));
	printf("%swave %" JSON_INTEGER_FORMAT "  %s\n", first ? "" : "\n",
	    json_integer_value(json_object_get(w, "wave")), state);
	if (g == NULL) {
		printf("  %s: final, no gate left to pass\n", state);
		return true;
	}
	if (strcmp(state, "rolled_back") == 0)
		printf("  wave ack %" JSON_INTEGER_FORMAT
		       " first: a rolled-back wave is acknowledged before it "
		       "flips again\n",
		    json_integer_value(json_object_get(w, "wave")));
	ctl_print_evidence(g->title, verdict);
	tr = json_object_get(w, "triage");
	if (json_array_size(tr) == 0)
		printf("  triage: no open mismatches\n");
	else
		printf("  triage (open mismatches):\n");
	json_array_foreach(tr, k, t) {
		printf("    %s: %s\n", ctl_str(t, "bucket"),
		    ctl_str(t, "action"));
		json_array_foreach(json_object_get(t, "objects"), m, o)
			printf("      %s  %" JSON_INTEGER_FORMAT
			       " record%s since %s\n",
			    ctl_str(o, "object"),
			    json_integer_value(json_object_get(o, "records")),
			    json_integer_value(json_object_get(o, "records")) ==
				    1 ?
				"" :
				"s",
			    ctl_str(o, "since"));
	}
	return !json_is_true(json_object_get(verdict, "pass"));
}

/*
 * floectl eligible [N...]: for each wave asked for (every wave without N),
 * the gate of its next step with the evidence, and the drift triage.
 * Exit 1 when any of them is blocked, so that it can gate a script.
 */
int
ctl_eligible(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	char **pos, *path, *line;
	uint64_t *n = NULL;
	json_t *waves, *w, *one;
	size_t i;
	int rc, k, npos = 0;
	bool blocked = false;

	memset(&r, 0, sizeof(r));
	pos = xcalloc((size_t)argc + 1, sizeof(*pos));
	if ((rc = ctl_args(argc, argv, c, NULL, pos, 0, argc)) != 0)
		goto out;
	while (pos[npos] != NULL)
		npos++;
	n = xcalloc((size_t)npos + 1, sizeof(*n));
	for (k = 0; k < npos; k++)
		if ((rc = ctl_wave_arg(c, pos[k], &n[k])) != 0)
			goto out;
	if (npos <= 1) {
		/* One answer, printed as floe sent it with --json. */
		path = npos == 1 ?
		    xasprintf("/eligibility?wave=%" PRIu64, n[0]) :
		    xstrdup("/eligibility");
		rc = ctl_call(c, "GET", path, NULL, &r);
		free(path);
		if (rc != 0)
			goto out;
		waves = json_incref(json_object_get(r.json, "waves"));
		if (c->json)
			ctl_print_json(&r);
	} else {
		/* One call a wave, the answers' waves in one list. */
		waves = json_array();
		for (k = 0; k < npos; k++) {
			path = xasprintf("/eligibility?wave=%" PRIu64, n[k]);
			rc = ctl_call(c, "GET", path, NULL, &r);
			free(path);
			if (rc != 0) {
				json_decref(waves);
				goto out;
			}
			json_array_extend(waves,
			    json_object_get(r.json, "waves"));
			ctl_resp_clear(&r);
		}
		if (c->json) {
			one = json_pack("{s:O}", "waves", waves);
			line =
			    one != NULL ? json_dumps(one, JSON_COMPACT) : NULL;
			if (line != NULL)
				printf("%s\n", line);
			free(line);
			json_decref(one);
		}
	}
	if (!c->json && json_array_size(waves) == 0)
		printf("no waves: no routes and no wave state yet\n");
	json_array_foreach(waves, i, w) {
		if (ctl_eligible_wave(w, i == 0, c->json))
			blocked = true;
	}
	json_decref(waves);
	rc = blocked ? CTL_REFUSED : CTL_OK;
out:
	ctl_resp_clear(&r);
	free(n);
	free(pos);
	return rc;
}
