/*
 * floe: sdnotify.h -- the service manager's readiness protocol (systemd's
 * sd_notify): one datagram of "KEY=VALUE" lines to the Unix socket named
 * by $NOTIFY_SOCKET. Owns nothing; without $NOTIFY_SOCKET it does nothing.
 */
#ifndef FLOE_LIB_SDNOTIFY_H
#define FLOE_LIB_SDNOTIFY_H

/*
 * Send STATE ("READY=1\nSTATUS=serving") to $NOTIFY_SOCKET. Returns 1 if
 * sent, 0 when no service manager asked for it, -1 with errno on failure.
 */
int sdnotify(const char *state);
/* sdnotify of a printf format, cut at 1 KiB (STATUS= goes last). */
int sdnotifyf(const char *fmt, ...)
    __attribute__((__format__(__printf__, 1, 2)));

#endif
