/*
 * floe: fuzz_h1_request.c -- libFuzzer target for the front end's HTTP/1.1
 * request framing: the input arrives in two writes (split where its first
 * byte says) and is parsed message after message, as pipelined requests.
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
	struct h1_limits lim = { 4096, 32, 65536 };
	struct evbuffer *in;
	struct h1_msg *m;
	struct h1 *h;
	size_t split, i;
	int n = 0;

	if (size < 1)
		return 0;
	split = size > 1 ? data[0] % size : 0;
	data++;
	size--;
	if (split > size)
		split = size;
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
		if (rc != H1_DONE)
			break;
		m = h1_msg(h);
		/* Touch what the request path reads. */
		for (i = 0; i < m->nhdrs; i++)
			if (m->hdrs[i].name_len != strlen(m->hdrs[i].name))
				__builtin_trap();
		(void)h1_find(m, "Authorization");
		fuzz_check_fields(m);
		(void)evbuffer_get_length(m->body);
		if (m->target == NULL || strlen(m->target) != m->target_len)
			__builtin_trap();
		if (++n > 64 || evbuffer_get_length(in) == 0)
			break;
		h1_reset(h);
	}
	(void)h1_error_text(h);
	h1_free(h);
	evbuffer_free(in);
	return 0;
}
