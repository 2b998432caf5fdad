/*
 * floe: test_fetch.c -- the control-plane client against a local evhttp
 * server on the same loop: answers, posted bodies and headers, statuses,
 * refused connections, timeouts, cancellation, concurrency, size limits,
 * streamed answers, idle limits and how failures are classified.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "lib/compat.h"
#include "proxy/fetch.h"

#define NREQ 50

/* What one request's callback saw. */
struct result {
	int calls;
	int status;
	char body[256];
	size_t len;
	char error[256];
	enum fetch_fail fail;
	/* Streaming: the pieces seen, concatenated, and their count. */
	int pieces;
	int data_status;
	char data[256];
	int data_after_done; /* pieces delivered after the done callback */
};

struct env {
	struct event_base *base;
	struct evhttp *http;
	struct fetch *fetch;
	int port;
	char url[128];
	int pending; /* callbacks still expected before the loop stops */
	/* What the server saw last. */
	char method[16];
	char seen_body[256];
	char seen_header[128];
	char seen_ctype[128];
	int served;
	/* A streamed answer in progress: its request and chunks left. */
	struct evhttp_request *sreq;
	struct event *stimer;
	int chunks_left;
	bool stall; /* stop after the first chunk */
};

/* A result with a back-pointer to the env, for done_cb. */
struct slot {
	struct result r;
	struct env *env;
	struct fetch_req *req;
	int cancel_at; /* data_cb cancels at this piece (0: never) */
	bool free_at_first; /* data_cb frees the whole client */
};

static void done_cb(int status, const char *body, size_t len, const char *error,
    void *arg);
static void stream_closed_cb(struct evhttp_connection *, void *);

/* Server: one handler for every path. */
static void
server_cb(struct evhttp_request *req, void *arg)
{
	struct env *env = arg;
	const char *uri = evhttp_request_get_uri(req);
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	struct evbuffer *out;
	const char *v;
	size_t n;

	env->served++;
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET:
		strlcpy(env->method, "GET", sizeof(env->method));
		break;
	case EVHTTP_REQ_POST:
		strlcpy(env->method, "POST", sizeof(env->method));
		break;
	case EVHTTP_REQ_PUT:
		strlcpy(env->method, "PUT", sizeof(env->method));
		break;
	default:
		strlcpy(env->method, "?", sizeof(env->method));
		break;
	}
	n = evbuffer_get_length(in);
	if (n >= sizeof(env->seen_body))
		n = sizeof(env->seen_body) - 1;
	evbuffer_copyout(in, env->seen_body, n);
	env->seen_body[n] = '\0';
	v = evhttp_find_header(h, "X-Test");
	strlcpy(env->seen_header, v != NULL ? v : "", sizeof(env->seen_header));
	v = evhttp_find_header(h, "Content-Type");
	strlcpy(env->seen_ctype, v != NULL ? v : "", sizeof(env->seen_ctype));

	if (strncmp(uri, "/slow", 5) == 0)
		return; /* never answered; evhttp_free cleans up */
	if (strncmp(uri, "/stream", 7) == 0 || strncmp(uri, "/stall", 6) == 0) {
		struct timeval tv = { 0, 20000 };

		/* Chunks 20 ms apart: each reaches the client on its own. */
		evhttp_send_reply_start(req, 200, "OK");
		env->sreq = req;
		/* The client may go away mid-answer: forget the request. */
		evhttp_connection_set_closecb(evhttp_request_get_connection(
						  req),
		    stream_closed_cb, env);
		env->chunks_left = 4;
		env->stall = strncmp(uri, "/stall", 6) == 0;
		evtimer_add(env->stimer, &tv);
		return;
	}
	out = evbuffer_new();
	if (strncmp(uri, "/missing", 8) == 0) {
		evbuffer_add_printf(out, "{\"error\":\"no\"}");
		evhttp_send_reply(req, 404, "Not Found", out);
	} else if (strncmp(uri, "/big", 4) == 0) {
		char chunk[1024];

		memset(chunk, 'x', sizeof(chunk));
		for (int i = 0; i < 64; i++)
			evbuffer_add(out, chunk, sizeof(chunk));
		evhttp_send_reply(req, 200, "OK", out);
	} else if (strncmp(uri, "/echo", 5) == 0) {
		evbuffer_add_printf(out, "%s", uri);
		evhttp_send_reply(req, 200, "OK", out);
	} else {
		evbuffer_add_printf(out, "hello");
		evhttp_send_reply(req, 200, "OK", out);
	}
	evbuffer_free(out);
}

