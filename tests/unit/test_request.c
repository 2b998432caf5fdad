/*
 * floe: test_request.c -- the request path on its own: the side a path
 * or a body is routed to, the LoadTable cache's keys and what it keeps,
 * which client headers go on, the namespace in a catalog's form, and the
 * answers a client gets (ErrorModel bodies, /v1/config, health, a
 * forwarded answer and a listing) through a real listener on 127.0.0.1,
 * with a scripted catalog on another port of 127.0.0.1 behind the pools.
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

#define T0 1700000000000LL
#define CAT_CONNS 4
#define BUFSZ 65536

/* A connection to the scripted catalog and what it read. */
struct cat_conn {
	int fd;
	char in[BUFSZ];
	size_t inlen;
	bool answered;
};

/* One floe, in process: a store, both pools, a listener; a catalog. */
struct fx {
	struct routing_tmp *tmp;
	struct event_base *base;
	struct floe f;
	struct server *srv;
	int port; /* floe's */
	int cat_fd; /* the scripted catalog's listener */
	struct cat_conn cat[CAT_CONNS];
	const char *answer[ROUTE_NSIDES]; /* what each side's catalog says */
	char head[ROUTE_NSIDES][BUFSZ]; /* the last head each side got */
	unsigned asked[ROUTE_NSIDES];
	char resp[BUFSZ]; /* floe's last answer */
	size_t resplen;
	char conf_path[300];
};

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

static int
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

static int
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
static unsigned
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
static const char *
resp_body(const struct fx *fx)
{
	return strstr(fx->resp, "\r\n\r\n") + 4;
}

/*
 * A request in BUF: REQ is the request line without its version, or
 * with it and more header lines; BODY, if not NULL, goes with its length.
 */
static void
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
static const char *
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
static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Does the last answer's head hold LINE ("Name: value")? */
static bool
resp_has(const struct fx *fx, const char *line)
{
	const char *end = strstr(fx->resp, "\r\n\r\n");
	const char *p = strstr(fx->resp, line);

	return p != NULL && p < end && p[-1] == '\n' &&
	    (p[strlen(line)] == '\r');
}

/* The last answer is an ErrorModel of STATUS, TYPE, with MSG in it. */
static void
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
static struct request *
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
static void
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
}

/* The side for each path: reads follow the wave, pins win, lists ask both. */
static void
test_route_side(void **state)
{
	static const struct {
		const char *target;
		enum rest_method rm;
		enum request_prefix pfx;
		enum request_mode mode;
		enum route_side side;
		bool has_route, merge_config, commit;
	} tab[] = {
		{ "/v1/routed/namespaces/db/tables/moved", REST_M_GET,
		    PFX_ROUTED, MODE_ONE, ROUTE_LAKEHOUSE, true, true, false },
		{ "/v1/routed/namespaces/db/tables/plain", REST_M_GET,
		    PFX_ROUTED, MODE_ONE, ROUTE_WAREHOUSE, true, true, false },
		/* A lakehouse wave's writes stay with the warehouse... */
		{ "/v1/routed/namespaces/db/tables/moved", REST_M_POST,
		    PFX_ROUTED, MODE_ONE, ROUTE_WAREHOUSE, true, false, true },
		/* ...until it is frozen. */
		{ "/v1/routed/namespaces/db/tables/frozen", REST_M_POST,
		    PFX_ROUTED, MODE_ONE, ROUTE_LAKEHOUSE, true, false, true },
		/* A pinned prefix wins over the wave. */
		{ "/v1/warehouse/namespaces/db/tables/moved", REST_M_GET,
		    PFX_WAREHOUSE, MODE_ONE, ROUTE_WAREHOUSE, true, true,
		    false },
		{ "/v1/routed/namespaces", REST_M_GET, PFX_ROUTED, MODE_LIST,
		    ROUTE_WAREHOUSE, false, false, false },
		{ "/v1/routed/namespaces/db/tables", REST_M_GET, PFX_ROUTED,
		    MODE_LIST, ROUTE_WAREHOUSE, false, false, false },
		{ "/v1/routed/namespaces/db", REST_M_GET, PFX_ROUTED,
		    MODE_NS_READ, ROUTE_WAREHOUSE, false, false, false },
		{ "/v1/lakehouse/namespaces/db", REST_M_GET, PFX_LAKEHOUSE,
		    MODE_ONE, ROUTE_LAKEHOUSE, false, false, false },
	};
	struct fx *fx = *state;
	struct h1_msg m;
	struct request *r;
	size_t i;

	for (i = 0; i < nitems(tab); i++) {
		msg_init(&m, tab[i].rm == REST_M_GET ? H1_GET : H1_POST,
		    tab[i].target, NULL, 0);
		r = request_for(fx, &m, tab[i].rm, tab[i].pfx);
		assert_int_equal(request_route(r), 0);
		if (r->mode != tab[i].mode || r->side != tab[i].side ||
		    r->has_route != tab[i].has_route ||
		    r->merge_config != tab[i].merge_config ||
		    r->commit != tab[i].commit)
			fail_msg("%s: mode %d side %d route %d merge %d "
				 "commit %d",
			    tab[i].target, r->mode, r->side, r->has_route,
			    r->merge_config, r->commit);
		if (r->has_route && strstr(tab[i].target, "moved") != NULL) {
			assert_true(r->route.assigned);
			assert_int_equal(r->route.wave, 1);
		}
		request_free(r);
	}
}

