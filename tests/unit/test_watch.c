/*
 * floe: test_watch.c -- the rollback triggers through the watcher's own
 * functions, on a real store in a temporary directory: the error trigger
 * (counted reads, the suspect check, the minimum of reads, a frozen wave
 * paged about once), the reconcile trigger on ledger records, consumers'
 * reported errors, and a finished poll cycle's freshness and count
 * samples. A rollback moves the wave back in the store, writes one
 * rollback log line and says so in one log line.
 */
#include <sys/types.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "policy/rlog.h"
#include "policy/trigger.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "proxy/watch_impl.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"
#include "tests/unit/routing_tmp.h"

/* One floe's worth of what the watcher uses; its stderr, captured. */
struct fx {
	struct routing_tmp *tmp;
	struct floe f;
	struct watch *w;
	char conf_path[300];
	char rlog_path[300];
	char log_path[300];
	int saved_stderr;
};

/* A wave's state and error baseline, forced (past the gates). */
struct force {
	uint8_t state;
	int64_t flipped_ms;
	uint64_t base_requests, base_errors;
};

/* store_wave_update_cb applying a struct force. */
static int
force_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	const struct force *fo = arg;

	(void)event;
	(void)record;
	w->state = fo->state;
	w->flipped_ms = fo->flipped_ms;
	w->base_requests = fo->base_requests;
	w->base_errors = fo->base_errors;
	return STORE_OK;
}

/* Put wave N in STATE, flipped an hour ago, with a baseline. */
static void
force_wave(struct fx *fx, uint32_t n, uint8_t state, uint64_t base_req,
    uint64_t base_err)
{
	struct force fo = { state, units_now_ms() - 3600 * 1000, base_req,
		base_err };

	assert_int_equal(store_wave_update(fx->f.store, n, units_now_ms(),
			     force_cb, &fo, NULL),
	    STORE_OK);
}

