/*
 * floe: admin_rlog.c -- an operator's rollback written to the rollback
 * log off the loop: its line is kept pending in the store (one LMDB txn,
 * as every rollback line is first), then the worker's child appends and
 * fsyncs the pending lines while the loop goes on serving engine
 * requests, and the answer, held meanwhile, says how that went. A
 * rollback is always in the log or pending in the store: a child that
 * dies leaves the line pending for the tick to write.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "proxy/admin_impl.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/worker.h"
#include "routing/store.h"

/* A rollback's answer, held while the child writes its line. */
struct admin_rlog_hold {
	struct floe *f;
	json_t *answer;
	int status;
	int64_t now_ms;
	admin_later_cb later;
	void *arg;
};

static void admin_rlog_work(void *, struct evbuffer *);
static void admin_rlog_done(void *, struct evbuffer *, const char *);

/*
 * Whether R's rollback line can be written off the loop: a worker that
 * is idle (a line must not wait behind an import), a caller that takes
 * a later answer, and a store to keep the line pending in.
 */
bool
admin_rlog_can_defer(const struct admin_req *r)
{
	return r->f->worker != NULL && r->later_cb != NULL &&
	    r->f->cluster == NULL && r->f->store != NULL &&
	    worker_pending(r->f->worker) == 0;
}

/*
 * Answer R with ANSWER (taken; STATUS) once the child has written the
 * pending lines of the rollback log, with "rollback_log" saying how.
 */
void
admin_rlog_later(struct admin_req *r, int status, json_t *answer)
{
	struct admin_rlog_hold *h;

	h = xcalloc(1, sizeof(*h));
	h->f = r->f;
	h->answer = answer;
	h->status = status;
	h->now_ms = r->now_ms;
	h->later = r->later_cb;
	h->arg = r->later_arg;
	r->later = true;
	rlog_hold(r->f->rlog);
	worker_run(r->f->worker, admin_rlog_work, admin_rlog_done, h);
}

/* In the child: write the pending lines; send back 0 or the errno. */
static void
admin_rlog_work(void *arg, struct evbuffer *out)
{
	struct admin_rlog_hold *h = arg;
	struct store *st;
	char err[512];
	int32_t e;

	if ((st = store_open(h->f->conf->state_dir, err, sizeof(err))) ==
	    NULL) {
		log_warnx("%s: %s", __func__, err);
		e = EIO;
	} else {
		e = rlog_flush_path(h->f->conf->rollback_log, st, h->now_ms);
		store_free(st);
	}
	evbuffer_add(out, &e, sizeof(e));
}

/* On the loop: the child is done; answer with how the line went. */
static void
admin_rlog_done(void *arg, struct evbuffer *out, const char *status)
{
	struct admin_rlog_hold *h = arg;
	struct admin_reply rep;
	struct rlog_stats rs;
	json_t *logged;
	int32_t e = EIO;
	char *s;

	if (status != NULL ||
	    evbuffer_remove(out, &e, sizeof(e)) != (int)sizeof(e))
		log_warnx("%s: the process writing the rollback log %s; "
			  "the line stays pending",
		    __func__, status != NULL ? status : "gave no answer");
	rlog_flushed(h->f->rlog, e, units_now_ms());
	rlog_stats(h->f->rlog, &rs);
	if (e != 0)
		log_warn("%s: the rollback log line could not be written "
			 "(kept in the flag store; retried every second): %s",
		    __func__, log_strerror(e));
	logged = json_pack("{s:b, s:b, s:s?}", "written",
	    e == 0 && rs.pending == 0, "pending", rs.pending > 0, "error",
	    e != 0 ? log_strerror(e) : NULL);
	(void)json_object_set_new(h->answer, "rollback_log", logged);
	s = json_dumps(h->answer, ADMIN_JSON_FLAGS);
	json_decref(h->answer);
	if (s == NULL)
		fatalx("%s: out of memory", __func__);
	memset(&rep, 0, sizeof(rep));
	rep.status = h->status;
	rep.content_type = ADMIN_CT_JSON;
	rep.body = s;
	rep.len = strlen(s);
	h->later(&rep, h->arg);
	free(h);
}