/* The client of a streamed answer closed its connection. */
static void
stream_closed_cb(struct evhttp_connection *c __unused, void *arg)
{
	struct env *env = arg;

	/* libevent keeps a started reply until it is ended: end it. */
	if (env->sreq != NULL)
		evhttp_send_reply_end(env->sreq);
	env->sreq = NULL;
}

/* Send the next chunk of a streamed answer, or end it. */
static void
chunk_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct env *env = arg;
	struct timeval tv = { 0, 20000 };
	struct evbuffer *b;

	if (env->sreq == NULL)
		return;
	if (env->chunks_left == 0) {
		evhttp_send_reply_end(env->sreq);
		env->sreq = NULL;
		return;
	}
	b = evbuffer_new();
	evbuffer_add_printf(b, "{\"n\":%d}\n", 5 - env->chunks_left);
	evhttp_send_reply_chunk(env->sreq, b);
	evbuffer_free(b);
	env->chunks_left--;
	if (!env->stall)
		evtimer_add(env->stimer, &tv);
}

/* Safety net: no test may hang the loop. */
static void
watchdog_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	event_base_loopbreak(arg);
}

/* Run the loop until every expected callback ran, or MS passed. */
static void
run(struct env *env, int ms)
{
	struct event *wd = evtimer_new(env->base, watchdog_cb, env->base);
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(wd, &tv);
	event_base_dispatch(env->base);
	event_free(wd);
}

/* Count down and stop the loop once nothing more is expected. */
static void
done_cb(int status, const char *body, size_t len, const char *error, void *arg)
{
	struct slot *s = arg;
	struct result *r = &s->r;
	struct env *env = s->env;

	r->calls++;
	r->status = status;
	r->fail = s->req != NULL ? fetch_failure(s->req) : FETCH_FAIL_NONE;
	r->len = len;
	snprintf(r->body, sizeof(r->body), "%.*s", (int)len, body);
	snprintf(r->error, sizeof(r->error), "%s", error != NULL ? error : "");
	if (--env->pending == 0)
		event_base_loopbreak(env->base);
}

/* A loop, a local evhttp server on an ephemeral port and a client. */
static int
setup(void **state)
{
	struct env *env = calloc(1, sizeof(*env));
	struct evhttp_bound_socket *bs;
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);

	assert_non_null(env);
	env->base = event_base_new();
	assert_non_null(env->base);
	env->http = evhttp_new(env->base);
	assert_non_null(env->http);
	evhttp_set_gencb(env->http, server_cb, env);
	evhttp_set_allowed_methods(env->http,
	    EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT);
	bs = evhttp_bind_socket_with_handle(env->http, "127.0.0.1", 0);
	assert_non_null(bs);
	assert_int_equal(getsockname(evhttp_bound_socket_get_fd(bs),
			     (struct sockaddr *)&sin, &slen),
	    0);
	env->port = ntohs(sin.sin_port);
	env->stimer = evtimer_new(env->base, chunk_cb, env);
	assert_non_null(env->stimer);
	snprintf(env->url, sizeof(env->url), "http://127.0.0.1:%d", env->port);
	env->fetch = fetch_new(env->base);
	assert_non_null(env->fetch);
	*state = env;
	return 0;
}

