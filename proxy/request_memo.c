/*
 * floe: request_memo.c -- a LoadTable answer checked once while it does
 * not change. Engines load the same tables over and over, and a catalog
 * answers an unchanged table with the same bytes: the memo (cache/memo.h)
 * keeps, per side and table, the last answer found JSON and what the
 * rewrite made of it. The pool compares the answer with it as it arrives
 * instead of checking it (upstream_body.c); an answer equal to it to its
 * last byte is sent as the memo's rewrite, when that was made with the
 * same parameters; a streamed one, with the edits the stream made of the
 * memo's body with them (request_stream.c). Anything else is checked and
 * rewritten as always, and kept (for a table whose answers keep
 * changing, only now and then).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/shortcopy.h"
#include "cache/memo.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/request_impl.h"
#include "proxy/server.h"
#include "routing/route.h"

static void request_memo_unref_cb(const void *, size_t, void *);
static size_t request_memo_params(struct request *, enum route_side, char *,
    size_t);

/*
 * The memo's body for R's answer from SIDE, if it has one: R keeps a
 * reference to it until it ends (the pool its own). Keyed by the side
 * and the request's target: the key only says where to look.
 */
void
request_memo_look(struct request *r, enum route_side side)
{
	memo_buf_unref(r->memo_in);
	r->memo_in = NULL;
	r->memo_hit = false;
	if (!r->merge_config || !memo_is_on(r->f->memo))
		return;
	r->memo_in =
	    memo_get(r->f->memo, side, r->msg->target, r->msg->target_len);
}

/* evbuffer_add_reference cleanup for a body shared with the memo. */
static void
request_memo_unref_cb(const void *data __unused, size_t len __unused, void *arg)
{
	memo_buf_unref(arg);
}

/*
 * BODY's first BLEN bytes become B's, sent without a copy; the caller's
 * reference to B is BODY's until it is sent.
 */
void
request_memo_send(struct evbuffer *body, size_t blen, struct memo_buf *b)
{
	evbuffer_drain(body, blen);
	if (evbuffer_add_reference(body, b->data, b->len, request_memo_unref_cb,
		b) == -1)
		fatalx("%s: out of memory", __func__);
}

/*
 * Everything request_rewrite's output depends on besides the answer, into
 * P (LEN bytes): the merge, the side (the pinned prefix), the catalog's
 * config generation, the upstream uri and floe's base URL as this client
 * reaches it, written from its parts (request_floe_host) in place. Its
 * length, 0 when it does not fit (nothing is then reused).
 */
static size_t
request_memo_params(struct request *r, enum route_side side, char *p,
    size_t len)
{
	const struct conf_target *t = &r->f->conf->target[side];
	uint64_t gen = r->f->cat[side]->generation;
	const char *scheme, *host;
	size_t slen, hlen, n = 0;

	host = request_floe_host(r, REQUEST_FLOE_BASE, &scheme, &slen, &hlen);
	if (2 + sizeof(gen) + t->uri_len + 1 + slen + hlen > len)
		return 0;
	p[n++] = r->merge_config;
	p[n++] = (char)side;
	memcpy(p + n, &gen, sizeof(gen));
	n += sizeof(gen);
	short_copy(p + n, t->uri, t->uri_len);
	n += t->uri_len;
	p[n++] = '\0';
	short_copy(p + n, scheme, slen);
	n += slen;
	short_copy(p + n, host, hlen);
	return n + hlen;
}

/*
 * Answer R with STATUS, HDRS (HLEN bytes) and the memo's B as the body
 * (the caller's reference to B is the answer's), referenced where it is.
 */
void
request_memo_reply(struct request *r, unsigned status, const char *hdrs,
    size_t hlen, struct memo_buf *b, int64_t content_length)
{
	server_reply_ref(r->conn, status, hdrs, hlen, b->data, b->len,
	    content_length, request_memo_unref_cb, b);
}

/*
 * request_rewrite for R's LoadTable answer from SIDE, BODY (BLEN bytes,
 * found JSON), with the memo: an answer that was the memo's is sent as
 * its rewrite when that was made with the same parameters (no rewrite,
 * no search), and gets one made otherwise; another is rewritten and, when
 * memo_miss says so, kept with its rewrite. The answer's new length. With
 * SEND (not NULL), a rewrite the memo made is not put in BODY but given
 * in *SEND (a reference for the caller; BODY then holds the answer as it
 * came), else *SEND is left as it was.
 */
size_t
request_memo_rewrite(struct request *r, enum route_side side,
    struct evbuffer *body, size_t blen, struct memo_buf **send)
{
	struct memo *memo = r->f->memo;
	const char *key = r->msg->target;
	size_t klen = r->msg->target_len, plen, n;
	char params[REQUEST_MEMO_PARAMS];
	struct memo_buf *in, *out;
	bool same;

