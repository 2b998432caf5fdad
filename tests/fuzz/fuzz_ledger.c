/*
 * floe: fuzz_ledger.c -- libFuzzer target for the ledger's JSON-lines
 * import: every line is read as a record, and an accepted record must
 * survive encode, decode and its JSON form unchanged.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "routing/ledger.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define NOW_MS 1800000000000LL

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *nl;
	unsigned char val[LEDGER_VAL_MAX], key[STORE_KEY_MAX];
	struct ledger_rec rec, back;
	struct route_obj obj;
	char err[256];
	json_t *j, *out;
	size_t n;

	while (p < end) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		j = json_loadb(p, nl - p, JSON_REJECT_DUPLICATES, NULL);
		if (j != NULL &&
		    ledger_rec_from_json(j, NOW_MS, &obj, &rec, err,
			sizeof(err)) == 0) {
			n = ledger_encode(&rec, val);
			if (n > sizeof(val))
				__builtin_trap();
			memset(&back, 0, sizeof(back));
			back.ts_ms = rec.ts_ms;
			if (ledger_decode(val, n, &back) != 0 ||
			    back.bucket != rec.bucket ||
			    back.count_match != rec.count_match)
				__builtin_trap();
			n = ledger_key(&obj, rec.ts_ms, key);
			if (ledger_key_ts(key, n - LEDGER_TS_LEN) != rec.ts_ms)
				__builtin_trap();
			out = ledger_rec_json(&obj, &rec);
			json_decref(out);
		}
		json_decref(j);
		p = nl + 1;
	}
	return 0;
}
