/*
 * floe: h1.c -- HTTP/1.1 message framing on llhttp for both sides of the
 * data path. The head goes into one fixed buffer per connection; a body
 * with a Content-Length is moved out of the input evbuffer without copying
 * (the parser is told the message has no body and floe counts the bytes),
 * a chunked one is de-chunked through the parser's body callback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <event2/buffer.h>
#include <llhttp.h>

#include "lib/compat.h"
#include "lib/shortcopy.h"
#include "lib/xmalloc.h"
#include "proxy/h1.h"
#include "proxy/h1_impl.h"

static int h1_on_begin_cb(llhttp_t *);
static int h1_on_url_cb(llhttp_t *, const char *, size_t);
static int h1_on_field_cb(llhttp_t *, const char *, size_t);
static int h1_on_value_cb(llhttp_t *, const char *, size_t);
static int h1_on_headers_cb(llhttp_t *);
static int h1_on_body_cb(llhttp_t *, const char *, size_t);
static int h1_on_complete_cb(llhttp_t *);
static int h1_scan(struct h1 *, const char *, size_t);
static int h1_check_head(struct h1 *, const llhttp_t *);
static void h1_release(struct h1 *);

static const llhttp_settings_t h1_settings = {
	.on_message_begin = h1_on_begin_cb,
	.on_url = h1_on_url_cb,
	.on_header_field = h1_on_field_cb,
	.on_header_value = h1_on_value_cb,
	.on_headers_complete = h1_on_headers_cb,
	.on_body = h1_on_body_cb,
	.on_message_complete = h1_on_complete_cb,
};

struct h1 *
h1_new(enum h1_kind kind, const struct h1_limits *lim)
{
	struct h1 *h;

	/* h1_msg.first holds header indexes in 16 bits. */
	if (lim->max_headers >= UINT16_MAX)
		abort();
	h = xcalloc(1, sizeof(*h));
	h->kind = kind;
	h->lim = *lim;
	if ((h->msg.body = evbuffer_new()) == NULL)
		abort();
	h1_reset(h);
	return h;
}

void
h1_free(struct h1 *h)
{
	if (h == NULL)
		return;
	evbuffer_free(h->msg.body);
	h1_release(h);
	h1_unrecord(h);
	free(h);
}

/* Forget the current message and re-arm the parser. */
/*
 * The head buffer and the header array are taken when a message starts
 * and given back when it is done, so an idle keep-alive connection holds
 * neither: a thousand idle clients cost a thousand small structs, not
 * a thousand 16 KiB buffers. Returned blocks wait on a free list for the
 * next message (of any connection with the same limits). What an idle
 * connection does keep is the record of its last head (h1_replay.c).
 */
#define H1_POOL_MAX 32

struct h1_block {
	struct h1_block *next;
	size_t size;
};

static struct h1_block *h1_pool;
static unsigned h1_npool;

/* The bytes a block needs for H's limits: the headers, then the head. */
static size_t
h1_block_size(const struct h1 *h)
{
	return (h->lim.max_headers + 1) * sizeof(struct h1_header) +
	    h->lim.max_head + 1;
}

/* Give H its head buffer and header array. */
static void
h1_acquire(struct h1 *h)
{
	struct h1_block **bp, *b;
	size_t size = h1_block_size(h);

	for (bp = &h1_pool; (b = *bp) != NULL; bp = &b->next)
		if (b->size == size)
			break;
	if (b != NULL) {
		*bp = b->next;
		h1_npool--;
	} else
		b = xmalloc(size < sizeof(*b) ? sizeof(*b) : size);
	h->hdrs = (struct h1_header *)(void *)b;
	h->buf = (char *)(h->hdrs + h->lim.max_headers + 1);
	h->msg.hdrs = h->hdrs;
}

/* Give H's buffers back (they must hold nothing anyone still reads). */
static void
h1_release(struct h1 *h)
{
	struct h1_block *b = (struct h1_block *)(void *)h->hdrs;

	if (b == NULL)
		return;
	h->hdrs = NULL;
	h->buf = NULL;
	h->msg.hdrs = NULL;
	if (h1_npool >= H1_POOL_MAX) {
		free(b);
		return;
	}
	b->size = h1_block_size(h);
	b->next = h1_pool;
	h1_pool = b;
	h1_npool++;
}

