/*
 * floe: test_workers.c -- the memory a master shares with its workers: a
 * worker's wave counts land in its slot (a full table counts the rest as
 * lost), a copy of its counters is read whole, the sightings ring keeps
 * order and refuses what does not fit, a write's generation moves its
 * object's (and only its bucket's) and the all-objects bump moves every
 * one; a worker maps what the master made.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "proxy/stats.h"
#include "proxy/workers.h"

/* The entry of WAVE in slot S, or NULL. */
static const struct workers_wave *
find(const struct workers_slot *s, uint32_t wave)
{
	size_t i;

	for (i = 0; i < WORKERS_WAVES; i++)
		if (s->waves[i].wave1 == wave + 1)
			return &s->waves[i];
	return NULL;
}

static void
test_counts(void **state __unused)
{
	struct workers *w;
	const struct workers_wave *e;
	int fd;
	uint32_t i;

	assert_non_null(w = workers_create(2, &fd));
	assert_int_equal(w->n, 2);
	workers_count(&w->slot[1], 7, 3, ROUTE_LAKEHOUSE, true);
	workers_count(&w->slot[1], 7, 3, ROUTE_LAKEHOUSE, false);
	workers_count(&w->slot[1], 7, 4, ROUTE_WAREHOUSE, false);
	/* Wave 0 is a wave like any other. */
	workers_count(&w->slot[1], 0, 1, ROUTE_WAREHOUSE, true);
	assert_non_null(e = find(&w->slot[1], 7));
	assert_int_equal(e->reads[ROUTE_LAKEHOUSE], 2);
	assert_int_equal(e->errors[ROUTE_LAKEHOUSE], 1);
	assert_int_equal(e->reads[ROUTE_WAREHOUSE], 1);
	assert_int_equal(e->errors[ROUTE_WAREHOUSE], 0);
	assert_int_equal(e->state, 4);
	assert_non_null(e = find(&w->slot[1], 0));
	assert_int_equal(e->errors[ROUTE_WAREHOUSE], 1);
	assert_null(find(&w->slot[0], 7));
	/* A full table: the reads of one more wave are counted as lost. */
	for (i = 100; i < 100 + WORKERS_WAVES - 2; i++)
		workers_count(&w->slot[1], i, 1, ROUTE_LAKEHOUSE, false);
	assert_int_equal(w->slot[1].waves_lost, 0);
	workers_count(&w->slot[1], 5000, 1, ROUTE_LAKEHOUSE, false);
	assert_int_equal(w->slot[1].waves_lost, 1);
	assert_null(find(&w->slot[1], 5000));
	workers_count(&w->slot[1], 7, 4, ROUTE_LAKEHOUSE, false);
	assert_int_equal(find(&w->slot[1], 7)->reads[ROUTE_LAKEHOUSE], 3);
	workers_free(w);
	close(fd);
}

static void
test_publish(void **state __unused)
{
	struct workers *w, *v;
	struct stats st, got;
	struct cache_stats cs = { .hits = 5, .bytes = 100 }, gcs;
	struct memo_stats ms = { .bytes = 7000,
		.entries = 3,
		.budget = 1 << 20 };
	struct memo_stats gms;
	uint64_t conns, held;
	int fd;

	assert_non_null(w = workers_create(1, &fd));
	memset(&st, 0, sizeof(st));
	st.requests = 42;
	st.side[ROUTE_LAKEHOUSE].errors_5xx = 3;
	stats_answer(&st, ROUTE_LAKEHOUSE, 503, 1500, 1000);
	workers_publish(&w->slot[0], &st, &cs, &ms, 9, 4096);
	assert_int_equal(w->slot[0].seq % 2, 0);
	/* A worker maps the region on the master's descriptor. */
	assert_non_null(v = workers_attach(dup(fd)));
	assert_int_equal(v->n, 1);
	assert_true(workers_read(v, 0, &got, &gcs, &gms, &conns, &held));
	assert_int_equal(got.requests, 42);
	assert_int_equal(got.side[ROUTE_LAKEHOUSE].errors_5xx, 3);
	assert_int_equal(got.codes[ROUTE_LAKEHOUSE][503 - STATS_CODE_MIN], 1);
	assert_int_equal(got.duration[ROUTE_LAKEHOUSE].count, 1);
	assert_int_equal(gcs.hits, 5);
	assert_int_equal(gms.bytes, 7000);
	assert_int_equal(gms.entries, 3);
	assert_int_equal(gms.budget, 1 << 20);
	assert_int_equal(conns, 9);
	assert_int_equal(held, 4096);
	/* Sums: two copies add up. */
	stats_counters_add(&got, &st);
	assert_int_equal(got.requests, 84);
	assert_int_equal(got.codes[ROUTE_LAKEHOUSE][503 - STATS_CODE_MIN], 2);
	stats_counters_zero(&got);
	assert_int_equal(got.requests, 0);
	/* A copy being written (odd sequence) is not read. */
	w->slot[0].seq++;
	assert_false(workers_read(v, 0, &got, &gcs, &gms, &conns, &held));
	workers_free(v);
	workers_free(w);
	close(fd);
}

