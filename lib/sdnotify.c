/*
 * floe: sdnotify.c -- tell the service manager where floe is: READY=1 once
 * it serves, RELOADING=1 and READY=1 around a reload, STOPPING=1 when it
 * drains. The protocol is one datagram to the AF_UNIX socket in
 * $NOTIFY_SOCKET (a path, or '@' for Linux's abstract namespace), so
 * these forty lines stand in for linking libsystemd.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/sdnotify.h"

#define SDNOTIFY_MAX 1024 /* bytes of one message sdnotifyf sends */

/* Send STATE to $NOTIFY_SOCKET, if there is one. */
int
sdnotify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun;
	socklen_t len;
	size_t plen;
	ssize_t n;
	int fd, saved;

	if (path == NULL || *path == '\0')
		return 0;
	plen = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || plen < 2 ||
	    plen >= sizeof(sun.sun_path)) {
		errno = EINVAL;
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, plen);
	if (path[0] == '@')
		sun.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen +
	    (path[0] == '/' ? 1 : 0));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	n = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
	    (struct sockaddr *)&sun, len);
	saved = errno;
	close(fd);
	errno = saved;
	return n == (ssize_t)strlen(state) ? 1 : -1;
}

/*
 * sdnotify of a printf format. A message longer than SDNOTIFY_MAX is cut
 * there: put READY=1 and the like first, STATUS= last.
 */
int
sdnotifyf(const char *fmt, ...)
{
	char buf[SDNOTIFY_MAX + 1];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	return sdnotify(buf);
}