/* One side: the same writes, and the same reads or one wave. */
static void
test_same_side(void **state)
{
	struct route_result a, b;
	json_t *lv;
	char buf[16];
	size_t n;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.read = b.read = ROUTE_WAREHOUSE;
	assert_true(request_same_side(&a, &b));
	b.read = ROUTE_LAKEHOUSE; /* a canary splits reads by name */
	assert_false(request_same_side(&a, &b));
	a.assigned = b.assigned = true;
	a.wave = b.wave = 4;
	assert_true(request_same_side(&a, &b));
	b.write = ROUTE_LAKEHOUSE;
	assert_false(request_same_side(&a, &b));

	lv = json_pack("[s,s]", "a", "bc");
	assert_int_equal(request_json_ns(lv, buf, sizeof(buf), &n), 0);
	assert_int_equal(n, 4);
	assert_memory_equal(buf,
	    "a\x1f"
	    "bc",
	    4);
	assert_int_equal(request_json_ns(lv, buf, 4, &n), -1);
	json_decref(lv);
	lv = json_pack("[s,i]", "a", 1);
	assert_int_equal(request_json_ns(lv, buf, sizeof(buf), &n), -1);
	json_decref(lv);
	lv = json_array();
	assert_int_equal(request_json_ns(lv, buf, sizeof(buf), &n), -1);
	json_decref(lv);
}

/* The client headers that go on, and how. */
static void
test_forward_headers(void **state)
{
	static const struct {
		const char *name;
		enum request_fwd kind;
	} tab[] = {
		{ "Content-Type", FWD_AS_IS },
		{ "content-type", FWD_AS_IS },
		{ "X-Iceberg-Access-Delegation", FWD_AS_IS },
		{ "Idempotency-Key", FWD_AS_IS },
		{ "traceparent", FWD_AS_IS },
		{ "Authorization", FWD_AUTHZ },
		{ "If-None-Match", FWD_INM },
		{ "Cookie", FWD_NO },
		{ "Host", FWD_NO },
		{ "Via", FWD_NO },
		{ "X-Forwarded-For", FWD_NO },
		{ "Content-Length", FWD_NO },
		{ "Content-Typ", FWD_NO },
	};
	size_t i;

	(void)state;
	for (i = 0; i < nitems(tab); i++)
		if (request_fwd_kind(tab[i].name, strlen(tab[i].name)) !=
		    tab[i].kind)
			fail_msg("%s: %d", tab[i].name,
			    request_fwd_kind(tab[i].name, strlen(tab[i].name)));
	assert_true(request_paging_param("pageToken=x", 11));
	assert_true(request_paging_param("pageToken", 9));
	assert_true(request_paging_param("pageSize=5", 10));
	assert_false(request_paging_param("pageTokens=1", 12));
	assert_false(request_paging_param("parent=a", 8));
}

