/*
 * floe: ledger.c -- the reconcile ledger's record: checking the JSON that
 * reconcile jobs send, and the key and versioned binary value it is stored
 * under. A record is judged strictly here so that the gates never have to
 * doubt what they count.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "lib/units.h"
#include "routing/ledger.h"
#include "routing/route.h"

/* Value format versions: the first byte of every value. */
#define LEDGER_V1 1

/* Tier bits of the value's second byte. */
#define LEDGER_T_COUNT 0x01
#define LEDGER_T_AGGREGATE 0x02
#define LEDGER_T_HASH 0x04

static const char *const ledger_buckets[LEDGER_NBUCKETS] = {
	[LEDGER_CLEAN] = "clean",
	[LEDGER_STALE] = "stale",
	[LEDGER_GAP] = "gap",
	[LEDGER_VALUE_DRIFT] = "value-drift",
};

static const char *const ledger_actions[LEDGER_NBUCKETS] = {
	[LEDGER_CLEAN] = "nothing to do",
	[LEDGER_STALE] = ("wait: the lakehouse is behind and catches up by "
			  "itself"),
	[LEDGER_GAP] = "re-backfill: rows are missing in the lakehouse",
	[LEDGER_VALUE_DRIFT] = "fix the transform: values differ",
};

static int ledger_tier(const json_t *, const char *, bool *, char *, size_t);

/* Name of bucket B. */
const char *
ledger_bucket_name(unsigned b)
{
	return b < LEDGER_NBUCKETS ? ledger_buckets[b] : "unknown";
}

/* The bucket called NAME, or -1. */
int
ledger_bucket_parse(const char *name)
{
	int i;

	for (i = 0; i < LEDGER_NBUCKETS; i++)
		if (strcmp(name, ledger_buckets[i]) == 0)
			return i;
	return -1;
}

/* What an operator does about bucket B. */
const char *
ledger_bucket_action(unsigned b)
{
	return b < LEDGER_NBUCKETS ? ledger_actions[b] :
				     "look at the reconcile job";
}

/* All three tiers match. */
bool
ledger_rec_is_clean(const struct ledger_rec *r)
{
	return r->count_match && r->aggregate_match && r->hash_match &&
	    r->bucket == LEDGER_CLEAN;
}

/* Read the required boolean NAME of J into *OUT. 0 or -1 with ERR. */
static int
ledger_tier(const json_t *j, const char *name, bool *out, char *err,
    size_t errlen)
{
	const json_t *v = json_object_get(j, name);

	if (v == NULL) {
		snprintf(err, errlen, "field \"%s\" is required", name);
		return -1;
	}
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "field \"%s\" must be true or false",
		    name);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

/* Check and read one JSON record. */
int
ledger_rec_from_json(const json_t *j, int64_t now_ms, struct route_obj *obj,
    struct ledger_rec *rec, char *err, size_t errlen)
{
	static const char *const known[] = { "object", "ts", "count_match",
		"aggregate_match", "hash_match", "bucket", "source", NULL };
	const json_t *v;
	const char *key, *s;
	char why[256];
	bool all;
	int b;
	size_t i;

	if (!json_is_object(j)) {
		snprintf(err, errlen, "a record is a JSON object");
		return -1;
	}
	json_object_foreach((json_t *)(uintptr_t)j, key, v) {
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(known[i], key) == 0)
				break;
		if (known[i] == NULL) {
			snprintf(err, errlen, "unknown field \"%s\"", key);
			return -1;
		}
	}
	memset(rec, 0, sizeof(*rec));

	v = json_object_get(j, "object");
	if (!json_is_string(v)) {
		snprintf(err, errlen,
		    "field \"object\" is required (a string)");
		return -1;
	}
	why[0] = '\0';
	if (route_obj_parse(json_string_value(v), obj, why, sizeof(why)) ==
	    -1) {
		snprintf(err, errlen, "object: %s",
		    why[0] != '\0' ? why : "malformed");
		return -1;
	}
	if (obj->rule) {
		snprintf(err, errlen,
		    "object \"%s\" is a rule: the ledger holds tables",
		    json_string_value(v));
		return -1;
	}
	if (obj->len > LEDGER_OBJ_MAX) {
		snprintf(err, errlen, "object name too long for the ledger");
		return -1;
	}

	v = json_object_get(j, "ts");
	if (!json_is_string(v)) {
		snprintf(err, errlen,
		    "field \"ts\" is required (an RFC 3339 time)");
		return -1;
	}
	if (units_time_parse(json_string_value(v), &rec->ts_ms) == -1) {
		snprintf(err, errlen, "ts \"%s\" is not an RFC 3339 time",
		    json_string_value(v));
		return -1;
	}
	if (rec->ts_ms < 0) {
		snprintf(err, errlen, "ts \"%s\" is before 1970",
		    json_string_value(v));
		return -1;
	}
	if (rec->ts_ms > now_ms + LEDGER_FUTURE_MS) {
		snprintf(err, errlen,
		    "ts \"%s\" is in the future (more than 5 minutes ahead "
		    "of floe's clock)",
		    json_string_value(v));
		return -1;
	}

	if (ledger_tier(j, "count_match", &rec->count_match, err, errlen) ==
		-1 ||
	    ledger_tier(j, "aggregate_match", &rec->aggregate_match, err,
		errlen) == -1 ||
	    ledger_tier(j, "hash_match", &rec->hash_match, err, errlen) == -1)
		return -1;
	all = rec->count_match && rec->aggregate_match && rec->hash_match;

	v = json_object_get(j, "bucket");
	if (v == NULL || json_is_null(v)) {
		if (!all) {
			snprintf(err, errlen,
			    "a record that is not clean needs a bucket "
			    "(stale, gap or value-drift)");
			return -1;
		}
		rec->bucket = LEDGER_CLEAN;
	} else {
		if (!json_is_string(v) ||
		    (b = ledger_bucket_parse(json_string_value(v))) == -1) {
			snprintf(err, errlen,
			    "bucket must be clean, stale, gap or value-drift");
			return -1;
		}
		if (all != (b == LEDGER_CLEAN)) {
			snprintf(err, errlen,
			    all ? "bucket \"%s\" but all three tiers match" :
				  "bucket \"%s\" but a tier does not match",
			    ledger_buckets[b]);
			return -1;
		}
		rec->bucket = (uint8_t)b;
	}

	v = json_object_get(j, "source");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_string(v)) {
			snprintf(err, errlen,
			    "field \"source\" must be a string");
			return -1;
		}
		s = json_string_value(v);
		if (strlen(s) >= sizeof(rec->source) ||
		    strlen(s) != json_string_length(v)) {
			snprintf(err, errlen,
			    "source is at most %zu bytes, without NUL",
			    sizeof(rec->source) - 1);
			return -1;
		}
		strlcpy(rec->source, s, sizeof(rec->source));
	}
	return 0;
}

