/*
 * floe: cmd-wave.c -- floectl's wave commands: list and show waves, and
 * one function per transition or setting (flip, rollback, ack, signoff,
 * freeze, retire, set, report-errors), each a POST to /waves/N/VERB.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/units.h"
#include "lib/xmalloc.h"

static int ctl_wave_move(struct ctl *, const char *, const char *, json_t *);
static int ctl_wave_bare(struct ctl *, int, char **, const char *);
static int ctl_wave_pages(struct ctl *, uint64_t, json_t *);
static int ctl_rlog_warn(const char *, json_t *);

/* floectl wave list */
int
ctl_wave_list(struct ctl *c, int argc, char **argv)
{
	static const char *const keys[] = { "wave", "state", "pct", "objects",
		"rules", "since", "actor", "reason" };
	struct ctl_table t;
	json_t *waves, *w;
	char *cells[8];
	size_t i, k;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0)) != 0)
		return rc;
	if ((rc = ctl_list(c, "/waves", "waves", &waves)) != 0)
		return rc;
	if (c->json)
		ctl_print_list("waves", waves);
	else if (json_array_size(waves) == 0)
		printf("no waves: no routes and no wave state yet\n");
	else {
		ctl_table_init(&t, 8);
		ctl_table_add(&t, "WAVE", "STATE", "PCT", "OBJECTS", "RULES",
		    "SINCE", "ACTOR", "REASON");
		json_array_foreach(waves, i, w) {
			for (k = 0; k < 8; k++)
				cells[k] =
				    ctl_text(json_object_get(w, keys[k]));
			ctl_table_add(&t, cells[0], cells[1], cells[2],
			    cells[3], cells[4], cells[5], cells[6], cells[7]);
			for (k = 0; k < 8; k++)
				free(cells[k]);
		}
		ctl_table_print(&t);
	}
	json_decref(waves);
	return CTL_OK;
}

/*
 * The rest of wave N's objects and rules after the first page W: each
 * next page's appended to W's, and "next" dropped. 0 or the exit status.
 */
static int
ctl_wave_pages(struct ctl *c, uint64_t n, json_t *w)
{
	struct ctl_resp r;
	json_t *next;
	char *after, *path;
	int rc;

	while (json_is_string(next = json_object_get(w, "next"))) {
		after = ctl_escape(c, json_string_value(next));
		path = xasprintf("/waves/%" PRIu64 "?limit=%d&after=%s", n,
		    CTL_LIST_PAGE, after);
		free(after);
		rc = ctl_call(c, "GET", path, NULL, &r);
		free(path);
		if (rc != 0)
			return rc;
		json_array_extend(json_object_get(w, "objects"),
		    json_object_get(r.json, "objects"));
		json_array_extend(json_object_get(w, "rules"),
		    json_object_get(r.json, "rules"));
		json_object_set(w, "next", json_object_get(r.json, "next"));
		ctl_resp_clear(&r);
	}
	json_object_del(w, "next");
	return CTL_OK;
}

