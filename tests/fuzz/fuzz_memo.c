/*
 * floe: fuzz_memo.c -- libFuzzer target for the memo's comparison
 * (cache/memo.c, memo_cmp): an answer compared with a memo's body as it
 * arrives, in pieces cut at points drawn from the bytes, must get the
 * verdict and the offset of the first wrong byte that lib/jscheck.c gives
 * the answer alone, and be called the memo's only when it is, byte for
 * byte. The memo is the input when it is JSON (else a fixed text); the
 * answer is the memo changed at one place: a byte replaced, cut short,
 * or bytes added, as the input's first bytes say.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jscheck.h"
#include "cache/memo.h"

#define FUZZ_CUTS 3

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char fuzz_text[] =
    "{\"metadata-location\":\"s3://b/m.json\",\"metadata\":{\"v\":2,"
    "\"n\":[-1.5e3,0,true,false,null,{}],\"s\":\"a\\u00e9\\n\"},"
    "\"config\":{\"k\":\"v\"}}";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *memo_text = fuzz_text;
	size_t mlen = sizeof(fuzz_text) - 1, alen, at = 0, want_at = 0;
	size_t cut[FUZZ_CUTS + 2], i, j, t, pos;
	uint64_t h = 0xcbf29ce484222325ULL;
	struct memo_buf *memo;
	struct memo_cmp mc;
	struct jscheck js;
	unsigned char how, with;
	bool want, got, hit;
	char *ans;

	if (size < 4)
		return 0;
	how = data[0] % 4;
	with = data[1];
	pos = (size_t)data[2] << 8 | data[3];
	data += 4;
	size -= 4;
	if (size > 0 && jscheck_valid((const char *)data, size, NULL)) {
		memo_text = (const char *)data;
		mlen = size;
	}
	memo = memo_buf_new(mlen);
	memcpy(memo->data, memo_text, mlen);
	pos = mlen > 0 ? pos % (mlen + 1) : 0;
	ans = malloc(mlen + 16);
	if (ans == NULL)
		abort();
	memcpy(ans, memo_text, mlen);
	alen = mlen;
	switch (how) {
	case 0: /* the same */
		break;
	case 1: /* a byte replaced */
		if (pos < mlen)
			ans[pos] = (char)with;
		break;
	case 2: /* cut short */
		alen = pos;
		break;
	case 3: /* bytes added */
		memset(ans + mlen, with, with % 16);
		alen = mlen + with % 16;
		break;
	}

	for (i = 0; i < alen; i++)
		h = (h ^ (unsigned char)ans[i]) * 0x100000001b3ULL;
	cut[0] = 0;
	cut[FUZZ_CUTS + 1] = alen;
	for (i = 1; i <= FUZZ_CUTS; i++) {
		h = h * 6364136223846793005ULL + 1442695040888963407ULL;
		cut[i] = (size_t)(h >> 33) % (alen + 1);
	}
	for (i = 2; i <= FUZZ_CUTS; i++)
		for (j = i; j > 1 && cut[j - 1] > cut[j]; j--) {
			t = cut[j];
			cut[j] = cut[j - 1];
			cut[j - 1] = t;
		}

	want = jscheck_valid(ans, alen, &want_at);
	jscheck_init(&js);
	memo_cmp_init(&mc, memo);
	for (i = 0; i <= FUZZ_CUTS; i++)
		memo_cmp_feed(&mc, &js, ans + cut[i], cut[i + 1] - cut[i]);
	hit = memo_cmp_end(&mc, &js);
	if (hit) {
		if (alen != mlen || memcmp(ans, memo_text, mlen) != 0)
			abort(); /* called the memo's when it is not */
		got = true;
	} else {
		if (alen == mlen && memcmp(ans, memo_text, mlen) == 0)
			abort(); /* the memo's, not seen */
		got = jscheck_end(&js, &at);
	}
	if (got != want || (!got && at != want_at))
		abort();
	memo_buf_unref(memo);
	free(ans);
	return 0;
}
