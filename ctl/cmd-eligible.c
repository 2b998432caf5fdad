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
static void ctl_extend(json_t *, json_t *, const char *);
static void ctl_triage_merge(json_t *, json_t *);
static int ctl_eligible_one(struct ctl *, uint64_t, json_t **);

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

/* Append the members of array KEY of FROM to those of INTO. */
static void
ctl_extend(json_t *into, json_t *from, const char *key)
{
	json_t *a = json_object_get(into, key);

	if (json_is_array(a))
		json_array_extend(a, json_object_get(from, key));
}

/*
 * Merge the triage of page P into that of wave W: the objects of a bucket
 * W has already go under it, a new bucket after the others.
 */
static void
ctl_triage_merge(json_t *w, json_t *p)
{
	json_t *into = json_object_get(w, "triage"), *b, *mine;
	size_t i, k;

	json_array_foreach(json_object_get(p, "triage"), i, b) {
		mine = NULL;
		json_array_foreach(into, k, mine) {
			if (strcmp(ctl_str(mine, "bucket"),
				ctl_str(b, "bucket")) == 0)
				break;
			mine = NULL;
		}
		if (mine != NULL)
			ctl_extend(mine, b, "objects");
		else
			json_array_append(into, b);
	}
}

/*
 * The eligibility of wave N into *W, page by page (CTL_ELIGIBLE_PAGE
 * objects each): the verdicts of the first page, every page's objects
 * and triage. A floe that does not page answers it all at once.
 */
static int
ctl_eligible_one(struct ctl *c, uint64_t n, json_t **w)
{
	struct ctl_resp r;
	json_t *page, *next;
	char *after = NULL, *path;
	int rc;

	*w = NULL;
	do {
		path = after == NULL ?
		    xasprintf("/eligibility?wave=%" PRIu64 "&limit=%d", n,
			CTL_ELIGIBLE_PAGE) :
		    xasprintf("/eligibility?wave=%" PRIu64 "&limit=%d&after=%s",
			n, CTL_ELIGIBLE_PAGE, after);
		free(after);
		after = NULL;
		memset(&r, 0, sizeof(r));
		rc = ctl_call(c, "GET", path, NULL, &r);
		free(path);
		if (rc != 0) {
			json_decref(*w);
			*w = NULL;
			return rc;
		}
		page = json_array_get(json_object_get(r.json, "waves"), 0);
		if (page != NULL && *w == NULL)
			*w = json_incref(page);
		else if (page != NULL) {
			ctl_extend(json_object_get(*w, "cutover"),
			    json_object_get(page, "cutover"), "objects");
			ctl_extend(json_object_get(*w, "decommission"),
			    json_object_get(page, "decommission"), "objects");
			ctl_triage_merge(*w, page);
		}
		next = json_object_get(page, "next");
		if (json_is_string(next))
			after = ctl_escape(c, json_string_value(next));
		ctl_resp_clear(&r);
	} while (after != NULL);
	if (*w != NULL)
		json_object_del(*w, "next");
	return CTL_OK;
}

/*
 * floectl eligible [N...]: for each wave asked for (every wave without N),
 * the gate of its next step with the evidence, and the drift triage.
 * Exit 1 when any of them is blocked, so that it can gate a script. Each
 * wave is read a page of objects at a time: no answer of floe's is the
 * size of a million tables.
 */
int
ctl_eligible(struct ctl *c, int argc, char **argv)
{
	char **pos, *line;
	uint64_t *n = NULL;
	json_t *waves = NULL, *all = NULL, *w, *one;
	size_t i;
	int rc, k, npos = 0;
	bool blocked = false;

	pos = xcalloc((size_t)argc + 1, sizeof(*pos));
	if ((rc = ctl_args(argc, argv, c, NULL, pos, 0, argc)) != 0)
		goto out;
	while (pos[npos] != NULL)
		npos++;
	n = xcalloc((size_t)npos + 1, sizeof(*n));
	for (k = 0; k < npos; k++)
		if ((rc = ctl_wave_arg(c, pos[k], &n[k])) != 0)
			goto out;
	if (npos == 0) {
		/* Every wave with a record or a route. */
		if ((rc = ctl_list(c, "/waves", "waves", &all)) != 0)
			goto out;
		npos = (int)json_array_size(all);
		n = xreallocarray(n, (size_t)npos + 1, sizeof(*n));
		json_array_foreach(all, i, w)
			n[i] = (uint64_t)json_integer_value(
			    json_object_get(w, "wave"));
	}
	waves = json_array();
	for (k = 0; k < npos; k++) {
		if ((rc = ctl_eligible_one(c, n[k], &w)) != 0)
			goto out;
		if (w != NULL)
			json_array_append_new(waves, w);
	}
	if (c->json) {
		one = json_pack("{s:O}", "waves", waves);
		line = one != NULL ? json_dumps(one, JSON_COMPACT) : NULL;
		if (line != NULL)
			printf("%s\n", line);
		free(line);
		json_decref(one);
	}
	if (!c->json && json_array_size(waves) == 0)
		printf("no waves: no routes and no wave state yet\n");
	json_array_foreach(waves, i, w) {
		if (ctl_eligible_wave(w, i == 0, c->json))
			blocked = true;
	}
	rc = blocked ? CTL_REFUSED : CTL_OK;
out:
	json_decref(waves);
	json_decref(all);
	free(n);
	free(pos);
	return rc;
}
