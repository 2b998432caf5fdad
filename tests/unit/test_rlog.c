/*
 * floe: test_rlog.c -- the rollback log: what a line says (the wave's
 * objects and rules from the store, the trigger's numbers, a missing
 * reason), that each write is one whole line, that writing without a log
 * or a line fails with errno set, that a line the log cannot take waits
 * in the store and lands later whole and in order, that a partial last
 * line is cut back, and reading pages back (after, limit,
 * a line still being written, a line that is not JSON, no log yet).
 */
#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "lib/compat.h"
#include "policy/rlog.h"
#include "routing/route.h"
#include "routing/store.h"
#include "tests/unit/routing_tmp.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */

/* A store in a temporary directory, and the log's path in it. */
struct fixture {
	struct routing_tmp *tmp;
	char path[320];
};

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || (fx->tmp = routing_tmp_open()) == NULL) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/rollback.log", fx->tmp->dir);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;

	routing_tmp_close(fx->tmp);
	free(fx);
	return 0;
}

/* Assign TEXT (an object or a rule) to WAVE. */
static void
route_put(struct fixture *fx, const char *text, uint32_t wave)
{
	struct route_obj obj;
	char err[256];
	json_t *ev = json_object();

	assert_int_equal(route_obj_parse(text, &obj, err, sizeof(err)), 0);
	assert_int_equal(store_route_put(fx->tmp->store, obj.key, obj.len, wave,
			     T0, ev),
	    STORE_OK);
	json_decref(ev);
}

