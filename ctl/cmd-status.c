/*
 * floe: cmd-status.c -- floectl's commands that watch floe: status and
 * metrics, and the two logs, events and rollbacks, paged through and with
 * --follow polled until SIGINT or SIGTERM.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/units.h"
#include "lib/xmalloc.h"

static volatile sig_atomic_t ctl_stop;

static void ctl_sigint_cb(int);
static void ctl_follow_init(void);
static void ctl_sleep_ms(long);
static void ctl_print_event(json_t *);
static void ctl_print_rollback(json_t *);

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

/* floectl status */
int
ctl_status(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	struct ctl_table t;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0)) != 0)
		return rc;
	if ((rc = ctl_call(c, "GET", "/status", NULL, &r)) != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else {
		ctl_table_init(&t, 2);
		ctl_flatten(&t, "", r.json);
		ctl_table_print(&t);
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
 * One event as a line: seq, time and type, then its other members as
 * key=value (nulls left out, strings quoted when they hold a space).
 */
static void
ctl_print_event(json_t *ev)
{
	const char *key;
	json_t *m;
	char *text, *q;

	printf("%" JSON_INTEGER_FORMAT "  %s  %s",
	    json_integer_value(json_object_get(ev, "seq")), ctl_str(ev, "ts"),
	    ctl_str(ev, "type"));
	json_object_foreach(ev, key, m) {
		if (strcmp(key, "seq") == 0 || strcmp(key, "ts") == 0 ||
		    strcmp(key, "type") == 0 || json_is_null(m))
			continue;
		text = ctl_text(m);
		if (json_is_string(m) && strpbrk(text, " \t\"=") != NULL &&
		    (q = json_dumps(m, JSON_ENCODE_ANY)) != NULL) {
			printf("  %s=%s", key, q);
			free(q);
		} else
			printf("  %s=%s", key, text);
		free(text);
	}
	putchar('\n');
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
		rc = ctl_call(c, "GET", path, NULL, &r);
		free(path);
		if (rc != 0) {
			json_decref(all);
			return rc;
		}
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

/*
 * One rollback log line, readably: when, which wave, which trigger, the
 * move and who; then the objects, the measurement and the reason.
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
	m = ctl_text(json_object_get(l, "measured"));
	t = ctl_text(json_object_get(l, "threshold"));
	objs = ctl_text(json_object_get(l, "objects"));
	held = json_integer_value(json_object_get(l, "held_ms"));
	units_format_duration(held > 0 ? (uint64_t)held : 0, dur, sizeof(dur));
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
		printf("    reason:    %s\n", ctl_str(l, "reason"));
	free(m);
	free(t);
	free(objs);
}

/* floectl rollbacks [--follow]: the rollback log, oldest first. */
int
ctl_rollbacks(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--follow", false, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	json_t *list, *l, *all = NULL;
	uint64_t after = 0;
	size_t i, n;
	char *path, *line;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, NULL, 0, 0)) != 0)
		return rc;
	if (opts[0].set)
		ctl_follow_init();
	if (c->json && !opts[0].set)
		all = json_array();
	while (!ctl_stop) {
		path = xasprintf("/rollbacks?after=%" PRIu64 "&limit=%d", after,
		    CTL_EVENTS_PAGE);
		rc = ctl_call(c, "GET", path, NULL, &r);
		free(path);
		if (rc != 0) {
			json_decref(all);
			return rc;
		}
		list = json_object_get(r.json, "rollbacks");
		n = json_array_size(list);
		after = (uint64_t)json_integer_value(
		    json_object_get(r.json, "next"));
		json_array_foreach(list, i, l) {
			if (all != NULL)
				json_array_append(all, l);
			else if (c->json) {
				line = json_dumps(l,
				    JSON_COMPACT | JSON_PRESERVE_ORDER);
				if (line != NULL)
					printf("%s\n", line);
				free(line);
			} else
				ctl_print_rollback(l);
		}
		fflush(stdout);
		ctl_resp_clear(&r);
		if (n == CTL_EVENTS_PAGE)
			continue;
		if (!opts[0].set)
			break;
		ctl_sleep_ms(CTL_FOLLOW_MS);
	}
	if (all != NULL) {
		l = json_pack("{s:o}", "rollbacks", all);
		line = l != NULL ? json_dumps(l, JSON_COMPACT) : NULL;
		if (line != NULL)
			printf("%s\n", line);
		free(line);
		json_decref(l);
	} else if (!c->json && !opts[0].set && after == 0)
		printf("no rollbacks\n");
	return CTL_OK;
}
