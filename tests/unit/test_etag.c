/*
 * floe: test_etag.c -- minting floe's ETags and translating If-None-Match
 * back: round trips, weak tags, side and version binding, lists, "*",
 * foreign and malformed tags, length limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "proxy/etag.h"

/* Minting from valid and invalid upstream tags. */
static void
test_mint(void **state __unused)
{
	static const struct {
		const char *up;
		enum route_side side;
		uint64_t version;
		const char *want; /* NULL: refused */
	} cases[] = {
		{ "\"abc\"", ROUTE_WAREHOUSE, 1, "\"fl1.w.1.abc\"" },
		{ "\"abc\"", ROUTE_LAKEHOUSE, 255, "\"fl1.l.ff.abc\"" },
		{ "W/\"v-1\"", ROUTE_LAKEHOUSE, 0x1234,
		    "W/\"fl1.l.1234.v-1\"" },
		{ "\"\"", ROUTE_WAREHOUSE, 0, "\"fl1.w.0.\"" },
		{ "  \"a b\"  ", ROUTE_WAREHOUSE, 2, "\"fl1.w.2.a b\"" },
		{ "\"fl1.w.1.x\"", ROUTE_WAREHOUSE, 3,
		    "\"fl1.w.3.fl1.w.1.x\"" },
		{ "abc", ROUTE_WAREHOUSE, 1, NULL },
		{ "\"abc", ROUTE_WAREHOUSE, 1, NULL },
		{ "\"a\"b\"", ROUTE_WAREHOUSE, 1, NULL },
		{ "\"a\"x", ROUTE_WAREHOUSE, 1, NULL },
		{ "w/\"a\"", ROUTE_WAREHOUSE, 1, NULL },
		{ "W/", ROUTE_WAREHOUSE, 1, NULL },
		{ "\"a\tb\"", ROUTE_WAREHOUSE, 1, NULL },
		{ "\"a\x7f\"", ROUTE_WAREHOUSE, 1, NULL },
		{ "", ROUTE_WAREHOUSE, 1, NULL },
		{ "\"a\", \"b\"", ROUTE_WAREHOUSE, 1, NULL },
	};
	char out[ETAG_MAX];
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		int rc = etag_mint(cases[i].up, strlen(cases[i].up),
		    cases[i].side, cases[i].version, out, sizeof(out));

		if (cases[i].want == NULL) {
			assert_int_equal(rc, -1);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_string_equal(out, cases[i].want);
	}
}

/*
 * The opaque part is scanned 16 bytes at a time: every byte value at
 * every place of tags of 0 to 40 bytes (a block, a block and a tail, a
 * tail alone). A control byte, DEL or '"' inside is refused; bytes from
 * 0x80 up and the rest are kept as they came.
 */
static void
test_mint_every_byte(void **state __unused)
{
	char up[64], out[ETAG_MAX], want[ETAG_MAX];
	size_t len, k;
	unsigned c;
	int rc;
	bool ok;

	for (len = 0; len <= 40; len++)
		for (k = 0; k < len; k++)
			for (c = 0; c < 256; c++) {
				up[0] = '"';
				memset(up + 1, 'a', len);
				up[1 + k] = (char)c;
				up[1 + len] = '"';
				rc = etag_mint(up, len + 2, ROUTE_WAREHOUSE, 7,
				    out, sizeof(out));
				ok = c != '"' && c >= 0x20 && c != 0x7f;
				if (rc != (ok ? 0 : -1))
					fail_msg("byte %#x at %zu of %zu: %d",
					    c, k, len, rc);
				if (!ok)
					continue;
				snprintf(want, sizeof(want), "\"fl1.w.7.%.*s\"",
				    (int)len, up + 1);
				assert_string_equal(out, want);
			}
}

/* A minted tag must fit ETAG_MAX and OUT. */
static void
test_mint_too_long(void **state __unused)
{
	char up[ETAG_MAX + 8], out[ETAG_MAX * 2];
	size_t n;

	/* Fits exactly: ETAG_MAX - 1 bytes of minted tag. */
	n = ETAG_MAX - 1 - strlen("\"fl1.w.1.\"") + 2;
	memset(up, 'a', n);
	up[0] = up[n - 1] = '"';
	assert_int_equal(etag_mint(up, n, ROUTE_WAREHOUSE, 1, out, sizeof(out)),
	    0);
	assert_int_equal(strlen(out), ETAG_MAX - 1);
	/* One byte more is refused, whatever room OUT has. */
	memset(up, 'a', n + 1);
	up[0] = up[n] = '"';
	assert_int_equal(etag_mint(up, n + 1, ROUTE_WAREHOUSE, 1, out,
			     sizeof(out)),
	    -1);
	/* A small OUT is refused. */
	assert_int_equal(etag_mint("\"abc\"", 5, ROUTE_WAREHOUSE, 1, out, 8),
	    -1);
}