/* floectl wave show N */
int
ctl_wave_show(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	struct ctl_table t;
	const char *key;
	char *pos[1], *path, *text;
	uint64_t n;
	json_t *v, *o;
	size_t i;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, pos, 1, 1)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	path = xasprintf("/waves/%" PRIu64 "?limit=%d", n, CTL_LIST_PAGE);
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	if (rc != 0)
		return rc;
	if ((rc = ctl_wave_pages(c, n, r.json)) != 0) {
		ctl_resp_clear(&r);
		return rc;
	}
	if (c->json) {
		text = json_dumps(r.json, JSON_COMPACT);
		if (text != NULL)
			printf("%s\n", text);
		free(text);
		ctl_resp_clear(&r);
		return CTL_OK;
	}
	ctl_table_init(&t, 2);
	json_object_foreach(r.json, key, v) {
		if (json_is_array(v))
			continue;
		if (strcmp(key, "rollback") == 0 && json_is_object(v))
			/* Its evidence, rounded: --json has it exact. */
			text = xasprintf("%s trigger%s%s",
			    ctl_str(v, "trigger"),
			    json_object_get(v, "evidence") != NULL ? ": " : "",
			    json_object_get(v, "evidence") != NULL ?
				ctl_str(v, "evidence") :
				"");
		else
			text = ctl_text(v);
		ctl_table_add(&t, key, text);
		free(text);
	}
	ctl_table_print(&t);
	json_object_foreach(r.json, key, v) {
		if (!json_is_array(v))
			continue;
		printf("%s:%s\n", key, json_array_size(v) == 0 ? " none" : "");
		json_array_foreach(v, i, o) {
			text = ctl_text(o);
			printf("  %s\n", text);
			free(text);
		}
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/*
 * A rollback is done even when its rollback log line is not written yet
 * (a full disk): floe keeps the line and retries. Say so on stderr and
 * exit CTL_WARNED, so neither the operator nor a script takes the log for
 * complete. CTL_OK when the line was written (or the answer says
 * nothing of it).
 */
static int
ctl_rlog_warn(const char *n, json_t *ans)
{
	json_t *rl = json_object_get(ans, "rollback_log");
	const char *err;

	if (!json_is_object(rl) || json_is_true(json_object_get(rl, "written")))
		return CTL_OK;
	if ((err = json_string_value(json_object_get(rl, "error"))) == NULL)
		err = "";
	if (json_is_true(json_object_get(rl, "pending")))
		fprintf(stderr,
		    "floectl: warning: wave %s rolled back, but its rollback "
		    "log line is not written yet%s%s%s; floe keeps it and "
		    "retries every second (floectl status: rollback_log)\n",
		    n, *err != '\0' ? " (" : "", err, *err != '\0' ? ")" : "");
	else
		fprintf(stderr,
		    "floectl: warning: wave %s rolled back, but its rollback "
		    "log line is lost%s%s%s: see floe's log\n",
		    n, *err != '\0' ? " (" : "", err, *err != '\0' ? ")" : "");
	return CTL_WARNED;
}

/*
 * POST /waves/N/WHAT with BODY and print "wave N: from -> to", with the
 * share before and after when a canary is involved.
 */
static int
ctl_wave_move(struct ctl *c, const char *n, const char *what, json_t *body)
{
	struct ctl_resp r;
	char *path;
	int rc;

	path = xasprintf("/waves/%s/%s", n, what);
	rc = ctl_call(c, "POST", path, body, &r);
	free(path);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else if (strcmp(what, "signoff") == 0 || strcmp(what, "set") == 0 ||
	    strcmp(what, "freeze") == 0)
		printf("%s\n", ctl_str(r.json, "message"));
	else if (json_object_get(r.json, "from_pct") != NULL &&
	    (strcmp(ctl_str(r.json, "state"), "canary") == 0 ||
		strcmp(ctl_str(r.json, "from"), "canary") == 0))
		printf("wave %s: %s -> %s (%" JSON_INTEGER_FORMAT
		       " %% → %" JSON_INTEGER_FORMAT " %%)\n",
		    n, ctl_str(r.json, "from"), ctl_str(r.json, "state"),
		    json_integer_value(json_object_get(r.json, "from_pct")),
		    json_integer_value(json_object_get(r.json, "pct")));
	else
		printf("wave %s: %s -> %s\n", n, ctl_str(r.json, "from"),
		    ctl_str(r.json, "state"));
	if (!c->json && json_is_string(json_object_get(r.json, "pending_etcd")))
		printf("wave %s: %s\n", n, ctl_str(r.json, "pending_etcd"));
	rc = ctl_rlog_warn(n, r.json);
	ctl_resp_clear(&r);
	return rc;
}

/* floectl wave flip N lakehouse [--canary PCT] [--reason TEXT] */
int
ctl_wave_flip(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--canary", true, false, NULL },
		{ "--reason", true, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[2], num[16];
	uint64_t n, pct = 100;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 2, 2)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	if (strcmp(pos[1], "lakehouse") != 0)
		return ctl_usage_error(c,
		    "the target is \"lakehouse\", not \"%s\" "
		    "(wave rollback goes back)",
		    pos[1]);
	if (opts[0].set && ctl_parse_u64(opts[0].val, 1, 100, &pct) == -1)
		return ctl_usage_error(c,
		    "--canary takes a share 1..100, not \"%s\"", opts[0].val);
	body = json_pack("{s:s}", "to", opts[0].set ? "canary" : "lakehouse");
	if (opts[0].set)
		json_object_set_new(body, "pct", json_integer((json_int_t)pct));
	if (opts[1].set)
		json_object_set_new(body, "reason", json_string(opts[1].val));
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "flip", body);
	json_decref(body);
	return rc;
}

/* floectl wave rollback N [--reason TEXT] [--force-stale] */
int
ctl_wave_rollback(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--reason", true, false, NULL },
		{ "--force-stale", false, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[1], num[16];
	uint64_t n;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	body = json_object();
	if (opts[0].set)
		json_object_set_new(body, "reason", json_string(opts[0].val));
	if (opts[1].set)
		json_object_set_new(body, "force_stale", json_true());
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "rollback", body);
	json_decref(body);
	return rc;
}

/* floectl wave ack N, wave retire N: a transition with no options. */
static int
ctl_wave_bare(struct ctl *c, int argc, char **argv, const char *action)
{
	char *pos[1], num[16];
	uint64_t n;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, pos, 1, 1)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	snprintf(num, sizeof(num), "%" PRIu64, n);
	return ctl_wave_move(c, num, action, NULL);
}

/* floectl wave ack N */
int
ctl_wave_ack(struct ctl *c, int argc, char **argv)
{
	return ctl_wave_bare(c, argc, argv, "ack");
}

