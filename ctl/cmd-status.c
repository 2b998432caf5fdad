/*
 * floe: cmd-status.c -- floectl's commands that watch floe: status (a
 * short summary, or everything), metrics, wave watch, and the two logs,
 * events and rollbacks, paged through and with --follow polled until
 * SIGINT or SIGTERM. A --follow rides out a restart of floe: it says once
 * that floe is gone, polls until it is back and goes on after the last
 * event (or line) it printed, so nothing is printed twice or skipped.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"

static volatile sig_atomic_t ctl_stop;

static void ctl_sigint_cb(int);
static void ctl_follow_init(void);
static void ctl_sleep_ms(long);
static int ctl_poll(struct ctl *, const char *, bool, bool *,
    struct ctl_resp *);
static void ctl_status_summary(json_t *, json_t *);
static void ctl_armed_print(const json_t *, const char *);
static void ctl_print_event(json_t *);
static bool ctl_is_short(json_t *);
static void ctl_field(const char *, json_t *, int);
static void ctl_wrap(const char *, const char *, int);
static char *ctl_value_text(const char *, const json_t *);
static void ctl_print_rollback(json_t *);
static json_int_t ctl_int(const json_t *, const char *);
static void ctl_status_memory(json_t *);
static void ctl_watch_line(json_t *, json_t *, json_t *);

/* SIGINT/SIGTERM during --follow: stop after the current poll. */
static void
ctl_sigint_cb(int sig)
{
	(void)sig;
	ctl_stop = 1;
}

/* --follow: let SIGINT and SIGTERM end the polling loop, not the process. */
static void
ctl_follow_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ctl_sigint_cb;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
}

/* Sleep MS milliseconds, or less if interrupted. */
static void
ctl_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	(void)nanosleep(&ts, NULL);
}

/*
 * GET PATH. With FOLLOW an unreachable floe (a restart) is waited for:
 * said once on stderr (*LOST set), polled every CTL_FOLLOW_MS, and its
 * return said too. 0 with the answer in *R, or the exit status (0 if
 * interrupted while waiting, with R empty).
 */
static int
ctl_poll(struct ctl *c, const char *path, bool follow, bool *lost,
    struct ctl_resp *r)
{
	int rc;

	for (;;) {
		c->quiet = follow;
		rc = ctl_call(c, "GET", path, NULL, r);
		c->quiet = false;
		if (rc == 0 && *lost) {
			fprintf(stderr, "floectl: floe is back; resuming\n");
			*lost = false;
		}
		if (rc != CTL_UNREACHABLE || !follow)
			return rc;
		if (!*lost)
			fprintf(stderr, "floectl: %s; reconnecting\n",
			    c->errmsg);
		*lost = true;
		if (ctl_stop) {
			memset(r, 0, sizeof(*r));
			return CTL_OK;
		}
		ctl_sleep_ms(CTL_FOLLOW_MS);
	}
}

