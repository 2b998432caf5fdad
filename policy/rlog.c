/*
 * floe: rlog.c -- the rollback log, JSON lines. Each line is kept in the
 * store (pending) before it is appended, with one write(2) on an O_APPEND
 * descriptor, and fsynced; it is forgotten only once it is durable. A
 * write that fails or is short is cut back to the last newline, so the
 * log never holds part of a line, and the line is tried again (in order,
 * on the tick) until it lands. The reader skips a last line without its
 * newline: it is still being written.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "routing/route.h"
#include "routing/store.h"

#define RLOG_NAME_MAX (STORE_KEY_MAX * 3 + 8) /* an object's text form */

struct rlog {
	int fd; /* -1: not open (yet): each append tries again */
	char *path;
	struct store *st; /* pending lines; NULL: none kept */
	struct rlog_stats stats;
	bool failing; /* the last append failed: its event is written */
	/*
	 * The oldest pending line may be in the log already (pending at
	 * start after a crash, or its fsync failed): look before writing it.
	 */
	bool unsure;
	/*
	 * A child is writing the pending lines (rlog_hold): the loop leaves
	 * them alone until rlog_flushed, or a line would be written twice.
	 */
	bool held;
	bool quiet; /* a child's: no events (the loop records them) */
};

/* The routes of one wave being named (rlog_objects). */
struct rlog_names {
	uint32_t wave;
	json_t *list;
};

static int rlog_names_cb(const void *, size_t, void *);
static int rlog_reopen(struct rlog *);
static int rlog_tail_repair(int, off_t *);
static int rlog_has_tail(int, off_t, const char *, size_t);
static int rlog_put_line(struct rlog *, const char *, size_t, bool);
static void rlog_note(struct rlog *, int, int64_t);

struct rlog *
rlog_open(const char *path, char *err, size_t errlen)
{
	struct rlog *l;

	l = xcalloc(1, sizeof(*l));
	l->fd = -1;
	l->path = xstrdup(path);
	if (errlen > 0)
		err[0] = '\0';
	if (rlog_reopen(l) == -1 && errlen > 0)
		snprintf(err, errlen, "rollback log %s: %s", path,
		    log_strerror(errno));
	return l;
}

void
rlog_free(struct rlog *l)
{
	if (l == NULL)
		return;
	if (l->fd != -1)
		close(l->fd);
	free(l->path);
	free(l);
}

void
rlog_attach(struct rlog *l, struct store *st)
{
	size_t n;

	if (l == NULL)
		return;
	l->st = st;
	l->unsure = true;
	if (st != NULL && store_rlog_count(st, &n) == STORE_OK)
		l->stats.pending = n;
}

void
rlog_stats(const struct rlog *l, struct rlog_stats *out)
{
	if (l == NULL) {
		memset(out, 0, sizeof(*out));
		out->err = EBADF;
		return;
	}
	*out = l->stats;
}

