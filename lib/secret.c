/*
 * floe: secret.c -- read a secret file the way ssh reads a private key: the
 * mode is checked on the open descriptor (no window between the check and
 * the read), group or other bits refuse it, and buffers are wiped on free.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/secret.h"
#include "lib/xmalloc.h"

char *
secret_read(const char *path, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	ssize_t r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	if ((st.st_mode & 077) != 0) {
		snprintf(err, errlen,
		    "%s: mode %04o lets its group or others at a secret; "
		    "chmod 600 it",
		    path, (unsigned)(st.st_mode & 07777));
		goto fail;
	}
	if (st.st_size > SECRET_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    SECRET_MAX);
		goto fail;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	/* Read what fstat said, and not a byte more (the file may grow). */
	while (n < (size_t)st.st_size) {
		r = read(fd, buf + n, (size_t)st.st_size - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	close(fd);
	*len = n;
	return buf;
fail:
	if (buf != NULL)
		secret_free(buf, n);
	close(fd);
	return NULL;
}

void
secret_free(char *s, size_t len)
{
	if (s == NULL)
		return;
	explicit_bzero(s, len + 1);
	free(s);
}

void
secret_free_str(char *s)
{
	if (s != NULL)
		secret_free(s, strlen(s));
}
