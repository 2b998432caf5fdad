/*
 * floe: units.c -- the units floe.conf, floectl and the ledger speak:
 * durations ("15m"), sizes ("64k"), ratios ("1%") and RFC 3339 timestamps.
 * Every parser takes the whole string or nothing: no sign, no blanks, no
 * trailing text, no overflow.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/compat.h"
#include "lib/units.h"

/* A unit suffix and what one of it is worth (ms or bytes). */
struct units_unit {
	const char *name;
	uint64_t mult;
};

static const char *units_digits(const char *, uint64_t *);
static int units_scale(const struct units_unit *, size_t, const char *,
    uint64_t, uint64_t *);
static int units_fixed(const char *, int, int *);
static bool units_is_leap(int);

static const struct units_unit units_durations[] = {
	{ "ms", 1 },
	{ "s", 1000 },
	{ "m", 60 * 1000 },
	{ "h", 60 * 60 * 1000 },
	{ "d", 24 * 60 * 60 * 1000 },
	{ "w", 7 * 24 * 60 * 60 * 1000ULL },
	{ "", 1000 },
};

static const struct units_unit units_sizes[] = {
	{ "", 1 },
	{ "B", 1 },
	{ "k", 1024 },
	{ "kB", 1024 },
	{ "M", 1024 * 1024 },
	{ "MB", 1024 * 1024 },
	{ "G", 1024 * 1024 * 1024ULL },
	{ "GB", 1024 * 1024 * 1024ULL },
};

/*
 * Read a run of decimal digits into *v. Returns the first byte after it,
 * or NULL for no digits or a value past UINT64_MAX.
 */
static const char *
units_digits(const char *s, uint64_t *v)
{
	uint64_t n = 0;
	const char *p;

	for (p = s; *p >= '0' && *p <= '9'; p++) {
		if (n > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return NULL;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return NULL;
	*v = n;
	return p;
}

/* Set *out to N times the unit named UNIT in TABLE, refusing overflow. */
static int
units_scale(const struct units_unit *table, size_t n, const char *unit,
    uint64_t v, uint64_t *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(unit, table[i].name) != 0)
			continue;
		if (v > UINT64_MAX / table[i].mult)
			return -1;
		*out = v * table[i].mult;
		return 0;
	}
	return -1;
}

/* Parse a duration; a bare number is seconds. */
int
units_duration(const char *s, uint64_t *ms)
{
	const char *unit;
	uint64_t n;

	if (s == NULL || (unit = units_digits(s, &n)) == NULL)
		return -1;
	return units_scale(units_durations, nitems(units_durations), unit, n,
	    ms);
}

/* Parse a size with an optional k, M or G (powers of 1024) and B. */
int
units_size(const char *s, uint64_t *bytes)
{
	const char *unit;
	uint64_t n;

	if (s == NULL || (unit = units_digits(s, &n)) == NULL)
		return -1;
	return units_scale(units_sizes, nitems(units_sizes), unit, n, bytes);
}

/*
 * Parse "1%", "0.5%" or a plain fraction "0.01". The syntax is checked by
 * hand (digits, an optional dot with digits, an optional '%') because
 * strtod also takes blanks, signs, hex, "inf" and "nan".
 */
int
units_ratio(const char *s, double *ratio)
{
	const char *p = s;
	char *end;
	double v;
	size_t len;
	bool pct;

	if (s == NULL)
		return -1;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == s)
		return -1;
	if (*p == '.') {
		const char *frac = ++p;

		while (*p >= '0' && *p <= '9')
			p++;
		if (p == frac)
			return -1;
	}
	len = (size_t)(p - s);
	pct = *p == '%';
	if (pct)
		p++;
	if (*p != '\0' || len > 64)
		return -1;
	v = strtod(s, &end);
	if ((size_t)(end - s) != len)
		return -1;
	if (pct)
		v /= 100.0;
	if (!(v >= 0.0 && v <= 1.0))
		return -1;
	*ratio = v;
	return 0;
}

/*
 * Format MS in the largest unit that divides it exactly. Weeks are left
 * out on purpose: "14d" reads better than "2w" in a log line.
 */
void
units_format_duration(uint64_t ms, char *buf, size_t len)
{
	static const struct units_unit fmt[] = {
		{ "d", 24 * 60 * 60 * 1000 },
		{ "h", 60 * 60 * 1000 },
		{ "m", 60 * 1000 },
		{ "s", 1000 },
	};
	size_t i;

	if (ms == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	for (i = 0; i < nitems(fmt); i++) {
		if (ms % fmt[i].mult == 0) {
			snprintf(buf, len, "%llu%s",
			    (unsigned long long)(ms / fmt[i].mult),
			    fmt[i].name);
			return;
		}
	}
	snprintf(buf, len, "%llums", (unsigned long long)ms);
}

void
units_format_human(int64_t ms, char *buf, size_t len)
{
	static const struct {
		const char *name;
		int64_t s;
	} u[] = { { "d", 86400 }, { "h", 3600 }, { "m", 60 }, { "s", 1 } };
	int64_t s = ms / 1000, rest;
	size_t i;

	if (ms < 1000) {
		snprintf(buf, len, "%s", ms <= 0 ? "0s" : "<1s");
		return;
	}
	for (i = 0; s < u[i].s; i++)
		;
	rest = i + 1 < 4 ? s % u[i].s / u[i + 1].s : 0;
	if (rest == 0)
		snprintf(buf, len, "%lld%s", (long long)(s / u[i].s),
		    u[i].name);
	else
		snprintf(buf, len, "%lld%s %lld%s", (long long)(s / u[i].s),
		    u[i].name, (long long)rest, u[i + 1].name);
}

void
units_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	uint64_t scale = 1024;
	size_t i;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return;
	}
	/* The unit that leaves at most 1023.9 of it (TiB for any more). */
	for (i = 0; i + 1 < nitems(unit) && bytes / scale >= 1024; i++)
		scale *= 1024;
	/* Tenths, rounded down: the remainder is below 2^40, times 10 fits. */
	snprintf(buf, len, "%llu.%llu %s", (unsigned long long)(bytes / scale),
	    (unsigned long long)(bytes % scale * 10 / scale), unit[i]);
}

