/*
 * floe: test_sockio.c -- proxy/sockio.c: a read and what it returns at
 * EOF and with nothing to read, a write of several pieces, and the read
 * blocks libevent frees being kept for the next read.
 */
#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "lib/compat.h"
#include "proxy/sockio.h"

struct fixture {
	struct event_base *base;
	struct bufferevent *bev;
	int fd[2]; /* fd[0] is read through BEV, fd[1] is the peer */
};

static int
setup(void **state)
{
	struct fixture *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, t->fd), 0);
	assert_int_equal(evutil_make_socket_nonblocking(t->fd[0]), 0);
	assert_non_null(t->base = event_base_new());
	assert_non_null(t->bev = bufferevent_socket_new(t->base, t->fd[0], 0));
	/* As the front end and the pool do before their first read. */
	sockio_own_input(t->bev);
	*state = t;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *t = *state;

	bufferevent_free(t->bev);
	event_base_free(t->base);
	close(t->fd[0]);
	if (t->fd[1] != -1)
		close(t->fd[1]);
	free(t);
	sockio_mem_release();
	return 0;
}

/* Send N bytes of a pattern starting at SEED from the peer. */
static void
peer_send(struct fixture *t, size_t n, unsigned seed)
{
	char buf[4096];
	size_t i;

	assert_true(n <= sizeof(buf));
	for (i = 0; i < n; i++)
		buf[i] = (char)(seed + i);
	assert_int_equal(write(t->fd[1], buf, n), (ssize_t)n);
}

/* One read: N bytes of the pattern SEED; the address they landed at. */
static const unsigned char *
read_check(struct fixture *t, size_t n, unsigned seed)
{
	struct evbuffer *in = bufferevent_get_input(t->bev);
	const unsigned char *p;
	size_t i;

	assert_int_equal(sockio_read(t->bev, t->fd[0]), SOCKIO_READ);
	assert_int_equal(evbuffer_get_length(in), n);
	p = evbuffer_pullup(in, -1);
	for (i = 0; i < n; i++)
		assert_int_equal(p[i], (unsigned char)(seed + i));
	return p;
}

/* Reads, nothing to read, EOF. */
static void
test_read(void **state)
{
	struct fixture *t = *state;
	struct evbuffer *in = bufferevent_get_input(t->bev);

	assert_int_equal(sockio_read(t->bev, t->fd[0]), SOCKIO_AGAIN);
	peer_send(t, 3000, 1);
	(void)read_check(t, 3000, 1);
	/* More bytes go after those still in the buffer. */
	peer_send(t, 100, 7);
	assert_int_equal(sockio_read(t->bev, t->fd[0]), SOCKIO_READ);
	assert_int_equal(evbuffer_get_length(in), 3100);
	evbuffer_drain(in, 3000);
	assert_int_equal(*evbuffer_pullup(in, 1), 7);
	close(t->fd[1]);
	t->fd[1] = -1;
	assert_int_equal(sockio_read(t->bev, t->fd[0]), SOCKIO_EOF);
}

/* Pieces of an output buffer go in one write, drained by what went. */
static void
test_write(void **state)
{
	struct fixture *t = *state;
	struct evbuffer *out = evbuffer_new();
	char got[64];

	assert_non_null(out);
	evbuffer_add_reference(out, "head ", 5, NULL, NULL);
	evbuffer_add_reference(out, "body", 4, NULL, NULL);
	assert_int_equal(sockio_write(out, t->fd[0]), 9);
	assert_int_equal(evbuffer_get_length(out), 0);
	assert_int_equal(read(t->fd[1], got, sizeof(got)), 9);
	assert_memory_equal(got, "head body", 9);
	assert_int_equal(sockio_write(out, t->fd[0]), 0);
	evbuffer_free(out);
}

/*
 * A block a read took comes back to the next read after its bytes are
 * drained, though malloc was asked for a block of the same size in
 * between: libevent's free kept it. Bytes are checked every time.
 */
static void
test_blocks_kept(void **state)
{
	struct fixture *t = *state;
	struct evbuffer *in = bufferevent_get_input(t->bev);
	const unsigned char *a, *b;
	void *other[3];
	int i;

	peer_send(t, 3000, 3);
	a = read_check(t, 3000, 3);
	evbuffer_drain(in, 3000);
	for (i = 0; i < 3; i++) {
		/* What malloc would have handed back had the block gone. */
		other[i] = malloc(128 * 1024);
		assert_non_null(other[i]);
		peer_send(t, 2000, (unsigned)i);
		b = read_check(t, 2000, (unsigned)i);
		assert_ptr_equal(b, a);
		evbuffer_drain(in, 2000);
	}
	for (i = 0; i < 3; i++)
		free(other[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blocks_kept, setup,
		    teardown),
	};

	/* Before any other libevent call, as floe's main does. */
	sockio_mem_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
