/*
 * floe: test_h1.c -- HTTP/1.1 framing: requests split at every byte
 * boundary parse the same as whole; Content-Length bodies moved, chunked
 * bodies de-chunked; pipelined messages one at a time; the limits (414,
 * 431, 413); answers without bodies (204, 304, HEAD), answers read until
 * the close; framing errors and their statuses; HTTP versions; the
 * field of each header name, found once.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "lib/compat.h"
#include "proxy/h1.h"

static const struct h1_limits test_lim = {
	.max_head = 1024,
	.max_headers = 8,
	.max_body = 64,
};

/* A new evbuffer holding LEN bytes of S. */
static struct evbuffer *
test_buf(const char *s, size_t len)
{
	struct evbuffer *b = evbuffer_new();

	assert_non_null(b);
	assert_int_equal(evbuffer_add(b, s, len), 0);
	return b;
}

/*
 * A message as one string: method or status, target, keep-alive, framing,
 * headers in order, body. Two parses agree when their summaries do.
 */
static void
test_summary(struct h1_msg *m, char *out, size_t len)
{
	size_t n, blen = evbuffer_get_length(m->body);
	unsigned i;

	n = snprintf(out, len, "%s|%u|%s|ka=%d|fr=%d|minor=%u",
	    m->method_name != NULL ? m->method_name : "-", m->status,
	    m->target != NULL ? m->target : "-", m->keep_alive,
	    m->has_body_framing, m->http_minor);
	for (i = 0; i < m->nhdrs && n < len; i++)
		n += snprintf(out + n, len - n, "|%.*s=%.*s",
		    (int)m->hdrs[i].name_len, m->hdrs[i].name,
		    (int)m->hdrs[i].value_len, m->hdrs[i].value);
	if (n < len)
		n += snprintf(out + n, len - n, "|body=%.*s", (int)blen,
		    (const char *)evbuffer_pullup(m->body, -1));
	assert_true(n < len);
}

/*
 * Feed S to a new parser in pieces: the first SPLIT bytes, then the rest
 * (SPLIT 0: byte by byte). Returns the summary of the first message and
 * the bytes left in the input after it.
 */
static void
test_parse_split(enum h1_kind kind, const char *s, size_t len, size_t split,
    char *sum, size_t sumlen, size_t *left)
{
	struct h1 *h = h1_new(kind, &test_lim);
	struct evbuffer *in = evbuffer_new();
	enum h1_rc rc = H1_MORE;
	size_t off = 0, step;

	assert_non_null(in);
	while (rc == H1_MORE && off < len) {
		step = split == 0 ? 1 : (off == 0 ? split : len - off);
		if (step > len - off)
			step = len - off;
		evbuffer_add(in, s + off, step);
		off += step;
		rc = h1_parse(h, in);
	}
	assert_int_equal(rc, H1_DONE);
	test_summary(h1_msg(h), sum, sumlen);
	*left = evbuffer_get_length(in) + (len - off);
	evbuffer_free(in);
	h1_free(h);
}

static const struct {
	enum h1_kind kind;
	const char *msg;
	const char *want;
} test_msgs[] = {
	{ H1_REQUEST,
	    "GET /v1/config?warehouse=a HTTP/1.1\r\nHost: x\r\n"
	    "Accept: */*\r\n\r\n",
	    "GET|0|/v1/config?warehouse=a|ka=1|fr=0|minor=1|Host=x|"
	    "Accept=*/*|body=" },
	{ H1_REQUEST,
	    "POST /v1/namespaces HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 11\r\n\r\n{\"a\":\"bc\"}\n",
	    "POST|0|/v1/namespaces|ka=1|fr=1|minor=1|Host=x|"
	    "Content-Length=11|body={\"a\":\"bc\"}\n" },
	{ H1_REQUEST,
	    "POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3\r\nabc\r\n0a\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n",
	    "POST|0|/t|ka=1|fr=1|minor=1|Host=x|Transfer-Encoding=chunked|"
	    "body=abc0123456789" },
	{ H1_REQUEST,
	    "GET / HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-After: 1\r\n"
	    "X-Spaces:   v  \r\nConnection: close\r\n\r\n",
	    "GET|0|/|ka=0|fr=0|minor=1|Host=x|X-Empty=|X-After=1|"
	    "X-Spaces=v  |Connection=close|body=" },
	{ H1_REQUEST, "HEAD /h HTTP/1.0\r\n\r\n",
	    "HEAD|0|/h|ka=0|fr=0|minor=0|body=" },
	{ H1_REQUEST,
	    "DELETE /d HTTP/1.0\r\nConnection: keep-alive\r\n"
	    "Content-Length: 0\r\n\r\n",
	    "DELETE|0|/d|ka=1|fr=1|minor=0|Connection=keep-alive|"
	    "Content-Length=0|body=" },
	{ H1_RESPONSE,
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Content-Length: 2\r\n\r\n{}",
	    "-|200||ka=1|fr=1|minor=1|Content-Type=application/json|"
	    "Content-Length=2|body={}" },
	{ H1_RESPONSE,
	    "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n1;ext=1\r\n!\r\n0\r\n\r\n",
	    "-|404||ka=1|fr=1|minor=1|Transfer-Encoding=chunked|"
	    "body=hello!" },
	{ H1_RESPONSE, "HTTP/1.1 204 No Content\r\nX: 1\r\n\r\n",
	    "-|204||ka=1|fr=0|minor=1|X=1|body=" },
};

