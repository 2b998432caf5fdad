/*
 * floe: fetch.h -- the control-plane HTTP client: one libcurl multi handle
 * driven by the floe event loop (its timer and socket events). For catalog
 * config, freshness polling, webhooks and token fetches; never the data
 * path. Owns the CURLM, its timer and every transfer in flight.
 */
#ifndef FLOE_PROXY_FETCH_H
#define FLOE_PROXY_FETCH_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct fetch;
struct fetch_req;

/*
 * Called once per request when it ends. STATUS is the HTTP status, or 0
 * when there was no HTTP answer (then ERROR says why: "connect refused",
 * "timed out after 2000 ms", ...). BODY is valid only during the call.
 * The request is freed after the callback returns.
 */
typedef void (*fetch_done_cb)(int status, const char *body, size_t len,
    const char *error, void *arg);

/*
 * Streaming: called with each piece of the answer body as it arrives,
 * from the loop (never from inside libcurl), before the done callback.
 * STATUS is the HTTP status of the answer; DATA is valid only during the
 * call. The callback may cancel the request or free the client.
 */
typedef void (*fetch_data_cb)(int status, const char *data, size_t, void *arg);

/* Why a request got no answer (status 0), for owners that retry. */
enum fetch_fail {
	FETCH_FAIL_NONE, /* answered */
	FETCH_FAIL_CONNECT, /* no connection: nothing was sent */
	FETCH_FAIL_TLS, /* the TLS handshake failed: nothing was sent */
	FETCH_FAIL_TIMEOUT, /* connected, then out of time: maybe processed */
	FETCH_FAIL_IO, /* the connection broke: maybe processed */
	FETCH_FAIL_TOOBIG, /* the answer passed max_body */
	FETCH_FAIL_OTHER, /* a bad URL or option, or anything else */
};

struct fetch_opts {
	const char *method; /* "GET" (default), "POST", ... */
	const char *const *headers; /* NULL-terminated "Name: value" or NULL */
	const char *body; /* or NULL */
	size_t body_len;
	uint64_t timeout_ms; /* whole transfer; 0: 10 s */
	uint64_t connect_timeout_ms; /* 0: 2 s */
	const char *ca_file; /* extra trust store, or NULL */
	size_t max_body; /* 0: 16 MiB; larger answers fail */
	/*
	 * If set, the answer's ETag ("" for none) is copied here, ETAG_SIZE
	 * bytes at most, just before the callback runs; the buffer must live
	 * until then (or until the request is cancelled).
	 */
	char *etag;
	size_t etag_size;
	const char *cert_file; /* TLS client certificate (PEM), or NULL */
	const char *key_file; /* its private key (PEM), or NULL */
	/*
	 * If set, the body is delivered in pieces to DATA_CB as it arrives
	 * and the done callback gets an empty body; max_body then bounds
	 * what is buffered between deliveries, and timeout_ms 0 means no
	 * limit on the whole transfer (idle_timeout_ms guards it instead).
	 */
	fetch_data_cb data_cb;
	/* Fail once no byte has arrived for this long; 0: no such limit. */
	uint64_t idle_timeout_ms;
};

struct fetch *fetch_new(struct event_base *);
/* Cancel every transfer (callbacks are not called) and free. */
void fetch_free(struct fetch *);
/* Start a request; CB(ARG) is called later, never from inside this call. */
struct fetch_req *fetch_start(struct fetch *, const char *url,
    const struct fetch_opts *, fetch_done_cb cb, void *arg);
/* Cancel one request; its callback is not called. */
void fetch_cancel(struct fetch_req *);
/* How R failed; read it in R's done callback when the status is 0. */
enum fetch_fail fetch_failure(const struct fetch_req *);
/* Transfers in flight. */
unsigned fetch_active(const struct fetch *);

#endif
