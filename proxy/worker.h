/*
 * floe: worker.h -- one thread beside the event loop for work that would
 * stall it: a bulk import parses megabytes of JSON and commits one large
 * LMDB txn. Jobs run one at a time, in the order given; each job's DONE
 * runs afterwards on the loop, woken through a pipe, and the next job
 * starts only after it: a DONE runs while the thread is idle. The loop
 * never blocks on the worker. Owns the thread, its queue and the pipe.
 */
#ifndef FLOE_PROXY_WORKER_H
#define FLOE_PROXY_WORKER_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct worker;

/* Runs on the worker thread: it must touch nothing the loop touches. */
typedef void (*worker_work_fn)(void *arg);
/*
 * Runs on the loop once the job has run (RAN), or when the worker is
 * freed before it could (not RAN). It may start another job.
 */
typedef void (*worker_done_fn)(void *arg, bool ran);

/* Start the thread. NULL, with ERR, if it cannot. */
struct worker *worker_new(struct event_base *, char *err, size_t errlen);
/*
 * Let the running job finish, then stop: every DONE still owed runs here,
 * with RAN false for jobs that never started.
 */
void worker_free(struct worker *);
/* Queue a job. */
void worker_run(struct worker *, worker_work_fn, worker_done_fn, void *arg);
/* Jobs queued or running. */
unsigned worker_pending(const struct worker *);

#endif
