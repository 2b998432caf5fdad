/*
 * floe: test_stats.c -- the registry of GET /status and GET /metrics parts:
 * parts appear in the order they were added, a keyless part's members go
 * to the top level, a part with nothing to say is left out, and removing
 * one module's parts leaves the others and the counters as they were;
 * picking members asks only the parts it needs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "proxy/stats.h"

/*
 * A test part: of /status when it has a KEY or JSON, of /metrics when it
 * has TEXT, of both when it has both (one module, two parts).
 */
struct part {
	const char *key; /* /status: NULL for the top level */
	const char *json; /* /status: the value; NULL: nothing to say */
	const char *text; /* /metrics: its families */
	int calls;
};

/* stats_status_cb of a test part. */
static json_t *
part_status_cb(void *arg)
{
	struct part *p = arg;

	p->calls++;
	return p->json != NULL ? json_loads(p->json, JSON_DECODE_ANY, NULL) :
				 NULL;
}

/* stats_metrics_cb of a test part. */
static void
part_metrics_cb(struct evbuffer *out, void *arg)
{
	struct part *p = arg;

	p->calls++;
	evbuffer_add_printf(out, "%s", p->text);
}

/* Add the parts P[0..N) to ST, in order. */
static void
add_parts(struct stats *st, struct part *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i].key != NULL || p[i].json != NULL)
			stats_add_status(st, p[i].key, part_status_cb, &p[i]);
		if (p[i].text != NULL)
			stats_add_metrics(st, part_metrics_cb, &p[i]);
	}
}

/* ST's /status as compact JSON with its keys in order. Caller frees. */
static char *
status_text(const struct stats *st)
{
	json_t *j = stats_status_json(st);
	char *s;

	assert_non_null(j);
	s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	assert_non_null(s);
	return s;
}

/* /status and /metrics take their parts in order, each of its own kind. */
static void
test_order(void **state)
{
	struct part parts[] = {
		{ NULL, "{\"ready\":true,\"requests\":5}", NULL, 0 },
		{ NULL, NULL, "a_total 1\n", 0 },
		{ "catalogs", "{\"warehouse\":{}}", NULL, 0 },
		{ "quiet", NULL, NULL, 0 }, /* nothing to say: left out */
		{ NULL, "[1,2]", NULL, 0 }, /* no object: nothing at the top */
		{ NULL, NULL, "b_total 2\n", 0 },
		{ "admin", "{\"imports\":0}", NULL, 0 },
		{ "store", "null", NULL, 0 },
	};
	struct stats st;
	char *s;
	size_t i;

	(void)state;
	memset(&st, 0, sizeof(st));
	add_parts(&st, parts, nitems(parts));
	s = status_text(&st);
	assert_string_equal(s,
	    "{\"ready\":true,\"requests\":5,\"catalogs\":{\"warehouse\":{}},"
	    "\"admin\":{\"imports\":0},\"store\":null}");
	free(s);
	s = stats_metrics_text(&st);
	assert_string_equal(s, "a_total 1\nb_total 2\n");
	free(s);
	/* Each part was asked once, by its own reader. */
	for (i = 0; i < nitems(parts); i++)
		assert_int_equal(parts[i].calls, 1);
	stats_clear(&st);
}

/* stats refresh hook of test_pick: counts its calls. */
static void
pick_refresh(void *arg)
{
	(*(int *)arg)++;
}

/*
 * Picking members of /status: the refresh once, then the parts under the
 * keys asked and those members of the top-level parts, in the parts'
 * order; a part under another key is never asked.
 */
