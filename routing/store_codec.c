/*
 * floe: store_codec.c -- the flag store's binary forms. Values are
 * versioned little-endian records of fixed-offset fields: a newer floe
 * reads older, shorter records by zero-filling what is missing, and an
 * older one ignores what it does not know. Keys are big-endian so that
 * LMDB's byte order is numeric order.
 */
#include <stdint.h>
#include <string.h>

#include <lmdb.h>

#include "routing/store.h"
#include "routing/store_impl.h"

static void store_put_u8(struct store_enc *, uint8_t);
static void store_put_u16(struct store_enc *, uint16_t);
static void store_put_u32(struct store_enc *, uint32_t);
static void store_put_str(struct store_enc *, const char *, size_t);
static void store_get_str(struct store_dec *, char *, size_t);

/* Append one byte. */
static void
store_put_u8(struct store_enc *e, uint8_t v)
{
	e->buf[e->len++] = v;
}

/* Append V little-endian in 2 bytes. */
static void
store_put_u16(struct store_enc *e, uint16_t v)
{
	store_put_u8(e, v & 0xff);
	store_put_u8(e, v >> 8);
}

/* Append V little-endian in 4 bytes. */
static void
store_put_u32(struct store_enc *e, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		store_put_u8(e, (v >> (8 * i)) & 0xff);
}

/* Append V little-endian in 8 bytes. */
void
store_put_u64(struct store_enc *e, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		store_put_u8(e, (v >> (8 * i)) & 0xff);
}

/*
 * Append a string field of capacity CAP: a 2-byte length, then CAP bytes
 * (the text, zero-padded). A fixed width keeps every later field at a
 * fixed offset, which is what lets older floes read newer records.
 */
static void
store_put_str(struct store_enc *e, const char *str, size_t cap)
{
	size_t n = strnlen(str, cap - 1);

	store_put_u16(e, (uint16_t)n);
	memcpy(e->buf + e->len, str, n);
	memset(e->buf + e->len + n, 0, cap - n);
	e->len += cap;
}

/* Read an unsigned little-endian field of WIDTH bytes; zero past the end. */
uint64_t
store_get_uint(struct store_dec *d, size_t width)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < width; i++) {
		if (d->off + i < d->len)
			v |= (uint64_t)d->p[d->off + i] << (8 * i);
	}
	d->off += width;
	return v;
}

/* Read a string field written by store_put_str into BUF of CAP bytes. */
static void
store_get_str(struct store_dec *d, char *buf, size_t cap)
{
	size_t n = store_get_uint(d, 2), avail = 0;

	if (n > cap - 1)
		n = cap - 1;
	if (d->off < d->len)
		avail = d->len - d->off;
	if (n > avail)
		n = avail;
	memcpy(buf, d->p + (d->off < d->len ? d->off : 0), n);
	buf[n] = '\0';
	/* A NUL inside is a damaged record: keep what precedes it. */
	d->off += cap;
}

/* Encode R as a version 1 route record. */
void
store_route_encode(const struct store_route *r, struct store_enc *e)
{
	e->len = 0;
	store_put_u8(e, STORE_ROUTE_V1);
	store_put_u32(e, r->wave);
	store_put_u64(e, r->seq);
	store_put_u64(e, (uint64_t)r->since_ms);
}

/*
 * Decode a route record of any version: missing fields (an older, shorter
 * record) read as zero and extra bytes (a newer floe) are ignored.
 */
int
store_route_decode(const MDB_val *v, struct store_route *r)
{
	struct store_dec d = { v->mv_data, v->mv_size, 0 };

	if (v->mv_size < 1 || d.p[0] == 0)
		return -1;
	d.off = 1;
	memset(r, 0, sizeof(*r));
	r->wave = store_get_uint(&d, 4);
	r->seq = store_get_uint(&d, 8);
	r->since_ms = (int64_t)store_get_uint(&d, 8);
	return 0;
}