/*
 * The last tag minted is remembered with what it was minted from: the
 * same again gives the same, anything else (tag, side, version) its own,
 * and a small OUT is refused either way.
 */
static void
test_mint_again(void **state __unused)
{
	char a[ETAG_MAX], b[ETAG_MAX], out[ETAG_MAX];

	assert_int_equal(etag_mint("\"v1\"", 4, ROUTE_WAREHOUSE, 5, a,
			     sizeof(a)),
	    0);
	assert_string_equal(a, "\"fl1.w.5.v1\"");
	assert_int_equal(etag_mint("\"v1\"", 4, ROUTE_WAREHOUSE, 5, out,
			     sizeof(out)),
	    0);
	assert_string_equal(out, a);
	assert_int_equal(etag_mint("\"v1\"", 4, ROUTE_WAREHOUSE, 5, out,
			     strlen(a)),
	    -1);
	assert_int_equal(etag_mint("\"v1\"", 4, ROUTE_WAREHOUSE, 5, out,
			     strlen(a) + 1),
	    0);
	assert_string_equal(out, a);
	assert_int_equal(etag_mint("\"v1\"", 4, ROUTE_LAKEHOUSE, 5, b,
			     sizeof(b)),
	    0);
	assert_string_equal(b, "\"fl1.l.5.v1\"");
	assert_int_equal(etag_mint("\"v1\"", 4, ROUTE_LAKEHOUSE, 6, b,
			     sizeof(b)),
	    0);
	assert_string_equal(b, "\"fl1.l.6.v1\"");
	assert_int_equal(etag_mint("\"v2\"", 4, ROUTE_LAKEHOUSE, 6, b,
			     sizeof(b)),
	    0);
	assert_string_equal(b, "\"fl1.l.6.v2\"");
	assert_int_equal(etag_mint("W/\"v2\"", 6, ROUTE_LAKEHOUSE, 6, b,
			     sizeof(b)),
	    0);
	assert_string_equal(b, "W/\"fl1.l.6.v2\"");
	/* Not an entity-tag: refused, and the last one still holds. */
	assert_int_equal(etag_mint("v2", 2, ROUTE_LAKEHOUSE, 6, b, sizeof(b)),
	    -1);
	assert_int_equal(etag_mint("\"v1\"", 4, ROUTE_WAREHOUSE, 5, out,
			     sizeof(out)),
	    0);
	assert_string_equal(out, a);
}

/* What floe mints comes back as the upstream tag. */
static void
test_round_trip(void **state __unused)
{
	static const char *ups[] = { "\"abc\"", "W/\"abc\"", "\"\"", "\"0x1F\"",
		"\"x:y/z=\"" };
	char minted[ETAG_MAX], back[ETAG_MAX];
	size_t i;
	int n;

	for (i = 0; i < nitems(ups); i++) {
		assert_int_equal(etag_mint(ups[i], strlen(ups[i]),
				     ROUTE_LAKEHOUSE, 42, minted,
				     sizeof(minted)),
		    0);
		n = etag_unmint(minted, strlen(minted), ROUTE_LAKEHOUSE, 42,
		    back, sizeof(back));
		assert_int_equal(n, (int)strlen(ups[i]));
		assert_string_equal(back, ups[i]);
	}
}

