/*
 * floe: sockio.c -- one read of up to 64 KiB from a plain socket into its
 * bufferevent's input, and one write of an output buffer's first pieces,
 * in place of libevent's own reads and writes (see sockio.h).
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/sockio.h"

/* libevent's extents are the system's iovecs: handed to the kernel as is. */
_Static_assert(_Generic((struct evbuffer_iovec *)0, struct iovec * : 1,
		   default : 0),
    "struct evbuffer_iovec is not struct iovec");

#define SOCKIO_READ_MAX (64 * 1024)
#define SOCKIO_WRITE_VECS 16 /* pieces of an output buffer per write */
/*
 * The block libevent takes for SOCKIO_READ_MAX in an empty buffer (the
 * size and its chain header, rounded up to a power of 2), and how many
 * freed ones are kept.
 */
#define SOCKIO_BLOCK (2 * SOCKIO_READ_MAX)
#define SOCKIO_KEEP 16

static void *sockio_kept[SOCKIO_KEEP];
static unsigned sockio_nkept;

/*
 * Every read into an empty input buffer takes a SOCKIO_BLOCK, and libevent
 * frees it once the bytes are consumed: two such blocks per proxied
 * request (the client's request, the catalog's answer), which glibc
 * carves from the top of its heap and merges back, about 1,000
 * instructions a request. Kept on a short last-in-first-out list, a block
 * costs two pointer moves, and the next read writes into the block still
 * in cache. Everything else goes to malloc as before. floe is one thread.
 */
static void *
sockio_malloc(size_t n)
{
	if (n == SOCKIO_BLOCK && sockio_nkept > 0)
		return sockio_kept[--sockio_nkept];
	return malloc(n);
}

static void
sockio_free(void *p)
{
	size_t n;

	if (p != NULL && sockio_nkept < SOCKIO_KEEP) {
		n = malloc_usable_size(p);
		if (n >= SOCKIO_BLOCK && n < SOCKIO_BLOCK + 64) {
			sockio_kept[sockio_nkept++] = p;
			return;
		}
	}
	free(p);
}

void
sockio_mem_init(void)
{
	event_set_mem_functions(sockio_malloc, realloc, sockio_free);
}

void
sockio_mem_release(void)
{
	while (sockio_nkept > 0)
		free(sockio_kept[--sockio_nkept]);
}

void
sockio_own_input(struct bufferevent *bev)
{
	evbuffer_unfreeze(bufferevent_get_input(bev), 0);
}

enum sockio_rc
sockio_read(struct bufferevent *bev, int fd)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v[2];
	struct msghdr msg;
	ssize_t n;
	int i, nv;

	if ((nv = evbuffer_reserve_space(in, SOCKIO_READ_MAX, v, 2)) < 1) {
		errno = ENOMEM;
		return SOCKIO_ERROR;
	}
	/* One piece (nearly always): recv spares the kernel the msghdr. */
	if (nv > 1) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = v;
		msg.msg_iovlen = nv;
	}
	do
		n = nv == 1 ? recv(fd, v[0].iov_base, v[0].iov_len, 0) :
			      recvmsg(fd, &msg, 0);
	while (n == -1 && errno == EINTR);
	if (n <= 0) {
		evbuffer_commit_space(in, v, 0);
		if (n == 0)
			return SOCKIO_EOF;
		return errno == EAGAIN || errno == EWOULDBLOCK ? SOCKIO_AGAIN :
								 SOCKIO_ERROR;
	}
	for (i = 0; i < nv; i++) {
		if ((size_t)n < v[i].iov_len)
			v[i].iov_len = n;
		n -= v[i].iov_len;
	}
	if (nv == 2 && v[1].iov_len == 0)
		nv = 1;
	evbuffer_commit_space(in, v, nv);
	return SOCKIO_READ;
}

ssize_t
sockio_sendv(int fd, const struct iovec *iov, int n)
{
	struct msghdr msg;
	ssize_t w;

	/* The msghdr only for more than one piece. */
	if (n != 1) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = (struct iovec *)(uintptr_t)iov;
		msg.msg_iovlen = n;
	}
	do
		w = n == 1 ?
		    send(fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL) :
		    sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (w == -1 && errno == EINTR);
	return w;
}

ssize_t
sockio_write(struct evbuffer *out, int fd)
{
	struct evbuffer_iovec v[SOCKIO_WRITE_VECS];
	ssize_t w;
	int n;

	n = evbuffer_peek(out, -1, NULL, v, SOCKIO_WRITE_VECS);
	if (n > SOCKIO_WRITE_VECS)
		n = SOCKIO_WRITE_VECS;
	if (n <= 0)
		return 0;
	if ((w = sockio_sendv(fd, v, n)) > 0)
		evbuffer_drain(out, (size_t)w);
	return w;
}