/* Every message, split at every byte and fed byte by byte, parses alike. */
static void
test_split_everywhere(void **state __unused)
{
	char whole[2048], part[2048];
	size_t i, k, len, left;

	for (i = 0; i < nitems(test_msgs); i++) {
		len = strlen(test_msgs[i].msg);
		test_parse_split(test_msgs[i].kind, test_msgs[i].msg, len, len,
		    whole, sizeof(whole), &left);
		assert_string_equal(whole, test_msgs[i].want);
		assert_int_equal(left, 0);
		for (k = 0; k < len; k++) {
			test_parse_split(test_msgs[i].kind, test_msgs[i].msg,
			    len, k, part, sizeof(part), &left);
			if (strcmp(part, whole) != 0)
				fail_msg("message %zu split at %zu: %s != %s",
				    i, k, part, whole);
			assert_int_equal(left, 0);
		}
	}
}

/* A Content-Length body is moved; the next request stays in the input. */
static void
test_content_length_moved(void **state __unused)
{
	static const char req[] =
	    "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
	    "helloGET /next HTTP/1.1\r\nHost: x\r\n\r\n";
	struct h1 *h = h1_new(H1_REQUEST, &test_lim);
	struct evbuffer *in = test_buf(req, sizeof(req) - 1);
	struct h1_msg *m;

	assert_int_equal(h1_parse(h, in), H1_DONE);
	m = h1_msg(h);
	assert_int_equal(m->method, H1_PUT);
	assert_int_equal(evbuffer_get_length(m->body), 5);
	assert_memory_equal(evbuffer_pullup(m->body, -1), "hello", 5);
	assert_int_equal(evbuffer_get_length(in), 31);
	/* Not parsed until reset: one message at a time. */
	assert_int_equal(h1_parse(h, in), H1_DONE);
	assert_int_equal(evbuffer_get_length(in), 31);
	h1_reset(h);
	assert_false(h1_started(h));
	assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 0);
	assert_int_equal(h1_parse(h, in), H1_DONE);
	assert_string_equal(h1_msg(h)->target, "/next");
	assert_int_equal(evbuffer_get_length(in), 0);
	evbuffer_free(in);
	h1_free(h);
}

/* Two pipelined requests in one buffer, chunked then plain. */
static void
test_pipelined(void **state __unused)
{
	static const char req[] =
	    "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "2\r\nab\r\n0\r\n\r\n"
	    "GET /b HTTP/1.1\r\nHost: y\r\n\r\n";
	struct h1 *h = h1_new(H1_REQUEST, &test_lim);
	struct evbuffer *in = test_buf(req, sizeof(req) - 1);
	struct h1_msg *m;

	assert_int_equal(h1_parse(h, in), H1_DONE);
	m = h1_msg(h);
	assert_string_equal(m->target, "/a");
	assert_memory_equal(evbuffer_pullup(m->body, -1), "ab", 2);
	assert_int_equal(evbuffer_get_length(in), 28);
	h1_reset(h);
	assert_int_equal(h1_parse(h, in), H1_DONE);
	m = h1_msg(h);
	assert_string_equal(m->target, "/b");
	assert_int_equal(m->method, H1_GET);
	assert_non_null(h1_find(m, "HOST"));
	assert_null(h1_find(m, "Hos"));
	assert_int_equal(evbuffer_get_length(m->body), 0);
	assert_int_equal(evbuffer_get_length(in), 0);
	h1_reset(h);
	assert_int_equal(h1_parse(h, in), H1_MORE);
	assert_false(h1_started(h));
	evbuffer_free(in);
	h1_free(h);
}

/* Add MSG to IN with its "%s" (if any) replaced by FILL. */
static void
test_add_filled(struct evbuffer *in, const char *msg, const char *fill)
{
	const char *p = strstr(msg, "%s");

	if (p == NULL) {
		evbuffer_add(in, msg, strlen(msg));
		return;
	}
	evbuffer_add(in, msg, p - msg);
	evbuffer_add(in, fill, strlen(fill));
	evbuffer_add(in, p + 2, strlen(p + 2));
}

