/*
 * floe: test_units.c -- lib/units.c: every unit, the edges of each parser,
 * inputs that must be refused, and timestamps both ways.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "lib/shortcopy.h"
#include "lib/units.h"

/* One parser case: input, whether it parses, and the value it gives. */
struct case_u64 {
	const char *in;
	int rc;
	uint64_t want;
};

static const struct case_u64 durations[] = {
	{ "0", 0, 0 },
	{ "1", 0, 1000 },
	{ "90", 0, 90000 },
	{ "250ms", 0, 250 },
	{ "0ms", 0, 0 },
	{ "10s", 0, 10000 },
	{ "15m", 0, 900000 },
	{ "2h", 0, 7200000 },
	{ "7d", 0, 604800000 },
	{ "1w", 0, 604800000 },
	{ "2w", 0, 1209600000 },
	{ "007s", 0, 7000 },
	{ "18446744073709551615ms", 0, UINT64_MAX },
	{ "18446744073709551616ms", -1, 0 },
	{ "18446744073709551615", -1, 0 },
	{ "30500568904w", 0, 30500568904ULL * 604800000ULL },
	{ "18446744073709551", 0, 18446744073709551000ULL },
	{ "18446744073709552", -1, 0 },
	{ "30500568905w", -1, 0 },
	{ "", -1, 0 },
	{ "s", -1, 0 },
	{ "ms", -1, 0 },
	{ "-1s", -1, 0 },
	{ "+1s", -1, 0 },
	{ " 1s", -1, 0 },
	{ "1s ", -1, 0 },
	{ "1 s", -1, 0 },
	{ "7x", -1, 0 },
	{ "1.5h", -1, 0 },
	{ "1S", -1, 0 },
	{ "1M", -1, 0 },
	{ "1sec", -1, 0 },
	{ "1h30m", -1, 0 },
	{ "0x10", -1, 0 },
};

static const struct case_u64 sizes[] = {
	{ "0", 0, 0 },
	{ "512", 0, 512 },
	{ "512B", 0, 512 },
	{ "64k", 0, 65536 },
	{ "64kB", 0, 65536 },
	{ "16M", 0, 16777216 },
	{ "16MB", 0, 16777216 },
	{ "1G", 0, 1073741824 },
	{ "1GB", 0, 1073741824 },
	{ "17179869183G", 0, 17179869183ULL << 30 },
	{ "17179869184G", -1, 0 },
	{ "18446744073709551615", 0, UINT64_MAX },
	{ "18446744073709551616", -1, 0 },
	{ "", -1, 0 },
	{ "k", -1, 0 },
	{ "B", -1, 0 },
	{ "-1", -1, 0 },
	{ "1K", -1, 0 },
	{ "1m", -1, 0 },
	{ "1T", -1, 0 },
	{ "1KiB", -1, 0 },
	{ "1kb", -1, 0 },
	{ "1BB", -1, 0 },
	{ "1.5M", -1, 0 },
	{ "1M ", -1, 0 },
	{ " 1M", -1, 0 },
};

/* A ratio case. */
struct case_ratio {
	const char *in;
	int rc;
	double want;
};

static const struct case_ratio ratios[] = {
	{ "1%", 0, 0.01 },
	{ "0.5%", 0, 0.005 },
	{ "100%", 0, 1.0 },
	{ "0%", 0, 0.0 },
	{ "0.01", 0, 0.01 },
	{ "0", 0, 0.0 },
	{ "1", 0, 1.0 },
	{ "1.0", 0, 1.0 },
	{ "0.25", 0, 0.25 },
	{ "100.0%", 0, 1.0 },
	{ "101%", -1, 0 },
	{ "1.01", -1, 0 },
	{ "2", -1, 0 },
	{ "", -1, 0 },
	{ "%", -1, 0 },
	{ ".5", -1, 0 },
	{ "5.", -1, 0 },
	{ "-0.1", -1, 0 },
	{ "+0.1", -1, 0 },
	{ "1e-2", -1, 0 },
	{ "0x1", -1, 0 },
	{ "nan", -1, 0 },
	{ "inf", -1, 0 },
	{ " 0.1", -1, 0 },
	{ "0.1 ", -1, 0 },
	{ "1%%", -1, 0 },
	{ "1 %", -1, 0 },
	{ "0.1.2", -1, 0 },
};

