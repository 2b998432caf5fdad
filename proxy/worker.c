/*
 * floe: worker.c -- one child process per job. The parent reads the
 * child's pipe into OUT as it comes (the child never blocks on a full
 * pipe). The pipe ends when the child exits, which closes it; the child
 * is then reaped without blocking the loop (a zombie microseconds later:
 * looked for again on a short timer). DONE runs then, and the next job's
 * child is forked.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/worker.h"

#define WORKER_CHILD_FD 3 /* the pipe, in the child */
/*
 * The most of a child's output read in one go: a large answer comes over
 * many turns of the loop, engine requests served between them.
 */
#define WORKER_READ_MAX (256 * 1024)

struct worker_job {
	worker_work_fn work;
	worker_done_fn done;
	void *arg;
	TAILQ_ENTRY(worker_job) entry;
};

struct worker {
	struct event_base *base;
	TAILQ_HEAD(, worker_job) todo;
	struct event *kick; /* forks the next child from the loop */
	unsigned pending;
	bool stopping; /* worker_free: fork no more */
	/* The running child. */
	struct worker_job *cur;
	pid_t pid;
	struct event *rev; /* its pipe */
	struct event *reap; /* waitpid again, after REAP_US */
	unsigned reap_us;
	struct event *deadline; /* kills it */
	uint64_t deadline_ms; /* 0: none */
	bool killed; /* by the deadline */
	int64_t start_us; /* when it was forked */
	int64_t fork_us_max; /* the longest fork(2), in the parent */
	int64_t fork_us_sum;
	uint64_t forks;
	worker_idle_fn idle; /* the queue is empty again */
	void *idle_arg;
	struct evbuffer *out;
	bool eof;
	int wstatus;
};

static void worker_kick_cb(evutil_socket_t, short, void *);
static void worker_next(struct worker *);
static int worker_spawn(struct worker *, struct worker_job *, char *, size_t);
static void __attribute__((__noreturn__))
worker_child(struct worker_job *, int);
static void worker_close_from(int);
static void worker_read_cb(evutil_socket_t, short, void *);
static void worker_reap_cb(evutil_socket_t, short, void *);
static void worker_deadline_cb(evutil_socket_t, short, void *);
static bool worker_overdue(const struct worker *);
static void worker_end(struct worker *);

struct worker *
worker_new(struct event_base *base, uint64_t deadline_ms, char *err,
    size_t errlen)
{
	struct worker *w = xcalloc(1, sizeof(*w));

	w->base = base;
	TAILQ_INIT(&w->todo);
	w->deadline_ms = deadline_ms;
	w->kick = event_new(base, -1, 0, worker_kick_cb, w);
	w->reap = evtimer_new(base, worker_reap_cb, w);
	w->deadline = evtimer_new(base, worker_deadline_cb, w);
	if (w->kick == NULL || w->reap == NULL || w->deadline == NULL) {
		snprintf(err, errlen, "worker: event_new failed");
		if (w->kick != NULL)
			event_free(w->kick);
		if (w->reap != NULL)
			event_free(w->reap);
		free(w);
		return NULL;
	}
	return w;
}

void
worker_free(struct worker *w)
{
	struct worker_job *j;
	struct evbuffer *none;
	struct pollfd pfd;
	int n;

	if (w == NULL)
		return;
	w->stopping = true;
	if (w->cur != NULL) {
		/*
		 * Let the child finish (its txn commits whole or not at all),
		 * but not past its deadline.
		 */
		pfd.fd = event_get_fd(w->rev);
		pfd.events = POLLIN;
		while (!w->eof) {
			if (!w->killed && worker_overdue(w)) {
				log_warnx("%s: child %ld still running at "
					  "its deadline: killing it",
				    __func__, (long)w->pid);
				w->killed = true;
				(void)kill(w->pid, SIGKILL);
			}
			if (poll(&pfd, 1, 100) <= 0)
				continue;
			n = evbuffer_read(w->out, pfd.fd, -1);
			if (n == 0 ||
			    (n == -1 && errno != EAGAIN && errno != EINTR))
				w->eof = true;
		}
		evtimer_del(w->reap);
		(void)waitpid(w->pid, &w->wstatus, 0);
		worker_end(w);
	}
	none = evbuffer_new();
	while ((j = TAILQ_FIRST(&w->todo)) != NULL) {
		TAILQ_REMOVE(&w->todo, j, entry);
		w->pending--;
		j->done(j->arg, none, "never ran: floe is stopping");
		free(j);
	}
	evbuffer_free(none);
	event_free(w->kick);
	event_free(w->reap);
	event_free(w->deadline);
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
	TAILQ_INSERT_TAIL(&w->todo, j, entry);
	w->pending++;
	/* Never DONE from here: the caller is not ready for it. */
	if (w->cur == NULL && !w->stopping)
		event_active(w->kick, 0, 0);
}

