/*
 * floe: test_worker.c -- the worker's child processes: each job runs in a
 * child of its own (its writes stay there), one at a time and in order;
 * DONE gets all the child wrote, however large, and why a child failed;
 * freeing the worker waits for the running child and answers the rest.
 * A helper's job: this program again (its main serves them), not a fork
 * of the loop, in order with the forked ones; one that dies or hangs
 * fails its own job only.
 */
#include <sys/types.h>

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/worker.h"

#define NJOBS 5
#define BIG (4 << 20)

/* What the jobs of one test saw, on the loop. */
struct seen {
	struct event_base *base;
	struct worker *w;
	int ndone;
	int order[NJOBS + 4];
	char status[NJOBS + 4][64];
	size_t outlen[NJOBS + 4];
	char first[NJOBS + 4][64];
	int stop_after; /* break the loop after this many DONEs */
};

struct job {
	struct seen *s;
	int i;
	int how; /* 0 write a line, 1 write BIG bytes, 2 die, 3 exit 3,
		    4 say whether descriptor FD is open, 5 hang */
	int fd;
};

static int touched; /* a job's child sets it: the loop's copy stays 0 */

/* BIG bytes of FILL but the last, LAST (the caller frees). */
static char *
big_new(char fill, char last)
{
	char *big = malloc(BIG);

	assert_non_null(big);
	memset(big, fill, BIG);
	big[BIG - 1] = last;
	return big;
}

/* BIG bytes into OUT, the last a 'z'. */
static void
add_big(struct evbuffer *out)
{
	char *big = big_new('x', 'z');

	evbuffer_add(out, big, BIG);
	free(big);
}

static void
work(void *arg, struct evbuffer *out)
{
	struct job *j = arg;

	touched = 1;
	switch (j->how) {
	case 0:
		evbuffer_add_printf(out, "job %d pid %ld", j->i,
		    (long)getpid());
		break;
	case 1:
		add_big(out);
		break;
	case 2:
		evbuffer_add_printf(out, "partial");
		raise(SIGKILL);
		break;
	case 4:
		evbuffer_add_printf(out, "%s",
		    fcntl(j->fd, F_GETFD) == -1 ? "closed" : "open");
		break;
	case 5:
		evbuffer_add_printf(out, "stuck");
		sleep(60);
		break;
	default:
		_exit(3);
	}
}

static void
done(void *arg, struct evbuffer *out, const char *status)
{
	struct job *j = arg;
	struct seen *s = j->s;
	size_t len = evbuffer_get_length(out);
	int k = s->ndone++;

	s->order[k] = j->i;
	snprintf(s->status[k], sizeof(s->status[k]), "%s",
	    status != NULL ? status : "ok");
	s->outlen[k] = len;
	snprintf(s->first[k], sizeof(s->first[k]), "%.*s",
	    (int)(len < 63 ? len : 63), (const char *)evbuffer_pullup(out, -1));
	if (j->how == 1 && len == BIG)
		assert_int_equal(evbuffer_pullup(out, -1)[BIG - 1], 'z');
	if (s->ndone == s->stop_after)
		event_base_loopbreak(s->base);
}

static void
seen_init_deadline(struct seen *s, int stop_after, uint64_t deadline_ms)
{
	char err[128];

	memset(s, 0, sizeof(*s));
	s->stop_after = stop_after;
	s->base = event_base_new();
	assert_non_null(s->base);
	s->w = worker_new(s->base, deadline_ms, err, sizeof(err));
	assert_non_null(s->w);
}

static void
seen_init(struct seen *s, int stop_after)
{
	seen_init_deadline(s, stop_after, 30000);
}

static void
seen_free(struct seen *s)
{
	worker_free(s->w);
	event_base_free(s->base);
}

/*
 * One turn of the loop (the first job's child starts), then the worker
 * freed while that job runs: N jobs answered by then.
 */
static void
seen_free_running(struct seen *s, unsigned n)
{
	assert_int_equal(event_base_loop(s->base,
			     EVLOOP_ONCE | EVLOOP_NONBLOCK),
	    0);
	assert_int_equal(s->ndone, 0);
	worker_free(s->w);
	assert_int_equal(s->ndone, n);
	event_base_free(s->base);
}

