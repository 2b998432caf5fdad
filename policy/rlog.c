/*
 * floe: rlog.c -- the rollback log, JSON lines. Each line is written with
 * one write(2) on an O_APPEND descriptor and fsynced, so concurrent readers
 * (floectl rollbacks --follow, tail -f) never see half a line and a crash
 * never loses a line floe reported as written. The reader skips a last
 * line without its newline: it is still being written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "routing/route.h"
#include "routing/store.h"

#define RLOG_NAME_MAX (STORE_KEY_MAX * 3 + 8) /* an object's text form */

struct rlog {
	int fd;
	char *path;
};

/* The routes of one wave being named (rlog_objects). */
struct rlog_names {
	uint32_t wave;
	json_t *list;
};

static int rlog_names_cb(const void *, size_t, const struct store_route *,
    void *);

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

/* One route: named if it is of the wave. */
static int
rlog_names_cb(const void *key, size_t keylen, const struct store_route *rt,
    void *arg)
{
	struct rlog_names *o = arg;
	struct route_obj obj;
	char text[RLOG_NAME_MAX];

	if (rt->wave != o->wave || route_obj_from_key(key, keylen, &obj) == -1)
		return 0;
	route_obj_format(&obj, text, sizeof(text));
	json_array_append_new(o->list, json_string(text));
	return 0;
}

json_t *
rlog_objects(struct store *st, uint32_t wave)
{
	struct rlog_names o = { wave, json_array() };

	/* A store error names fewer objects; the line is written all the same.
	 */
	if (st != NULL && o.list != NULL)
		(void)store_route_foreach(st, rlog_names_cb, &o);
	return o.list;
}

json_t *
rlog_line(const struct rlog_entry *e, struct store *st, int64_t now_ms)
{
	char ts[40];

	units_time_format(now_ms, ts, sizeof(ts));
	return json_pack("{s:s, s:I, s:o, s:s, s:O?, s:O?, s:I, s:s, s:s, "
			 "s:s, s:s?}",
	    "ts", ts, "wave", (json_int_t)e->wave, "objects",
	    rlog_objects(st, e->wave), "trigger", e->trigger, "measured",
	    e->measured, "threshold", e->threshold, "held_ms",
	    (json_int_t)e->held_ms, "from", e->from, "to", "rolled_back",
	    "actor", e->actor, "reason", e->reason);
}

int
rlog_write(struct rlog *l, json_t *line)
{
	char *s;
	size_t len, off = 0;
	ssize_t n;
	int saved;

	if (l == NULL) {
		errno = EBADF;
		return -1;
	}
	if (line == NULL ||
	    (s = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER)) ==
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

json_t *
rlog_read(const char *path, uint64_t after, size_t limit, char *msg,
    size_t msglen)
{
	json_t *list, *lines, *one;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t no = 0;
	FILE *fp;

	if (limit == 0 || limit > RLOG_READ_MAX)
		limit = RLOG_READ_MAX;
	list = json_array();
	lines = json_array();
	if ((fp = fopen(path, "r")) == NULL) {
		if (errno == ENOENT)
			return json_pack("{s:o,s:o,s:I}", "rollbacks", list,
			    "lines", lines, "next", (json_int_t)0);
		snprintf(msg, msglen, "rollback log %s: %s", path,
		    strerror(errno));
		json_decref(list);
		json_decref(lines);
		return NULL;
	}
	while (json_array_size(list) < limit &&
	    (len = getline(&line, &cap, fp)) != -1) {
		/* A line being written has no newline yet: not counted. */
		if (len == 0 || line[len - 1] != '\n')
			break;
		if (no++ < after)
			continue;
		if ((one = json_loadb(line, (size_t)len, 0, NULL)) == NULL)
			one = json_pack("{s:s#}", "unparsed", line,
			    (int)(len - 1));
		json_array_append_new(list, one);
		/* Not UTF-8: null (its "unparsed" is as near as JSON gets). */
		if ((one = json_stringn(line, (size_t)(len - 1))) == NULL)
			one = json_null();
		json_array_append_new(lines, one);
	}
	free(line);
	fclose(fp);
	return json_pack("{s:o,s:o,s:I}", "rollbacks", list, "lines", lines,
	    "next", (json_int_t)(after + json_array_size(list)));
}

void
rlog_value_text(const char *trigger, const json_t *v, char *buf, size_t len)
{
	char *s;

	if (v == NULL || json_is_null(v))
		snprintf(buf, len, "none");
	else if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (trigger != NULL && strcmp(trigger, "freshness") == 0 &&
	    json_is_integer(v))
		units_format_human(json_integer_value(v), buf, len);
	else if (trigger != NULL && strcmp(trigger, "errors") == 0 &&
	    json_is_number(v))
		snprintf(buf, len, "%.2f%%", json_number_value(v) * 100);
	else if ((s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT)) != NULL) {
		snprintf(buf, len, "%s", s);
		free(s);
	} else
		snprintf(buf, len, "?");
}
