/*
 * floe: trigger.h -- the rollback triggers as pure functions of the state
 * they are given and *now*: sliding-window error counters per wave and side
 * (fixed rings of buckets in a fixed table, allocation-free to count), the
 * error baseline, freshness lag bookkeeping per object ("held since"), the
 * metadata count check and the reconcile rule. Owns the counter table it
 * allocates; no timers, no I/O: proxy/watch.c drives it.
 */
#ifndef FLOE_POLICY_TRIGGER_H
#define FLOE_POLICY_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routing/ledger.h"
#include "routing/route.h"

/* Most buckets a window holds; wider windows get wider buckets. */
#define TRIGGER_MAX_BUCKETS 600
/* The narrowest bucket: one second. */
#define TRIGGER_MIN_WIDTH_MS 1000

enum trigger_kind {
	TRIGGER_RECONCILE = 0,
	TRIGGER_FRESHNESS = 1,
	TRIGGER_ERRORS = 2,
};
#define TRIGGER_NKINDS 3

/* What a trigger that fires does to a wave in state S. */
enum trigger_action {
	TRIGGER_NONE = 0, /* the wave is not watched in that state */
	TRIGGER_ROLLBACK = 1, /* canary, lakehouse: back to the warehouse */
	TRIGGER_PAGE = 2, /* frozen: page only, an operator decides */
};

/* "reconcile", "freshness", "errors". */
const char *trigger_name(enum trigger_kind);
/* The action for a wave in STATE (enum wave_state). */
enum trigger_action trigger_action_for(unsigned state);

/* The shape of the sliding window: N buckets of WIDTH_MS. */
struct trigger_window {
	int64_t width_ms;
	unsigned n;
};

/* Buckets of WINDOW_MS: 1 s wide, wider past TRIGGER_MAX_BUCKETS s. */
void trigger_window_init(struct trigger_window *, uint64_t window_ms);

/* One side's ring: requests and errors per bucket, with running sums. */
struct trigger_ring {
	int64_t head; /* bucket number of the newest bucket; -1: empty */
	uint64_t req_sum;
	uint64_t err_sum;
	uint32_t req[TRIGGER_MAX_BUCKETS];
	uint32_t err[TRIGGER_MAX_BUCKETS];
};

/* One wave's counters: a ring per side. */
struct trigger_wave {
	uint32_t wave;
	bool used;
	struct trigger_ring side[ROUTE_NSIDES];
};

/*
 * The table of waves' counters: open addressing on the wave number, a
 * fixed capacity between grows. Counting never allocates: a wave that finds
 * no free slot is dropped and counted in DROPPED until trigger_table_grow
 * (called off the request path) makes room.
 */
struct trigger_table {
	struct trigger_window win;
	struct trigger_wave *slots;
	size_t cap; /* a power of two */
	size_t used;
	uint64_t dropped;
};

/* A table for windows of WINDOW_MS with room for CAP waves (rounded up). */
void trigger_table_init(struct trigger_table *, uint64_t window_ms, size_t cap);
void trigger_table_clear(struct trigger_table *);
/* The counters of WAVE, claiming a slot if CLAIM; NULL if none. */
struct trigger_wave *trigger_table_get(struct trigger_table *, uint32_t wave,
    bool claim);
/* Double the capacity when more than half is used. True if it grew. */
bool trigger_table_grow(struct trigger_table *);

/*
 * Count REQUESTS outcomes of which ERRORS failed at NOW_MS on one ring.
 * O(1) amortized, no allocation: buckets that slid out are zeroed as the
 * head moves. A NOW_MS older than the head counts into the head.
 */
void trigger_ring_add(const struct trigger_window *, struct trigger_ring *,
    int64_t now_ms, uint32_t requests, uint32_t errors);
/* The totals of the window ending at NOW_MS (slides the ring first). */
void trigger_ring_totals(const struct trigger_window *, struct trigger_ring *,
    int64_t now_ms, uint64_t *requests, uint64_t *errors);

/* The error trigger's parameters ([policy] error_*). */
struct trigger_error_params {
	double ratio; /* error_ratio */
	double floor; /* error_floor, 0..1 */
	uint32_t min_requests; /* error_min_requests */
};

