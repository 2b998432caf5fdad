/*
 * floe: units.h -- durations, sizes, percentages and timestamps as floe.conf,
 * floectl and the ledger write them. Pure functions, no state.
 */
#ifndef FLOE_LIB_UNITS_H
#define FLOE_LIB_UNITS_H

#include <sys/time.h>

#include <stddef.h>
#include <stdint.h>

/*
 * "250ms", "10s", "15m", "2h", "7d", "1w"; a bare number is seconds.
 * Returns 0 and milliseconds in *ms, or -1.
 */
int units_duration(const char *, uint64_t *ms);
/* "512", "64k", "16M", "1G" (powers of 1024). Returns 0 or -1. */
int units_size(const char *, uint64_t *bytes);
/* "1%", "0.5%", "0.01" (a fraction). Returns 0 and a fraction in [0,1]. */
int units_ratio(const char *, double *);
/* Format ms as the shortest exact unit ("90s", "15m", "7d"). */
void units_format_duration(uint64_t ms, char *buf, size_t len);
/*
 * Format ms for people, rounded down to its two largest units: "3d 4h",
 * "5m 12s", "15m" (a zero second unit left out), "8s", "<1s", "0s" (0 or
 * less).
 */
void units_format_human(int64_t ms, char *buf, size_t len);
/*
 * Format a byte count for people, in binary units rounded down to one
 * decimal: "0 B", "1023 B", "1.5 KiB", "16.0 MiB", "2.0 GiB", up to TiB.
 */
void units_format_size(uint64_t bytes, char *buf, size_t len);
/*
 * RFC 3339 / ISO 8601 UTC timestamp ("2026-11-29T06:00:00Z", optional
 * fraction, "+00:00" or other offsets) to ms since the epoch. 0 or -1.
 */
int units_time_parse(const char *, int64_t *ms);
/* ms since the epoch as "2026-11-29T06:00:00.123Z". len >= 32. */
void units_time_format(int64_t ms, char *buf, size_t len);
/* Wall clock in ms since the epoch. */
int64_t units_now_ms(void);
/* The monotonic clock in microseconds: for durations, never for dates. */
int64_t units_mono_us(void);
/*
 * Microseconds left of LIMIT_MS since SINCE_US (a units_mono_us time);
 * zero or less once it has run out.
 */
int64_t units_left_us(int64_t since_us, uint64_t limit_ms);
/* US microseconds (negative: none) or MS milliseconds as a timeval. */
struct timeval units_us_tv(int64_t us);
struct timeval units_ms_tv(uint64_t ms);
/* V in decimal at O, no NUL; the digits written (at most 20). */
size_t units_utoa(char *o, uint64_t v);
/* The value of hex digit C (either case), or -1. */
int units_hexval(int c);

#endif
