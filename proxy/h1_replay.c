/*
 * floe: h1_replay.c -- a head seen before is not parsed again.
 *
 * An engine sends the same head for the same table over and over on its
 * connection (the same target, token, agent and version), and a catalog
 * answers an unchanged table with the same head on the pooled connection
 * floe reads it from. Parsing is a function of the bytes alone: the
 * parser starts fresh at each message (h1_reset), and what it makes of a
 * head depends only on them, the side (request or answer), the limits
 * (fixed for a struct h1) and whether the answer is to a HEAD. So when a
 * message begins with the very bytes of the last head the parser read
 * whole and without error, what it would make of them is what it made:
 * the message is copied from the record instead, and the scan, the parser
 * and its callbacks do not run. A byte that differs, a head split across
 * reads, or another HEAD mark, and the message is parsed as always.
 *
 * Only heads after which the parser holds nothing are recorded: a message
 * that ends at its blank line, or whose Content-Length body h1_parse moves
 * itself. A chunked body, or one read until the close, is the parser's to
 * frame, so those heads are parsed each time. The record is bounded
 * (H1_REPLAY_MAX): a head with a long token is recorded, one that nears
 * max_head is not.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/xmalloc.h"
#include "proxy/h1.h"
#include "proxy/h1_impl.h"

/* The most one record takes: the struct, the headers and both copies. */
#define H1_REPLAY_MAX 8192

/* P, a pointer into H's head buffer, in the record's copy of it at BUF. */
static inline const char *
h1_moved(const struct h1 *h, char *buf, const char *p)
{
	return p != NULL ? buf + (p - h->buf) : NULL;
}

/*
 * Forget the record. It may hold a client's credential (the head's
 * Authorization): zeroed before it is freed, as the connection's own
 * copy is.
 */
void
h1_unrecord(struct h1 *h)
{
	if (h->rec == NULL)
		return;
	explicit_bzero(h->rec, h->rec->size);
	free(h->rec);
	h->rec = NULL;
}

/*
 * The message H has just parsed ended its head at byte RAW_LEN of RAW,
 * which holds the whole head from its first byte: keep both.
 */
void
h1_record(struct h1 *h, const char *raw, size_t raw_len)
{
	struct h1_replay *r = h->rec;
	struct h1_header *hd;
	size_t hsize = h->msg.nhdrs * sizeof(*hd);
	size_t size = sizeof(*r) + hsize + h->used + raw_len;
	char *buf, *raw_copy;
	unsigned i;

	if (size > H1_REPLAY_MAX)
		return;
	if (r == NULL || r->size < size) {
		h1_unrecord(h);
		/* Room for a somewhat longer head next time. */
		size = (size + 255) & ~(size_t)255;
		r = h->rec = xmalloc(size);
		r->size = size;
	}
	hd = (struct h1_header *)(void *)(r + 1);
	buf = (char *)(hd + h->msg.nhdrs);
	raw_copy = buf + h->used;
	memcpy(buf, h->buf, h->used);
	memcpy(raw_copy, raw, raw_len);
	for (i = 0; i < h->msg.nhdrs; i++) {
		hd[i] = h->hdrs[i];
		hd[i].name = h1_moved(h, buf, hd[i].name);
		hd[i].value = h1_moved(h, buf, hd[i].value);
	}
	r->raw = raw_copy;
	r->raw_len = raw_len;
	r->head_response = h->head_response;
	r->state = h->state;
	r->need = h->need;
	r->msg = h->msg;
	r->msg.hdrs = hd;
	r->msg.target = h1_moved(h, buf, h->msg.target);
}

/*
 * IN is a fresh message's bytes (nothing of it read yet). When it begins
 * with the recorded head, in one piece, the head is taken from IN and the
 * message is what parsing it made; true. Else nothing changes; false.
 */
bool
h1_replay(struct h1 *h, struct evbuffer *in)
{
	const struct h1_replay *r = h->rec;
	struct evbuffer_iovec v;

	if (r->head_response != h->head_response ||
	    evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len < r->raw_len ||
	    memcmp(v.iov_base, r->raw, r->raw_len) != 0)
		return false;
	h->msg = r->msg;
	h->state = r->state;
	h->need = r->need;
	h->started = true;
	h->head_done = true;
	h->scan_done = true;
	h->replayed = true;
	evbuffer_drain(in, r->raw_len);
	return true;
}