unsigned
worker_pending(const struct worker *w)
{
	return w != NULL ? w->pending : 0;
}

void
worker_on_idle(struct worker *w, worker_idle_fn fn, void *arg)
{
	w->idle = fn;
	w->idle_arg = arg;
}

uint64_t
worker_fork_us_max(const struct worker *w, uint64_t *forks, uint64_t *avg_us)
{
	if (forks != NULL)
		*forks = w != NULL ? w->forks : 0;
	if (avg_us != NULL)
		*avg_us = w != NULL && w->forks > 0 ?
		    (uint64_t)w->fork_us_sum / w->forks :
		    0;
	return w != NULL ? (uint64_t)w->fork_us_max : 0;
}

static void
worker_kick_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	worker_next(arg);
}

/* Fork the next job's child; a job whose child cannot start is done. */
static void
worker_next(struct worker *w)
{
	struct worker_job *j;
	struct evbuffer *none;
	char err[256];

	while (!w->stopping && w->cur == NULL &&
	    (j = TAILQ_FIRST(&w->todo)) != NULL) {
		TAILQ_REMOVE(&w->todo, j, entry);
		if (worker_spawn(w, j, err, sizeof(err)) == 0)
			return;
		log_warnx("%s: job never ran: %s", __func__, err);
		w->pending--;
		none = evbuffer_new();
		j->done(j->arg, none, err);
		evbuffer_free(none);
		free(j);
	}
}

/* Start J's child. 0, or -1 with ERR. */
static int
worker_spawn(struct worker *w, struct worker_job *j, char *err, size_t errlen)
{
	struct timeval tv;
	int64_t t0;
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "never ran: pipe: %s", strerror(errno));
		return -1;
	}
	t0 = units_mono_us();
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "never ran: fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		worker_child(j, p[1]);
	}
	/* The loop stood still for it: page tables copied, not the heap. */
	t0 = units_mono_us() - t0;
	if (t0 > w->fork_us_max)
		w->fork_us_max = t0;
	w->fork_us_sum += t0;
	w->forks++;
	close(p[1]);
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	w->cur = j;
	w->pid = pid;
	w->out = evbuffer_new();
	w->eof = w->killed = false;
	w->start_us = units_mono_us();
	w->rev =
	    event_new(w->base, p[0], EV_READ | EV_PERSIST, worker_read_cb, w);
	if (w->out == NULL || w->rev == NULL)
		fatalx("worker: out of memory");
	event_add(w->rev, NULL);
	if (w->deadline_ms != 0) {
		tv = units_ms_tv(w->deadline_ms);
		evtimer_add(w->deadline, &tv);
	}
	return 0;
}

/*
 * The child: signals back to their defaults (the loop's handlers would
 * wake the parent); every inherited descriptor but stdio and the pipe
 * closed (a connection the loop closes must not stay open here, nor a
 * listener outlive floe); the work, its output down the pipe, gone.
 * _exit: nothing of the parent's (stdio buffers, atexit) runs twice.
 */