/* Jobs queued at once run in order, each in a child of its own. */
static void
test_order(void **state)
{
	struct job jobs[NJOBS];
	struct seen s;
	char want[64];
	int i;

	(void)state;
	seen_init(&s, NJOBS);
	for (i = 0; i < NJOBS; i++) {
		jobs[i] = (struct job) { &s, i, 0, -1 };
		worker_run(s.w, work, done, &jobs[i]);
	}
	/* DONE never runs inside worker_run. */
	assert_int_equal(s.ndone, 0);
	assert_int_equal(worker_pending(s.w), NJOBS);
	assert_int_equal(event_base_dispatch(s.base), 0);
	assert_int_equal(s.ndone, NJOBS);
	assert_int_equal(worker_pending(s.w), 0);
	for (i = 0; i < NJOBS; i++) {
		assert_int_equal(s.order[i], i);
		assert_string_equal(s.status[i], "ok");
		snprintf(want, sizeof(want), "job %d pid ", i);
		assert_memory_equal(s.first[i], want, strlen(want));
		/* Not this process. */
		snprintf(want, sizeof(want), "job %d pid %ld", i,
		    (long)getpid());
		assert_string_not_equal(s.first[i], want);
	}
	assert_int_equal(touched, 0);
	seen_free(&s);
}

/*
 * All of a large output arrives; a child killed or exiting non-zero is
 * named, and the next job still runs.
 */
static void
test_outcomes(void **state)
{
	struct job jobs[4];
	struct seen s;
	int i;

	(void)state;
	seen_init(&s, 4);
	jobs[0] = (struct job) { &s, 0, 1, -1 };
	jobs[1] = (struct job) { &s, 1, 2, -1 };
	jobs[2] = (struct job) { &s, 2, 3, -1 };
	jobs[3] = (struct job) { &s, 3, 0, -1 };
	for (i = 0; i < 4; i++)
		worker_run(s.w, work, done, &jobs[i]);
	assert_int_equal(event_base_dispatch(s.base), 0);
	assert_int_equal(s.ndone, 4);
	assert_string_equal(s.status[0], "ok");
	assert_int_equal(s.outlen[0], BIG);
	assert_string_equal(s.status[1], "killed by signal 9");
	assert_string_equal(s.status[2], "exited 3");
	assert_string_equal(s.status[3], "ok");
	seen_free(&s);
}

/*
 * The child holds none of the loop's descriptors: a connection the loop
 * closes is closed.
 */
static void
test_no_inherited_fds(void **state)
{
	struct job job;
	struct seen s;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	seen_init(&s, 1);
	job = (struct job) { &s, 0, 4, p[1] };
	worker_run(s.w, work, done, &job);
	assert_int_equal(event_base_dispatch(s.base), 0);
	assert_int_equal(s.ndone, 1);
	assert_string_equal(s.first[0], "closed");
	assert_int_equal(fcntl(p[1], F_GETFD), 0); /* still ours */
	close(p[0]);
	close(p[1]);
	seen_free(&s);
}

/*
 * Freed while a child runs: the child finishes and its DONE has all it
 * wrote; the jobs behind it never run and are answered so.
 */
static void
test_free_owed(void **state)
{
	struct job jobs[3];
	struct seen s;
	int i;

	(void)state;
	seen_init(&s, 100);
	for (i = 0; i < 3; i++) {
		jobs[i] = (struct job) { &s, i, i == 0 ? 1 : 0, -1 };
		worker_run(s.w, work, done, &jobs[i]);
	}
	seen_free_running(&s, 3);
	assert_string_equal(s.status[0], "ok");
	assert_int_equal(s.outlen[0], BIG);
	for (i = 1; i < 3; i++) {
		assert_int_equal(s.order[i], i);
		assert_memory_equal(s.status[i], "never ran", 9);
		assert_int_equal(s.outlen[i], 0);
	}
}

