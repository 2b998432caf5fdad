/*
 * floe: inventory.c -- the reader inventory's life in the daemon: its
 * table, the request path's note, the flushes to the store in batches
 * (timer, or soon after a quarter of the table waits), the hourly prune
 * and its parts of GET /status and GET /metrics.
 */
#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/readers.h"
#include "proxy/cluster.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/inventory.h"
#include "proxy/stats.h"
#include "proxy/worker.h"
#include "proxy/workers.h"
#include "routing/store.h"

#define INVENTORY_PRUNE_MS (3600LL * 1000)
/* A worker hands its sightings to its master this often. */
#define INVENTORY_WORKER_FLUSH_MS 1000

struct inventory {
	struct floe *f;
	struct readers *t;
	struct event *timer; /* every INVENTORY_FLUSH_MS */
	struct event *soon; /* a batch soon: armed by the request path */
	bool soon_pending;
	struct readers_item *items; /* INVENTORY_BATCH */
	struct store_reader_in *in; /* INVENTORY_BATCH */
	uint64_t failures;
	uint64_t flushed; /* records written */
	int64_t last_flush_ms;
	int64_t last_prune_ms;
	uint64_t pruned;
};

static void inventory_timer_cb(evutil_socket_t, short, void *);
static void inventory_soon_cb(evutil_socket_t, short, void *);
static int inventory_in_cmp(const void *, const void *);
static json_t *inventory_status_cb(void *);
static void inventory_metrics_cb(struct evbuffer *, void *);
static void inventory_prune(struct inventory *, int64_t);
static int inventory_flush_some(struct inventory *, size_t);
static void inventory_soon(struct inventory *);
static int inventory_to_master(struct inventory *);
static bool inventory_offload(const struct inventory *);
static void inventory_flush_later(struct inventory *);
static void inventory_job_done(void *, struct evbuffer *, const char *);
static ssize_t inventory_decode(const unsigned char **, const unsigned char *,
    struct store_reader_in *, size_t);

/*
 * A flush made by a job helper: the sightings taken from the table
 * (given back if the helper cannot store them).
 */
struct inventory_job {
	struct inventory *inv;
	struct readers_item *items;
	size_t n;
};

/* The memory held: the table and the two flush buffers. */
size_t
inventory_bytes(void)
{
	return readers_bytes(READERS_CAP) + sizeof(struct inventory) +
	    INVENTORY_BATCH *
	    (sizeof(struct readers_item) + sizeof(struct store_reader_in));
}

/* Start the inventory. */
struct inventory *
inventory_new(struct floe *f)
{
	struct inventory *inv = xcalloc(1, sizeof(*inv));
	struct timeval tv = units_ms_tv(
	    f->wslot != NULL ? INVENTORY_WORKER_FLUSH_MS : INVENTORY_FLUSH_MS);

	inv->f = f;
	inv->t = readers_new(READERS_CAP);
	inv->items = xcalloc(INVENTORY_BATCH, sizeof(*inv->items));
	inv->in = xcalloc(INVENTORY_BATCH, sizeof(*inv->in));
	inv->timer =
	    event_new(f->base, -1, EV_PERSIST, inventory_timer_cb, inv);
	inv->soon = event_new(f->base, -1, 0, inventory_soon_cb, inv);
	if (inv->timer == NULL || inv->soon == NULL)
		fatalx("%s: out of memory", __func__);
	evtimer_add(inv->timer, &tv);
	inv->last_prune_ms = units_now_ms();
	stats_add_status(&f->stats, "readers", inventory_status_cb, inv);
	stats_add_metrics(&f->stats, inventory_metrics_cb, inv);
	return inv;
}

/* Flush what is left and free. */
void
inventory_free(struct inventory *inv)
{
	if (inv == NULL)
		return;
	/* The worker is gone: its jobs gave back what they held. */
	if (readers_dirty(inv->t) > 0 &&
	    inventory_flush_some(inv, SIZE_MAX) == -1)
		log_warnx("%s: %zu reader records could not be stored",
		    __func__, readers_dirty(inv->t));
	stats_remove(&inv->f->stats, inv);
	event_free(inv->timer);
	event_free(inv->soon);
	readers_free(inv->t);
	free(inv->items);
	free(inv->in);
	free(inv);
}

/* A load, noted in memory. */
void
inventory_note(struct inventory *inv, const struct route_obj *obj,
    enum route_side side, const struct readers_who *who, const char *ua,
    size_t ualen, bool oldtag)
{
	if (inv == NULL)
		return;
	readers_see(inv->t, obj, side, who, ua, ualen, oldtag, units_now_ms());
	/* Flush before new readers would push out sightings not stored. */
	if (!inv->soon_pending && readers_dirty(inv->t) >= READERS_CAP / 4)
		inventory_soon(inv);
}

