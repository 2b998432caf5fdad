/*
 * floe: cluster_hash.c -- the hash a cluster node keeps of its routes and
 * waves, which the nodes publish in their keys and compare (GET /cluster
 * "disagrees", FloeClusterNodesDisagree): the XOR of a 64-bit hash of
 * each route's and wave's etcd key (as floe writes it) and sequence (the
 * revision that put it). The mirror computes it from scratch after a
 * resync or an import's commit, and keeps it event by event otherwise,
 * from what its store holds before and after each event, so that both
 * ways give the same hash of the same records.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "routing/store.h"

static int cluster_hash_route_cb(const void *, size_t,
    const struct store_route *, void *);
static int cluster_hash_wave_cb(const struct store_wave *, void *);

/* A 64-bit hash of KEY and REV, XORed into the mirror's hash. */
uint64_t
cluster_kv_hash(const char *key, size_t len, int64_t rev)
{
	uint64_t h = 14695981039346656037ULL, r = (uint64_t)rev;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 1099511628211ULL;
	}
	for (i = 0; i < 8; i++, r >>= 8) {
		h ^= r & 0xff;
		h *= 1099511628211ULL;
	}
	/* splitmix64's finalizer, so that XORs of near keys stay apart. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

/* The hash of the store's routes and waves, from scratch. */
void
cluster_rehash(struct cluster *c)
{
	c->hash = 0;
	(void)store_route_foreach(c->st, cluster_hash_route_cb, c);
	(void)store_wave_foreach(c->st, cluster_hash_wave_cb, c);
}

static int
cluster_hash_route_cb(const void *key, size_t keylen,
    const struct store_route *r, void *arg)
{
	struct cluster *c = arg;

	c->hash ^= cluster_record_hash(STORE_DB_OBJECTS, key, keylen, r->seq);
	return 0;
}

static int
cluster_hash_wave_cb(const struct store_wave *w, void *arg)
{
	struct cluster *c = arg;
	unsigned char kb[4];

	kb[0] = (unsigned char)(w->n >> 24);
	kb[1] = (unsigned char)(w->n >> 16);
	kb[2] = (unsigned char)(w->n >> 8);
	kb[3] = (unsigned char)w->n;
	c->hash ^= cluster_record_hash(STORE_DB_WAVES, kb, 4, w->seq);
	return 0;
}

/*
 * The hash of the record at KB (KLEN bytes) in DB (routes and waves) with
 * sequence SEQ: of its canonical etcd key (without the prefix) and SEQ,
 * the revision it was put at.
 */
uint64_t
cluster_record_hash(enum store_db db, const unsigned char *kb, size_t klen,
    uint64_t seq)
{
	char buf[8 + STORE_KEY_MAX];
	int n;

	if (db == STORE_DB_WAVES) {
		n = snprintf(buf, sizeof(buf), "waves/%u",
		    (uint32_t)kb[0] << 24 | (uint32_t)kb[1] << 16 |
			(uint32_t)kb[2] << 8 | kb[3]);
		return cluster_kv_hash(buf, (size_t)n, (int64_t)seq);
	}
	if (klen > sizeof(buf) - 8)
		return 0;
	memcpy(buf, "objects/", 8);
	memcpy(buf + 8, kb, klen);
	return cluster_kv_hash(buf, 8 + klen, (int64_t)seq);
}

/*
 * The hash of what the mirror's txn M holds at KB in DB now: 0 when it
 * holds no record there. A store failure in *RC (the txn is over).
 */
uint64_t
cluster_stored_hash(struct store_mirror *m, enum store_db db,
    const unsigned char *kb, size_t klen, int *rc)
{
	uint64_t seq;

	switch (store_mirror_seq(m, db, kb, klen, &seq)) {
	case STORE_OK:
		return cluster_record_hash(db, kb, klen, seq);
	case STORE_ERROR:
		*rc = STORE_ERROR;
		return 0;
	default:
		return 0;
	}
}