/*
 * A child still running at its deadline is killed and named so, on the
 * loop and when the worker is freed while it runs; the next job runs.
 */
static void
test_deadline(void **state)
{
	struct job jobs[2];
	struct seen s;
	time_t t0 = time(NULL);

	(void)state;
	seen_init_deadline(&s, 2, 300);
	jobs[0] = (struct job) { &s, 0, 5, -1 };
	jobs[1] = (struct job) { &s, 1, 0, -1 };
	worker_run(s.w, work, done, &jobs[0]);
	worker_run(s.w, work, done, &jobs[1]);
	assert_int_equal(event_base_dispatch(s.base), 0);
	assert_int_equal(s.ndone, 2);
	assert_string_equal(s.status[0],
	    "ran past its deadline and was killed");
	assert_string_equal(s.status[1], "ok");
	seen_free(&s);

	seen_init_deadline(&s, 100, 300);
	jobs[0] = (struct job) { &s, 0, 5, -1 };
	worker_run(s.w, work, done, &jobs[0]);
	seen_free_running(&s, 1);
	assert_string_equal(s.status[0],
	    "ran past its deadline and was killed");
	assert_true(time(NULL) - t0 < 10);
}

/*
 * The helper's jobs, by kind: 1 answers "pid P len L last C" (C the last
 * byte sent), 2 answers BIG bytes, 3 dies, 4 exits 3, 5 hangs, 6 says
 * whether the descriptor whose number it is sent is open, 7 answers the
 * name it was started with.
 */
static void
serve(unsigned kind, const void *in, size_t len, struct evbuffer *out)
{
	const char *p = in;
	char name[64] = "";
	FILE *fp;
	int fd;

	switch (kind) {
	case 1:
		evbuffer_add_printf(out, "pid %ld len %zu last %c",
		    (long)getpid(), len, len > 0 ? p[len - 1] : '-');
		break;
	case 2:
		add_big(out);
		break;
	case 3:
		raise(SIGKILL);
		break;
	case 4:
		_exit(3);
	case 5:
		sleep(60);
		break;
	case 6:
		memcpy(&fd, in, sizeof(fd));
		evbuffer_add_printf(out, "%s",
		    fcntl(fd, F_GETFD) == -1 ? "closed" : "open");
		break;
	case 7:
		if ((fp = fopen("/proc/self/cmdline", "r")) != NULL) {
			if (fgets(name, sizeof(name), fp) == NULL)
				name[0] = '\0';
			fclose(fp);
		}
		evbuffer_add_printf(out, "%s", name);
		break;
	}
}

/* A job for the helper: KIND, IN (LEN bytes). */
static void
send_job(struct seen *s, struct job *j, int i, unsigned kind, const void *in,
    size_t len)
{
	struct evbuffer *b = evbuffer_new();

	*j = (struct job) { s, i, kind == 2 ? 1 : 0, -1 };
	assert_non_null(b);
	assert_int_equal(evbuffer_add(b, in, len), 0);
	worker_send(s->w, kind, b, done, j);
}

/* The pid a kind 1 answer names. */
static long
answer_pid(const char *first)
{
	long pid = 0;

	assert_int_equal(sscanf(first, "pid %ld", &pid), 1);
	return pid;
}

/*
 * The helpers' jobs and forked ones run in the order given, each in a
 * process of its own; a helper is this program started again, not a fork
 * of the loop; BIG bytes each way arrive whole; a spawn is counted with
 * the forks.
 */
