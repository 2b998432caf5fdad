/*
 * floe: sockio.c -- one readv of up to 64 KiB from a plain socket into its
 * bufferevent's input, in place of libevent's own read (see sockio.h).
 */
#include <sys/types.h>
#include <sys/uio.h>

#include <errno.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy/sockio.h"

#define SOCKIO_READ_MAX (64 * 1024)

enum sockio_rc
sockio_read(struct bufferevent *bev)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	ssize_t n;
	int i, nv;

	/* A bufferevent keeps its input's end frozen; so do we. */
	evbuffer_unfreeze(in, 0);
	if ((nv = evbuffer_reserve_space(in, SOCKIO_READ_MAX, v, 2)) < 1) {
		evbuffer_freeze(in, 0);
		errno = ENOMEM;
		return SOCKIO_ERROR;
	}
	for (i = 0; i < nv; i++) {
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = v[i].iov_len;
	}
	do
		n = readv(bufferevent_getfd(bev), iov, nv);
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