/* The whole file at PATH. Caller frees. */
static char *
slurp(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(fp);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

/* PATH from byte AT on. Caller frees. */
static char *
slurp_tail(const char *path, off_t at)
{
	FILE *fp = fopen(path, "r");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(fp);
	assert_non_null(buf);
	assert_int_equal(fseeko(fp, at, SEEK_SET), 0);
	n = fread(buf, 1, 65535, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

/* Append TEXT to PATH as it is (no newline added). */
static void
append(const char *path, const char *text)
{
	FILE *fp = fopen(path, "a");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* A trigger's line: every field, in order; only the wave's routes. */
static void
test_line(void **state)
{
	struct fixture *fx = *state;
	json_t *measured = json_real(0.25), *threshold = json_real(0.02);
	struct rlog_entry e = { .wave = 3,
		.from = "canary",
		.trigger = "errors",
		.actor = "floe",
		.reason = "error rate 25% over 2%",
		.measured = measured,
		.threshold = threshold,
		.held_ms = 1500 };
	json_t *line;
	char *s;

	route_put(fx, "db.orders", 3);
	route_put(fx, "mkt.*", 3);
	route_put(fx, "db.items", 4);
	line = rlog_line(&e, fx->tmp->store, T0 + 1234);
	assert_non_null(line);
	s = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	/* Routes come in key order: tables before rules. */
	assert_string_equal(s,
	    "{\"ts\":\"2026-01-01T00:00:01.234Z\",\"wave\":3,"
	    "\"objects\":[\"db.orders\",\"mkt.*\"],\"trigger\":\"errors\","
	    "\"measured\":0.25,\"threshold\":0.02,\"held_ms\":1500,"
	    "\"from\":\"canary\",\"to\":\"rolled_back\",\"actor\":\"floe\","
	    "\"reason\":\"error rate 25% over 2%\"}");
	free(s);
	json_decref(line);
	/* The entry's numbers were borrowed, not stolen. */
	assert_int_equal(measured->refcount, 1);
	assert_int_equal(threshold->refcount, 1);
	json_decref(measured);
	json_decref(threshold);
}

/* E's line in ST as text, both ways: the same bytes. */
static void
line_text_same(const struct rlog_entry *e, struct store *st)
{
	json_t *line = rlog_line(e, st, T0 + 1234);
	char *want, *got;
	size_t len = 0;

	assert_non_null(line);
	want = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	got = rlog_line_text(e, st, T0 + 1234, &len);
	assert_non_null(want);
	assert_non_null(got);
	assert_string_equal(got, want);
	assert_int_equal(len, strlen(want));
	free(want);
	free(got);
	json_decref(line);
}

/*
 * The line written as text is the line json_dumps writes: no store, the
 * empty wave, names with quotes, backslashes, slashes, UTF-8 and DEL (in
 * their percent form), a reason JSON escapes, nulls, 10,000 names.
 */
static void
test_line_text(void **state)
{
	struct fixture *fx = *state;
	json_t *measured = json_real(0.6), *threshold = json_real(0.1);
	struct rlog_entry e = { .wave = 3,
		.from = "lakehouse",
		.trigger = "errors",
		.actor = "floe",
		.reason = "a \"quoted\"\\ reason\nover two lines \x01",
		.measured = measured,
		.threshold = threshold,
		.held_ms = 20 };
	struct rlog_entry op = { .wave = 3,
		.from = "canary",
		.trigger = "operator",
		.actor = "uid 1000" };
	static const char *const names[] = { "db.say\"hi\"", "db.back\\slash",
		"db.sl/ash", "db.caf\xc3\xa9", "db.\xf0\x9f\x90\x87",
		"my.db%1Forders", "a.b.c", "mkt.*", "db.\x7f" };
	char name[64], *s;
	size_t i, len;

	/* No store, then a wave with no route: "objects":[]. */
	line_text_same(&e, NULL);
	line_text_same(&e, fx->tmp->store);
	line_text_same(&op, NULL);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		route_put(fx, names[i], 3);
	route_put(fx, "db.other", 4);
	line_text_same(&e, fx->tmp->store);
	line_text_same(&op, fx->tmp->store);
	s = rlog_line_text(&e, fx->tmp->store, T0, &len);
	/* Names are plain or percent-encoded: nothing for JSON to escape. */
	assert_non_null(strstr(s,
	    "\"objects\":[\"a.b.c\",\"db%1Fback%5Cslash\",\"db%1Fcaf%C3%A9\","
	    "\"db%1Fsay%22hi%22\",\"db%1Fsl%2Fash\",\"db%1F%7F\","
	    "\"db%1F%F0%9F%90%87\",\"mkt.*\",\"my.db%1Forders\"],"));
	assert_null(strstr(s, "db.other"));
	free(s);
	/* 10,000 names, as a wave of the benchmark holds. */
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "bench.t%05zu", i);
		route_put(fx, name, 5);
	}
	e.wave = 5;
	line_text_same(&e, fx->tmp->store);
	json_decref(measured);
	json_decref(threshold);
}

/* An operator's line: nothing measured, no reason, no store: nulls. */
static void
test_line_operator(void **state)
{
	struct rlog_entry e = { .wave = 9,
		.from = "lakehouse",
		.trigger = "operator",
		.actor = "uid 1000" };
	json_t *line, *objs;

	(void)state;
	line = rlog_line(&e, NULL, T0);
	assert_non_null(line);
	assert_true(json_is_null(json_object_get(line, "measured")));
	assert_true(json_is_null(json_object_get(line, "threshold")));
	assert_true(json_is_null(json_object_get(line, "reason")));
	assert_int_equal(json_integer_value(json_object_get(line, "held_ms")),
	    0);
	objs = json_object_get(line, "objects");
	assert_true(json_is_array(objs));
	assert_int_equal(json_array_size(objs), 0);
	json_decref(line);
	/* No store: no objects, and no failure. */
	objs = rlog_objects(NULL, 9);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
}

/* Each write is one compact line; no log or no line is an error. */
static void
test_write(void **state)
{
	struct fixture *fx = *state;
	struct rlog *l;
	json_t *a = json_pack("{s:i,s:s}", "wave", 1, "to", "rolled_back");
	json_t *b = json_pack("{s:i}", "wave", 2);
	char err[512], *s;

	/* A log that cannot be opened is tried again by each write. */
	l = rlog_open("/nonexistent-dir/rollback.log", err, sizeof(err));
	assert_non_null(l);
	assert_non_null(strstr(err, "rollback log /nonexistent-dir/"));
	errno = 0;
	assert_int_equal(rlog_write(l, a), -1);
	assert_int_equal(errno, ENOENT);
	rlog_free(l);
	l = rlog_open(fx->path, err, sizeof(err));
	assert_non_null(l);
	assert_string_equal(err, "");
	assert_int_equal(rlog_write(l, a), 0);
	assert_int_equal(rlog_write(l, b), 0);
	errno = 0;
	assert_int_equal(rlog_write(l, NULL), -1);
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_int_equal(rlog_write(NULL, a), -1);
	assert_int_equal(errno, EBADF);
	rlog_free(l);
	rlog_free(NULL);
	s = slurp(fx->path);
	assert_string_equal(s,
	    "{\"wave\":1,\"to\":\"rolled_back\"}\n{\"wave\":2}\n");
	free(s);
	/* Reopened, it appends. */
	l = rlog_open(fx->path, err, sizeof(err));
	assert_int_equal(rlog_write(l, b), 0);
	rlog_free(l);
	s = slurp(fx->path);
	assert_non_null(strstr(s, "{\"wave\":2}\n{\"wave\":2}\n"));
	free(s);
	json_decref(a);
	json_decref(b);
}

/* Pages of the log: after, limit and what the next page starts at. */
static void
test_read(void **state)
{
	static const struct {
		uint64_t after;
		size_t limit;
		size_t count;
		int first; /* the wave of the first line, or -1 */
		uint64_t next;
	} pages[] = {
		{ 0, 0, 5, 0, 5 }, /* 0: the most there is */
		{ 0, 2, 2, 0, 2 },
		{ 2, 2, 2, 2, 4 },
		{ 4, 2, 1, 4, 5 },
		{ 5, 2, 0, -1, 5 }, /* the end: next stays */
		{ 9, 1, 0, -1, 9 }, /* past the end */
		{ 1, RLOG_READ_MAX + 1, 4, 1, 5 },
	};
	struct fixture *fx = *state;
	char msg[256];
	json_t *j, *list;
	size_t i;

	/* No log yet: an empty first page. */
	j = rlog_read(fx->path, 3, 10, msg, sizeof(msg));
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "rollbacks")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "next")), 0);
	json_decref(j);

	append(fx->path,
	    "{\"wave\":0}\n{\"wave\":1}\n{\"wave\":2}\n{\"wave\":3}\n"
	    "{\"wave\":4}\n");
	for (i = 0; i < nitems(pages); i++) {
		j = rlog_read(fx->path, pages[i].after, pages[i].limit, msg,
		    sizeof(msg));
		assert_non_null(j);
		list = json_object_get(j, "rollbacks");
		if (json_array_size(list) != pages[i].count)
			fail_msg("page %zu: %zu lines, want %zu", i,
			    json_array_size(list), pages[i].count);
		if (pages[i].first >= 0)
			assert_int_equal(json_integer_value(json_object_get(
					     json_array_get(list, 0), "wave")),
			    pages[i].first);
		assert_int_equal(json_integer_value(json_object_get(j, "next")),
		    pages[i].next);
		json_decref(j);
	}
}

