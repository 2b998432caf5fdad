/*
 * floe: test_discover.c -- reading both upstreams' /v1/config from a local
 * evhttp server: the request floe sends, backoff while a side fails (one
 * warning per outage), refresh, kick, and freeing with requests pending.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/discover.h"
#include "proxy/fetch.h"
#include "proxy/floe.h"

enum mode { MODE_OK, MODE_500, MODE_SILENT, MODE_GARBAGE };

/* What the server does and saw, per side. */
struct side_srv {
	enum mode mode;
	int fail_first; /* answer 500 to this many requests first */
	const char *body;
	int served;
	char uri[256];
	char auth[128];
	char accept[64];
	int changed; /* discover_changed_cb calls: reads */
	int differed; /* of which the config had changed */
	int stop_after_changed; /* break the loop at this many, or 0 */
};

struct env {
	struct event_base *base;
	struct evhttp *http;
	int port;
	struct conf conf;
	struct floe f;
	struct side_srv srv[ROUTE_NSIDES];
};

/* discover_changed_cb: count the reads, and stop the loop when told to. */
static void
changed_cb(enum route_side side, bool changed, void *arg)
{
	struct env *env = arg;
	struct side_srv *s = &env->srv[side];

	s->changed++;
	if (changed)
		s->differed++;
	if (s->stop_after_changed != 0 && s->changed == s->stop_after_changed)
		event_base_loopbreak(env->base);
}