/* Order a batch by key: one txn touches each page once. */
static int
inventory_in_cmp(const void *a, const void *b)
{
	const struct store_reader_in *x = a, *y = b;

	return store_key_cmp(x->key, x->keylen, y->key, y->keylen);
}

/* Everything noted, into the store. */
int
inventory_flush(struct inventory *inv)
{
	if (inv != NULL && inventory_offload(inv)) {
		inventory_flush_later(inv);
		return 0;
	}
	/* A master: what its workers queued first (it all goes to the store).
	 */
	if (inv != NULL && inv->f->workers != NULL && inv->f->wslot == NULL)
		(void)inventory_from_workers(inv, inv->f->workers);
	return inventory_flush_some(inv, SIZE_MAX);
}

/*
 * What was noted into the store, INVENTORY_BATCH records per synced txn,
 * at most MAX txns. 0, or -1 if the store is not open or failed.
 */
static int
inventory_flush_some(struct inventory *inv, size_t max)
{
	size_t n, i, txns = 0;

	if (inv != NULL && inv->f->wslot != NULL)
		return inventory_to_master(inv);
	if (inv == NULL || inv->f->store == NULL)
		return -1;
	while (txns++ < max &&
	    (n = readers_take(inv->t, inv->items, INVENTORY_BATCH)) > 0) {
		for (i = 0; i < n; i++) {
			inv->in[i].key = inv->items[i].key;
			inv->in[i].keylen = inv->items[i].keylen;
			inv->in[i].r = inv->items[i].r;
		}
		qsort(inv->in, n, sizeof(*inv->in), inventory_in_cmp);
		if (store_readers_add(inv->f->store, inv->in, n) != STORE_OK) {
			readers_give_back(inv->t, inv->items, n);
			inv->failures++;
			return -1;
		}
		inv->flushed += n;
		/* Cluster mode: the other nodes' gates see them too. */
		cluster_readers_publish(inv->f->cluster, inv->in, n);
	}
	inv->last_flush_ms = units_now_ms();
	return 0;
}

/*
 * Whether the flushes are job helpers': a write txn begun on the
 * loop would hold every engine request while another process holds the
 * store's writer lock (an import's child, a tool), and a synced commit
 * costs the loop milliseconds. Not in cluster mode (the loop publishes
 * what it stores) nor with workers = N (the loop reads their rings).
 */
static bool
inventory_offload(const struct inventory *inv)
{
	const struct floe *f = inv->f;

	return f->worker != NULL && f->store != NULL && f->cluster == NULL &&
	    f->workers == NULL && f->wslot == NULL;
}

/*
 * Hand everything noted to a job helper: the state directory (its string
 * and NUL), then each sighting as store_reader_wire writes it. Jobs run in
 * the order queued: an admin job queued after this one reads what it
 * stored.
 */
static void
inventory_flush_later(struct inventory *inv)
{
	struct inventory_job *j = xcalloc(1, sizeof(*j));
	const char *dir = inv->f->conf->state_dir;
	unsigned char wire[STORE_READER_WIRE_MAX];
	struct store_reader_in s;
	struct evbuffer *b;
	size_t cap = 0, k, n;

	j->inv = inv;
	do {
		if (cap - j->n < INVENTORY_BATCH) {
			cap += INVENTORY_BATCH;
			j->items =
			    xreallocarray(j->items, cap, sizeof(*j->items));
		}
		k = readers_take(inv->t, j->items + j->n, INVENTORY_BATCH);
		j->n += k;
	} while (k > 0);
	if (j->n == 0) {
		free(j->items);
		free(j);
		inv->last_flush_ms = units_now_ms();
		return;
	}
	if ((b = evbuffer_new()) == NULL ||
	    evbuffer_add(b, dir, strlen(dir) + 1) == -1)
		fatalx("%s: out of memory", __func__);
	for (k = 0; k < j->n; k++) {
		s.key = j->items[k].key;
		s.keylen = j->items[k].keylen;
		s.r = j->items[k].r;
		/* A reader's key is never empty nor past READERS_KEY_MAX. */
		if ((n = store_reader_wire(&s, wire)) == 0 ||
		    evbuffer_add(b, wire, n) == -1)
			fatalx("%s: a sighting of %zu bytes", __func__,
			    s.keylen);
	}
	worker_send(inv->f->worker, INVENTORY_JOB, b, inventory_job_done, j);
}