/* A timestamp case: input, whether it parses, ms since the epoch. */
struct case_time {
	const char *in;
	int rc;
	int64_t want;
};

static const struct case_time times[] = {
	{ "1970-01-01T00:00:00Z", 0, 0 },
	{ "2026-11-29T06:00:00Z", 0, 1795932000000LL },
	{ "2026-11-29t06:00:00z", 0, 1795932000000LL },
	{ "2026-11-29 06:00:00Z", 0, 1795932000000LL },
	{ "2026-11-29T06:00:00+00:00", 0, 1795932000000LL },
	{ "2026-11-29T06:00:00-00:00", 0, 1795932000000LL },
	{ "2026-11-29T07:30:00+01:30", 0, 1795932000000LL },
	{ "2026-11-29T01:00:00-05:00", 0, 1795932000000LL },
	{ "2026-11-28T20:00:00-10:00", 0, 1795932000000LL },
	{ "2026-11-29T06:00:00.123Z", 0, 1795932000123LL },
	{ "2026-11-29T06:00:00.1Z", 0, 1795932000100LL },
	{ "2026-11-29T06:00:00.12Z", 0, 1795932000120LL },
	{ "2026-11-29T06:00:00.123456789Z", 0, 1795932000123LL },
	{ "2026-11-29T06:00:00.999999+00:00", 0, 1795932000999LL },
	{ "2024-02-29T00:00:00Z", 0, 1709164800000LL },
	{ "2000-02-29T00:00:00Z", 0, 951782400000LL },
	{ "1969-12-31T23:59:59.500Z", 0, -500 },
	{ "1900-01-01T00:00:00Z", 0, -2208988800000LL },
	{ "2016-12-31T23:59:60Z", 0, 1483228800000LL },
	{ "9999-12-31T23:59:59Z", 0, 253402300799000LL },
	{ "2023-02-29T00:00:00Z", -1, 0 },
	{ "1900-02-29T00:00:00Z", -1, 0 },
	{ "2026-04-31T00:00:00Z", -1, 0 },
	{ "2026-13-01T00:00:00Z", -1, 0 },
	{ "2026-00-01T00:00:00Z", -1, 0 },
	{ "2026-01-00T00:00:00Z", -1, 0 },
	{ "2026-01-01T24:00:00Z", -1, 0 },
	{ "2026-01-01T00:60:00Z", -1, 0 },
	{ "2026-01-01T00:00:61Z", -1, 0 },
	{ "2026-11-29T06:00:00", -1, 0 },
	{ "2026-11-29", -1, 0 },
	{ "2026-11-29T06:00Z", -1, 0 },
	{ "2026-11-29T06:00:00.Z", -1, 0 },
	{ "2026-11-29T06:00:00ZZ", -1, 0 },
	{ "2026-11-29T06:00:00Z ", -1, 0 },
	{ " 2026-11-29T06:00:00Z", -1, 0 },
	{ "2026-11-29T06:00:00+0100", -1, 0 },
	{ "2026-11-29T06:00:00+01", -1, 0 },
	{ "2026-11-29T06:00:00+24:00", -1, 0 },
	{ "2026-11-29T06:00:00+01:60", -1, 0 },
	{ "2026-11-29T06:00:00+01:00x", -1, 0 },
	{ "26-11-29T06:00:00Z", -1, 0 },
	{ "2026/11/29T06:00:00Z", -1, 0 },
	{ "2026-11-29X06:00:00Z", -1, 0 },
	{ "", -1, 0 },
};

/* A formatting case: ms and the text it gives. */
struct case_fmt {
	int64_t ms;
	const char *want;
};

static const struct case_fmt durfmt[] = {
	{ 0, "0s" },
	{ 1, "1ms" },
	{ 250, "250ms" },
	{ 1500, "1500ms" },
	{ 1000, "1s" },
	{ 90000, "90s" },
	{ 60000, "1m" },
	{ 900000, "15m" },
	{ 5400000, "90m" },
	{ 3600000, "1h" },
	{ 86400000, "1d" },
	{ 604800000, "7d" },
	{ 1209600000, "14d" },
	{ 90061001, "90061001ms" },
};

