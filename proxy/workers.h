/*
 * floe: workers.h -- the memory a master and its workers share (workers =
 * N > 1): one slot per worker, written by that worker alone (plain stores
 * and relaxed atomics, never a lock on the request path) and read by the
 * master on its tick; and the LoadTable cache's write generations, bumped
 * by any process and read by every worker on a lookup. The master
 * creates the region (a memfd, mapped shared) before it starts any worker;
 * each worker maps the descriptor it inherits across exec. Owns the
 * mapping. With workers = 1 there is no region and none of this runs.
 */
#ifndef FLOE_PROXY_WORKERS_H
#define FLOE_PROXY_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cache/cache.h"
#include "cache/memo.h"
#include "policy/readers.h"
#include "proxy/stats.h"
#include "routing/route.h"

/* Waves one worker counts for the error trigger (open addressing). */
#define WORKERS_WAVES 1024
/* Buckets of per-object write generations (a hash of the object). */
#define WORKERS_OBJGEN 4096
/* Reader sightings a worker queues for the master (a ring). */
#define WORKERS_SIGHTS 256
/* The longest floe.conf a master hands its workers. */
#define WORKERS_CONF_MAX (64 * 1024)
/* Room for the listen addresses the master resolved. */
#define WORKERS_ADDR_MAX 128

/* One wave's table reads counted by one worker (it alone writes). */
struct workers_wave {
	uint32_t wave1; /* the wave + 1; 0: free */
	uint32_t state; /* its state at the last read counted */
	uint64_t reads[ROUTE_NSIDES];
	uint64_t errors[ROUTE_NSIDES];
};

/* One worker's slot. */
struct workers_slot {
	/* Written by the master. */
	pid_t pid; /* 0: none running */
	uint32_t starts; /* times started */
	/* Written by the worker. */
	uint64_t seq; /* odd while the copy below is being written */
	uint8_t counters[STATS_COUNTERS_SIZE]; /* its struct stats' counters */
	struct cache_stats cache;
	struct memo_stats memo; /* its memo of checked answers */
	uint64_t conns; /* its open client connections */
	uint64_t held; /* bytes its answers hold */
	uint64_t waves_lost; /* reads of waves beyond WORKERS_WAVES */
	struct workers_wave waves[WORKERS_WAVES];
	/*
	 * Reader sightings, as the worker's inventory took them: the
	 * worker writes at head, the master reads at tail (counters that
	 * only grow; entry i is at i % WORKERS_SIGHTS).
	 */
	uint32_t sights_head;
	uint32_t sights_tail;
	struct readers_item sights[WORKERS_SIGHTS];
};

struct workers {
	uint32_t n; /* slots */
	char
	    listen[WORKERS_ADDR_MAX]; /* "host:port" as bound (port resolved) */
	char listen_plain[WORKERS_ADDR_MAX]; /* or "" */
	uint64_t gen_all; /* bumped by a write naming too many objects */
	/*
	 * TLS session tickets: the master's chain link of tk_hour, renewed
	 * each hour (tlsctx.h), taken by a worker as it starts.
	 */
	unsigned char tk_chain[32];
	uint64_t tk_hour;
	/*
	 * The text of the floe.conf the master runs (read at start, and at
	 * each reload it applied): a worker, started or reloaded, parses
	 * this, never the file, which may have changed since. conf_seq is
	 * odd while it is being written.
	 */
	uint64_t conf_seq;
	uint32_t conf_len;
	char conf[WORKERS_CONF_MAX];
	uint64_t objgen[WORKERS_OBJGEN];
	struct workers_slot slot[]; /* n of them */
};

/* Master: a region for N slots. Its descriptor goes in *FD. NULL: errno. */
struct workers *workers_create(unsigned n, int *fd);
/* Worker: map the region on FD (and close FD). NULL: errno. */
struct workers *workers_attach(int fd);
void workers_free(struct workers *);

/*
 * The request path of a worker: a table read of WAVE (in STATE) answered
 * by SIDE, BAD if it failed. O(1) expected, no allocation, no lock.
 */
void workers_count(struct workers_slot *, uint32_t wave, unsigned state,
    enum route_side side, bool bad);
/* The worker's tick: copy ST's counters and these figures to its slot. */
void workers_publish(struct workers_slot *, const struct stats *st,
    const struct cache_stats *cs, const struct memo_stats *ms, unsigned conns,
    size_t held);
/*
 * The master: the counters of slot I, copied consistently into ST's
 * counters (whole, or left alone if the worker kept writing).
 */
bool workers_read(const struct workers *, unsigned i, struct stats *st,
    struct cache_stats *cs, struct memo_stats *ms, uint64_t *conns,
    uint64_t *held);

/*
 * A worker: queue IN[0..N) for the master. How many were queued (the
 * rest did not fit: give them back and try again later).
 */
size_t workers_sights_put(struct workers_slot *, const struct readers_item *in,
    size_t n);
/*
 * The master: up to MAX sightings queued by slot I, copied to OUT, not
 * yet taken. Their number; workers_sights_done takes them.
 */
size_t workers_sights_peek(const struct workers *, unsigned i,
    struct readers_item *out, size_t max);
void workers_sights_done(struct workers *, unsigned i, size_t n);

/*
 * The LoadTable cache: the generation of object OBJ (the sum of its bucket
 * and gen_all), and a write's bump of it, seen by every process's next
 * lookup.
 */
uint64_t workers_objgen(const struct workers *, const void *obj, size_t len);
void workers_objgen_bump(struct workers *, const void *obj, size_t len);
void workers_objgen_bump_all(struct workers *);

#endif