void
h1_reset(struct h1 *h)
{
	struct evbuffer *body = h->msg.body;
	size_t blen = evbuffer_get_length(body);

	/*
	 * Reset twice with nothing between (a pooled connection's parser,
	 * reset when its answer is done and again when it is given the next
	 * request): the second only forgets the HEAD mark.
	 */
	if (h->fresh && blen == 0) {
		h->head_response = false;
		return;
	}
	h1_release(h);
	llhttp_init(&h->p, h->kind == H1_REQUEST ? HTTP_REQUEST : HTTP_RESPONSE,
	    &h1_settings);
	/*
	 * HTTP/1.2 is read as 1.1 (RFC 9110 2.5); h1_check_head refuses any
	 * major version but 1.
	 */
	h->p.lenient_flags |= LENIENT_VERSION; /* llhttp 8 has no setter */
	h->p.data = h;
	h->state = H1_S_HEAD;
	h->head_response = false;
	h->started = false;
	h->replayed = false;
	h->in_value = false;
	h->head_done = false;
	h->scan_done = false;
	h->scan_cr = false;
	h->scan_len = 0;
	h->scan_total = 0;
	h->scan_line1 = 0;
	h->scan_lines = 0;
	h->scan_off = 0;
	h->scan_here = false;
	h->seen = 0;
	h->dup = 0;
	h->cs = H1_CS_OFF;
	h->csize = 0;
	h->cdigits = 0;
	h->used = 0;
	h->need = 0;
	h->err_status = 0;
	h->err_text = NULL;
	memset(&h->msg, 0, sizeof(h->msg));
	h->msg.body = body;
	if (blen > 0)
		evbuffer_drain(body, blen);
	h->fresh = true;
}

void
h1_set_head_response(struct h1 *h, bool on)
{
	h->head_response = on;
}

bool
h1_awaits_body(const struct h1 *h)
{
	return h->state == H1_S_RAWBODY ||
	    (h->state == H1_S_HEAD && h->head_done);
}

bool
h1_started(const struct h1 *h)
{
	return h->started;
}

bool
h1_replayed(const struct h1 *h)
{
	return h->replayed;
}

struct h1_msg *
h1_msg(struct h1 *h)
{
	h->fresh = false;
	return &h->msg;
}

int
h1_error_status(const struct h1 *h)
{
	return h->err_status;
}

const char *
h1_error_text(const struct h1 *h)
{
	return h->err_text != NULL ? h->err_text : "malformed HTTP message";
}

/*
 * Record the first framing error. Returns -1 to stop the parser. TEXT
 * is static; one that says "request" is said of the answer in an answer.
 */
int
h1_fail(struct h1 *h, int status, const char *text)
{
	if (h->err_status != 0)
		return -1;
	h->err_status = h->kind == H1_REQUEST ? status : 502;
	h->err_text = text;
	/* In an answer "request body too large" is the answer's. */
	if (h->kind == H1_RESPONSE && strncmp(text, "request ", 8) == 0) {
		snprintf(h->err_buf, sizeof(h->err_buf), "answer %s", text + 8);
		h->err_text = h->err_buf;
	}
	return -1;
}

/* The head does not fit max_head: 414 while in the target, else 431. */
static __attribute__((noinline)) int
h1_too_large(struct h1 *h, bool target)
{
	return h1_fail(h, target && h->kind == H1_REQUEST ? 414 : 431,
	    "request head too large");
}

/*
 * Append head bytes; the head is bounded by max_head. Inline, with the
 * refusal out of line: every name and value of both heads comes here
 * (most are short: short_copy).
 */
static inline __attribute__((always_inline)) int
h1_append(struct h1 *h, const char *at, size_t len)
{
	if (len > h->lim.max_head - h->used)
		return h1_too_large(h, h->msg.target == NULL);
	short_copy(h->buf + h->used, at, len);
	h->used += len;
	return 0;
}

/* Terminate the string being built in the head buffer. */
static inline __attribute__((always_inline)) int
h1_terminate(struct h1 *h)
{
	if (h->used >= h->lim.max_head)
		return h1_too_large(h, false);
	h->buf[h->used++] = '\0';
	return 0;
}

