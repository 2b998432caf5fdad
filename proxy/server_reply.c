/*
 * floe: server_reply.c -- what the front end writes to a connection: an
 * answer's head (Content-Length, or chunked), a whole answer (written at
 * once when the socket takes it, the rest left to the bufferevent), and
 * an answer given in pieces as it comes, whose source is told when the
 * client has taken what it holds. Part of the front end (server_impl.h).
 */
#include <sys/types.h>
#include <sys/uio.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/shortcopy.h"
#include "lib/units.h"
#include "proxy/h1.h"
#include "proxy/server.h"
#include "proxy/server_impl.h"
#include "proxy/sockio.h"
#include "proxy/tlsctx.h"

static const char *server_status_line(unsigned, size_t *);
static char *server_head(struct server_conn *, char *, unsigned, const char *,
    size_t, const char *, size_t, int64_t);
static void server_send_now(struct server_conn *, const char *, size_t,
    struct evbuffer *);

/*
 * STATUS's line, "HTTP/1.1 200 OK\r\n" (*LEN bytes). The last one made is
 * kept: nearly every answer has the status of the one before, and its
 * line is then copied whole, with no reason looked up, measured or digit
 * divided out. The reasons floe knows are at most 31 bytes; a longer one
 * would be cut to what the line holds.
 */
static const char *
server_status_line(unsigned status, size_t *len)
{
	static char line[64];
	static unsigned made;
	static size_t made_len; /* 0: none made yet */
	const char *reason;
	size_t rlen;
	char *o = line;

	if (status != made || made_len == 0) {
		reason = h1_reason(status);
		rlen = strlen(reason);
		if (rlen > sizeof(line) - 15)
			rlen = sizeof(line) - 15;
		memcpy(o, "HTTP/1.1 ", 9);
		o += 9;
		*o++ = '0' + status / 100 % 10;
		*o++ = '0' + status / 10 % 10;
		*o++ = '0' + status % 10;
		*o++ = ' ';
		memcpy(o, reason, rlen);
		o += rlen;
		*o++ = '\r';
		*o++ = '\n';
		made = status;
		made_len = (size_t)(o - line);
	}
	*len = made_len;
	return line;
}

/*
 * Write the head of an answer of STATUS at O (room for LLEN + HLEN + 96
 * bytes): its status line LINE (LLEN bytes, server_status_line), HDRS and
 * the framing; the end of what was written. A CONTENT_LENGTH below 0
 * makes it chunked.
 */
static char *
server_head(struct server_conn *c, char *o, unsigned status, const char *line,
    size_t llen, const char *hdrs, size_t hlen, int64_t content_length)
{
	memcpy(o, line, llen);
	o += llen;
	if (hlen > 0) {
		memcpy(o, hdrs, hlen);
		o += hlen;
	}
	if (content_length < 0) {
		memcpy(o, "Transfer-Encoding: chunked\r\n", 28);
		o += 28;
	} else if (status != 304 && status != 204 && status >= 200) {
		memcpy(o, "Content-Length: ", 16);
		o += 16;
		o += units_utoa(o, (uint64_t)content_length);
		*o++ = '\r';
		*o++ = '\n';
	}
	if (c->close_after) {
		memcpy(o, "Connection: close\r\n\r\n", 21);
		o += 21;
	} else {
		*o++ = '\r';
		*o++ = '\n';
	}
	return o;
}

/*
 * A plain connection with nothing queued: one sendmsg of the head (HEAD,
 * HLEN bytes) and BODY's first pieces, straight from where they are; only
 * what the socket did not take goes to the output buffer, which
 * server_flush then writes (and reports an error of). Spares the output
 * buffer's chain, its callbacks and its drain for nearly every answer.
 */
static void
server_send_now(struct server_conn *c, const char *head, size_t hlen,
    struct evbuffer *body)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct evbuffer_iovec iov[SERVER_SEND_VECS + 1];
	ssize_t w;
	size_t done;
	int n = 0;

	iov[0].iov_base = (void *)(uintptr_t)head;
	iov[0].iov_len = hlen;
	if (body != NULL &&
	    (n = evbuffer_peek(body, -1, NULL, iov + 1, SERVER_SEND_VECS)) >
		SERVER_SEND_VECS)
		n = SERVER_SEND_VECS;
	w = sockio_sendv(c->fd, iov, n + 1);
	done = w > 0 ? (size_t)w : 0;
	if (done < hlen)
		evbuffer_add(out, head + done, hlen - done);
	if (body != NULL) {
		evbuffer_drain(body, done > hlen ? done - hlen : 0);
		if (evbuffer_get_length(body) > 0)
			evbuffer_add_buffer(out, body);
	}
}

