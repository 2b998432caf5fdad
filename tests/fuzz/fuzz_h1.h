/*
 * floe: fuzz_h1.h -- what the two HTTP/1.1 framing targets
 * (fuzz_h1_request.c, fuzz_h1_response.c) check of every message parsed,
 * and the digest of a run both compare: each input is read once by one
 * parser that may replay a head it read before (h1_replay.c) and once by
 * a new parser for every message, which never does. The two must agree
 * on every message, every refusal and every byte left.
 */
#ifndef FLOE_FUZZ_H1_H
#define FLOE_FUZZ_H1_H

#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>

#include "proxy/h1.h"

/* FNV-1a over N bytes at P, from X. */
static inline uint64_t
fuzz_mix(uint64_t x, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n-- > 0)
		x = (x ^ *b++) * 0x100000001b3ULL;
	return x;
}

static inline uint64_t
fuzz_mix_num(uint64_t x, uint64_t v)
{
	return fuzz_mix(x, &v, sizeof(v));
}

/* X with all of M that a caller can read mixed in. */
static inline uint64_t
fuzz_mix_msg(uint64_t x, struct h1_msg *m)
{
	size_t blen = evbuffer_get_length(m->body);
	unsigned i;

	x = fuzz_mix_num(x, m->method);
	x = fuzz_mix_num(x, m->status);
	x = fuzz_mix_num(x, m->http_minor);
	x = fuzz_mix_num(x, m->keep_alive);
	x = fuzz_mix_num(x, m->has_body_framing);
	if (m->method_name != NULL)
		x = fuzz_mix(x, m->method_name, strlen(m->method_name));
	x = fuzz_mix_num(x, m->target_len);
	if (m->target != NULL)
		x = fuzz_mix(x, m->target, m->target_len + 1);
	x = fuzz_mix_num(x, m->nhdrs);
	for (i = 0; i < m->nhdrs; i++) {
		x = fuzz_mix_num(x, m->hdrs[i].field);
		x = fuzz_mix(x, m->hdrs[i].name, m->hdrs[i].name_len + 1);
		x = fuzz_mix_num(x, m->hdrs[i].value_len);
		x = fuzz_mix(x, m->hdrs[i].value, m->hdrs[i].value_len);
	}
	x = fuzz_mix(x, m->first, sizeof(m->first));
	x = fuzz_mix_num(x, blen);
	return fuzz_mix(x, evbuffer_pullup(m->body, -1), blen);
}

/* X with a refusal mixed in. */
static inline uint64_t
fuzz_mix_error(uint64_t x, const struct h1 *h)
{
	const char *t = h1_error_text(h);

	x = fuzz_mix_num(x, (uint64_t)h1_error_status(h));
	return fuzz_mix(x, t, strlen(t));
}

/* Each header's field is its name's; first[] finds the first of each. */
static inline void
fuzz_check_fields(const struct h1_msg *m)
{
	const struct h1_header *g;
	enum h1_field f;
	unsigned i;

	for (i = 0; i < m->nhdrs; i++) {
		f = m->hdrs[i].field;
		if (f != h1_field_of(m->hdrs[i].name, m->hdrs[i].name_len))
			__builtin_trap();
		if (f != H1_F_OTHER &&
		    ((g = h1_get(m, f)) == NULL || g > &m->hdrs[i]))
			__builtin_trap();
	}
	for (f = H1_F_OTHER + 1; f < H1_F_COUNT; f++)
		if (m->first[f] > m->nhdrs ||
		    (m->first[f] != 0 && m->hdrs[m->first[f] - 1].field != f))
			__builtin_trap();
}

#endif