/* A namespace in a catalog's form: its separator, Java's URLEncoder set. */
static void
test_ns_encode(void **state)
{
	char out[64];
	ssize_t n;

	(void)state;
	n = request_ns_encode("a\x1f"
			      "b",
	    3, ".", out, sizeof(out));
	assert_int_equal(n, 3);
	assert_memory_equal(out, "a.b", 3);
	n = request_ns_encode("a\x1f"
			      "b",
	    3, "::", out, sizeof(out));
	assert_int_equal(n, 8);
	assert_memory_equal(out, "a%3A%3Ab", 8);
	n = request_ns_encode("a\x1f"
			      "b",
	    3, NULL, out, sizeof(out));
	assert_int_equal(n, 5);
	assert_memory_equal(out, "a%1Fb", 5);
	n = request_ns_encode("x y*_-.Z9", 9, NULL, out, sizeof(out));
	assert_int_equal(n, 11);
	assert_memory_equal(out, "x%20y*_-.Z9", 11);
	n = request_ns_encode("caf\xc3\xa9", 5, NULL, out, sizeof(out));
	assert_int_equal(n, 9);
	assert_memory_equal(out, "caf%C3%A9", 9);
	assert_int_equal(request_ns_encode("abc", 3, NULL, out, 3), -1);
	assert_int_equal(request_ns_encode("abc", 3, NULL, out, 5), 3);
}

/*
 * A namespace reframed for a catalog: only the separators change; every
 * other byte goes on as the client encoded it ("+" is not re-encoded as
 * "%20", "%20" not as "+"). Before, the levels were decoded and encoded
 * again: "my+db.x" reached the catalog as "my%20db%1Fx".
 */
static void
test_ns_reframe(void **state)
{
	static const struct {
		const char *raw, *fsep, *csep, *want;
		size_t nsep;
	} cases[] = {
		{ "my+db.x", ".", NULL, "my+db%1Fx", 1 },
		{ "my%20db.x", ".", NULL, "my%20db%1Fx", 1 },
		{ "a%2Eb%2ec", ".", NULL, "a%1Fb%1Fc", 2 },
		{ "a%1Fb%1fc", NULL, ".", "a.b.c", 2 },
		{ "a%1Fb", ".", "::", "a%3A%3Ab", 1 },
		{ "a::b:c", "::", NULL, "a%1Fb:c", 1 },
		{ "a%3A%3Ab", "::", NULL, "a%1Fb", 1 },
		{ "caf%C3%A9.x%zz", ".", NULL, "caf%C3%A9%1Fx%zz", 1 },
		{ "plain", ".", NULL, "plain", 0 },
	};
	char out[64];
	size_t i, nsep;
	ssize_t n;

	(void)state;
	for (i = 0; i < nitems(cases); i++) {
		n = request_ns_reframe(cases[i].raw, strlen(cases[i].raw),
		    cases[i].fsep, cases[i].csep, out, sizeof(out), &nsep);
		if (n < 0 || (size_t)n != strlen(cases[i].want) ||
		    memcmp(out, cases[i].want, (size_t)n) != 0 ||
		    nsep != cases[i].nsep)
			fail_msg("case %zu: \"%.*s\" (%zu), want \"%s\" (%zu)",
			    i, (int)(n < 0 ? 0 : n), out, nsep, cases[i].want,
			    cases[i].nsep);
	}
	/* OUT too small: -1, never a partial namespace. */
	assert_int_equal(request_ns_reframe("a.b", 3, ".", NULL, out, 4, &nsep),
	    -1);
}

