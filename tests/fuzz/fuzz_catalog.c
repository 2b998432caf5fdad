/*
 * floe: fuzz_catalog.c -- libFuzzer target for what floe does with catalog
 * answers: a /v1/config answer (catalog_update) and a LoadTable answer
 * rewritten with that catalog's config merged in and its URLs pointed
 * back at floe (catalog_rewrite). The input is CONFIG \0 BODY. A body
 * that is JSON must come out as JSON (an invalid one may pass as it is).
 * The same rewrite made as the body streams in (catalog_stream_run), in
 * pieces the input's bytes choose, gives the same bytes for a body that
 * is JSON without duplicate keys (however deep), whether catalog_rewrite
 * rewrites it or leaves it as it is; and checked as JSON in the same pass
 * (catalog_stream_check), it is refused exactly when jscheck refuses it,
 * and gives the same bytes otherwise.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/jscheck.h"
#include "proxy/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/*
 * BODY streamed through C's rewrite in pieces of 1 to 256 bytes (past a
 * URL prefix and two 64-byte blocks: what the stream skips a block at a
 * time is reached): CHECK 0 not checked as JSON, 1 checked from the
 * start, 2 from after the first piece, checked ahead (as the pool hands
 * its check over). *OK: not refused.
 */
static struct evbuffer *
stream(struct catalog *c, const char *body, size_t blen, const uint8_t *data,
    size_t size, int check, bool *ok)
{
	struct catalog_stream *st;
	struct evbuffer *in, *out;
	struct jscheck js;
	size_t at = 0, n, k = 0;

	*ok = true;
	if ((st = catalog_stream_new(c, true, "http://up:9001/base",
		 "http://floe:8181", "warehouse")) == NULL)
		return NULL;
	if (check == 1)
		catalog_stream_check(st, NULL);
	in = evbuffer_new();
	out = evbuffer_new();
	while (at < blen && *ok) {
		n = 1 + (size > 0 ? data[k++ % size] : 0);
		if (n > blen - at)
			n = blen - at;
		evbuffer_add(in, body + at, n);
		at += n;
		if (check == 2 && at == n) {
			/* The pool refuses a first piece that is wrong. */
			jscheck_init(&js);
			if (!jscheck_feed(&js, body, n)) {
				*ok = false;
				break;
			}
			catalog_stream_check(st, &js);
		}
		*ok = catalog_stream_run(st, in, out, at == blen);
	}
	if (blen == 0) {
		if (check == 2) {
			jscheck_init(&js);
			catalog_stream_check(st, &js);
		}
		*ok = catalog_stream_run(st, in, out, true);
	}
	if (*ok && evbuffer_get_length(in) != 0)
		__builtin_trap();
	/* Checked: refused exactly when the check alone refuses. */
	if (check > 0 && *ok != jscheck_valid(body, blen, NULL))
		__builtin_trap();
	if (!check && !*ok)
		__builtin_trap();
	evbuffer_free(in);
	catalog_stream_free(st);
	return out;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t clen = nul != NULL ? (size_t)(nul - data) : size;
	const char *body = nul != NULL ? (const char *)nul + 1 : "";
	size_t blen = nul != NULL ? size - clen - 1 : 0, outlen = 0;
	struct catalog *c = catalog_new();
	char err[256], *out;
	json_t *j;
	struct evbuffer *sout, *cout;
	bool valid, nodup, ok;
	int check;

	(void)catalog_update(c, (const char *)data, clen, 1, err, sizeof(err));
	/* Garbage in is passed on as it came; JSON in must stay JSON. */
	j = json_loadb(body, blen, 0, NULL);
	valid = j != NULL;
	json_decref(j);
	j = json_loadb(body, blen, JSON_REJECT_DUPLICATES, NULL);
	nodup = j != NULL;
	json_decref(j);
	out = catalog_rewrite(c, true, body, blen, "http://up:9001/base",
	    "http://floe:8181", "warehouse", &outlen);
	/* Checked in the same pass: the same bytes, when it is JSON. */
	sout = stream(c, body, blen, data, size, 0, &ok);
	for (check = 1; sout != NULL && check <= 2; check++) {
		if ((cout = stream(c, body, blen, data, size, check, &ok)) ==
		    NULL)
			__builtin_trap();
		if (ok &&
		    (evbuffer_get_length(cout) != evbuffer_get_length(sout) ||
			(evbuffer_get_length(sout) > 0 &&
			    memcmp(evbuffer_pullup(cout, -1),
				evbuffer_pullup(sout, -1),
				evbuffer_get_length(sout)) != 0)))
			__builtin_trap();
		evbuffer_free(cout);
	}
	if (sout != NULL) {
		if (out != NULL && nodup &&
		    (evbuffer_get_length(sout) != outlen ||
			memcmp(evbuffer_pullup(sout, -1), out, outlen) != 0))
			__builtin_trap();
		/* JSON the whole rewrite leaves alone, the stream does too. */
		if (out == NULL && valid && nodup &&
		    (evbuffer_get_length(sout) != blen ||
			(blen > 0 &&
			    memcmp(evbuffer_pullup(sout, -1), body, blen) != 0)))
			__builtin_trap();
		evbuffer_free(sout);
	}
	if (out != NULL) {
		j = json_loadb(out, outlen, 0, NULL);
		if (j == NULL && valid)
			__builtin_trap();
		json_decref(j);
		free(out);
	}
	out = catalog_rewrite(c, false, body, blen, "https://up", "http://floe",
	    "lakehouse", &outlen);
	free(out);
	catalog_free(c);
	return 0;
}
