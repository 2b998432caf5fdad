/*
 * floe: h1.h -- HTTP/1.1 framing on llhttp, shared by the front end
 * (requests) and the upstream pool (answers). Owns one parser, the head
 * buffer (request line or status, header names and values) and the body
 * buffer of the message being read. Bodies with a Content-Length are moved
 * between evbuffers without copying; chunked bodies are de-chunked.
 */
#ifndef FLOE_PROXY_H1_H
#define FLOE_PROXY_H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

struct evbuffer;
struct h1;

enum h1_kind {
	H1_REQUEST,
	H1_RESPONSE,
};

struct h1_limits {
	size_t max_head; /* request line/status + headers, bytes */
	unsigned max_headers; /* header count */
	uint64_t max_body; /* body bytes */
};

/*
 * The header names floe looks at, each classified once as it is parsed
 * (h1_field_of): a look-up is then an integer compare, not a comparison
 * of names. Every other name is H1_F_OTHER.
 */
enum h1_field {
	H1_F_OTHER,
	/* framing and the headers a request may carry once */
	H1_F_HOST,
	H1_F_AUTHORIZATION,
	H1_F_CONTENT_LENGTH,
	H1_F_TRANSFER_ENCODING,
	H1_F_IDEMPOTENCY_KEY,
	H1_F_ACCESS_DELEGATION, /* X-Iceberg-Access-Delegation */
	/* the rest of a request's */
	H1_F_EXPECT,
	H1_F_VIA,
	H1_F_IF_NONE_MATCH,
	H1_F_USER_AGENT,
	H1_F_ACCEPT,
	H1_F_CONTENT_TYPE,
	H1_F_CLIENT_VERSION, /* X-Client-Version */
	H1_F_CLIENT_GIT_COMMIT, /* X-Client-Git-Commit-Short */
	H1_F_REQUEST_ID, /* X-Request-Id */
	H1_F_TRACEPARENT,
	/* an answer's */
	H1_F_ETAG,
	H1_F_CACHE_CONTROL,
	H1_F_RETRY_AFTER,
	H1_F_WWW_AUTHENTICATE,
	H1_F_LOCATION,
	H1_F_COUNT,
};

struct h1_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
	enum h1_field field; /* what NAME is */
};

enum h1_method {
	H1_GET,
	H1_HEAD,
	H1_POST,
	H1_PUT,
	H1_DELETE,
	H1_OTHER,
};

/* A complete message; valid until h1_reset(). */
struct h1_msg {
	enum h1_method method;
	const char *method_name;
	unsigned status;
	const char *target; /* request-target, NUL-terminated */
	size_t target_len;
	struct h1_header *hdrs;
	unsigned nhdrs;
	unsigned http_minor;
	bool keep_alive;
	bool has_body_framing; /* Content-Length or chunked was sent */
	struct evbuffer *body;
	/* 1 + the index in HDRS of the first header of each field; 0: none. */
	uint16_t first[H1_F_COUNT];
};

enum h1_rc {
	H1_MORE, /* need more bytes */
	H1_DONE, /* a whole message is in h1_msg() */
	H1_ERROR, /* see h1_error_status() and h1_error_text() */
};

struct h1 *h1_new(enum h1_kind, const struct h1_limits *);
void h1_free(struct h1 *);
/* Forget the message; ready for the next on the same connection. */
void h1_reset(struct h1 *);
/* The answer being read is to a HEAD request: it has no body. */
void h1_set_head_response(struct h1 *, bool);
/* Consume bytes from IN, stopping after one complete message. */
enum h1_rc h1_parse(struct h1 *, struct evbuffer *in);
/* The peer closed: completes an answer delimited by the close. */
enum h1_rc h1_eof(struct h1 *);
/* The head is complete and its body is still being read. */
bool h1_awaits_body(const struct h1 *);
/* True once any byte of the current message was consumed. */
bool h1_started(const struct h1 *);
/*
 * The current message's head was the last one read whole, byte for byte,
 * and was not parsed again: what parsing it made was copied (h1_replay.c).
 */
bool h1_replayed(const struct h1 *);
struct h1_msg *h1_msg(struct h1 *);
/* 400, 413, 414, 431 or 505 for a request; 502 for an answer. */
int h1_error_status(const struct h1 *);
const char *h1_error_text(const struct h1 *);

/* The first header NAME (case-insensitive), or NULL: h1_get is cheaper. */
const struct h1_header *h1_find(const struct h1_msg *, const char *name);
/*
 * The field NAME (LEN bytes) is, ignoring ASCII case; H1_F_OTHER for a
 * name floe does not look at. A name of a field is a token.
 */
enum h1_field h1_field_of(const char *name, size_t len);
/*
 * Classify the headers of a message made by hand (the parser does it for
 * the messages it reads): each one's field, and the message's first[].
 */
void h1_index(struct h1_msg *);

/* The first header of FIELD in M, or NULL: no name is compared. */
static inline const struct h1_header *
h1_get(const struct h1_msg *m, enum h1_field field)
{
	return m->first[field] != 0 ? &m->hdrs[m->first[field] - 1] : NULL;
}
/* The reason phrase of STATUS ("Not Found"). */
const char *h1_reason(unsigned status);
/*
 * NAME equals the NUL-terminated LIT, ignoring ASCII case. Inline: with a
 * literal LIT the length test is a constant, and most names fail it; the
 * first byte, compared with case folded (0x20 set), most of the others.
 */
static inline bool
h1_name_is(const char *name, size_t len, const char *lit)
{
	return strlen(lit) == len &&
	    (len == 0 ||
		((name[0] | 0x20) == (lit[0] | 0x20) &&
		    strncasecmp(name, lit, len) == 0));
}

#endif
