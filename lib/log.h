/*
 * floe: log.h -- process-wide logging to stderr, one line a write (with
 * its priority on the journal's stream). Owns the log level. Never log a
 * secret.
 */
#ifndef FLOE_LIB_LOG_H
#define FLOE_LIB_LOG_H

#include <stdbool.h>

#define LOG_ATTR(f, a) __attribute__((__format__(__printf__, f, a)))

/* Set the verbosity (0 info, 1+ debug) and whether stderr is the journal. */
void log_init(int verbose);
/* Start each line with PREFIX (a static string: kept, not copied). */
void log_set_prefix(const char *prefix);
/*
 * strerror(E) in an operator's words where the system's mislead: ENOSPC
 * and EDQUOT are "disk full", EFBIG says which limit. Static text.
 */
const char *log_strerror(int e);
/* Warning with ": log_strerror(errno)" appended; errno is preserved. */
void log_warn(const char *, ...) LOG_ATTR(1, 2);
/* Warning without errno. */
void log_warnx(const char *, ...) LOG_ATTR(1, 2);
void log_info(const char *, ...) LOG_ATTR(1, 2);
void log_debug(const char *, ...) LOG_ATTR(1, 2);
bool log_is_debug(void);
/* Log and exit(1); for startup and broken invariants only. */
void fatal(const char *, ...) LOG_ATTR(1, 2) __attribute__((__noreturn__));
void fatalx(const char *, ...) LOG_ATTR(1, 2) __attribute__((__noreturn__));

#endif