static const struct case_fmt timefmt[] = {
	{ 0, "1970-01-01T00:00:00.000Z" },
	{ 1795932000000LL, "2026-11-29T06:00:00.000Z" },
	{ 1795932000123LL, "2026-11-29T06:00:00.123Z" },
	{ 1709164800001LL, "2024-02-29T00:00:00.001Z" },
	{ -1, "1969-12-31T23:59:59.999Z" },
	{ -500, "1969-12-31T23:59:59.500Z" },
	{ 253402300799999LL, "9999-12-31T23:59:59.999Z" },
};

/* Every duration case gives its value or is refused. */
static void
test_duration(void **state __unused)
{
	uint64_t ms;
	size_t i;

	for (i = 0; i < nitems(durations); i++) {
		ms = 12345;
		if (units_duration(durations[i].in, &ms) != durations[i].rc)
			fail_msg("duration \"%s\": want rc %d", durations[i].in,
			    durations[i].rc);
		if (durations[i].rc == 0 && ms != durations[i].want)
			fail_msg("duration \"%s\": got %llu, want %llu",
			    durations[i].in, (unsigned long long)ms,
			    (unsigned long long)durations[i].want);
		if (durations[i].rc == -1)
			assert_int_equal(ms, 12345);
	}
	assert_int_equal(units_duration(NULL, &ms), -1);
}

/* Every size case gives its value or is refused. */
static void
test_size(void **state __unused)
{
	uint64_t b;
	size_t i;

	for (i = 0; i < nitems(sizes); i++) {
		b = 12345;
		if (units_size(sizes[i].in, &b) != sizes[i].rc)
			fail_msg("size \"%s\": want rc %d", sizes[i].in,
			    sizes[i].rc);
		if (sizes[i].rc == 0 && b != sizes[i].want)
			fail_msg("size \"%s\": got %llu, want %llu",
			    sizes[i].in, (unsigned long long)b,
			    (unsigned long long)sizes[i].want);
		if (sizes[i].rc == -1)
			assert_int_equal(b, 12345);
	}
	assert_int_equal(units_size(NULL, &b), -1);
}

/* Every ratio case gives its fraction or is refused. */
static void
test_ratio(void **state __unused)
{
	double r;
	size_t i;

	for (i = 0; i < nitems(ratios); i++) {
		r = -7.0;
		if (units_ratio(ratios[i].in, &r) != ratios[i].rc)
			fail_msg("ratio \"%s\": want rc %d", ratios[i].in,
			    ratios[i].rc);
		if (ratios[i].rc == 0 &&
		    (r < ratios[i].want - 1e-12 || r > ratios[i].want + 1e-12))
			fail_msg("ratio \"%s\": got %g, want %g", ratios[i].in,
			    r, ratios[i].want);
		if (ratios[i].rc == -1)
			assert_true(r == -7.0);
	}
	assert_int_equal(units_ratio(NULL, &r), -1);
}

/* Durations format in the largest exact unit and parse back. */
static void
test_format_duration(void **state __unused)
{
	char buf[32];
	uint64_t back;
	size_t i;

	for (i = 0; i < nitems(durfmt); i++) {
		units_format_duration((uint64_t)durfmt[i].ms, buf, sizeof(buf));
		assert_string_equal(buf, durfmt[i].want);
		assert_int_equal(units_duration(buf, &back), 0);
		assert_int_equal(back, (uint64_t)durfmt[i].ms);
	}
	/* Every parsed duration formats to a string that parses back. */
	for (i = 0; i < nitems(durations); i++) {
		uint64_t ms;

		if (durations[i].rc != 0)
			continue;
		assert_int_equal(units_duration(durations[i].in, &ms), 0);
		units_format_duration(ms, buf, sizeof(buf));
		assert_int_equal(units_duration(buf, &back), 0);
		assert_int_equal(back, ms);
	}
	/* A short buffer truncates and stays terminated. */
	units_format_duration(604800000, buf, 2);
	assert_string_equal(buf, "7");
}