/* Framing errors and limits: the status for a request and an answer. */
static void
test_errors(void **state __unused)
{
	char big[2048], hdrs[1024];
	static const struct {
		enum h1_kind kind;
		const char *msg; /* "%s" is replaced by FILL */
		int fill; /* 0: none, 1: long target, 2: long value, */
		/* 3: many headers, 4: a long run of spaces */
		int status;
	} cases[] = {
		{ H1_REQUEST, "GARBAGE\r\n\r\n", 0, 400 },
		/* HTTP/1.1 needs exactly one Host (HTTP/1.0 none). */
		{ H1_REQUEST, "GET / HTTP/1.1\r\n\r\n", 0, 400 },
		{ H1_REQUEST, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 0,
		    400 },
		{ H1_REQUEST,
		    "GET / HTTP/1.1\r\nHost: x\r\nBad Name: x\r\n\r\n", 0,
		    400 },
		{ H1_REQUEST, "GET / HTTP/1.1\r\nHost: x\r\nX : x\r\n\r\n", 0,
		    400 },
		{ H1_REQUEST, "GET / HTTP/1.1\r\nHost: x\r\n: x\r\n\r\n", 0,
		    400 },
		{ H1_REQUEST, "GET /%s HTTP/1.1\r\nHost: x\r\n\r\n", 1, 414 },
		{ H1_REQUEST, "GET / HTTP/1.1\r\nHost: x\r\nX: %s\r\n\r\n", 2,
		    431 },
		{ H1_REQUEST, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n", 3, 431 },
		/* Padding the parser skips still counts against the head. */
		{ H1_REQUEST, "GET / HTTP/1.1\r\nHost: x\r\nX:%sv\r\n\r\n", 4,
		    431 },
		{ H1_REQUEST, "GET /%s HTTP/1.1\r\n", 1, 414 },
		{ H1_REQUEST, "GET / HTTP/3.0\r\nHost: x\r\n\r\n", 0, 505 },
		{ H1_REQUEST, "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 0, 505 },
		{ H1_REQUEST, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0, 505 },
		/* Malformed versions. */
		{ H1_REQUEST, "GET / HTTP/1.x\r\nHost: x\r\n\r\n", 0, 400 },
		{ H1_REQUEST, "GET / HTTP/1.10\r\nHost: x\r\n\r\n", 0, 400 },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "1;%s\r\n",
		    2, 400 },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "0\r\nX: %s\r\n\r\n",
		    2, 431 },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 65\r\n\r\n",
		    0, 413 },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "41\r\n%s",
		    2, 413 },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "zz\r\n",
		    0, 400 },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
		    "Content-Length: 2\r\n\r\nab",
		    0, 400 },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		    0, 400 },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n",
		    0, 400 },
		{ H1_REQUEST, "CONNECT a:443 HTTP/1.1\r\nHost: x\r\n\r\n", 0,
		    400 },
		{ H1_RESPONSE, "XTTP/1.1 200 OK\r\n\r\n", 0, 502 },
		{ H1_RESPONSE, "HTTP/3.0 200 OK\r\n\r\n", 0, 502 },
		{ H1_RESPONSE, "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
		    0, 502 },
		{ H1_RESPONSE, "HTTP/1.1 200 OK\r\nX:%s1\r\n\r\n", 4, 502 },
		{ H1_RESPONSE, "HTTP/1.1 200 OK\r\nX Y: 1\r\n\r\n", 0, 502 },
		{ H1_RESPONSE, "HTTP/1.1 200 OK\r\nX: %s\r\n\r\n", 2, 502 },
		{ H1_RESPONSE, "HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n",
		    0, 502 },
	};
	struct h1 *h;
	struct evbuffer *in;
	size_t i, n = 0;

	for (i = 0; i < 20; i++)
		n += snprintf(hdrs + n, sizeof(hdrs) - n, "X%zu: v\r\n", i);
	for (i = 0; i < nitems(cases); i++) {
		const char *fill = "";

		switch (cases[i].fill) {
		case 1:
		case 2:
			memset(big, 'a', 1100);
			big[1100] = '\0';
			fill = big;
			break;
		case 3:
			fill = hdrs;
			break;
		case 4:
			memset(big, ' ', 1100);
			big[1100] = '\0';
			fill = big;
			break;
		}
		h = h1_new(cases[i].kind, &test_lim);
		in = evbuffer_new();
		test_add_filled(in, cases[i].msg, fill);
		if (h1_parse(h, in) != H1_ERROR)
			fail_msg("case %zu: not an error", i);
		if (h1_error_status(h) != cases[i].status)
			fail_msg("case %zu: status %d, want %d (%s)", i,
			    h1_error_status(h), cases[i].status,
			    h1_error_text(h));
		assert_non_null(h1_error_text(h));
		/* An error sticks. */
		assert_int_equal(h1_parse(h, in), H1_ERROR);
		evbuffer_free(in);
		h1_free(h);
	}
}

/*
 * What an error says: too large is the answer's in an answer (a catalog's
 * 2 GB Content-Length is not "request body too large"), and a request
 * with two of a header it may carry once is a 400 naming it (two
 * Authorization headers passed before).
 */
