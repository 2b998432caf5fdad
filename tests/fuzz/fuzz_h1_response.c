/*
 * floe: fuzz_h1_response.c -- libFuzzer target for the upstream pool's
 * answer framing: the first byte picks a split point and whether the
 * answers are to a HEAD (the first, third, ...; the others to a GET); the
 * peer's close ends the input (h1_eof). Read by one parser and by a new
 * parser for each answer (fuzz_h1.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>

#include "proxy/h1.h"
#include "tests/fuzz/fuzz_h1.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/*
 * Read DATA, SPLIT bytes first, answer after answer, each to a HEAD when
 * HEAD; FRESH: a new parser for each. The digest of all that was read.
 */
static uint64_t
fuzz_run(const uint8_t *data, size_t size, size_t split, bool head,
    bool fresh)
{
	struct h1_limits lim = { 8192, 64, 1 << 20 };
	struct evbuffer *in;
	struct h1_msg *m;
	struct h1 *h;
	uint64_t x = 0xcbf29ce484222325ULL;
	int n = 0;

	h = h1_new(H1_RESPONSE, &lim);
	h1_set_head_response(h, head);
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
		if (m->status < 100 || m->status > 599)
			__builtin_trap();
		(void)h1_find(m, "ETag");
		fuzz_check_fields(m);
		(void)h1_reason(m->status);
		x = fuzz_mix_msg(x, m);
		if (++n > 16 || evbuffer_get_length(in) == 0)
			break;
		/* A keep-alive connection reads the next answer. */
		if (fresh) {
			h1_free(h);
			h = h1_new(H1_RESPONSE, &lim);
		} else
			h1_reset(h);
		/* Every other answer to a HEAD when the first byte says so. */
		h1_set_head_response(h, head && n % 2 == 0);
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
	bool head;

	if (size < 1)
		return 0;
	head = data[0] & 0x80;
	split = size > 1 ? (data[0] & 0x7f) % size : 0;
	data++;
	size--;
	if (split > size)
		split = size;
	if (fuzz_run(data, size, split, head, false) !=
	    fuzz_run(data, size, split, head, true))
		__builtin_trap();
	return 0;
}