/* Read exactly N digits at S into *v. */
static int
units_fixed(const char *s, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (s[i] - '0');
	}
	return 0;
}

/* Gregorian leap year. */
static bool
units_is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/*
 * Parse "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)". 'T' may also be 't'
 * or a space and 'Z' may be 'z' (RFC 3339 5.6). Fractions past
 * milliseconds are truncated; a leap second (":60") is accepted and
 * lands on the next second, as timegm normalises it.
 */
int
units_time_parse(const char *s, int64_t *ms)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30,
		31 };
	struct tm tm;
	int y, mo, d, h, mi, sec, frac = 0, oh, om, sign, dim, i;
	const char *p;
	time_t t;

	if (s == NULL || strlen(s) < 20)
		return -1;
	if (units_fixed(s, 4, &y) == -1 || s[4] != '-' ||
	    units_fixed(s + 5, 2, &mo) == -1 || s[7] != '-' ||
	    units_fixed(s + 8, 2, &d) == -1 ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    units_fixed(s + 11, 2, &h) == -1 || s[13] != ':' ||
	    units_fixed(s + 14, 2, &mi) == -1 || s[16] != ':' ||
	    units_fixed(s + 17, 2, &sec) == -1)
		return -1;
	if (mo < 1 || mo > 12 || h > 23 || mi > 59 || sec > 60)
		return -1;
	dim = mdays[mo - 1] + (mo == 2 && units_is_leap(y));
	if (d < 1 || d > dim)
		return -1;
	p = s + 19;
	if (*p == '.') {
		p++;
		for (i = 0; p[i] >= '0' && p[i] <= '9'; i++) {
			if (i < 3)
				frac = frac * 10 + (p[i] - '0');
		}
		if (i == 0)
			return -1;
		for (; i < 3; i++)
			frac *= 10;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
		oh = om = 0;
		sign = 1;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		if (units_fixed(p + 1, 2, &oh) == -1 || p[3] != ':' ||
		    units_fixed(p + 4, 2, &om) == -1 || p[6] != '\0' ||
		    oh > 23 || om > 59)
			return -1;
	} else
		return -1;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	/* The offset says how far local time is ahead of UTC. */
	t -= (time_t)sign * (oh * 3600 + om * 60);
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

/* Format MS as "YYYY-MM-DDTHH:MM:SS.mmmZ" in UTC. */
void
units_time_format(int64_t ms, char *buf, size_t len)
{
	struct tm tm;
	int64_t sec = ms / 1000, rem = ms % 1000;
	time_t t;

	/* Floor, so that times before 1970 keep a positive fraction. */
	if (rem < 0) {
		rem += 1000;
		sec--;
	}
	t = (time_t)sec;
	if (gmtime_r(&t, &tm) == NULL) {
		snprintf(buf, len, "invalid");
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, (int)rem);
}

/* Wall clock in ms since the epoch. */
int64_t
units_now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) == -1)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
units_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
units_left_us(int64_t since_us, uint64_t limit_ms)
{
	return (int64_t)limit_ms * 1000 - (units_mono_us() - since_us);
}

struct timeval
units_us_tv(int64_t us)
{
	struct timeval tv = { 0, 0 };

	if (us > 0) {
		tv.tv_sec = (time_t)(us / 1000000);
		tv.tv_usec = (suseconds_t)(us % 1000000);
	}
	return tv;
}

struct timeval
units_ms_tv(uint64_t ms)
{
	return units_us_tv((int64_t)ms * 1000);
}

/*
 * Every answer's Content-Length and X-Floe-Wave: the digits are counted
 * first, then written from the last, two at a time.
 */
size_t
units_utoa(char *o, uint64_t v)
{
	static const char pairs[] =
	    "00010203040506070809101112131415161718192021222324"
	    "25262728293031323334353637383940414243444546474849"
	    "50515253545556575859606162636465666768697071727374"
	    "75767778798081828384858687888990919293949596979899";
	uint64_t p = 10;
	size_t n = 1;
	char *e;

	/* 10^19 is the last power of ten a uint64_t holds. */
	while (n < 20 && v >= p) {
		n++;
		p = n < 20 ? p * 10 : p;
	}
	e = o + n;
	while (v >= 100) {
		e -= 2;
		memcpy(e, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10)
		memcpy(e - 2, pairs + 2 * v, 2);
	else
		e[-1] = (char)('0' + v);
	return n;
}

int
units_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