void
server_reply(struct server_conn *c, unsigned status, const char *hdrs,
    size_t hlen, struct evbuffer *body, int64_t content_length)
{
	size_t blen = body != NULL ? evbuffer_get_length(body) : 0;

	c->abort_cb = NULL;
	c->continued = false;
	c->streaming = false;
	if (content_length < 0)
		content_length = blen;
	if (body != NULL && (c->head_req || status == 304 || status == 204)) {
		evbuffer_drain(body, blen);
		body = NULL;
	}
	server_put_head(c, status, hdrs, hlen, body, content_length);
	server_answered(c);
}

/*
 * Nearly every answer the memo of checked answers gives: on a plain
 * connection with nothing queued, the head and the referenced bytes go
 * in one sendmsg and only what the socket did not take is queued (the
 * rest of the bytes referenced by the output buffer); no buffer chain is
 * made, peeked and freed. Anything else goes through server_reply.
 */
void
server_reply_ref(struct server_conn *c, unsigned status, const char *hdrs,
    size_t hlen, const void *data, size_t len, int64_t content_length,
    server_ref_done_cb done, void *arg)
{
	struct evbuffer *out = bufferevent_get_output(c->bev), *b;
	size_t llen, hl, off;
	const char *line = server_status_line(status, &llen);
	char head[SERVER_HEAD_NOW];
	struct iovec iov[2];
	ssize_t w;

	if (c->tls || c->head_req || status == 304 || status == 204 ||
	    status < 200 || llen + hlen + 96 > sizeof(head) ||
	    evbuffer_get_length(out) != 0) {
		if ((b = evbuffer_new()) == NULL ||
		    evbuffer_add_reference(b, data, len, done, arg) == -1)
			fatalx("%s: out of memory", __func__);
		server_reply(c, status, hdrs, hlen, b, content_length);
		evbuffer_free(b);
		return;
	}
	c->abort_cb = NULL;
	c->continued = false;
	c->streaming = false;
	hl = (size_t)(server_head(c, head, status, line, llen, hdrs, hlen,
			  content_length < 0 ? (int64_t)len : content_length) -
	    head);
	iov[0].iov_base = head;
	iov[0].iov_len = hl;
	iov[1].iov_base = (void *)(uintptr_t)data;
	iov[1].iov_len = len;
	w = sockio_sendv(c->fd, iov, 2);
	off = w > 0 ? (size_t)w : 0;
	if (off < hl)
		evbuffer_add(out, head + off, hl - off);
	off = off > hl ? off - hl : 0;
	if (off == len)
		done(data, len, arg);
	else if (evbuffer_add_reference(out, (const char *)data + off,
		     len - off, done, arg) == -1)
		fatalx("%s: out of memory", __func__);
	server_answered(c);
}

/*
 * Queue (or write at once) the head of an answer and BODY (moved; may be
 * NULL). CONTENT_LENGTH below 0: chunked.
 */
void
server_put_head(struct server_conn *c, unsigned status, const char *hdrs,
    size_t hlen, struct evbuffer *body, int64_t content_length)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct evbuffer_iovec v;
	size_t llen;
	const char *line = server_status_line(status, &llen);
	char head[SERVER_HEAD_NOW], *o;

	if (llen + hlen + 96 <= sizeof(head) && evbuffer_get_length(out) == 0) {
		o = server_head(c, head, status, line, llen, hdrs, hlen,
		    content_length);
		if (!c->tls)
			server_send_now(c, head, (size_t)(o - head), body);
		else if (tlsctx_send(c->bev, head, (size_t)(o - head), body) ==
		    -1) {
			log_debug("%s: %s: TLS write to %s failed", __func__,
			    c->srv->opts.name, c->peer);
			c->close_after = true;
		}
	} else {
		/*
		 * The whole head in one reserved extent, without printf. Over
		 * TLS a body that fits one record goes in the same extent:
		 * bufferevent_openssl makes a record, and a write, of each
		 * piece of its output, and one copy costs less than a second
		 * record.
		 */
		size_t blen = body != NULL ? evbuffer_get_length(body) : 0;
		size_t inl = c->tls && blen <= SERVER_TLS_RECORD ? blen : 0;
		int got;

		if (evbuffer_reserve_space(out, llen + hlen + 96 + inl, &v,
			1) != 1)
			fatalx("%s: out of memory", __func__);
		o = server_head(c, v.iov_base, status, line, llen, hdrs, hlen,
		    content_length);
		if (body != NULL && inl > 0 &&
		    (got = evbuffer_remove(body, o, inl)) > 0)
			o += got;
		v.iov_len = o - (char *)v.iov_base;
		evbuffer_commit_space(out, &v, 1);
		if (body != NULL && evbuffer_get_length(body) > 0)
			evbuffer_add_buffer(out, body);
	}
}