/* Free the client first: it cancels what is still in flight. */
static int
teardown(void **state)
{
	struct env *env = *state;

	fetch_free(env->fetch);
	evhttp_free(env->http);
	event_free(env->stimer);
	event_base_free(env->base);
	free(env);
	return 0;
}

/* Start a request for PATH with OPTS into SLOT. */
static struct fetch_req *
start(struct env *env, const char *path, const struct fetch_opts *opts,
    struct slot *slot)
{
	char url[256];
	struct fetch_req *req;

	memset(slot, 0, sizeof(*slot));
	slot->env = env;
	snprintf(url, sizeof(url), "%s%s", env->url, path);
	env->pending++;
	req = fetch_start(env->fetch, url, opts, done_cb, slot);
	assert_non_null(req);
	slot->req = req;
	/* Never called from inside fetch_start. */
	assert_int_equal(slot->r.calls, 0);
	return req;
}

/* A GET returns the status and the body, and counts as active meanwhile. */
static void
test_get(void **state)
{
	struct env *env = *state;
	struct slot s;

	start(env, "/hello", NULL, &s);
	assert_int_equal(fetch_active(env->fetch), 1);
	run(env, 2000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 200);
	assert_int_equal(s.r.len, 5);
	assert_string_equal(s.r.body, "hello");
	assert_string_equal(s.r.error, "");
	assert_int_equal(s.r.fail, FETCH_FAIL_NONE);
	assert_string_equal(env->method, "GET");
	assert_int_equal(fetch_active(env->fetch), 0);
}

/* A POST carries its (copied) body and the caller's headers. */
static void
test_post(void **state)
{
	struct env *env = *state;
	const char *headers[] = { "X-Test: yes please",
		"Content-Type: application/json", NULL };
	struct fetch_opts o = { .method = "POST", .headers = headers };
	char body[] = "{\"a\":1}";
	struct slot s;

	o.body = body;
	o.body_len = strlen(body);
	start(env, "/post", &o, &s);
	/* The body was copied: the caller's buffer lives for the call. */
	memset(body, 'z', strlen(body));
	run(env, 2000);
	assert_int_equal(s.r.status, 200);
	assert_string_equal(env->method, "POST");
	assert_string_equal(env->seen_body, "{\"a\":1}");
	assert_string_equal(env->seen_header, "yes please");
	assert_string_equal(env->seen_ctype, "application/json");
}

/* Other methods with a body go as written. */
static void
test_put(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .method = "PUT", .body = "x", .body_len = 1 };
	struct slot s;

	start(env, "/put", &o, &s);
	run(env, 2000);
	assert_int_equal(s.r.status, 200);
	assert_string_equal(env->method, "PUT");
	assert_string_equal(env->seen_body, "x");
}

/* An HTTP error status is an answer, not a failure. */
static void
test_status_passed(void **state)
{
	struct env *env = *state;
	struct slot s;

	start(env, "/missing", NULL, &s);
	run(env, 2000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 404);
	assert_string_equal(s.r.body, "{\"error\":\"no\"}");
	assert_string_equal(s.r.error, "");
}

/* A refused connection is status 0 with a readable error. */
static void
test_refused(void **state)
{
	struct env *env = *state;
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	char url[128], want[128];
	struct slot s;
	int fd;

	/* A port that was just free: bound, then closed without listen. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &slen), 0);
	close(fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/x",
	    ntohs(sin.sin_port));
	snprintf(want, sizeof(want), "connect to 127.0.0.1:%d refused",
	    ntohs(sin.sin_port));

	memset(&s, 0, sizeof(s));
	s.env = env;
	env->pending = 1;
	s.req = fetch_start(env->fetch, url, NULL, done_cb, &s);
	assert_non_null(s.req);
	assert_int_equal(s.r.calls, 0);
	run(env, 2000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_string_equal(s.r.error, want);
	/* Nothing was sent: another server may be tried. */
	assert_int_equal(s.r.fail, FETCH_FAIL_CONNECT);
}

