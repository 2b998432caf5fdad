/*
 * floe: test_h1_replay.c -- a head read before is replayed, not parsed
 * again (proxy/h1_replay.c), and what a caller reads of the message is
 * what a new parser makes of the same bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "lib/compat.h"
#include "proxy/h1.h"

static const struct h1_limits test_lim = {
	.max_head = 16384,
	.max_headers = 16,
	.max_body = 64,
};

/* A message as one string; two parses agree when their summaries do. */
static void
test_summary(struct h1_msg *m, char *out, size_t len)
{
	size_t n, blen = evbuffer_get_length(m->body);
	unsigned i;

	n = snprintf(out, len, "%s|%u|%s|%d|ka=%d|fr=%d|minor=%u",
	    m->method_name != NULL ? m->method_name : "-", m->status,
	    m->target != NULL ? m->target : "-", (int)m->method, m->keep_alive,
	    m->has_body_framing, m->http_minor);
	for (i = 0; i < m->nhdrs && n < len; i++)
		n += snprintf(out + n, len - n, "|%.*s=%.*s/%d",
		    (int)m->hdrs[i].name_len, m->hdrs[i].name,
		    (int)m->hdrs[i].value_len, m->hdrs[i].value,
		    (int)m->hdrs[i].field);
	for (i = 0; i < H1_F_COUNT && n < len; i++)
		n += snprintf(out + n, len - n, ",%u", m->first[i]);
	if (n < len)
		n += snprintf(out + n, len - n, "|body=%.*s", (int)blen,
		    (const char *)evbuffer_pullup(m->body, -1));
	assert_true(n < len);
}

/*
 * Read the next message of IN with H, reset first, and the same bytes
 * with a new parser: both read a whole message, the same one, and leave
 * the same bytes. HEAD: the answer is to a HEAD. Its summary into SUM;
 * returns whether H replayed its head.
 */
static bool
test_next(struct h1 *h, enum h1_kind kind, struct evbuffer *in, bool head,
    char *sum, size_t len)
{
	struct evbuffer *ref = evbuffer_new();
	struct h1 *g = h1_new(kind, &test_lim);
	char want[32768];
	bool replayed;

	assert_non_null(ref);
	assert_int_equal(evbuffer_add(ref, evbuffer_pullup(in, -1),
			     evbuffer_get_length(in)),
	    0);
	h1_reset(h);
	h1_set_head_response(h, head);
	h1_set_head_response(g, head);
	assert_int_equal(h1_parse(g, ref), H1_DONE);
	assert_int_equal(h1_parse(h, in), H1_DONE);
	replayed = h1_replayed(h);
	assert_false(h1_replayed(g));
	test_summary(h1_msg(g), want, sizeof(want));
	test_summary(h1_msg(h), sum, len);
	assert_string_equal(sum, want);
	assert_int_equal(evbuffer_get_length(in), evbuffer_get_length(ref));
	h1_free(g);
	evbuffer_free(ref);
	return replayed;
}

