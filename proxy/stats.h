/*
 * floe: stats.h -- the counters of floe's answers (all of them, the ones
 * floe made itself, and per catalog) and the registry of the parts of GET
 * /status and GET /metrics. A module with something to show adds its part
 * here; the admin API only reads the whole. Owns the counters and the
 * list of parts (with copies of their keys); borrows each part's argument,
 * which must live until stats_remove or stats_clear. Embedded in struct
 * floe; all zeros is an empty registry. Loop thread only.
 */
#ifndef FLOE_PROXY_STATS_H
#define FLOE_PROXY_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "routing/route.h"

struct evbuffer;
struct stats_part;
typedef struct json_t json_t;

/*
 * The latency histograms' upper bounds in seconds (Prometheus's le), the
 * last one +Inf; and the status codes counted one by one (100..599).
 */
#define STATS_NBUCKETS 15
#define STATS_CODE_MIN 100
#define STATS_NCODES 500
/* Who answered, for the counters by side: a catalog, or floe itself. */
#define STATS_FLOE ROUTE_NSIDES
#define STATS_NSIDES (ROUTE_NSIDES + 1)

/* One latency histogram: per-bucket counts (not cumulative), the sum. */
struct stats_hist {
	uint64_t bucket[STATS_NBUCKETS];
	uint64_t count;
	double sum; /* seconds */
};

/* Counters per catalog, bumped by the request path. */
struct stats_side {
	uint64_t requests;
	uint64_t errors_5xx; /* 5xx answered by the upstream */
	uint64_t failures; /* floe's own 502/504: connect, timeout, garbage */
	uint64_t not_modified;
	/* LoadTable answers equal to the last one checked: not checked */
	uint64_t memo_hits;
};

/*
 * A part of GET /status: the value of its key (caller frees), or NULL to
 * leave the key out. A part added without a key returns an object whose
 * members go to the top level.
 */
typedef json_t *(*stats_status_cb)(void *arg);
/* A part of GET /metrics: its families as Prometheus text, added to OUT. */
typedef void (*stats_metrics_cb)(struct evbuffer *out, void *arg);

struct stats {
	uint64_t requests; /* answered by floe, any status */
	uint64_t local_errors; /* ErrorModel answers floe made itself */
	uint64_t refused_full; /* 503s: over the output budget */
	struct stats_side side[ROUTE_NSIDES];
	/* Answers by side (STATS_FLOE: floe's own) and status code. */
	uint64_t codes[STATS_NSIDES][STATS_NCODES];
	struct stats_hist duration[STATS_NSIDES]; /* whole requests */
	struct stats_hist upstream[ROUTE_NSIDES]; /* the catalog's part */
	/* The parts, in the order they were added: stats.c's own. */
	struct stats_part *parts;
	size_t nparts;
	size_t cap;
	/*
	 * Called before GET /status or /metrics is built (NULL: none): a
	 * master sums its workers' counters into these here.
	 */
	void (*refresh)(void *arg);
	void *refresh_arg;
};

/* The counters: the first bytes of struct stats, up to its parts. */
#define STATS_COUNTERS_SIZE offsetof(struct stats, parts)

/* Add a part of GET /status under KEY (copied; NULL: the top level). */
void stats_add_status(struct stats *, const char *key, stats_status_cb,
    void *arg);
/* Add a part of GET /metrics. */
void stats_add_metrics(struct stats *, stats_metrics_cb, void *arg);
/* Drop every part whose argument is ARG (it is about to be freed). */
void stats_remove(struct stats *, const void *arg);
/* Drop every part; the counters stay. */
void stats_clear(struct stats *);

/*
 * One answer with STATUS by SIDE (a route_side, or STATS_FLOE) that took
 * US microseconds, UPSTREAM_US of them waiting for the catalog (-1: none
 * asked). O(1), no allocation.
 */
void stats_answer(struct stats *, unsigned side, unsigned status, int64_t us,
    int64_t upstream_us);
/*
 * The families of those counters, floe_requests_total{side,code} and the
 * two duration histograms, as Prometheus text added to OUT.
 */
void stats_requests_metrics(struct evbuffer *out, const struct stats *);

/* Zero ST's counters; add SRC's counters to DST's. */
void stats_counters_zero(struct stats *);
void stats_counters_add(struct stats *dst, const struct stats *src);

/* GET /status: every part in order. Caller frees; NULL if out of memory. */
json_t *stats_status_json(const struct stats *);
/*
 * The members KEYS (NULL-terminated) of GET /status, made as it makes
 * them (the refresh first), no other part asked: a part under one of
 * KEYS, and those members of the parts at the top level (KEYS NULL: all
 * of it, as stats_status_json). Caller frees; NULL if out of memory.
 */
json_t *stats_status_pick(const struct stats *, const char *const *keys);
/* GET /metrics: every part in order. Caller frees. */
char *stats_metrics_text(const struct stats *);

#endif
