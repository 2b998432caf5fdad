/*
 * floe: test_catalog_replay.c -- an answer passed on with the edits a
 * stream made of the memo's body (catalog_replay_run) while it is the
 * same, and by a stream that takes over at its first difference
 * (catalog_stream_resume): the same bytes as the stream alone gives for
 * the answer, wherever it differs (within and right after an upstream
 * URL, near the merged config, shorter, longer) and in whatever pieces
 * it comes; checked, the same verdict and offset as the check alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "cache/memo.h"
#include "proxy/catalog.h"

#define UP "http://up:9001"
#define FLOE "http://floe:8181"
#define URL UP "/v1/wh1/"

/* Two upstream URLs, near misses, a config to merge into. */
static const char memo_body[] =
    "{\"metadata-location\":\"" URL "ns/t/m.json\","
    "\"x\":\"" UP "/v1/wh2/no\",\"config\":{\"a\":\"b\",\"k\":\"t\"},"
    "\"metadata\":{\"l\":[1,{\"u\":\"" URL "x\",\"v\":\"" UP "/v1/\"}],"
    "\"s\":\"h\"},\"z\":[\"" URL "\"]}";

static struct catalog *
test_catalog(void)
{
	struct catalog *c = catalog_new();
	static const char cfg[] =
	    "{\"defaults\":{\"k\":\"d\",\"w\":\"" UP "/v1/wh1/sign\"},"
	    "\"overrides\":{\"prefix\":\"wh1\"}}";
	char err[128];

	assert_int_equal(catalog_update(c, cfg, strlen(cfg), 0, err,
			     sizeof(err)),
	    1);
	return c;
}

static struct catalog_stream *
new_stream(const struct catalog *c, bool check)
{
	struct catalog_stream *st =
	    catalog_stream_new(c, true, UP, FLOE, "warehouse");

	assert_non_null(st);
	if (check)
		catalog_stream_check(st, NULL);
	return st;
}

/* Everything OUT holds, as a string (caller frees). */
static char *
drain(struct evbuffer *out, size_t *len)
{
	char *o;

	*len = evbuffer_get_length(out);
	o = malloc(*len + 1);
	evbuffer_remove(out, o, *len);
	o[*len] = '\0';
	return o;
}

/* The stream alone on BODY, in one call: what comes out, or NULL. */
static char *
plain(const struct catalog *c, const char *body, size_t len, size_t *olen,
    char **edits, size_t *elen)
{
	struct catalog_stream *st = new_stream(c, false);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	char *o;

	evbuffer_add(in, body, len);
	assert_true(catalog_stream_run(st, in, out, true));
	o = drain(out, olen);
	if (edits != NULL)
		*edits = catalog_stream_edits(st, elen);
	catalog_stream_free(st);
	evbuffer_free(in);
	evbuffer_free(out);
	return o;
}

/*
 * ANS (ALEN bytes) passed on as floe does while MEMO's edits ED apply:
 * in STEP-byte reads, each compared with MEMO first (the pool), the
 * replay while all are the same, the stream from the read that differs.
 * CHECK: the stream checks (from the first byte); then *BAD is set when
 * it found the answer not JSON, at *AT. What came out.
 */
static char *
replayed(const struct catalog *c, const char *memo, size_t mlen, const char *ed,
    size_t elen, const char *ans, size_t alen, size_t step, bool check,
    size_t *olen, bool *bad, size_t *at)
{
	struct catalog_stream *st = new_stream(c, check);
	struct evbuffer *body = evbuffer_new(), *out = evbuffer_new();
	struct evbuffer *rin = NULL;
	struct memo_buf *mb = memo_buf_new(mlen);
	struct catalog_replay rp;
	size_t got = 0, n, eq = 0;
	bool same = true, replaying, end;
	char *o;

	memcpy(mb->data, memo, mlen);
	assert_true(catalog_replay_init(&rp, ed, elen, mb));
	replaying = true;
	*bad = false;
	for (;;) {
		n = alen - got < step ? alen - got : step;
		evbuffer_add(body, ans + got, n);
		got += n;
		end = got == alen;
		/* The pool: compared as the bytes arrive. */
		while (same && eq < got) {
			if (eq >= mlen || ans[eq] != memo[eq])
				same = false;
			else
				eq++;
		}
		if (end && got != mlen)
			same = false;
		if (replaying && same) {
			catalog_replay_run(&rp, body, out, got, end);
			if (end)
				break;
			continue;
		}
		if (replaying) {
			replaying = false;
			rin = evbuffer_new();
			catalog_stream_resume(st, rin, memo, rp.at);
		}
		evbuffer_add_buffer(rin, body);
		if (!catalog_stream_run(st, rin, out, end)) {
			*bad = true;
			*at = catalog_stream_error_at(st);
			break;
		}
		if (end)
			break;
	}
	if (!*bad)
		assert_int_equal(evbuffer_get_length(rin != NULL ? rin : body),
		    0);
	o = drain(out, olen);
	memo_buf_unref(mb);
	catalog_stream_free(st);
	evbuffer_free(body);
	if (rin != NULL)
		evbuffer_free(rin);
	evbuffer_free(out);
	return o;
}