void
server_stream_start(struct server_conn *c, unsigned status, const char *hdrs,
    size_t hlen, int64_t content_length)
{
	c->continued = false;
	c->streaming = true;
	c->chunked = content_length < 0;
	c->chunk_crlf = false;
	server_put_head(c, status, hdrs, hlen, NULL, content_length);
	server_flush(c);
}

/*
 * A TLS connection with nothing queued: HEAD and BODY written at once
 * (tlsctx_send), the rest left to the bufferevent. A connection that
 * failed is closed (from its timer, see server_flush).
 */
static void
server_tls_send(struct server_conn *c, const char *head, size_t hlen,
    struct evbuffer *body)
{
	if (tlsctx_send(c->bev, head, hlen, body) == -1) {
		log_debug("%s: %s: TLS write to %s failed", __func__,
		    c->srv->opts.name, c->peer);
		c->closing = true;
	}
}

/*
 * The line before a chunk of N bytes into BUF: the CRLF that ends the
 * chunk before it, if there was one, and N in hex. One piece of output a
 * chunk, not three, and no printf. Returns its length, at most
 * SERVER_CHUNK_LINE.
 */
static size_t
server_chunk_line(struct server_conn *c, char buf[SERVER_CHUNK_LINE], size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char digits[2 * sizeof(n)];
	size_t k = 0, d = 0;

	do
		digits[d++] = hex[n & 0xf];
	while ((n >>= 4) != 0);
	if (c->chunk_crlf) {
		buf[k++] = '\r';
		buf[k++] = '\n';
	}
	while (d > 0)
		buf[k++] = digits[--d];
	buf[k++] = '\r';
	buf[k++] = '\n';
	c->chunk_crlf = true;
	return k;
}

bool
server_stream_add(struct server_conn *c, struct evbuffer *body)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	size_t n = evbuffer_get_length(body), k = 0;
	char line[SERVER_CHUNK_LINE];

	if (n > 0 && c->chunked)
		k = server_chunk_line(c, line, n);
	if (n > 0 && c->tls && !c->closing && evbuffer_get_length(out) == 0)
		server_tls_send(c, line, k, body);
	else if (n > 0) {
		if (k > 0)
			evbuffer_add(out, line, k);
		evbuffer_add_buffer(out, body);
	}
	server_flush(c);
	return !c->closing && c->held <= SERVER_CONN_BUDGET;
}

void
server_stream_end(struct server_conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	/* The last chunk's CRLF, the zero chunk and the empty trailer. */
	const char *end = c->chunk_crlf ? "\r\n0\r\n\r\n" : "0\r\n\r\n";
	size_t len = c->chunk_crlf ? 7 : 5;

	if (c->chunked && c->tls && evbuffer_get_length(out) == 0 &&
	    !c->closing)
		server_tls_send(c, end, len, NULL);
	else if (c->chunked)
		evbuffer_add(out, end, len);
	c->abort_cb = NULL;
	c->drain_cb = NULL;
	c->streaming = false;
	server_answered(c);
}

void
server_stream_abort(struct server_conn *c)
{
	/* The chunks sent stay whole: only the zero chunk is missing. */
	if (c->chunked && c->chunk_crlf && !c->closing)
		evbuffer_add(bufferevent_get_output(c->bev), "\r\n", 2);
	c->abort_cb = NULL;
	c->drain_cb = NULL;
	c->streaming = false;
	c->close_after = true;
	server_answered(c);
}

void
server_conn_on_drain(struct server_conn *c, server_abort_cb cb, void *arg)
{
	c->drain_cb = cb;
	c->drain_arg = arg;
}

void
server_reply_mem(struct server_conn *c, unsigned status, const char *ctype,
    const char *body, size_t len)
{
	struct evbuffer *b = NULL;
	char hdr[128];
	int n = 0;

	if (ctype != NULL)
		n = snprintf(hdr, sizeof(hdr), "Content-Type: %s\r\n", ctype);
	if (len > 0) {
		if ((b = evbuffer_new()) == NULL)
			fatalx("%s: out of memory", __func__);
		evbuffer_add(b, body, len);
	}
	server_reply(c, status, hdr, n, b, len);
	if (b != NULL)
		evbuffer_free(b);
}