/*
 * Up to MAX of the sightings inventory_flush_later sent, from *P on (END
 * past the last), into IN, their keys borrowed; *P moved past them. How
 * many, or -1 if one is cut short or has a key no reader has.
 */
static ssize_t
inventory_decode(const unsigned char **p, const unsigned char *end,
    struct store_reader_in *in, size_t max)
{
	size_t k, n;

	for (k = 0; k < max && *p < end; k++) {
		if ((n = store_reader_unwire(*p, (size_t)(end - *p), &in[k])) ==
			0 ||
		    in[k].keylen == 0 || in[k].keylen > READERS_KEY_MAX)
			return -1;
		*p += n;
	}
	return (ssize_t)k;
}

/*
 * In a job helper: store the sightings inventory_flush_later sent,
 * INVENTORY_BATCH per synced txn, in their order (the loop gives back
 * those after the first txn that failed); answer how many were stored
 * (uint64_t).
 */
void
inventory_serve(const void *buf, size_t len, struct evbuffer *out)
{
	const unsigned char *p = buf, *end = p + len, *nul;
	struct store_reader_in *in = NULL;
	struct store *st = NULL;
	uint64_t stored = 0;
	char err[512];
	ssize_t k;

	if ((nul = memchr(p, '\0', len)) == NULL) {
		log_warnx("%s: no state directory", __func__);
		goto out;
	}
	if ((st = store_open((const char *)p, err, sizeof(err))) == NULL) {
		log_warnx("%s: %s", __func__, err);
		goto out;
	}
	in = xcalloc(INVENTORY_BATCH, sizeof(*in));
	for (p = nul + 1; p < end;) {
		if ((k = inventory_decode(&p, end, in, INVENTORY_BATCH)) ==
		    -1) {
			log_warnx("%s: a sighting cut short", __func__);
			break;
		}
		qsort(in, (size_t)k, sizeof(*in), inventory_in_cmp);
		if (store_readers_add(st, in, (size_t)k) != STORE_OK) {
			log_warnx("%s: %llu sightings stored, the rest not",
			    __func__, (unsigned long long)stored);
			break;
		}
		stored += (uint64_t)k;
	}
out:
	free(in);
	store_free(st);
	evbuffer_add(out, &stored, sizeof(stored));
}

/* On the loop: what the helper could not store waits for the next flush. */
static void
inventory_job_done(void *arg, struct evbuffer *out, const char *status)
{
	struct inventory_job *j = arg;
	struct inventory *inv = j->inv;
	uint64_t n = 0;

	if (status != NULL ||
	    evbuffer_remove(out, &n, sizeof(n)) != (int)sizeof(n) || n > j->n)
		n = 0;
	if (n < j->n) {
		readers_give_back(inv->t, j->items + n, j->n - n);
		inv->failures++;
	}
	inv->flushed += n;
	inv->last_flush_ms = units_now_ms();
	free(j->items);
	free(j);
}

/*
 * A worker: what was noted goes to its master through the shared ring
 * (the master alone writes the store). -1 when the ring is full (the
 * rest waits for the next flush).
 */
static int
inventory_to_master(struct inventory *inv)
{
	size_t n, k;

	while ((n = readers_take(inv->t, inv->items, INVENTORY_BATCH)) > 0) {
		k = workers_sights_put(inv->f->wslot, inv->items, n);
		inv->flushed += k;
		if (k < n) {
			readers_give_back(inv->t, inv->items + k, n - k);
			return -1;
		}
	}
	inv->last_flush_ms = units_now_ms();
	return 0;
}

/*
 * The master: the sightings each worker queued, into the store in one
 * txn per worker's batch. Those a failed txn held stay queued. 0, or -1.
 */
int
inventory_from_workers(struct inventory *inv, struct workers *w)
{
	size_t n, i;
	unsigned s;

	if (inv == NULL || inv->f->store == NULL)
		return -1;
	for (s = 0; s < w->n; s++) {
		while ((n = workers_sights_peek(w, s, inv->items,
			    WORKERS_SIGHTS)) > 0) {
			for (i = 0; i < n; i++) {
				inv->in[i].key = inv->items[i].key;
				inv->in[i].keylen = inv->items[i].keylen;
				inv->in[i].r = inv->items[i].r;
			}
			qsort(inv->in, n, sizeof(*inv->in), inventory_in_cmp);
			if (store_readers_add(inv->f->store, inv->in, n) !=
			    STORE_OK) {
				inv->failures++;
				return -1;
			}
			workers_sights_done(w, s, n);
			inv->flushed += n;
		}
	}
	return 0;
}