/* /wh/... serves the warehouse, /lh/... the lakehouse. */
static void
server_cb(struct evhttp_request *req, void *arg)
{
	struct env *env = arg;
	const char *uri = evhttp_request_get_uri(req);
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	struct side_srv *s;
	struct evbuffer *out;
	const char *v;

	s = &env->srv[strncmp(uri, "/lh/", 4) == 0 ? ROUTE_LAKEHOUSE :
						     ROUTE_WAREHOUSE];
	s->served++;
	strlcpy(s->uri, uri, sizeof(s->uri));
	v = evhttp_find_header(h, "Authorization");
	strlcpy(s->auth, v != NULL ? v : "", sizeof(s->auth));
	v = evhttp_find_header(h, "Accept");
	strlcpy(s->accept, v != NULL ? v : "", sizeof(s->accept));
	if (s->mode == MODE_SILENT)
		return;
	out = evbuffer_new();
	if (s->mode == MODE_500 || s->served <= s->fail_first) {
		evbuffer_add_printf(out, "{\"error\":{\"secret\":\"x\"}}");
		evhttp_send_reply(req, 500, "Internal Server Error", out);
	} else if (s->mode == MODE_GARBAGE) {
		evbuffer_add_printf(out, "<html>");
		evhttp_send_reply(req, 200, "OK", out);
	} else {
		evbuffer_add_printf(out, "%s", s->body);
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

/* Run the loop for at most MS (a callback may stop it earlier). */
static void
run(struct env *env, int ms)
{
	struct event *wd = evtimer_new(env->base, watchdog_cb, env->base);
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(wd, &tv);
	event_base_dispatch(env->base);
	event_free(wd);
}

/* A monotonic clock for elapsed-time checks. */
static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A loop, a local server for both sides, a minimal struct floe. */
static int
setup(void **state)
{
	static char uri[ROUTE_NSIDES][64];
	static char wh_name[] = "my wh/1", token[] = "s3cret";
	static char host[] = "127.0.0.1", port[8];
	char err[256];
	struct env *env = calloc(1, sizeof(*env));
	struct evhttp_bound_socket *bs;
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	int i;

	assert_non_null(env);
	env->base = event_base_new();
	assert_non_null(env->base);
	env->http = evhttp_new(env->base);
	evhttp_set_gencb(env->http, server_cb, env);
	bs = evhttp_bind_socket_with_handle(env->http, "127.0.0.1", 0);
	assert_non_null(bs);
	assert_int_equal(getsockname(evhttp_bound_socket_get_fd(bs),
			     (struct sockaddr *)&sin, &slen),
	    0);
	env->port = ntohs(sin.sin_port);
	snprintf(uri[0], sizeof(uri[0]), "http://127.0.0.1:%d/wh", env->port);
	snprintf(uri[1], sizeof(uri[1]), "http://127.0.0.1:%d/lh", env->port);
	env->conf.config_refresh_ms = 3600 * 1000;
	for (i = 0; i < ROUTE_NSIDES; i++) {
		env->conf.target[i].uri = uri[i];
		env->conf.target[i].timeout_ms = 1000;
		env->f.cat[i] = catalog_new();
		env->srv[i].body = "{\"defaults\":{},\"overrides\":{}}";
	}
	env->conf.target[0].warehouse = wh_name;
	env->conf.target[0].token = token;
	env->conf.target[0].auth = CONF_CRED_TOKEN;
	env->conf.target[0].host = host;
	env->conf.target[0].port = port;
	snprintf(port, sizeof(port), "%d", env->port);
	env->f.base = env->base;
	env->f.conf = &env->conf;
	env->f.fetch = fetch_new(env->base);
	assert_non_null(env->f.fetch);
	/* floe's token for the warehouse goes on /v1/config. */
	env->f.cred[0] = cred_new(env->base, env->f.fetch, &env->conf.target[0],
	    "warehouse", err, sizeof(err));
	assert_non_null(env->f.cred[0]);
	*state = env;
	return 0;
}

/* Free discover before fetch, as floe does. */
static int
teardown(void **state)
{
	struct env *env = *state;
	int i;

	discover_free(env->f.discover);
	cred_free(env->f.cred[0]);
	fetch_free(env->f.fetch);
	for (i = 0; i < ROUTE_NSIDES; i++)
		catalog_free(env->f.cat[i]);
	evhttp_free(env->http);
	event_base_free(env->base);
	free(env);
	return 0;
}

/* Both sides read, with the right URL, token and Accept. */
static void
test_read_both(void **state)
{
	struct env *env = *state;
	struct side_srv *wh = &env->srv[ROUTE_WAREHOUSE];
	struct side_srv *lh = &env->srv[ROUTE_LAKEHOUSE];

	wh->body = "{\"defaults\":{\"s3.endpoint\":\"http://minio\"},"
		   "\"overrides\":{\"prefix\":\"wh1\"}}";
	lh->body = "{\"defaults\":{\"prefix\":\"lake\"},\"overrides\":{"
		   "\"namespace-separator\":\"%2E\"}}";
	lh->stop_after_changed = 1;
	env->f.discover = discover_new(&env->f, changed_cb, env);
	assert_non_null(env->f.discover);
	/* Nothing happens before the loop runs. */
	assert_int_equal(wh->changed + lh->changed, 0);
	run(env, 2000);
	if (wh->changed == 0) {
		wh->stop_after_changed = 1;
		run(env, 2000);
	}
	assert_int_equal(wh->changed, 1);
	assert_int_equal(lh->changed, 1);
	assert_string_equal(wh->uri, "/wh/v1/config?warehouse=my%20wh%2F1");
	assert_string_equal(wh->auth, "Bearer s3cret");
	assert_string_equal(wh->accept, "application/json");
	assert_string_equal(lh->uri, "/lh/v1/config");
	assert_string_equal(lh->auth, "");
	assert_true(env->f.cat[ROUTE_WAREHOUSE]->known);
	assert_string_equal(env->f.cat[ROUTE_WAREHOUSE]->prefix, "wh1");
	assert_null(env->f.cat[ROUTE_WAREHOUSE]->separator);
	assert_string_equal(env->f.cat[ROUTE_LAKEHOUSE]->prefix, "lake");
	assert_string_equal(env->f.cat[ROUTE_LAKEHOUSE]->separator, ".");
	assert_null(env->f.cat[ROUTE_WAREHOUSE]->last_error);
	assert_int_equal(env->f.cat[ROUTE_WAREHOUSE]->generation, 1);
}

/* Count lines of FILE holding NEEDLE. */
static int
count_lines(FILE *fp, const char *needle)
{
	char line[1024];
	int n = 0;

	rewind(fp);
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strstr(line, needle) != NULL)
			n++;
	return n;
}

/* Failures back off 250 ms, doubling, and warn once per outage. */
static void
test_backoff(void **state)
{
	struct env *env = *state;
	struct side_srv *wh = &env->srv[ROUTE_WAREHOUSE];
	struct side_srv *lh = &env->srv[ROUTE_LAKEHOUSE];
	FILE *log = tmpfile();
	int saved = dup(2);
	int64_t t0;

	/* Warnings go to stderr: catch them. */
	assert_non_null(log);
	fflush(stderr);
	dup2(fileno(log), 2);
	wh->mode = MODE_500;
	lh->fail_first = 2;
	lh->stop_after_changed = 1;
	t0 = now_ms();
	env->f.discover = discover_new(&env->f, changed_cb, env);
	run(env, 2000);
	/* 500, 500 (after 250 ms), then 200 (after 500 ms more). */
	assert_int_equal(lh->changed, 1);
	assert_int_equal(lh->served, 3);
	assert_true(now_ms() - t0 >= 700);
	assert_null(env->f.cat[ROUTE_LAKEHOUSE]->last_error);
	assert_true(env->f.cat[ROUTE_LAKEHOUSE]->known);
	/* The warehouse keeps failing: 0, 250, 750 ms; the next at 1750. */
	run(env, (int)(1200 - (now_ms() - t0)));
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	assert_int_equal(wh->served, 3);
	assert_int_equal(wh->changed, 0);
	assert_false(env->f.cat[ROUTE_WAREHOUSE]->known);
	assert_string_equal(env->f.cat[ROUTE_WAREHOUSE]->last_error,
	    "HTTP 500");
	/* One warning per outage, never the body. */
	assert_int_equal(count_lines(log, "warehouse catalog config: HTTP 500"),
	    1);
	assert_int_equal(count_lines(log, "lakehouse catalog config: HTTP 500"),
	    1);
	assert_int_equal(count_lines(log, "secret"), 0);
	assert_int_equal(count_lines(log, "lakehouse catalog config read"), 1);
	fclose(log);
}

/* An unreachable side records why and holds up nobody. */
static void
test_unreachable(void **state)
{
	struct env *env = *state;
	struct catalog *cat = env->f.cat[ROUTE_LAKEHOUSE];
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	char uri[64], want[128];
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &slen), 0);
	close(fd);
	snprintf(uri, sizeof(uri), "http://127.0.0.1:%d", ntohs(sin.sin_port));
	snprintf(want, sizeof(want), "connect to 127.0.0.1:%d refused",
	    ntohs(sin.sin_port));
	env->conf.target[ROUTE_LAKEHOUSE].uri = uri;
	env->f.discover = discover_new(&env->f, changed_cb, env);
	run(env, 400);
	assert_false(cat->known);
	assert_non_null(cat->last_error);
	assert_string_equal(cat->last_error, want);
	assert_int_equal(env->srv[ROUTE_LAKEHOUSE].changed, 0);
	/* The other side is not held up. */
	assert_int_equal(env->srv[ROUTE_WAREHOUSE].changed, 1);
}