/* Not JSON: kept as text. Half a line: not read until it ends. */
static void
test_read_odd(void **state)
{
	struct fixture *fx = *state;
	char msg[256];
	json_t *j, *list;

	append(fx->path, "{\"wave\":1}\nnot json\n{\"wave\":");
	j = rlog_read(fx->path, 0, 0, msg, sizeof(msg));
	list = json_object_get(j, "rollbacks");
	assert_int_equal(json_array_size(list), 2);
	assert_string_equal(json_string_value(
				json_object_get(json_array_get(list, 1),
				    "unparsed")),
	    "not json");
	/* The lines as text, byte for byte, beside the parsed ones. */
	assert_int_equal(json_array_size(json_object_get(j, "lines")), 2);
	assert_string_equal(json_string_value(
				json_array_get(json_object_get(j, "lines"), 1)),
	    "not json");
	assert_int_equal(json_integer_value(json_object_get(j, "next")), 2);
	json_decref(j);
	/* The line ends: the next page has it. */
	append(fx->path, "2}\n");
	j = rlog_read(fx->path, 2, 0, msg, sizeof(msg));
	list = json_object_get(j, "rollbacks");
	assert_int_equal(json_array_size(list), 1);
	assert_int_equal(json_integer_value(
			     json_object_get(json_array_get(list, 0), "wave")),
	    2);
	json_decref(j);
	/* A log that cannot be opened: NULL, and why. */
	assert_null(
	    rlog_read("/etc/passwd/rollback.log", 0, 0, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "rollback log /etc/passwd/rollback.log: "));
}

