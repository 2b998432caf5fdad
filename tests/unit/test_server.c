/*
 * floe: test_server.c -- the front end's answers on a real socket: an
 * answer is written at once when the socket takes it, and what a slow
 * client's socket does not take (4 KiB buffers on both ends) waits in the
 * output buffer, counted as held, the next pipelined request unread until
 * it drains; then both follow, whole and in order. A streamed answer,
 * chunked: its source is paused while the client holds its share and
 * told when it drained; cut short, it ends without its last chunk.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/server.h"

#define BIG (1 << 20) /* far more than a 4 KiB receive buffer */

static unsigned answered;

/* Byte I of the answer to request N. */
static unsigned char
pattern(unsigned n, size_t i)
{
	return (unsigned char)((i * 7 + n) % 251);
}

/*
 * Streamed answers (stream_mode): the source gives 64 KiB pieces of the
 * pattern until the client holds its share; the drain callback resumes
 * it. With stream_cut, the answer is cut short after that many bytes.
 */
static bool stream_mode;
static size_t stream_off, stream_cut, stream_max_held;
static unsigned stream_pauses, stream_drains;
static struct server_conn *stream_conn;

static void
stream_push(void)
{
	struct evbuffer *b = evbuffer_new();
	unsigned char piece[65536];
	size_t i, n;
	bool more = true;

	while (more && stream_off < BIG) {
		if (stream_cut > 0 && stream_off >= stream_cut) {
			server_stream_abort(stream_conn);
			evbuffer_free(b);
			answered++;
			return;
		}
		n = BIG - stream_off < sizeof(piece) ? BIG - stream_off :
						       sizeof(piece);
		for (i = 0; i < n; i++)
			piece[i] = pattern(answered, stream_off + i);
		evbuffer_add(b, piece, n);
		stream_off += n;
		more = server_stream_add(stream_conn, b);
		assert_int_equal(evbuffer_get_length(b), 0); /* moved */
		if (server_held_bytes() > stream_max_held)
			stream_max_held = server_held_bytes();
	}
	evbuffer_free(b);
	if (!more) {
		stream_pauses++;
		return;
	}
	server_stream_end(stream_conn);
	answered++;
}

static void
drain_cb(void *arg __attribute__((unused)))
{
	stream_drains++;
	stream_push();
}

/*
 * Referenced answers (ref_mode): the body is given by server_reply_ref
 * from a buffer of the test's, freed by the done callback (ref_done
 * counts its calls).
 */
static bool ref_mode;
static unsigned ref_done;

static void
ref_done_cb(const void *data __attribute__((unused)),
    size_t len __attribute__((unused)), void *arg)
{
	ref_done++;
	free(arg);
}

/* Answer request N with BIG bytes of its pattern. */
static void
request_cb(struct server_conn *c, struct h1_msg *m __attribute__((unused)),
    void *arg __attribute__((unused)))
{
	struct evbuffer *b;
	unsigned char *p;
	size_t i;

	if (ref_mode) {
		p = malloc(BIG);
		for (i = 0; i < BIG; i++)
			p[i] = pattern(answered, i);
		answered++;
		server_reply_ref(c, 200, "X-Test: 1\r\n", 11, p, BIG, -1,
		    ref_done_cb, p);
		return;
	}

	if (stream_mode) {
		stream_mode = false; /* the next request: a whole answer */
		stream_conn = c;
		stream_off = 0;
		server_stream_start(c, 200, "X-Test: 1\r\n", 11, -1);
		server_conn_on_drain(c, drain_cb, NULL);
		stream_push();
		return;
	}
	b = evbuffer_new();
	p = malloc(BIG);

	for (i = 0; i < BIG; i++)
		p[i] = pattern(answered, i);
	evbuffer_add(b, p, BIG);
	free(p);
	answered++;
	server_reply(c, 200, "X-Test: 1\r\n", 11, b, -1);
	assert_int_equal(evbuffer_get_length(b), 0); /* moved */
	evbuffer_free(b);
}

