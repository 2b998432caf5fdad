/*
 * floe: test_cache.c -- the LoadTable cache: hits and misses, TTL with and
 * without an ETag to revalidate with, the byte budget in LRU order,
 * dropping one object's answers and nothing else, the counters, and that
 * a forked child does not get the large entries (lib/xmalloc.h).
 */
#include <sys/wait.h>

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

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"

#define T0 1700000000000LL

/* KEY = OBJ "\0" VARIANT, as request.c builds them. */
static size_t
mkkey(char *buf, const char *obj, const char *variant)
{
	size_t o = strlen(obj), v = strlen(variant);

	memcpy(buf, obj, o);
	buf[o] = '\0';
	memcpy(buf + o + 1, variant, v);
	return o + 1 + v;
}

static void
put(struct cache *c, const char *obj, const char *variant, const char *body,
    const char *up_etag, int64_t now)
{
	struct cache_entry e = { 200, "X-Floe-Target: lakehouse\r\n", 26, body,
		strlen(body), "\"fl1.l.1.e\"", up_etag, 0 };
	char key[256];
	size_t n = mkkey(key, obj, variant);

	cache_put(c, key, n, strlen(obj), &e, now);
}

static const struct cache_entry *
get(struct cache *c, const char *obj, const char *variant, int64_t now,
    bool *expired)
{
	char key[256];
	size_t n = mkkey(key, obj, variant);

	return cache_get(c, key, n, now, expired);
}

static void
test_hit_miss(void **state __unused)
{
	struct cache *c = cache_new(1 << 20, 60000);
	const struct cache_entry *e;
	struct cache_stats st;
	bool expired;

	assert_null(get(c, "db\x1et", "l1", T0, &expired));
	put(c, "db\x1et", "l1", "{\"a\":1}", "\"u1\"", T0);
	e = get(c, "db\x1et", "l1", T0 + 10, &expired);
	assert_non_null(e);
	assert_false(expired);
	assert_string_equal(e->body, "{\"a\":1}");
	assert_int_equal(e->len, 7);
	assert_int_equal(e->status, 200);
	assert_memory_equal(e->headers, "X-Floe-Target: lakehouse\r\n", 26);
	assert_string_equal(e->etag, "\"fl1.l.1.e\"");
	assert_string_equal(e->up_etag, "\"u1\"");
	/* Another variant (side, version, identity) is another answer. */
	assert_null(get(c, "db\x1et", "w1", T0, &expired));
	/* Replacing keeps one entry. */
	put(c, "db\x1et", "l1", "{\"a\":2}", "\"u2\"", T0 + 20);
	e = get(c, "db\x1et", "l1", T0 + 30, &expired);
	assert_string_equal(e->body, "{\"a\":2}");
	cache_get_stats(c, &st);
	assert_int_equal(st.hits, 2);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.entries, 1);
	assert_true(st.bytes > 7);
	cache_free(c);
}

static void
test_ttl(void **state __unused)
{
	struct cache *c = cache_new(1 << 20, 1000);
	const struct cache_entry *e;
	struct cache_stats st;
	bool expired;
	char key[64];
	size_t n;

	/* With an upstream ETag: expired, to be revalidated, then renewed. */
	put(c, "db\x1et", "v", "{}", "\"u\"", T0);
	e = get(c, "db\x1et", "v", T0 + 999, &expired);
	assert_non_null(e);
	assert_false(expired);
	e = get(c, "db\x1et", "v", T0 + 1000, &expired);
	assert_non_null(e);
	assert_true(expired);
	n = mkkey(key, "db\x1et", "v");
	cache_renew(c, key, n, T0 + 1000);
	e = get(c, "db\x1et", "v", T0 + 1500, &expired);
	assert_false(expired);
	/* Without one: gone at the TTL. */
	put(c, "db\x1eu", "v", "{}", "", T0);
	assert_null(get(c, "db\x1eu", "v", T0 + 1000, &expired));
	assert_false(expired);
	cache_get_stats(c, &st);
	assert_int_equal(st.revalidations, 1);
	assert_int_equal(st.expirations, 1);
	assert_int_equal(st.entries, 1);
	cache_drop(c, key, n);
	assert_null(get(c, "db\x1et", "v", T0 + 1500, &expired));
	cache_free(c);
}