/* Open the log if it is not open. 0, or -1 with errno. */
static int
rlog_reopen(struct rlog *l)
{
	if (l->fd != -1)
		return 0;
	l->fd = open(l->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	return l->fd == -1 ? -1 : 0;
}

/*
 * Make the log at FD end with a newline: a partial last line (a crash in
 * the middle of a write, or an older floe's short write) is cut back to
 * the last newline, so the next line is never glued onto it; its line is
 * still pending and is written again whole. *SIZE is the size after. 0,
 * or -1 with errno.
 */
static int
rlog_tail_repair(int fd, off_t *size)
{
	char buf[4096];
	struct stat sb;
	off_t end, at;
	ssize_t n, i, got;

	if (fstat(fd, &sb) == -1)
		return -1;
	end = sb.st_size;
	for (at = end; at > 0; at -= n) {
		n = at < (off_t)sizeof(buf) ? (ssize_t)at :
					      (ssize_t)sizeof(buf);
		if ((got = pread(fd, buf, (size_t)n, at - n)) != n) {
			if (got >= 0)
				errno = EIO;
			return -1;
		}
		for (i = n; i > 0; i--)
			if (buf[i - 1] == '\n')
				break;
		if (i > 0) {
			at = at - n + i;
			break;
		}
	}
	if (at < 0)
		at = 0;
	if (at != end && ftruncate(fd, at) == -1)
		return -1;
	*size = at;
	return 0;
}

/*
 * Whether the log at FD, SIZE bytes, already ends with the line S (LEN
 * bytes, its newline included) as a whole line: written before a crash
 * or a failed fsync, not yet forgotten. 1, 0, or -1 with errno.
 */
static int
rlog_has_tail(int fd, off_t size, const char *s, size_t len)
{
	char *buf;
	ssize_t n;
	int rc;

	if (size < (off_t)len)
		return 0;
	buf = xmalloc(len + 1);
	/* The byte before it too: it must start a line. */
	if (size == (off_t)len) {
		buf[0] = '\n';
		n = pread(fd, buf + 1, len, 0) + 1;
	} else
		n = pread(fd, buf, len + 1, size - (off_t)len - 1);
	if (n != (ssize_t)len + 1)
		rc = -1;
	else
		rc = buf[0] == '\n' && memcmp(buf + 1, s, len) == 0;
	free(buf);
	return rc;
}

/*
 * Append S (LEN bytes, ending with its newline) whole, and fsync; if
 * UNSURE, not when the log ends with it already. On any failure the log
 * is cut back to where it was, so it never holds part of a line; a write
 * that went through and a failed fsync leave L unsure. 0, or -1 with
 * errno.
 */
static int
rlog_put_line(struct rlog *l, const char *s, size_t len, bool unsure)
{
	off_t size;
	size_t off = 0;
	ssize_t n;
	int saved, had;

	if (rlog_reopen(l) == -1 || rlog_tail_repair(l->fd, &size) == -1)
		return -1;
	had = 0;
	if (unsure && (had = rlog_has_tail(l->fd, size, s, len)) == -1)
		return -1;
	while (!had && off < len) {
		if ((n = write(l->fd, s + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			saved = errno;
			/* A short write left part of the line: cut it. */
			if (off > 0)
				(void)ftruncate(l->fd, size);
			errno = saved;
			return -1;
		}
		off += (size_t)n;
	}
	if (fsync(l->fd) == -1) {
		l->unsure = true;
		return -1;
	}
	return 0;
}

/*
 * An append ended with errno E (0: it landed) at NOW_MS: the counters, and
 * an event when the log starts or stops failing.
 */
static void
rlog_note(struct rlog *l, int e, int64_t now_ms)
{
	json_t *ev;
	size_t n;

	if (l->st != NULL && store_rlog_count(l->st, &n) == STORE_OK)
		l->stats.pending = n;
	if (e != 0) {
		l->stats.failed++;
		l->stats.err = e;
	} else if (l->stats.pending == 0)
		l->stats.err = 0;
	if (l->st == NULL || l->quiet || (e != 0) == l->failing ||
	    (e == 0 && l->stats.pending > 0))
		return;
	l->failing = e != 0;
	if (e != 0)
		ev = json_pack("{s:s,s:s,s:s,s:I}", "type",
		    "rollback_log.failing", "path", l->path, "error",
		    log_strerror(e), "pending", (json_int_t)l->stats.pending);
	else
		ev = json_pack("{s:s,s:s}", "type", "rollback_log.written",
		    "path", l->path);
	if (ev != NULL)
		(void)store_event_append(l->st, now_ms, ev);
	json_decref(ev);
}

int
rlog_flush(struct rlog *l, int64_t now_ms)
{
	char *s;
	size_t len;
	uint64_t id;
	int rc, n, e = 0;

	if (l == NULL || l->st == NULL)
		return 0;
	if (l->held) {
		errno = EAGAIN;
		return l->stats.pending > 0 ? -1 : 0;
	}
	for (n = 0; n < RLOG_FLUSH_MAX; n++) {
		if ((rc = store_rlog_first(l->st, &id, &s, &len)) ==
		    STORE_NOTFOUND)
			break;
		if (rc != STORE_OK) {
			e = EIO;
			break;
		}
		s[len] = '\n';
		rc = rlog_put_line(l, s, len + 1, l->unsure);
		e = rc == -1 ? errno : 0;
		if (rc == 0)
			l->unsure = false;
		free(s);
		if (rc == -1)
			break;
		if (store_rlog_del(l->st, id) == STORE_ERROR) {
			/* Written but still pending: not written twice. */
			l->unsure = true;
			e = EIO;
			break;
		}
	}
	if (n > 0 || e != 0)
		rlog_note(l, e, now_ms);
	errno = e;
	return e != 0 ? -1 : 0;
}

/* One route of the wave: named. */
static int
rlog_names_cb(const void *key, size_t keylen, void *arg)
{
	struct rlog_names *o = arg;
	struct route_obj obj;
	char text[RLOG_NAME_MAX];

	if (route_obj_from_key(key, keylen, &obj) == -1)
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
		(void)store_wave_routes(st, wave, NULL, 0, rlog_names_cb, &o);
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
rlog_append(struct rlog *l, json_t *line, int64_t now_ms, bool *pending)
{
	char *s;
	size_t len;
	uint64_t id;
	int rc, saved;

	if (pending != NULL)
		*pending = false;
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
	/*
	 * Kept in the store first, then written in order after the lines
	 * still pending: a full disk or a crash loses none of it.
	 */
	if (l->st != NULL && store_rlog_put(l->st, s, len, &id) == STORE_OK) {
		free(s);
		rc = rlog_flush(l, now_ms);
		saved = errno;
		if (pending != NULL)
			*pending = l->stats.pending > 0;
		errno = saved;
		return rc;
	}
	s[len] = '\n'; /* json_dumps leaves room: replace the NUL */
	rc = rlog_put_line(l, s, len + 1, false);
	saved = rc == -1 ? errno : 0;
	free(s);
	rlog_note(l, saved, now_ms);
	errno = saved;
	return rc;
}

int
rlog_put_pending(struct rlog *l, json_t *line)
{
	char *s;
	uint64_t id;
	int rc;

	if (l == NULL || l->st == NULL || line == NULL ||
	    (s = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER)) == NULL)
		return -1;
	rc = store_rlog_put(l->st, s, strlen(s), &id) == STORE_OK ? 0 : -1;
	free(s);
	if (rc == 0)
		l->stats.pending++;
	return rc;
}

void
rlog_hold(struct rlog *l)
{
	if (l != NULL)
		l->held = true;
}

int
rlog_flush_path(const char *path, struct store *st, int64_t now_ms)
{
	struct rlog *l;
	char err[256];
	int e = 0;

	l = rlog_open(path, err, sizeof(err));
	l->quiet = true;
	rlog_attach(l, st);
	if (rlog_flush(l, now_ms) == -1)
		e = errno != 0 ? errno : EIO;
	rlog_free(l);
	return e;
}

void
rlog_flushed(struct rlog *l, int e, int64_t now_ms)
{
	size_t n;

	if (l == NULL)
		return;
	l->held = false;
	/* The child may have written a line it could not forget. */
	l->unsure = true;
	if (e >= 0) {
		rlog_note(l, e, now_ms);
		return;
	}
	/* No outcome: the count alone (the child may have added a line). */
	if (l->st != NULL && store_rlog_count(l->st, &n) == STORE_OK)
		l->stats.pending = n;
}

int
rlog_write(struct rlog *l, json_t *line)
{
	return rlog_append(l, line, units_now_ms(), NULL);
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