/* Assign the object in TEXT to WAVE. */
static void
put_route(struct fx *fx, const char *text, uint32_t wave)
{
	struct route_obj obj;
	char err[256];

	if (route_obj_parse(text, &obj, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
	assert_int_equal(store_route_put(fx->f.store, obj.key, obj.len, wave,
			     units_now_ms(), NULL),
	    STORE_OK);
}

/* Wave N's state in the store. */
static unsigned
wave_state(struct fx *fx, uint32_t n)
{
	struct store_wave sw;

	assert_int_equal(store_wave_get(fx->f.store, n, &sw), STORE_OK);
	return sw.state;
}

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char err[512];
	FILE *fp;
	int i;

	assert_non_null(fx);
	assert_non_null(fx->tmp = routing_tmp_open());
	snprintf(fx->conf_path, sizeof(fx->conf_path), "%s/floe.conf",
	    fx->tmp->dir);
	snprintf(fx->rlog_path, sizeof(fx->rlog_path), "%s/rollback.log",
	    fx->tmp->dir);
	snprintf(fx->log_path, sizeof(fx->log_path), "%s/stderr", fx->tmp->dir);
	assert_non_null(fp = fopen(fx->conf_path, "w"));
	fprintf(fp,
	    "[floe]\nrollback_log = %s\n"
	    "[warehouse]\nuri = http://127.0.0.1:9\n"
	    "[lakehouse]\nuri = http://127.0.0.1:9\n"
	    "[policy]\nerror_min_requests = 10\nerror_ratio = 2\n"
	    "error_floor = 1%%\nfreshness_max_lag = 1m\nfreshness_for = 0s\n",
	    fx->rlog_path);
	fclose(fp);
	if ((fx->f.conf = conf_load(fx->conf_path, err, sizeof(err))) == NULL)
		fail_msg("conf_load: %s", err);
	assert_non_null(fx->f.base = event_base_new());
	fx->f.store = fx->tmp->store;
	fx->f.access_fd = -1;
	for (i = 0; i < ROUTE_NSIDES; i++)
		fx->f.cat[i] = catalog_new();
	if ((fx->f.rlog = rlog_open(fx->rlog_path, err, sizeof(err))) == NULL)
		fail_msg("rlog_open: %s", err);
	log_init(0);
	fx->saved_stderr = -1;
	fx->f.watch = fx->w = watch_new(&fx->f);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;
	int i;

	watch_free(fx->w);
	stats_clear(&fx->f.stats);
	rlog_free(fx->f.rlog);
	for (i = 0; i < ROUTE_NSIDES; i++)
		catalog_free(fx->f.cat[i]);
	event_base_free(fx->f.base);
	conf_free(fx->f.conf);
	routing_tmp_close(fx->tmp);
	free(fx);
	return 0;
}

/* From now on floe's log lines go to a file (the test's own do not). */
static void
capture_begin(struct fx *fx)
{
	int fd;

	fflush(stderr);
	assert_true(
	    (fd = open(fx->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
	assert_true((fx->saved_stderr = dup(2)) >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
}

/* The lines floe logged since capture_begin that hold S. */
static int
capture_end(struct fx *fx, const char *s)
{
	char line[2048];
	FILE *fp;
	int n = 0;

	fflush(stderr);
	assert_int_equal(dup2(fx->saved_stderr, 2), 2);
	close(fx->saved_stderr);
	fx->saved_stderr = -1;
	assert_non_null(fp = fopen(fx->log_path, "r"));
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strstr(line, s) != NULL)
			n++;
	fclose(fp);
	return n;
}

/* The rollback log's lines, parsed (a JSON array). Caller frees. */
static json_t *
rlog_lines(struct fx *fx)
{
	json_t *all = json_array(), *j;
	char line[8192];
	FILE *fp;

	if ((fp = fopen(fx->rlog_path, "r")) == NULL)
		return all;
	while (fgets(line, sizeof(line), fp) != NULL) {
		if ((j = json_loads(line, 0, NULL)) == NULL)
			fail_msg("rollback log line is not JSON: %s", line);
		json_array_append_new(all, j);
	}
	fclose(fp);
	return all;
}

/* The rollback log holds N lines; the last for wave WAVE and TRIGGER. */
static void
assert_rlog(struct fx *fx, size_t n, uint32_t wave, const char *trigger)
{
	json_t *all = rlog_lines(fx), *last;

	assert_int_equal(json_array_size(all), n);
	if (n > 0) {
		last = json_array_get(all, n - 1);
		assert_int_equal(json_integer_value(
				     json_object_get(last, "wave")),
		    wave);
		assert_string_equal(json_string_value(
					json_object_get(last, "trigger")),
		    trigger);
		assert_string_equal(json_string_value(
					json_object_get(last, "actor")),
		    "floe");
	}
	json_decref(all);
}

/* Count READS lakehouse reads of wave N in STATE, BAD of them failed. */
static void
count(struct fx *fx, uint32_t n, unsigned state, enum route_side side,
    int reads, int bad)
{
	int i;

	for (i = 0; i < reads; i++)
		watch_count(fx->w, n, state, side, i < bad);
}

/* Run what the request path left for the next loop turn. */
static void
turn(struct fx *fx)
{
	assert_int_not_equal(event_base_loop(fx->f.base, EVLOOP_NONBLOCK), -1);
}

/*
 * The error trigger: lakehouse errors make the wave a suspect checked on
 * the next turn; it fires above ratio x max(baseline, floor), then once.
 */
static void
test_errors_rollback(void **state)
{
	struct fx *fx = *state;

	put_route(fx, "db.t1", 1);
	force_wave(fx, 1, WAVE_LAKEHOUSE, 1000, 10); /* 1%: threshold 2% */

	/* Warehouse errors are the baseline's, not a suspect. */
	count(fx, 1, WAVE_LAKEHOUSE, ROUTE_WAREHOUSE, 50, 50);
	assert_false(fx->w->check_pending);
	assert_int_equal(fx->w->nsuspects, 0);

	/* 1 in 100 on the lakehouse: a suspect, below the threshold. */
	count(fx, 1, WAVE_LAKEHOUSE, ROUTE_LAKEHOUSE, 100, 1);
	assert_true(fx->w->check_pending);
	assert_int_equal(fx->w->nsuspects, 1);
	assert_int_equal(fx->w->suspects[0], 1);
	turn(fx);
	assert_false(fx->w->check_pending);
	assert_int_equal(wave_state(fx, 1), WAVE_LAKEHOUSE);
	assert_rlog(fx, 0, 0, NULL);

	/* 11 in 110: 10% > 2%. */
	count(fx, 1, WAVE_LAKEHOUSE, ROUTE_LAKEHOUSE, 10, 10);
	capture_begin(fx);
	turn(fx);
	assert_int_equal(capture_end(fx, "rolled back"), 1);
	assert_int_equal(wave_state(fx, 1), WAVE_ROLLED_BACK);
	assert_int_equal(fx->w->rollbacks, 1);
	assert_rlog(fx, 1, 1, "errors");

	/* Rolled back: neither its reads nor the tick move it again. */
	count(fx, 1, WAVE_ROLLED_BACK, ROUTE_LAKEHOUSE, 20, 20);
	assert_false(fx->w->check_pending);
	watch_tick_cb(-1, 0, fx->w);
	assert_int_equal(fx->w->rollbacks, 1);
	assert_rlog(fx, 1, 1, "errors");
}

/* Fewer reads than error_min_requests never fire, all failed or not. */
static void
test_errors_min_requests(void **state)
{
	struct fx *fx = *state;

	put_route(fx, "db.t2", 2);
	force_wave(fx, 2, WAVE_CANARY, 0, 0);
	count(fx, 2, WAVE_CANARY, ROUTE_LAKEHOUSE, 9, 9);
	turn(fx);
	watch_tick_cb(-1, 0, fx->w);
	assert_int_equal(wave_state(fx, 2), WAVE_CANARY);
	count(fx, 2, WAVE_CANARY, ROUTE_LAKEHOUSE, 1, 1);
	turn(fx);
	assert_int_equal(wave_state(fx, 2), WAVE_ROLLED_BACK);
	assert_rlog(fx, 1, 2, "errors");
}

/* store_event_cb counting the "trigger.page" events. */
static int
page_events_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	(void)seq;
	if (memmem(json, len, "\"trigger.page\"", 14) != NULL)
		(*(int *)arg)++;
	return 0;
}

/* A frozen wave is paged about once per record, never rolled back. */
static void
test_errors_frozen(void **state)
{
	struct fx *fx = *state;
	int pages = 0;

	put_route(fx, "db.t3", 3);
	force_wave(fx, 3, WAVE_FROZEN, 0, 0);
	count(fx, 3, WAVE_FROZEN, ROUTE_LAKEHOUSE, 20, 20);
	capture_begin(fx);
	turn(fx);
	watch_tick_cb(-1, 0, fx->w);
	watch_tick_cb(-1, 0, fx->w);
	assert_int_equal(capture_end(fx, "is frozen"), 1);
	assert_int_equal(wave_state(fx, 3), WAVE_FROZEN);
	assert_int_equal(fx->w->rollbacks, 0);
	assert_rlog(fx, 0, 0, NULL);
	assert_int_equal(store_event_foreach(fx->f.store, 0, 0, page_events_cb,
			     &pages),
	    STORE_OK);
	assert_int_equal(pages, 1);
}

/* Append one ledger record of OBJ at TS and hand it to the watcher. */
static void
ledger_add(struct fx *fx, const char *obj_text, int64_t ts, unsigned bucket,
    bool clean)
{
	unsigned char key[STORE_KEY_MAX], val[LEDGER_VAL_MAX];
	struct store_ledger_res res;
	struct ledger_rec rec;
	struct route_obj obj;
	struct store_kv kv;
	char err[256];
	json_t *ev = json_pack("{s:s}", "type", "ledger.import");

	assert_int_equal(route_obj_parse(obj_text, &obj, err, sizeof(err)), 0);
	memset(&rec, 0, sizeof(rec));
	rec.ts_ms = ts;
	rec.count_match = rec.aggregate_match = rec.hash_match = clean;
	rec.bucket = bucket;
	strlcpy(rec.source, "test", sizeof(rec.source));
	kv.key = key;
	kv.keylen = ledger_key(&obj, ts, key);
	kv.val = val;
	kv.vallen = ledger_encode(&rec, val);
	assert_int_equal(store_ledger_append(fx->f.store, &kv, 1,
			     units_now_ms(), ev, &res),
	    STORE_OK);
	json_decref(ev);
	watch_ledger_added(&fx->f, &kv, 1);
}

/* The reconcile trigger: a dirty, non-stale record after the flip. */
static void
test_reconcile(void **state)
{
	struct fx *fx = *state;
	int64_t now = units_now_ms();

	put_route(fx, "db.t4", 4);
	force_wave(fx, 4, WAVE_LAKEHOUSE, 0, 0);
	ledger_add(fx, "db.t4", now, LEDGER_CLEAN, true);
	ledger_add(fx, "db.t4", now + 1, LEDGER_STALE, false);
	ledger_add(fx, "db.t4", now - 2 * 3600 * 1000, LEDGER_GAP, false);
	ledger_add(fx, "db.other", now + 2, LEDGER_GAP, false);
	assert_int_equal(wave_state(fx, 4), WAVE_LAKEHOUSE);
	assert_rlog(fx, 0, 0, NULL);
	capture_begin(fx);
	ledger_add(fx, "db.t4", now + 3, LEDGER_VALUE_DRIFT, false);
	assert_int_equal(capture_end(fx, "rolled back"), 1);
	assert_int_equal(wave_state(fx, 4), WAVE_ROLLED_BACK);
	assert_rlog(fx, 1, 4, "reconcile");
}

/* Consumers' errors: counted on the side read, checked at once. */
static void
test_report_errors(void **state)
{
	struct fx *fx = *state;
	char msg[256];
	json_t *j;

	put_route(fx, "db.t5", 5);
	force_wave(fx, 5, WAVE_WAREHOUSE, 0, 0);
	j = watch_report_errors(&fx->f, 5, -1, 50, 100, msg, sizeof(msg));
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "side")),
	    "warehouse");
	assert_int_equal(json_integer_value(
			     json_object_get(json_object_get(j, "window"),
				 "requests")),
	    100);
	assert_int_equal(json_integer_value(
			     json_object_get(json_object_get(j, "window"),
				 "errors")),
	    50);
	json_decref(j);
	assert_int_equal(wave_state(fx, 5), WAVE_WAREHOUSE);

	force_wave(fx, 5, WAVE_LAKEHOUSE, 1000, 0);
	j = watch_report_errors(&fx->f, 5, -1, 5, 100, msg, sizeof(msg));
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "side")),
	    "lakehouse");
	assert_string_equal(json_string_value(json_object_get(j, "state")),
	    wave_state_name(WAVE_ROLLED_BACK));
	json_decref(j);
	assert_int_equal(wave_state(fx, 5), WAVE_ROLLED_BACK);
	assert_rlog(fx, 1, 5, "errors");

	assert_null(
	    watch_report_errors(&fx->f, 77, -1, 1, 1, msg, sizeof(msg)));
	assert_string_equal(msg, "wave 77 cannot be read from the store");
}