/* A trigger's values for people: ratios, lags, words; null is "none". */
static void
test_value_text(void **state)
{
	char buf[64];
	json_t *v;

	(void)state;
	v = json_real(40.0 / 110.0);
	rlog_value_text("errors", v, buf, sizeof(buf));
	assert_string_equal(buf, "36.36%");
	rlog_value_text("reconcile", v, buf, sizeof(buf));
	assert_string_equal(buf, "0.36363636363636365");
	json_decref(v);
	v = json_integer(1000000);
	rlog_value_text("freshness", v, buf, sizeof(buf));
	assert_string_equal(buf, "16m 40s");
	json_decref(v);
	v = json_string("clean or stale");
	rlog_value_text("reconcile", v, buf, sizeof(buf));
	assert_string_equal(buf, "clean or stale");
	json_decref(v);
	v = json_null();
	rlog_value_text("errors", v, buf, sizeof(buf));
	assert_string_equal(buf, "none");
	rlog_value_text(NULL, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "none");
	json_decref(v);
}

/* The size of the file at PATH. */
static off_t
file_size(const char *path)
{
	struct stat sb;

	assert_int_equal(stat(path, &sb), 0);
	return sb.st_size;
}

/* Whether an event of TYPE is in the store. */
struct find_ev {
	const char *type;
	int found;
};

static int
find_ev_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	struct find_ev *fe = arg;
	char want[128];

	(void)seq;
	(void)len;
	snprintf(want, sizeof(want), "\"type\":\"%s\"", fe->type);
	if (strstr(json, want) != NULL)
		fe->found++;
	return 0;
}

static int
count_events(struct store *st, const char *type)
{
	struct find_ev fe = { type, 0 };

	assert_int_equal(store_event_foreach(st, 0, 0, find_ev_cb, &fe),
	    STORE_OK);
	return fe.found;
}

/*
 * The log's file cannot grow (a file-size limit: EFBIG, the way a full
 * disk gives ENOSPC, and a short write first): the line is not left in
 * part, it waits in the store, in order with the next one, and both land
 * when the log can take them. Before the fix the first write left 30
 * bytes of a line that the next one was glued onto.
 */