/* A server that never answers ends at timeout_ms. */
static void
test_timeout(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .timeout_ms = 300 };
	struct slot s;

	start(env, "/slow", &o, &s);
	run(env, 2000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_string_equal(s.r.error, "timed out after 300 ms");
	/* The request was sent: it may have been processed. */
	assert_int_equal(s.r.fail, FETCH_FAIL_TIMEOUT);
	assert_int_equal(env->served, 1);
}

/*
 * On a connection kept from an earlier request, a server that never
 * answers is an answer that timed out, not a connect.
 */
static void
test_timeout_reused(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .timeout_ms = 300 };
	struct slot a, b;

	start(env, "/hello", NULL, &a);
	run(env, 2000);
	assert_int_equal(a.r.status, 200);
	start(env, "/slow", &o, &b);
	run(env, 2000);
	assert_int_equal(b.r.calls, 1);
	assert_int_equal(b.r.status, 0);
	assert_string_equal(b.r.error, "timed out after 300 ms");
	assert_int_equal(env->served, 2);
}

/*
 * A connect that hangs: a listener with a full accept queue drops further
 * SYNs (Linux), so the connect neither completes nor fails.
 */
static void
test_connect_timeout(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .connect_timeout_ms = 300 };
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	char url[128], want[128];
	int lfd, cfd[4], i;
	struct slot s;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &slen), 0);
	for (i = 0; i < (int)nitems(cfd); i++) {
		cfd[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		(void)connect(cfd[i], (struct sockaddr *)&sin, sizeof(sin));
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/x",
	    ntohs(sin.sin_port));
	snprintf(want, sizeof(want),
	    "connect to 127.0.0.1:%d timed out after 300 ms",
	    ntohs(sin.sin_port));
	memset(&s, 0, sizeof(s));
	s.env = env;
	env->pending = 1;
	s.req = fetch_start(env->fetch, url, &o, done_cb, &s);
	assert_non_null(s.req);
	run(env, 2000);
	for (i = 0; i < (int)nitems(cfd); i++)
		close(cfd[i]);
	close(lfd);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_string_equal(s.r.error, want);
	assert_int_equal(s.r.fail, FETCH_FAIL_CONNECT);
}