static void
test_pick(void **state)
{
	struct part parts[] = {
		{ NULL, "{\"ready\":true,\"output\":{\"held_bytes\":7}}", NULL,
		    0 },
		{ NULL, "[1,2]", NULL, 0 }, /* no object: nothing taken */
		{ "catalogs", "{\"warehouse\":{}}", NULL, 0 },
		{ "cache", "{\"budget\":0}", NULL, 0 },
		{ "memo", "{\"entries\":3}", NULL, 0 },
	};
	static const char *const keys[] = { "memo", "output", "cache", NULL };
	struct stats st;
	int refreshed = 0;
	json_t *j;
	char *s;

	(void)state;
	memset(&st, 0, sizeof(st));
	add_parts(&st, parts, nitems(parts));
	st.refresh = pick_refresh;
	st.refresh_arg = &refreshed;
	j = stats_status_pick(&st, keys);
	assert_non_null(j);
	s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s,
	    "{\"output\":{\"held_bytes\":7},\"cache\":{\"budget\":0},"
	    "\"memo\":{\"entries\":3}}");
	free(s);
	json_decref(j);
	assert_int_equal(refreshed, 1);
	assert_int_equal(parts[0].calls, 1);
	assert_int_equal(parts[2].calls, 0);
	assert_int_equal(parts[3].calls, 1);
	assert_int_equal(parts[4].calls, 1);
	stats_clear(&st);
}

/* Nothing added: an empty object and an empty text; the counters alone. */
static void
test_empty(void **state)
{
	struct stats st;
	char *s;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.requests = 3;
	st.side[ROUTE_LAKEHOUSE].failures = 2;
	s = status_text(&st);
	assert_string_equal(s, "{}");
	free(s);
	s = stats_metrics_text(&st);
	assert_string_equal(s, "");
	free(s);
	stats_clear(&st);
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.side[ROUTE_LAKEHOUSE].failures, 2);
}

/*
 * Removing by argument drops that module's parts of both kinds and keeps
 * the rest in order; a removed part is never called again.
 */
static void
test_remove(void **state)
{
	static const struct {
		size_t remove; /* index into parts */
		const char *status;
		const char *metrics;
	} steps[] = {
		{ 1, "{\"a\":1,\"c\":3}", "x\nz\n" },
		{ 3, "{\"a\":1,\"c\":3}", "z\n" },
		{ 0, "{\"c\":3}", "z\n" },
		{ 2, "{}", "z\n" },
		{ 4, "{}", "" },
	};
	struct part parts[] = {
		{ "a", "1", NULL, 0 },
		{ "b", "2", "y\n", 0 }, /* one module, both kinds */
		{ "c", "3", NULL, 0 },
		{ NULL, NULL, "x\n", 0 },
		{ NULL, NULL, "z\n", 0 },
	};
	struct stats st;
	char *s;
	size_t i;
	int calls;

	(void)state;
	memset(&st, 0, sizeof(st));
	add_parts(&st, parts, nitems(parts));
	s = stats_metrics_text(&st);
	assert_string_equal(s, "y\nx\nz\n");
	free(s);
	for (i = 0; i < nitems(steps); i++) {
		calls = parts[steps[i].remove].calls;
		stats_remove(&st, &parts[steps[i].remove]);
		s = status_text(&st);
		assert_string_equal(s, steps[i].status);
		free(s);
		s = stats_metrics_text(&st);
		assert_string_equal(s, steps[i].metrics);
		free(s);
		assert_int_equal(parts[steps[i].remove].calls, calls);
	}
	assert_int_equal(st.nparts, 0);
	/* Parts added after a removal come last. */
	stats_add_status(&st, "again", part_status_cb, &parts[0]);
	s = status_text(&st);
	assert_string_equal(s, "{\"again\":1}");
	free(s);
	stats_clear(&st);
	assert_int_equal(st.nparts, 0);
	assert_null(st.parts);
}