static void
test_error_texts(void **state __unused)
{
	static const struct {
		enum h1_kind kind;
		const char *msg; /* "%s": FILL when fill is 1 */
		int fill;
		int status;
		const char *text;
	} cases[] = {
		/* Too large is the answer's, not a request's. */
		{ H1_RESPONSE, "HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n",
		    0, 502, "answer body too large" },
		{ H1_RESPONSE,
		    "HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\n", 0,
		    502, "answer body too large" },
		{ H1_RESPONSE,
		    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "41\r\n%s",
		    1, 502, "answer body too large" },
		{ H1_RESPONSE, "HTTP/1.1 200 OK\r\nX: %s\r\n\r\n", 1, 502,
		    "answer head too large" },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 65\r\n\r\n",
		    0, 413, "request body too large" },
		/* Headers a request carries once (any case): twice is a 400. */
		{ H1_REQUEST,
		    "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\n"
		    "authorization: Bearer b\r\n\r\n",
		    0, 400, "more than one Authorization" },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\r\n"
		    "Content-Length: 0\r\nIDEMPOTENCY-KEY: a\r\n\r\n",
		    0, 400, "more than one Idempotency-Key" },
		{ H1_REQUEST,
		    "GET / HTTP/1.1\r\nHost: x\r\nX-Iceberg-Access-Delegation: "
		    "remote-signing\r\nX-Iceberg-Access-Delegation: "
		    "vended-credentials\r\n\r\n",
		    0, 400, "more than one X-Iceberg-Access-Delegation" },
		{ H1_REQUEST, "GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 0,
		    400, "more than one Host" },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		    0, 400, "Transfer-Encoding" },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
		    "Content-Length: 1\r\n\r\na",
		    0, 400, "Content-Length" },
	};
	char big[1200];
	struct h1 *h;
	struct evbuffer *in;
	size_t i;

	memset(big, 'a', 1100);
	big[1100] = '\0';
	for (i = 0; i < nitems(cases); i++) {
		h = h1_new(cases[i].kind, &test_lim);
		in = evbuffer_new();
		test_add_filled(in, cases[i].msg, cases[i].fill ? big : "");
		if (h1_parse(h, in) != H1_ERROR)
			fail_msg("case %zu: not an error", i);
		if (h1_error_status(h) != cases[i].status ||
		    strstr(h1_error_text(h), cases[i].text) == NULL)
			fail_msg("case %zu: %d \"%s\", want %d \"%s\"", i,
			    h1_error_status(h), h1_error_text(h),
			    cases[i].status, cases[i].text);
		evbuffer_free(in);
		h1_free(h);
	}
}

/*
 * Line ends in a head, fed whole and cut at every byte: CRLF only. A
 * stray LF or CR anywhere in a line of either length (the scan takes 16
 * bytes at a time, and the last few one by one) is a 400 saying which;
 * a CR at a piece's end is a 400 too.
 */
static void
test_line_ends(void **state __unused)
{
	static const char base[] = "GET / HTTP/1.1\r\nHost: x\r\nX-Long: "
				   "0123456789abcdefghijklmnopqrstuvwxyz\r\n"
				   "X: 1\r\n\r\n";
	char msg[sizeof(base)];
	const char *want;
	size_t len = sizeof(base) - 1, at, split, k;
	enum h1_rc rc;
	struct h1 *h;
	struct evbuffer *in;

	for (at = 16; at < len - 4; at++) {
		for (k = 0; k < 2; k++) {
			memcpy(msg, base, sizeof(base));
			if (base[at] == '\r' || base[at] == '\n')
				continue;
			msg[at] = k == 0 ? '\n' : '\r';
			want = k == 0 ? "bare LF" : "CR without LF";
			for (split = 0; split <= len; split++) {
				h = h1_new(H1_REQUEST, &test_lim);
				in = test_buf(msg, split);
				rc = h1_parse(h, in);
				if (rc == H1_MORE) {
					evbuffer_add(in, msg + split,
					    len - split);
					rc = h1_parse(h, in);
				}
				/*
				 * A CR that ends the first piece may be the
				 * parser's to refuse first (in a name).
				 */
				if (rc != H1_ERROR ||
				    h1_error_status(h) != 400 ||
				    ((k == 0 || split != at + 1) &&
					strstr(h1_error_text(h), want) == NULL))
					fail_msg(
					    "0x%02x at %zu, cut at %zu: %d "
					    "%d \"%s\", want \"%s\"",
					    msg[at], at, split, rc,
					    h1_error_status(h),
					    h1_error_text(h), want);
				evbuffer_free(in);
				h1_free(h);
			}
		}
	}
}

/* Exactly max_body is accepted, by either framing. */
static void
test_body_at_limit(void **state __unused)
{
	char body[65], msg[256];
	struct h1 *h;
	struct evbuffer *in;

	memset(body, 'b', 64);
	body[64] = '\0';
	h = h1_new(H1_REQUEST, &test_lim);
	snprintf(msg, sizeof(msg),
	    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 64\r\n\r\n%s", body);
	in = test_buf(msg, strlen(msg));
	assert_int_equal(h1_parse(h, in), H1_DONE);
	assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 64);
	evbuffer_free(in);
	h1_reset(h);
	snprintf(msg, sizeof(msg),
	    "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "20\r\n%.32s\r\n20\r\n%.32s\r\n0\r\n\r\n",
	    body, body);
	in = test_buf(msg, strlen(msg));
	assert_int_equal(h1_parse(h, in), H1_DONE);
	assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 64);
	evbuffer_free(in);
	h1_free(h);
}

/*
 * Answers without a body: 204 and 304 (even with a Content-Length, RFC
 * 9112 6.3), and any answer to HEAD. The next answer on the connection
 * parses cleanly after each.
 */