/* The error trigger's judgement. */
struct trigger_error_verdict {
	bool fire;
	double baseline; /* the warehouse rate before the flip */
	double measured; /* the lakehouse rate now */
	double threshold; /* ratio x max(baseline, floor) */
	uint64_t requests; /* lakehouse requests in the window */
	uint64_t errors;
};

/*
 * Judge the lakehouse's LH_ERR of LH_REQ against the baseline BASE_ERR of
 * BASE_REQ (0 requests: a baseline of 0): it fires when the rate exceeds
 * ratio x max(baseline, floor) over at least min_requests requests.
 */
void trigger_errors(const struct trigger_error_params *, uint64_t base_req,
    uint64_t base_err, uint64_t lh_req, uint64_t lh_err,
    struct trigger_error_verdict *);

/* The current snapshot of a table on one side, from its LoadTable answer. */
struct trigger_snap {
	bool has; /* a current snapshot exists */
	int64_t id;
	int64_t ts_ms; /* its timestamp-ms */
	bool has_total; /* its summary has total-records */
	int64_t total_records;
	int64_t position_deletes; /* total-position-deletes, 0 if absent */
	int64_t equality_deletes; /* total-equality-deletes, 0 if absent */
};

/*
 * Read the current snapshot out of a LoadTableResult (BODY, LEN bytes).
 * 0, or -1 if it is not one (ERR says why).
 */
int trigger_snap_parse(const char *body, size_t len, struct trigger_snap *,
    char *err, size_t errlen);

/* What a freshness sample says. */
enum trigger_lag {
	TRIGGER_LAG_KNOWN = 0, /* LAG_MS is measured */
	TRIGGER_LAG_UNKNOWN = 1, /* a side could not be read */
	TRIGGER_LAG_EMPTY = 2, /* the lakehouse has no snapshot, the
				  warehouse has: behind by everything */
};

/*
 * The lag of the lakehouse behind the warehouse from both current
 * snapshots (warehouse time - lakehouse time). A warehouse table without a
 * snapshot has nothing to be behind of: lag 0.
 */
enum trigger_lag trigger_lag_of(const struct trigger_snap *wh,
    const struct trigger_snap *lh, int64_t *lag_ms);

/* Freshness bookkeeping of one object. */
struct trigger_fresh {
	int64_t held_since_ms; /* first sample of the run above max; 0: none */
	int64_t last_ms; /* when the last sample was taken */
	enum trigger_lag kind; /* of the last sample */
	int64_t lag_ms; /* of the last known sample */
};

/* The freshness trigger's parameters ([policy] freshness_*). */
struct trigger_fresh_params {
	int64_t max_lag_ms;
	int64_t for_ms;
};

/*
 * Feed one sample taken at NOW_MS. A known lag above max_lag (or an empty
 * lakehouse) starts or continues the run; a known lag within it breaks
 * the run; an unknown sample neither starts nor breaks it. True when the
 * run has lasted for_ms at a sample above max_lag; *HELD_MS says how long.
 */
bool trigger_fresh_sample(struct trigger_fresh *,
    const struct trigger_fresh_params *, enum trigger_lag, int64_t lag_ms,
    int64_t now_ms, int64_t *held_ms);

/* The outcome of the metadata count check. */
enum trigger_count {
	TRIGGER_COUNT_UNKNOWN = 0, /* the counts say nothing: see WHY */
	TRIGGER_COUNT_MATCH = 1,
	TRIGGER_COUNT_MISMATCH = 2,
};

/*
 * Compare total-records of both current snapshots. Only when both carry
 * it, the lakehouse snapshot is at least as new as the warehouse one and
 * neither side has delete files; otherwise UNKNOWN with *WHY set.
 */
enum trigger_count trigger_count_check(const struct trigger_snap *wh,
    const struct trigger_snap *lh, const char **why);
/* "unknown", "match", "mismatch". */
const char *trigger_count_name(enum trigger_count);

/*
 * The reconcile trigger: REC, for an object of a wave in STATE flipped
 * at FLIPPED_MS, is dated after the flip and neither clean nor stale.
 */
bool trigger_reconcile(const struct ledger_rec *, unsigned state,
    int64_t flipped_ms);

#endif
