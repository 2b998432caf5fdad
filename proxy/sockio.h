/*
 * floe: sockio.h -- reading a plain socket into a bufferevent's input in
 * large extents. libevent 2.1's evbuffer_read asks FIONREAD before every
 * read and reads at most 4 KiB, so a 1 MB answer took 256 reads and 256
 * ioctls; this reads up to 64 KiB with one readv. Owns nothing.
 */
#ifndef FLOE_PROXY_SOCKIO_H
#define FLOE_PROXY_SOCKIO_H

struct bufferevent;

enum sockio_rc {
	SOCKIO_READ = 1, /* bytes were added to the input */
	SOCKIO_AGAIN = 0, /* nothing to read now */
	SOCKIO_EOF = -1, /* the peer closed */
	SOCKIO_ERROR = -2 /* errno says why */
};

/* One read from BEV's socket into its input buffer. */
enum sockio_rc sockio_read(struct bufferevent *);

#endif
