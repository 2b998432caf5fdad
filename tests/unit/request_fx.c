/*
 * floe: request_fx.c -- the fixture the request path tests share
 * (test_request.c, test_request_forward.c): one floe in process with a
 * real listener on 127.0.0.1, a scripted catalog on another port, and
 * the helpers that talk to them.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "cache/cache.h"
#include "cache/memo.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/request.h"
#include "proxy/request_impl.h"
#include "proxy/rest.h"
#include "proxy/server.h"
#include "proxy/upstream.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"
#include "tests/unit/routing_tmp.h"
#include "tests/unit/request_fx.h"

#define T0 1700000000000LL

/* Listen on 127.0.0.1, a port the kernel picks; the fd, its port. */
static int
listen_any(int *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd;

	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	assert_int_not_equal(fcntl(fd, F_SETFL, O_NONBLOCK), -1);
	*port = ntohs(sin.sin_port);
	return fd;
}

/* Assign the object in TEXT to WAVE. */
static void
put_route(struct store *s, const char *text, uint32_t wave)
{
	struct route_obj obj;
	char err[256];

	if (route_obj_parse(text, &obj, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
	assert_int_equal(store_route_put(s, obj.key, obj.len, wave, T0, NULL),
	    STORE_OK);
}

/* store_wave_update_cb setting the state in ARG. */
static int
force_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	(void)event;
	(void)record;
	w->state = *(const uint8_t *)arg;
	return STORE_OK;
}

/* Put wave N in STATE directly, past the lifecycle's gates. */
static void
force_wave(struct store *s, uint32_t n, uint8_t state)
{
	assert_int_equal(store_wave_update(s, n, T0, force_cb, &state, NULL),
	    STORE_OK);
}

/* Learn a side's /v1/config answer. */
static void
learn(struct catalog *c, const char *json)
{
	char err[256];

	assert_true(
	    catalog_update(c, json, strlen(json), T0, err, sizeof(err)) >= 0);
	assert_true(c->known);
}

int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct server_opts so;
	char err[512], hostport[64];
	FILE *fp;
	int cport, i;

	assert_non_null(fx);
	assert_non_null(fx->tmp = routing_tmp_open());
	assert_non_null(fx->base = event_base_new());
	fx->cat_fd = listen_any(&cport);
	snprintf(fx->conf_path, sizeof(fx->conf_path), "%s/floe.conf",
	    fx->tmp->dir);
	assert_non_null(fp = fopen(fx->conf_path, "w"));
	fprintf(fp,
	    "[warehouse]\nuri = http://127.0.0.1:%d/wh\n"
	    "[lakehouse]\nuri = http://127.0.0.1:%d/lh\n",
	    cport, cport);
	fclose(fp);
	if ((fx->f.conf = conf_load(fx->conf_path, err, sizeof(err))) == NULL)
		fail_msg("conf_load: %s", err);
	fx->f.base = fx->base;
	fx->f.store = fx->tmp->store;
	fx->f.access_fd = -1;
	fx->f.cache =
	    cache_new(fx->f.conf->cache_size, fx->f.conf->cache_ttl_ms);
	for (i = 0; i < ROUTE_NSIDES; i++) {
		fx->f.cat[i] = catalog_new();
		fx->f.up[i] =
		    upstream_new(fx->base, NULL, &fx->f.conf->target[i],
			route_side_name(i), err, sizeof(err));
		assert_non_null(fx->f.up[i]);
	}
	learn(fx->f.cat[ROUTE_WAREHOUSE],
	    "{\"defaults\":{},\"overrides\":{\"prefix\":\"whp\"}}");
	learn(fx->f.cat[ROUTE_LAKEHOUSE],
	    "{\"defaults\":{\"lake.k\":\"lake-v\"},"
	    "\"overrides\":{\"prefix\":\"lhp\"}}");

	/*
	 * db.moved reads from the lakehouse; db.frozen's warehouse copy is
	 * frozen; db.plain is on no wave.
	 */
	put_route(fx->f.store, "db.moved", 1);
	force_wave(fx->f.store, 1, WAVE_LAKEHOUSE);
	put_route(fx->f.store, "db.frozen", 2);
	force_wave(fx->f.store, 2, WAVE_FROZEN);

	request_init("test-node");
	memset(&so, 0, sizeof(so));
	so.name = "rest";
	so.lim.max_head = 64 * 1024;
	so.lim.max_headers = 100;
	so.lim.max_body = 1 << 20;
	so.idle_timeout_ms = 10000;
	so.header_timeout_ms = 10000;
	so.write_timeout_ms = 10000;
	fx->srv = server_new(fx->base, &so, request_serve, request_serve_error,
	    &fx->f);
	/* A port the kernel says is free now (libevent refuses port 0). */
	close(listen_any(&fx->port));
	snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", fx->port);
	if (server_listen_tcp(fx->srv, hostport, err, sizeof(err)) == -1)
		fail_msg("%s", err);
	assert_int_equal(server_port(fx->srv), fx->port);
	*state = fx;
	return 0;
}