static void
test_helper(void **state)
{
	struct job jobs[NJOBS + 2];
	struct seen s;
	uint64_t forks = 0;
	char *big = big_new('y', 'q');
	long pid0, pid2;
	int i;

	(void)state;
	seen_init(&s, NJOBS + 2);
	send_job(&s, &jobs[0], 0, 1, "abc", 3);
	jobs[1] = (struct job) { &s, 1, 0, -1 };
	worker_run(s.w, work, done, &jobs[1]);
	send_job(&s, &jobs[2], 2, 1, big, BIG);
	send_job(&s, &jobs[3], 3, 2, "", 0);
	jobs[4] = (struct job) { &s, 4, 0, -1 };
	worker_run(s.w, work, done, &jobs[4]);
	send_job(&s, &jobs[5], 5, 7, "", 0);
	send_job(&s, &jobs[6], 6, 1, "", 0);
	assert_int_equal(worker_pending(s.w), NJOBS + 2);
	assert_int_equal(event_base_dispatch(s.base), 0);
	assert_int_equal(s.ndone, NJOBS + 2);
	for (i = 0; i < NJOBS + 2; i++) {
		assert_int_equal(s.order[i], i);
		assert_string_equal(s.status[i], "ok");
	}
	assert_memory_equal(strchr(s.first[0], 'l'), "len 3 last c", 12);
	assert_non_null(strstr(s.first[2], " len 4194304 last q"));
	assert_int_equal(s.outlen[3], BIG);
	assert_string_equal(s.first[5], "floe-helper");
	pid0 = answer_pid(s.first[0]);
	pid2 = answer_pid(s.first[2]);
	assert_true(pid0 != (long)getpid() && pid2 != (long)getpid());
	assert_true(pid0 != pid2 && pid2 != answer_pid(s.first[6]));
	assert_int_equal(worker_helper_starts(s.w), 5);
	(void)worker_fork_us_max(s.w, &forks, NULL);
	assert_int_equal(forks, 7);
	seen_free(&s);
	/* Each was reaped. */
	assert_int_equal(kill((pid_t)pid0, 0), -1);
	free(big);
}

/*
 * A helper that dies fails its own job, named; it holds none of the
 * loop's descriptors.
 */
static void
test_helper_dies(void **state)
{
	struct job jobs[4];
	struct seen s;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	seen_init(&s, 4);
	send_job(&s, &jobs[0], 0, 3, "", 0);
	send_job(&s, &jobs[1], 1, 4, "", 0);
	send_job(&s, &jobs[2], 2, 6, &p[1], sizeof(p[1]));
	send_job(&s, &jobs[3], 3, 1, "", 0);
	assert_int_equal(event_base_dispatch(s.base), 0);
	assert_string_equal(s.status[0], "killed by signal 9");
	assert_string_equal(s.status[1], "exited 3");
	assert_string_equal(s.status[2], "ok");
	assert_string_equal(s.first[2], "closed");
	assert_string_equal(s.status[3], "ok");
	close(p[0]);
	close(p[1]);
	seen_free(&s);
}

/*
 * A helper still running at its deadline is killed and named so; the next
 * job runs. Freed while a job of BIG bytes goes down to its helper, the
 * worker sends it all and waits for the answer.
 */
static void
test_helper_deadline_free(void **state)
{
	struct job jobs[2];
	struct seen s;
	char *big = big_new('y', 'q');
	time_t t0 = time(NULL);

	(void)state;
	seen_init_deadline(&s, 2, 300);
	send_job(&s, &jobs[0], 0, 5, "", 0);
	send_job(&s, &jobs[1], 1, 1, "", 0);
	assert_int_equal(event_base_dispatch(s.base), 0);
	assert_string_equal(s.status[0],
	    "ran past its deadline and was killed");
	assert_string_equal(s.status[1], "ok");
	seen_free(&s);
	assert_true(time(NULL) - t0 < 10);

	seen_init(&s, 100);
	send_job(&s, &jobs[0], 0, 1, big, BIG);
	seen_free_running(&s, 1);
	assert_string_equal(s.status[0], "ok");
	assert_non_null(strstr(s.first[0], " len 4194304 last q"));
	free(big);
}

int
main(int argc, char *argv[])
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_outcomes),
		cmocka_unit_test(test_no_inherited_fds),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_free_owed),
		cmocka_unit_test(test_helper),
		cmocka_unit_test(test_helper_dies),
		cmocka_unit_test(test_helper_deadline_free),
	};

	/* The helper the tests start: this program again. */
	if (argc == 2 && strcmp(argv[1], WORKER_HELPER_ARG) == 0)
		return worker_helper_main(serve);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
