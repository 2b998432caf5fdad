/*
 * floe: sockio.h -- the data path's socket I/O for plain connections, in
 * place of libevent's. libevent 2.1's evbuffer_read asks FIONREAD before
 * every read and reads at most 4 KiB (a 1 MB answer took 256 reads and 256
 * ioctls); sockio_read takes up to 64 KiB at once. Both directions use
 * the socket calls rather than read/write: they skip the file layer's
 * position lock and iterators, and MSG_NOSIGNAL spares SIGPIPE. One piece
 * goes through recv or send, which also spare the kernel a msghdr; more
 * through recvmsg or sendmsg. Owns nothing.
 */
#ifndef FLOE_PROXY_SOCKIO_H
#define FLOE_PROXY_SOCKIO_H

#include <stddef.h>
#include <sys/types.h>

struct bufferevent;
struct evbuffer;
struct iovec;

enum sockio_rc {
	SOCKIO_READ = 1, /* bytes were added to the input */
	SOCKIO_AGAIN = 0, /* nothing to read now */
	SOCKIO_EOF = -1, /* the peer closed */
	SOCKIO_ERROR = -2 /* errno says why */
};

/*
 * From now on floe reads BEV's socket itself (sockio_read), never its
 * bufferevent: the input's end, which a bufferevent keeps frozen between
 * its own reads, is unfrozen once here rather than around every read.
 */
void sockio_own_input(struct bufferevent *);
/*
 * One read from BEV's socket FD into its input buffer (sockio_own_input
 * first). The caller passes FD (an event callback has it):
 * bufferevent_getfd takes the bufferevent's lock and a control call each
 * time.
 */
enum sockio_rc sockio_read(struct bufferevent *, int fd);
/*
 * One write of OUT's first pieces to FD, drained by what was written:
 * bytes written, or -1 with errno (EAGAIN: nothing could be written).
 */
ssize_t sockio_write(struct evbuffer *out, int fd);
/* One sendmsg of IOV[0..N) to FD: bytes written, or -1 with errno. */
ssize_t sockio_sendv(int fd, const struct iovec *iov, int n);

/*
 * libevent's memory, with the blocks sockio_read's reservations take kept
 * for the next read (see sockio.c). Call sockio_mem_init before any other
 * libevent call; sockio_mem_release frees the kept blocks.
 */
void sockio_mem_init(void);
void sockio_mem_release(void);

#endif