/* S's integer member KEY, or 0. */
static json_int_t
ctl_int(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/*
 * An armed wave W's error ratio and lag against their thresholds, the
 * lag after SEP, on the line being printed.
 */
static void
ctl_armed_print(const json_t *w, const char *sep)
{
	char d1[32], d2[32];

	printf("errors %.2f%% of %" JSON_INTEGER_FORMAT
	       " reads (threshold %.2f%%)",
	    json_number_value(json_object_get(w, "error_ratio")) * 100,
	    ctl_int(w, "requests"),
	    json_number_value(json_object_get(w, "error_threshold")) * 100);
	units_format_human(ctl_int(w, "max_lag_ms"), d2, sizeof(d2));
	if (json_is_integer(json_object_get(w, "lag_ms"))) {
		units_format_human(ctl_int(w, "lag_ms"), d1, sizeof(d1));
		printf("%slag %s (limit %s)", sep, d1, d2);
	} else
		printf("%slag not known yet (limit %s)", sep, d2);
}

/*
 * " NAME off" for O's budget 0, else " NAME BYTES of BUDGET, N entries";
 * false for off.
 */
static bool
ctl_status_held(const char *name, const json_t *o)
{
	char a[32], b[32];

	if (ctl_int(o, "budget") == 0) {
		printf(" %s off", name);
		return false;
	}
	units_format_size(ctl_int(o, "bytes"), a, sizeof(a));
	units_format_size(ctl_int(o, "budget"), b, sizeof(b));
	printf(" %s %s of %s, %" JSON_INTEGER_FORMAT " entries", name, a, b,
	    ctl_int(o, "entries"));
	return true;
}

/*
 * What floe holds, from GET /status ST: the answers clients have not read
 * against output_budget (past it, requests are refused 503), and the
 * LoadTable cache and the memo of checked answers against their sizes. A
 * member ST lacks (an older floe) is left out.
 */
static void
ctl_status_memory(json_t *st)
{
	json_t *out = json_object_get(st, "output"),
	       *cache = json_object_get(st, "cache"),
	       *memo = json_object_get(st, "memo");
	char a[32], b[32];

	if (json_is_object(out)) {
		units_format_size(ctl_int(out, "held_bytes"), a, sizeof(a));
		units_format_size(ctl_int(out, "budget"), b, sizeof(b));
		printf("output     %s held of %s, %" JSON_INTEGER_FORMAT
		       " requests refused\n",
		    a, b, ctl_int(out, "refused"));
	}
	if (!json_is_object(cache) && !json_is_object(memo))
		return;
	printf("memory    ");
	if (json_is_object(cache) && ctl_status_held("cache", cache))
		printf(", %" JSON_INTEGER_FORMAT " hits, %" JSON_INTEGER_FORMAT
		       " misses",
		    ctl_int(cache, "hits"), ctl_int(cache, "misses"));
	if (json_is_object(cache) && json_is_object(memo))
		putchar(';');
	if (json_is_object(memo))
		ctl_status_held("memo", memo);
	putchar('\n');
}

/*
 * The summary of GET /status ST (and GET /waves WAVES, may be NULL): a
 * few lines a person reads at a glance; rolled-back waves with their
 * evidence, armed waves against their thresholds.
 */
static void
ctl_status_summary(json_t *st, json_t *waves)
{
	json_t *cats = json_object_get(st, "catalogs"), *cat, *w, *trig;
	const char *key;
	char d1[32];
	int first;
	size_t i;

	units_format_human(ctl_int(st, "uptime_s") * 1000, d1, sizeof(d1));
	printf("floe %s  %s%s  up %s  %" JSON_INTEGER_FORMAT
	       " requests  %" JSON_INTEGER_FORMAT " connections\n",
	    ctl_str(st, "version"),
	    json_is_true(json_object_get(st, "ready")) ? "ready" : "NOT READY",
	    json_is_true(json_object_get(st, "draining")) ? " (draining)" : "",
	    d1, ctl_int(st, "requests"), ctl_int(st, "connections"));
	printf("store      %s, last event %" JSON_INTEGER_FORMAT "\n",
	    json_is_true(
		json_object_get(json_object_get(st, "store"), "healthy")) ?
		"healthy" :
		"FAILING",
	    ctl_int(json_object_get(st, "store"), "last_seq"));
	ctl_status_memory(st);
	json_object_foreach(cats, key, cat) {
		printf("%-10s %s  %" JSON_INTEGER_FORMAT
		       " requests, %" JSON_INTEGER_FORMAT
		       " 5xx, %" JSON_INTEGER_FORMAT " failures%s%s\n",
		    key,
		    json_is_true(json_object_get(cat, "config_known")) &&
			    json_object_get(cat, "last_error") == NULL ?
			"up" :
			"DOWN",
		    ctl_int(cat, "requests"), ctl_int(cat, "errors_5xx"),
		    ctl_int(cat, "failures"),
		    json_object_get(cat, "last_error") != NULL ? ": " : "",
		    json_object_get(cat, "last_error") != NULL ?
			ctl_str(cat, "last_error") :
			"");
	}
	printf("waves     ");
	first = 1;
	json_object_foreach(json_object_get(st, "waves"), key, w)
		if (json_integer_value(w) > 0) {
			printf("%s %s %" JSON_INTEGER_FORMAT, first ? "" : ",",
			    key, json_integer_value(w));
			first = 0;
		}
	printf("%s\n", first ? " none" : "");
	trig = json_object_get(st, "triggers");
	printf("triggers   %" JSON_INTEGER_FORMAT
	       " rollbacks since start; pages %" JSON_INTEGER_FORMAT
	       " sent, %" JSON_INTEGER_FORMAT " failed\n",
	    ctl_int(trig, "rollbacks"),
	    ctl_int(json_object_get(trig, "pages"), "sent"),
	    ctl_int(json_object_get(trig, "pages"), "failed"));
	json_object_foreach(json_object_get(trig, "waves"), key, w) {
		printf("wave %-5s %s: ", key, ctl_str(w, "state"));
		ctl_armed_print(w, ", ");
		putchar('\n');
	}
	json_object_foreach(json_object_get(st, "rolled_back"), key, w) {
		printf("wave %-5s ROLLED BACK since %s by %s (%s)", key,
		    ctl_str(w, "since"), ctl_str(w, "actor"),
		    ctl_str(w, "trigger"));
		if (json_object_get(w, "evidence") != NULL)
			printf(": %s", ctl_str(w, "evidence"));
		printf("\n    %s\n    floectl wave ack %s once the cause "
		       "is fixed\n",
		    ctl_str(w, "reason"), key);
	}
	json_array_foreach(json_object_get(waves, "waves"), i, w)
		if (strcmp(ctl_str(w, "state"), "canary") == 0)
			printf("wave %-5" JSON_INTEGER_FORMAT
			       " canary at %" JSON_INTEGER_FORMAT "%%\n",
			    ctl_int(w, "wave"), ctl_int(w, "pct"));
}

/*
 * floectl status [--all]: a short summary; --all every member of GET
 * /status as "key  value" lines; --json the answer as it is.
 */
int
ctl_status(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--all", false, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r, w;
	struct ctl_table t;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, NULL, 0, 0)) != 0)
		return rc;
	if ((rc = ctl_call(c, "GET", "/status", NULL, &r)) != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else if (opts[0].set) {
		ctl_table_init(&t, 2);
		ctl_flatten(&t, "", r.json);
		ctl_table_print(&t);
	} else {
		if (ctl_call(c, "GET", "/waves", NULL, &w) != 0)
			memset(&w, 0, sizeof(w));
		ctl_status_summary(r.json, w.json);
		ctl_resp_clear(&w);
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl metrics */
int
ctl_metrics(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0)) != 0)
		return rc;
	if ((rc = ctl_call(c, "GET", "/metrics", NULL, &r)) != 0)
		return rc;
	fwrite(r.body, 1, r.len, stdout);
	ctl_resp_clear(&r);
	return CTL_OK;
}