static void
error_cb(struct server_conn *c, int status, const char *why,
    void *arg __attribute__((unused)))
{
	fail_msg("error %d: %s", status, why);
	server_reply_mem(c, (unsigned)status, "text/plain", why, strlen(why));
}

/* A port on 127.0.0.1 the kernel says is free now. */
static int
free_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd, port;

	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

/* The server's descriptor of the connection whose client end is FD. */
static int
server_side(int fd)
{
	struct sockaddr_in me, peer;
	socklen_t len = sizeof(me);
	int i;

	assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &len), 0);
	for (i = 3; i < 1024; i++) {
		len = sizeof(peer);
		if (i != fd &&
		    getpeername(i, (struct sockaddr *)&peer, &len) == 0 &&
		    peer.sin_family == AF_INET && peer.sin_port == me.sin_port)
			return i;
	}
	return -1;
}

/* Check answer N at P (LEN bytes); the bytes it took. */
static size_t
check_answer(unsigned n, const unsigned char *p, size_t len)
{
	const char *want = "HTTP/1.1 200 OK\r\nX-Test: 1\r\n"
			   "Content-Length: 1048576\r\n\r\n";
	size_t hlen = strlen(want), i;

	assert_true(len >= hlen + BIG);
	assert_memory_equal(p, want, hlen);
	for (i = 0; i < BIG; i++)
		if (p[hlen + i] != pattern(n, i))
			fail_msg("answer %u: byte %zu is %u, want %u", n, i,
			    p[hlen + i], pattern(n, i));
	return hlen + BIG;
}

/* A listener and one connected client, 4 KiB buffers on both ends. */
struct fx {
	struct event_base *base;
	struct server *s;
	int fd;
};

