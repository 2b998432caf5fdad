/*
 * floe: bench/jscheck.c -- what the JSON well-formedness check costs
 * alone: each FILE checked in one piece (jscheck_valid) and fed in 4 KB
 * pieces (jscheck_feed, as answers arrive read by read), in runs of about
 * 0.1 s of CPU each; prints the median run's CPU per check (µs), the
 * throughput (GB/s, 10^9 bytes of text per CPU second), and the fastest
 * run's (on a shared machine the least disturbed). Exits 1 when a file is
 * not well-formed JSON. With -i N, each file is checked N times whole and
 * N times in pieces, untimed: for counting instructions (callgrind).
 * `make build/bench-jscheck && build/bench-jscheck [-r RUNS] FILE...`;
 * bench/jscheck.sh runs it over the bench's LoadTable results.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jscheck.h"

#define PIECE 4096
#define MAX_RUNS 31

static int64_t
cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (n == cap) {
			cap = cap != 0 ? cap * 2 : 65536;
			if ((buf = realloc(buf, cap)) == NULL)
				abort();
		}
		if ((got = fread(buf + n, 1, cap - n, f)) == 0)
			break;
		n += got;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* One check of S: whole, or in PIECE-byte pieces. */
static int
check(const char *s, size_t len, int pieces)
{
	struct jscheck st;
	size_t off, n;

	if (!pieces)
		return jscheck_valid(s, len, NULL);
	jscheck_init(&st);
	for (off = 0; off < len; off += n) {
		n = len - off < PIECE ? len - off : PIECE;
		jscheck_feed(&st, s + off, n);
	}
	return jscheck_end(&st, NULL);
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The median over RUNS runs of the CPU ns per check; *BEST the fastest
 * run's.
 */
static double
measure(const char *s, size_t len, int pieces, int runs, double *best)
{
	int64_t per[MAX_RUNS], t0, t;
	long iters, i;
	volatile int sink = 0;
	int r;

	/* Iterations for about 0.1 s a run. */
	t0 = cpu_ns();
	for (iters = 0; (t = cpu_ns() - t0) < 20000000; iters++)
		sink += check(s, len, pieces);
	iters = iters * 5 + 1;
	for (r = 0; r < runs; r++) {
		t0 = cpu_ns();
		for (i = 0; i < iters; i++)
			sink += check(s, len, pieces);
		per[r] = (cpu_ns() - t0) * 1000 / iters; /* ps per check */
	}
	(void)sink;
	qsort(per, (size_t)runs, sizeof(per[0]), cmp_i64);
	*best = (double)per[0] / 1000.0;
	return (double)per[runs / 2] / 1000.0;
}

int
main(int argc, char **argv)
{
	int runs = 7, i = 1, bad = 0;
	long count = 0, k;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "-r") == 0)
			runs = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "-i") == 0)
			count = atol(argv[i + 1]);
		else
			break;
	}
	if (runs < 1 || runs > MAX_RUNS || count < 0 || i >= argc) {
		fprintf(stderr,
		    "usage: bench-jscheck [-r RUNS] [-i ITERATIONS] FILE...\n");
		return 2;
	}
	if (count == 0)
		printf("%-40s %8s %9s %6s %6s %9s %6s\n", "file", "bytes",
		    "whole us", "GB/s", "best", "4KB-pc us", "GB/s");
	for (; i < argc; i++) {
		size_t len;
		char *s = slurp(argv[i], &len);
		const char *name = argv[i], *q;
		double whole, pc, wbest, pbest;

		/* A fixture by its table and file, others by their file. */
		if ((q = strstr(argv[i], "/metadata/")) != NULL) {
			while (q > argv[i] && q[-1] != '/')
				q--;
			name = q;
		} else if ((q = strrchr(argv[i], '/')) != NULL)
			name = q + 1;
		if (s == NULL) {
			perror(argv[i]);
			return 2;
		}
		if (!check(s, len, 0) || !check(s, len, 1)) {
			fprintf(stderr, "%s: not well-formed JSON\n", argv[i]);
			bad = 1;
		}
		if (count > 0) {
			for (k = 0; k < count; k++)
				bad |= !check(s, len, 0) | !check(s, len, 1);
			free(s);
			continue;
		}
		whole = measure(s, len, 0, runs, &wbest);
		pc = measure(s, len, 1, runs, &pbest);
		(void)pbest;
		printf("%-40.40s %8zu %9.3f %6.2f %6.2f %9.3f %6.2f\n", name, len,
		    whole / 1000.0, (double)len / whole, (double)len / wbest,
		    pc / 1000.0, (double)len / pc);
		free(s);
	}
	return bad;
}
