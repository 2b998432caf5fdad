/*
 * floe: inventory.h -- the reader inventory at work: the request path
 * notes each table load (policy/readers.h: a hash and a store into
 * memory, never a syscall beyond the clock, never an allocation), a timer
 * flushes what was noted to the store's readers DBI in batches (sooner
 * when a quarter of the table waits), and the records long idle are
 * pruned. Owns the table, its timers and its flush buffers; shows its
 * bound and its evictions in /status. Loop thread only.
 */
#ifndef FLOE_PROXY_INVENTORY_H
#define FLOE_PROXY_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/readers.h"
#include "routing/route.h"

struct evbuffer;
struct floe;
struct inventory;
struct workers;

/* How often what was noted goes to the store. */
#define INVENTORY_FLUSH_MS 5000
/* Entries taken per store txn; the buffer is allocated once. */
#define INVENTORY_BATCH 1024
/* A record not loaded for this long is pruned (hourly). */
#define INVENTORY_KEEP_MS (90LL * 24 * 3600 * 1000)

/* Start the inventory of F (its base and stats must exist). */
struct inventory *inventory_new(struct floe *);
/* Flush what is left, stop the timers and free. Accepts NULL. */
void inventory_free(struct inventory *);
/*
 * The request path: a load of OBJ by WHO (policy/readers.h: a token is
 * kept as its hash, never raw) answered by SIDE, with its User-Agent UA
 * (may be NULL); OLDTAG: it revalidated with the other side's ETag.
 * Accepts a NULL inventory.
 */
void inventory_note(struct inventory *, const struct route_obj *obj,
    enum route_side side, const struct readers_who *who, const char *ua,
    size_t ualen, bool oldtag);
/*
 * Everything noted into the store now (an admin read wants it all).
 * 0, or -1 if the store is not open or failed (nothing is lost: the
 * sightings wait for the next flush), or INV is NULL.
 */
int inventory_flush(struct inventory *);
/*
 * workers = N: the master stores the sightings its workers queued
 * (a worker's own flushes queue them instead of writing the store).
 * 0, or -1 if the store is not open or failed (they stay queued).
 */
int inventory_from_workers(struct inventory *, struct workers *);
/* The memory the inventory holds: its table and its flush buffers. */
size_t inventory_bytes(void);
/*
 * A job helper: a flush's sightings (IN, LEN bytes) into the store; how
 * many were stored into OUT (uint64_t).
 */
#define INVENTORY_JOB 1 /* its kind */
void inventory_serve(const void *in, size_t len, struct evbuffer *out);

#endif