static void
test_no_body_answers(void **state __unused)
{
	static const struct {
		const char *msg;
		bool head;
		unsigned status;
	} cases[] = {
		{ "HTTP/1.1 204 No Content\r\n\r\n", false, 204 },
		{ "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", false,
		    204 },
		{ "HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\n\r\n", false,
		    304 },
		{ "HTTP/1.1 304 Not Modified\r\nContent-Length: 20\r\n\r\n",
		    false, 304 },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n", true, 200 },
		{ "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n",
		    true, 404 },
	};
	static const char next[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
				   "\r\nok";
	struct h1 *h;
	struct evbuffer *in;
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		h = h1_new(H1_RESPONSE, &test_lim);
		h1_set_head_response(h, cases[i].head);
		in = test_buf(cases[i].msg, strlen(cases[i].msg));
		evbuffer_add(in, next, sizeof(next) - 1);
		if (h1_parse(h, in) != H1_DONE)
			fail_msg("case %zu: not done", i);
		assert_int_equal(h1_msg(h)->status, cases[i].status);
		assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 0);
		assert_true(h1_msg(h)->keep_alive);
		if (evbuffer_get_length(in) != sizeof(next) - 1)
			fail_msg("case %zu: %zu bytes left, want %zu", i,
			    evbuffer_get_length(in), sizeof(next) - 1);
		h1_reset(h);
		assert_int_equal(h1_parse(h, in), H1_DONE);
		assert_int_equal(h1_msg(h)->status, 200);
		assert_memory_equal(evbuffer_pullup(h1_msg(h)->body, -1), "ok",
		    2);
		evbuffer_free(in);
		h1_free(h);
	}
}

/* An answer without framing is read until the close: h1_eof ends it. */
static void
test_read_until_close(void **state __unused)
{
	static const char ans[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain"
				  "\r\n\r\nsome bytes";
	struct h1 *h = h1_new(H1_RESPONSE, &test_lim);
	struct evbuffer *in = test_buf(ans, sizeof(ans) - 1);

	assert_int_equal(h1_parse(h, in), H1_MORE);
	evbuffer_add(in, " more", 5);
	assert_int_equal(h1_parse(h, in), H1_MORE);
	assert_int_equal(h1_eof(h), H1_DONE);
	assert_int_equal(h1_msg(h)->status, 200);
	assert_false(h1_msg(h)->keep_alive);
	assert_false(h1_msg(h)->has_body_framing);
	assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 15);
	assert_memory_equal(evbuffer_pullup(h1_msg(h)->body, -1),
	    "some bytes more", 15);
	evbuffer_free(in);
	h1_free(h);
}

/* A close before the end of a framed message is an error. */
static void
test_eof_errors(void **state __unused)
{
	static const char *const cases[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
		"HTTP/1.1 200 OK\r\nContent-Le",
		"",
	};
	struct h1 *h;
	struct evbuffer *in;
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		h = h1_new(H1_RESPONSE, &test_lim);
		in = test_buf(cases[i], strlen(cases[i]));
		if (strlen(cases[i]) > 0)
			assert_int_equal(h1_parse(h, in), H1_MORE);
		if (h1_eof(h) != H1_ERROR)
			fail_msg("case %zu: eof is not an error", i);
		assert_int_equal(h1_error_status(h), 502);
		evbuffer_free(in);
		h1_free(h);
	}
	/* A request cut short: 400 (the front end closes without answer). */
	h = h1_new(H1_REQUEST, &test_lim);
	in = test_buf("GET / HTTP/1.1\r\nHost: x\r\nHo", 18);
	assert_int_equal(h1_parse(h, in), H1_MORE);
	assert_true(h1_started(h));
	assert_int_equal(h1_eof(h), H1_ERROR);
	assert_int_equal(h1_error_status(h), 400);
	evbuffer_free(in);
	h1_free(h);
}

/*
 * A higher HTTP/1 minor version is read as 1.1 (RFC 9110 2.5), both ways
 * (other versions are in test_errors).
 */
static void
test_versions(void **state __unused)
{
	static const struct {
		enum h1_kind kind;
		const char *msg;
		unsigned minor;
	} cases[] = {
		{ H1_REQUEST, "GET / HTTP/1.2\r\nHost: x\r\n\r\n", 2 },
		{ H1_REQUEST, "GET / HTTP/1.0\r\n\r\n", 0 },
		{ H1_RESPONSE, "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n",
		    2 },
	};
	struct evbuffer *in;
	struct h1 *h;
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		h = h1_new(cases[i].kind, &test_lim);
		in = test_buf(cases[i].msg, strlen(cases[i].msg));
		if (h1_parse(h, in) != H1_DONE)
			fail_msg("case %zu: %s", i, h1_error_text(h));
		assert_int_equal(h1_msg(h)->http_minor, cases[i].minor);
		/* 1.0 closes unless asked; 1.1 and up keep alive. */
		assert_int_equal(h1_msg(h)->keep_alive, cases[i].minor >= 1);
		evbuffer_free(in);
		h1_free(h);
	}
}

