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

static void
ledger_round(const uint8_t *v, size_t len)
{
	unsigned char one[LEDGER_VAL_MAX], two[LEDGER_VAL_MAX];
	struct ledger_rec rec, back;
	size_t n1, n2;

	memset(&rec, 0, sizeof(rec));
	if (ledger_decode(v, len, &rec) == -1)
		return;
	if ((n1 = ledger_encode(&rec, one)) > sizeof(one))
		__builtin_trap();
	memset(&back, 0, sizeof(back));
	back.ts_ms = rec.ts_ms;
	if (ledger_decode(one, n1, &back) == -1)
		__builtin_trap();
	n2 = ledger_encode(&back, two);
	if (n2 != n1 || memcmp(one, two, n1) != 0)
		__builtin_trap();
}

static void
reader_round(const uint8_t *v, size_t len)
{
	unsigned char one[STORE_READER_PACK_MAX], two[STORE_READER_PACK_MAX];
	struct store_reader r, back;
	size_t n1, n2;

	memset(&r, 0, sizeof(r));
	store_reader_unpack(v, len, &r);
	if ((n1 = store_reader_pack(&r, one)) > sizeof(one))
		__builtin_trap();
	memset(&back, 0, sizeof(back));
	store_reader_unpack(one, n1, &back);
	n2 = store_reader_pack(&back, two);
	if (n2 != n1 || memcmp(one, two, n1) != 0)
		__builtin_trap();
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
		ledger_round(data + 1, size - 1);
		break;
	case 3:
		reader_round(data + 1, size - 1);
		break;
	case 4:
		wrapped((const char *)data + 1, size - 1);
		break;
	}
	return 0;
}
