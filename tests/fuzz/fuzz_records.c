/*
 * floe: fuzz_records.c -- libFuzzer target for the records a node's mirror
 * takes from etcd as other nodes put them (nodes of another version, or an
 * operator's etcdctl, may put anything): a route, a wave, a ledger record,
 * a reader record, and a bulk import's wrapped value with the route inside.
 * The first byte picks the decoder, the rest is the value. No decoder may
 * read outside the value; a ledger or reader record it accepts must encode
 * within its buffer, and encode the same once decoded again; a wrapped
 * value's parts must lie inside it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/cluster_impl.h"
#include "routing/ledger.h"
#include "routing/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Whether [P, P + N) lies inside [V, V + LEN). */
static int
inside(const char *v, size_t len, const char *p, size_t n)
{
	return p >= v && n <= len && (size_t)(p - v) <= len - n;
}

/* Decode V as a ledger record and encode it into OUT: its length, or 0. */
static size_t
ledger_again(const void *v, size_t len, unsigned char *out)
{
	struct ledger_rec rec;

	memset(&rec, 0, sizeof(rec));
	return ledger_decode(v, len, &rec) == 0 ? ledger_encode(&rec, out) : 0;
}

/* ... as a reader record (which any bytes decode to). */
static size_t
reader_again(const void *v, size_t len, unsigned char *out)
{
	struct store_reader r;

	memset(&r, 0, sizeof(r));
	store_reader_unpack(v, len, &r);
	return store_reader_pack(&r, out);
}

/*
 * What AGAIN accepts encodes within MAX bytes (buffers of exactly MAX:
 * ASan sees a byte past them), and the same once decoded and encoded
 * again.
 */
static void
round_trip(size_t (*again)(const void *, size_t, unsigned char *), size_t max,
    const uint8_t *v, size_t len)
{
	unsigned char *one = malloc(max), *two = malloc(max);
	size_t n1, n2;

	if (one == NULL || two == NULL)
		__builtin_trap();
	if ((n1 = again(v, len, one)) > 0 &&
	    (n1 > max || (n2 = again(one, n1, two)) != n1 ||
		memcmp(one, two, n1) != 0))
		__builtin_trap();
	free(one);
	free(two);
}

static void
wrapped(const char *v, size_t len)
{
	struct cluster_wrap w;
	struct store_route r;

	if (cluster_unwrap(v, len, &w) == -1)
		return;
	if (!inside(v, len, w.id, w.idlen) || !inside(v, len, w.nv, w.newlen) ||
	    (w.was != NULL && !inside(v, len, w.was, w.waslen)))
		__builtin_trap();
	(void)store_route_record(w.nv, w.newlen, &r);
	if (w.was != NULL)
		(void)store_route_record(w.was, w.waslen, &r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_route r;
	struct store_wave w;

	if (size < 1)
		return 0;
	switch (data[0] % 5) {
	case 0:
		(void)store_route_record(data + 1, size - 1, &r);
		break;
	case 1:
		(void)store_wave_record(data + 1, size - 1, &w);
		break;
	case 2:
		round_trip(ledger_again, LEDGER_VAL_MAX, data + 1, size - 1);
		break;
	case 3:
		round_trip(reader_again, STORE_READER_PACK_MAX, data + 1,
		    size - 1);
		break;
	case 4:
		wrapped((const char *)data + 1, size - 1);
		break;
	}
	return 0;
}