/* Methods map to the enum; names and reasons. */
static void
test_methods_and_names(void **state __unused)
{
	static const struct {
		const char *line;
		enum h1_method m;
	} cases[] = {
		{ "GET", H1_GET },
		{ "HEAD", H1_HEAD },
		{ "POST", H1_POST },
		{ "PUT", H1_PUT },
		{ "DELETE", H1_DELETE },
		{ "PATCH", H1_OTHER },
		{ "OPTIONS", H1_OTHER },
	};
	char msg[128];
	struct h1 *h;
	struct evbuffer *in;
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		h = h1_new(H1_REQUEST, &test_lim);
		snprintf(msg, sizeof(msg), "%s /m HTTP/1.1\r\nHost: x\r\n\r\n",
		    cases[i].line);
		in = test_buf(msg, strlen(msg));
		assert_int_equal(h1_parse(h, in), H1_DONE);
		assert_int_equal(h1_msg(h)->method, cases[i].m);
		assert_string_equal(h1_msg(h)->method_name, cases[i].line);
		evbuffer_free(in);
		h1_free(h);
	}
	assert_true(h1_name_is("content-TYPE", 12, "Content-Type"));
	assert_false(h1_name_is("Content-Typ", 11, "Content-Type"));
	assert_string_equal(h1_reason(404), "Not Found");
	assert_string_equal(h1_reason(508), "Loop Detected");
	assert_string_equal(h1_reason(413), "Content Too Large");
	/* An unregistered code: an empty phrase, still a valid line. */
	assert_string_equal(h1_reason(299), "");
	assert_string_equal(h1_reason(429), "Too Many Requests");
}

/* Every name floe looks at, as it is spelled, and its field. */
static const struct {
	const char *name;
	enum h1_field field;
} test_fields_tab[] = {
	{ "Host", H1_F_HOST },
	{ "Authorization", H1_F_AUTHORIZATION },
	{ "Content-Length", H1_F_CONTENT_LENGTH },
	{ "Transfer-Encoding", H1_F_TRANSFER_ENCODING },
	{ "Idempotency-Key", H1_F_IDEMPOTENCY_KEY },
	{ "X-Iceberg-Access-Delegation", H1_F_ACCESS_DELEGATION },
	{ "Expect", H1_F_EXPECT },
	{ "Via", H1_F_VIA },
	{ "If-None-Match", H1_F_IF_NONE_MATCH },
	{ "User-Agent", H1_F_USER_AGENT },
	{ "Accept", H1_F_ACCEPT },
	{ "Content-Type", H1_F_CONTENT_TYPE },
	{ "X-Client-Version", H1_F_CLIENT_VERSION },
	{ "X-Client-Git-Commit-Short", H1_F_CLIENT_GIT_COMMIT },
	{ "X-Request-Id", H1_F_REQUEST_ID },
	{ "traceparent", H1_F_TRACEPARENT },
	{ "ETag", H1_F_ETAG },
	{ "Cache-Control", H1_F_CACHE_CONTROL },
	{ "Retry-After", H1_F_RETRY_AFTER },
	{ "WWW-Authenticate", H1_F_WWW_AUTHENTICATE },
	{ "Location", H1_F_LOCATION },
};

/* The field the table gives NAME (compared ignoring case), or OTHER. */
static enum h1_field
test_field_want(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < nitems(test_fields_tab); i++)
		if (strlen(test_fields_tab[i].name) == len &&
		    strncasecmp(test_fields_tab[i].name, name, len) == 0)
			return test_fields_tab[i].field;
	return H1_F_OTHER;
}

/*
 * A name's field, found once: each known name in any case; every one of
 * them with one byte changed to any other byte (each word of the
 * compare, the overlapping last one too; CR is not '-', '@' not '`'),
 * cut short or followed by more is not it; nor is a name that merely
 * shares its length.
 */
static void
test_field_of(void **state __unused)
{
	static const char *const others[] = { "Content-Typ", "Content-Types",
		"Hostname", "Hos", "ETags", "Authorizatio", "Authorizations",
		"X-Iceberg-Access-Delegation-X", "Content_Type", "Content.Type",
		"Vi", "Viaa", "Cookie", "Accept-Encoding", "Connection",
		"X-Forwarded-For", "Proxy-Authorization", "Content\rLength",
		"Content\x8dLength", "Content-Lengt\xc8",
		"V\xc9"
		"a",
		"Ho\xd3t", "Hos\x14" };
	char name[64];
	size_t i, j, k, len, seen = 0;

	assert_int_equal(nitems(test_fields_tab), H1_F_COUNT - 1);
	for (i = 0; i < nitems(test_fields_tab); i++) {
		len = strlen(test_fields_tab[i].name);
		seen |= 1u << test_fields_tab[i].field;
		assert_int_equal(h1_field_of(test_fields_tab[i].name, len),
		    test_fields_tab[i].field);
		/* lower, upper and alternating case */
		for (k = 0; k < 3; k++) {
			for (j = 0; j < len; j++) {
				name[j] = test_fields_tab[i].name[j];
				if (k == 0 || (k == 2 && j % 2 == 0))
					name[j] =
					    tolower((unsigned char)name[j]);
				else
					name[j] =
					    toupper((unsigned char)name[j]);
			}
			if (h1_field_of(name, len) != test_fields_tab[i].field)
				fail_msg("%.*s: %d", (int)len, name,
				    h1_field_of(name, len));
		}
		/* one byte changed, everywhere */
		for (j = 0; j < len; j++)
			for (k = 0; k < 256; k++) {
				memcpy(name, test_fields_tab[i].name, len);
				name[j] = (char)k;
				if (h1_field_of(name, len) !=
				    test_field_want(name, len))
					fail_msg("%.*s: %d", (int)len, name,
					    h1_field_of(name, len));
			}
		/* cut short, and with more after it */
		for (j = 0; j < len; j++)
			if (h1_field_of(test_fields_tab[i].name, j) !=
			    test_field_want(test_fields_tab[i].name, j))
				fail_msg("%s cut at %zu",
				    test_fields_tab[i].name, j);
		snprintf(name, sizeof(name), "%sx", test_fields_tab[i].name);
		assert_int_equal(h1_field_of(name, len + 1), H1_F_OTHER);
		snprintf(name, sizeof(name), "%s-", test_fields_tab[i].name);
		assert_int_equal(h1_field_of(name, len + 1), H1_F_OTHER);
	}
	/* every field but OTHER is in the table */
	assert_int_equal(seen, ((size_t)1 << H1_F_COUNT) - 2);
	for (i = 0; i < nitems(others); i++)
		if (h1_field_of(others[i], strlen(others[i])) != H1_F_OTHER)
			fail_msg("%s is not a known field", others[i]);
}

