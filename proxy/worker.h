/*
 * floe: worker.h -- work that would stall the event loop (a bulk import
 * parses megabytes of JSON and commits one large LMDB txn) runs in a child
 * process forked for it, as a snapshot runs in a forked child of an
 * in-memory database. The child sees the loop's memory as it was (no copy
 * of the request), writes its result into a pipe and exits; the loop reads
 * it as it comes and calls the job's DONE once the child is gone. floe
 * itself stays one thread: no locks on the data path, and glibc keeps its
 * single-thread fast paths. A crash in the child costs its job only.
 * Jobs run one at a time, in the order given. Owns the queue, the child
 * and its pipe (a helper's socket).
 */
#ifndef FLOE_PROXY_WORKER_H
#define FLOE_PROXY_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evbuffer;
struct worker;

/*
 * Runs in the child: it may read anything the loop had, must not use the
 * loop's event base, LMDB environment or sockets, and writes its result
 * to OUT.
 */
typedef void (*worker_work_fn)(void *arg, struct evbuffer *out);
/*
 * Runs on the loop: OUT holds what WORK wrote; STATUS is NULL when the
 * child exited 0, else why not ("killed by signal 9", "ran past its
 * deadline and was killed"; "never ran...": the worker was freed first,
 * or the child could not start) and OUT may be cut short. DONE may start
 * another job.
 */
typedef void (
    *worker_done_fn)(void *arg, struct evbuffer *out, const char *status);

/*
 * A worker on BASE. A child still running DEADLINE_MS after it started is
 * killed (0: never): an import stuck on a lock must not hold back every
 * admin change behind it. NULL with ERR if it cannot.
 */
struct worker *worker_new(struct event_base *, uint64_t deadline_ms, char *err,
    size_t errlen);
/*
 * Wait for the running child, killed at its deadline (its DONE runs), then
 * answer every job still queued with "never ran".
 */
void worker_free(struct worker *);
/* Queue a job. */
void worker_run(struct worker *, worker_work_fn, worker_done_fn, void *arg);

/*
 * A helper's job: its child is this program again (posix_spawn of
 * /proc/self/exe: the loop waits for the exec, whatever it holds), not a
 * fork. It sees nothing of the loop's memory: the job's KIND and bytes
 * are all it gets. Work the loop hands off every few seconds belongs
 * there: a fork holds the loop for as long as copying its page tables
 * takes, which grows with what the loop holds (its cache), and every page
 * the loop writes while the child lives is copied again.
 *
 * Runs in the helper: job KIND on IN (LEN bytes), its answer into OUT.
 */
typedef void (*worker_serve_fn)(unsigned kind, const void *in, size_t len,
    struct evbuffer *out);
/*
 * The program's main, started with this as its only argument, returns
 * worker_helper_main(SERVE): the helper reads its job, serves it, writes
 * the answer and returns 0 (1 if a read or write failed).
 */
#define WORKER_HELPER_ARG "--job-helper"
int worker_helper_main(worker_serve_fn serve);
/*
 * Queue a job of KIND for a helper, its bytes IN (taken: the worker frees
 * it), in order with worker_run's jobs and under the same deadline; DONE
 * as theirs.
 */
void worker_send(struct worker *, unsigned kind, struct evbuffer *in,
    worker_done_fn done, void *arg);
/* How many helpers were started (0: none yet, or W NULL). */
uint64_t worker_helper_starts(const struct worker *);
/* Jobs queued or running; 0 for none (W NULL: floe without a worker). */
unsigned worker_pending(const struct worker *);
/*
 * Call FN(ARG) on the loop each time the last job queued is done (after
 * its DONE): whoever waits for the worker to be idle (changes held
 * behind its jobs) goes on. FN NULL: none.
 */
typedef void (*worker_idle_fn)(void *arg);
void worker_on_idle(struct worker *, worker_idle_fn, void *arg);
/*
 * The longest a fork(2) of a job's child, or the spawn of a helper, held
 * the loop, in microseconds (0: none yet, or W NULL); how many of either
 * in *FORKS and their mean in *AVG_US (each may be NULL).
 */
uint64_t worker_fork_us_max(const struct worker *, uint64_t *forks,
    uint64_t *avg_us);

#endif
