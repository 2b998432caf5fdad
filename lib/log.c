/*
 * floe: log.c -- logging in the manner of relayd, to stderr (floe runs in
 * the foreground; under systemd that is the journal): warnings carry
 * strerror(errno), which is preserved. A line is one write, whole; on the
 * journal's stream it says its priority.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"

static bool log_journal;
static int log_verbose;
static const char *log_prefix = "";

/* A line fits here, or is made again in memory of its own. */
#define LOG_LINE 2048

static void log_vlog(int, const char *, const char *, const char *, va_list)
    LOG_ATTR(4, 0);

/*
 * Whether stderr is the journal's stream: systemd names it in
 * $JOURNAL_STREAM as "DEVICE:INODE" (systemd.exec(5)), which a descriptor
 * redirected since (floe 2>file under the unit) no longer matches.
 */
static bool
log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int end = 0;

	if (js == NULL || sscanf(js, "%llu:%llu%n", &dev, &ino, &end) != 2 ||
	    js[end] != '\0' || fstat(STDERR_FILENO, &st) == -1)
		return false;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

/*
 * Set how much is logged (0 info, 1+ debug). On the journal's stream
 * a line starts with its priority, "<4>" (journald keeps it and drops
 * the prefix: journalctl -p warning finds floe's warnings), and leaves the
 * time to the journal.
 */
void
log_init(int verbose)
{
	log_journal = log_stderr_is_journal();
	log_verbose = verbose;
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

/*
 * Write LINE (LEN bytes) to stderr in one write(2), continued only if the
 * kernel takes less. Workers and their master share one stderr: a line
 * made of several writes interleaves with another process's, which breaks
 * what reads the log line by line (journald, grep).
 */
static void
log_put(const char *line, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(STDERR_FILENO, line, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		line += n;
		len -= (size_t)n;
	}
}

/*
 * Write one line at priority PRI: the prefix, TAG ("fatal: " or ""), the
 * message and, if WHY is not NULL, ": WHY" (a warning's strerror).
 */
static void
log_vlog(int pri, const char *tag, const char *why, const char *fmt, va_list ap)
{
	int saved = errno;
	char ts[32], line[LOG_LINE], *big = NULL, *out = line;
	struct timespec now;
	struct tm tm;
	size_t head, tail, len;
	va_list aq;
	int n;

	if (log_journal) {
		n = snprintf(line, sizeof(line), "<%d>%s%s", LOG_PRI(pri),
		    log_prefix, tag);
	} else {
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		n = snprintf(line, sizeof(line), "%s.%03ldZ %s%s", ts,
		    now.tv_nsec / 1000000, log_prefix, tag);
	}
	head = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : 0;
	va_copy(aq, ap);
	n = vsnprintf(line + head, sizeof(line) - head, fmt, ap);
	if (n < 0)
		n = 0;
	tail = why != NULL ? 2 + strlen(why) : 0;
	len = head + (size_t)n + tail;
	if (len + 1 < sizeof(line)) {
		out = line;
	} else if ((big = malloc(len + 2)) != NULL) {
		/* A line longer than the buffer: made again, whole. */
		memcpy(big, line, head);
		(void)vsnprintf(big + head, (size_t)n + 1, fmt, aq);
		out = big;
	} else {
		/* No memory: the line cut at the buffer, still one line. */
		why = NULL;
		len = sizeof(line) - 1;
	}
	va_end(aq);
	if (why != NULL) {
		memcpy(out + head + n, ": ", 2);
		memcpy(out + head + n + 2, why, tail - 2);
	}
	out[len++] = '\n';
	log_put(out, len);
	free(big);
	errno = saved;
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
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_WARNING, "", log_strerror(saved), fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_WARNING, "", NULL, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_INFO, "", NULL, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_verbose < 1)
		return;
	va_start(ap, fmt);
	log_vlog(LOG_DEBUG, "", NULL, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	const char *why = log_strerror(errno);
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_CRIT, "fatal: ", why, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_CRIT, "fatal: ", NULL, fmt, ap);
	va_end(ap);
	exit(1);
}