#define CTL_INLINE_MAX 40 /* a longer value gets a line of its own */
#define CTL_WRAP_AT 100 /* columns of a long value's lines */

/*
 * floectl reload: POST /reload. 0 when every key applied; 1 when the file
 * was refused (its errors, one a line, on stderr: client.c) or when some
 * keys wait for a restart (named on stderr).
 */
int
ctl_reload(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	json_t *restart, *k;
	size_t i;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0)) != 0)
		return rc;
	if ((rc = ctl_call(c, "POST", "/reload", NULL, &r)) != 0)
		return rc;
	restart = json_object_get(r.json, "restart_needed");
	if (c->json)
		ctl_print_json(&r);
	else
		printf("reloaded: %s\n", ctl_str(r.json, "message"));
	json_array_foreach(restart, i, k)
		fprintf(stderr,
		    "floectl: reload: %s changes only on restart; the "
		    "running value stays until then\n",
		    json_string_value(k));
	rc = json_array_size(restart) > 0 ? CTL_REFUSED : CTL_OK;
	ctl_resp_clear(&r);
	return rc;
}

/*
 * Print TEXT after the label LABEL ("    key: "), wrapped at CTL_WRAP_AT
 * columns on spaces, continuation lines indented under its first.
 */
static void
ctl_wrap(const char *label, const char *text, int width)
{
	int indent = (int)strlen(label), room = width - indent, n;
	const char *p = text, *brk;

	if (room < 20)
		room = 20;
	fputs(label, stdout);
	while (strlen(p) > (size_t)room) {
		for (brk = p + room; brk > p && *brk != ' '; brk--)
			;
		n = brk > p ? (int)(brk - p) : room;
		printf("%.*s\n%*s", n, p, indent, "");
		p += n;
		while (*p == ' ')
			p++;
	}
	printf("%s\n", p);
}