/* The bytes of a token (RFC 9110 5.6.2). */
static const bool h1_tchar[256] = {
	['!'] = true,
	['#'] = true,
	['$'] = true,
	['%'] = true,
	['&'] = true,
	['\''] = true,
	['*'] = true,
	['+'] = true,
	['-'] = true,
	['.'] = true,
	['^'] = true,
	['_'] = true,
	['`'] = true,
	['|'] = true,
	['~'] = true,
	['0' ... '9'] = true,
	['A' ... 'Z'] = true,
	['a' ... 'z'] = true,
};

/*
 * Headers a request may carry once: a second one is read differently by
 * different hops (which credential, which host, which length, which
 * retry, which credentials to vend: floe keys its cache on the first),
 * so floe refuses it rather than pick (RFC 9110 5.3, 9112 6.3).
 */
#define H1_ONCE                                                                \
	(1u << H1_F_HOST | 1u << H1_F_AUTHORIZATION |                          \
	    1u << H1_F_CONTENT_LENGTH | 1u << H1_F_TRANSFER_ENCODING |         \
	    1u << H1_F_IDEMPOTENCY_KEY | 1u << H1_F_ACCESS_DELEGATION)

/*
 * The header name just ended: terminate it, find the field it is and
 * check that it is a token (RFC 9110 5.1), whatever the parser lets
 * through: a proxy that passed on "Content-Length : 5" or "Bad Name: x"
 * could be framed differently by the next hop, so it is a 400 here. The
 * first of each field is indexed, and a request's second of H1_ONCE
 * noted for h1_check_head. HD is the last header begun (1 + its index:
 * nhdrs).
 */
static inline __attribute__((always_inline)) int
h1_end_name(struct h1 *h, struct h1_header *hd)
{
	uint32_t bit;
	size_t i;

	if (h1_terminate(h) == -1)
		return -1;
	hd->name_len = h->buf + h->used - 1 - hd->name;
	if (hd->name_len == 0)
		return h1_fail(h, 400, "empty header field name");
	/* A name of a field is a token: only the others are checked. */
	if ((hd->field = h1_field_of(hd->name, hd->name_len)) == H1_F_OTHER) {
		for (i = 0; i < hd->name_len; i++)
			if (!h1_tchar[(unsigned char)hd->name[i]])
				return h1_fail(h, 400,
				    "invalid header field name");
		return 0;
	}
	bit = 1u << hd->field;
	if (!(h->seen & bit)) {
		h->seen |= bit;
		h->msg.first[hd->field] = h->msg.nhdrs;
	} else if ((bit & H1_ONCE) && h->kind == H1_REQUEST && h->dup == 0)
		h->dup = h->msg.nhdrs;
	return 0;
}

/*
 * Scan head bytes before the parser sees them. A bare LF as a line end
 * and obsolete line folding are refused here, not left to the parser's
 * leniency: another hop may frame either differently (RFC 9112 2.2, 5.2),
 * so both are a 400 (502 in an answer). Stops at the blank line that ends
 * the head, so body bytes and a pipelined next message are never scanned.
 */

/* The last 16 bytes searched for CR and LF: where, and what was found. */
struct h1_crlf_blk {
	size_t at; /* (size_t)-1: none yet */
	unsigned m; /* bit k: a CR or LF at AT + k */
};

/*
 * The first CR or LF at or after S of the N bytes at P, or N. With SSE2
 * a block of 16 is searched once for all the lines in it (B keeps it);
 * the last bytes, fewer than 16, in the last 16 of the N (one by one
 * when N is less than 16).
 */
