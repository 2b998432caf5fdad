/*
 * floe: fuzz_replay.c -- libFuzzer target for the replay of a streamed
 * rewrite's edits (proxy/catalog_edits.c): an answer passed on with the
 * edits the stream made of the memo's body while it is the same, and by
 * a stream that takes over at its first difference, must come out byte
 * for byte as the stream alone makes it; checked, with the verdict and
 * offset the check alone gives. The memo is the input when it is JSON
 * (else a text with upstream URLs and a config); the answer is the memo
 * changed at one place (a byte replaced, cut short, bytes added, or the
 * URL prefix put in), in pieces the input's bytes size.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/jscheck.h"
#include "cache/memo.h"
#include "proxy/catalog.h"

#define UP "http://up:9001/base"
#define FROM UP "/v1/wh1/"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char fuzz_text[] =
    "{\"metadata-location\":\"" FROM "ns/t/m.json\",\"x\":\"" UP
    "/v1/wh2/n\",\"config\":{\"a\":\"b\",\"k\":\"t\"},\"metadata\":{\"l\":[1,"
    "{\"u\":\"" FROM "x\"}],\"s\":\"h\"},\"z\":[\"" FROM "\"]}";

static struct catalog *fuzz_cat;

static struct catalog_stream *
fuzz_stream(bool check)
{
	struct catalog_stream *st = catalog_stream_new(fuzz_cat, true, UP,
	    "http://floe:8181", "warehouse");

	if (st == NULL)
		__builtin_trap();
	if (check)
		catalog_stream_check(st, NULL);
	return st;
}

/* The stream alone on ANS, in one call. *ED: its edits, unless NULL. */
static struct evbuffer *
fuzz_plain(const char *ans, size_t alen, char **ed, size_t *elen)
{
	struct catalog_stream *st = fuzz_stream(false);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();

	evbuffer_add(in, ans, alen);
	if (!catalog_stream_run(st, in, out, true))
		__builtin_trap();
	if (ed != NULL)
		*ed = catalog_stream_edits(st, elen);
	catalog_stream_free(st);
	evbuffer_free(in);
	return out;
}

/*
 * ANS through the replay of MEMO's edits ED and the stream from its first
 * difference, in pieces DATA sizes. CHECK: checked; *BAD, *AT its verdict.
 */
static struct evbuffer *
fuzz_replayed(struct memo_buf *memo, const char *ed, size_t elen,
    const char *ans, size_t alen, const uint8_t *data, size_t size,
    bool check, bool *bad, size_t *at)
{
	struct catalog_stream *st = fuzz_stream(check);
	struct evbuffer *body = evbuffer_new(), *out = evbuffer_new();
	struct evbuffer *rin = NULL;
	struct catalog_replay rp;
	size_t got = 0, n, eq = 0, k = 0;
	bool same = true, replaying = true, end;

	if (!catalog_replay_init(&rp, ed, elen, memo))
		__builtin_trap();
	*bad = false;
	do {
		n = 1 + (size > 0 ? data[k++ % size] : 0);
		if (n > alen - got)
			n = alen - got;
		evbuffer_add(body, ans + got, n);
		got += n;
		end = got == alen;
		while (same && eq < got) {
			if (eq >= memo->len || ans[eq] != memo->data[eq])
				same = false;
			else
				eq++;
		}
		if (end && got != memo->len)
			same = false;
		if (replaying && same) {
			catalog_replay_run(&rp, body, out, got, end);
			continue;
		}
		if (replaying) {
			replaying = false;
			rin = evbuffer_new();
			catalog_stream_resume(st, rin, memo->data, rp.at);
		}
		evbuffer_add_buffer(rin, body);
		if (!catalog_stream_run(st, rin, out, end)) {
			*bad = true;
			*at = catalog_stream_error_at(st);
			break;
		}
	} while (!end);
	if (!*bad && evbuffer_get_length(rin != NULL ? rin : body) != 0)
		__builtin_trap();
	catalog_stream_free(st);
	evbuffer_free(body);
	if (rin != NULL)
		evbuffer_free(rin);
	return out;
}

static bool
fuzz_same(struct evbuffer *a, struct evbuffer *b)
{
	size_t n = evbuffer_get_length(a);

	return n == evbuffer_get_length(b) &&
	    (n == 0 ||
		memcmp(evbuffer_pullup(a, -1), evbuffer_pullup(b, -1), n) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char cfg[] =
	    "{\"defaults\":{\"k\":\"d\",\"w\":\"" FROM "sign\"},"
	    "\"overrides\":{\"prefix\":\"wh1\"}}";
	const char *mtext = fuzz_text;
	size_t mlen = sizeof(fuzz_text) - 1, alen, pos, elen, at, want_at = 0;
	struct evbuffer *want, *got;
	struct memo_buf *memo;
	unsigned char how, with;
	char err[128], *ans, *ed;
	bool json, bad;

	if (fuzz_cat == NULL) {
		fuzz_cat = catalog_new();
		if (catalog_update(fuzz_cat, cfg, strlen(cfg), 0, err,
			sizeof(err)) != 1)
			__builtin_trap();
	}
	if (size < 4)
		return 0;
	how = data[0] % 5;
	with = data[1];
	pos = (size_t)data[2] << 8 | data[3];
	data += 4;
	size -= 4;
	if (size > 0 && data[0] == '{' &&
	    jscheck_valid((const char *)data, size, NULL)) {
		mtext = (const char *)data;
		mlen = size;
	}
	memo = memo_buf_new(mlen);
	memcpy(memo->data, mtext, mlen);
	pos = pos % (mlen + 1);
	ans = malloc(mlen + sizeof(FROM) + 16);
	if (ans == NULL)
		abort();
	memcpy(ans, mtext, mlen);
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
		memmove(ans + pos + with % 16, mtext + pos, mlen - pos);
		memset(ans + pos, with, with % 16);
		alen = mlen + with % 16;
		break;
	case 4: /* the URL prefix put in, over what was there */
		memmove(ans + pos + with % (sizeof(FROM) - 1), mtext + pos,
		    mlen - pos);
		memcpy(ans + pos, FROM, with % (sizeof(FROM) - 1));
		alen = mlen + with % (sizeof(FROM) - 1);
		break;
	}
	json = jscheck_valid(ans, alen, &want_at);
	/* The memo's edits: the stream's of its body. */
	evbuffer_free(fuzz_plain(mtext, mlen, &ed, &elen));
	want = fuzz_plain(ans, alen, NULL, NULL);
	got = fuzz_replayed(memo, ed, elen, ans, alen, data, size, false, &bad,
	    &at);
	if (bad || !fuzz_same(want, got))
		__builtin_trap();
	evbuffer_free(got);
	got = fuzz_replayed(memo, ed, elen, ans, alen, data, size, true, &bad,
	    &at);
	if (bad == json || (bad && at != want_at) ||
	    (!bad && !fuzz_same(want, got)))
		__builtin_trap();
	evbuffer_free(got);
	evbuffer_free(want);
	free(ed);
	free(ans);
	memo_buf_unref(memo);
	return 0;
}
