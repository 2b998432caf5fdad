/*
 * floe: workers.c -- the memory a master and its workers share: its
 * creation and mapping, a worker's counts into its own slot, the master's
 * consistent read of a slot, and the cache's write generations.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "lib/compat.h"
#include "proxy/stats.h"
#include "proxy/workers.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static size_t workers_size(unsigned);
static uint64_t workers_hash(const void *, size_t);

static size_t
workers_size(unsigned n)
{
	return offsetof(struct workers, slot) +
	    (size_t)n * sizeof(struct workers_slot);
}

/* Master: a region for N slots, zeroed. */
struct workers *
workers_create(unsigned n, int *fd)
{
	struct workers *w;
	size_t len = workers_size(n);
	int e;

	if ((*fd = memfd_create("floe-workers", MFD_CLOEXEC)) == -1)
		return NULL;
	if (ftruncate(*fd, (off_t)len) == -1 ||
	    (w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0)) ==
		MAP_FAILED) {
		e = errno;
		close(*fd);
		*fd = -1;
		errno = e;
		return NULL;
	}
	w->n = n;
	return w;
}

/* Worker: map the region the master made (its size from its header). */
struct workers *
workers_attach(int fd)
{
	struct workers *w;
	struct stat st;
	int e;

	if (fstat(fd, &st) == -1)
		goto fail;
	if ((size_t)st.st_size < offsetof(struct workers, slot)) {
		errno = EINVAL;
		goto fail;
	}
	w = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0);
	if (w == MAP_FAILED)
		goto fail;
	if ((size_t)st.st_size < workers_size(w->n)) {
		munmap(w, (size_t)st.st_size);
		errno = EINVAL;
		goto fail;
	}
	close(fd);
	return w;
fail:
	e = errno;
	close(fd);
	errno = e;
	return NULL;
}

void
workers_free(struct workers *w)
{
	if (w != NULL)
		munmap(w, workers_size(w->n));
}

/* A worker's table read of WAVE: its slot's counters, no lock. */
void
workers_count(struct workers_slot *s, uint32_t wave, unsigned state,
    enum route_side side, bool bad)
{
	struct workers_wave *e;
	uint32_t key = wave + 1, i, at;

	for (i = 0; i < WORKERS_WAVES; i++) {
		at = (wave + i) % WORKERS_WAVES;
		e = &s->waves[at];
		if (e->wave1 == key)
			break;
		if (e->wave1 == 0) {
			/* The state first: the master reads it once it sees the
			 * key. */
			STORE(&e->state, state);
			__atomic_store_n(&e->wave1, key, __ATOMIC_RELEASE);
			break;
		}
	}
	if (i == WORKERS_WAVES) {
		STORE(&s->waves_lost, s->waves_lost + 1);
		return;
	}
	STORE(&e->state, state);
	STORE(&e->reads[side], e->reads[side] + 1);
	if (bad)
		STORE(&e->errors[side], e->errors[side] + 1);
}

/* A worker's tick: its counters into its slot, under the sequence. */
void
workers_publish(struct workers_slot *s, const struct stats *st,
    const struct cache_stats *cs, const struct memo_stats *ms, unsigned conns,
    size_t held)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(s->counters, st, STATS_COUNTERS_SIZE);
	s->cache = *cs;
	s->memo = *ms;
	s->conns = conns;
	s->held = held;
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

/* The master: slot I's counters, read while no copy was being written. */
bool
workers_read(const struct workers *w, unsigned i, struct stats *st,
    struct cache_stats *cs, struct memo_stats *ms, uint64_t *conns,
    uint64_t *held)
{
	const struct workers_slot *s = &w->slot[i];
	uint64_t a, b;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		a = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (a & 1)
			continue;
		memcpy(st, s->counters, STATS_COUNTERS_SIZE);
		*cs = s->cache;
		*ms = s->memo;
		*conns = s->conns;
		*held = s->held;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		b = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
		if (a == b)
			return true;
	}
	return false;
}

/* A worker queues sightings; single writer of head. */
size_t
workers_sights_put(struct workers_slot *s, const struct readers_item *in,
    size_t n)
{
	uint32_t head = s->sights_head,
		 tail = __atomic_load_n(&s->sights_tail, __ATOMIC_ACQUIRE);
	size_t k;

	for (k = 0; k < n && head - tail < WORKERS_SIGHTS; k++, head++)
		s->sights[head % WORKERS_SIGHTS] = in[k];
	__atomic_store_n(&s->sights_head, head, __ATOMIC_RELEASE);
	return k;
}

/* The master reads what slot I queued, without taking it. */
size_t
workers_sights_peek(const struct workers *w, unsigned i,
    struct readers_item *out, size_t max)
{
	const struct workers_slot *s = &w->slot[i];
	uint32_t head = __atomic_load_n(&s->sights_head, __ATOMIC_ACQUIRE),
		 tail = s->sights_tail;
	size_t k;

	for (k = 0; k < max && tail != head; k++, tail++)
		out[k] = s->sights[tail % WORKERS_SIGHTS];
	return k;
}

/* The master took N of slot I's sightings: their room is free. */
void
workers_sights_done(struct workers *w, unsigned i, size_t n)
{
	struct workers_slot *s = &w->slot[i];

	__atomic_store_n(&s->sights_tail, s->sights_tail + (uint32_t)n,
	    __ATOMIC_RELEASE);
}

/* FNV-1a of the object's key. */
static uint64_t
workers_hash(const void *p, size_t len)
{
	const unsigned char *c = p;
	uint64_t h = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= c[i];
		h *= 1099511628211ULL;
	}
	return h;
}

uint64_t
workers_objgen(const struct workers *w, const void *obj, size_t len)
{
	return __atomic_load_n(&w->gen_all, __ATOMIC_ACQUIRE) +
	    __atomic_load_n(&w->objgen[workers_hash(obj, len) % WORKERS_OBJGEN],
		__ATOMIC_ACQUIRE);
}

void
workers_objgen_bump(struct workers *w, const void *obj, size_t len)
{
	(void)__atomic_add_fetch(&w->objgen[workers_hash(obj, len) %
				     WORKERS_OBJGEN],
	    1, __ATOMIC_RELEASE);
}

void
workers_objgen_bump_all(struct workers *w)
{
	(void)__atomic_add_fetch(&w->gen_all, 1, __ATOMIC_RELEASE);
}
