/*
 * floe: h1_impl.h -- private to HTTP/1.1 framing (h1.c; h1_chunks.c, the
 * strict scan of a chunked body; h1_replay.c, a head seen before); nothing
 * else includes it. Owns struct h1. Callers use proxy/h1.h.
 */
#ifndef FLOE_PROXY_H1_IMPL_H
#define FLOE_PROXY_H1_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llhttp.h>

#include "proxy/h1.h"

/* Where the strict scan of a chunked body is (h1_scan_chunks). */
enum h1_cscan {
	H1_CS_OFF, /* no chunked body (or not yet) */
	H1_CS_SIZE, /* hex digits of a chunk size */
	H1_CS_EXT, /* after ';': a chunk extension */
	H1_CS_SIZE_LF, /* the LF of a size line */
	H1_CS_DATA, /* chunk data */
	H1_CS_DATA_CR, /* the CRLF after chunk data */
	H1_CS_DATA_LF,
	H1_CS_TRAILER, /* a trailer line (or the final blank line) */
	H1_CS_TRAILER_LF,
	H1_CS_DONE,
};

enum h1_state {
	H1_S_HEAD, /* parser running over the head (or a chunked body) */
	H1_S_RAWBODY, /* counting Content-Length bytes ourselves */
	H1_S_DONE,
	H1_S_ERROR,
};

/*
 * The last head the parser read whole that a replay can stand for
 * (h1_replay.c): its bytes as sent and what parsing them made. One
 * allocation: this, the headers, the head buffer's bytes, the raw head.
 */
struct h1_replay {
	size_t size; /* bytes allocated */
	size_t raw_len;
	const char *raw;
	bool head_response; /* it was read as the answer to a HEAD */
	enum h1_state state; /* H1_S_DONE or H1_S_RAWBODY */
	uint64_t need; /* the Content-Length of a RAWBODY */
	struct h1_msg msg; /* hdrs and target point into this allocation */
};

struct h1 {
	enum h1_kind kind;
	struct h1_limits lim;
	llhttp_t p;
	enum h1_state state;
	bool head_response;
	bool started;
	bool fresh; /* nothing was read or handed out since h1_reset */
	bool in_value; /* the last header callback was a value */
	bool head_done; /* past the head: fields now are trailers */
	/* The strict line scan of the head (h1_scan). */
	bool scan_done;
	bool scan_cr;
	size_t scan_len;
	size_t scan_total; /* head bytes scanned: bounded by max_head */
	size_t scan_line1; /* the request or status line's length */
	unsigned scan_lines;
	size_t scan_off; /* where the head ended in the vector just scanned */
	bool scan_here; /* ... and it ended in that vector */
	uint32_t seen; /* the fields of the head so far, a bit each */
	unsigned dup; /* 1 + the index of the first repeated once-header */
	enum h1_cscan cs; /* the chunked body's scan */
	uint64_t csize;
	unsigned cdigits;
	char *buf; /* head bytes: target, then name\0value\0 pairs */
	size_t used;
	uint64_t need; /* raw body bytes still to move */
	int err_status;
	const char *err_text;
	char err_buf[96]; /* an answer's err_text, when it is made here */
	struct h1_msg msg;
	struct h1_header *hdrs;
	struct h1_replay *rec; /* NULL until a head is recorded */
	bool replayed; /* the current message's head was replayed */
};

/* h1.c: record the first framing error; -1 (stops the parser). */
int h1_fail(struct h1 *, int status, const char *text);

/* h1_chunks.c: scan chunked body bytes the parser consumed; 0 or -1. */
int h1_scan_chunks(struct h1 *, const char *, size_t);

/* h1_replay.c: keep the head of RAW_LEN bytes at RAW just parsed. */
void h1_record(struct h1 *, const char *raw, size_t raw_len);
/* h1_replay.c: forget the record (h1_free). */
void h1_unrecord(struct h1 *);
/* h1_replay.c: IN begins with the recorded head: take it; true. */
bool h1_replay(struct h1 *, struct evbuffer *in);

#endif