/* Many parts: the list grows and keeps every key. */
static void
test_many(void **state)
{
	struct part parts[40];
	char keys[40][8];
	struct stats st;
	json_t *j;
	size_t i;

	(void)state;
	memset(&st, 0, sizeof(st));
	memset(parts, 0, sizeof(parts));
	for (i = 0; i < nitems(parts); i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
		parts[i].key = keys[i];
		parts[i].json = "true";
	}
	add_parts(&st, parts, nitems(parts));
	j = stats_status_json(&st);
	assert_int_equal(json_object_size(j), nitems(parts));
	assert_true(json_is_true(json_object_get(j, "k39")));
	json_decref(j);
	stats_clear(&st);
}

/* The text of ST's request families, as /metrics prints them. Caller frees. */
static char *
requests_text(const struct stats *st)
{
	struct evbuffer *b = evbuffer_new();
	size_t len;
	char *out;

	stats_requests_metrics(b, st);
	len = evbuffer_get_length(b);
	out = malloc(len + 1);
	evbuffer_remove(b, out, len);
	out[len] = '\0';
	evbuffer_free(b);
	return out;
}

/*
 * Answers by side and code, their latencies in cumulative buckets in
 * seconds, the catalog's part only when one was asked.
 */
static void
test_answers(void **state)
{
	struct stats st;
	char *t;

	(void)state;
	memset(&st, 0, sizeof(st));
	stats_answer(&st, ROUTE_LAKEHOUSE, 200, 800, 600); /* 0.8 ms */
	stats_answer(&st, ROUTE_LAKEHOUSE, 200, 30000, 25000); /* 30 ms */
	stats_answer(&st, ROUTE_LAKEHOUSE, 503, 20000000, 19000000); /* 20 s */
	stats_answer(&st, ROUTE_WAREHOUSE, 200, 100, -1); /* a cache hit */
	stats_answer(&st, STATS_FLOE, 404, 50, -1);
	stats_answer(&st, STATS_FLOE, 99, 50, -1); /* no such code */
	stats_answer(&st, 7, 200, 50, -1); /* no such side: floe's */
	t = requests_text(&st);
	assert_non_null(strstr(t,
	    "floe_requests_total{side=\"lakehouse\",code=\"200\"} 2\n"));
	assert_non_null(strstr(t,
	    "floe_requests_total{side=\"lakehouse\",code=\"503\"} 1\n"));
	assert_non_null(
	    strstr(t, "floe_requests_total{side=\"floe\",code=\"404\"} 1\n"));
	assert_non_null(
	    strstr(t, "floe_requests_total{side=\"floe\",code=\"200\"} 1\n"));
	assert_null(strstr(t, "code=\"99\""));
	assert_null(strstr(t, "side=\"warehouse\",code=\"404\""));
	assert_non_null(strstr(t,
	    "floe_request_duration_seconds_bucket{side="
	    "\"lakehouse\",le=\"0.001\"} 1\n"));
	assert_non_null(strstr(t,
	    "floe_request_duration_seconds_bucket{side="
	    "\"lakehouse\",le=\"0.05\"} 2\n"));
	assert_non_null(strstr(t,
	    "floe_request_duration_seconds_bucket{side="
	    "\"lakehouse\",le=\"10\"} 2\n"));
	assert_non_null(strstr(t,
	    "floe_request_duration_seconds_bucket{side="
	    "\"lakehouse\",le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(t,
	    "floe_request_duration_seconds_sum{side=\"lakehouse\"} "
	    "20.030800\n"));
	assert_non_null(strstr(t,
	    "floe_request_duration_seconds_count{side=\"floe\"} 3\n"));
	assert_non_null(strstr(t,
	    "floe_upstream_request_duration_seconds_"
	    "count{side=\"lakehouse\"} 3\n"));
	assert_non_null(strstr(t,
	    "floe_upstream_request_duration_seconds_"
	    "count{side=\"warehouse\"} 0\n"));
	assert_null(strstr(t,
	    "floe_upstream_request_duration_seconds_count{"
	    "side=\"floe\"}"));
	assert_non_null(strstr(t,
	    "# TYPE floe_request_duration_seconds "
	    "histogram\n"));
	free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
