/*
 * floe: store_impl.h -- private to the flag store (store.c, store_codec.c,
 * store_read.c, store_write.c, store_rlog.c, store_index.c, ...); nothing
 * else includes it. Owns the layout of struct store (the LMDB env, its DBI
 * handles, the parked read txn and the read caches of one snapshot) and of
 * the binary records. Callers use routing/store.h, which never shows LMDB.
 */
#ifndef FLOE_ROUTING_STORE_IMPL_H
#define FLOE_ROUTING_STORE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lmdb.h>

#include "routing/store.h"

/* Record format versions: the first byte of every value. */
#define STORE_ROUTE_V1 1
#define STORE_WAVE_V1 1
#define STORE_ROUTE_V1_LEN (1 + 4 + 8 + 8)
#define STORE_WAVE_V1_LEN                                                      \
	(1 + 4 + 1 + 1 + 1 + 8 + 8 + 8 + 8 + 8 + 4 + 8 + 3 * 2 + 256 + 64 +    \
	    64 + 8 + 8 + 8 + 8 + 8 + 8)
/* Entries of the wave brief cache (direct-mapped by wave number). */
#define STORE_WCACHE 64
#define STORE_RCACHE 1024 /* routes a snapshot remembers (a power of 2) */
#define STORE_RCACHE_KEY 80 /* longer keys are looked up every time */
/* Ledger keys end with 8 bytes of ts (routing/ledger.h). */
#define STORE_LEDGER_TS 8

struct store {
	char *dir; /* state_dir */
	char err[256]; /* the last failure, as logged */
	MDB_env *env;
	MDB_dbi objects;
	MDB_dbi waves;
	MDB_dbi ledger;
	MDB_dbi events;
	MDB_dbi meta;
	MDB_dbi readers; /* store_readers.c */
	MDB_dbi rlog; /* pending rollback log lines (store_rlog.c) */
	MDB_dbi
	    bywave; /* wave -> its route keys, sorted dups (store_index.c) */
	MDB_dbi counts; /* wave -> its objects and rules (store_index.c) */
	MDB_txn *rtxn; /* the parked read txn, reset between uses */
	int rdepth; /* nesting of store_read_begin */
	bool rfailed; /* a read of the current bracket failed */
	bool healthy;
	uint64_t last_seq;
	struct store_capture *cap; /* cluster mode: writes recorded, not made */
	/*
	 * The snapshot the parked read txn holds: its txn id + 1, so that 0
	 * tags an empty cache entry. LMDB gives every committed write txn a
	 * new id; an entry of the caches below is used only while its gen is
	 * the current one.
	 */
	size_t rgen;
	uint64_t serial; /* see store_serial */
	/* Wave briefs (see store_wave_brief). */
	struct store_wcache {
		size_t gen;
		uint32_t n;
		int rc; /* STORE_OK or STORE_NOTFOUND */
		struct store_wave_brief b;
	} wcache[STORE_WCACHE];
	/* Lookups in objects (see store_route_get). */
	struct store_rcache {
		size_t gen;
		uint16_t klen;
		int8_t rc; /* STORE_OK or STORE_NOTFOUND */
		struct store_route r;
		unsigned char key[STORE_RCACHE_KEY];
	} rcache[STORE_RCACHE];
};

/* A cursor over a record being decoded: reads past the end give zeros. */
struct store_dec {
	const unsigned char *p;
	size_t len;
	size_t off;
};

/* A growing buffer for encoding. */
struct store_enc {
	unsigned char buf[STORE_WAVE_V1_LEN];
	size_t len;
};

/* store.c: health, the read bracket, write txns and the meta DBI. */
void store_damaged(struct store *, const char *, ...)
    __attribute__((__format__(__printf__, 2, 3)));
int store_fail(struct store *, const char *what, int rc);
const char *store_strerror(const struct store *, int rc);
void store_ok(struct store *);
int store_rbegin(struct store *);
void store_rend(struct store *);
int store_grow(struct store *);
int store_txn_begin(struct store *, MDB_txn **);
int store_rlog_put_in(struct store *, MDB_txn *, const char *, size_t,
    uint64_t *);
int store_meta_seq(MDB_txn *, MDB_dbi meta, uint64_t *);
int store_meta_seq_put(MDB_txn *, MDB_dbi meta, uint64_t);

/* store_readers.c: the readers DBI's part of an excusing txn. */
int store_readers_excuse_put(struct store *, MDB_txn *, const char *ident,
    size_t idlen, const void *obj, size_t objlen, int64_t now_ms, size_t *n);

/*
 * store_index.c: the bywave index and the counts. A txn that writes routes
 * calls store_index_move for each route that appears, moves or goes, and
 * store_tally_apply once before it commits.
 */
struct store_tally {
	struct store_tally_w {
		uint32_t wave;
		int64_t objects;
		int64_t rules;
	} * v;
	size_t n;
	size_t cap;
};
int store_index_move(struct store *, MDB_txn *, const void *key, size_t keylen,
    const struct store_route *old, const uint32_t *to, struct store_tally *);
int store_tally_apply(struct store *, MDB_txn *, struct store_tally *);
int store_index_route(struct store *, MDB_txn *, const void *key, size_t keylen,
    const uint32_t *to);
void store_tally_clear(struct store_tally *);
int store_index_build(struct store *, MDB_txn *);

/* store_mirror.c: cluster mode's capture and mirror. */
/* Drop the capture's ops past the first N (a txn that did not commit). */
void store_cap_rewind(struct store *, size_t);
int store_readers_merge(struct store *, MDB_txn *,
    const struct store_reader_in *, size_t, bool copy);
int store_cap_put(struct store *, MDB_dbi, const MDB_val *, const MDB_val *,
    bool del);
bool store_cap_wave(struct store *, uint32_t, struct store_wave *);
int store_cap_route(struct store *, const void *, size_t, struct store_route *);

/* store_codec.c: records (little-endian, versioned) and keys. */
void store_put_u64(struct store_enc *, uint64_t);
uint64_t store_get_uint(struct store_dec *, size_t width);
void store_route_encode(const struct store_route *, struct store_enc *);
int store_route_decode(const MDB_val *, struct store_route *);
void store_wave_encode(const struct store_wave *, struct store_enc *);
int store_wave_decode(const MDB_val *, struct store_wave *);
void store_wave_key(uint32_t, unsigned char[4]);
uint32_t store_wave_num(const unsigned char[4]);
void store_be64_key(uint64_t, unsigned char[8]);
uint64_t store_be64_num(const unsigned char[8]);

#endif