/* V fits on the event's first line: CTL_INLINE_MAX characters, one line. */
static bool
ctl_is_short(json_t *v)
{
	char *text = ctl_text(v);
	bool ok = strlen(text) <= CTL_INLINE_MAX && strchr(text, '\n') == NULL;

	free(text);
	return ok;
}

/*
 * A long member of an event, on lines of its own: an object's members
 * as NAME.KEY, an array of objects as NAME[I].KEY, anything else as
 * "    NAME: value", wrapped. DEPTH bounds the descent.
 */
static void
ctl_field(const char *name, json_t *v, int depth)
{
	const char *key;
	json_t *m;
	char *sub, *text, *label;
	size_t i;

	if (json_is_object(v) && json_object_size(v) > 0 && depth < 4) {
		json_object_foreach(v, key, m) {
			if (json_is_null(m))
				continue;
			sub = xasprintf("%s.%s", name, key);
			ctl_field(sub, m, depth + 1);
			free(sub);
		}
		return;
	}
	if (json_is_array(v) && json_array_size(v) > 0 && depth < 4 &&
	    json_is_object(json_array_get(v, 0))) {
		json_array_foreach(v, i, m) {
			sub = xasprintf("%s[%zu]", name, i);
			ctl_field(sub, m, depth + 1);
			free(sub);
		}
		return;
	}
	text = ctl_text(v);
	label = xasprintf("    %s: ", name);
	ctl_wrap(label, text, CTL_WRAP_AT);
	free(label);
	free(text);
}

/*
 * One event: seq, time and type, then its short members as key=value on
 * the same line (strings quoted when they hold a space), then each long
 * one on lines of its own, objects taken apart into fields, long text
 * wrapped. Nulls are left out.
 */
static void
ctl_print_event(json_t *ev)
{
	const char *key;
	json_t *m;
	char *text, *q, *field;
	int col;

	col = printf("%" JSON_INTEGER_FORMAT "  %s  %s",
	    json_integer_value(json_object_get(ev, "seq")), ctl_str(ev, "ts"),
	    ctl_str(ev, "type"));
	json_object_foreach(ev, key, m) {
		if (strcmp(key, "seq") == 0 || strcmp(key, "ts") == 0 ||
		    strcmp(key, "type") == 0 || json_is_null(m) ||
		    !ctl_is_short(m))
			continue;
		text = ctl_text(m);
		if (json_is_string(m) && strpbrk(text, " \t\"=") != NULL &&
		    (q = json_dumps(m, JSON_ENCODE_ANY)) != NULL) {
			field = xasprintf("%s=%s", key, q);
			free(q);
		} else
			field = xasprintf("%s=%s", key, text);
		/* Short members go on as many lines as they need. */
		if (col + 2 + (int)strlen(field) > CTL_WRAP_AT)
			col = printf("\n   ") - 1;
		col += printf("  %s", field);
		free(field);
		free(text);
	}
	putchar('\n');
	json_object_foreach(ev, key, m) {
		if (json_is_null(m) || strcmp(key, "seq") == 0 ||
		    strcmp(key, "ts") == 0 || strcmp(key, "type") == 0 ||
		    ctl_is_short(m))
			continue;
		ctl_field(key, m, 0);
	}
	fflush(stdout);
}

