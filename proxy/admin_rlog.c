/*
 * floe: admin_rlog.c -- an operator's rollback line in the rollback log.
 * The line is kept pending in the store in the rollback's own txn (one
 * synced commit for both), then appended and fsynced before the answer
 * says it is written. With a worker, all of it runs in the worker's
 * child (admin_job_rollback): the loop reads no wave's objects, commits
 * nothing and waits on no lock while engine requests wait. A rollback is
 * always in the log or pending in the store: a child that dies leaves
 * the line pending for the tick to write.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/log.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "proxy/admin_impl.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "proxy/worker.h"
#include "routing/store.h"
#include "routing/wave.h"

/* A retry of the lines pending, made by the worker's child. */
struct admin_rlog_retry {
	struct floe *f;
	size_t before; /* lines pending when it started */
};

static void admin_rlog_retried(void *, int);

/*
 * Whether R's rollback can be made by the worker's child: a worker, a
 * caller that takes a later answer, and no cluster (whose nodes write
 * the line as they apply the rollback from etcd).
 */
bool
admin_rlog_offload(const struct admin_req *r)
{
	return r->f->worker != NULL && r->later_cb != NULL &&
	    r->f->cluster == NULL && r->f->store != NULL;
}

/* The line of wave N's rollback by R's operator, but for its "from". */
void
admin_rlog_line_init(struct admin_req *r, uint32_t n, const char *reason,
    struct admin_rlog_line *l)
{
	struct rlog_entry e = { .wave = n,
		.from = "",
		.trigger = "operator",
		.actor = r->actor,
		.reason = reason };

	l->line = rlog_line(&e, r->st, r->now_ms);
}

/* wave_line_fn: the line, with the state the rollback left. */
char *
admin_rlog_line(int from, void *arg)
{
	struct admin_rlog_line *l = arg;

	if (l->line == NULL ||
	    json_object_set_new(l->line, "from",
		json_string(wave_state_name(from))) == -1)
		return NULL;
	return json_dumps(l->line, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

void
admin_rlog_line_clear(struct admin_rlog_line *l)
{
	json_decref(l->line);
	l->line = NULL;
}

/*
 * Append and fsync the lines pending: in a worker's child with its own
 * store (the loop's log is held meanwhile, and told through
 * R->rlog_e), else on the loop. What the answer says of the line.
 */
json_t *
admin_rlog_write(struct admin_req *r)
{
	struct rlog_stats rs;
	size_t pending = 0;
	int e = 0;

	if (r->st != r->f->store) {
		e = rlog_flush_path(r->f->conf->rollback_log, r->st, r->now_ms);
		r->rlog_done = true;
		r->rlog_e = e;
		if (store_rlog_count(r->st, &pending) != STORE_OK)
			pending = 1;
	} else {
		if (rlog_flush(r->f->rlog, r->now_ms) == -1)
			e = errno != 0 ? errno : EIO;
		rlog_stats(r->f->rlog, &rs);
		pending = rs.pending;
	}
	if (e != 0)
		log_warnx("%s: the rollback log line could not be written%s: "
			  "%s",
		    __func__,
		    pending > 0 ?
			" (kept in the flag store; retried every second)" :
			"",
		    log_strerror(e));
	return json_pack("{s:b, s:b, s:s?}", "written", e == 0 && pending == 0,
	    "pending", pending > 0, "error", e != 0 ? log_strerror(e) : NULL);
}

/*
 * The tick, with BEFORE lines pending: whether their retry is the
 * worker's (started now, or left for a later tick while the worker is
 * busy: its job may hold the store's writer lock). false: the loop
 * writes them itself (no worker, or cluster mode).
 */
bool
admin_rlog_retry(struct floe *f, size_t before)
{
	struct admin_rlog_retry *t;

	if (f->worker == NULL || f->cluster != NULL || f->store == NULL)
		return false;
	if (worker_pending(f->worker) > 0)
		return true;
	t = xcalloc(1, sizeof(*t));
	t->f = f;
	t->before = before;
	if (!watch_rlog_write(f, admin_rlog_retried, t)) {
		free(t);
		return false;
	}
	return true;
}

/* The child is done: a word when the lines landed. */
static void
admin_rlog_retried(void *arg, int e)
{
	struct admin_rlog_retry *t = arg;
	struct rlog_stats rs;

	rlog_stats(t->f->rlog, &rs);
	if (e == 0)
		log_info("rollback log %s: %zu pending line%s written",
		    t->f->conf->rollback_log, t->before,
		    t->before == 1 ? "" : "s");
	else if (e > 0 && rs.pending > 0)
		log_debug("rollback log %s: %zu line%s still pending: %s",
		    t->f->conf->rollback_log, rs.pending,
		    rs.pending == 1 ? "" : "s", log_strerror(e));
	free(t);
}
