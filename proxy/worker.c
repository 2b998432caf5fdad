/*
 * floe: worker.c -- the worker thread. The queue and the list of ended
 * jobs are shared under one mutex; everything else belongs to one side.
 * The thread writes a byte to the pipe after each job; the loop's read
 * event moves the ended jobs out and calls their DONE in order. The next
 * job starts only once the last one's DONE has returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/xmalloc.h"
#include "proxy/worker.h"

struct worker_job {
	worker_work_fn work;
	worker_done_fn done;
	void *arg;
	bool ran;
	TAILQ_ENTRY(worker_job) entry;
};

TAILQ_HEAD(worker_jobs, worker_job);

struct worker {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct worker_jobs todo; /* mu */
	struct worker_jobs ended; /* mu */
	bool stop; /* mu */
	bool busy; /* mu: a job is out, its DONE not yet returned */
	int wake[2]; /* the thread writes [1]; the loop reads [0] */
	struct event *ev;
	unsigned pending; /* loop only */
};

static void *worker_main(void *);
static void worker_ended_cb(evutil_socket_t, short, void *);
static void worker_finish(struct worker *, struct worker_jobs *);

struct worker *
worker_new(struct event_base *base, char *err, size_t errlen)
{
	struct worker *w = xcalloc(1, sizeof(*w));
	sigset_t all, old;
	int rc;

	TAILQ_INIT(&w->todo);
	TAILQ_INIT(&w->ended);
	w->wake[0] = w->wake[1] = -1;
	if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) == -1) {
		snprintf(err, errlen, "worker: pipe: %s", strerror(errno));
		goto fail;
	}
	w->ev = event_new(base, w->wake[0], EV_READ | EV_PERSIST,
	    worker_ended_cb, w);
	if (w->ev == NULL || event_add(w->ev, NULL) == -1) {
		snprintf(err, errlen, "worker: cannot watch its pipe");
		goto fail;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	/* Signals stay with the loop: the thread starts with all blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&w->thread, NULL, worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "worker: pthread_create: %s",
		    strerror(rc));
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		goto fail;
	}
	return w;

fail:
	if (w->ev != NULL)
		event_free(w->ev);
	if (w->wake[0] != -1) {
		close(w->wake[0]);
		close(w->wake[1]);
	}
	free(w);
	return NULL;
}

void
worker_free(struct worker *w)
{
	struct worker_jobs left;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	/* The thread is gone: the lists are the loop's now. A DONE may queue
	 * more; those end here too, unrun. */
	while (!TAILQ_EMPTY(&w->ended) || !TAILQ_EMPTY(&w->todo)) {
		TAILQ_INIT(&left);
		TAILQ_CONCAT(&left, &w->ended, entry);
		TAILQ_CONCAT(&left, &w->todo, entry);
		worker_finish(w, &left);
	}
	event_free(w->ev);
	close(w->wake[0]);
	close(w->wake[1]);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

void
worker_run(struct worker *w, worker_work_fn work, worker_done_fn done,
    void *arg)
{
	struct worker_job *j = xcalloc(1, sizeof(*j));

	j->work = work;
	j->done = done;
	j->arg = arg;
	w->pending++;
	pthread_mutex_lock(&w->mu);
	TAILQ_INSERT_TAIL(&w->todo, j, entry);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

unsigned
worker_pending(const struct worker *w)
{
	return w->pending;
}

/* The thread: take the oldest job, run it, hand it back, wake the loop. */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct worker_job *j;
	char one = 1;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && (w->busy || TAILQ_EMPTY(&w->todo)))
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		j = TAILQ_FIRST(&w->todo);
		TAILQ_REMOVE(&w->todo, j, entry);
		w->busy = true;
		pthread_mutex_unlock(&w->mu);

		j->work(j->arg);

		pthread_mutex_lock(&w->mu);
		j->ran = true;
		TAILQ_INSERT_TAIL(&w->ended, j, entry);
		/* A full pipe already holds a wake-up: nothing is lost. */
		if (write(w->wake[1], &one, 1) == -1 && errno != EAGAIN)
			log_warn("worker: waking the loop");
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* The loop: call DONE for the jobs that ended since the last wake-up. */
static void
worker_ended_cb(evutil_socket_t fd, short what __unused, void *arg)
{
	struct worker *w = arg;
	struct worker_jobs ended;
	char buf[64];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	TAILQ_INIT(&ended);
	pthread_mutex_lock(&w->mu);
	TAILQ_CONCAT(&ended, &w->ended, entry);
	pthread_mutex_unlock(&w->mu);
	worker_finish(w, &ended);
}

/* Call the DONE of every job in JOBS, in order, and free them. */
static void
worker_finish(struct worker *w, struct worker_jobs *jobs)
{
	struct worker_job *j;

	while ((j = TAILQ_FIRST(jobs)) != NULL) {
		TAILQ_REMOVE(jobs, j, entry);
		w->pending--;
		j->done(j->arg, j->ran);
		if (j->ran) {
			pthread_mutex_lock(&w->mu);
			w->busy = false;
			pthread_cond_signal(&w->cv);
			pthread_mutex_unlock(&w->mu);
		}
		free(j);
	}
}