/* The poll list entry for TEXT. */
static struct watch_obj *
find_obj(struct fx *fx, const char *text)
{
	size_t i;

	for (i = 0; i < fx->w->nobjs; i++)
		if (strcmp(fx->w->objs[i]->name, text) == 0)
			return fx->w->objs[i];
	fail_msg("%s is not in the poll list", text);
	return NULL;
}

/* Both sides of O read: snapshots at WH_TS and LH_TS with row counts. */
static void
snaps(struct watch_obj *o, int64_t wh_ts, int64_t wh_rows, int64_t lh_ts,
    int64_t lh_rows)
{
	struct trigger_snap *wh = &o->p[ROUTE_WAREHOUSE].snap;
	struct trigger_snap *lh = &o->p[ROUTE_LAKEHOUSE].snap;

	o->p[ROUTE_WAREHOUSE].known = o->p[ROUTE_LAKEHOUSE].known = true;
	memset(wh, 0, sizeof(*wh));
	memset(lh, 0, sizeof(*lh));
	wh->has = lh->has = wh->has_total = lh->has_total = true;
	wh->id = 11;
	lh->id = 22;
	wh->ts_ms = wh_ts;
	lh->ts_ms = lh_ts;
	wh->total_records = wh_rows;
	lh->total_records = lh_rows;
}