static void
fx_open(struct fx *f, unsigned idle_ms)
{
	struct server_opts so;
	struct sockaddr_in sin;
	char err[256], hostport[32];
	int sfd = -1, rcv = 4096, turns;

	assert_non_null(f->base = event_base_new());
	memset(&so, 0, sizeof(so));
	so.name = "test";
	so.lim.max_head = 8192;
	so.lim.max_headers = 50;
	so.lim.max_body = 1 << 20;
	so.idle_timeout_ms = idle_ms;
	so.header_timeout_ms = 10000;
	so.write_timeout_ms = 10000;
	so.budgeted = true;
	assert_non_null(
	    f->s = server_new(f->base, &so, request_cb, error_cb, NULL));
	snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", free_port());
	if (server_listen_tcp(f->s, hostport, err, sizeof(err)) != 0)
		fail_msg("listen: %s", err);

	assert_true((f->fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(setsockopt(f->fd, SOL_SOCKET, SO_RCVBUF, &rcv,
			     sizeof(rcv)),
	    0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)server_port(f->s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(f->fd, (struct sockaddr *)&sin, sizeof(sin)),
	    0);
	/* Accept, then shrink the server side's send buffer too. */
	for (turns = 0; turns < 100 && (sfd = server_side(f->fd)) == -1;
	     turns++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_true(sfd != -1);
	assert_int_equal(setsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &rcv,
			     sizeof(rcv)),
	    0);
	answered = 0;
}

static void
fx_close(struct fx *f)
{
	close(f->fd);
	server_free(f->s);
	event_base_free(f->base);
}

/* Send REQ, then make it nonblocking. */
static void
fx_send(struct fx *f, const char *req)
{
	assert_int_equal(write(f->fd, req, strlen(req)), (ssize_t)strlen(req));
	fcntl(f->fd, F_SETFL, O_NONBLOCK);
}

/*
 * Read into GOT (room for WANT) while the loop runs, at most STEP bytes
 * a turn and PAUSE_US between turns, until WANT bytes, the end of the
 * stream, or NANSWERS answers whose WHOLE bytes are in; the bytes read.
 */
static size_t
fx_read(struct fx *f, unsigned char *got, size_t want, size_t step,
    unsigned pause_us, unsigned nanswers, size_t whole)
{
	size_t have = 0;
	ssize_t n;
	int turns;

	for (turns = 0; have < want && turns < 100000; turns++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		n = read(f->fd, got + have,
		    want - have < step ? want - have : step);
		if (n > 0)
			have += (size_t)n;
		else if (n == 0)
			break;
		else if (errno != EAGAIN)
			fail_msg("read: %s", strerror(errno));
		if (n <= 0 || pause_us > 100)
			usleep(pause_us > 100 ? pause_us : 100);
		if (answered == nanswers && have >= whole)
			break;
	}
	return have;
}

#define HEAD_LEN                                                               \
	strlen("HTTP/1.1 200 OK\r\nX-Test: 1\r\n"                              \
	       "Content-Length: 1048576\r\n\r\n")

/*
 * A client with a 4 KiB receive buffer sends two requests at once and
 * reads nothing for a while: both answers arrive whole and in order.
 */
static void
test_slow_reader(void **state __attribute__((unused)))
{
	struct fx f;
	unsigned char *got;
	size_t have, want = 2 * (BIG + 64), off;
	int turns;

	fx_open(&f, 10000);
	fx_send(&f,
	    "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");

	/*
	 * Serve without reading: the first answer cannot all be written,
	 * and while it waits the second request is not even parsed (the
	 * connection's output budget); what waits is counted as held.
	 */
	for (turns = 0; turns < 50; turns++) {
		event_base_loop(f.base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_int_equal(answered, 1);
	assert_true(server_held_bytes() > BIG / 2);
	assert_true(server_held_bytes() <= BIG + 64);
	assert_true(server_held_peak_take() >= server_held_bytes());
	/* Over a budget, floe says so (request.c then answers 503). */
	server_set_budget(BIG / 4);
	assert_true(server_over_budget());
	server_set_budget(0);
	assert_false(server_over_budget());

	got = malloc(want);
	have = fx_read(&f, got, want, want, 0, 2, 2 * (BIG + HEAD_LEN));
	/* Once the client reads, the second answer follows the first. */
	assert_int_equal(answered, 2);
	assert_int_equal(server_held_bytes(), 0);
	off = check_answer(0, got, have);
	off += check_answer(1, got + off, have - off);
	assert_int_equal(off, have);
	free(got);
	fx_close(&f);
}

/*
 * The same with referenced bodies: what the socket did not take waits
 * where it is, referenced, and is let go once written, once per answer.
 */
static void
test_slow_reader_ref(void **state __attribute__((unused)))
{
	struct fx f;
	unsigned char *got;
	size_t have, want = 2 * (BIG + 64), off;
	int turns;

	ref_mode = true;
	ref_done = 0;
	answered = 0;
	fx_open(&f, 10000);
	fx_send(&f,
	    "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
	for (turns = 0; turns < 50; turns++) {
		event_base_loop(f.base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_int_equal(answered, 1);
	assert_int_equal(ref_done, 0); /* still referenced: not written */
	assert_true(server_held_bytes() > BIG / 2);
	got = malloc(want);
	have = fx_read(&f, got, want, want, 0, 2, 2 * (BIG + HEAD_LEN));
	assert_int_equal(answered, 2);
	assert_int_equal(server_held_bytes(), 0);
	off = check_answer(0, got, have);
	off += check_answer(1, got + off, have - off);
	assert_int_equal(off, have);
	free(got);
	fx_close(&f);
	assert_int_equal(ref_done, 2);
	ref_mode = false;
}

/*
 * An answer that takes a slow client several idle_timeouts to read is
 * not cut: the connection is idle only once its output has drained (a
 * client that stops reading altogether meets write_timeout instead).
 */
static void
test_slow_reader_outlives_idle(void **state __attribute__((unused)))
{
	struct fx f;
	unsigned char *got;
	size_t have, want = BIG + 64;
	int64_t t0;
	struct timeval tv;

	fx_open(&f, 100);
	fx_send(&f, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
	got = malloc(want);
	gettimeofday(&tv, NULL);
	t0 = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
	/* 8 KiB every 3 ms: about 400 ms for 1 MiB, four idle_timeouts. */
	have = fx_read(&f, got, want, 8192, 3000, 1, BIG + HEAD_LEN);
	gettimeofday(&tv, NULL);
	assert_int_equal(check_answer(0, got, have), have);
	/* It did take longer than two idle_timeouts. */
	assert_true((int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 - t0 > 200);
	free(got);
	fx_close(&f);
}

/*
 * De-chunk the answer at P (LEN bytes): the body into OUT (room for BIG),
 * its length into *BLEN; the bytes the answer took, and whether it ended
 * with its last chunk (*ENDED).
 */
static size_t
dechunk(const unsigned char *p, size_t len, unsigned char *out, size_t *blen,
    bool *ended)
{
	static const char want[] = "HTTP/1.1 200 OK\r\nX-Test: 1\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	size_t at = sizeof(want) - 1, n;
	char *end;

	*blen = 0;
	*ended = false;
	assert_true(len >= at);
	assert_memory_equal(p, want, at);
	while (at < len) {
		n = strtoul((const char *)p + at, &end, 16);
		assert_memory_equal(end, "\r\n", 2);
		at = (const unsigned char *)end + 2 - p;
		if (n == 0) {
			assert_memory_equal(p + at, "\r\n", 2);
			*ended = true;
			return at + 2;
		}
		assert_true(at + n + 2 <= len && *blen + n <= BIG);
		memcpy(out + *blen, p + at, n);
		*blen += n;
		at += n;
		assert_memory_equal(p + at, "\r\n", 2);
		at += 2;
	}
	return at;
}

/*
 * A streamed answer to a client with a 4 KiB receive buffer: the source
 * is paused while the client holds more than its share and resumed as it
 * drains; the answer arrives chunked, whole, and the pipelined request
 * after it gets its own answer.
 */
static void
test_stream(void **state __attribute__((unused)))
{
	struct fx f;
	unsigned char *got, *body;
	size_t have, want = 2 * (BIG + 64) + 4096, off, blen, i;
	bool ended;

	fx_open(&f, 10000);
	stream_mode = true;
	stream_cut = 0;
	stream_pauses = stream_drains = 0;
	stream_max_held = 0;
	fx_send(&f,
	    "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
	got = malloc(want);
	body = malloc(BIG);
	/* Slowly: 8 KiB a turn. */
	have = fx_read(&f, got, want, 8192, 200, 2,
	    strlen("HTTP/1.1 200 OK\r\nX-Test: 1\r\n"
		   "Transfer-Encoding: chunked\r\n\r\n") +
		BIG + 16 * strlen("10000\r\n\r\n") + strlen("0\r\n\r\n") +
		HEAD_LEN + BIG);
	assert_int_equal(answered, 2);
	assert_true(stream_pauses > 0);
	assert_true(stream_drains >= stream_pauses);
	/* Its share and one piece, never the answer. */
	assert_true(stream_max_held <= 2 * 65536 + 64);
	off = dechunk(got, have, body, &blen, &ended);
	assert_true(ended);
	assert_int_equal(blen, BIG);
	for (i = 0; i < BIG; i++)
		if (body[i] != pattern(0, i))
			fail_msg("byte %zu is %u, want %u", i, body[i],
			    pattern(0, i));
	off += check_answer(1, got + off, have - off);
	assert_int_equal(off, have);
	free(body);
	free(got);
	fx_close(&f);
}

/* A streamed answer cut short: no last chunk, and the connection closes. */
static void
test_stream_cut(void **state __attribute__((unused)))
{
	struct fx f;
	unsigned char *got, *body;
	size_t have, want = BIG + 4096, blen;
	bool ended;

	fx_open(&f, 10000);
	stream_mode = true;
	stream_cut = 3 * 65536;
	fx_send(&f, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
	got = malloc(want);
	body = malloc(BIG);
	have = fx_read(&f, got, want, want, 0, 99, want);
	assert_int_equal(answered, 1);
	assert_int_equal(dechunk(got, have, body, &blen, &ended), have);
	assert_false(ended);
	assert_int_equal(blen, 3 * 65536);
	assert_int_equal(server_nconns(f.s), 0);
	free(body);
	free(got);
	fx_close(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_reader),
		cmocka_unit_test(test_slow_reader_ref),
		cmocka_unit_test(test_slow_reader_outlives_idle),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_stream_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
