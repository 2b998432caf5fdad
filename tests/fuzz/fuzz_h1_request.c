/*
 * floe: fuzz_h1_request.c -- libFuzzer target for the front end's HTTP/1.1
 * request framing: the input arrives in two writes (split where its first
 * byte says) and is parsed message after message, as pipelined requests,
 * by one parser and by a new parser for each message (fuzz_h1.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>

#include "proxy/h1.h"
#include "tests/fuzz/fuzz_h1.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/*
 * Read DATA, SPLIT bytes first, message after message; FRESH: a new
 * parser for each. The digest of all that was read.
 */
static uint64_t
fuzz_run(const uint8_t *data, size_t size, size_t split, bool fresh)
{
	struct h1_limits lim = { 4096, 32, 65536 };
	struct evbuffer *in;
	struct h1_msg *m;
	struct h1 *h;
	uint64_t x = 0xcbf29ce484222325ULL;
	size_t i;
	int n = 0;

	h = h1_new(H1_REQUEST, &lim);
	in = evbuffer_new();
	evbuffer_add(in, data, split);
	for (;;) {
		enum h1_rc rc = h1_parse(h, in);

		if (rc == H1_MORE && split < size) {
			evbuffer_add(in, data + split, size - split);
			split = size;
			continue;
		}
		if (rc == H1_MORE)
			rc = h1_eof(h);
		x = fuzz_mix_num(x, rc);
		if (rc != H1_DONE) {
			x = fuzz_mix_error(x, h);
			break;
		}
		m = h1_msg(h);
		/* Touch what the request path reads. */
		for (i = 0; i < m->nhdrs; i++)
			if (m->hdrs[i].name_len != strlen(m->hdrs[i].name))
				__builtin_trap();
		(void)h1_find(m, "Authorization");
		fuzz_check_fields(m);
		if (m->target == NULL || strlen(m->target) != m->target_len)
			__builtin_trap();
		x = fuzz_mix_msg(x, m);
		if (++n > 64 || evbuffer_get_length(in) == 0)
			break;
		if (fresh) {
			h1_free(h);
			h = h1_new(H1_REQUEST, &lim);
		} else
			h1_reset(h);
	}
	x = fuzz_mix_num(x, evbuffer_get_length(in));
	h1_free(h);
	evbuffer_free(in);
	return x;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t split;

	if (size < 1)
		return 0;
	split = size > 1 ? data[0] % size : 0;
	data++;
	size--;
	if (split > size)
		split = size;
	if (fuzz_run(data, size, split, false) !=
	    fuzz_run(data, size, split, true))
		__builtin_trap();
	return 0;
}