static inline size_t
h1_crlf(const char *p, size_t n, size_t s, struct h1_crlf_blk *b)
{
#ifdef __SSE2__
	const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
	__m128i x;
	unsigned m;

	if (s >= b->at && s - b->at < 16) {
		if ((m = b->m & (~0u << (s - b->at))) != 0)
			return b->at + (size_t)__builtin_ctz(m);
		s = b->at + 16;
	}
	for (; n - s >= 16; s += 16) {
		x = _mm_loadu_si128((const __m128i *)(const void *)(p + s));
		b->at = s;
		b->m = (unsigned)_mm_movemask_epi8(
		    _mm_or_si128(_mm_cmpeq_epi8(x, cr), _mm_cmpeq_epi8(x, lf)));
		if (b->m != 0)
			return s + (size_t)__builtin_ctz(b->m);
	}
	/* Fewer than 16 left: the last 16, those before S masked off. */
	if (s < n && n >= 16) {
		x = _mm_loadu_si128(
		    (const __m128i *)(const void *)(p + n - 16));
		b->at = n - 16;
		b->m = (unsigned)_mm_movemask_epi8(
		    _mm_or_si128(_mm_cmpeq_epi8(x, cr), _mm_cmpeq_epi8(x, lf)));
		m = b->m & (~0u << (s - b->at));
		return m != 0 ? b->at + (size_t)__builtin_ctz(m) : n;
	}
#else
	(void)b;
#endif
	for (; s < n; s++)
		if (p[s] == '\r' || p[s] == '\n')
			return s;
	return n;
}

/*
 * Line by line, the state in locals: the length of the line so far
 * (LEN, it may have begun in an earlier buffer) and the lines seen.
 */
static int
h1_scan(struct h1 *h, const char *p, size_t n)
{
	struct h1_crlf_blk b = { (size_t)-1, 0 };
	size_t i = 0, e, len = h->scan_len;
	unsigned lines = h->scan_lines;
	bool eol = false;

	if (n > 0 && h->scan_cr) {
		/* The last buffer ended in CR. */
		h->scan_cr = false;
		if (p[0] != '\n')
			return h1_fail(h, 400,
			    "CR without LF in the message head");
		i = 1;
		eol = true;
	}
	for (;;) {
		if (eol) {
			/* A line ended just before I: the blank one ends. */
			if (len == 0 && lines > 0) {
				h->scan_done = true;
				h->scan_here = true;
				h->scan_off = i;
				break;
			}
			if (len > 0 && lines++ == 0)
				h->scan_line1 = len;
			len = 0;
			eol = false;
		}
		if (i >= n)
			break;
		if (len == 0 && lines > 0 && (p[i] == ' ' || p[i] == '\t'))
			return h1_fail(h, 400,
			    "obsolete line folding in a header field");
		if ((e = h1_crlf(p, n, i, &b)) == n) {
			/* The line goes on in the next buffer. */
			len += n - i;
			break;
		}
		if (p[e] == '\n')
			return h1_fail(h, 400,
			    "bare LF in the message head: lines end in CRLF");
		len += e - i;
		if (e == n - 1) {
			/* Its LF in the next buffer. */
			h->scan_cr = true;
			break;
		}
		if (p[e + 1] != '\n')
			return h1_fail(h, 400,
			    "CR without LF in the message head");
		i = e + 2;
		eol = true;
	}
	h->scan_len = len;
	h->scan_lines = lines;
	return 0;
}

/*
 * Framing a proxy must not pass on, checked here whatever the parser
 * allows: more than one Transfer-Encoding or one that is not just
 * "chunked" (floe would drop the coding), an HTTP/1.1 request without
 * Host, a request with two of a header of H1_ONCE, a GET or HEAD with a
 * body (the next hop may ignore it and read it as the next request),
 * HTTP/2+ text, an answer's status outside 100-599.
 */