/* The API's JSON form of one record. */
json_t *
ledger_rec_json(const struct route_obj *obj, const struct ledger_rec *r)
{
	char text[STORE_KEY_MAX * 3 + 8], ts[40];

	route_obj_format(obj, text, sizeof(text));
	units_time_format(r->ts_ms, ts, sizeof(ts));
	return json_pack("{s:s,s:s,s:b,s:b,s:b,s:s,s:o,s:b}", "object", text,
	    "ts", ts, "count_match", r->count_match, "aggregate_match",
	    r->aggregate_match, "hash_match", r->hash_match, "bucket",
	    ledger_bucket_name(r->bucket), "source",
	    r->source[0] != '\0' ? json_string(r->source) : json_null(),
	    "clean", ledger_rec_is_clean(r));
}

/* Object key, then the ts big-endian: byte order is time order. */
size_t
ledger_key(const struct route_obj *obj, int64_t ts_ms, unsigned char *key)
{
	uint64_t t = (uint64_t)ts_ms;
	int i;

	memcpy(key, obj->key, obj->len);
	for (i = 0; i < LEDGER_TS_LEN; i++)
		key[obj->len + (size_t)i] = (unsigned char)(t >> (56 - 8 * i));
	return obj->len + LEDGER_TS_LEN;
}

/* The ts at the end of a ledger key. */
int64_t
ledger_key_ts(const unsigned char *key, size_t objlen)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < LEDGER_TS_LEN; i++)
		t = t << 8 | key[objlen + (size_t)i];
	return (int64_t)t;
}

/*
 * Version 1: version, tier bits, bucket, source length, source. The source
 * comes last, so a later version appends its fields after it.
 */
size_t
ledger_encode(const struct ledger_rec *r, unsigned char *buf)
{
	size_t n = strnlen(r->source, sizeof(r->source) - 1);

	buf[0] = LEDGER_V1;
	buf[1] = (r->count_match ? LEDGER_T_COUNT : 0) |
	    (r->aggregate_match ? LEDGER_T_AGGREGATE : 0) |
	    (r->hash_match ? LEDGER_T_HASH : 0);
	buf[2] = r->bucket;
	buf[3] = (unsigned char)n;
	memcpy(buf + 4, r->source, n);
	return 4 + n;
}

/* Decode a value of any version. */
int
ledger_decode(const void *val, size_t len, struct ledger_rec *r)
{
	const unsigned char *p = val;
	size_t n;
	int64_t ts = r->ts_ms;

	if (len < 1 || p[0] == 0)
		return -1;
	memset(r, 0, sizeof(*r));
	r->ts_ms = ts;
	if (len > 1) {
		r->count_match = (p[1] & LEDGER_T_COUNT) != 0;
		r->aggregate_match = (p[1] & LEDGER_T_AGGREGATE) != 0;
		r->hash_match = (p[1] & LEDGER_T_HASH) != 0;
	}
	if (len > 2)
		r->bucket = p[2];
	if (len > 3) {
		n = p[3];
		if (n > len - 4)
			n = len - 4;
		if (n > sizeof(r->source) - 1)
			n = sizeof(r->source) - 1;
		memcpy(r->source, p + 4, n);
		r->source[n] = '\0';
	}
	return 0;
}