/* A URL libcurl refuses is reported later, through the callback. */
static void
test_bad_url(void **state)
{
	struct env *env = *state;
	struct slot s;

	memset(&s, 0, sizeof(s));
	s.env = env;
	env->pending = 1;
	s.req =
	    fetch_start(env->fetch, "gopher://127.0.0.1/", NULL, done_cb, &s);
	assert_non_null(s.req);
	assert_int_equal(s.r.calls, 0);
	run(env, 2000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_true(strlen(s.r.error) > 0);
	assert_int_equal(s.r.fail, FETCH_FAIL_OTHER);
}

/* Cancelled requests, queued or in flight, are never called back. */
static void
test_cancel(void **state)
{
	struct env *env = *state;
	struct slot a, b, c;
	struct fetch_req *ra, *rc;

	ra = start(env, "/hello", NULL, &a);
	start(env, "/hello", NULL, &b);
	rc = start(env, "/slow", NULL, &c);
	assert_int_equal(fetch_active(env->fetch), 3);
	fetch_cancel(ra);
	env->pending = 1; /* only b is expected */
	run(env, 2000);
	assert_int_equal(b.r.calls, 1);
	assert_int_equal(b.r.status, 200);
	/* c is in flight on the server; cancel it there too. */
	assert_int_equal(fetch_active(env->fetch), 1);
	fetch_cancel(rc);
	assert_int_equal(fetch_active(env->fetch), 0);
	env->pending = 1;
	run(env, 300); /* nothing may arrive */
	assert_int_equal(a.r.calls, 0);
	assert_int_equal(c.r.calls, 0);
}

/* fetch_free with requests in flight calls nobody. */
static void
test_free_in_flight(void **state)
{
	struct env *env = *state;
	struct slot a, b;

	start(env, "/slow", NULL, &a);
	start(env, "/hello", NULL, &b);
	run(env, 100);
	/* b may be finished and waiting for delivery; neither is called. */
	fetch_free(env->fetch);
	env->fetch = fetch_new(env->base);
	assert_non_null(env->fetch);
	run(env, 200);
	assert_int_equal(a.r.calls, 0);
}

/* A callback that frees the client from inside itself. */
static void
free_cb(int status __unused, const char *body __unused, size_t len __unused,
    const char *error __unused, void *arg)
{
	struct env *env = arg;

	fetch_free(env->fetch);
	env->fetch = NULL;
	env->served += 100;
	event_base_loopbreak(env->base);
}

/* A callback may free the whole client. */
static void
test_free_in_callback(void **state)
{
	struct env *env = *state;
	char url[256];
	struct slot s;

	snprintf(url, sizeof(url), "%s/hello", env->url);
	assert_non_null(fetch_start(env->fetch, url, NULL, free_cb, env));
	memset(&s, 0, sizeof(s));
	s.env = env;
	start(env, "/hello", NULL, &s);
	assert_non_null(fetch_start(env->fetch, url, NULL, free_cb, env));
	run(env, 2000);
	/* Exactly one free_cb ran; the rest were cancelled by it. */
	assert_int_equal(env->served / 100, 1);
	assert_null(env->fetch);
	run(env, 200);
	assert_int_equal(env->served / 100, 1);
	env->fetch = fetch_new(env->base);
}

/* Many requests at once all complete, each with its own answer. */
static void
test_concurrent(void **state)
{
	struct env *env = *state;
	struct slot *s = calloc(NREQ, sizeof(*s));
	char path[64], want[64];
	int i;

	assert_non_null(s);
	for (i = 0; i < NREQ; i++) {
		snprintf(path, sizeof(path), "/echo/%d", i);
		start(env, path, NULL, &s[i]);
	}
	assert_int_equal(fetch_active(env->fetch), NREQ);
	run(env, 3000);
	for (i = 0; i < NREQ; i++) {
		snprintf(want, sizeof(want), "/echo/%d", i);
		assert_int_equal(s[i].r.calls, 1);
		assert_int_equal(s[i].r.status, 200);
		assert_string_equal(s[i].r.body, want);
	}
	assert_int_equal(env->served, NREQ);
	assert_int_equal(fetch_active(env->fetch), 0);
	free(s);
}

/* An answer larger than max_body fails; one of exactly max_body passes. */
static void
test_max_body(void **state)
{
	struct env *env = *state;
	struct fetch_opts small = { .max_body = 1000 };
	struct fetch_opts exact = { .max_body = 65536 };
	struct slot a, b;

	start(env, "/big", &small, &a);
	start(env, "/big", &exact, &b);
	run(env, 2000);
	assert_int_equal(a.r.calls, 1);
	assert_int_equal(a.r.status, 0);
	assert_string_equal(a.r.error, "answer larger than 1000 bytes");
	assert_int_equal(a.r.fail, FETCH_FAIL_TOOBIG);
	assert_int_equal(b.r.status, 200);
	assert_int_equal(b.r.len, 65536);
}

/* Streaming: record each piece; cancel or free the client on request. */
static void
data_cb(int status, const char *data, size_t len, void *arg)
{
	struct slot *s = arg;
	struct result *r = &s->r;
	struct env *env = s->env;
	size_t used = strlen(r->data);

	r->pieces++;
	r->data_status = status;
	if (r->calls > 0)
		r->data_after_done++;
	snprintf(r->data + used, sizeof(r->data) - used, "%.*s", (int)len,
	    data);
	if (s->cancel_at != 0 && r->pieces == s->cancel_at) {
		fetch_cancel(s->req);
		/* Cancelling twice inside the callback is harmless. */
		fetch_cancel(s->req);
		event_base_loopbreak(env->base);
	}
	if (s->free_at_first) {
		fetch_free(env->fetch);
		env->fetch = NULL;
		event_base_loopbreak(env->base);
	}
}

/* A streamed answer arrives piece by piece, in order, before done. */
static void
test_stream(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .data_cb = data_cb, .max_body = 64 };
	struct slot s;

	start(env, "/stream", &o, &s);
	run(env, 3000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 200);
	assert_int_equal(s.r.fail, FETCH_FAIL_NONE);
	/* The done callback gets no body: it all went to data_cb. */
	assert_int_equal(s.r.len, 0);
	assert_string_equal(s.r.data,
	    "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n");
	/* 20 ms apart, the chunks are not all delivered at once. */
	assert_true(s.r.pieces >= 2);
	assert_int_equal(s.r.data_status, 200);
	assert_int_equal(s.r.data_after_done, 0);
	assert_int_equal(fetch_active(env->fetch), 0);
}