/*
 * floectl events [--follow] [--after SEQ]: page through the event log;
 * with --follow keep polling every 500 ms until interrupted (one JSON
 * line per event with --json).
 */
int
ctl_events(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--follow", false, false, NULL },
		{ "--after", true, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	json_t *all = NULL, *events, *ev;
	uint64_t after = 0;
	json_int_t last = 0;
	bool lost = false;
	size_t i, n;
	char *path, *line;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, NULL, 0, 0)) != 0)
		return rc;
	if (opts[1].set &&
	    ctl_parse_u64(opts[1].val, 0, UINT64_MAX, &after) == -1)
		return ctl_usage_error(c,
		    "--after takes a sequence number, not \"%s\"", opts[1].val);
	if (opts[0].set)
		ctl_follow_init();
	if (c->json && !opts[0].set)
		all = json_array();
	while (!ctl_stop) {
		path = xasprintf("/events?after=%" PRIu64 "&limit=%d", after,
		    CTL_EVENTS_PAGE);
		rc = ctl_poll(c, path, opts[0].set, &lost, &r);
		free(path);
		if (rc != 0) {
			json_decref(all);
			return rc;
		}
		if (r.json == NULL)
			break; /* interrupted while floe was away */
		events = json_object_get(r.json, "events");
		n = json_array_size(events);
		last = json_integer_value(json_object_get(r.json, "last_seq"));
		json_array_foreach(events, i, ev) {
			json_int_t seq =
			    json_integer_value(json_object_get(ev, "seq"));

			if (seq > 0 && (uint64_t)seq > after)
				after = (uint64_t)seq;
			if (all != NULL)
				json_array_append(all, ev);
			else if (c->json) {
				line = json_dumps(ev, JSON_COMPACT);
				if (line != NULL)
					printf("%s\n", line);
				free(line);
				fflush(stdout);
			} else
				ctl_print_event(ev);
		}
		ctl_resp_clear(&r);
		if (n == CTL_EVENTS_PAGE)
			continue;
		if (!opts[0].set)
			break;
		ctl_sleep_ms(CTL_FOLLOW_MS);
	}
	if (all != NULL) {
		ev = json_pack("{s:o,s:I}", "events", all, "last_seq", last);
		line = ev != NULL ? json_dumps(ev, JSON_COMPACT) : NULL;
		if (line != NULL)
			printf("%s\n", line);
		free(line);
		json_decref(ev);
	}
	return CTL_OK;
}

/* A trigger's value V for people (rlog.h says how). Caller frees. */
static char *
ctl_value_text(const char *trigger, const json_t *v)
{
	char buf[256];

	rlog_value_text(trigger, v, buf, sizeof(buf));
	return xstrdup(buf);
}

/*
 * One rollback log line, readably: when, which wave, which trigger, the
 * move and who; then the objects, the measurement (rounded) and the
 * reason.
 */