static void
test_short_write(void **state)
{
	struct fixture *fx = *state;
	struct rlog *l;
	struct rlog_stats rs;
	struct rlimit old, lim;
	json_t *a = json_pack("{s:i,s:s}", "wave", 7, "reason",
	    "a reason long enough to cross the limit in the middle");
	json_t *b = json_pack("{s:i}", "wave", 8);
	char err[512], pad[128], *s;
	off_t size;
	bool pending;
	int i;
	FILE *fp;

	/*
	 * A log larger than the store's files, so the limit below stops the
	 * log and not LMDB.
	 */
	memset(pad, 'x', sizeof(pad));
	fp = fopen(fx->path, "w");
	assert_non_null(fp);
	for (i = 0; i < 16384; i++)
		fprintf(fp, "{\"wave\":0,\"pad\":\"%.*s\"}\n", 100, pad);
	fclose(fp);
	size = file_size(fx->path);
	l = rlog_open(fx->path, err, sizeof(err));
	rlog_attach(l, fx->tmp->store);
	assert_int_equal(signal(SIGXFSZ, SIG_IGN) == SIG_ERR, 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)size + 30;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);

	errno = 0;
	assert_int_equal(rlog_write(l, a), -1);
	assert_int_equal(errno, EFBIG);
	/* Cut back: no part of the line is in the log. */
	assert_int_equal(file_size(fx->path), size);
	assert_int_equal(rlog_append(l, b, T0, &pending), -1);
	assert_true(pending);
	assert_int_equal(file_size(fx->path), size);
	rlog_stats(l, &rs);
	assert_int_equal(rs.pending, 2);
	assert_int_equal(rs.failed, 2);
	assert_int_equal(rs.err, EFBIG);
	assert_int_equal(count_events(fx->tmp->store, "rollback_log.failing"),
	    1);
	/* The tick tries again and fails again, no more events. */
	assert_int_equal(rlog_flush(l, T0), -1);
	assert_int_equal(count_events(fx->tmp->store, "rollback_log.failing"),
	    1);

	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(rlog_flush(l, T0), 0);
	rlog_stats(l, &rs);
	assert_int_equal(rs.pending, 0);
	assert_int_equal(rs.err, 0);
	assert_int_equal(count_events(fx->tmp->store, "rollback_log.written"),
	    1);
	s = slurp_tail(fx->path, size);
	assert_string_equal(s,
	    "{\"wave\":7,\"reason\":\"a reason long enough to cross the "
	    "limit in the middle\"}\n{\"wave\":8}\n");
	free(s);
	/* Nothing left to write: the tick is a no-op. */
	assert_int_equal(rlog_flush(l, T0), 0);
	assert_int_equal(file_size(fx->path), size + 87);
	rlog_free(l);
	json_decref(a);
	json_decref(b);
}

/*
 * A log that ends in part of a line (a crash in a write, an older floe):
 * cut back to its last newline before the next line, never glued.
 */
static void
test_partial_tail(void **state)
{
	struct fixture *fx = *state;
	struct rlog *l;
	json_t *b = json_pack("{s:i}", "wave", 2), *j;
	char err[256], msg[256], *s;

	append(fx->path, "{\"wave\":1}\n{\"wave\":1,\"objec");
	l = rlog_open(fx->path, err, sizeof(err));
	rlog_attach(l, fx->tmp->store);
	assert_int_equal(rlog_write(l, b), 0);
	rlog_free(l);
	s = slurp(fx->path);
	assert_string_equal(s, "{\"wave\":1}\n{\"wave\":2}\n");
	free(s);
	j = rlog_read(fx->path, 0, 0, msg, sizeof(msg));
	assert_int_equal(json_array_size(json_object_get(j, "rollbacks")), 2);
	json_decref(j);
	/* A log that is one partial line: emptied. */
	l = rlog_open(fx->path, err, sizeof(err));
	assert_int_equal(truncate(fx->path, 5), 0);
	assert_int_equal(rlog_write(l, b), 0);
	rlog_free(l);
	s = slurp(fx->path);
	assert_string_equal(s, "{\"wave\":2}\n");
	free(s);
	json_decref(b);
}

/*
 * A line written whose pending copy was not yet forgotten (a crash, or an
 * fsync that failed after the write) is not written twice.
 */