/* A 200 that is not a CatalogConfig is a failure. */
static void
test_bad_answer(void **state)
{
	struct env *env = *state;
	struct catalog *cat = env->f.cat[ROUTE_WAREHOUSE];

	env->srv[ROUTE_WAREHOUSE].mode = MODE_GARBAGE;
	env->f.discover = discover_new(&env->f, changed_cb, env);
	run(env, 200);
	assert_false(cat->known);
	assert_non_null(cat->last_error);
	assert_string_equal(cat->last_error,
	    "not a catalog config: not JSON (line 1, column 1)");
}

/* Refreshes pick up changes and survive failures. */
static void
test_refresh(void **state)
{
	struct env *env = *state;
	struct side_srv *wh = &env->srv[ROUTE_WAREHOUSE];
	struct catalog *cat = env->f.cat[ROUTE_WAREHOUSE];

	env->conf.config_refresh_ms = 100;
	wh->stop_after_changed = 3;
	env->f.discover = discover_new(&env->f, changed_cb, env);
	run(env, 2000);
	/* Read three times, changed once. */
	assert_int_equal(wh->changed, 3);
	assert_int_equal(wh->differed, 1);
	assert_int_equal(cat->generation, 1);
	/* A new answer is picked up by the next refresh. */
	wh->body = "{\"defaults\":{},\"overrides\":{\"prefix\":\"p2\"}}";
	wh->stop_after_changed = 4;
	run(env, 2000);
	assert_int_equal(wh->changed, 4);
	assert_int_equal(wh->differed, 2);
	assert_int_equal(cat->generation, 2);
	assert_string_equal(cat->prefix, "p2");
	/* A failed refresh keeps the config and retries. */
	wh->mode = MODE_500;
	run(env, 400);
	assert_true(cat->known);
	assert_string_equal(cat->prefix, "p2");
	assert_string_equal(cat->last_error, "HTTP 500");
	wh->mode = MODE_OK;
	wh->stop_after_changed = 5;
	run(env, 2000);
	assert_int_equal(wh->changed, 5);
	/* The same config again after the failure: read, not changed. */
	assert_int_equal(wh->differed, 2);
	assert_null(cat->last_error);
}