/* Prune the records idle past INVENTORY_KEEP_MS, once an hour. */
static void
inventory_prune(struct inventory *inv, int64_t now)
{
	size_t n = 0;

	if (now - inv->last_prune_ms < INVENTORY_PRUNE_MS ||
	    inv->f->store == NULL || inv->f->wslot != NULL)
		return;
	inv->last_prune_ms = now;
	if (store_readers_prune(inv->f->store, now - INVENTORY_KEEP_MS, &n) !=
	    STORE_OK)
		log_warnx("%s: pruning idle reader records failed", __func__);
	else if (n > 0) {
		inv->pruned += n;
		log_info("reader inventory: pruned %zu records idle for 90 "
			 "days",
		    n);
	}
}

/*
 * While a job of the worker's child (a bulk import) may hold the store's
 * writer lock, a write txn begun on the loop would wait for it, and every
 * engine request with it: the sightings wait for a later flush instead.
 */
static bool
inventory_store_busy(const struct inventory *inv)
{
	return worker_pending(inv->f->worker) > 0;
}

/* Every INVENTORY_FLUSH_MS. */
static void
inventory_timer_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct inventory *inv = arg;

	if (inventory_store_busy(inv))
		return;
	if (readers_dirty(inv->t) > 0)
		(void)inventory_flush(inv);
	inventory_prune(inv, units_now_ms());
}

/*
 * A quarter of the table waits: one batch on this loop turn's end, and
 * the next on the next turn while that many wait, so that requests run
 * between the synced txns.
 */
static void
inventory_soon_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct inventory *inv = arg;

	inv->soon_pending = false;
	if (inventory_store_busy(inv))
		return;
	if (inventory_offload(inv)) {
		inventory_flush_later(inv);
		return;
	}
	if (inventory_flush_some(inv, 1) == 0 &&
	    readers_dirty(inv->t) >= READERS_CAP / 4)
		inventory_soon(inv);
}

/*
 * Flush a batch soon: a timer of 0, which runs after the loop's next poll
 * for I/O, so that requests waiting run first.
 */
static void
inventory_soon(struct inventory *inv)
{
	struct timeval zero = { 0, 0 };

	inv->soon_pending = true;
	evtimer_add(inv->soon, &zero);
}

/* GET /status "readers": the bound and what the table did. */
static json_t *
inventory_status_cb(void *arg)
{
	struct inventory *inv = arg;
	struct readers_stats st;
	char ts[40];

	readers_stats(inv->t, &st);
	units_time_format(inv->last_flush_ms, ts, sizeof(ts));
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
	    "capacity", (json_int_t)st.cap, "entries", (json_int_t)st.used,
	    "bytes", (json_int_t)inventory_bytes(), "unflushed",
	    (json_int_t)st.dirty, "loads", (json_int_t)st.noted, "evicted",
	    (json_int_t)st.evicted, "evicted_unflushed",
	    (json_int_t)st.evicted_dirty, "too_long", (json_int_t)st.too_long,
	    "flushed", (json_int_t)inv->flushed, "flush_failures",
	    (json_int_t)inv->failures, "pruned", (json_int_t)inv->pruned,
	    "last_flush",
	    inv->last_flush_ms != 0 ? json_string(ts) : json_null());
}

/* GET /metrics: the table's size and its evictions. */
static void
inventory_metrics_cb(struct evbuffer *out, void *arg)
{
	struct inventory *inv = arg;
	struct readers_stats st;

	readers_stats(inv->t, &st);
	evbuffer_add_printf(out,
	    "# HELP floe_readers_entries Reader inventory entries in memory.\n"
	    "# TYPE floe_readers_entries gauge\n"
	    "floe_readers_entries %zu\n"
	    "# HELP floe_readers_capacity Reader inventory entries memory "
	    "holds at most.\n"
	    "# TYPE floe_readers_capacity gauge\n"
	    "floe_readers_capacity %zu\n"
	    "# HELP floe_readers_evicted_total Reader inventory entries "
	    "dropped for newer ones.\n"
	    "# TYPE floe_readers_evicted_total counter\n"
	    "floe_readers_evicted_total %llu\n"
	    "# HELP floe_readers_evicted_unflushed_total Of those, entries "
	    "whose last loads were not stored.\n"
	    "# TYPE floe_readers_evicted_unflushed_total counter\n"
	    "floe_readers_evicted_unflushed_total %llu\n",
	    st.used, st.cap, (unsigned long long)st.evicted,
	    (unsigned long long)st.evicted_dirty);
}