/* The cache keys: what is in the shared one and the client's one. */
static void
test_cache_keys(void **state)
{
	struct fx *fx = *state;
	struct h1_header h[2] = {
		{ "Host", 4, "floe.test", 9 },
		{ "X-Iceberg-Access-Delegation", 27, "vended-credentials", 18 },
	};
	static char big[4096];
	unsigned char k0[REQUEST_CKEY_MAX], k1[REQUEST_CKEY_MAX];
	size_t l0, l1;
	struct h1_msg m;
	struct request *r;

	msg_init(&m, H1_GET,
	    "/v1/routed/namespaces/db/tables/plain?snapshots=all", h, 2);
	r = request_for(fx, &m, REST_M_GET, PFX_ROUTED);
	assert_int_equal(request_route(r), 0);
	r->client_hash = 42;
	assert_true(request_cache_keys(r, ROUTE_WAREHOUSE));
	l0 = r->ckeylen[0];
	l1 = r->ckeylen[1];
	memcpy(k0, r->ckey[0], l0);
	memcpy(k1, r->ckey[1], l1);
	/* The shared key starts with the object; the client's adds 8 bytes. */
	assert_memory_equal(k0, r->objs[0].key, r->objs[0].len);
	assert_int_equal(l1, l0 + sizeof(uint64_t));
	assert_true(memmem(k0, l0, "snapshots=all", 13) != NULL);
	assert_true(memmem(k0, l0, "vended-credentials", 18) != NULL);
	assert_true(memmem(k0, l0, "floe.test", 9) != NULL);

	/* Another client: the same shared key, another own key. */
	r->client_hash = 43;
	assert_true(request_cache_keys(r, ROUTE_WAREHOUSE));
	assert_int_equal(r->ckeylen[0], l0);
	assert_memory_equal(r->ckey[0], k0, l0);
	assert_memory_not_equal(r->ckey[1], k1, l1);
	/* Another side, another Host: other keys. */
	assert_true(request_cache_keys(r, ROUTE_LAKEHOUSE));
	assert_memory_not_equal(r->ckey[0], k0, l0);
	h[0].value = "floe.other";
	h[0].value_len = 10;
	assert_true(request_cache_keys(r, ROUTE_WAREHOUSE));
	assert_false(r->ckeylen[0] == l0 && memcmp(r->ckey[0], k0, l0) == 0);
	request_free(r);

	/* A query too long for a key: not cacheable. */
	memset(big, 'q', sizeof(big) - 1);
	memcpy(big, "/v1/namespaces/db/tables/plain?x=", 33);
	msg_init(&m, H1_GET, big, h, 2);
	r = request_for(fx, &m, REST_M_GET, PFX_ROUTED);
	assert_int_equal(request_route(r), 0);
	assert_false(request_cache_keys(r, ROUTE_WAREHOUSE));
	request_free(r);
}

/* Secrets, If-None-Match: the small decisions around the cache. */
static void
test_cache_predicates(void **state)
{
	struct h1_header h = { "If-None-Match", 13, "W/\"abc\", \"def\"", 14 };
	struct h1_msg m;
	const char *s1 = "{\"config\":{\"s3.secret-access-key\":\"x\"}}";
	const char *s2 = "{\"storage-credentials\":[]}";
	const char *ok = "{\"config\":{\"s3.endpoint\":\"x\"}}";

	(void)state;
	assert_true(request_has_secrets(s1, strlen(s1)));
	assert_true(request_has_secrets(s2, strlen(s2)));
	assert_false(request_has_secrets(ok, strlen(ok)));
	assert_false(request_has_secrets(s1, 20)); /* only what is there */

	msg_init(&m, H1_GET, "/", &h, 1);
	assert_true(request_inm_matches(&m, "\"abc\""));
	assert_true(request_inm_matches(&m, "W/\"def\""));
	assert_false(request_inm_matches(&m, "\"xyz\""));
	assert_false(request_inm_matches(&m, ""));
	msg_init(&m, H1_GET, "/", NULL, 0);
	assert_false(request_inm_matches(&m, "\"abc\""));
}