static const struct {
	enum h1_kind kind;
	const char *msg;
	bool kept; /* the parser holds nothing after its head */
} test_msgs[] = {
	{ H1_REQUEST,
	    "GET /v1/namespaces/db/tables/t HTTP/1.1\r\nHost: x:1\r\n"
	    "Authorization: Bearer abc\r\nUser-Agent: e/1\r\nX-Empty:\r\n"
	    "X-Spaces:   v  \r\nAccept: */*\r\n\r\n",
	    true },
	{ H1_REQUEST,
	    "POST /v1/namespaces HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 11\r\n\r\n{\"a\":\"bc\"}\n",
	    true },
	{ H1_REQUEST, "HEAD /h HTTP/1.0\r\n\r\n", true },
	{ H1_REQUEST,
	    "DELETE /d HTTP/1.0\r\nConnection: keep-alive\r\n"
	    "Content-Length: 0\r\n\r\n",
	    true },
	{ H1_REQUEST, "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	    true },
	{ H1_REQUEST,
	    "POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3\r\nabc\r\n0\r\n\r\n",
	    false },
	{ H1_RESPONSE,
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "ETag: \"1\"\r\nContent-Length: 2\r\n\r\n{}",
	    true },
	{ H1_RESPONSE, "HTTP/1.1 204 No Content\r\nX: 1\r\n\r\n", true },
	{ H1_RESPONSE, "HTTP/1.1 100 Continue\r\n\r\n", true },
	{ H1_RESPONSE,
	    "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n0\r\n\r\n",
	    false },
};

/*
 * Each message three times on one connection: the second and third are
 * replayed when the parser holds nothing after the head, and read alike.
 */
static void
test_replay_same(void **state __unused)
{
	char first[4096], sum[4096];
	struct evbuffer *in;
	struct h1 *h;
	size_t i, k, len;

	for (i = 0; i < nitems(test_msgs); i++) {
		h = h1_new(test_msgs[i].kind, &test_lim);
		in = evbuffer_new();
		len = strlen(test_msgs[i].msg);
		for (k = 0; k < 3; k++)
			evbuffer_add(in, test_msgs[i].msg, len);
		assert_false(test_next(h, test_msgs[i].kind, in, false, first,
		    sizeof(first)));
		for (k = 1; k < 3; k++) {
			if (test_next(h, test_msgs[i].kind, in, false, sum,
				sizeof(sum)) != test_msgs[i].kept)
				fail_msg("message %zu, read %zu: replayed %d",
				    i, k + 1, !test_msgs[i].kept);
			assert_string_equal(sum, first);
		}
		assert_int_equal(evbuffer_get_length(in), 0);
		evbuffer_free(in);
		h1_free(h);
	}
}

/* A new parser reads S as one whole request. */
static bool
test_valid(const char *s)
{
	struct evbuffer *in = evbuffer_new();
	struct h1 *g = h1_new(H1_REQUEST, &test_lim);
	bool ok;

	evbuffer_add(in, s, strlen(s));
	ok = h1_parse(g, in) == H1_DONE && evbuffer_get_length(in) == 0;
	h1_free(g);
	evbuffer_free(in);
	return ok;
}

/*
 * Heads that differ from the last one read by a byte anywhere are parsed;
 * the record is then theirs.
 */
static void
test_replay_differs(void **state __unused)
{
	static const char a[] = "GET /v1/namespaces/db/tables/t HTTP/1.1\r\n"
				"Host: x\r\nAuthorization: Bearer abc\r\n\r\n";
	char b[sizeof(a)], sum[4096];
	struct evbuffer *in = evbuffer_new();
	struct h1 *h = h1_new(H1_REQUEST, &test_lim);
	size_t k, n = 0;

	evbuffer_add(in, a, sizeof(a) - 1);
	assert_false(test_next(h, H1_REQUEST, in, false, sum, sizeof(sum)));
	/* Each byte changed (where a request remains): never the record. */
	for (k = 0; k < sizeof(a) - 1; k++) {
		if (a[k] == '\r' || a[k] == '\n')
			continue;
		memcpy(b, a, sizeof(a));
		b[k] = a[k] == 'x' ? 'y' : 'x';
		/* Not a request any more ("Gxt", "HTTx/1.1", no Host). */
		if (!test_valid(b))
			continue;
		n++;
		evbuffer_add(in, b, sizeof(b) - 1);
		assert_false(
		    test_next(h, H1_REQUEST, in, false, sum, sizeof(sum)));
		/* The record is now B's: A is parsed, then replayed. */
		evbuffer_add(in, a, sizeof(a) - 1);
		assert_false(
		    test_next(h, H1_REQUEST, in, false, sum, sizeof(sum)));
		evbuffer_add(in, a, sizeof(a) - 1);
		assert_true(
		    test_next(h, H1_REQUEST, in, false, sum, sizeof(sum)));
	}
	/* The target, the names and the values: most of the head. */
	assert_true(n > 50);
	evbuffer_free(in);
	h1_free(h);
}

/*
 * An answer's head read as the answer to a HEAD (no body) is not replayed
 * for the answer to a GET, whose body it frames, nor the other way round.
 */
static void
test_replay_head_mark(void **state __unused)
{
	static const char hd[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
	struct evbuffer *in = evbuffer_new();
	struct h1 *h = h1_new(H1_RESPONSE, &test_lim);
	char sum[4096];

	evbuffer_add(in, hd, sizeof(hd) - 1);
	assert_false(test_next(h, H1_RESPONSE, in, true, sum, sizeof(sum)));
	assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 0);
	evbuffer_add_printf(in, "%shello", hd);
	assert_false(test_next(h, H1_RESPONSE, in, false, sum, sizeof(sum)));
	assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 5);
	evbuffer_add_printf(in, "%shello", hd);
	assert_true(test_next(h, H1_RESPONSE, in, false, sum, sizeof(sum)));
	assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 5);
	evbuffer_add(in, hd, sizeof(hd) - 1);
	assert_false(test_next(h, H1_RESPONSE, in, true, sum, sizeof(sum)));
	assert_int_equal(evbuffer_get_length(h1_msg(h)->body), 0);
	assert_int_equal(evbuffer_get_length(in), 0);
	evbuffer_free(in);
	h1_free(h);
}

/*
 * A head that arrives in two pieces is parsed, and not recorded (the
 * record is of a head read from one piece); one in a piece of its own
 * after it is recorded, and then replayed.
 */
