/*
 * floe: test_fetch.c -- the control-plane client against a local evhttp
 * server on the same loop: answers, posted bodies and headers, statuses,
 * refused connections, timeouts, cancellation, concurrency, size limits.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
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
};

/* A result with a back-pointer to the env, for done_cb. */
struct slot {
	struct result r;
	struct env *env;
};

static void done_cb(int status, const char *body, size_t len, const char *error,
    void *arg);

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
	assert_non_null(fetch_start(env->fetch, url, NULL, done_cb, &s));
	assert_int_equal(s.r.calls, 0);
	run(env, 2000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_string_equal(s.r.error, want);
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
	assert_non_null(fetch_start(env->fetch, url, &o, done_cb, &s));
	run(env, 2000);
	for (i = 0; i < (int)nitems(cfd); i++)
		close(cfd[i]);
	close(lfd);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_string_equal(s.r.error, want);
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
	assert_non_null(
	    fetch_start(env->fetch, "gopher://127.0.0.1/", NULL, done_cb, &s));
	assert_int_equal(s.r.calls, 0);
	run(env, 2000);
	assert_int_equal(s.r.calls, 1);
	assert_int_equal(s.r.status, 0);
	assert_true(strlen(s.r.error) > 0);
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
	assert_int_equal(b.r.status, 200);
	assert_int_equal(b.r.len, 65536);
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
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