/* A LoadTable of TABLE, routed and looked up in the cache (a miss). */
static struct request *
cache_miss(struct fx *fx, struct h1_msg *m, const char *target)
{
	struct request *r;

	msg_init(m, H1_GET, target, NULL, 0);
	r = request_for(fx, m, REST_M_GET, PFX_ROUTED);
	assert_int_equal(request_route(r), 0);
	assert_false(request_cache_lookup(r));
	assert_true(r->cacheable);
	assert_string_equal(r->cache_state, "miss");
	return r;
}

/* An upstream answer: STATUS, headers H (N), BODY. */
static struct h1_msg *
answer_init(struct h1_msg *a, unsigned status, struct h1_header *h, unsigned n,
    const char *body)
{
	memset(a, 0, sizeof(*a));
	a->status = status;
	a->hdrs = h;
	a->nhdrs = n;
	assert_non_null(a->body = evbuffer_new());
	evbuffer_add(a->body, body, strlen(body));
	return a;
}

/* Is R's answer in the cache under key I? */
static bool
cached(struct fx *fx, struct request *r, int i)
{
	return cache_peek(fx->f.cache, r->ckey[i], r->ckeylen[i]) != NULL;
}

/* Offer R's answer A (built by answer_init) to the cache, then free it. */
static void
offer(struct request *r, struct h1_msg *a, const char *etag)
{
	static const char hd[] = "Content-Type: application/json\r\n";

	request_cache_store(r, a, hd, sizeof(hd) - 1, a->body, etag);
	evbuffer_free(a->body);
}

/* What the cache keeps, under which key, and what a write drops. */
static void
test_cache_store(void **state)
{
	static char floe_token[] = "floe-token";
	const char *t = "/v1/routed/namespaces/db/tables/plain";
	struct fx *fx = *state;
	struct h1_header nostore = { "Cache-Control", 13, "no-store", 8 };
	struct h1_msg m, mw, a;
	struct request *r, *w;
	struct conf_target *tw = &fx->f.conf->target[ROUTE_WAREHOUSE];
	char err[256];

	/* A write between the send and the answer: it may be stale. */
	r = cache_miss(fx, &m, t);
	msg_init(&mw, H1_POST, t, NULL, 0);
	w = request_for(fx, &mw, REST_M_POST, PFX_ROUTED);
	assert_int_equal(request_route(w), 0);
	request_cache_invalidate(w);
	offer(r, answer_init(&a, 200, NULL, 0, "{}"), "\"e0\"");
	assert_false(cached(fx, r, 0) || cached(fx, r, 1));
	request_free(r);

	/* No token of floe's: kept per client. */
	r = cache_miss(fx, &m, t);
	offer(r, answer_init(&a, 200, NULL, 0, "{}"), "\"e1\"");
	assert_false(cached(fx, r, 0));
	assert_true(cached(fx, r, 1));
	/* A write through floe drops its objects' answers. */
	request_cache_invalidate(w);
	assert_false(cached(fx, r, 1));
	request_free(w);
	request_free(r);

	/* Not a 200, or no-store: not kept. */
	r = cache_miss(fx, &m, t);
	offer(r, answer_init(&a, 404, NULL, 0, "{}"), "");
	offer(r, answer_init(&a, 200, &nostore, 1, "{}"), "\"e2\"");
	assert_false(cached(fx, r, 0) || cached(fx, r, 1));
	request_free(r);

	/* With floe's token: shared, unless the answer has credentials. */
	tw->token = floe_token;
	tw->auth = CONF_CRED_TOKEN;
	fx->f.cred[ROUTE_WAREHOUSE] =
	    cred_new(fx->base, NULL, tw, "warehouse", err, sizeof(err));
	assert_non_null(fx->f.cred[ROUTE_WAREHOUSE]);
	r = cache_miss(fx, &m, t);
	offer(r, answer_init(&a, 200, NULL, 0, "{}"), "\"e3\"");
	assert_true(cached(fx, r, 0));
	assert_false(cached(fx, r, 1));
	cache_clear(fx->f.cache);
	offer(r,
	    answer_init(&a, 200, NULL, 0,
		"{\"config\":{\"s3.session-token\":\"t\"}}"),
	    "\"e4\"");
	assert_false(cached(fx, r, 0));
	assert_true(cached(fx, r, 1));
	cred_free(fx->f.cred[ROUTE_WAREHOUSE]);
	fx->f.cred[ROUTE_WAREHOUSE] = NULL;
	tw->token = NULL;
	tw->auth = CONF_CRED_NONE;
	request_free(r);
	cache_clear(fx->f.cache);
}