/*
 * A finished poll cycle: the lakehouse too far behind fires freshness; a
 * row count mismatch is recorded in the ledger and fires reconcile; an
 * object a side could not read is left alone.
 */
static void
test_cycle(void **state)
{
	struct fx *fx = *state;
	int64_t now = units_now_ms();
	struct watch_obj *o;
	json_t *st, *dark;

	put_route(fx, "db.late", 6);
	put_route(fx, "db.short", 7);
	put_route(fx, "db.dark", 8);
	put_route(fx, "db.home", 9);
	force_wave(fx, 6, WAVE_LAKEHOUSE, 0, 0);
	force_wave(fx, 7, WAVE_LAKEHOUSE, 0, 0);
	force_wave(fx, 8, WAVE_CANARY, 0, 0);
	force_wave(fx, 9, WAVE_WAREHOUSE, 0, 0);
	watch_rebuild(fx->w);
	assert_int_equal(fx->w->nobjs, 3); /* not db.home */
	snaps(find_obj(fx, "db.late"), now, 5, now - 2 * 60 * 1000, 5);
	snaps(find_obj(fx, "db.short"), now - 1000, 10, now, 9);

	capture_begin(fx);
	watch_cycle_end(fx->w);
	assert_int_equal(capture_end(fx, "rolled back"), 2);
	assert_int_equal(fx->w->cycles, 1);
	assert_int_equal(wave_state(fx, 6), WAVE_ROLLED_BACK);
	assert_int_equal(wave_state(fx, 7), WAVE_ROLLED_BACK);
	assert_int_equal(wave_state(fx, 8), WAVE_CANARY);
	assert_int_equal(fx->w->rollbacks, 2);
	o = find_obj(fx, "db.short");
	assert_int_equal(o->count, TRIGGER_COUNT_MISMATCH);
	/* Recorded, then forgotten by the rollback: a new flip counts. */
	assert_false(o->recorded);
	o = find_obj(fx, "db.dark");
	assert_int_equal(o->count, TRIGGER_COUNT_UNKNOWN);
	assert_string_equal(o->count_why, "a side could not be read");

	st = watch_status_json(fx->w);
	assert_int_equal(json_integer_value(json_object_get(st, "rollbacks")),
	    2);
	dark = json_object_get(json_object_get(json_object_get(st, "freshness"),
				   "objects"),
	    "db.dark");
	assert_string_equal(json_string_value(json_object_get(dark, "state")),
	    "unknown: warehouse not read yet, lakehouse not read yet");
	json_decref(st);

	/* Both rolled back: the next cycle moves nothing. */
	watch_cycle_end(fx->w);
	assert_int_equal(fx->w->rollbacks, 2);
	{
		json_t *all = rlog_lines(fx);
		const char *reason;

		assert_int_equal(json_array_size(all), 2);
		assert_string_equal(json_string_value(
					json_object_get(json_array_get(all, 0),
					    "trigger")),
		    "freshness");
		assert_string_equal(json_string_value(
					json_object_get(json_array_get(all, 1),
					    "trigger")),
		    "reconcile");
		reason = json_string_value(
		    json_object_get(json_array_get(all, 1), "reason"));
		assert_non_null(strstr(reason, "db.short: ledger record"));
		assert_non_null(strstr(reason, "source metadata"));
		json_decref(all);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_errors_rollback, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_errors_min_requests, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_errors_frozen, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_reconcile, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_report_errors, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cycle, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