	if (r->memo_hit && r->memo_in != NULL) {
		r->f->stats.side[side].memo_hits++;
		plen = request_memo_params(r, side, params, sizeof(params));
		switch (memo_hit(memo, side, key, klen, r->memo_in, params,
		    plen, &out)) {
		case MEMO_OUT_SAME:
			return blen;
		case MEMO_OUT_BUF:
			if (send != NULL)
				*send = out;
			else
				request_memo_send(body, blen, out);
			return out->len;
		case MEMO_OUT_NONE:
			break;
		}
		n = request_rewrite(r, side, body, blen, &out, &same);
		memo_put(memo, side, key, klen, r->memo_in,
		    plen > 0 ? params : NULL, plen, out, same);
		memo_buf_unref(out);
		return n;
	}
	if (!memo_miss(memo, side, key, klen, blen))
		return request_rewrite(r, side, body, blen, NULL, NULL);
	plen = request_memo_params(r, side, params, sizeof(params));
	in = memo_buf_new(blen);
	if (evbuffer_copyout(body, in->data, blen) != (ev_ssize_t)blen)
		fatalx("%s: evbuffer_copyout", __func__);
	n = request_rewrite(r, side, body, blen, &out, &same);
	memo_put(memo, side, key, klen, in, plen > 0 ? params : NULL, plen, out,
	    same);
	memo_buf_unref(in);
	memo_buf_unref(out);
	return n;
}

/* Would the memo keep R's answer from SIDE, if it differs (memo_wants)? */
bool
request_memo_wants(struct request *r, enum route_side side)
{
	if (!r->merge_config || !memo_is_on(r->f->memo))
		return false;
	return memo_wants(r->f->memo, side, r->msg->target, r->msg->target_len);
}

/* The largest answer the memo keeps. */
size_t
request_memo_max(const struct request *r)
{
	return memo_entry_max(r->f->memo);
}

/*
 * R's answer from SIDE is streamed: the parameters of its rewrite into
 * PARAMS (REQUEST_MEMO_PARAMS bytes; *PLEN 0 when the memo is not used),
 * and the edits a stream made of the memo's body with the same ones (a
 * reference for the caller), or NULL.
 */
struct memo_buf *
request_memo_stream_edits(struct request *r, enum route_side side, char *params,
    size_t *plen)
{
	*plen = 0;
	if (!r->merge_config || !memo_is_on(r->f->memo))
		return NULL;
	*plen = request_memo_params(r, side, params, REQUEST_MEMO_PARAMS);
	if (*plen == 0 || r->memo_in == NULL)
		return NULL;
	return memo_edits(r->f->memo, side, r->msg->target, r->msg->target_len,
	    r->memo_in, params, *plen);
}

/* Keep what MADE edited of IN, rewritten with PARAMS, for R and SIDE. */
static void
request_memo_keep_edits(struct request *r, enum route_side side,
    struct memo_buf *in, const char *params, size_t plen,
    struct catalog_stream *made)
{
	struct memo_buf *ed;
	size_t n;
	char *p;

	if (made == NULL || plen == 0)
		return;
	p = catalog_stream_edits(made, &n);
	ed = memo_buf_take(p, n);
	memo_put_edits(r->f->memo, side, r->msg->target, r->msg->target_len, in,
	    params, plen, ed);
	memo_buf_unref(ed);
}

/*
 * R's answer from SIDE was streamed whole and is JSON: a HIT (the memo's
 * body to its last byte), or counted as a miss and kept when memo_miss
 * says so and COPY (LEN bytes, malloc'd, taken; NULL: none) holds it.
 * MADE, the stream that rewrote it from its first byte with PARAMS
 * (PLEN bytes, from request_memo_stream_edits), gives the edits kept
 * with it; NULL: the memo's were replayed, or there are none.
 */
void
request_memo_streamed(struct request *r, enum route_side side, bool hit,
    char *copy, size_t len, const char *params, size_t plen,
    struct catalog_stream *made)
{
	struct memo *memo = r->f->memo;
	const char *key = r->msg->target;
	size_t klen = r->msg->target_len;
	struct memo_buf *in, *out;

	if (!r->merge_config || !memo_is_on(memo)) {
		free(copy);
		return;
	}
	if (hit && r->memo_in != NULL) {
		r->f->stats.side[side].memo_hits++;
		memo_hit(memo, side, key, klen, r->memo_in, NULL, 0, &out);
		memo_buf_unref(out);
		free(copy);
		request_memo_keep_edits(r, side, r->memo_in, params, plen,
		    made);
		return;
	}
	if (!memo_miss(memo, side, key, klen, len) || copy == NULL) {
		free(copy);
		return;
	}
	in = memo_buf_take(copy, len);
	memo_put(memo, side, key, klen, in, NULL, 0, NULL, false);
	request_memo_keep_edits(r, side, in, params, plen, made);
	memo_buf_unref(in);
}