/* ErrorModel answers for what floe refuses itself, through the listener. */
static void
test_answer_errors(void **state)
{
	static const struct {
		const char *req;
		const char *body; /* NULL: none */
		unsigned status;
		const char *type;
		const char *msg;
	} tab[] = {
		{ "GET /v1/nope", NULL, 404, "NotFoundException",
		    "No Iceberg REST endpoint at GET "
		    "/v1/nope" },
		{ "GET /v1/other/namespaces", NULL, 404,
		    "NoSuchWarehouseException", "Unknown prefix \"other\"" },
		{ "GET /v1/namespaces HTTP/1.1\r\nVia: 1.0 a, 1.1 test-node",
		    NULL, 508, "LoopDetectedException",
		    "(Via: 1.1 test-node)" },
		{ "POST /v1/warehouse/namespaces/db/tables/frozen", "{}", 403,
		    "ForbiddenException",
		    "Writes to the warehouse copy of frozen are refused: wave "
		    "2 is frozen since" },
		{ "POST /v1/tables/rename",
		    "{\"source\":{\"namespace\":[\"db\"],\"name\":\"moved\"},"
		    "\"destination\":{\"namespace\":[\"db\"],\"name\":"
		    "\"plain\"}}",
		    400, "BadRequestException",
		    "Cannot rename db.moved (read from the lakehouse, written "
		    "to the warehouse) to db.plain (read from the warehouse, "
		    "written to the warehouse)" },
		{ "POST /v1/transactions/commit", "{\"table-changes\":[]}", 400,
		    "BadRequestException",
		    "\"table-changes\" must be a non-empty array" },
		{ "POST /v1/namespaces/db/tables", "nope", 400,
		    "BadRequestException", "Invalid JSON body for " },
		{ "POST /v1/namespaces/db/tables", "{\"name\":7}", 400,
		    "BadRequestException", "\"name\" must be a table name" },
		{ "GET /v1/namespaces?pageToken=forged", NULL, 400,
		    "BadRequestException", "Invalid pageToken" },
		{ NULL, NULL, 400, "BadRequestException",
		    "Malformed HTTP request" },
	};
	struct fx *fx = *state;
	char req[1024];
	uint64_t local;
	size_t i;

	for (i = 0; i < nitems(tab); i++) {
		local = fx->f.stats.local_errors;
		if (tab[i].req == NULL)
			strlcpy(req, "BLAH\r\n\r\n", sizeof(req));
		else
			req_fmt(req, sizeof(req), tab[i].req, tab[i].body);
		if (exchange(fx, req) != tab[i].status)
			fail_msg("%s: %s", req, fx->resp);
		assert_error_model(fx, tab[i].status, tab[i].type, tab[i].msg);
		assert_int_equal(fx->f.stats.local_errors, local + 1);
	}
	assert_int_equal(fx->asked[0] + fx->asked[1], 0);
	/* The refused write names its wave. */
	req_fmt(req, sizeof(req), tab[3].req, tab[3].body);
	assert_int_equal(exchange(fx, req), 403);
	assert_true(resp_has(fx, "X-Floe-Wave: 2"));

	/* A side whose config is not known yet. */
	fx->f.cat[ROUTE_LAKEHOUSE]->known = false;
	assert_int_equal(exchange(fx,
			     "GET /v1/namespaces/db/tables/moved HTTP/1.1\r\n"
			     "Host: x\r\n\r\n"),
	    503);
	assert_error_model(fx, 503, "ServiceUnavailableException",
	    "The lakehouse catalog's config is not known yet");
	assert_int_equal(exchange(fx,
			     "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"),
	    503);
	assert_string_equal(resp_body(fx),
	    "{\"ready\":false,\"store\":true,\"warehouse_config\":true,"
	    "\"lakehouse_config\":false}");
	fx->f.cat[ROUTE_LAKEHOUSE]->known = true;
}