/* Durations for people: the two largest units, rounded down. */
static void
test_format_human(void **state __unused)
{
	static const struct {
		int64_t ms;
		const char *out;
	} cases[] = {
		{ -5, "0s" },
		{ 0, "0s" },
		{ 999, "<1s" },
		{ 1000, "1s" },
		{ 59999, "59s" },
		{ 60000, "1m" },
		{ 900000, "15m" },
		{ 1000000, "16m 40s" },
		{ 3600000, "1h" },
		{ 86399999, "23h 59m" },
		{ 90061000, "1d 1h" },
	};
	char buf[32];
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		units_format_human(cases[i].ms, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].out);
	}
	units_format_human(1000000, buf, 4);
	assert_string_equal(buf, "16m");
}

/* Byte counts for people: binary units, one decimal, rounded down. */
static void
test_format_size(void **state __unused)
{
	static const struct {
		uint64_t bytes;
		const char *out;
	} cases[] = {
		{ 0, "0 B" },
		{ 1023, "1023 B" },
		{ 1024, "1.0 KiB" },
		{ 1535, "1.4 KiB" },
		{ 1536, "1.5 KiB" },
		{ 1048575, "1023.9 KiB" },
		{ 1048576, "1.0 MiB" },
		{ 16777216, "16.0 MiB" },
		{ 268435456, "256.0 MiB" },
		{ 3ULL << 30, "3.0 GiB" },
		{ 5ULL << 40, "5.0 TiB" },
		{ 2048ULL << 40, "2048.0 TiB" },
		{ UINT64_MAX, "16777215.9 TiB" },
	};
	char buf[32];
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		units_format_size(cases[i].bytes, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].out);
	}
	units_format_size(16777216, buf, 5);
	assert_string_equal(buf, "16.0");
}

/* Every timestamp case gives its ms or is refused. */
static void
test_time_parse(void **state __unused)
{
	int64_t ms;
	size_t i;

	for (i = 0; i < nitems(times); i++) {
		ms = 12345;
		if (units_time_parse(times[i].in, &ms) != times[i].rc)
			fail_msg("time \"%s\": want rc %d", times[i].in,
			    times[i].rc);
		if (times[i].rc == 0 && ms != times[i].want)
			fail_msg("time \"%s\": got %lld, want %lld",
			    times[i].in, (long long)ms,
			    (long long)times[i].want);
		if (times[i].rc == -1)
			assert_int_equal(ms, 12345);
	}
	assert_int_equal(units_time_parse(NULL, &ms), -1);
}

/* Timestamps format in UTC with milliseconds and parse back. */
static void
test_time_format(void **state __unused)
{
	char buf[32];
	int64_t back;
	size_t i;

	for (i = 0; i < nitems(timefmt); i++) {
		units_time_format(timefmt[i].ms, buf, sizeof(buf));
		assert_string_equal(buf, timefmt[i].want);
		assert_int_equal(units_time_parse(buf, &back), 0);
		assert_int_equal(back, timefmt[i].ms);
	}
	/* Every parsed timestamp survives format and parse. */
	for (i = 0; i < nitems(times); i++) {
		int64_t ms;

		if (times[i].rc != 0)
			continue;
		assert_int_equal(units_time_parse(times[i].in, &ms), 0);
		units_time_format(ms, buf, sizeof(buf));
		assert_int_equal(units_time_parse(buf, &back), 0);
		assert_int_equal(back, ms);
	}
}

/* The wall clock is in ms, after this code was written, and moves on. */
static void
test_now(void **state __unused)
{
	int64_t a, b;

	a = units_now_ms();
	b = units_now_ms();
	/* 2024-01-01T00:00:00Z and 2200-01-01T00:00:00Z */
	assert_true(a > 1704067200000LL);
	assert_true(a < 7258118400000LL);
	assert_true(b >= a);
}

