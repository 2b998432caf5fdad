/*
 * floe: fuzz_h1_response.c -- libFuzzer target for the upstream pool's
 * answer framing: the first byte picks a split point and whether the
 * answer is to a HEAD; the peer's close ends the input (h1_eof).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>

#include "proxy/h1.h"
#include "tests/fuzz/fuzz_h1.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct h1_limits lim = { 8192, 64, 1 << 20 };
	struct evbuffer *in;
	struct h1_msg *m;
	struct h1 *h;
	size_t split;
	bool head;
	int n = 0;

	if (size < 1)
		return 0;
	head = data[0] & 0x80;
	split = size > 1 ? (data[0] & 0x7f) % size : 0;
	data++;
	size--;
	if (split > size)
		split = size;
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
		if (rc != H1_DONE)
			break;
		m = h1_msg(h);
		if (m->status < 100 || m->status > 599)
			__builtin_trap();
		(void)h1_find(m, "ETag");
		fuzz_check_fields(m);
		(void)h1_reason(m->status);
		if (++n > 16 || evbuffer_get_length(in) == 0)
			break;
		/* A keep-alive connection reads the next answer. */
		h1_reset(h);
		h1_set_head_response(h, head);
	}
	h1_free(h);
	evbuffer_free(in);
	return 0;
}
