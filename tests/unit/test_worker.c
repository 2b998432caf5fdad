/*
 * floe: test_worker.c -- the worker's child processes: each job runs in a
 * child of its own (its writes stay there), one at a time and in order;
 * DONE gets all the child wrote, however large, and why a child failed;
 * freeing the worker waits for the running child and answers the rest.
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

static void
work(void *arg, struct evbuffer *out)
{
	struct job *j = arg;
	char *big;

	touched = 1;
	switch (j->how) {
	case 0:
		evbuffer_add_printf(out, "job %d pid %ld", j->i,
		    (long)getpid());
		break;
	case 1:
		big = malloc(BIG);
		memset(big, 'x', BIG);
		big[BIG - 1] = 'z';
		evbuffer_add(out, big, BIG);
		free(big);
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
	/* One turn of the loop forks the first child. */
	assert_int_equal(event_base_loop(s.base, EVLOOP_ONCE | EVLOOP_NONBLOCK),
	    0);
	assert_int_equal(s.ndone, 0);
	worker_free(s.w);
	assert_int_equal(s.ndone, 3);
	assert_string_equal(s.status[0], "ok");
	assert_int_equal(s.outlen[0], BIG);
	for (i = 1; i < 3; i++) {
		assert_int_equal(s.order[i], i);
		assert_memory_equal(s.status[i], "never ran", 9);
		assert_int_equal(s.outlen[i], 0);
	}
	event_base_free(s.base);
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
	assert_int_equal(event_base_loop(s.base, EVLOOP_ONCE | EVLOOP_NONBLOCK),
	    0);
	worker_free(s.w);
	assert_int_equal(s.ndone, 1);
	assert_string_equal(s.status[0],
	    "ran past its deadline and was killed");
	event_base_free(s.base);
	assert_true(time(NULL) - t0 < 10);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_outcomes),
		cmocka_unit_test(test_no_inherited_fds),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_free_owed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
