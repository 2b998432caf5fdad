/*
 * floe: test_worker.c -- the worker thread: jobs run off the calling
 * thread, one at a time and in order; each DONE runs on the loop before
 * the next job starts; freeing the worker answers every job still owed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "proxy/worker.h"

#define NJOBS 50

/* What the jobs of one test saw. */
struct seen {
	struct event_base *base;
	pthread_t loop;
	atomic_int work_order[NJOBS]; /* position at which job I ran */
	atomic_int nwork;
	atomic_bool off_loop; /* every WORK ran off the loop's thread */
	atomic_bool overlap; /* a WORK started before the last DONE */
	atomic_int ndone_ok; /* DONEs returned so far (ran) */
	int done_order[NJOBS];
	int ndone;
	int unrun;
	bool done_on_loop;
};

struct job {
	struct seen *s;
	int i;
};

static void
work(void *arg)
{
	struct job *j = arg;
	struct seen *s = j->s;
	int pos = atomic_fetch_add(&s->nwork, 1);

	if (pthread_equal(pthread_self(), s->loop))
		atomic_store(&s->off_loop, false);
	/* Job POS may start only once POS DONEs have returned. */
	if (atomic_load(&s->ndone_ok) != pos)
		atomic_store(&s->overlap, true);
	atomic_store(&s->work_order[j->i], pos);
}

static void
done(void *arg, bool ran)
{
	struct job *j = arg;
	struct seen *s = j->s;

	if (!pthread_equal(pthread_self(), s->loop))
		s->done_on_loop = false;
	if (!ran) {
		s->unrun++;
		return;
	}
	s->done_order[s->ndone++] = j->i;
	atomic_fetch_add(&s->ndone_ok, 1);
	if (s->ndone == NJOBS)
		event_base_loopbreak(s->base);
}

static void
seen_init(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	s->loop = pthread_self();
	atomic_store(&s->off_loop, true);
	s->done_on_loop = true;
	s->base = event_base_new();
	assert_non_null(s->base);
}

/* Fifty jobs queued at once: run in order, one at a time, off the loop. */
static void
test_order(void **state)
{
	struct job jobs[NJOBS];
	struct seen s;
	struct worker *w;
	char err[128];
	int i;

	(void)state;
	seen_init(&s);
	assert_non_null(w = worker_new(s.base, err, sizeof(err)));
	for (i = 0; i < NJOBS; i++) {
		jobs[i] = (struct job) { &s, i };
		worker_run(w, work, done, &jobs[i]);
	}
	assert_int_equal(worker_pending(w), NJOBS);
	assert_int_equal(event_base_dispatch(s.base), 0);
	assert_int_equal(s.ndone, NJOBS);
	assert_int_equal(worker_pending(w), 0);
	for (i = 0; i < NJOBS; i++) {
		assert_int_equal(s.done_order[i], i);
		assert_int_equal(atomic_load(&s.work_order[i]), i);
	}
	assert_true(atomic_load(&s.off_loop));
	assert_false(atomic_load(&s.overlap));
	assert_true(s.done_on_loop);
	worker_free(w);
	event_base_free(s.base);
}

/* Freed with jobs queued: each is answered once, ran or not. */
static void
test_free_owed(void **state)
{
	struct job jobs[NJOBS];
	struct seen s;
	struct worker *w;
	char err[128];
	int i;

	(void)state;
	seen_init(&s);
	assert_non_null(w = worker_new(s.base, err, sizeof(err)));
	for (i = 0; i < NJOBS; i++) {
		jobs[i] = (struct job) { &s, i };
		worker_run(w, work, done, &jobs[i]);
	}
	/* The loop never ran: at most the first job ran. */
	worker_free(w);
	assert_int_equal(s.ndone + s.unrun, NJOBS);
	assert_true(s.ndone <= 1);
	assert_true(s.done_on_loop);
	event_base_free(s.base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_free_owed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