int
teardown(void **state)
{
	struct fx *fx = *state;
	int i;

	server_free(fx->srv);
	for (i = 0; i < ROUTE_NSIDES; i++) {
		upstream_free(fx->f.up[i]);
		catalog_free(fx->f.cat[i]);
	}
	for (i = 0; i < CAT_CONNS; i++)
		if (fx->cat[i].fd > 0)
			close(fx->cat[i].fd);
	close(fx->cat_fd);
	cache_free(fx->f.cache);
	memo_free(fx->f.memo);
	conf_free(fx->f.conf);
	event_base_free(fx->base);
	routing_tmp_close(fx->tmp);
	free(fx);
	return 0;
}

/* The length of a whole HTTP message in BUF, or 0 while it is not. */
static size_t
http_whole(const char *buf, size_t len)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4), *cl;
	size_t head, body = 0;

	if (end == NULL)
		return 0;
	head = end + 4 - buf;
	cl = memmem(buf, head, "Content-Length: ", 16);
	if (cl != NULL)
		body = strtoul(cl + 16, NULL, 10);
	return len >= head + body ? head + body : 0;
}

/* The scripted catalog: accept, read each head, answer once. */
static void
catalog_step(struct fx *fx)
{
	struct cat_conn *c;
	enum route_side side;
	const char *a;
	ssize_t n;
	int fd, i;

	while ((fd = accept(fx->cat_fd, NULL, NULL)) >= 0) {
		for (i = 0; i < CAT_CONNS && fx->cat[i].fd > 0; i++)
			;
		assert_true(i < CAT_CONNS);
		memset(&fx->cat[i], 0, sizeof(fx->cat[i]));
		fx->cat[i].fd = fd;
		assert_int_not_equal(fcntl(fd, F_SETFL, O_NONBLOCK), -1);
	}
	for (i = 0; i < CAT_CONNS; i++) {
		c = &fx->cat[i];
		if (c->fd <= 0 || c->answered)
			continue;
		n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen,
		    0);
		if (n > 0)
			c->inlen += n;
		c->in[c->inlen] = '\0';
		if (http_whole(c->in, c->inlen) == 0)
			continue;
		side = strncmp(strchr(c->in, ' ') + 1, "/lh/", 4) == 0 ?
		    ROUTE_LAKEHOUSE :
		    ROUTE_WAREHOUSE;
		strlcpy(fx->head[side], c->in, sizeof(fx->head[side]));
		fx->asked[side]++;
		a = fx->answer[side];
		assert_non_null(a);
		assert_int_equal(send(c->fd, a, strlen(a), 0),
		    (ssize_t)strlen(a));
		c->answered = true;
		close(c->fd);
		c->fd = 0;
	}
}

/*
 * Send REQ to floe and run the loop (and the catalog) until its whole
 * answer is in fx->resp; returns the status.
 */