static void
ctl_print_rollback(json_t *l)
{
	char *m, *t, *objs;
	json_int_t held;
	char dur[32];

	if (json_object_get(l, "unparsed") != NULL) {
		printf("(unreadable line) %s\n", ctl_str(l, "unparsed"));
		return;
	}
	m = ctl_value_text(ctl_str(l, "trigger"),
	    json_object_get(l, "measured"));
	t = ctl_value_text(ctl_str(l, "trigger"),
	    json_object_get(l, "threshold"));
	objs = ctl_text(json_object_get(l, "objects"));
	held = json_integer_value(json_object_get(l, "held_ms"));
	units_format_human(held, dur, sizeof(dur));
	printf("%s  wave %" JSON_INTEGER_FORMAT "  %s  %s -> %s  by %s\n",
	    ctl_str(l, "ts"), json_integer_value(json_object_get(l, "wave")),
	    ctl_str(l, "trigger"), ctl_str(l, "from"), ctl_str(l, "to"),
	    ctl_str(l, "actor"));
	printf("    objects:   %s\n", objs);
	if (!json_is_null(json_object_get(l, "measured")) ||
	    !json_is_null(json_object_get(l, "threshold")))
		printf("    measured:  %s  threshold: %s  held: %s\n", m, t,
		    dur);
	if (json_is_string(json_object_get(l, "reason")))
		ctl_wrap("    reason:    ", ctl_str(l, "reason"), CTL_WRAP_AT);
	free(m);
	free(t);
	free(objs);
}

/*
 * floectl rollbacks [--follow]: the rollback log, oldest first; --json
 * prints its lines as they are in the file.
 */
int
ctl_rollbacks(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--follow", false, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	json_t *list, *lines, *l, *raw;
	uint64_t after = 0;
	size_t i, n;
	char *path;
	bool lost = false;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, NULL, 0, 0)) != 0)
		return rc;
	if (opts[0].set)
		ctl_follow_init();
	while (!ctl_stop) {
		path = xasprintf("/rollbacks?after=%" PRIu64 "&limit=%d", after,
		    CTL_EVENTS_PAGE);
		rc = ctl_poll(c, path, opts[0].set, &lost, &r);
		free(path);
		if (rc != 0)
			return rc;
		if (r.json == NULL)
			break; /* interrupted while floe was away */
		list = json_object_get(r.json, "rollbacks");
		lines = json_object_get(r.json, "lines");
		n = json_array_size(list);
		after = (uint64_t)json_integer_value(
		    json_object_get(r.json, "next"));
		json_array_foreach(list, i, l) {
			raw = json_array_get(lines, i);
			if (!c->json)
				ctl_print_rollback(l);
			else if (json_is_string(raw))
				printf("%s\n", json_string_value(raw));
			else
				printf("%s\n", ctl_str(l, "unparsed"));
		}
		fflush(stdout);
		ctl_resp_clear(&r);
		if (n == CTL_EVENTS_PAGE)
			continue;
		if (!opts[0].set)
			break;
		ctl_sleep_ms(CTL_FOLLOW_MS);
	}
	if (!c->json && !opts[0].set && after == 0)
		printf("no rollbacks\n");
	return CTL_OK;
}

/*
 * One line of wave watch for wave N: the time, its state and share, its
 * error ratio and lag against their thresholds (W, from the triggers'
 * view; NULL when they are not armed), or the evidence of its rollback
 * (RB, may be NULL).
 */
static void
ctl_watch_line(json_t *wave, json_t *w, json_t *rb)
{
	char ts[40];

	units_time_format(units_now_ms(), ts, sizeof(ts));
	printf("%s  wave %" JSON_INTEGER_FORMAT "  %s %" JSON_INTEGER_FORMAT
	       "%%",
	    ts, ctl_int(wave, "wave"), ctl_str(wave, "state"),
	    ctl_int(wave, "pct"));
	if (w != NULL) {
		printf("  ");
		ctl_armed_print(w, "  ");
	}
	if (rb != NULL)
		printf("  rolled back by %s (%s)%s%s", ctl_str(rb, "actor"),
		    ctl_str(rb, "trigger"),
		    json_object_get(rb, "evidence") != NULL ? ": " : "",
		    json_object_get(rb, "evidence") != NULL ?
			ctl_str(rb, "evidence") :
			"");
	putchar('\n');
}

/*
 * floectl wave watch N [--count K] [--interval SECONDS]: wave N live,
 * like a rollout's --watch: a line every interval (2 s) with its state,
 * share, error ratio and lag against their thresholds, and its events as
 * they come (the last 5 first). K lines, or until interrupted; a restart
 * of floe is ridden out.
 */
