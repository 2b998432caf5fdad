/*
 * floe: h1_chunks.c -- the strict scan of a chunked body, over the bytes
 * the parser has consumed (h1.c feeds it).
 */
#include <stddef.h>
#include <stdint.h>

#include "lib/units.h"
#include "proxy/h1.h"
#include "proxy/h1_impl.h"

/*
 * Scan chunked body bytes the parser has consumed, rather than trust its
 * leniency: "3 x" is not size 3 with an extension and a bare LF does not
 * end chunk data (RFC 9112 7.1); a hop that disagrees frames the body
 * differently. Sizes are hex digits only (at most 16), then ';' and an
 * extension (at most max_head bytes) or CRLF; data ends in CRLF; trailer
 * lines in CRLF, at most max_head bytes of them.
 */
int
h1_scan_chunks(struct h1 *h, const char *p, size_t n)
{
	size_t i, k;
	char c;
	int v;

	for (i = 0; i < n && h->cs != H1_CS_DONE; i++) {
		c = p[i];
		switch (h->cs) {
		case H1_CS_SIZE:
			if ((v = units_hexval(c)) >= 0) {
				if (h->cdigits++ == 16)
					return h1_fail(h, 400,
					    "chunk size too large");
				h->csize = h->csize << 4 | (unsigned)v;
			} else if (h->cdigits > 0 && c == ';') {
				h->cs = H1_CS_EXT;
				h->scan_len = 0;
			} else if (h->cdigits > 0 && c == '\r')
				h->cs = H1_CS_SIZE_LF;
			else
				return h1_fail(h, 400,
				    "invalid chunk size line");
			break;
		case H1_CS_EXT:
			if (c == '\r')
				h->cs = H1_CS_SIZE_LF;
			else if ((c < ' ' && c != '\t') || c == 0x7f)
				return h1_fail(h, 400,
				    "invalid character in a chunk extension");
			else if (++h->scan_len > h->lim.max_head)
				return h1_fail(h, 400,
				    "chunk extension too long");
			break;
		case H1_CS_SIZE_LF:
			if (c != '\n')
				return h1_fail(h, 400,
				    "chunk size line without "
				    "CRLF");
			h->cs = h->csize == 0 ? H1_CS_TRAILER : H1_CS_DATA;
			h->scan_len = 0;
			h->scan_total = 0;
			break;
		case H1_CS_DATA:
			k = n - i < h->csize ? n - i : h->csize;
			h->csize -= k;
			i += k - 1;
			if (h->csize == 0)
				h->cs = H1_CS_DATA_CR;
			break;
		case H1_CS_DATA_CR:
		case H1_CS_DATA_LF:
			if (c != (h->cs == H1_CS_DATA_CR ? '\r' : '\n'))
				return h1_fail(h, 400,
				    "chunk data not followed by CRLF");
			if (h->cs == H1_CS_DATA_LF) {
				h->cs = H1_CS_SIZE;
				h->cdigits = 0;
			} else
				h->cs = H1_CS_DATA_LF;
			break;
		case H1_CS_TRAILER:
			if (++h->scan_total > h->lim.max_head)
				return h1_fail(h, 431,
				    "trailer section too large");
			if (c == '\r')
				h->cs = H1_CS_TRAILER_LF;
			else if (c == '\n' ||
			    (h->scan_len == 0 && (c == ' ' || c == '\t')))
				return h1_fail(h, 400, "malformed trailer");
			else
				h->scan_len++;
			break;
		case H1_CS_TRAILER_LF:
			if (c != '\n')
				return h1_fail(h, 400, "malformed trailer");
			h->cs = h->scan_len == 0 ? H1_CS_DONE : H1_CS_TRAILER;
			h->scan_len = 0;
			break;
		case H1_CS_OFF:
		case H1_CS_DONE:
			break;
		}
	}
	return 0;
}