/* Parse S (a whole request or answer) with a new parser: H1_DONE. */
static struct h1 *
test_parsed(enum h1_kind kind, const char *s)
{
	struct h1 *h = h1_new(kind, &test_lim);
	struct evbuffer *in = test_buf(s, strlen(s));

	if (h1_parse(h, in) != H1_DONE)
		fail_msg("%s: %s", s, h1_error_text(h));
	evbuffer_free(in);
	return h;
}

/* The value of M's first header of FIELD, or "-". */
static const char *
test_value_of(const struct h1_msg *m, enum h1_field field, char *buf,
    size_t len)
{
	const struct h1_header *hd = h1_get(m, field);

	if (hd == NULL)
		return "-";
	assert_int_equal(hd->field, field);
	snprintf(buf, len, "%.*s", (int)hd->value_len, hd->value);
	return buf;
}

/*
 * Parsed headers are found by field: in any case, the first of two, a
 * name with more after it is another header, a header of the last
 * message is not seen in the next one; a message made by hand is indexed
 * by h1_index. A request's second once-header and an unsupported
 * Transfer-Encoding are refused in the order they come.
 */
static void
test_get(void **state __unused)
{
	static const struct {
		enum h1_kind kind;
		const char *msg;
		const char *text;
	} bad[] = {
		/* The Transfer-Encoding comes first: it is the error. */
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nHost: a\r\n"
		    "Host: a\r\n\r\n",
		    "unsupported Transfer-Encoding" },
		{ H1_REQUEST,
		    "POST / HTTP/1.1\r\nHost: a\r\nHOST: a\r\n"
		    "Transfer-Encoding: gzip\r\n\r\n",
		    "more than one Host" },
		/* The first repeated once-header is named. */
		{ H1_REQUEST,
		    "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: a\r\n"
		    "Idempotency-Key: a\r\nidempotency-key: a\r\n"
		    "authorization: b\r\n\r\n",
		    "more than one Idempotency-Key" },
		/* An answer may repeat them; two codings are still refused. */
		{ H1_RESPONSE,
		    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		    "Transfer-Encoding: gzip\r\n\r\n",
		    "unsupported Transfer-Encoding" },
		{ H1_RESPONSE,
		    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n",
		    "more than one Transfer-Encoding" },
		/* "Hostname" and "Host-Name" are not Host. */
		{ H1_REQUEST,
		    "GET / HTTP/1.1\r\nHostname: a\r\nHost-Name: b\r\n\r\n",
		    "no Host header" },
	};
	struct h1_header hand[4] = {
		{ "X-Other", 7, "1", 1, H1_F_OTHER },
		/* not a token: no field (CR is not '-') */
		{ "Content\rLength", 14, "1", 1, H1_F_CONTENT_LENGTH },
		{ "etag", 4, "\"a\"", 3, H1_F_OTHER },
		{ "ETAG", 4, "\"b\"", 3, H1_F_OTHER },
	};
	struct h1_msg hm;
	char buf[64];
	struct h1 *h;
	struct evbuffer *in;
	struct h1_msg *m;
	size_t i;

	h = test_parsed(H1_REQUEST,
	    "GET / HTTP/1.1\r\nhOST: a\r\nuser-agent: one\r\nVia: 1.1 x\r\n"
	    "USER-AGENT: two\r\nUser-Agentx: three\r\nIf-None-Match-X: 1\r\n"
	    "via: 1.1 y\r\nAuthorization: Bearer t\r\n\r\n");
	m = h1_msg(h);
	assert_string_equal(test_value_of(m, H1_F_HOST, buf, sizeof(buf)), "a");
	assert_string_equal(test_value_of(m, H1_F_USER_AGENT, buf, sizeof(buf)),
	    "one");
	assert_string_equal(test_value_of(m, H1_F_VIA, buf, sizeof(buf)),
	    "1.1 x");
	assert_string_equal(test_value_of(m, H1_F_AUTHORIZATION, buf,
				sizeof(buf)),
	    "Bearer t");
	assert_null(h1_get(m, H1_F_IF_NONE_MATCH));
	assert_null(h1_get(m, H1_F_ETAG));
	assert_int_equal(m->hdrs[3].field, H1_F_USER_AGENT);
	assert_int_equal(m->hdrs[4].field, H1_F_OTHER);
	assert_int_equal(m->hdrs[5].field, H1_F_OTHER);
	assert_int_equal(m->hdrs[6].field, H1_F_VIA);
	/* The next message on the connection has its own. */
	h1_reset(h);
	in = test_buf("GET / HTTP/1.1\r\nHost: b\r\n\r\n", 27);
	assert_int_equal(h1_parse(h, in), H1_DONE);
	m = h1_msg(h);
	assert_string_equal(test_value_of(m, H1_F_HOST, buf, sizeof(buf)), "b");
	assert_null(h1_get(m, H1_F_USER_AGENT));
	assert_null(h1_get(m, H1_F_VIA));
	assert_null(h1_get(m, H1_F_AUTHORIZATION));
	evbuffer_free(in);
	h1_free(h);

	/* An answer: two ETags, the first found; a field without a value. */
	h = test_parsed(H1_RESPONSE,
	    "HTTP/1.1 200 OK\r\nEtag: \"1\"\r\nCache-Control:\r\n"
	    "ETAG: \"2\"\r\nContent-Length: 0\r\n\r\n");
	m = h1_msg(h);
	assert_string_equal(test_value_of(m, H1_F_ETAG, buf, sizeof(buf)),
	    "\"1\"");
	assert_string_equal(test_value_of(m, H1_F_CACHE_CONTROL, buf,
				sizeof(buf)),
	    "");
	assert_string_equal(test_value_of(m, H1_F_CONTENT_LENGTH, buf,
				sizeof(buf)),
	    "0");
	h1_free(h);

	memset(&hm, 0, sizeof(hm));
	hm.hdrs = hand;
	hm.nhdrs = nitems(hand);
	hm.first[H1_F_HOST] = 1; /* stale: h1_index starts over */
	h1_index(&hm);
	assert_null(h1_get(&hm, H1_F_HOST));
	assert_null(h1_get(&hm, H1_F_CONTENT_LENGTH));
	assert_int_equal(hand[1].field, H1_F_OTHER);
	assert_ptr_equal(h1_get(&hm, H1_F_ETAG), &hand[2]);
	assert_int_equal(hand[3].field, H1_F_ETAG);

	for (i = 0; i < nitems(bad); i++) {
		h = h1_new(bad[i].kind, &test_lim);
		in = test_buf(bad[i].msg, strlen(bad[i].msg));
		if (h1_parse(h, in) != H1_ERROR ||
		    strstr(h1_error_text(h), bad[i].text) == NULL)
			fail_msg("case %zu: \"%s\", want \"%s\"", i,
			    h1_error_text(h), bad[i].text);
		evbuffer_free(in);
		h1_free(h);
	}
}