static void
worker_child(struct worker_job *j, int fd)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
		SIGUSR2, SIGCHLD };
	struct sigaction sa;
	struct evbuffer *out;
	sigset_t none;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (i = 0; i < nitems(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (fd != WORKER_CHILD_FD) {
		if (dup2(fd, WORKER_CHILD_FD) == -1)
			_exit(2);
		fd = WORKER_CHILD_FD;
	}
	worker_close_from(WORKER_CHILD_FD + 1);
	if ((out = evbuffer_new()) == NULL)
		_exit(2);
	j->work(j->arg, out);
	while (evbuffer_get_length(out) > 0)
		if (evbuffer_write(out, fd) <= 0 && errno != EINTR)
			_exit(1);
	evbuffer_free(out);
	_exit(0);
}

/* Close every descriptor from LOW up. */
static void
worker_close_from(int low)
{
	long i, max;

	if (close_range((unsigned)low, ~0U, 0) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	for (i = low; i < (max > 0 ? max : 1024); i++)
		(void)close((int)i);
}

static void
worker_read_cb(evutil_socket_t fd, short what __unused, void *arg)
{
	struct worker *w = arg;
	size_t got = 0;
	int n;

	while (
	    got < WORKER_READ_MAX && (n = evbuffer_read(w->out, fd, 65536)) > 0)
		got += (size_t)n;
	/* More may wait: the event fires again on the next turn. */
	if (got >= WORKER_READ_MAX ||
	    (n == -1 && (errno == EAGAIN || errno == EINTR)))
		return;
	if (n == -1)
		log_warn("%s: reading from child %ld", __func__, (long)w->pid);
	w->eof = true;
	event_del(w->rev);
	w->reap_us = 0;
	worker_reap_cb(-1, 0, w);
}

/* The child ran past its deadline: kill it (its pipe then ends). */
static void
worker_deadline_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct worker *w = arg;

	log_warnx("%s: child %ld still running after %llu ms: killing it",
	    __func__, (long)w->pid, (unsigned long long)w->deadline_ms);
	w->killed = true;
	(void)kill(w->pid, SIGKILL);
}

/* Whether the running child is past its deadline. */
static bool
worker_overdue(const struct worker *w)
{
	return w->deadline_ms != 0 &&
	    units_left_us(w->start_us, w->deadline_ms) <= 0;
}

/* Reap the child, or look again soon (1 ms, doubling up to 128 ms). */
static void
worker_reap_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct worker *w = arg;
	struct timeval tv;
	pid_t rc;

	while ((rc = waitpid(w->pid, &w->wstatus, WNOHANG)) == -1 &&
	    errno == EINTR)
		;
	if (rc == 0) {
		w->reap_us = w->reap_us == 0 ? 1000 : w->reap_us * 2;
		if (w->reap_us > 128000)
			w->reap_us = 128000;
		tv = units_us_tv(w->reap_us);
		evtimer_add(w->reap, &tv);
		return;
	}
	if (rc == -1) {
		log_warn("%s: waitpid %ld", __func__, (long)w->pid);
		w->wstatus = 255 << 8; /* "exited 255" */
	}
	worker_end(w);
}

/* The child is gone and its output read: DONE, then the next child. */
static void
worker_end(struct worker *w)
{
	struct worker_job *j = w->cur;
	char status[64];
	const char *why = NULL;

	evtimer_del(w->deadline);
	if (WIFSIGNALED(w->wstatus) && w->killed) {
		snprintf(status, sizeof(status),
		    "ran past its deadline and was killed");
		why = status;
	} else if (WIFSIGNALED(w->wstatus)) {
		snprintf(status, sizeof(status), "killed by signal %d",
		    WTERMSIG(w->wstatus));
		why = status;
	} else if (!WIFEXITED(w->wstatus) || WEXITSTATUS(w->wstatus) != 0) {
		snprintf(status, sizeof(status), "exited %d",
		    WIFEXITED(w->wstatus) ? WEXITSTATUS(w->wstatus) : -1);
		why = status;
	}
	if (why != NULL)
		log_warnx("%s: child %ld %s", __func__, (long)w->pid, why);
	close(event_get_fd(w->rev));
	event_free(w->rev);
	w->rev = NULL;
	w->cur = NULL;
	w->pending--;
	j->done(j->arg, w->out, why);
	evbuffer_free(w->out);
	w->out = NULL;
	free(j);
	worker_next(w);
	if (w->pending == 0 && !w->stopping && w->idle != NULL)
		w->idle(w->idle_arg);
}
