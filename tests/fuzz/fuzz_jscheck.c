/*
 * floe: fuzz_jscheck.c -- libFuzzer target for lib/jscheck.c: its
 * verdict on any bytes must be jansson's (except for numbers jansson
 * cannot hold, which are well-formed JSON all the same, and text with a
 * NUL byte: jansson ends its input there, floe does not); and the same
 * bytes fed in pieces, cut at points drawn from the bytes themselves
 * (and a byte at a time, for short ones), must get the same verdict with
 * the same offset of the first wrong byte. The word-arithmetic path
 * (JSCHECK_SWAR, built here under other names) must say what the SSE2
 * path says, whole and in the same pieces.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "lib/jscheck.h"

void jscheck_swar_init(struct jscheck *);
bool jscheck_swar_feed(struct jscheck *, const void *, size_t);
bool jscheck_swar_end(struct jscheck *, size_t *);
bool jscheck_swar_valid(const char *, size_t, size_t *);

#define JSCHECK_SWAR 1
#define jscheck_init jscheck_swar_init
#define jscheck_feed jscheck_swar_feed
#define jscheck_end jscheck_swar_end
#define jscheck_valid jscheck_swar_valid
#include "lib/jscheck.c"
#undef jscheck_init
#undef jscheck_feed
#undef jscheck_end
#undef jscheck_valid

#define FUZZ_CUTS 3

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* DATA fed in pieces: the verdict and offset must be GOT's and AT's. */
static void
fuzz_pieces(const uint8_t *data, size_t size, bool got, size_t at)
{
	struct jscheck st;
	size_t cut[FUZZ_CUTS + 2], i, j, t, pat = 0;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001b3ULL;
	cut[0] = 0;
	cut[FUZZ_CUTS + 1] = size;
	for (i = 1; i <= FUZZ_CUTS; i++) {
		h = h * 6364136223846793005ULL + 1442695040888963407ULL;
		cut[i] = (size_t)(h >> 33) % (size + 1);
	}
	/* In order (insertion sort of three). */
	for (i = 2; i <= FUZZ_CUTS; i++)
		for (j = i; j > 1 && cut[j - 1] > cut[j]; j--) {
			t = cut[j];
			cut[j] = cut[j - 1];
			cut[j - 1] = t;
		}
	jscheck_init(&st);
	for (i = 0; i <= FUZZ_CUTS; i++)
		jscheck_feed(&st, data + cut[i], cut[i + 1] - cut[i]);
	if (jscheck_end(&st, &pat) != got || (!got && pat != at))
		__builtin_trap();
	jscheck_swar_init(&st);
	for (i = 0; i <= FUZZ_CUTS; i++)
		jscheck_swar_feed(&st, data + cut[i], cut[i + 1] - cut[i]);
	if (jscheck_swar_end(&st, &pat) != got || (!got && pat != at))
		__builtin_trap();
	if (size > 512)
		return;
	jscheck_init(&st);
	for (i = 0; i < size; i++)
		jscheck_feed(&st, data + i, 1);
	pat = 0;
	if (jscheck_end(&st, &pat) != got || (!got && pat != at))
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *j;
	size_t at = 0, sat = 0;
	bool want, got;

	got = jscheck_valid((const char *)data, size, &at);
	if (jscheck_swar_valid((const char *)data, size, &sat) != got ||
	    (!got && sat != at))
		__builtin_trap();
	fuzz_pieces(data, size, got, at);
	if (memchr(data, '\0', size) != NULL)
		return 0;
	j = json_loadb((const char *)data, size,
	    JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	want = j != NULL;
	json_decref(j);
	if (!want && (strstr(jerr.text, "too big") != NULL ||
			 strstr(jerr.text, "overflow") != NULL ||
			 strstr(jerr.text, "maximum parsing depth") != NULL))
		return 0;
	if (got != want)
		__builtin_trap();
	return 0;
}