static void
test_landed_once(void **state)
{
	struct fixture *fx = *state;
	struct rlog *l;
	struct rlog_stats rs;
	uint64_t id;
	char err[256], *s;

	append(fx->path, "{\"wave\":1}\n{\"wave\":3}\n");
	assert_int_equal(store_rlog_put(fx->tmp->store, "{\"wave\":3}", 10,
			     &id),
	    STORE_OK);
	l = rlog_open(fx->path, err, sizeof(err));
	rlog_attach(l, fx->tmp->store);
	rlog_stats(l, &rs);
	assert_int_equal(rs.pending, 1);
	assert_int_equal(rlog_flush(l, T0), 0);
	rlog_stats(l, &rs);
	assert_int_equal(rs.pending, 0);
	rlog_free(l);
	s = slurp(fx->path);
	assert_string_equal(s, "{\"wave\":1}\n{\"wave\":3}\n");
	free(s);
}

/* store_event_cb: count the events. */
static int
count_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	(void)seq;
	(void)json;
	(void)len;
	(*(size_t *)arg)++;
	return 0;
}

static size_t
events(struct store *st)
{
	size_t n = 0;

	assert_int_equal(store_event_foreach(st, 0, 0, count_cb, &n), STORE_OK);
	return n;
}

/*
 * Off the loop: a line kept pending, the log held while a child writes
 * (the loop's flush and append write nothing meanwhile), the child's
 * flush writing every pending line in order and recording no event, and
 * rlog_flushed taking its outcome -- success, then a failure, which the
 * loop counts and records as an event, the line still pending.
 */
static void
test_deferred(void **state)
{
	struct fixture *fx = *state;
	struct store *st = fx->tmp->store;
	struct rlog *l;
	struct rlog_stats rs;
	json_t *a = json_pack("{s:i}", "wave", 1),
	       *b = json_pack("{s:i}", "wave", 2);
	char err[256], bad[400], *s;
	size_t ev;
	bool pending;
	int e;

	l = rlog_open(fx->path, err, sizeof(err));
	rlog_attach(l, st);
	assert_int_equal(rlog_put_pending(l, a), 0);
	rlog_stats(l, &rs);
	assert_int_equal(rs.pending, 1);
	rlog_hold(l);
	errno = 0;
	assert_int_equal(rlog_flush(l, T0), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rlog_append(l, b, T0, &pending), -1);
	assert_true(pending);
	s = slurp(fx->path);
	assert_string_equal(s, "");
	free(s);

	ev = events(st);
	assert_int_equal(rlog_flush_path(fx->path, st, T0), 0);
	s = slurp(fx->path);
	assert_string_equal(s, "{\"wave\":1}\n{\"wave\":2}\n");
	free(s);
	assert_int_equal(events(st), ev);
	rlog_flushed(l, 0, T0);
	rlog_stats(l, &rs);
	assert_int_equal(rs.pending, 0);
	assert_int_equal(rs.failed, 0);
	/* Nothing written twice. */
	assert_int_equal(rlog_flush(l, T0), 0);
	s = slurp(fx->path);
	assert_string_equal(s, "{\"wave\":1}\n{\"wave\":2}\n");
	free(s);

	/* The child cannot write: the line stays pending, the loop says so. */
	assert_int_equal(rlog_put_pending(l, a), 0);
	rlog_hold(l);
	snprintf(bad, sizeof(bad), "%s/no/such/dir/log", fx->tmp->dir);
	e = rlog_flush_path(bad, st, T0);
	assert_int_equal(e, ENOENT);
	rlog_flushed(l, e, T0);
	rlog_stats(l, &rs);
	assert_int_equal(rs.pending, 1);
	assert_int_equal(rs.failed, 1);
	assert_int_equal(rs.err, ENOENT);
	assert_int_equal(events(st), ev + 1);
	/* Released: the tick's flush writes it. */
	assert_int_equal(rlog_flush(l, T0), 0);
	s = slurp(fx->path);
	assert_string_equal(s, "{\"wave\":1}\n{\"wave\":2}\n{\"wave\":1}\n");
	free(s);
	rlog_free(l);
	json_decref(a);
	json_decref(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_operator, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_line_text, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_write, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_partial_tail, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_landed_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_odd, setup, teardown),
		cmocka_unit_test(test_value_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
