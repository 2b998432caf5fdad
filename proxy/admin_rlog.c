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
#include "policy/rlog.h"
#include "proxy/admin_impl.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "routing/store.h"
#include "routing/wave.h"

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