static int
h1_check_head(struct h1 *h, const llhttp_t *p)
{
	static const char *const twice[H1_F_COUNT] = {
		[H1_F_HOST] = "more than one Host",
		[H1_F_AUTHORIZATION] = "more than one Authorization",
		[H1_F_CONTENT_LENGTH] = "more than one Content-Length",
		[H1_F_TRANSFER_ENCODING] = "more than one Transfer-Encoding",
		[H1_F_IDEMPOTENCY_KEY] = "more than one Idempotency-Key",
		[H1_F_ACCESS_DELEGATION] =
		    "more than one X-Iceberg-Access-Delegation",
	};
	const struct h1_header *hd;
	unsigned i, end, nte = 0;
	const char *v;
	size_t vl;

	if (p->http_major != 1)
		return h1_fail(h, 505, "HTTP version not supported");
	/* A parser may take "HTTP/1.1 002 OK"; floe would pass the 2 on. */
	if (h->kind == H1_RESPONSE &&
	    (p->status_code < 100 || p->status_code > 599))
		return h1_fail(h, 502, "status code outside 100-599");
	/*
	 * In the order of the headers: each Transfer-Encoding before the
	 * first repeated once-header is checked, then that one refused.
	 */
	end = h->dup != 0 ? h->dup - 1 : h->msg.nhdrs;
	for (i = h->msg.first[H1_F_TRANSFER_ENCODING]; i > 0 && i <= end; i++) {
		hd = &h->hdrs[i - 1];
		if (hd->field != H1_F_TRANSFER_ENCODING)
			continue;
		nte++;
		v = hd->value;
		vl = hd->value_len;
		while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		while (vl > 0 && (*v == ' ' || *v == '\t')) {
			v++;
			vl--;
		}
		if (!h1_name_is(v, vl, "chunked"))
			return h1_fail(h, 400,
			    "unsupported Transfer-Encoding: "
			    "only chunked is accepted");
	}
	if (h->dup != 0)
		return h1_fail(h, 400, twice[h->hdrs[h->dup - 1].field]);
	if (nte > 1)
		return h1_fail(h, 400, "more than one Transfer-Encoding");
	/* RFC 9112 3.2: an HTTP/1.1 request names its Host. */
	if (h->kind == H1_REQUEST && h->msg.first[H1_F_HOST] == 0 &&
	    p->http_minor >= 1)
		return h1_fail(h, 400,
		    "no Host header (HTTP/1.1 requires one)");
	if (h->kind == H1_REQUEST &&
	    (p->method == HTTP_GET || p->method == HTTP_HEAD) &&
	    ((p->flags & F_CHUNKED) ||
		((p->flags & F_CONTENT_LENGTH) && p->content_length > 0)))
		return h1_fail(h, 400, "a GET or HEAD request with a body");
	return 0;
}

static int
h1_on_begin_cb(llhttp_t *p)
{
	struct h1 *h = p->data;

	h->started = true;
	return 0;
}

static int
h1_on_url_cb(llhttp_t *p, const char *at, size_t len)
{
	return h1_append(p->data, at, len);
}

static int
h1_on_field_cb(llhttp_t *p, const char *at, size_t len)
{
	struct h1 *h = p->data;
	struct h1_header *hd;

	/* Trailers of a chunked body are not merged into the head. */
	if (h->head_done)
		return 0;
	if (h->in_value) {
		/* A value ended: a new field begins. */
		if (h1_terminate(h) == -1)
			return -1;
		hd = &h->hdrs[h->msg.nhdrs - 1];
		hd->value_len = h->buf + h->used - 1 - hd->value;
	} else if (h->msg.nhdrs > 0) {
		/* More of a name that began in an earlier buffer. */
		return h1_append(h, at, len);
	} else if (h->msg.target == NULL) {
		/* The request line ended: the target is complete. */
		if (h1_terminate(h) == -1)
			return -1;
		h->msg.target = h->buf;
		h->msg.target_len = h->used - 1;
	}
	if (h->msg.nhdrs >= h->lim.max_headers)
		return h1_fail(h, 431, "too many header fields");
	hd = &h->hdrs[h->msg.nhdrs++];
	hd->name = h->buf + h->used;
	hd->value = NULL;
	h->in_value = false;
	return h1_append(h, at, len);
}

static int
h1_on_value_cb(llhttp_t *p, const char *at, size_t len)
{
	struct h1 *h = p->data;
	struct h1_header *hd;

	if (h->head_done)
		return 0;
	if (!h->in_value) {
		hd = &h->hdrs[h->msg.nhdrs - 1];
		if (h1_end_name(h, hd) == -1)
			return -1;
		hd->value = h->buf + h->used;
		h->in_value = true;
	}
	return h1_append(h, at, len);
}

/*
 * The head is complete. For a body with a Content-Length, return 1 so the
 * parser ends the message here: the body is moved by h1_parse itself.
 */
