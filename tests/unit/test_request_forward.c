/*
 * floe: test_request_forward.c -- the forwarded exchanges: a LoadTable
 * through to the scripted catalog (the head it gets, the answer the client
 * gets, then a cache hit), many ETags, and a listing that asks both sides.
 * The fixture (a real listener on 127.0.0.1, a scripted catalog behind the
 * pools) is in request_fx.c.
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

/*
 * The memo of checked answers, through the listener: the same answer
 * again is not checked (a hit) and is sent merged and rewritten as the
 * first; another Host gets its own rewrite; one byte wrong at the same
 * length is the catalog's 502 with the offset of that byte; the good
 * bytes again are a hit.
 */
static void
test_forward_memo(void **state)
{
	static const char req[] =
	    "GET /v1/routed/namespaces/db/tables/moved HTTP/1.1\r\n"
	    "Host: floe.test\r\n\r\n";
	static const char req2[] =
	    "GET /v1/routed/namespaces/db/tables/moved HTTP/1.1\r\n"
	    "Host: other.test:81\r\n\r\n";
	struct fx *fx = *state;
	const char *uri = fx->f.conf->target[ROUTE_LAKEHOUSE].uri;
	struct stats_side *st = &fx->f.stats.side[ROUTE_LAKEHOUSE];
	char body[1024], bad[1024], ans[2048], ansbad[2048], first[BUFSZ];
	char want[128], *p;

	cache_configure(fx->f.cache, 0, 1000);
	fx->f.memo = memo_new(1 << 20);
	snprintf(body, sizeof(body),
	    "{\"metadata-location\":\"s3://b/m.json\",\"metadata\":"
	    "{\"n\":[1,2,3]},\"plan\":\"%s/v1/lhp/namespaces/db/tables/"
	    "moved/plan\",\"config\":{\"t.k\":\"t-v\"}}",
	    uri);
	memcpy(bad, body, sizeof(body));
	p = strstr(bad, "[1,2,3]");
	assert_non_null(p);
	p[4] = ':'; /* [1,2:3] */
	snprintf(want, sizeof(want), "at byte %zu of %zu",
	    (size_t)(p + 4 - bad), strlen(bad));
	fx->answer[ROUTE_LAKEHOUSE] = http_answer(ans, sizeof(ans), "", body);

	assert_int_equal(exchange(fx, req), 200);
	assert_int_equal(st->memo_hits, 0);
	assert_non_null(strstr(resp_body(fx), "\"lake.k\":\"lake-v\""));
	assert_non_null(strstr(resp_body(fx),
	    "\"http://floe.test/v1/lakehouse/namespaces/db/tables/moved/"
	    "plan\""));
	strlcpy(first, resp_body(fx), sizeof(first));
	assert_int_equal(exchange(fx, req), 200);
	assert_int_equal(st->memo_hits, 1);
	assert_string_equal(resp_body(fx), first);

	/* Another Host: the verdict reused, the rewrite made again. */
	assert_int_equal(exchange(fx, req2), 200);
	assert_int_equal(st->memo_hits, 2);
	assert_non_null(strstr(resp_body(fx),
	    "\"http://other.test:81/v1/lakehouse/namespaces/db/tables/moved/"
	    "plan\""));
	assert_non_null(strstr(resp_body(fx), "\"lake.k\":\"lake-v\""));

	/* One byte wrong: checked from it, as without the memo. */
	fx->answer[ROUTE_LAKEHOUSE] =
	    http_answer(ansbad, sizeof(ansbad), "", bad);
	assert_int_equal(exchange(fx, req), 502);
	assert_int_equal(st->memo_hits, 2);
	assert_non_null(strstr(resp_body(fx), want));
	assert_null(strstr(resp_body(fx), "[1,2:3]"));

	/* The good bytes again. */
	fx->answer[ROUTE_LAKEHOUSE] = http_answer(ans, sizeof(ans), "", body);
	assert_int_equal(exchange(fx, req), 200);
	assert_int_equal(st->memo_hits, 3);
	assert_string_equal(resp_body(fx), first);
	fx->answer[ROUTE_LAKEHOUSE] = NULL;
}

/*
 * A catalog's head of nearly 64 KiB that ends in 95 ETags: floe passes
 * one ETag, minted, and its head stays within its buffer (each rewritten
 * ETag is longer than the catalog's, and all of them once overflowed it).
 */
static void
test_forward_many_etags(void **state)
{
	static const char req[] =
	    "GET /v1/routed/namespaces/db/tables/moved HTTP/1.1\r\n"
	    "Host: floe.test\r\n\r\n";
	struct fx *fx = *state;
	char *extra, *ans, *o;
	const char *p;
	size_t elen = 64 * 1024, n = 0;
	int i;

	assert_non_null(extra = malloc(elen));
	assert_non_null(ans = malloc(elen + 512));
	o = extra + snprintf(extra, elen, "Cache-Control: ");
	memset(o, 'x', 64400);
	o += 64400;
	memcpy(o, "\r\n", 2);
	o += 2;
	for (i = 0; i < 95; i++) {
		memcpy(o, "ETag: \"\"\r\n", 10);
		o += 10;
	}
	*o = '\0';
	fx->answer[ROUTE_LAKEHOUSE] =
	    http_answer(ans, elen + 512, extra, "{\"metadata\":{}}");
	assert_int_equal(exchange(fx, req), 200);
	for (p = fx->resp; (p = strstr(p, "\r\nETag: ")) != NULL; p++)
		n++;
	assert_int_equal(n, 1);
	assert_true(resp_has(fx, "X-Floe-Target: lakehouse"));
	cache_clear(fx->f.cache);
	fx->answer[ROUTE_LAKEHOUSE] = NULL;
	free(extra);
	free(ans);
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
		cmocka_unit_test_setup_teardown(test_forward_load, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_forward_list, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_forward_memo, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_forward_many_etags, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