/* Hex digits, every byte: 0-9, a-f and A-F have values, nothing else. */
static void
test_hexval(void **state __unused)
{
	const char *digits = "0123456789abcdef", *up = "0123456789ABCDEF";
	int c, want;

	for (c = 0; c < 256; c++) {
		want = -1;
		if (c != 0 && strchr(digits, c) != NULL)
			want = (int)(strchr(digits, c) - digits);
		else if (c != 0 && strchr(up, c) != NULL)
			want = (int)(strchr(up, c) - up);
		assert_int_equal(units_hexval(c), want);
	}
}

/* The monotonic clock moves forward, in microseconds. */
static void
test_mono_us(void **state __unused)
{
	int64_t a = units_mono_us(), b;

	usleep(2000);
	b = units_mono_us();
	assert_true(b - a >= 2000);
	assert_true(b - a < 2000000);
}

/* Decimal digits, no NUL, up to the largest uint64_t. */
static void
test_utoa(void **state __unused)
{
	static const struct {
		uint64_t v;
		const char *want;
	} tab[] = {
		{ 0, "0" },
		{ 7, "7" },
		{ 10, "10" },
		{ 3797, "3797" },
		{ UINT64_MAX, "18446744073709551615" },
	};
	char buf[24], want[24];
	uint64_t p, v, w, x = 88172645463325252ull;
	size_t i, n;
	int k;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		memset(buf, 'x', sizeof(buf));
		n = units_utoa(buf, tab[i].v);
		assert_int_equal(n, strlen(tab[i].want));
		assert_memory_equal(buf, tab[i].want, n);
		assert_int_equal(buf[n], 'x');
	}
	/* Each power of ten and its neighbours, and others, as printf. */
	for (p = 1, k = 0; k < 20; k++, p *= 10)
		for (v = p - 1; v <= p + 1; v++)
			for (i = 0; i < 2; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				w = i == 0 ? v : x >> (k * 3);
				memset(buf, 'x', sizeof(buf));
				n = units_utoa(buf, w);
				snprintf(want, sizeof(want), "%" PRIu64, w);
				assert_int_equal(n, strlen(want));
				assert_memory_equal(buf, want, n);
				assert_int_equal(buf[n], 'x');
			}
}

/* Timevals from ms and us; what is left of a limit. */
static void
test_timevals(void **state __unused)
{
	struct timeval tv;
	int64_t left, now = units_mono_us();

	tv = units_ms_tv(1500);
	assert_int_equal(tv.tv_sec, 1);
	assert_int_equal(tv.tv_usec, 500000);
	tv = units_ms_tv(0);
	assert_int_equal(tv.tv_sec, 0);
	assert_int_equal(tv.tv_usec, 0);
	tv = units_us_tv(2000001);
	assert_int_equal(tv.tv_sec, 2);
	assert_int_equal(tv.tv_usec, 1);
	tv = units_us_tv(-5);
	assert_int_equal(tv.tv_sec, 0);
	assert_int_equal(tv.tv_usec, 0);
	left = units_left_us(now, 1000);
	assert_true(left > 0 && left <= 1000000);
	left = units_left_us(now - 3000000, 1000);
	assert_true(left <= -2000000);
}

/*
 * short_copy of every length up to 40 (each of its ways: 1 to 3, 4 to 7,
 * 8 to 16 and memcpy) at every offset of 8: the N bytes, and not one
 * around them.
 */
static void
test_short_copy(void **state __unused)
{
	char src[64], dst[64], want[64];
	size_t n, off, i;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (char)('A' + i);
	for (n = 0; n <= 40; n++)
		for (off = 0; off < 8; off++) {
			memset(dst, '.', sizeof(dst));
			memset(want, '.', sizeof(want));
			memcpy(want + off, src + 3, n);
			short_copy(dst + off, src + 3, n);
			assert_memory_equal(dst, want, sizeof(dst));
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_ratio),
		cmocka_unit_test(test_format_duration),
		cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_time_format),
		cmocka_unit_test(test_now),
		cmocka_unit_test(test_hexval),
		cmocka_unit_test(test_mono_us),
		cmocka_unit_test(test_utoa),
		cmocka_unit_test(test_timevals),
		cmocka_unit_test(test_format_human),
		cmocka_unit_test(test_format_size),
		cmocka_unit_test(test_short_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