/* A kick rereads both sides at once. */
static void
test_kick(void **state)
{
	struct env *env = *state;
	struct side_srv *wh = &env->srv[ROUTE_WAREHOUSE];
	struct side_srv *lh = &env->srv[ROUTE_LAKEHOUSE];

	wh->stop_after_changed = 1;
	env->f.discover = discover_new(&env->f, changed_cb, env);
	run(env, 2000);
	run(env, 100);
	assert_int_equal(wh->changed, 1);
	assert_int_equal(lh->changed, 1);
	/* The hour-long refresh is cut short. */
	wh->body = "{\"defaults\":{},\"overrides\":{\"prefix\":\"k\"}}";
	wh->stop_after_changed = 2;
	discover_kick(env->f.discover);
	run(env, 2000);
	run(env, 100);
	assert_int_equal(wh->changed, 2);
	assert_int_equal(lh->changed, 2);
	assert_string_equal(env->f.cat[ROUTE_WAREHOUSE]->prefix, "k");
	assert_int_equal(env->f.cat[ROUTE_WAREHOUSE]->generation, 2);
	assert_int_equal(env->f.cat[ROUTE_LAKEHOUSE]->generation, 1);
}

/* discover_free cancels requests and retry timers. */
static void
test_free_pending(void **state)
{
	struct env *env = *state;

	env->srv[ROUTE_WAREHOUSE].mode = MODE_SILENT;
	env->srv[ROUTE_LAKEHOUSE].mode = MODE_500;
	env->f.discover = discover_new(&env->f, changed_cb, env);
	run(env, 100);
	assert_int_equal(env->srv[ROUTE_WAREHOUSE].served, 1);
	assert_int_equal(fetch_active(env->f.fetch), 1);
	/* One request in flight, one retry timer pending. */
	discover_free(env->f.discover);
	env->f.discover = NULL;
	assert_int_equal(fetch_active(env->f.fetch), 0);
	run(env, 400);
	assert_int_equal(env->srv[ROUTE_LAKEHOUSE].served, 1);
	assert_int_equal(env->srv[ROUTE_WAREHOUSE].changed, 0);
}

/* libcurl is initialised once, as main does in floe. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_both, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreachable, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_bad_answer, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kick, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_pending, setup,
		    teardown),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	log_init(0);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