static void
test_budget(void **state __unused)
{
	char body[500], name[16];
	struct cache *c = cache_new(8192, 60000);
	struct cache_stats st;
	bool expired;
	int i;

	memset(body, 'x', sizeof(body) - 1);
	body[sizeof(body) - 1] = '\0';
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "db\x1et%d", i);
		put(c, name, "v", body, "", T0);
	}
	cache_get_stats(c, &st);
	assert_true(st.bytes <= 8192);
	assert_true(st.evictions > 0);
	assert_int_equal(st.entries + st.evictions, 20);
	/* The oldest went first; the newest stay. */
	assert_null(get(c, "db\x1et0", "v", T0, &expired));
	assert_non_null(get(c, "db\x1et19", "v", T0, &expired));
	/* A use moves an entry to the front: t19 survives what comes next. */
	for (i = 20; i < 40; i++) {
		snprintf(name, sizeof(name), "db\x1et%d", i);
		assert_non_null(get(c, "db\x1et19", "v", T0, &expired));
		put(c, name, "v", body, "", T0);
	}
	assert_non_null(get(c, "db\x1et19", "v", T0, &expired));
	assert_null(get(c, "db\x1et20", "v", T0, &expired));
	/* An answer over an eighth of the budget is not stored. */
	{
		char *big = malloc(2048);

		memset(big, 'y', 2047);
		big[2047] = '\0';
		put(c,
		    "db\x1e"
		    "big",
		    "v", big, "", T0);
		assert_null(get(c,
		    "db\x1e"
		    "big",
		    "v", T0, &expired));
		free(big);
	}
	/* A smaller budget evicts at once. */
	cache_configure(c, 2048, 60000);
	cache_get_stats(c, &st);
	assert_true(st.bytes <= 2048);
	assert_true(st.entries >= 1);
	cache_free(c);
}

static void
test_drop_object(void **state __unused)
{
	struct cache *c = cache_new(1 << 20, 60000);
	struct cache_stats st;
	bool expired;

	put(c, "db\x1et", "w1", "{}", "", T0);
	put(c, "db\x1et", "l2", "{}", "", T0);
	put(c, "db\x1et", "l2-client-a", "{}", "", T0);
	put(c, "db\x1et2", "w1", "{}", "", T0);
	put(c, "db\x1es", "w1", "{}", "", T0);
	assert_int_equal(cache_drop_object(c, "db\x1et", 4), 3);
	assert_null(get(c, "db\x1et", "w1", T0, &expired));
	assert_null(get(c, "db\x1et", "l2-client-a", T0, &expired));
	/* A name that merely starts the same is another object. */
	assert_non_null(get(c, "db\x1et2", "w1", T0, &expired));
	assert_non_null(get(c, "db\x1es", "w1", T0, &expired));
	assert_int_equal(cache_drop_object(c, "db\x1enone", 7), 0);
	cache_clear(c);
	cache_get_stats(c, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.invalidations, 5);
	cache_free(c);
}

static void
test_off(void **state __unused)
{
	struct cache *c = cache_new(0, 60000);
	bool expired;

	assert_false(cache_is_on(c));
	put(c, "db\x1et", "v", "{}", "", T0);
	assert_null(get(c, "db\x1et", "v", T0, &expired));
	cache_free(c);
	cache_free(NULL);
}

/*
 * Whether a forked child reads C at P: it exits 0 if it reads C, 2 if it
 * reads another byte, and dies of SIGSEGV if P is not mapped in it.
 */
static bool
child_reads(const volatile char *p, char c)
{
	pid_t pid;
	int st;

	assert_true((pid = fork()) != -1);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler, if any */
		_exit(*p == c ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st))
		assert_int_not_equal(WEXITSTATUS(st), 2);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * A block of XMALLOC_NOFORK_MIN bytes or more is a mapping of its own
 * that a forked child does not get; a smaller one is malloc's, which it
 * does. A large cache entry is such a mapping: a fork's stall does not
 * grow with it.
 */
static void
test_nofork(void **state __unused)
{
	struct cache *c = cache_new(8 << 20, 60000);
	const struct cache_entry *e;
	char *small, *big, *body;
	bool expired;

	small = xmalloc_nofork(XMALLOC_NOFORK_MIN - 1);
	big = xmalloc_nofork(XMALLOC_NOFORK_MIN);
	assert_false(xnofork_mapped(small));
	assert_true(xnofork_mapped(big));
	memset(small, 's', XMALLOC_NOFORK_MIN - 1);
	memset(big, 'b', XMALLOC_NOFORK_MIN);
	assert_true(child_reads(small + XMALLOC_NOFORK_MIN - 2, 's'));
	assert_false(child_reads(big, 'b'));
	assert_false(child_reads(big + XMALLOC_NOFORK_MIN - 1, 'b'));
	assert_int_equal(big[XMALLOC_NOFORK_MIN - 1], 'b');
	xfree_nofork(small);
	xfree_nofork(big);
	xfree_nofork(NULL);

	body = xmalloc(256 << 10);
	memset(body, 'x', (256 << 10) - 1);
	body[(256 << 10) - 1] = '\0';
	put(c, "db.big", "", body, "", T0);
	put(c, "db.small", "", "{\"s\":1}", "", T0);
	free(body);
	assert_non_null(e = get(c, "db.big", "", T0, &expired));
	assert_int_equal(e->len, (256 << 10) - 1);
	assert_false(child_reads(e->body + e->len - 1, 'x'));
	assert_non_null(e = get(c, "db.small", "", T0, &expired));
	assert_true(child_reads(e->body, '{'));
	/* Dropped and cleared as before: valgrind and ASan see the frees. */
	assert_int_equal(cache_drop_object(c, "db.big", 6), 1);
	cache_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_miss),
		cmocka_unit_test(test_ttl),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_drop_object),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_nofork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
