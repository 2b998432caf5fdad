/*
 * floe: fuzz_h1.h -- what the two HTTP/1.1 framing targets
 * (fuzz_h1_request.c, fuzz_h1_response.c) check of every message parsed.
 */
#ifndef FLOE_FUZZ_H1_H
#define FLOE_FUZZ_H1_H

#include "proxy/h1.h"

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
