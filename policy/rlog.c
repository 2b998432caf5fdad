/*
 * floe: rlog.c -- the rollback log, JSON lines. Each line is written with
 * one write(2) on an O_APPEND descriptor and fsynced, so concurrent readers
 * (floectl rollbacks --follow, tail -f) never see half a line and a crash
 * never loses a line floe reported as written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/xmalloc.h"
#include "policy/rlog.h"

struct rlog {
	int fd;
	char *path;
};

struct rlog *
rlog_open(const char *path, char *err, size_t errlen)
{
	struct rlog *l;
	int fd;

	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		 0640)) == -1) {
		snprintf(err, errlen, "rollback log %s: %s", path,
		    strerror(errno));
		return NULL;
	}
	l = xcalloc(1, sizeof(*l));
	l->fd = fd;
	l->path = xstrdup(path);
	return l;
}

void
rlog_free(struct rlog *l)
{
	if (l == NULL)
		return;
	close(l->fd);
	free(l->path);
	free(l);
}

int
rlog_write(struct rlog *l, json_t *line)
{
	char *s;
	size_t len, off = 0;
	ssize_t n;
	int saved;

	if ((s = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER)) ==
	    NULL) {
		errno = ENOMEM;
		return -1;
	}
	len = strlen(s);
	s[len] = '\n'; /* json_dumps leaves room: replace the NUL */
	len++;
	while (off < len) {
		if ((n = write(l->fd, s + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			saved = errno;
			free(s);
			errno = saved;
			return -1;
		}
		off += n;
	}
	free(s);
	return fsync(l->fd);
}
