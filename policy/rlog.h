/*
 * floe: rlog.h -- the rollback log: one JSON line per rollback (by a
 * trigger or an operator), appended and fsynced before anyone is paged, so
 * the SRE reading it at 3 a.m. sees every revert. What a line says
 * (rlog_line), writing it (rlog_append), retrying the lines the log could
 * not take (rlog_flush: they wait in the store's rlog DBI) and reading the
 * log back (rlog_read). Owns the file descriptor and the counters of
 * failed appends; borrows the store. Logs nothing: its callers say what
 * went wrong; it records an event when the log starts and stops failing.
 */
#ifndef FLOE_POLICY_RLOG_H
#define FLOE_POLICY_RLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct json_t json_t;
struct rlog;
struct store;

/* The most pending lines one rlog_flush writes. */
#define RLOG_FLUSH_MAX 1000
/* The most lines rlog_read returns at once. */
#define RLOG_READ_MAX 10000

/* One rollback, as its line tells it. Everything is borrowed. */
struct rlog_entry {
	uint32_t wave;
	const char *from; /* the state it left */
	const char *trigger; /* "operator" or the trigger's name */
	const char *actor; /* who did it: "floe", "uid N" */
	const char *reason; /* NULL: none */
	json_t *measured; /* the trigger's value; NULL: null */
	json_t *threshold; /* its limit; NULL: null */
	int64_t held_ms; /* how long its condition held */
};

/* How the log is doing, for /status and /metrics. */
struct rlog_stats {
	size_t pending; /* lines kept in the store, not yet in the log */
	uint64_t failed; /* appends that did not land at once */
	int err; /* errno of the last failure while lines are pending; 0 */
};

/*
 * Open PATH for appending (creating it, mode 0640). Never NULL: a log
 * that cannot be opened now has ERR say why (else ERR is "") and is
 * opened again by each append.
 */
struct rlog *rlog_open(const char *path, char *err, size_t errlen);
void rlog_free(struct rlog *);
/*
 * Keep pending lines in ST (borrowed; NULL: none kept, a line that cannot
 * be written is lost). Reads how many are pending already.
 */
void rlog_attach(struct rlog *, struct store *st);
void rlog_stats(const struct rlog *, struct rlog_stats *);

/*
 * The objects and rules of WAVE in ST (NULL: none), in their text form,
 * as a JSON array. Caller frees.
 */
json_t *rlog_objects(struct store *st, uint32_t wave);
/*
 * The line for E at NOW_MS: {"ts","wave","objects","trigger","measured",
 * "threshold","held_ms","from","to","actor","reason"}, its objects read
 * from ST (may be NULL). Caller frees; NULL if out of memory.
 */
json_t *rlog_line(const struct rlog_entry *e, struct store *st, int64_t now_ms);
/*
 * A trigger's measured value or threshold V for people, in BUF: a ratio
 * of the errors trigger as a percentage rounded to 0.01 ("40.91%"), a
 * freshness lag in ms as a duration ("16m 40s"), a string as it is,
 * anything else as compact JSON; "none" for null or NULL. The log line
 * keeps the exact value.
 */
void rlog_value_text(const char *trigger, const json_t *v, char *buf,
    size_t len);
/*
 * Append LINE (a JSON object, borrowed) as one whole line and fsync it,
 * after the lines still pending. It is kept in the store first and
 * forgotten once durable. Returns 0, or -1 (errno set) if it is not
 * durable in the log yet: *PENDING (may be NULL) then says whether it
 * waits in the store for rlog_flush, else it is lost (L NULL: EBADF;
 * LINE NULL: ENOMEM). A failed or short write leaves no part of a line.
 */
int rlog_append(struct rlog *l, json_t *line, int64_t now_ms, bool *pending);
/*
 * Off the loop: keep LINE pending in the store only (0, or -1 when it
 * cannot: L has no store, or the store failed), then rlog_hold L while a
 * child writes the pending lines with rlog_flush_path (PATH the log, ST
 * the child's own store; returns 0 or the errno of the failure), and give
 * its outcome E to rlog_flushed on the loop: the counters, the events,
 * and the loop's own flushes again (E -1: the child wrote nothing, or
 * died: the count of lines pending alone, for the tick to write). While held,
 * rlog_flush writes nothing
 * (-1, EAGAIN, with lines pending) and rlog_append keeps its line pending.
 */
int rlog_put_pending(struct rlog *l, json_t *line);
void rlog_hold(struct rlog *l);
int rlog_flush_path(const char *path, struct store *st, int64_t now_ms);
void rlog_flushed(struct rlog *l, int e, int64_t now_ms);
/* rlog_append at the current time, without *PENDING. */
int rlog_write(struct rlog *l, json_t *line);
/*
 * Write the pending lines, oldest first, until one fails (at most
 * RLOG_FLUSH_MAX): on the tick. 0 when none is left, -1 with errno.
 */
int rlog_flush(struct rlog *l, int64_t now_ms);
/*
 * The lines of the log at PATH after the first AFTER, at most LIMIT (0 or
 * more than RLOG_READ_MAX: RLOG_READ_MAX), as {"rollbacks":[...],"lines":
 * [...],"next":N} where N is the AFTER that reads on and "lines" holds
 * the same lines as text, byte for byte without their newline (for
 * floectl rollbacks --json). A line that is not JSON comes as
 * {"unparsed":TEXT}; a line still being written (no newline yet) is not
 * read. No log yet is an empty page. Caller frees; NULL with MSG if the
 * log cannot be read.
 */
json_t *rlog_read(const char *path, uint64_t after, size_t limit, char *msg,
    size_t msglen);

#endif
