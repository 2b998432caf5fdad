/*
 * floe: sockio.c -- one read of up to 64 KiB from a plain socket into its
 * bufferevent's input, and one write of an output buffer's first pieces,
 * in place of libevent's own reads and writes (see sockio.h).
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy/sockio.h"

/* libevent's extents are the system's iovecs: handed to the kernel as is. */
_Static_assert(_Generic((struct evbuffer_iovec *)0, struct iovec * : 1,
		   default : 0),
    "struct evbuffer_iovec is not struct iovec");

#define SOCKIO_READ_MAX (64 * 1024)
#define SOCKIO_WRITE_VECS 16 /* pieces of an output buffer per write */

enum sockio_rc
sockio_read(struct bufferevent *bev, int fd)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v[2];
	struct msghdr msg;
	ssize_t n;
	int i, nv;

	/* A bufferevent keeps its input's end frozen; so do we. */
	evbuffer_unfreeze(in, 0);
	if ((nv = evbuffer_reserve_space(in, SOCKIO_READ_MAX, v, 2)) < 1) {
		evbuffer_freeze(in, 0);
		errno = ENOMEM;
		return SOCKIO_ERROR;
	}
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = v;
	msg.msg_iovlen = nv;
	/* One piece (nearly always): recv spares the kernel the msghdr. */
	do
		n = nv == 1 ? recv(fd, v[0].iov_base, v[0].iov_len, 0) :
			      recvmsg(fd, &msg, 0);
	while (n == -1 && errno == EINTR);
	if (n <= 0) {
		evbuffer_commit_space(in, v, 0);
		evbuffer_freeze(in, 0);
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
	evbuffer_freeze(in, 0);
	return SOCKIO_READ;
}

ssize_t
sockio_sendv(int fd, const struct iovec *iov, int n)
{
	struct msghdr msg;
	ssize_t w;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = (struct iovec *)(uintptr_t)iov;
	msg.msg_iovlen = n;
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