/*
 * A pooled connection's parser is reset when an answer is done and again
 * when it is given the next request: the second reset still forgets the
 * HEAD mark, and a parser reset twice reads as one reset once.
 */
static void
test_reset_twice(void **state __unused)
{
	static const char ans[] =
	    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab";
	struct h1 *h = h1_new(H1_RESPONSE, &test_lim);
	struct evbuffer *in;
	char sum[256];
	size_t k;

	for (k = 0; k < 3; k++) {
		/* HEAD: the answer ends at its head, the body stays. */
		h1_reset(h);
		h1_reset(h);
		h1_set_head_response(h, true);
		in = test_buf(ans, sizeof(ans) - 1);
		assert_int_equal(h1_parse(h, in), H1_DONE);
		assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 0);
		assert_int_equal(evbuffer_get_length(in), 2);
		evbuffer_free(in);
		/* Marked HEAD, then reset: a GET's answer has its body. */
		h1_reset(h);
		h1_set_head_response(h, true);
		h1_reset(h);
		in = test_buf(ans, sizeof(ans) - 1);
		assert_int_equal(h1_parse(h, in), H1_DONE);
		test_summary(h1_msg(h), sum, sizeof(sum));
		assert_string_equal(sum,
		    "-|200||ka=1|fr=1|minor=1|Content-Length=2|body=ab");
		assert_non_null(h1_get(h1_msg(h), H1_F_CONTENT_LENGTH));
		evbuffer_free(in);
		/* A body left in the message is dropped by the next reset. */
		h1_reset(h);
		evbuffer_add(h1_msg(h)->body, "zz", 2);
		h1_reset(h);
		assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 0);
		assert_null(h1_get(h1_msg(h), H1_F_CONTENT_LENGTH));
	}
	h1_free(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_everywhere),
		cmocka_unit_test(test_content_length_moved),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_error_texts),
		cmocka_unit_test(test_line_ends),
		cmocka_unit_test(test_body_at_limit),
		cmocka_unit_test(test_no_body_answers),
		cmocka_unit_test(test_read_until_close),
		cmocka_unit_test(test_eof_errors),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_methods_and_names),
		cmocka_unit_test(test_field_of),
		cmocka_unit_test(test_get),
		cmocka_unit_test(test_reset_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