/* floe's own answers: health, readiness, GET /v1/config. */
static void
test_answer_local(void **state)
{
	struct fx *fx = *state;
	json_t *j;
	static char colons[] = "::";
	char *sep = fx->f.conf->namespace_separator;

	assert_int_equal(exchange(fx,
			     "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
	    200);
	assert_string_equal(resp_body(fx), "{\"status\":\"alive\"}");
	assert_int_equal(exchange(fx,
			     "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"),
	    200);
	assert_string_equal(resp_body(fx),
	    "{\"ready\":true,\"store\":true,\"warehouse_config\":true,"
	    "\"lakehouse_config\":true}");

	fx->f.conf->namespace_separator = colons;
	assert_int_equal(exchange(fx,
			     "GET /v1/config?warehouse=lakehouse HTTP/1.1\r\n"
			     "Host: x\r\n\r\n"),
	    200);
	fx->f.conf->namespace_separator = sep;
	assert_non_null(j = json_loads(resp_body(fx), 0, NULL));
	assert_string_equal(json_string_value(
				json_object_get(json_object_get(j, "overrides"),
				    "prefix")),
	    "lakehouse");
	assert_string_equal(json_string_value(
				json_object_get(json_object_get(j, "overrides"),
				    "namespace-separator")),
	    "%3A%3A");
	assert_true(json_array_size(json_object_get(j, "endpoints")) > 5);
	json_decref(j);
	assert_int_equal(exchange(fx,
			     "GET /v1/config HTTP/1.1\r\nHost: x\r\n\r\n"),
	    200);
	assert_non_null(strstr(resp_body(fx), "\"prefix\":\"routed\""));
}

/*
 * A LoadTable through to the catalog: the head it gets, the answer the
 * client gets (floe's ETag, X-Floe-*, config merged); then a cache hit.
 */
static void
test_forward_load(void **state)
{
	static const char req[] =
	    "GET /v1/routed/namespaces/db/tables/moved?snapshots=all "
	    "HTTP/1.1\r\nHost: floe.test\r\nAccept: application/json\r\n"
	    "Cookie: session=1\r\nAuthorization: Bearer client-tok\r\n"
	    "X-Iceberg-Access-Delegation: vended-credentials\r\n\r\n";
	static const char body[] =
	    "{\"metadata-location\":\"s3://b/m.json\",\"metadata\":{},"
	    "\"config\":{\"t.k\":\"t-v\"}}";
	char ans[512];
	const char *hd;
	struct fx *fx = *state;

	fx->answer[ROUTE_LAKEHOUSE] = http_answer(ans, sizeof(ans),
	    "ETag: \"up-1\"\r\nX-Upstream-Secret: s\r\n", body);
	assert_int_equal(exchange(fx, req), 200);
	assert_int_equal(fx->asked[ROUTE_LAKEHOUSE], 1);
	assert_int_equal(fx->asked[ROUTE_WAREHOUSE], 0);
	hd = fx->head[ROUTE_LAKEHOUSE];
	assert_true(starts_with(hd,
	    "GET /lh/v1/lhp/namespaces/db/tables/moved?snapshots=all "
	    "HTTP/1.1\r\n"));
	assert_non_null(strstr(hd, "\r\nAccept: application/json\r\n"));
	assert_non_null(strstr(hd, "\r\nAuthorization: Bearer client-tok\r\n"));
	assert_non_null(strstr(hd,
	    "\r\nX-Iceberg-Access-Delegation: "
	    "vended-credentials\r\n"));
	assert_non_null(strstr(hd, "\r\nVia: 1.1 test-node\r\n"));
	assert_non_null(strstr(hd, "\r\nX-Forwarded-For: 127.0.0.1\r\n"));
	assert_null(strstr(hd, "Cookie"));
	assert_null(strstr(hd, "floe.test"));

	assert_true(resp_has(fx, "X-Floe-Target: lakehouse"));
	assert_true(resp_has(fx, "X-Floe-Wave: 1"));
	assert_true(resp_has(fx, "X-Floe-Cache: miss"));
	assert_true(resp_has(fx, "Content-Type: application/json"));
	assert_false(resp_has(fx, "ETag: \"up-1\""));
	assert_non_null(strstr(fx->resp, "\r\nETag: "));
	assert_null(strstr(fx->resp, "X-Upstream-Secret"));
	/* The side's config merged; the table's own keys kept. */
	assert_non_null(strstr(resp_body(fx), "\"lake.k\":\"lake-v\""));
	assert_non_null(strstr(resp_body(fx), "\"t.k\":\"t-v\""));

	/* The same read again: from the cache, the catalog not asked. */
	assert_int_equal(exchange(fx, req), 200);
	assert_int_equal(fx->asked[ROUTE_LAKEHOUSE], 1);
	assert_true(resp_has(fx, "X-Floe-Cache: hit"));
	assert_non_null(strstr(resp_body(fx), "\"lake.k\":\"lake-v\""));
	cache_clear(fx->f.cache);
	fx->answer[ROUTE_LAKEHOUSE] = NULL;
}

/* A listing: both sides asked without floe's paging, the pages merged. */
static void
test_forward_list(void **state)
{
	struct fx *fx = *state;
	char wh[512], lh[512];
	json_t *j, *ns;

	fx->answer[ROUTE_WAREHOUSE] = http_answer(wh, sizeof(wh), "",
	    "{\"namespaces\":[[\"a\"],[\"c\"]]}");
	fx->answer[ROUTE_LAKEHOUSE] =
	    http_answer(lh, sizeof(lh), "", "{\"namespaces\":[[\"b\"]]}");
	assert_int_equal(exchange(fx,
			     "GET /v1/namespaces?pageSize=2 HTTP/1.1\r\n"
			     "Host: x\r\n\r\n"),
	    200);
	assert_int_equal(fx->asked[ROUTE_WAREHOUSE], 1);
	assert_int_equal(fx->asked[ROUTE_LAKEHOUSE], 1);
	assert_true(starts_with(fx->head[ROUTE_WAREHOUSE],
	    "GET /wh/v1/whp/namespaces HTTP/1.1\r\n"));
	assert_true(starts_with(fx->head[ROUTE_LAKEHOUSE],
	    "GET /lh/v1/lhp/namespaces HTTP/1.1\r\n"));
	assert_true(resp_has(fx, "X-Floe-Target: both"));
	assert_non_null(j = json_loads(resp_body(fx), 0, NULL));
	ns = json_object_get(j, "namespaces");
	assert_int_equal(json_array_size(ns), 2);
	assert_string_equal(json_string_value(
				json_array_get(json_array_get(ns, 0), 0)),
	    "a");
	assert_string_equal(json_string_value(
				json_array_get(json_array_get(ns, 1), 0)),
	    "b");
	assert_true(json_is_string(json_object_get(j, "next-page-token")));
	json_decref(j);
	fx->answer[ROUTE_WAREHOUSE] = fx->answer[ROUTE_LAKEHOUSE] = NULL;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_side),
		cmocka_unit_test(test_forward_headers),
		cmocka_unit_test(test_ns_encode),
		cmocka_unit_test(test_ns_reframe),
		cmocka_unit_test(test_cache_predicates),
		cmocka_unit_test_setup_teardown(test_route_side, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cache_keys, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cache_store, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_answer_errors, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_answer_local, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_forward_load, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_forward_list, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
