/*
 * floe: test_server.c -- the front end's answers on a real socket: an
 * answer is written at once when the socket takes it, and what a slow
 * client's socket does not take (4 KiB buffers on both ends) waits in the
 * output buffer, counted as held, the next pipelined request unread until
 * it drains; then both follow, whole and in order.
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

/* Answer request N with BIG bytes of its pattern. */
static void
request_cb(struct server_conn *c, struct h1_msg *m __attribute__((unused)),
    void *arg __attribute__((unused)))
{
	struct evbuffer *b = evbuffer_new();
	unsigned char *p = malloc(BIG);
	size_t i;

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_reader),
		cmocka_unit_test(test_slow_reader_outlives_idle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