/* Side, version, foreign tags, lists, "*" and malformed values. */
static void
test_unmint(void **state __unused)
{
	static const struct {
		const char *inm;
		enum route_side side;
		uint64_t version;
		int rc; /* -1, 0, or >0 */
		const char *want; /* when rc > 0 */
	} cases[] = {
		/* Kept. */
		{ "\"fl1.w.7.abc\"", ROUTE_WAREHOUSE, 7, 1, "\"abc\"" },
		{ "W/\"fl1.l.a.abc\"", ROUTE_LAKEHOUSE, 10, 1, "W/\"abc\"" },
		{ " \t\"fl1.w.7.abc\" ", ROUTE_WAREHOUSE, 7, 1, "\"abc\"" },
		/* Wrong side. */
		{ "\"fl1.l.7.abc\"", ROUTE_WAREHOUSE, 7, 0, NULL },
		{ "\"fl1.w.7.abc\"", ROUTE_LAKEHOUSE, 7, 0, NULL },
		/* Older (or other) version. */
		{ "\"fl1.w.6.abc\"", ROUTE_WAREHOUSE, 7, 0, NULL },
		{ "\"fl1.w.70.abc\"", ROUTE_WAREHOUSE, 7, 0, NULL },
		{ "\"fl1.w.07.abc\"", ROUTE_WAREHOUSE, 7, 0, NULL },
		/* Foreign tags. */
		{ "\"abc\"", ROUTE_WAREHOUSE, 7, 0, NULL },
		{ "\"fl2.w.7.abc\"", ROUTE_WAREHOUSE, 7, 0, NULL },
		{ "\"fl1.w.7\"", ROUTE_WAREHOUSE, 7, 0, NULL },
		/* Lists. */
		{ "\"fl1.w.7.a\", \"fl1.l.7.b\", W/\"fl1.w.7.c\"",
		    ROUTE_WAREHOUSE, 7, 1, "\"a\", W/\"c\"" },
		{ "\"x\",\"fl1.w.7.a\"", ROUTE_WAREHOUSE, 7, 1, "\"a\"" },
		{ "\"fl1.w.7.a\" , ,\"fl1.w.7.b\",", ROUTE_WAREHOUSE, 7, 1,
		    "\"a\", \"b\"" },
		{ "\"fl1.w.6.a\", \"zz\"", ROUTE_WAREHOUSE, 7, 0, NULL },
		{ "\"fl1.w.7.a,b\"", ROUTE_WAREHOUSE, 7, 1, "\"a,b\"" },
		/* Any. */
		{ "*", ROUTE_WAREHOUSE, 7, 1, "*" },
		{ " * ", ROUTE_LAKEHOUSE, 1, 1, "*" },
		/* Malformed. */
		{ "", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "  ", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "abc", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "\"fl1.w.7.a", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "\"fl1.w.7.a\" \"b\"", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "\"fl1.w.7.a\"x", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "*, \"fl1.w.7.a\"", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "\"a\", *", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "\"fl1.w.7.a\x01\"", ROUTE_WAREHOUSE, 7, -1, NULL },
		{ "w/\"fl1.w.7.a\"", ROUTE_WAREHOUSE, 7, -1, NULL },
	};
	char out[ETAG_MAX];
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		int rc = etag_unmint(cases[i].inm, strlen(cases[i].inm),
		    cases[i].side, cases[i].version, out, sizeof(out));

		if (cases[i].rc <= 0) {
			assert_int_equal(rc, cases[i].rc);
			continue;
		}
		assert_int_equal(rc, (int)strlen(cases[i].want));
		assert_string_equal(out, cases[i].want);
	}
}

/* The largest version round-trips and binds exactly. */
static void
test_unmint_big_version(void **state __unused)
{
	char minted[ETAG_MAX], out[ETAG_MAX];

	assert_int_equal(etag_mint("\"e\"", 3, ROUTE_WAREHOUSE, UINT64_MAX,
			     minted, sizeof(minted)),
	    0);
	assert_string_equal(minted, "\"fl1.w.ffffffffffffffff.e\"");
	assert_int_equal(etag_unmint(minted, strlen(minted), ROUTE_WAREHOUSE,
			     UINT64_MAX, out, sizeof(out)),
	    3);
	assert_int_equal(etag_unmint(minted, strlen(minted), ROUTE_WAREHOUSE,
			     UINT64_MAX - 1, out, sizeof(out)),
	    0);
}

/* A translation that does not fit OUT is refused. */
static void
test_unmint_too_long(void **state __unused)
{
	const char *inm = "\"fl1.w.1.abcdef\", \"fl1.w.1.ghijkl\"";
	char out[16];

	/* The first fits ("abcdef" quoted is 8 bytes), the second does not. */
	assert_int_equal(etag_unmint(inm, strlen(inm), ROUTE_WAREHOUSE, 1, out,
			     sizeof(out)),
	    -1);
	assert_int_equal(etag_unmint(inm, 16, ROUTE_WAREHOUSE, 1, out,
			     sizeof(out)),
	    8);
	assert_string_equal(out, "\"abcdef\"");
	assert_int_equal(etag_unmint("*", 1, ROUTE_WAREHOUSE, 1, out, 1), -1);
}

/* Run every table. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mint),
		cmocka_unit_test(test_mint_every_byte),
		cmocka_unit_test(test_mint_too_long),
		cmocka_unit_test(test_mint_again),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_unmint),
		cmocka_unit_test(test_unmint_big_version),
		cmocka_unit_test(test_unmint_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