static void
test_sights(void **state __unused)
{
	struct workers *w;
	struct readers_item *in, *out;
	size_t i, n;
	int fd;

	assert_non_null(w = workers_create(1, &fd));
	in = calloc(WORKERS_SIGHTS + 10, sizeof(*in));
	out = calloc(WORKERS_SIGHTS + 10, sizeof(*out));
	assert_non_null(in);
	assert_non_null(out);
	for (i = 0; i < WORKERS_SIGHTS + 10; i++) {
		in[i].keylen = (size_t)snprintf((char *)in[i].key,
		    sizeof(in[i].key), "k%zu", i);
		in[i].r.count = i + 1;
	}
	assert_int_equal(workers_sights_put(&w->slot[0], in, 10), 10);
	/* The rest fits but for 10. */
	assert_int_equal(workers_sights_put(&w->slot[0], in + 10,
			     WORKERS_SIGHTS),
	    WORKERS_SIGHTS - 10);
	n = workers_sights_peek(w, 0, out, 4);
	assert_int_equal(n, 4);
	assert_memory_equal(out[3].key, "k3", 2);
	/* Peeked, not taken: the same again. */
	assert_int_equal(workers_sights_peek(w, 0, out, 4), 4);
	workers_sights_done(w, 0, 4);
	n = workers_sights_peek(w, 0, out, WORKERS_SIGHTS + 10);
	assert_int_equal(n, WORKERS_SIGHTS - 4);
	assert_int_equal(out[0].r.count, 5);
	workers_sights_done(w, 0, n);
	/* Emptied: the ring takes a whole ring again, wrapping around. */
	assert_int_equal(workers_sights_put(&w->slot[0], in, WORKERS_SIGHTS),
	    WORKERS_SIGHTS);
	n = workers_sights_peek(w, 0, out, WORKERS_SIGHTS);
	assert_int_equal(n, WORKERS_SIGHTS);
	assert_int_equal(out[WORKERS_SIGHTS - 1].r.count, WORKERS_SIGHTS);
	free(in);
	free(out);
	workers_free(w);
	close(fd);
}

static void
test_objgen(void **state __unused)
{
	struct workers *w;
	uint64_t a0, b0;
	int fd;

	assert_non_null(w = workers_create(1, &fd));
	a0 = workers_objgen(w,
	    "db\x1e"
	    "a",
	    4);
	b0 = workers_objgen(w,
	    "db\x1e"
	    "b",
	    4);
	workers_objgen_bump(w,
	    "db\x1e"
	    "a",
	    4);
	assert_int_equal(workers_objgen(w,
			     "db\x1e"
			     "a",
			     4),
	    a0 + 1);
	/* Another object: moved only if it shares the bucket (not these). */
	assert_int_equal(workers_objgen(w,
			     "db\x1e"
			     "b",
			     4),
	    b0);
	workers_objgen_bump_all(w);
	assert_int_equal(workers_objgen(w,
			     "db\x1e"
			     "a",
			     4),
	    a0 + 2);
	assert_int_equal(workers_objgen(w,
			     "db\x1e"
			     "b",
			     4),
	    b0 + 1);
	workers_free(w);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_publish),
		cmocka_unit_test(test_sights),
		cmocka_unit_test(test_objgen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
