/*
 * floe: test_request.c -- the request path on its own: the side a path
 * or a body is routed to, the LoadTable cache's keys and what it keeps,
 * which client headers go on, the namespace in a catalog's form, and the
 * answers a client gets (ErrorModel bodies, /v1/config, health) through
 * a real listener on 127.0.0.1. The forwarded exchanges are in
 * test_request_forward.c; the fixture in request_fx.c.
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
#include "tests/unit/request_fx.h"

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
		if (request_fwd_kind(h1_field_of(tab[i].name,
			strlen(tab[i].name))) != tab[i].kind)
			fail_msg("%s: %d", tab[i].name,
			    request_fwd_kind(
				h1_field_of(tab[i].name, strlen(tab[i].name))));
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
		{ "Host", 4, "floe.test", 9, H1_F_OTHER },
		{ "X-Iceberg-Access-Delegation", 27, "vended-credentials", 18,
		    H1_F_OTHER },
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
	struct h1_header h = { "If-None-Match", 13, "W/\"abc\", \"def\"", 14,
		H1_F_OTHER };
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

/*
 * Whether an answer is JSON: the verdict taken as it arrived is used as
 * it is; a body not checked so is checked where its pieces lie, a token
 * cut anywhere between them.
 */
static void
test_body_is_json(void **state __unused)
{
	static const char *const pieces[] = { "{\"a\":[1,", "2.5e3,\"\\u00",
		"e9\xc3", "\xa9\"],\"b\":tr", "ue}" };
	struct request *r = calloc(1, sizeof(*r));
	struct evbuffer *b = evbuffer_new();
	char why[128], want[64];
	size_t i, len = 0;

	assert_non_null(r);
	assert_non_null(b);
	r->json = -1;
	for (i = 0; i < nitems(pieces); i++) {
		evbuffer_add_reference(b, pieces[i], strlen(pieces[i]), NULL,
		    NULL);
		len += strlen(pieces[i]);
	}
	assert_true(evbuffer_get_contiguous_space(b) < len);
	assert_true(request_body_is_json(r, b, len, why, sizeof(why)));
	evbuffer_add_reference(b, "x", 1, NULL, NULL);
	assert_false(request_body_is_json(r, b, len + 1, why, sizeof(why)));
	snprintf(want, sizeof(want), "at byte %zu of %zu", len, len + 1);
	assert_non_null(strstr(why, want));
	/* Taken as it arrived: the body is not looked at. */
	r->json = 0;
	r->json_at = 7;
	assert_false(request_body_is_json(r, b, len + 1, why, sizeof(why)));
	snprintf(want, sizeof(want), "at byte 7 of %zu", len + 1);
	assert_non_null(strstr(why, want));
	r->json = 1;
	assert_true(request_body_is_json(r, b, len + 1, why, sizeof(why)));
	evbuffer_free(b);
	free(r);
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
	h1_index(a);
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
	struct h1_header nostore = { "Cache-Control", 13, "no-store", 8,
		H1_F_OTHER };
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_side),
		cmocka_unit_test(test_forward_headers),
		cmocka_unit_test(test_ns_encode),
		cmocka_unit_test(test_ns_reframe),
		cmocka_unit_test(test_cache_predicates),
		cmocka_unit_test(test_body_is_json),
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