static void
test_replay_split(void **state __unused)
{
	static const char a[] = "GET /t HTTP/1.1\r\nHost: x\r\n\r\n";
	struct evbuffer *in = evbuffer_new();
	struct h1 *h = h1_new(H1_REQUEST, &test_lim);
	unsigned k;

	for (k = 0; k < 3; k++) {
		h1_reset(h);
		/* Two chains: a reference is never merged into the last. */
		evbuffer_add(in, a, 10);
		evbuffer_add_reference(in, a + 10, sizeof(a) - 11, NULL, NULL);
		assert_int_equal(h1_parse(h, in), H1_DONE);
		assert_false(h1_replayed(h));
		assert_string_equal(h1_msg(h)->target, "/t");
		assert_int_equal(evbuffer_get_length(in), 0);
	}
	h1_reset(h);
	evbuffer_add(in, a, sizeof(a) - 1);
	assert_int_equal(h1_parse(h, in), H1_DONE);
	assert_false(h1_replayed(h));
	h1_reset(h);
	evbuffer_add(in, a, sizeof(a) - 1);
	assert_int_equal(h1_parse(h, in), H1_DONE);
	assert_true(h1_replayed(h));
	assert_string_equal(h1_msg(h)->target, "/t");
	/* The head's first bytes only: a replay needs all of it. */
	h1_reset(h);
	evbuffer_add(in, a, sizeof(a) - 2);
	assert_int_equal(h1_parse(h, in), H1_MORE);
	assert_false(h1_replayed(h));
	evbuffer_add(in, "\n", 1);
	assert_int_equal(h1_parse(h, in), H1_DONE);
	assert_string_equal(h1_msg(h)->target, "/t");
	evbuffer_free(in);
	h1_free(h);
}

/*
 * Pipelined: A A B A A in one buffer. The second A is replayed, B is
 * parsed, the A after it too (the record is B's), the last A replayed.
 */
static void
test_replay_pipelined(void **state __unused)
{
	static const char a[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char b[] = "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";
	static const bool want[] = { false, true, false, false, true };
	struct evbuffer *in = evbuffer_new();
	struct h1 *h = h1_new(H1_REQUEST, &test_lim);
	char sum[4096];
	size_t k;

	evbuffer_add_printf(in, "%s%s%s%s%s", a, a, b, a, a);
	for (k = 0; k < nitems(want); k++) {
		assert_int_equal(test_next(h, H1_REQUEST, in, false, sum,
				     sizeof(sum)),
		    want[k]);
		assert_string_equal(h1_msg(h)->target, k == 2 ? "/b" : "/a");
	}
	assert_int_equal(evbuffer_get_length(in), 0);
	evbuffer_free(in);
	h1_free(h);
}

/*
 * A replayed head whose Content-Length body comes later: the message
 * waits for it (h1_awaits_body), as a parsed one does.
 */
static void
test_replay_body_later(void **state __unused)
{
	static const char a[] =
	    "PUT /p HTTP/1.1\r\nHost: x\r\n"
	    "Expect: 100-continue\r\nContent-Length: 4\r\n\r\n";
	struct evbuffer *in = evbuffer_new();
	struct h1 *h = h1_new(H1_REQUEST, &test_lim);
	unsigned k;

	for (k = 0; k < 2; k++) {
		h1_reset(h);
		evbuffer_add(in, a, sizeof(a) - 1);
		assert_int_equal(h1_parse(h, in), H1_MORE);
		assert_int_equal(h1_replayed(h), k == 1);
		assert_true(h1_started(h));
		assert_true(h1_awaits_body(h));
		assert_non_null(h1_get(h1_msg(h), H1_F_EXPECT));
		evbuffer_add(in, "ab", 2);
		assert_int_equal(h1_parse(h, in), H1_MORE);
		evbuffer_add(in, "cdGET", 5);
		assert_int_equal(h1_parse(h, in), H1_DONE);
		assert_memory_equal(evbuffer_pullup(h1_msg(h)->body, -1),
		    "abcd", 4);
		assert_int_equal(evbuffer_get_length(in), 3);
		evbuffer_drain(in, 3);
	}
	/* The peer closes before the body: refused, replayed or not. */
	h1_reset(h);
	evbuffer_add(in, a, sizeof(a) - 1);
	assert_int_equal(h1_parse(h, in), H1_MORE);
	assert_true(h1_replayed(h));
	assert_int_equal(h1_eof(h), H1_ERROR);
	assert_string_equal(h1_error_text(h), "connection closed mid-message");
	evbuffer_free(in);
	h1_free(h);
}

/* A head too long for the record's bound is parsed every time. */
static void
test_replay_bound(void **state __unused)
{
	struct evbuffer *in = evbuffer_new();
	struct h1 *h = h1_new(H1_REQUEST, &test_lim);
	char big[9000], sum[32768];
	unsigned k;

	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (k = 0; k < 3; k++) {
		evbuffer_add_printf(in,
		    "GET /big HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", big);
		assert_false(
		    test_next(h, H1_REQUEST, in, false, sum, sizeof(sum)));
		assert_int_equal(h1_get(h1_msg(h), H1_F_HOST)->value_len, 1);
	}
	evbuffer_free(in);
	h1_free(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_same),
		cmocka_unit_test(test_replay_differs),
		cmocka_unit_test(test_replay_head_mark),
		cmocka_unit_test(test_replay_split),
		cmocka_unit_test(test_replay_pipelined),
		cmocka_unit_test(test_replay_body_later),
		cmocka_unit_test(test_replay_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
