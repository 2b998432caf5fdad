/*
 * floe: upstream_impl.h -- private to the data-path pool (upstream.c,
 * upstream_body.c, which follows an answer's body as it arrives, and
 * upstream_idle.c, which bounds an idle connection's life); nothing else
 * includes it. Owns the pool's structures. Callers use
 * proxy/upstream.h. Loop thread only.
 */
#ifndef FLOE_PROXY_UPSTREAM_IMPL_H
#define FLOE_PROXY_UPSTREAM_IMPL_H

#include <sys/time.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>
#include <openssl/ssl.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "cache/memo.h"
#include "proxy/h1.h"
#include "proxy/upstream.h"

struct bufferevent;
struct event;
struct evbuffer;

struct upconn {
	struct upstream *u;
	struct bufferevent *bev;
	struct h1 *h1;
	struct upstream_xfer *x; /* the request in flight, or NULL: idle */
	bool connected;
	bool idle; /* on the idle list */
	bool tls_ended; /* a close_notify or a bad record read ahead */
	struct event *rev; /* floe's own reads, once a plain conn connects */
	struct event *idle_ev; /* ... and its idle timer (upstream_idle.c) */
	int fd; /* ... of its socket (event_get_fd costs a call a write) */
	int64_t idle_us; /* when it last went idle (plain conns) */
	unsigned served; /* answers read on this connection */
	LIST_ENTRY(upconn) entry;
};

struct upstream_xfer {
	struct upstream *u;
	/* Kept when the transfer is reused. */
	struct evbuffer *req; /* the whole request, kept for one retry */
	/*
	 * ... or, with no credential and no body to add, the whole head in
	 * X's own HLEN bytes (HCAP allocated; HLEN 0: REQ holds it).
	 */
	char *hbuf;
	size_t hlen;
	size_t hcap;
	struct event *timer;
	int64_t armed_us; /* when TIMER fires (units_mono_us); 0: not added */
	/*
	 * Set up apart when it is reused, not cleared: the check's state
	 * (jscheck_init, every time) and the error text (emptied).
	 */
	struct jscheck jsc;
	char error[400];
	/* Cleared when it is reused: everything from here on. */
	struct upconn *c;
	int64_t due_us; /* the current phase's deadline; 0: none */
	bool head_method;
	bool retryable;
	bool retried;
	bool nocred; /* no credential: fails (503) on the next loop turn */
	bool paused; /* not read: the client does not take the answer */
	bool streaming; /* its answer goes to the client as it arrives */
	void (*body_cb)(struct upstream_xfer *, struct h1_msg *, void *);
	bool bearer; /* carried floe's bearer token of generation CRED_GEN */
	uint64_t cred_gen;
	enum upstream_fail fail;
	size_t watched; /* body bytes searched for the uri */
	bool has_uri; /* ... and it was found */
	bool watch_off; /* ... or the search gave up */
	bool check; /* a 2xx answer's body is checked as JSON */
	int json; /* ... -1: not (yet), 0: it is not JSON, 1: it is */
	size_t json_at; /* ... the first wrong byte, when not */
	size_t checked; /* ... body bytes fed to the check so far (jsc) */
	/* The body compared with the memo's (cache/memo.h) before that. */
	struct memo_cmp mc;
	bool memo_hit; /* the whole body was the memo's */
	int64_t start_us;
	uint64_t usec;
	upstream_done_cb cb;
	void *arg;
	TAILQ_ENTRY(upstream_xfer) wait; /* waiting, or on the free list */
};

struct upstream {
	struct event_base *base;
	struct evdns_base *dns;
	const struct conf_target *t;
	char *name;
	char *fixed; /* "Host: ...\r\n", then "\r\n" past fixed_len */
	size_t fixed_len;
	struct cred *cred; /* floe's credential for the catalog, or NULL */
	SSL_CTX *ssl;
	SSL_SESSION *sess; /* the catalog's last TLS session, to resume */
	struct h1_limits lim;
	struct timeval timeout_tv, connect_tv, idle_tv;
	/*
	 * The same durations as libevent common timeouts: every request
	 * arms one, and a queue of equal durations takes them in O(1).
	 */
	const struct timeval *timeout_q, *connect_q;
	unsigned nconns; /* open, busy or idle */
	unsigned nidle;
	unsigned nwaiting;
	unsigned npaused; /* transfers paused on a client that does not read */
	unsigned nstreaming; /* transfers passed on as they arrive */
	uint64_t sent, reused, connect_failures;
	uint64_t refused; /* not sent: over the output budget */
	LIST_HEAD(, upconn) idle;
	LIST_HEAD(, upconn) busy;
	TAILQ_HEAD(, upstream_xfer) waiting;
	/* Ended transfers kept with their timer and buffer for reuse. */
	TAILQ_HEAD(, upstream_xfer) spare;
	unsigned nspare;
};

/*
 * Connections whose answer is passed on to its client as it arrives (the
 * catalog has answered; the client takes it at its own pace) are not
 * counted against max_conns, up to this many times it in all.
 */
#define UPSTREAM_PAUSED_CONNS 4

/* upstream.c: a connection for a request, or a place in the queue. */
void upstream_start(struct upstream *, struct upstream_xfer *);
struct upstream_xfer *upstream_dequeue(struct upstream *);
bool upstream_has_slot(const struct upstream *);
/* X's deadline is MS from NOW (units_mono_us); Q: the timer of MS. */
void upstream_xfer_due(struct upstream_xfer *, int64_t now, uint64_t ms,
    const struct timeval *q);
/* The connection's bufferevent event callback (a close, an error). */
void upstream_event_cb(struct bufferevent *, short, void *);
/* A transfer's deadline passed, or its credential failed (from the loop). */
void upstream_timer_cb(evutil_socket_t, short, void *);

/*
 * upstream_write.c: write X's request on C; write what a plain connected
 * connection holds queued; the bufferevent's write callback (it wrote
 * what was queued: write interest off).
 */
void upstream_write(struct upconn *, struct upstream_xfer *);
void upstream_flush(struct upconn *);
void upstream_write_cb(struct bufferevent *, void *);

/*
 * upstream_idle.c: a connection idle (ON, since NOW: units_mono_us) or
 * busy; a plain one's timer.
 */
void upstream_idle_timer(struct upconn *, bool on, int64_t now);
void upstream_idle_start(struct upconn *);

/*
 * What the answer's body gained since the last read: searched for the
 * catalog's uri and fed to the JSON check (upstream_body.c). With END,
 * the answer is whole: the check's verdict is taken.
 */
void upstream_body(struct upstream_xfer *, struct h1_msg *, bool end);

#endif
