/*
 * floe: test_server.c -- the front end's answers on a real socket: an
 * answer is written at once when the socket takes it, and what a slow
 * client's socket does not take (4 KiB buffers on both ends) waits in the
 * output buffer, counted as held, the next pipelined request unread until
 * it drains; then both follow, whole and in order.
 */
#include <sys/types.h>
#include <sys/socket.h>
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

/*
 * A client with a 4 KiB receive buffer sends two requests at once and
 * reads nothing for a while: both answers arrive whole and in order.
 */
static void
test_slow_reader(void **state __attribute__((unused)))
{
	const char *req = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
			  "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";
	struct server_opts so;
	struct sockaddr_in sin;
	struct event_base *base;
	struct server *s;
	unsigned char *got;
	size_t have = 0, want = 2 * (BIG + 64), off;
	char err[256], hostport[32];
	int fd, sfd = -1, rcv = 4096, turns;
	ssize_t n;

	assert_non_null(base = event_base_new());
	memset(&so, 0, sizeof(so));
	so.name = "test";
	so.lim.max_head = 8192;
	so.lim.max_headers = 50;
	so.lim.max_body = 1 << 20;
	so.idle_timeout_ms = 10000;
	so.header_timeout_ms = 10000;
	so.write_timeout_ms = 10000;
	so.budgeted = true;
	assert_non_null(s = server_new(base, &so, request_cb, error_cb, NULL));
	snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", free_port());
	if (server_listen_tcp(s, hostport, err, sizeof(err)) != 0)
		fail_msg("listen: %s", err);

	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv,
			     sizeof(rcv)),
	    0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)server_port(s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	/* Accept, then shrink the server side's send buffer too. */
	for (turns = 0; turns < 100 && (sfd = server_side(fd)) == -1; turns++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_true(sfd != -1);
	assert_int_equal(setsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &rcv,
			     sizeof(rcv)),
	    0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	fcntl(fd, F_SETFL, O_NONBLOCK);

	/*
	 * Serve without reading: the first answer cannot all be written,
	 * and while it waits the second request is not even parsed (the
	 * connection's output budget); what waits is counted as held.
	 */
	for (turns = 0; turns < 50; turns++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
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
	for (turns = 0; have < want && turns < 100000; turns++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		n = read(fd, got + have, want - have);
		if (n > 0)
			have += (size_t)n;
		else if (n == 0)
			break;
		else if (errno != EAGAIN)
			fail_msg("read: %s", strerror(errno));
		else
			usleep(100);
		if (answered == 2 &&
		    have >= 2 *
			    (BIG +
				strlen("HTTP/1.1 200 OK\r\nX-Test: 1\r\n"
				       "Content-Length: 1048576\r\n\r\n")))
			break;
	}
	/* Once the client reads, the second answer follows the first. */
	assert_int_equal(answered, 2);
	assert_int_equal(server_held_bytes(), 0);
	off = check_answer(0, got, have);
	off += check_answer(1, got + off, have - off);
	assert_int_equal(off, have);
	free(got);
	close(fd);
	server_free(s);
	event_base_free(base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