static int
h1_on_headers_cb(llhttp_t *p)
{
	struct h1 *h = p->data;
	struct h1_header *hd;

	h->head_done = true;
	if (h->msg.target == NULL) {
		if (h1_terminate(h) == -1)
			return -1;
		h->msg.target = h->buf;
		h->msg.target_len = h->used - 1;
	}
	if (h->msg.nhdrs > 0) {
		hd = &h->hdrs[h->msg.nhdrs - 1];
		if (!h->in_value) {
			/* A field without a value. */
			if (h1_end_name(h, hd) == -1)
				return -1;
			hd->value = h->buf + h->used - 1;
		} else if (h1_terminate(h) == -1)
			return -1;
		hd->value_len = h->buf + h->used - 1 - hd->value;
	}
	h->msg.http_minor = p->http_major == 1 ? p->http_minor : 0;
	h->msg.keep_alive = llhttp_should_keep_alive(p);
	if (h->kind == H1_REQUEST) {
		switch (p->method) {
		case HTTP_GET:
			h->msg.method = H1_GET;
			break;
		case HTTP_HEAD:
			h->msg.method = H1_HEAD;
			break;
		case HTTP_POST:
			h->msg.method = H1_POST;
			break;
		case HTTP_PUT:
			h->msg.method = H1_PUT;
			break;
		case HTTP_DELETE:
			h->msg.method = H1_DELETE;
			break;
		default:
			h->msg.method = H1_OTHER;
			break;
		}
		h->msg.method_name = llhttp_method_name(p->method);
	} else
		h->msg.status = p->status_code;
	if (p->upgrade && h->kind == H1_REQUEST && p->method == HTTP_CONNECT)
		return h1_fail(h, 400, "CONNECT is not served");
	if (h1_check_head(h, p) == -1)
		return -1;
	h->msg.has_body_framing = p->flags & (F_CHUNKED | F_CONTENT_LENGTH);
	if (h->kind == H1_RESPONSE && h->head_response)
		return 1;
	/*
	 * 1xx, 204 and 304 answers end at the blank line whatever their
	 * Content-Length says (RFC 9112 6.3); a 304 may carry the length of
	 * the representation it stands for.
	 */
	if (h->kind == H1_RESPONSE &&
	    (p->status_code / 100 == 1 || p->status_code == 204 ||
		p->status_code == 304))
		return 1;
	if ((p->flags & F_CONTENT_LENGTH) && !(p->flags & F_CHUNKED)) {
		if (p->content_length > h->lim.max_body)
			return h1_fail(h, 413, "request body too large");
		h->need = p->content_length;
		if (h->need > 0)
			h->state = H1_S_RAWBODY;
		return 1;
	}
	if (p->flags & F_CHUNKED)
		h->cs = H1_CS_SIZE;
	return 0;
}

static int
h1_on_body_cb(llhttp_t *p, const char *at, size_t len)
{
	struct h1 *h = p->data;

	if (evbuffer_get_length(h->msg.body) + len > h->lim.max_body)
		return h1_fail(h, 413, "request body too large");
	if (evbuffer_add(h->msg.body, at, len) == -1)
		return h1_fail(h, 500, "out of memory");
	return 0;
}

static int
h1_on_complete_cb(llhttp_t *p)
{
	struct h1 *h = p->data;

	if (h->state == H1_S_HEAD)
		h->state = H1_S_DONE;
	/* Stop here: a pipelined next message waits for h1_reset(). */
	return HPE_PAUSED;
}

/* Map a parser error to a status and a sentence. */
static enum h1_rc
h1_parser_error(struct h1 *h)
{
	llhttp_errno_t e = llhttp_get_errno(&h->p);

	if (h->err_status == 0) {
		/*
		 * HTTP/2's preface ("PRI * HTTP/2.0"). Other versions parse
		 * (a malformed one is a 400) and h1_check_head answers them.
		 */
		if (e == HPE_PAUSED_H2_UPGRADE)
			h1_fail(h, 505, "HTTP version not supported");
		else
			h1_fail(h, 400, llhttp_get_error_reason(&h->p));
	}
	h->state = H1_S_ERROR;
	return H1_ERROR;
}

/*
 * N more head bytes were scanned: the head as sent (request or status
 * line, header lines, the blank line) is at most max_head bytes. The
 * parser stores nothing of it, so the bound is floe's to keep.
 */
static int
h1_head_bytes(struct h1 *h, size_t n)
{
	h->scan_total += n;
	if (h->scan_total <= h->lim.max_head)
		return 0;
	if (h->kind == H1_REQUEST &&
	    (h->scan_lines == 0 || h->scan_line1 + 2 > h->lim.max_head))
		return h1_fail(h, 414, "request line too long");
	return h1_fail(h, 431, "request head too large");
}

