/*
 * floe: server_impl.h -- private to the front end (server.c, the
 * connections' life; server_reply.c, the answers written to them);
 * nothing else includes it but its unit test. Owns the listener,
 * connection and server structures. Callers use proxy/server.h. Loop
 * thread only.
 */
#ifndef FLOE_PROXY_SERVER_IMPL_H
#define FLOE_PROXY_SERVER_IMPL_H

#include <sys/types.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#include "lib/compat.h"
#include "proxy/server.h"

struct bufferevent;
struct event;
struct evconnlistener;
struct h1;
struct tlsctx;

#define SERVER_HEAD_NOW 2048 /* the largest head written straight */
#define SERVER_TLS_RECORD 16384 /* a TLS record's most plaintext */
#define SERVER_SEND_VECS 15 /* body pieces written straight with it */
/* A chunk's size line, after the CRLF of the chunk before: 16 hex digits. */
#define SERVER_CHUNK_LINE (2 + 2 * sizeof(size_t) + 2)
/*
 * A connection whose output buffer holds more than this once an answer is
 * queued (what the socket did not take) is not read, and its next
 * pipelined request not parsed, until the output drains below it: one
 * answer beyond the socket buffer per connection, plus this.
 */
#define SERVER_CONN_BUDGET (64 * 1024)

struct server_listener {
	struct evconnlistener *l;
	int port;
	bool is_unix;
	char *path;
	struct tlsctx *tls; /* borrowed; NULL for plain */
	LIST_ENTRY(server_listener) entry;
};

struct server_conn {
	struct server *srv;
	struct bufferevent *bev;
	struct h1 *h1;
	struct event *timer; /* see server_timer_cb */
	bool timed; /* ... and it is added (not event_pending's to say) */
	int64_t idle_us; /* when it last went idle (monotonic) */
	bool busy; /* a request is with its owner */
	bool closing; /* close once the output is written */
	bool stalled; /* not read until its output drains (see above) */
	size_t held; /* its output buffer's length, as last accounted */
	struct event *rev; /* floe's own reads of a plain connection */
	int fd; /* its socket (event_get_fd costs a call a write) */
	bool reading; /* ... and it is added (not event_pending's to say) */
	bool continued; /* "100 Continue" sent for this request */
	bool close_after; /* the answer ends the connection */
	bool head_req;
	bool tls;
	bool handshaking; /* TLS: bounded by header_timeout, not idle */
	server_abort_cb abort_cb;
	void *abort_arg;
	bool streaming; /* an answer's body is being given in pieces */
	bool chunked; /* ... in chunks */
	bool chunk_crlf; /* ... and the last chunk's CRLF is not sent yet */
	server_abort_cb drain_cb; /* its output drained to its share */
	void *drain_arg;
	uid_t uid;
	int port;
	char peer[INET6_ADDRSTRLEN];
	size_t peerlen; /* strlen(peer): named in every forwarded request */
	LIST_ENTRY(server_conn) entry;
	/* server_conn_memo: the last key, its function and value. */
	uint64_t (*memo_fn)(const void *, size_t);
	uint64_t memo_val;
	size_t memo_len;
	unsigned char memo_key[SERVER_MEMO_KEY];
};

struct server {
	struct event_base *base;
	struct server_opts opts;
	server_request_cb request_cb;
	server_error_cb error_cb;
	void *arg;
	bool draining;
	unsigned nconns;
	struct timeval idle_tv, head_tv, write_tv;
	/* idle_tv and head_tv as libevent common timeouts: O(1) timers. */
	const struct timeval *idle_q, *head_q;
	LIST_HEAD(, server_listener) listeners;
	LIST_HEAD(, server_conn) conns;
};

/* server.c */
void server_flush(struct server_conn *);
void server_answered(struct server_conn *);

/* server_reply.c */
void server_put_head(struct server_conn *, unsigned, const char *, size_t,
    struct evbuffer *, int64_t);

#endif