/* floectl wave retire N */
int
ctl_wave_retire(struct ctl *c, int argc, char **argv)
{
	return ctl_wave_bare(c, argc, argv, "retire");
}

/* floectl wave signoff N --by NAME */
int
ctl_wave_signoff(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--by", true, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[1], num[16];
	uint64_t n;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	if (!opts[0].set || opts[0].val[0] == '\0')
		return ctl_usage_error(c, "--by NAME is required");
	body = json_pack("{s:s}", "by", opts[0].val);
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "signoff", body);
	json_decref(body);
	return rc;
}

/* floectl wave freeze N [--reason TEXT] */
int
ctl_wave_freeze(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--reason", true, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[1], num[16];
	uint64_t n;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	body = json_object();
	if (opts[0].set)
		json_object_set_new(body, "reason", json_string(opts[0].val));
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "freeze", body);
	json_decref(body);
	return rc;
}

/* floectl wave set N [--min-clean N|default] [--window DUR|default] */
int
ctl_wave_set(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--min-clean", true, false, NULL },
		{ "--window", true, false, NULL },
		{ "--count-check", true, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[1], num[16];
	uint64_t n, v;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	if (!opts[0].set && !opts[1].set && !opts[2].set)
		return ctl_usage_error(c,
		    "give --min-clean N, --window DUR, --count-check on|off "
		    "or several");
	if (opts[2].set && strcmp(opts[2].val, "on") != 0 &&
	    strcmp(opts[2].val, "off") != 0)
		return ctl_usage_error(c,
		    "--count-check takes on or off, not \"%s\"", opts[2].val);
	body = json_object();
	if (opts[2].set)
		json_object_set_new(body, "count_check",
		    json_boolean(strcmp(opts[2].val, "on") == 0));
	if (opts[0].set) {
		if (strcmp(opts[0].val, "default") == 0)
			json_object_set_new(body, "gate_min_clean",
			    json_null());
		else if (ctl_parse_u64(opts[0].val, 1, 1000000, &v) == 0)
			json_object_set_new(body, "gate_min_clean",
			    json_integer((json_int_t)v));
		else {
			json_decref(body);
			return ctl_usage_error(c,
			    "--min-clean takes 1..1000000 or \"default\", "
			    "not \"%s\"",
			    opts[0].val);
		}
	}
	if (opts[1].set) {
		if (strcmp(opts[1].val, "default") == 0)
			json_object_set_new(body, "gate_window", json_null());
		else if (units_duration(opts[1].val, &v) == 0 && v > 0)
			json_object_set_new(body, "gate_window",
			    json_string(opts[1].val));
		else {
			json_decref(body);
			return ctl_usage_error(c,
			    "--window takes a duration (\"14d\") or "
			    "\"default\", not \"%s\"",
			    opts[1].val);
		}
	}
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "set", body);
	json_decref(body);
	return rc;
}

/* floectl wave report-errors N --errors E --total T [--side S] */
int
ctl_wave_report_errors(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--errors", true, false, NULL },
		{ "--total", true, false, NULL },
		{ "--side", true, false, NULL }, { NULL, false, false, NULL } };
	struct ctl_resp r;
	uint64_t n, e, t;
	char *pos[1], *path;
	json_t *body, *win;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	if (!opts[0].set || !opts[1].set)
		return ctl_usage_error(c, "give --errors E and --total T");
	if (ctl_parse_u64(opts[1].val, 1, 1000000000, &t) == -1 ||
	    ctl_parse_u64(opts[0].val, 0, t, &e) == -1)
		return ctl_usage_error(c,
		    "--total takes 1..1000000000 and --errors 0..total, "
		    "not \"%s\" and \"%s\"",
		    opts[1].val, opts[0].val);
	body = json_pack("{s:I,s:I}", "errors", (json_int_t)e, "total",
	    (json_int_t)t);
	if (opts[2].set)
		json_object_set_new(body, "side", json_string(opts[2].val));
	path = xasprintf("/waves/%" PRIu64 "/errors", n);
	rc = ctl_call(c, "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else if (json_array_size(json_object_get(r.json, "rolled_back")) > 0)
		/* The window starts again: the warning has the evidence. */
		printf("wave %" PRIu64 ": %" PRIu64 " errors in %" PRIu64
		       " %s reads counted; wave is %s\n",
		    n, e, t, ctl_str(r.json, "side"), ctl_str(r.json, "state"));
	else {
		win = json_object_get(r.json, "window");
		printf(
		    "wave %" PRIu64 ": %" PRIu64 " errors in %" PRIu64
		    " %s reads counted; the window holds %" JSON_INTEGER_FORMAT
		    " errors in %" JSON_INTEGER_FORMAT " reads; wave is %s\n",
		    n, e, t, ctl_str(r.json, "side"),
		    json_integer_value(json_object_get(win, "errors")),
		    json_integer_value(json_object_get(win, "requests")),
		    ctl_str(r.json, "state"));
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}