enum h1_rc
h1_parse(struct h1 *h, struct evbuffer *in)
{
	struct evbuffer_iovec vec[8];
	size_t n, got, len, off;
	llhttp_errno_t e = HPE_OK;
	int i, nvec;

	h->fresh = false;
	if (h->state == H1_S_ERROR)
		return H1_ERROR;
	/* IN's length, kept as it is drained: only floe takes from it. */
	len = evbuffer_get_length(in);
	if (h->rec != NULL && !h->started && h->state == H1_S_HEAD &&
	    len >= h->rec->raw_len && h1_replay(h, in))
		len -= h->rec->raw_len;
	if (h->buf == NULL && h->state == H1_S_HEAD && len > 0)
		h1_acquire(h);
	while (h->state == H1_S_HEAD && len > 0) {
		nvec = evbuffer_peek(in, -1, NULL, vec, nitems(vec));
		if (nvec > (int)nitems(vec))
			nvec = nitems(vec);
		got = 0;
		for (i = 0; i < nvec; i++) {
			h->scan_here = false;
			if (!h->scan_done &&
			    (h1_scan(h, vec[i].iov_base, vec[i].iov_len) ==
				    -1 ||
				h1_head_bytes(h,
				    h->scan_here ? h->scan_off :
						   vec[i].iov_len) == -1))
				return h1_parser_error(h);
			e = llhttp_execute(&h->p, vec[i].iov_base,
			    vec[i].iov_len);
			n = e == HPE_OK ? vec[i].iov_len :
					  (size_t)(llhttp_get_error_pos(&h->p) -
					      (const char *)vec[i].iov_base);
			/* The chunked body bytes the parser just took. */
			off = h->scan_here ? h->scan_off : 0;
			if (h->cs != H1_CS_OFF && h->cs != H1_CS_DONE &&
			    n > off &&
			    h1_scan_chunks(h,
				(const char *)vec[i].iov_base + off,
				n - off) == -1)
				return h1_parser_error(h);
			/*
			 * A head read whole from this vector's first byte,
			 * after which the parser holds nothing: kept for
			 * h1_replay.
			 */
			if (e == HPE_PAUSED && h->err_status == 0 &&
			    h->scan_here && h->scan_total == n &&
			    h->scan_off == n &&
			    (h->state == H1_S_DONE || h->state == H1_S_RAWBODY))
				h1_record(h, vec[i].iov_base, n);
			got += n;
			if (e != HPE_OK)
				break;
		}
		/*
		 * Paused in on_message_complete: the count includes the byte
		 * that completed the message; a pipelined request stays in IN.
		 */
		evbuffer_drain(in, got);
		len -= got;
		if (e == HPE_PAUSED && h->err_status == 0)
			break;
		if (e != HPE_OK || h->err_status != 0)
			return h1_parser_error(h);
	}
	if (h->state == H1_S_RAWBODY) {
		n = len < h->need ? len : h->need;
		if (n > 0 &&
		    evbuffer_remove_buffer(in, h->msg.body, n) != (int)n) {
			h1_fail(h, 500, "out of memory");
			h->state = H1_S_ERROR;
			return H1_ERROR;
		}
		h->need -= n;
		if (h->need > 0)
			return H1_MORE;
		h->state = H1_S_DONE;
	}
	return h->state == H1_S_DONE ? H1_DONE : H1_MORE;
}

/*
 * The peer closed. An answer without Content-Length or chunking ends here;
 * anything else unfinished is an error.
 */
enum h1_rc
h1_eof(struct h1 *h)
{
	h->fresh = false;
	if (h->state == H1_S_HEAD && h->started && h->msg.target != NULL) {
		llhttp_finish(&h->p);
		if (h->state == H1_S_DONE) {
			h->msg.keep_alive = false;
			return H1_DONE;
		}
	}
	if (h->state == H1_S_DONE)
		return H1_DONE;
	h1_fail(h, 400,
	    h->started ? "connection closed mid-message" : "connection closed");
	h->state = H1_S_ERROR;
	return H1_ERROR;
}