unsigned
exchange(struct fx *fx, const char *req)
{
	struct sockaddr_in sin;
	struct timespec ts = { 0, 1000000 };
	ssize_t n;
	int fd, tries;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(fx->port);
	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	assert_int_not_equal(fcntl(fd, F_SETFL, O_NONBLOCK), -1);
	fx->resplen = 0;
	for (tries = 0; tries < 5000; tries++) {
		event_base_loop(fx->base, EVLOOP_NONBLOCK);
		catalog_step(fx);
		n = recv(fd, fx->resp + fx->resplen,
		    sizeof(fx->resp) - 1 - fx->resplen, 0);
		if (n > 0)
			fx->resplen += n;
		fx->resp[fx->resplen] = '\0';
		if (http_whole(fx->resp, fx->resplen) > 0)
			break;
		nanosleep(&ts, NULL);
	}
	close(fd);
	event_base_loop(fx->base, EVLOOP_NONBLOCK);
	if (http_whole(fx->resp, fx->resplen) == 0)
		fail_msg("no whole answer to %s: %s", req, fx->resp);
	return (unsigned)strtoul(fx->resp + 9, NULL, 10);
}

/* The body of the last answer. */
const char *
resp_body(const struct fx *fx)
{
	return strstr(fx->resp, "\r\n\r\n") + 4;
}

/*
 * A request in BUF: REQ is the request line without its version, or
 * with it and more header lines; BODY, if not NULL, goes with its length.
 */
void
req_fmt(char *buf, size_t len, const char *req, const char *body)
{
	int n;

	if (body != NULL)
		n = snprintf(buf, len,
		    "%s%s\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s", req,
		    strstr(req, "HTTP/1.1") != NULL ? "" : " HTTP/1.1",
		    strlen(body), body);
	else
		n = snprintf(buf, len, "%s%s\r\nHost: x\r\n\r\n", req,
		    strstr(req, "HTTP/1.1") != NULL ? "" : " HTTP/1.1");
	assert_true(n > 0 && (size_t)n < len);
}

/* A catalog's 200 answer with BODY in BUF; closes after. */
const char *
http_answer(char *buf, size_t len, const char *extra, const char *body)
{
	int n = snprintf(buf, len,
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%s"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
	    extra, strlen(body), body);

	assert_true(n > 0 && (size_t)n < len);
	return buf;
}

/* Does S start with PREFIX? */
bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Does the last answer's head hold LINE ("Name: value")? */
bool
resp_has(const struct fx *fx, const char *line)
{
	const char *end = strstr(fx->resp, "\r\n\r\n");
	const char *p = strstr(fx->resp, line);

	return p != NULL && p < end && p[-1] == '\n' &&
	    (p[strlen(line)] == '\r');
}

/* The last answer is an ErrorModel of STATUS, TYPE, with MSG in it. */
void
assert_error_model(const struct fx *fx, unsigned status, const char *type,
    const char *msg)
{
	json_error_t jerr;
	json_t *j, *e;

	assert_true(resp_has(fx, "Content-Type: application/json"));
	j = json_loads(resp_body(fx), 0, &jerr);
	if (j == NULL)
		fail_msg("not JSON: %s (%s)", resp_body(fx), jerr.text);
	e = json_object_get(j, "error");
	assert_int_equal(json_integer_value(json_object_get(e, "code")),
	    status);
	assert_string_equal(json_string_value(json_object_get(e, "type")),
	    type);
	if (strstr(json_string_value(json_object_get(e, "message")), msg) ==
	    NULL)
		fail_msg("message \"%s\" lacks \"%s\"",
		    json_string_value(json_object_get(e, "message")), msg);
	json_decref(j);
}

/* A request for TARGET (GET), parsed and with its prefix, not routed. */
struct request *
request_for(struct fx *fx, struct h1_msg *m, enum rest_method rm,
    enum request_prefix pfx)
{
	struct request *r = request_new();

	r->f = &fx->f;
	r->msg = m;
	r->pfx = pfx;
	assert_int_equal(rest_parse(rm, m->target, m->target_len, NULL, &r->rr),
	    REST_OK);
	return r;
}

/* A bare message for METHOD TARGET with headers H (N of them). */
void
msg_init(struct h1_msg *m, enum h1_method method, const char *target,
    struct h1_header *h, unsigned n)
{
	memset(m, 0, sizeof(*m));
	m->method = method;
	m->method_name = method == H1_GET ? "GET" : "POST";
	m->target = target;
	m->target_len = strlen(target);
	m->hdrs = h;
	m->nhdrs = n;
	h1_index(m);
}
