/*
 * floe: watch.h -- the rollback triggers at work: counts each table read's
 * outcome per wave and side (O(1), no allocation, no syscall), checks the
 * error trigger when a lakehouse read fails and every second, polls both
 * catalogs for the current snapshots of the objects of moved waves every
 * freshness_interval (freshness lag and the metadata count check), runs
 * the reconcile trigger on ledger records as they are committed, and when
 * a trigger fires moves the wave back (wave_rollback; its rollback log
 * line kept pending, then written by the worker's child when it is idle:
 * watch_rlog_write) and pages the webhook, retrying off the critical
 * path. Owns the counter table, its timers, its fetch requests and the
 * pages in flight. Loop thread only.
 */
#ifndef FLOE_PROXY_WATCH_H
#define FLOE_PROXY_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routing/route.h"

struct floe;
struct watch;
struct store_kv;
struct store_wave;
struct wave_baseline;
typedef struct json_t json_t;

/*
 * Write the rollback log's pending lines in a child of F's worker, when
 * it is idle: the loop's log is held meanwhile, and DONE(ARG, E) runs on
 * the loop once the child is gone, E 0 or the errno of the failure (-1:
 * no outcome; the lines stay pending for the tick). false, and nothing
 * started, when there is no worker (or a cluster), or it is busy.
 */
bool watch_rlog_write(struct floe *, void (*done)(void *arg, int e), void *arg);
/* Start watching for F (its base, conf, store and fetch must exist). */
struct watch *watch_new(struct floe *);
/* Cancel timers, polls and pages in flight, and free. Accepts NULL. */
void watch_free(struct watch *);
/* The policy may have changed (SIGHUP): windows and intervals anew. */
void watch_reload(struct watch *);

/*
 * The request path: one table read of WAVE (in STATE, enum wave_state)
 * answered by SIDE; BAD for a 5xx, a timeout or a connect failure (4xx
 * are the client's). O(1), never allocates, never calls the kernel.
 */
void watch_count(struct watch *, uint32_t wave, unsigned state,
    enum route_side side, bool bad);
/* N such reads at once, BAD of them failed (what workers counted). */
void watch_count_n(struct watch *, uint32_t wave, unsigned state,
    enum route_side side, uint32_t n, uint32_t bad);

/*
 * The baseline for a flip of wave N now: its warehouse reads over
 * error_window. Zeros if W is NULL.
 */
void watch_baseline(struct watch *, uint32_t n, struct wave_baseline *);

/*
 * Ledger records KV[0..N) were just committed: run the reconcile trigger
 * on them, before the POST that brought them is answered.
 */
void watch_ledger_added(struct floe *, const struct store_kv *kv, size_t n);

/*
 * Errors that consumers report for wave N: ERRORS of TOTAL reads on SIDE
 * (-1: the side the wave reads from). Counted, and the error trigger is
 * checked at once. The wave's window afterwards as JSON (caller frees), or
 * NULL with MSG if the wave cannot be read.
 */
json_t *watch_report_errors(struct floe *, uint32_t n, int side,
    uint64_t errors, uint64_t total, char *msg, size_t msglen);

/* What the status page shows of a wave's triggers (watch_wave_view). */
struct watch_view {
	bool armed; /* its triggers run: canary, lakehouse, frozen */
	uint64_t requests; /* lakehouse reads over error_window */
	uint64_t errors;
	double ratio; /* errors / requests; 0 without reads */
	double threshold; /* the error trigger's limit for RATIO */
	double baseline; /* the warehouse ratio before the flip */
	uint32_t min_requests; /* reads needed before it may fire */
	bool lag_known;
	int64_t lag_ms; /* the worst known freshness lag of its objects */
	int64_t max_lag_ms; /* freshness_max_lag */
	unsigned objects; /* of it, polled */
	unsigned objects_unknown; /* whose lag is not known */
};

/* The triggers' view of wave SW into V. 0, or -1 if W is NULL. */
int watch_wave_view(struct watch *, const struct store_wave *,
    struct watch_view *);

/*
 * The rollbacks the triggers made since the last call, for whoever caused
 * them (the admin answer to a ledger write or an error report): a JSON
 * array of {"wave","trigger","from","measured","threshold","evidence",
 * "reason"}, values exact and "evidence" rounded for people; NULL if
 * none (and if W is NULL). Caller frees. A caller that acts for someone
 * takes first to start clean, then again after acting.
 */
json_t *watch_fired_take(struct watch *);

/* The triggers' state for GET /status. Caller frees. */
json_t *watch_status_json(struct watch *);

#endif
