/*
 * floe: cache.h -- the LoadTable cache: answers as floe sent them, keyed by
 * everything that changes them, within a byte budget (least recently used
 * go first) and a time to live. Owns the entries, their bodies and the
 * counters. Pure: no I/O, no clock; callers pass now.
 *
 * Keys are opaque bytes whose first OBJLEN bytes name the object, so all
 * the answers for one object (both sides, every variant) can be dropped
 * at once. The caller builds keys so that anything that may change the
 * answer is in them: the side, the route version, the catalog config
 * generation, the request's variants and, where the answer may differ per
 * client, the client's identity.
 */
#ifndef FLOE_CACHE_CACHE_H
#define FLOE_CACHE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cache;

/* A cached answer. Valid until the next cache_put or cache_drop*. */
struct cache_entry {
	unsigned status;
	const char *headers; /* "Name: value\r\n" lines as sent */
	size_t hlen;
	const char *body;
	size_t len;
	const char *etag; /* floe's ETag as sent, "" without one */
	const char *up_etag; /* the upstream's, for revalidation, or "" */
	int64_t stored_ms; /* when stored or last revalidated */
};

struct cache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t revalidations; /* an expired entry confirmed by a 304 */
	uint64_t evictions; /* dropped for the byte budget */
	uint64_t expirations; /* dropped after the TTL without an ETag */
	uint64_t invalidations; /* dropped by a write or a config change */
	uint64_t bytes;
	uint64_t entries;
	uint64_t budget;
};

/* BUDGET bytes (0: the cache is off), entries live TTL_MS. */
struct cache *cache_new(uint64_t budget, uint64_t ttl_ms);
void cache_free(struct cache *);
bool cache_is_on(const struct cache *);
/* Change the budget and TTL (a reload); evicts down to the new budget. */
void cache_configure(struct cache *, uint64_t budget, uint64_t ttl_ms);

/*
 * Look KEY up and count a hit or a miss. NULL on a miss. *EXPIRED says the
 * entry is past its TTL: serve it only after revalidating it.
 */
const struct cache_entry *cache_get(struct cache *, const void *key,
    size_t keylen, int64_t now_ms, bool *expired);
/* The largest answer an entry may hold (0: the cache is off). */
size_t cache_entry_max(const struct cache *);
/* Look KEY up without counting and without expiring anything. */
const struct cache_entry *cache_peek(struct cache *, const void *key,
    size_t keylen);
/*
 * Store an answer under KEY (replacing one there); everything is copied.
 * An answer larger than an eighth of the budget is not stored.
 */
void cache_put(struct cache *, const void *key, size_t keylen, size_t objlen,
    const struct cache_entry *, int64_t now_ms);
/* An expired entry was confirmed by the upstream (304): it lives anew. */
void cache_renew(struct cache *, const void *key, size_t keylen,
    int64_t now_ms);
/* Drop KEY (expired and not revalidatable). */
void cache_drop(struct cache *, const void *key, size_t keylen);
/* Drop every answer for the object OBJ. Returns how many. */
unsigned cache_drop_object(struct cache *, const void *obj, size_t objlen);
/* Drop everything (a config change of a side, a reload). */
void cache_clear(struct cache *);
void cache_get_stats(const struct cache *, struct cache_stats *);

#endif
