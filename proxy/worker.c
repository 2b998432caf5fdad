/*
 * floe: worker.c -- one child process per job. The parent reads the
 * child's pipe into OUT as it comes (the child never blocks on a full
 * pipe). The pipe ends when the child exits, which closes it; the child
 * is then reaped without blocking the loop (a zombie microseconds later:
 * looked for again on a short timer). DONE runs then, and the next job's
 * child is forked.
 *
 * A helper's job has a child that is this program again (posix_spawn of
 * /proc/self/exe with WORKER_HELPER_ARG: the loop is not copied), on a
 * socket instead of a pipe: the loop writes the job down it (struct
 * worker_frame, then the bytes) as the socket drains, while it reads the
 * answer as from a forked child.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
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

#define WORKER_CHILD_FD 3 /* the pipe, in the child; a helper's socket */
#define WORKER_EXE_FD 4 /* the program, in a helper until its exec */
/*
 * The most of a child's output read in one go: a large answer comes over
 * many turns of the loop, engine requests served between them.
 */
#define WORKER_READ_MAX (256 * 1024)
/* The most a helper's job may be. */
#define WORKER_HELPER_MAX ((uint64_t)1 << 30)

/* What precedes a helper's job on its socket. */
struct worker_frame {
	uint32_t kind;
	uint32_t zero;
	uint64_t len;
};

/* The signals floe handles: their defaults in a job's child. */
static const int worker_sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
	SIGUSR2, SIGCHLD };

struct worker_job {
	worker_work_fn work;
	worker_done_fn done;
	void *arg;
	struct evbuffer *in; /* a helper's job: its frame; NULL: a fork */
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
	struct event *wev; /* a helper's job waits to be written */
	int exe; /* /proc/self/exe, O_PATH: a helper's program */
	uint64_t helpers; /* started */
};