int
ctl_wave_watch(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--count", true, false, NULL },
		{ "--interval", true, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r, st, ev;
	char *pos[1], *path, num[16];
	uint64_t n, count = 0, interval = 2, k, after = 0;
	json_t *e, *mine;
	json_int_t last;
	bool lost = false, first = true;
	size_t i, from;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[0], &n)) != 0)
		return rc;
	if (opts[0].set && ctl_parse_u64(opts[0].val, 1, 1000000, &count) == -1)
		return ctl_usage_error(c,
		    "--count takes 1..1000000, not \"%s\"", opts[0].val);
	if (opts[1].set && ctl_parse_u64(opts[1].val, 1, 3600, &interval) == -1)
		return ctl_usage_error(c,
		    "--interval takes seconds, 1..3600, not \"%s\"",
		    opts[1].val);
	ctl_follow_init();
	snprintf(num, sizeof(num), "%" PRIu64, n);
	for (k = 0; !ctl_stop && (count == 0 || k < count); k++) {
		if (k > 0)
			ctl_sleep_ms((long)interval * 1000);
		path = xasprintf("/waves/%" PRIu64, n);
		rc = ctl_poll(c, path, true, &lost, &r);
		free(path);
		if (rc != 0)
			return rc;
		if (r.json == NULL)
			break;
		if ((rc = ctl_poll(c, "/status", true, &lost, &st)) != 0 ||
		    st.json == NULL) {
			ctl_resp_clear(&r);
			return rc;
		}
		if (c->json) {
			e = json_pack("{s:O,s:O?,s:O?}", "wave", r.json,
			    "triggers",
			    json_object_get(
				json_object_get(json_object_get(st.json,
						    "triggers"),
				    "waves"),
				num),
			    "rolled_back",
			    json_object_get(json_object_get(st.json,
						"rolled_back"),
				num));
			path = e != NULL ? json_dumps(e, JSON_COMPACT) : NULL;
			if (path != NULL)
				printf("%s\n", path);
			free(path);
			json_decref(e);
		} else
			ctl_watch_line(r.json,
			    json_object_get(
				json_object_get(json_object_get(st.json,
						    "triggers"),
				    "waves"),
				num),
			    json_object_get(json_object_get(st.json,
						"rolled_back"),
				num));
		last = ctl_int(json_object_get(st.json, "store"), "last_seq");
		ctl_resp_clear(&r);
		ctl_resp_clear(&st);
		/* Its events since the last line (at first: its last 5). */
		if (first && last > CTL_EVENTS_PAGE)
			after = (uint64_t)last - CTL_EVENTS_PAGE;
		path = xasprintf("/events?after=%" PRIu64 "&limit=%d", after,
		    CTL_EVENTS_PAGE);
		rc = ctl_poll(c, path, true, &lost, &ev);
		free(path);
		if (rc != 0)
			return rc;
		if (ev.json == NULL)
			break;
		mine = json_array();
		json_array_foreach(json_object_get(ev.json, "events"), i, e) {
			if (ctl_int(e, "seq") > 0 &&
			    (uint64_t)ctl_int(e, "seq") > after)
				after = (uint64_t)ctl_int(e, "seq");
			if (json_is_integer(json_object_get(e, "wave")) &&
			    (uint64_t)ctl_int(e, "wave") == n)
				json_array_append(mine, e);
		}
		from = first && json_array_size(mine) > 5 ?
		    json_array_size(mine) - 5 :
		    0;
		json_array_foreach(mine, i, e) {
			if (i < from || c->json)
				continue;
			fputs("  + ", stdout);
			ctl_print_event(e);
		}
		json_decref(mine);
		ctl_resp_clear(&ev);
		first = false;
		fflush(stdout);
	}
	return CTL_OK;
}
