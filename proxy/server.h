/*
 * floe: server.h -- the HTTP/1.1 front end on bufferevents, for the REST
 * listener and the admin socket alike. Owns the listeners, every client
 * connection, its h1 parser and its timers (idle between requests, a
 * deadline for the whole request head). One request per connection is in
 * flight at a time; pipelined requests wait in the input buffer, and a
 * connection whose answers are not being taken is not read.
 */
#ifndef FLOE_PROXY_SERVER_H
#define FLOE_PROXY_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proxy/h1.h"

struct event_base;
struct evbuffer;
struct server;
struct server_conn;
struct tlsctx;

struct server_opts {
	const char *name; /* "rest", "admin": for logs */
	struct h1_limits lim;
	uint64_t idle_timeout_ms;
	uint64_t header_timeout_ms;
	uint64_t write_timeout_ms;
	/*
	 * Its answers count toward the budget (server_set_budget): the
	 * engines' listener, not the admin socket, whose large answers
	 * must not turn engines away.
	 */
	bool budgeted;
	/*
	 * Its TCP listeners set SO_REUSEPORT: each of several processes
	 * listens on the same address and the kernel spreads connections.
	 */
	bool reuseport;
};

/*
 * A complete request. The callee answers with server_reply*() now or later;
 * MSG stays valid until then.
 */
typedef void (
    *server_request_cb)(struct server_conn *, struct h1_msg *, void *arg);
/*
 * The client sent a request floe cannot frame (STATUS 400/413/414/431):
 * the callee answers with server_reply*(); the connection then closes.
 */
typedef void (*server_error_cb)(struct server_conn *, int status,
    const char *why, void *arg);
/* The client went away while its request was in flight. */
typedef void (*server_abort_cb)(void *arg);

struct server *server_new(struct event_base *, const struct server_opts *,
    server_request_cb, server_error_cb, void *arg);
void server_free(struct server *);
/* Listen on "host:port" or "[v6]:port". 0, or -1 with ERR. */
int server_listen_tcp(struct server *, const char *hostport, char *err,
    size_t errlen);
/*
 * Listen on "host:port" speaking TLS with TLS (borrowed: it must outlive
 * the server; a reload of it applies to new connections).
 */
int server_listen_tls(struct server *, const char *hostport, struct tlsctx *,
    char *err, size_t errlen);
/* Listen on a Unix socket PATH, mode 0600 (replacing a stale socket). */
int server_listen_unix(struct server *, const char *path, char *err,
    size_t errlen);
/*
 * The bytes answers hold in the output buffers of every budgeted server's
 * connections (what their sockets have not taken), process-wide. Over the
 * budget MAX (0: none), server_over_budget says so and floe takes no new work
 * (see docs/internals.md, "Bounds"). The peak is the largest total since the
 * last server_held_peak_take.
 */
void server_set_budget(size_t max);
bool server_over_budget(void);
size_t server_held_bytes(void);
size_t server_held_peak_take(void);
/*
 * BYTES held by a connection of a server not budgeted (a large admin
 * answer) are sent: count them in the peak as if they had been held, so
 * that the heap they leave behind is trimmed (server_account calls it).
 */
void server_held_hint(size_t bytes);
/* The bound TCP port (for listen ports chosen by the kernel). */
int server_port(const struct server *);
/*
 * Stop accepting and close idle connections; requests in flight finish
 * and their connections close after the answer.
 */
void server_drain(struct server *);
unsigned server_nconns(const struct server *);

/*
 * Answer. HDRS is a preformatted block of "Name: value\r\n" lines (or
 * NULL); Content-Length and Connection are added here. BODY is moved
 * (emptied), NULL for none. A 304 or a HEAD answer sends no body bytes
 * but keeps the Content-Length given in CONTENT_LENGTH (-1: from BODY).
 */
void server_reply(struct server_conn *, unsigned status, const char *hdrs,
    size_t hlen, struct evbuffer *body, int64_t content_length);
/* Told that the bytes a server_reply_ref answer referenced are done with. */
typedef void (*server_ref_done_cb)(const void *data, size_t len, void *arg);
/*
 * server_reply with the LEN bytes at DATA as the body, referenced, not
 * copied: DONE(DATA..., ARG) is called once, when they are no longer
 * needed (before it returns when the socket took them all at once).
 */
void server_reply_ref(struct server_conn *, unsigned status, const char *hdrs,
    size_t hlen, const void *data, size_t len, int64_t content_length,
    server_ref_done_cb done, void *arg);
/*
 * Answer with a body given in pieces as it comes (server_stream_add):
 * CONTENT_LENGTH bytes, or chunked when it is below 0 (to an HTTP/1.1
 * client only). The request stays in flight until server_stream_end or
 * server_stream_abort; the abort callback still tells of a client gone.
 */
void server_stream_start(struct server_conn *, unsigned status,
    const char *hdrs, size_t hlen, int64_t content_length);
/*
 * Give BODY's bytes (moved) to the answer. False when the client holds
 * more of it than one connection's share (64 KiB beyond what its socket
 * took): give no more until the drain callback says it took them.
 */
bool server_stream_add(struct server_conn *, struct evbuffer *body);
/* The answer is whole (its last chunk); the connection goes on. */
void server_stream_end(struct server_conn *);
/*
 * The answer cannot be finished: no last chunk; the connection closes
 * once what was given is written, so the client sees it cut short.
 */
void server_stream_abort(struct server_conn *);
/* Call CB(ARG) when a streamed answer's output drains to the share. */
void server_conn_on_drain(struct server_conn *, server_abort_cb cb, void *arg);
/* Answer with a body from memory. */
void server_reply_mem(struct server_conn *, unsigned status, const char *ctype,
    const char *body, size_t len);
/* Close the connection after the next answer. */
void server_conn_close_after(struct server_conn *);
void server_conn_on_abort(struct server_conn *, server_abort_cb, void *);
/* The peer: "127.0.0.1" (TCP) or "unix" ; its uid on a Unix socket. */
const char *server_conn_peer(const struct server_conn *);
size_t server_conn_peer_len(const struct server_conn *);
uid_t server_conn_uid(const struct server_conn *);
/* The listener port the connection came in on. */
int server_conn_port(const struct server_conn *);
/* The connection came in on a TLS listener. */
bool server_conn_is_tls(const struct server_conn *);
/* The longest key server_conn_memo remembers. */
#define SERVER_MEMO_KEY 128
/*
 * FN of the LEN bytes at KEY, FN a pure function: the connection keeps
 * the last key (up to SERVER_MEMO_KEY bytes) and what FN made of it, and
 * answers the next call with the same FN and bytes from that (a client
 * sends the same credential on every request of its connection).
 */
uint64_t server_conn_memo(struct server_conn *, const void *key, size_t len,
    uint64_t (*fn)(const void *, size_t));

#endif