/* A stream cancelled from its data callback is never called back again. */
static void
test_stream_cancel(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .data_cb = data_cb };
	struct slot s;

	start(env, "/stream", &o, &s);
	s.cancel_at = 1;
	run(env, 3000);
	assert_int_equal(s.r.pieces, 1);
	assert_int_equal(fetch_active(env->fetch), 0);
	run(env, 200);
	assert_int_equal(s.r.pieces, 1);
	assert_int_equal(s.r.calls, 0);
}

/* A data callback may free the whole client. */
static void
test_stream_free(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .data_cb = data_cb };
	struct slot s, t;

	start(env, "/stream", &o, &s);
	start(env, "/slow", NULL, &t);
	s.free_at_first = true;
	run(env, 3000);
	assert_null(env->fetch);
	assert_int_equal(s.r.pieces, 1);
	run(env, 200);
	assert_int_equal(s.r.pieces, 1);
	assert_int_equal(s.r.calls, 0);
	assert_int_equal(t.r.calls, 0);
	env->fetch = fetch_new(env->base);
}

/*
 * A stream that stops sending fails at its idle limit, after what did
 * arrive was delivered; a whole-transfer timeout does not apply.
 */
static void
test_idle_timeout(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .data_cb = data_cb, .idle_timeout_ms = 300 };
	struct fetch_opts plain = { .idle_timeout_ms = 300 };
	struct slot s, t;

	start(env, "/stall", &o, &s);
	start(env, "/slow", &plain, &t);
	run(env, 3000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_string_equal(s.r.error, "no data for 300 ms");
	assert_int_equal(s.r.fail, FETCH_FAIL_TIMEOUT);
	assert_string_equal(s.r.data, "{\"n\":1}\n");
	assert_int_equal(s.r.data_after_done, 0);
	/* A buffered request with an idle limit fails the same way. */
	assert_int_equal(t.r.calls, 1);
	assert_string_equal(t.r.error, "no data for 300 ms");
	assert_int_equal(t.r.fail, FETCH_FAIL_TIMEOUT);
}

/* A stream with more buffered than max_body between deliveries fails. */
static void
test_stream_too_big(void **state)
{
	struct env *env = *state;
	struct fetch_opts o = { .data_cb = data_cb, .max_body = 1000 };
	struct slot s;

	start(env, "/big", &o, &s);
	run(env, 2000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_int_equal(s.r.fail, FETCH_FAIL_TOOBIG);
}

/* libcurl is initialised once, as main does in floe. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_passed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_reused, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_connect_timeout, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_bad_url, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_in_flight, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_free_in_callback, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_max_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_cancel, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_stream_free, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_idle_timeout, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_stream_too_big, setup,
		    teardown),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
