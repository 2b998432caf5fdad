/*
 * floe: upstream.h -- the data-path client: a pool of persistent HTTP/1.1
 * connections per upstream catalog, on bufferevents (TLS through
 * bufferevent_openssl with certificate and host name verification).
 * Owns its connections, their parsers, the TLS context, the DNS base and
 * the queue of requests waiting for a connection. Loop thread only.
 */
#ifndef FLOE_PROXY_UPSTREAM_H
#define FLOE_PROXY_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evbuffer;
struct evdns_base;
struct h1_msg;
struct jscheck;
struct memo_buf;
struct conf_target;
struct cred;
struct upstream;
struct upstream_xfer;
typedef struct json_t json_t;

enum upstream_fail {
	UPSTREAM_OK = 0,
	UPSTREAM_CONNECT, /* could not connect (refused, DNS, TLS) */
	UPSTREAM_TIMEOUT, /* no complete answer within the timeout */
	UPSTREAM_RESET, /* the connection closed before the answer ended */
	UPSTREAM_GARBAGE, /* the answer is not HTTP/1.1 */
	UPSTREAM_NOCRED, /* no credential for the catalog now: nothing sent */
	UPSTREAM_FULL, /* not sent: floe holds its budget of answers */
};

struct upstream_req {
	/*
	 * The request line and the forwarded headers, without Host, floe's
	 * credential (added when the catalog has one: see upstream_set_cred),
	 * Content-Length and the blank line: HEAD_LEN bytes, copied.
	 */
	const char *head;
	size_t head_len;
	struct evbuffer *body; /* or NULL; moved out */
	bool head_method; /* HEAD: the answer has no body */
	bool retryable; /* idempotent: may be sent twice */
	/*
	 * A 2xx answer's body is checked as JSON as it arrives (see
	 * upstream_xfer_json), not gone over again at its end.
	 */
	bool check_json;
	/*
	 * Or NULL: the body this table's answer last had when it was found
	 * JSON (cache/memo.h; the transfer takes its own reference). While
	 * the answer's bytes are equal to its, they are not fed to the
	 * check; at the first difference the check takes the memo's bytes
	 * before it (the answer's too) and goes on as it would have, so its
	 * verdict and its offset are the same. See upstream_xfer_memo_hit.
	 */
	struct memo_buf *memo;
	/*
	 * Called as the body of an answer arrives (see upstream_body_cb),
	 * or NULL: the answer is handed over whole.
	 */
	void (*body_cb)(struct upstream_xfer *, struct h1_msg *, void *arg);
};

/* The transfer ended; inspect it with the accessors. It is freed after. */
typedef void (*upstream_done_cb)(struct upstream_xfer *, void *arg);

struct upstream *upstream_new(struct event_base *, struct evdns_base *,
    const struct conf_target *, const char *name, char *err, size_t errlen);
void upstream_free(struct upstream *);
/*
 * Take new settings for the same uri (token, timeouts, pool cap) from T,
 * which must outlive the upstream. Requests in flight keep their timers.
 */
void upstream_retarget(struct upstream *, const struct conf_target *);
/*
 * Present C (or nothing, for NULL) to the catalog on each request from now
 * on, when cred_on_data says so. C must outlive the upstream or be
 * replaced first. With no credential at the time of a request (a token
 * not fetched yet or expired), the transfer fails UPSTREAM_NOCRED on the
 * next loop turn, saying why; a 401 to a request that carried floe's
 * token asks the credential for an early refresh.
 */
void upstream_set_cred(struct upstream *, struct cred *c);
struct upstream_xfer *upstream_send(struct upstream *, struct upstream_req *,
    upstream_done_cb, void *arg);
/* Forget a transfer; its callback will not be called. */
void upstream_cancel(struct upstream_xfer *);
/*
 * For a transfer sent with a body_cb: after each read that leaves the
 * answer's head in and its body unfinished, body_cb gets the answer, its
 * body holding what arrived and was not taken; every byte of it has been
 * fed to the JSON check, or compared with the memo (unless the callee
 * took the check over: upstream_xfer_check_take). The callee may take bytes
 * from the start of the body (saying how many with upstream_xfer_taken), pause
 * the transfer, or cancel it. The done callback still ends the transfer, with
 * the body's untaken rest. An answer whole within the read that completed its
 * head comes whole to the done callback alone.
 */
void upstream_xfer_taken(struct upstream_xfer *, size_t n);
/*
 * Stop reading the answer (ON), or read it again: a transfer waits while
 * its client does not take what it was given. Its timeout does not run
 * while paused, and starts again in full when it reads again.
 */
void upstream_xfer_pause(struct upstream_xfer *, bool on);
/*
 * The taker checks the answer's body as JSON itself from now on (in one
 * pass with what it does with it): true when it was to be checked
 * (check_json), and is no longer here, so that upstream_xfer_json says
 * -1 and upstream_xfer_json_failed false; *JS is the check as it was
 * after the first *CHECKED bytes of the body, for the taker to go on
 * from. Before the taker takes any byte.
 */
bool upstream_xfer_check_take(struct upstream_xfer *, struct jscheck *js,
    size_t *checked);
/*
 * The JSON check already found the answer's body wrong (see below), at
 * the byte *AT of the body.
 */
bool upstream_xfer_json_failed(const struct upstream_xfer *, size_t *at);

enum upstream_fail upstream_xfer_fail(const struct upstream_xfer *);
/* What failed, for the client's error and the log. */
const char *upstream_xfer_error(const struct upstream_xfer *);
/* The answer (status, headers, body); NULL when it failed. */
struct h1_msg *upstream_xfer_msg(struct upstream_xfer *);
/*
 * Whether the answer's body holds the catalog's uri: 1 or 0 for a body
 * of more than UPSTREAM_WATCH_FROM bytes, searched piece by piece as it
 * arrived (a search at the end would hold the loop: 40 ms for 200 MB);
 * -1 for a smaller one, which the caller searches itself.
 */
#define UPSTREAM_WATCH_FROM (1u << 20)
int upstream_xfer_has_uri(const struct upstream_xfer *);
/*
 * For a transfer sent with check_json and answered 2xx: 1 when the body
 * is one well-formed JSON text (lib/jscheck.h), 0 when not (*AT, may be
 * NULL, is the offset of the first wrong byte); -1 when it was not
 * checked (not asked, or another status).
 */
int upstream_xfer_json(const struct upstream_xfer *, size_t *at);
/*
 * For a transfer sent with a memo: its 2xx body was byte for byte the
 * memo's (so JSON: upstream_xfer_json says 1 without having checked it).
 */
bool upstream_xfer_memo_hit(const struct upstream_xfer *);
/*
 * The body that arrived so far is byte for byte the memo's (the pool
 * compares and checks: upstream_xfer_json_failed says when it is wrong,
 * from the first byte that differs on).
 */
bool upstream_xfer_memo_on(const struct upstream_xfer *);
/* Microseconds from send to the end of the answer. */
uint64_t upstream_xfer_usec(const struct upstream_xfer *);
/* Connections open, idle, and requests waiting; for /status. */
json_t *upstream_status_json(const struct upstream *);
const char *upstream_name(const struct upstream *);

#endif
