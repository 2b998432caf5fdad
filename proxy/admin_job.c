/*
 * floe: admin_job.c -- the bulk imports (POST /routes/import, POST
 * /ledger) as jobs of the worker: the import runs in its child, on a
 * store of its own, and its answer, last seq and the records the
 * reconcile trigger must see come back through the pipe to the loop.
 * Reads that scan the store (GET /eligibility) run the same way. Without
 * a worker (or a later answer) the job runs at once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "proxy/admin_impl.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/watch.h"
#include "proxy/worker.h"
#include "routing/store.h"

/*
 * A bulk import (POST /routes/import, POST /ledger) served by the worker:
 * RUN parses, writes and answers in the worker's child; what the loop
 * needs comes back through the pipe (admin_job_work, admin_job_done).
 * The job owns its body, its answer, and a copy of the request without
 * the parts that die with admin_handle (path, query, segments).
 */
struct admin_job {
	struct admin_req r;
	struct admin_reply rep;
	admin_job_fn run;
	void (*cmd)(struct admin_req *); /* or this, a plain handler */
	char *query; /* a copy of the request's query */
	int kind; /* ADMIN_JOB_* */
};

enum {
	ADMIN_JOB_IMPORT,
	ADMIN_JOB_READ,
	ADMIN_JOB_CHANGE, /* a gated wave move */
	ADMIN_JOB_ROLLBACK, /* a change that writes the rollback log */
};

static void admin_job_work(void *, struct evbuffer *);
static void admin_job_done(void *, struct evbuffer *, const char *);
static void admin_job_begin(struct admin_req *, admin_job_fn,
    void (*)(struct admin_req *), int);
static void admin_job_ahead(struct floe *, struct evbuffer *, uint64_t);

/*
 * Serve R through RUN: in the worker's child when floe has a worker and
 * the caller takes a later answer (the job takes R's body), else here and
 * now on the loop's own store.
 */
void
admin_job_start(struct admin_req *r, admin_job_fn run)
{
	admin_job_begin(r, run, NULL, ADMIN_JOB_IMPORT);
}

void
admin_job_read(struct admin_req *r, admin_job_fn run)
{
	admin_job_begin(r, run, NULL, ADMIN_JOB_READ);
}

void
admin_job_read_cmd(struct admin_req *r, void (*cmd)(struct admin_req *))
{
	admin_job_begin(r, NULL, cmd, ADMIN_JOB_READ);
}

void
admin_job_change(struct admin_req *r, admin_job_fn run)
{
	admin_job_begin(r, run, NULL, ADMIN_JOB_CHANGE);
}

void
admin_job_rollback(struct admin_req *r, admin_job_fn run)
{
	admin_job_begin(r, run, NULL, ADMIN_JOB_ROLLBACK);
}

/*
 * Serve R through RUN, or the plain handler CMD (of KIND), as
 * admin_job_start says.
 */