/* Encode W as a version 1 wave record. */
void
store_wave_encode(const struct store_wave *w, struct store_enc *e)
{
	e->len = 0;
	store_put_u8(e, STORE_WAVE_V1);
	store_put_u32(e, w->n);
	store_put_u8(e, w->state);
	store_put_u8(e, w->pct);
	store_put_u8(e, w->flags);
	store_put_u64(e, w->seq);
	store_put_u64(e, (uint64_t)w->since_ms);
	store_put_u64(e, (uint64_t)w->flipped_ms);
	store_put_u64(e, (uint64_t)w->frozen_ms);
	store_put_u64(e, (uint64_t)w->rollback_ms);
	store_put_u32(e, w->gate_min_clean);
	store_put_u64(e, (uint64_t)w->gate_window_ms);
	store_put_str(e, w->reason, sizeof(w->reason));
	store_put_str(e, w->actor, sizeof(w->actor));
	store_put_str(e, w->signoff, sizeof(w->signoff));
	/* Added after the first release of the record: older ones read 0. */
	store_put_u64(e, (uint64_t)w->signoff_ms);
	store_put_u64(e, w->base_requests);
	store_put_u64(e, w->base_errors);
	store_put_u64(e, (uint64_t)w->grace_ends_ms);
	store_put_u64(e, (uint64_t)w->alarm_ms);
	store_put_u64(e, (uint64_t)w->alarm_ack_ms);
}

/* Decode a wave record of any version (see store_route_decode). */
int
store_wave_decode(const MDB_val *v, struct store_wave *w)
{
	struct store_dec d = { v->mv_data, v->mv_size, 0 };

	if (v->mv_size < 1 || d.p[0] == 0)
		return -1;
	d.off = 1;
	memset(w, 0, sizeof(*w));
	w->n = store_get_uint(&d, 4);
	w->state = store_get_uint(&d, 1);
	w->pct = store_get_uint(&d, 1);
	w->flags = store_get_uint(&d, 1);
	w->seq = store_get_uint(&d, 8);
	w->since_ms = (int64_t)store_get_uint(&d, 8);
	w->flipped_ms = (int64_t)store_get_uint(&d, 8);
	w->frozen_ms = (int64_t)store_get_uint(&d, 8);
	w->rollback_ms = (int64_t)store_get_uint(&d, 8);
	w->gate_min_clean = store_get_uint(&d, 4);
	w->gate_window_ms = (int64_t)store_get_uint(&d, 8);
	store_get_str(&d, w->reason, sizeof(w->reason));
	store_get_str(&d, w->actor, sizeof(w->actor));
	store_get_str(&d, w->signoff, sizeof(w->signoff));
	w->signoff_ms = (int64_t)store_get_uint(&d, 8);
	w->base_requests = store_get_uint(&d, 8);
	w->base_errors = store_get_uint(&d, 8);
	w->grace_ends_ms = (int64_t)store_get_uint(&d, 8);
	w->alarm_ms = (int64_t)store_get_uint(&d, 8);
	w->alarm_ack_ms = (int64_t)store_get_uint(&d, 8);
	return 0;
}

/* Wave keys are big-endian so that LMDB's byte order is numeric order. */
void
store_wave_key(uint32_t n, unsigned char k[4])
{
	k[0] = n >> 24;
	k[1] = n >> 16;
	k[2] = n >> 8;
	k[3] = n;
}

/* The wave number of a 4-byte wave key. */
uint32_t
store_wave_num(const unsigned char k[4])
{
	return (uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 |
	    (uint32_t)k[2] << 8 | k[3];
}

/*
 * Keys that sort by number: V as 8 bytes big-endian. An event's key is its
 * sequence; a ledger key ends with its ts.
 */
void
store_be64_key(uint64_t v, unsigned char k[8])
{
	int i;

	for (i = 0; i < 8; i++)
		k[i] = v >> (56 - 8 * i);
}

/* The number of an 8-byte big-endian key. */
uint64_t
store_be64_num(const unsigned char k[8])
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | k[i];
	return v;
}

/* LMDB's default key order: bytes, then the shorter key first. */
int
store_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int d = memcmp(a, b, alen < blen ? alen : blen);

	if (d != 0)
		return d;
	return alen < blen ? -1 : alen > blen;
}