static void worker_kick_cb(evutil_socket_t, short, void *);
static void worker_next(struct worker *);
static int worker_spawn(struct worker *, struct worker_job *, char *, size_t);
static pid_t worker_exec(struct worker *, int, char *, size_t);
static void worker_write_cb(evutil_socket_t, short, void *);
static int worker_read_full(int, void *, size_t);
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
	int fd;

	w->base = base;
	TAILQ_INIT(&w->todo);
	w->deadline_ms = deadline_ms;
	/*
	 * A helper's program: this one, even once replaced on disk; above
	 * the descriptors a helper's spawn sets.
	 */
	if ((fd = open("/proc/self/exe", O_PATH | O_CLOEXEC)) == -1 ||
	    (w->exe = fcntl(fd, F_DUPFD_CLOEXEC, WORKER_EXE_FD + 1)) == -1) {
		snprintf(err, errlen, "worker: /proc/self/exe: %s",
		    strerror(errno));
		if (fd != -1)
			close(fd);
		free(w);
		return NULL;
	}
	close(fd);
	w->kick = event_new(base, -1, 0, worker_kick_cb, w);
	w->reap = evtimer_new(base, worker_reap_cb, w);
	w->deadline = evtimer_new(base, worker_deadline_cb, w);
	if (w->kick == NULL || w->reap == NULL || w->deadline == NULL) {
		snprintf(err, errlen, "worker: event_new failed");
		if (w->kick != NULL)
			event_free(w->kick);
		if (w->reap != NULL)
			event_free(w->reap);
		close(w->exe);
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
		 * but not past its deadline; a helper's job may still be
		 * going down its socket.
		 */
		pfd.fd = event_get_fd(w->rev);
		while (!w->eof) {
			if (!w->killed && worker_overdue(w)) {
				log_warnx("%s: child %ld still running at "
					  "its deadline: killing it",
				    __func__, (long)w->pid);
				w->killed = true;
				(void)kill(w->pid, SIGKILL);
			}
			pfd.events = POLLIN;
			if (w->cur->in != NULL &&
			    evbuffer_get_length(w->cur->in) > 0)
				pfd.events |= POLLOUT;
			if (poll(&pfd, 1, 100) <= 0)
				continue;
			if (pfd.revents & POLLOUT)
				worker_write_cb(pfd.fd, EV_WRITE, w);
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
		if (j->in != NULL)
			evbuffer_free(j->in);
		free(j);
	}
	evbuffer_free(none);
	event_free(w->kick);
	event_free(w->reap);
	event_free(w->deadline);
	close(w->exe);
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

void
worker_send(struct worker *w, unsigned kind, struct evbuffer *in,
    worker_done_fn done, void *arg)
{
	struct worker_job *j = xcalloc(1, sizeof(*j));
	struct worker_frame h = { .kind = kind,
		.len = evbuffer_get_length(in) };

	j->done = done;
	j->arg = arg;
	j->in = in;
	if (evbuffer_prepend(in, &h, sizeof(h)) == -1)
		fatalx("worker: out of memory");
	TAILQ_INSERT_TAIL(&w->todo, j, entry);
	w->pending++;
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

uint64_t
worker_helper_starts(const struct worker *w)
{
	return w != NULL ? w->helpers : 0;
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
		if (j->in != NULL)
			evbuffer_free(j->in);
		free(j);
	}
}

/*
 * Start J's child: a fork, or a helper (its job then goes down the
 * socket as it drains). 0, or -1 with ERR.
 */
static int
worker_spawn(struct worker *w, struct worker_job *j, char *err, size_t errlen)
{
	struct timeval tv;
	int64_t t0;
	int p[2];
	pid_t pid;

	if (j->in != NULL ?
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) == -1 :
		pipe2(p, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "never ran: %s: %s",
		    j->in != NULL ? "socketpair" : "pipe", strerror(errno));
		return -1;
	}
	t0 = units_mono_us();
	if (j->in != NULL) {
		if ((pid = worker_exec(w, p[1], err, errlen)) == -1) {
			close(p[0]);
			close(p[1]);
			return -1;
		}
		w->helpers++;
	} else if ((pid = fork()) == -1) {
		snprintf(err, errlen, "never ran: fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		worker_child(j, p[1]);
	}
	/*
	 * The loop stood still for it: a fork copies the page tables (not
	 * the heap), a spawn waits for the exec.
	 */
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
	if (j->in != NULL) {
		w->wev = event_new(w->base, p[0], EV_WRITE | EV_PERSIST,
		    worker_write_cb, w);
		if (w->wev == NULL)
			fatalx("worker: out of memory");
		worker_write_cb(p[0], EV_WRITE, w);
	}
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
	struct sigaction sa;
	struct evbuffer *out;
	sigset_t none;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (i = 0; i < nitems(worker_sigs); i++)
		sigaction(worker_sigs[i], &sa, NULL);
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

/*
 * Start a helper on socket FD: this program with WORKER_HELPER_ARG, FD as
 * WORKER_CHILD_FD, nothing else of ours open, the signals we handle (and
 * SIGPIPE) at their defaults. Its pid, or -1 with ERR.
 */
static pid_t
worker_exec(struct worker *w, int fd, char *err, size_t errlen)
{
	char path[32], name[] = "floe-helper", arg[] = WORKER_HELPER_ARG;
	char *argv[] = { name, arg, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t sa;
	sigset_t def, none;
	size_t i;
	pid_t pid;
	int rc, hi;

	/* Above the descriptors the spawn sets, as the program's is. */
	if ((hi = fcntl(fd, F_DUPFD_CLOEXEC, WORKER_EXE_FD + 1)) == -1) {
		snprintf(err, errlen, "never ran: fcntl: %s", strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", WORKER_EXE_FD);
	sigemptyset(&def);
	for (i = 0; i < nitems(worker_sigs); i++)
		sigaddset(&def, worker_sigs[i]);
	sigaddset(&def, SIGPIPE);
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&sa);
	posix_spawn_file_actions_adddup2(&fa, hi, WORKER_CHILD_FD);
	posix_spawn_file_actions_adddup2(&fa, w->exe, WORKER_EXE_FD);
	posix_spawn_file_actions_addclosefrom_np(&fa, WORKER_EXE_FD + 1);
	posix_spawnattr_setsigdefault(&sa, &def);
	posix_spawnattr_setsigmask(&sa, &none);
	posix_spawnattr_setflags(&sa,
	    POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&pid, path, &fa, &sa, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&sa);
	close(hi);
	if (rc != 0) {
		snprintf(err, errlen, "never ran: starting a helper: %s",
		    strerror(rc));
		return -1;
	}
	return pid;
}

/* A helper's socket can take more of its job. */
static void
worker_write_cb(evutil_socket_t fd, short what __unused, void *arg)
{
	struct worker *w = arg;
	struct evbuffer *in = w->cur->in;
	struct evbuffer_iovec v;
	ssize_t n = 0;

	/* MSG_NOSIGNAL: a helper gone is an error here, not a SIGPIPE. */
	while (evbuffer_peek(in, -1, NULL, &v, 1) > 0 &&
	    (n = send(fd, v.iov_base, v.iov_len, MSG_NOSIGNAL)) > 0)
		evbuffer_drain(in, (size_t)n);
	/* An error: the helper is gone, and its socket says so to reads. */
	if (evbuffer_get_length(in) > 0 && n == -1 &&
	    (errno == EAGAIN || errno == EINTR))
		event_add(w->wev, NULL);
	else
		event_del(w->wev);
}

/*
 * Read exactly LEN bytes from FD (blocking): 1, or 0 at an end or an
 * error before them.
 */
static int
worker_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		if ((n = read(fd, p + got, len - got)) == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	return 1;
}

int
worker_helper_main(worker_serve_fn serve)
{
	struct worker_frame h;
	struct evbuffer *out;
	void *in;
	int rc = 0;

	(void)close(WORKER_EXE_FD); /* the exec is done */
	/*
	 * Its job ends it: a stop signalled to every process of floe's
	 * (systemd's, a terminal's) must not cut it short.
	 */
	(void)signal(SIGTERM, SIG_IGN);
	(void)signal(SIGINT, SIG_IGN);
	(void)signal(SIGHUP, SIG_IGN);
	if (worker_read_full(WORKER_CHILD_FD, &h, sizeof(h)) == 0 ||
	    h.len > WORKER_HELPER_MAX ||
	    (in = malloc(h.len > 0 ? h.len : 1)) == NULL)
		return 1;
	if (worker_read_full(WORKER_CHILD_FD, in, h.len) == 0 ||
	    (out = evbuffer_new()) == NULL) {
		free(in);
		return 1;
	}
	serve(h.kind, in, h.len, out);
	free(in);
	while (rc == 0 && evbuffer_get_length(out) > 0)
		if (evbuffer_write(out, WORKER_CHILD_FD) <= 0 && errno != EINTR)
			rc = 1;
	evbuffer_free(out);
	return rc;
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

	log_warnx("%s: %s %ld still running after %llu ms: killing it",
	    __func__, w->cur->in != NULL ? "job helper" : "child", (long)w->pid,
	    (unsigned long long)w->deadline_ms);
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
		log_warnx("%s: %s %ld %s", __func__,
		    j->in != NULL ? "job helper" : "child", (long)w->pid, why);
	close(event_get_fd(w->rev));
	event_free(w->rev);
	w->rev = NULL;
	if (w->wev != NULL) {
		event_free(w->wev);
		w->wev = NULL;
	}
	w->cur = NULL;
	w->pending--;
	j->done(j->arg, w->out, why);
	evbuffer_free(w->out);
	w->out = NULL;
	if (j->in != NULL)
		evbuffer_free(j->in);
	free(j);
	worker_next(w);
	if (w->pending == 0 && !w->stopping && w->idle != NULL)
		w->idle(w->idle_arg);
}
