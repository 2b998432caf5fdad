/*
 * floe: ledger.h -- the reconcile ledger's record: its JSON form (what
 * reconcile jobs send), its LMDB key (canonical object key + 8-byte
 * big-endian ts in ms, so one object's records are one key range and the
 * same (object, ts) is stored once) and its versioned binary value. Owns no
 * state; the ledger DBI itself belongs to store.c.
 */
#ifndef FLOE_ROUTING_LEDGER_H
#define FLOE_ROUTING_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routing/route.h"
#include "routing/store.h"

typedef struct json_t json_t;

enum ledger_bucket {
	LEDGER_CLEAN = 0,
	LEDGER_STALE = 1, /* the lakehouse is behind: self-heals, wait */
	LEDGER_GAP = 2, /* missing rows: re-backfill */
	LEDGER_VALUE_DRIFT = 3, /* values differ: fix the transform */
};
#define LEDGER_NBUCKETS 4

/* The ts bytes after the object key. */
#define LEDGER_TS_LEN 8
/* Longest object key a ledger key can hold. */
#define LEDGER_OBJ_MAX (STORE_KEY_MAX - LEDGER_TS_LEN)
/* Largest encoded value. */
#define LEDGER_VAL_MAX 80
/* How far in the future a record may be dated (clock skew). */
#define LEDGER_FUTURE_MS (5 * 60 * 1000)

/* One reconcile result for one object. */
struct ledger_rec {
	int64_t ts_ms;
	bool count_match;
	bool aggregate_match;
	bool hash_match;
	uint8_t bucket; /* enum ledger_bucket */
	char source[64];
};

/* "clean", "stale", "gap", "value-drift"; "unknown" past the end. */
const char *ledger_bucket_name(unsigned);
/* -1 if NAME is not a bucket. */
int ledger_bucket_parse(const char *name);
/* What to do about open mismatches of bucket B, for the operator. */
const char *ledger_bucket_action(unsigned);
/* Clean: all three tiers match (and so the bucket is clean). */
bool ledger_rec_is_clean(const struct ledger_rec *);

/*
 * Read one JSON record (an object) into OBJ and REC. Checks every field:
 * object, ts (RFC 3339, not before 1970 nor more than LEDGER_FUTURE_MS
 * after NOW_MS), the three tiers (booleans), bucket (optional: clean when
 * all tiers match; required otherwise, and consistent with the tiers) and
 * source (optional, at most 63 bytes). Unknown fields are refused.
 * 0, or -1 with the reason in ERR.
 */
int ledger_rec_from_json(const json_t *, int64_t now_ms, struct route_obj *obj,
    struct ledger_rec *rec, char *err, size_t errlen);
/* REC (of OBJ) as the API's JSON object. */
json_t *ledger_rec_json(const struct route_obj *, const struct ledger_rec *);

/* The ledger key of OBJ at TS into KEY (LEDGER_OBJ_MAX + 8 bytes): length. */
size_t ledger_key(const struct route_obj *, int64_t ts_ms, unsigned char *key);
/* The ts of a ledger key of OBJLEN object bytes. */
int64_t ledger_key_ts(const unsigned char *key, size_t objlen);
/* Encode REC's value into BUF (LEDGER_VAL_MAX bytes): its length. */
size_t ledger_encode(const struct ledger_rec *, unsigned char *buf);
/*
 * Decode a value of any version into REC (ts left as is): an older, shorter
 * record reads zeros past its end; a newer one's extra bytes are ignored.
 * 0, or -1 if damaged.
 */
int ledger_decode(const void *val, size_t len, struct ledger_rec *);

#endif
