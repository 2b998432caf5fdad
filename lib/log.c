/*
 * floe: log.c -- logging in the manner of relayd: stderr in the foreground,
 * syslog otherwise; warnings carry strerror(errno), which is preserved.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "lib/log.h"

static bool log_foreground = true;
static int log_verbose;
static const char *log_prefix = "";

static void log_vlog(int, const char *, va_list) LOG_ATTR(2, 0);

/* Set where log lines go and how much is logged. */
void
log_init(bool foreground, int verbose, const char *ident)
{
	log_foreground = foreground;
	log_verbose = verbose;
	if (!foreground)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	tzset();
}

/* Start each line with PREFIX (kept, not copied). */
void
log_set_prefix(const char *prefix)
{
	log_prefix = prefix != NULL ? prefix : "";
}

bool
log_is_debug(void)
{
	return log_verbose > 0;
}

/* Write one line at priority PRI. */
static void
log_vlog(int pri, const char *fmt, va_list ap)
{
	int saved = errno;
	char ts[32], line[1024];
	struct timespec now;
	struct tm tm;

	if (!log_foreground && log_prefix[0] != '\0') {
		(void)vsnprintf(line, sizeof(line), fmt, ap);
		syslog(pri, "%s%s", log_prefix, line);
		errno = saved;
		return;
	}
	if (!log_foreground) {
		vsyslog(pri, fmt, ap);
		errno = saved;
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	flockfile(stderr);
	fprintf(stderr, "%s.%03ldZ %s", ts, now.tv_nsec / 1000000, log_prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	errno = saved;
}

static void log_emit(int, const char *, ...) LOG_ATTR(2, 3);

static void
log_emit(int pri, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(pri, fmt, ap);
	va_end(ap);
}

const char *
log_strerror(int e)
{
	switch (e) {
	case ENOSPC:
		return "disk full (no space left on device)";
#ifdef EDQUOT
	case EDQUOT:
		return "disk full (quota exceeded)";
#endif
	case EFBIG:
		return "file too large (the file size limit, ulimit -f)";
	default:
		return strerror(e);
	}
}

void
log_warn(const char *fmt, ...)
{
	int saved = errno;
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_emit(LOG_WARNING, "%s: %s", buf, log_strerror(saved));
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_WARNING, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_INFO, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_verbose < 1)
		return;
	va_start(ap, fmt);
	log_vlog(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_emit(LOG_CRIT, "fatal: %s: %s", buf, log_strerror(saved));
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_emit(LOG_CRIT, "fatal: %s", buf);
	exit(1);
}