/* ANS through the replay of MEMO's edits, in every step: as the stream. */
static void
one(const struct catalog *c, const char *memo, size_t mlen, const char *ed,
    size_t elen, const char *ans, size_t alen, const char *what, size_t k)
{
	size_t wlen, glen, step, at, jat;
	struct jscheck js;
	char *want, *got;
	bool bad, json;

	want = plain(c, ans, alen, &wlen, NULL, NULL);
	jscheck_init(&js);
	json = jscheck_feed(&js, ans, alen) && jscheck_end(&js, &jat);
	if (!json)
		jat = js.err_at;
	for (step = 1; step <= alen + 1; step += step < 24 ? 1 : 13) {
		got = replayed(c, memo, mlen, ed, elen, ans, alen, step, false,
		    &glen, &bad, &at);
		assert_false(bad);
		if (glen != wlen || memcmp(got, want, wlen) != 0)
			fail_msg("%s at %zu step %zu:\n got %s\nwant %s", what,
			    k, step, got, want);
		free(got);
		got = replayed(c, memo, mlen, ed, elen, ans, alen, step, true,
		    &glen, &bad, &at);
		if (json &&
		    (bad || glen != wlen || memcmp(got, want, wlen) != 0))
			fail_msg("%s at %zu step %zu, checked:\n got %s\n"
				 "want %s",
			    what, k, step, got, want);
		if (!json && (!bad || at != jat))
			fail_msg("%s at %zu step %zu: not JSON at %zu, the "
				 "replay says %s %zu",
			    what, k, step, jat, bad ? "at" : "nothing", at);
		free(got);
	}
	free(want);
}

/* The memo's answer again, and changed at every offset, every way. */
static void
test_replay_every_offset(void **state __unused)
{
	static const char subst[] = "Z1\"}{ ,\\";
	static const char *ins[] = { UP "/v1/wh1/", "\"", "}", "," };
	struct catalog *c = test_catalog();
	size_t mlen = strlen(memo_body), elen, olen, k, i, n;
	char *ed, *o, ans[1024];

	o = plain(c, memo_body, mlen, &olen, &ed, &elen);
	/* Its edits: both URLs and the merge were made. */
	assert_non_null(strstr(o, FLOE "/v1/warehouse/ns/t/m.json"));
	assert_non_null(strstr(o, "\"w\":"));
	free(o);
	one(c, memo_body, mlen, ed, elen, memo_body, mlen, "same", mlen);
	for (k = 0; k <= mlen; k++) {
		/* Cut short at K, or longer after K bytes. */
		one(c, memo_body, mlen, ed, elen, memo_body, k, "shorter", k);
		for (i = 0; i < nitems(ins); i++) {
			n = strlen(ins[i]);
			memcpy(ans, memo_body, k);
			memcpy(ans + k, ins[i], n);
			memcpy(ans + k + n, memo_body + k, mlen - k);
			one(c, memo_body, mlen, ed, elen, ans, mlen + n,
			    "inserted", k);
		}
		if (k == mlen)
			break;
		for (i = 0; subst[i] != '\0'; i++) {
			if (memo_body[k] == subst[i])
				continue;
			memcpy(ans, memo_body, mlen);
			ans[k] = subst[i];
			one(c, memo_body, mlen, ed, elen, ans, mlen, "changed",
			    k);
		}
		/* A byte left out. */
		memcpy(ans, memo_body, k);
		memcpy(ans + k, memo_body + k + 1, mlen - k - 1);
		one(c, memo_body, mlen, ed, elen, ans, mlen - 1, "left out", k);
	}
	free(ed);
	catalog_free(c);
}

/* A list that is not one is refused; an empty one passes all as is. */
static void
test_replay_list(void **state __unused)
{
	struct catalog_replay rp;
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	struct memo_buf *mb = memo_buf_new(7);
	size_t z[2] = { 0, 0 }, len;
	char bad[3 * sizeof(size_t)], *o;

	memcpy(mb->data, "{\"a\":1}", 7);
	assert_false(catalog_replay_init(&rp, "", 0, mb));
	memset(bad, 0xff, sizeof(bad));
	assert_false(catalog_replay_init(&rp, bad, sizeof(bad), mb));
	assert_true(catalog_replay_init(&rp, (const char *)z, sizeof(z), mb));
	evbuffer_add(in, "{\"a\":1}", 7);
	catalog_replay_run(&rp, in, out, 7, true);
	memo_buf_unref(mb);
	o = drain(out, &len);
	assert_string_equal(o, "{\"a\":1}");
	free(o);
	evbuffer_free(in);
	evbuffer_free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_every_offset),
		cmocka_unit_test(test_replay_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
