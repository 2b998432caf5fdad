/*
 * floe: catalog_edits.c -- the edits a streamed rewrite made, kept and
 * replayed: an answer byte for byte the same as one rewritten before gets
 * the same edits (the rewrite of a byte depends only on the bytes before
 * it and on the few a URL prefix covers after it), so it is passed on
 * with them, unscanned, while it is compared; and at its first difference
 * a stream takes over, as if it had rewritten the answer from its start.
 * The list: its count and lag, its edits (struct catalog_edit), then the
 * bytes they insert. No I/O.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "cache/memo.h"
#include "proxy/catalog.h"
#include "proxy/catalog_impl.h"

/* The list's head: the count of edits and the lag. */
#define EDITS_HEAD (2 * sizeof(size_t))

char *
catalog_stream_edits(const struct catalog_stream *st, size_t *len)
{
	size_t lag = st->urls ? st->ub.u.fromlen - 1 : 0, n = st->nlog;
	size_t elen = n * sizeof(struct catalog_edit);
	char *p;

	*len = EDITS_HEAD + elen + st->loginslen;
	p = xmalloc(*len);
	memcpy(p, &n, sizeof(n));
	memcpy(p + sizeof(n), &lag, sizeof(lag));
	if (n > 0)
		memcpy(p + EDITS_HEAD, st->log, elen);
	if (st->loginslen > 0)
		memcpy(p + EDITS_HEAD + elen, st->logins, st->loginslen);
	return p;
}

bool
catalog_replay_init(struct catalog_replay *rp, const char *ed, size_t len,
    struct memo_buf *same)
{
	struct catalog_edit e;
	size_t n, i, ins = 0, at = 0;

	memset(rp, 0, sizeof(*rp));
	if (len < EDITS_HEAD)
		return false;
	memcpy(&n, ed, sizeof(n));
	memcpy(&rp->lag, ed + sizeof(n), sizeof(rp->lag));
	if (n > (len - EDITS_HEAD) / sizeof(e))
		return false;
	/* In order, and the inserted bytes all there. */
	for (i = 0; i < n; i++) {
		memcpy(&e, ed + EDITS_HEAD + i * sizeof(e), sizeof(e));
		if (e.at < at || e.inslen > len || ins > len - e.inslen)
			return false;
		at = e.at + e.cut;
		ins += e.inslen;
	}
	if (ins != len - EDITS_HEAD - n * sizeof(e))
		return false;
	rp->ed = ed;
	rp->same = same;
	rp->n = n;
	rp->ins = EDITS_HEAD + n * sizeof(e);
	return true;
}

/* evbuffer_add_reference's cleanup: the reference to the answer's bytes. */
static void
replay_unref(const void *data __unused, size_t len __unused, void *arg)
{
	memo_buf_unref(arg);
}

/*
 * Pass on the next N bytes of IN, which are the answer's from RP->at:
 * those of the list's answer, by reference (a move would copy all but a
 * whole piece of IN, for the bytes the lag keeps back).
 */
static void
replay_move(struct catalog_replay *rp, struct evbuffer *in,
    struct evbuffer *out, size_t n)
{
	if (n == 0)
		return;
	evbuffer_drain(in, n);
	if (evbuffer_add_reference(out, rp->same->data + rp->at, n,
		replay_unref, memo_buf_ref(rp->same)) == -1)
		abort();
}

void
catalog_replay_run(struct catalog_replay *rp, struct evbuffer *in,
    struct evbuffer *out, size_t equal, bool end)
{
	size_t to = end ? equal : equal > rp->lag ? equal - rp->lag : 0;
	struct catalog_edit e;

	while (rp->i < rp->n) {
		memcpy(&e, rp->ed + EDITS_HEAD + rp->i * sizeof(e), sizeof(e));
		if (e.at >= to)
			break;
		/* Not all of its cut compared yet (past the lag): up to it. */
		if (e.at + e.cut > to) {
			to = e.at;
			break;
		}
		replay_move(rp, in, out, e.at - rp->at);
		evbuffer_drain(in, e.cut);
		evbuffer_add(out, rp->ed + rp->ins, e.inslen);
		rp->ins += e.inslen;
		rp->at = e.at + e.cut;
		rp->i++;
	}
	if (to > rp->at) {
		replay_move(rp, in, out, to - rp->at);
		rp->at = to;
	}
}

/*
 * The stream has the first AT bytes, MEMO's, their output thrown away.
 * It may keep back its last few, a string that begins as the URL prefix
 * but was not seen whole: they go at IN's start for it, and the first as
 * many bytes of its output are left out, for they were passed on as they
 * are. As they are, for the replay lagged: the string begins at S < AT,
 * S + the prefix's length <= AT + lag <= the bytes compared equal, so
 * the answer has there what MEMO has; and that is not the prefix, for an
 * edit at S would have been replayed whole (S + its cut <= AT), and the
 * stream would not keep back from S. The prefix holds no quote, so no
 * other string, nor any bracket, is between S and AT: no other edit.
 */
void
catalog_stream_resume(struct catalog_stream *st, struct evbuffer *in,
    const char *memo, size_t at)
{
	struct evbuffer *tmp, *sink;
	size_t held;

	if ((tmp = evbuffer_new()) == NULL || (sink = evbuffer_new()) == NULL)
		abort();
	if (at > 0)
		evbuffer_add_reference(tmp, memo, at, NULL, NULL);
	/* MEMO's bytes were JSON: a check of them does not fail. */
	(void)catalog_stream_run(st, tmp, sink, false);
	held = evbuffer_get_length(tmp);
	if (held > 0 && evbuffer_prepend(in, memo + at - held, held) == -1)
		abort();
	st->drop += held;
	evbuffer_free(tmp);
	evbuffer_free(sink);
}
