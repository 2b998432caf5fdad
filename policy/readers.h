/*
 * floe: readers.h -- the reader inventory in memory: a fixed-size table of
 * who loaded which table from which side (and of each identity, seen
 * anywhere), noted by the request path with a hash and a store, handed
 * to the store in batches; the longest idle entry makes room for a new
 * one. And the rule that says who is a stale reader of a flipped wave.
 * Pure: no I/O, no clock (callers pass now); the table is allocated once
 * by readers_new and never grows. Owns the table.
 *
 * Memory: readers_bytes(cap) bytes, all allocated by readers_new; the
 * daemon's table has READERS_CAP entries (readers_bytes() says how many
 * bytes that is; docs/operating.md gives the figure).
 */
#ifndef FLOE_POLICY_READERS_H
#define FLOE_POLICY_READERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routing/route.h"
#include "routing/store.h"

/* Entries of the daemon's table. */
#define READERS_CAP 16384
/*
 * The documented bound of the daemon's table: readers_bytes(READERS_CAP)
 * is 8,650,896 bytes on x86-64 (test_readers asserts it stays under this,
 * measured too, after 10,000 identities have loaded 1,000 tables each).
 */
#define READERS_BOUND_BYTES (9u << 20)
/*
 * Longest key held: an object's key, 0, the side and the identity. A
 * load of a table whose key does not fit is not noted (counted).
 */
#define READERS_KEY_MAX 384
/* Longest identity, with its NUL ("token:" and 16 hex digits fit). */
#define READERS_IDENT_MAX 129

struct readers;

/*
 * Who loaded, as the request path knows it. HASH is the client hash floe
 * routes by (route_client_hash of the authenticated name, the
 * Authorization value or the address: the request has it already). NAME
 * (NAMELEN bytes, no NUL inside) is the identity shown; NULL for a bearer
 * token, shown as "token:" and HASH in hex (readers_token_ident), so the
 * token itself is never kept.
 */
struct readers_who {
	uint64_t hash;
	const char *name;
	size_t namelen;
};

/* What the table has done, for /status. */
struct readers_stats {
	size_t cap; /* entries it can hold */
	size_t used; /* entries held */
	size_t dirty; /* entries with sightings not yet flushed */
	size_t bytes; /* memory it holds: readers_bytes(cap) */
	uint64_t noted; /* loads noted */
	uint64_t evicted; /* entries dropped for a new one */
	uint64_t evicted_dirty; /* of those, with sightings not flushed */
	uint64_t too_long; /* loads whose key did not fit */
	uint64_t flushes; /* batches taken */
};

/* One entry taken by readers_take: its key and its sightings since. */
struct readers_item {
	unsigned char key[READERS_KEY_MAX];
	size_t keylen;
	struct store_reader r;
};

/* A table of CAP entries (at least 2). */
struct readers *readers_new(size_t cap);
void readers_free(struct readers *);
/* The bytes a table of CAP entries holds: its one allocation. */
size_t readers_bytes(size_t cap);

/*
 * The key of IDENT's record for OBJ read from SIDE into OUT (OUTLEN
 * bytes), or of IDENT seen anywhere when OBJ is NULL. Its length, or 0
 * when it does not fit.
 */
size_t readers_key(unsigned char *out, size_t outlen,
    const struct route_obj *obj, enum route_side side, const char *ident,
    size_t identlen);
/*
 * Split KEY into its object (NULL for an identity's record), side and
 * identity. 0, or -1 if KEY is not a reader key.
 */
int readers_key_split(const unsigned char *key, size_t keylen,
    struct route_obj *obj, enum route_side *side, char *ident, size_t identlen);

/*
 * A load by IDENT of OBJ from SIDE at NOW_MS, with its User-Agent UA (UALEN
 * bytes, cut to fit; may be NULL). OLDTAG: it revalidated with an ETag of
 * the other side. Notes the object's record and the identity's. Never
 * allocates.
 */
void readers_note(struct readers *, const struct route_obj *obj,
    enum route_side side, const char *ident, size_t identlen, const char *ua,
    size_t ualen, bool oldtag, int64_t now_ms);
/*
 * The request path's readers_note, for a load by WHO: one hash of WHO's
 * hash, OBJ and SIDE picks a hint; while the hint names this reader's two
 * entries (the object's and the identity's), the load is a few stores
 * into them, in the idle order as readers_note puts them. Else it is
 * readers_note, which leaves a hint. The same records either way. Never
 * allocates.
 */
void readers_see(struct readers *, const struct route_obj *obj,
    enum route_side side, const struct readers_who *who, const char *ua,
    size_t ualen, bool oldtag, int64_t now_ms);
/*
 * A bearer token's identity: "token:" and H in 16 hex digits, into OUT
 * (OUTLEN bytes, NUL-terminated). Its length, or 0 if it does not fit.
 */
size_t readers_token_ident(uint64_t h, char *out, size_t outlen);
/* Entries with sightings not flushed yet. */
size_t readers_dirty(const struct readers *);
/*
 * Take up to MAX dirty entries into OUT (their sightings since the last
 * take; they are clean afterwards). How many were taken. A flush that
 * fails gives them back with readers_give_back.
 */
size_t readers_take(struct readers *, struct readers_item *out, size_t max);
/* Put back the sightings of N items a failed flush could not store. */
void readers_give_back(struct readers *, const struct readers_item *, size_t n);
void readers_stats(const struct readers *, struct readers_stats *);

/*
 * Is an identity a stale reader of an object of a wave that left the
 * warehouse at FLIPPED_MS? WH and LH are its records of the object on
 * each side (NULL: none). Stale: it loaded the warehouse copy within
 * HORIZON_MS before the flip, or at any time after it, and has not
 * loaded the lakehouse copy since the flip and since that load; an
 * operator's excuse covers the loads before it.
 */
bool readers_is_stale(const struct store_reader *wh,
    const struct store_reader *lh, int64_t flipped_ms, int64_t horizon_ms);

#endif