static void
admin_job_begin(struct admin_req *r, admin_job_fn run,
    void (*cmd)(struct admin_req *), int kind)
{
	struct evbuffer *alarms;
	struct admin_job *j;
	int i;

	/* In cluster mode the writes are captured here, then sent to etcd. */
	if (r->f->worker == NULL || r->later_cb == NULL ||
	    r->f->cluster != NULL) {
		if ((alarms = evbuffer_new()) == NULL)
			fatalx("%s: out of memory", __func__);
		if (cmd != NULL)
			cmd(r);
		else
			run(r, alarms);
		/* Captured for etcd: the trigger acts once etcd took it. */
		if (r->st != NULL && store_capturing(r->st) &&
		    r->after == NULL) {
			r->after = alarms;
			return;
		}
		admin_job_alarms(r->f, alarms);
		evbuffer_free(alarms);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->r = *r;
	memset(j->r.seg, 0, sizeof(j->r.seg));
	/* The segments die with admin_handle too: a wave move reads them. */
	for (i = 0; i < r->nseg; i++)
		j->r.seg[i] = xstrdup(r->seg[i]);
	j->r.path = NULL;
	/* The query dies with admin_handle; the child reads a copy. */
	j->query = r->query != NULL ? xstrdup(r->query) : NULL;
	j->r.query = j->query;
	j->kind = kind;
	j->r.reply = &j->rep;
	j->r.body = NULL;
	j->r.body_len = 0;
	if ((j->r.in = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	if (r->in != NULL)
		evbuffer_add_buffer(j->r.in, r->in);
	j->run = run;
	j->cmd = cmd;
	r->later = true;
	/* The child writes the lines pending: the loop's tick must not. */
	if (kind == ADMIN_JOB_ROLLBACK)
		rlog_hold(r->f->rlog);
	worker_run(r->f->worker, admin_job_work, admin_job_done, j);
}

/*
 * In the child: open the store (an LMDB environment is not shared across
 * fork), run the job, and send back its answer, the last seq, how its
 * write of the rollback log went (-1: none), the pages a read read ahead
 * and the alarms: [status u32][seq u64][rlog i32][body length u32][body]
 * [ahead length u32][ahead][alarms].
 */
static void
admin_job_work(void *arg, struct evbuffer *out)
{
	struct admin_job *j = arg;
	struct admin_req *r = &j->r;
	struct evbuffer *alarms = evbuffer_new();
	char err[512];
	uint64_t seq = 0;
	uint32_t n;
	int32_t e;

	if (j->kind == ADMIN_JOB_READ && (r->ahead = evbuffer_new()) == NULL)
		admin_error(r, 500, "out of memory");
	else if (alarms == NULL)
		admin_error(r, 500, "out of memory");
	else if ((r->st = store_open(r->f->conf->state_dir, err,
		      sizeof(err))) == NULL) {
		log_warnx("%s: import: %s", __func__, err);
		admin_error(r, 500, "the store cannot be opened: %s", err);
	} else {
		if (j->cmd != NULL)
			j->cmd(r);
		else
			j->run(r, alarms);
		seq = store_last_seq(r->st);
		store_free(r->st);
	}
	n = (uint32_t)j->rep.status;
	evbuffer_add(out, &n, sizeof(n));
	evbuffer_add(out, &seq, sizeof(seq));
	e = r->rlog_done ? r->rlog_e : -1;
	evbuffer_add(out, &e, sizeof(e));
	n = (uint32_t)j->rep.len;
	evbuffer_add(out, &n, sizeof(n));
	evbuffer_add(out, j->rep.body, j->rep.len);
	n = r->ahead != NULL ? (uint32_t)evbuffer_get_length(r->ahead) : 0;
	evbuffer_add(out, &n, sizeof(n));
	if (n > 0)
		evbuffer_add_buffer(out, r->ahead);
	if (r->ahead != NULL)
		evbuffer_free(r->ahead);
	if (alarms != NULL) {
		evbuffer_add_buffer(out, alarms);
		evbuffer_free(alarms);
	}
}

/* On the loop: take the child's answer, let the triggers act, answer. */
static void
admin_job_done(void *arg, struct evbuffer *out, const char *status)
{
	struct admin_job *j = arg;
	struct admin_req *r = &j->r;
	uint32_t code, len;
	uint64_t seq;
	int32_t e = -1;
	int i;

	free(j->rep.body);
	memset(&j->rep, 0, sizeof(j->rep));
	r->outcome = NULL;
	r->where[0] = '\0';
	if (status != NULL && strncmp(status, "never ran", 9) == 0 &&
	    j->kind == ADMIN_JOB_READ)
		admin_error(r, 503, "the read %s", status);
	else if (status != NULL && strncmp(status, "never ran", 9) == 0 &&
	    (j->kind == ADMIN_JOB_CHANGE || j->kind == ADMIN_JOB_ROLLBACK))
		admin_error(r, 503, "the change %s; nothing changed", status);
	else if (status != NULL && strncmp(status, "never ran", 9) == 0)
		admin_error(r, 503, "the import %s; nothing was imported",
		    status);
	else if (status != NULL ||
	    evbuffer_remove(out, &code, sizeof(code)) != sizeof(code) ||
	    evbuffer_remove(out, &seq, sizeof(seq)) != sizeof(seq) ||
	    evbuffer_remove(out, &e, sizeof(e)) != sizeof(e) ||
	    evbuffer_remove(out, &len, sizeof(len)) != sizeof(len) ||
	    evbuffer_get_length(out) < len || code < 200 || code > 599)
		admin_error(r, 500,
		    j->kind == ADMIN_JOB_READ ?
			"the process reading the store %s" :
			j->kind == ADMIN_JOB_CHANGE ||
			    j->kind == ADMIN_JOB_ROLLBACK ?
			"the change's process %s before it answered; whether "
			"it was applied shows in GET /events" :
			"the import's process %s before it answered; "
			"whether it was applied shows in GET /events",
		    status != NULL ? status : "gave no answer");
	else {
		j->rep.status = (int)code;
		j->rep.content_type = ADMIN_CT_JSON;
		j->rep.len = len;
		/* A large read's answer moves to its peer as it is, no copy. */
		if (j->kind == ADMIN_JOB_READ && len > ADMIN_REPLY_MOVE) {
			if ((j->rep.buf = evbuffer_new()) == NULL)
				fatalx("%s: out of memory", __func__);
			evbuffer_remove_buffer(out, j->rep.buf, len);
		} else {
			j->rep.body = xmalloc(len + 1);
			evbuffer_remove(out, j->rep.body, len);
			j->rep.body[len] = '\0';
		}
		admin_job_ahead(r->f, out, j->rep.status == 200 ? seq : 0);
		if (r->f->store != NULL)
			store_seq_seen(r->f->store, seq);
		/*
		 * The reconcile trigger acts before the import is answered,
		 * and the answer names what it rolled back.
		 */
		json_decref(watch_fired_take(r->f->watch));
		admin_job_alarms(r->f, out);
		admin_reply_fired(r->f, &j->rep);
	}
	/*
	 * The loop's log again: the child's outcome, or (it wrote none, or
	 * died: its line, if committed, stays pending) the tick's to write.
	 */
	if (j->kind == ADMIN_JOB_ROLLBACK)
		rlog_flushed(r->f->rlog, e, units_now_ms());
	r->later_cb(&j->rep, r->later_arg);
	for (i = 0; i < r->nseg; i++)
		free(r->seg[i]);
	evbuffer_free(r->in);
	free(j->query);
	free(j);
}

/*
 * The pages a read's child read ahead, from OUT: kept for the next
 * requests when the store is at SEQ (0: the read failed, none kept).
 */
static void
admin_job_ahead(struct floe *f, struct evbuffer *out, uint64_t seq)
{
	uint32_t n;
	unsigned char *p;

	if (evbuffer_remove(out, &n, sizeof(n)) != sizeof(n) || n == 0 ||
	    evbuffer_get_length(out) < n)
		return;
	if (seq != 0 && (p = evbuffer_pullup(out, n)) != NULL)
		admin_elig_keep(f, seq, p, n);
	evbuffer_drain(out, n);
}

/* Tell the reconcile trigger about the records in ALARMS (emptied). */
void
admin_job_alarms(struct floe *f, struct evbuffer *alarms)
{
	struct store_kv *kv = NULL;
	unsigned char *p, *end;
	size_t n = 0, cap = 0;
	uint32_t len[2];

	/* An empty buffer pulls up to NULL, which takes no offset. */
	if ((p = evbuffer_pullup(alarms, -1)) == NULL)
		return;
	end = p + evbuffer_get_length(alarms);
	while ((size_t)(end - p) >= sizeof(len)) {
		memcpy(len, p, sizeof(len));
		if ((size_t)(end - p) - sizeof(len) < (size_t)len[0] + len[1])
			break;
		if (n == cap) {
			cap = cap != 0 ? cap * 2 : 16;
			kv = xreallocarray(kv, cap, sizeof(*kv));
		}
		kv[n].key = p + sizeof(len);
		kv[n].keylen = len[0];
		kv[n].val = p + sizeof(len) + len[0];
		kv[n].vallen = len[1];
		n++;
		p += sizeof(len) + len[0] + len[1];
	}
	if (n > 0)
		watch_ledger_added(f, kv, n);
	free(kv);
	evbuffer_drain(alarms, evbuffer_get_length(alarms));
}
