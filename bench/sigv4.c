/*
 * floe: bench/sigv4.c -- what SigV4 costs per request: a loop signing a
 * LoadTable GET and a 4 KB POST (its body hashed in four 1 KB pieces, as
 * an evbuffer holds it) with floe's signer, reporting ns per signature and
 * OpenSSL allocations per signature; and a new day's key derivation.
 * `make build/bench-sigv4 && build/bench-sigv4 [ITERATIONS]`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "policy/sigv4.h"

static unsigned long nallocs;

static void *
count_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	nallocs++;
	return malloc(n);
}

static void *
count_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	nallocs++;
	return realloc(p, n);
}

static void
count_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	free(p);
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t
cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int
main(int argc, char **argv)
{
	static const char token[] =
	    "IQoJb3JpZ2luX2VjEDoaCXVzLWVhc3QtMSJHMEUCIQD0examplexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexampleexample"
	    "exampleexampleexampleexampleexampleexampleexampleexample==";
	static const char host[] = "glue.us-east-1.amazonaws.com";
	static const char get_path[] =
	    "/iceberg/v1/catalogs/123456789012/namespaces/db%1Fsales/tables/"
	    "orders";
	static const char post_path[] =
	    "/iceberg/v1/catalogs/123456789012/namespaces/db/tables/orders";
	struct sigv4_hdr ct = { "Content-Type", 12, "application/json", 16 };
	struct sigv4_msg get = { "GET", get_path, sizeof(get_path) - 1,
		"snapshots=refs", 14, host, sizeof(host) - 1, NULL, 0, NULL };
	struct sigv4_msg post = { "POST", post_path, sizeof(post_path) - 1,
		NULL, 0, host, sizeof(host) - 1, &ct, 1, NULL };
	struct sigv4_body *b;
	struct sigv4_sig sig;
	struct sigv4 *s;
	char err[256], hash[SIGV4_HEX], body[4096], head[4096];
	long n = argc > 1 ? atol(argv[1]) : 200000, i;
	int64_t now = 1767225600, w0, c0, k;
	unsigned long a0;
	unsigned flags;
	int round;

	if (CRYPTO_set_mem_functions(count_malloc, count_realloc, count_free) !=
	    1) {
		fprintf(stderr, "cannot count OpenSSL's allocations\n");
		return 1;
	}
	memset(body, '{', sizeof(body));
	printf("%ld signatures each; a session token of %zu bytes but in "
	       "the last round\n",
	    n, sizeof(token) - 1);
	for (round = 0; round < 3; round++) {
		flags = round == 1 ? SIGV4_CONTENT_SHA256 : 0;
		if ((s = sigv4_new("us-east-1", "glue", flags, err,
			 sizeof(err))) == NULL ||
		    sigv4_set_creds(s, "AKIAIOSFODNN7EXAMPLE",
			"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
			round < 2 ? token : NULL, err, sizeof(err)) == -1) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		b = sigv4_body_new();
		/* Warm: the key of the day is derived once. */
		if (sigv4_sign(s, &get, now, &sig) == -1)
			return 1;

		a0 = nallocs;
		w0 = now_ns();
		c0 = cpu_ns();
		for (i = 0; i < n; i++) {
			if (sigv4_sign(s, &get, now + i % 60, &sig) == -1 ||
			    sigv4_head(&sig, head, sizeof(head)) <= 0)
				return 1;
		}
		printf("%-34s %6.0f ns/sig (cpu %6.0f)  %.1f OpenSSL "
		       "allocs/sig\n",
		    round == 0	   ? "LoadTable GET" :
			round == 1 ? "LoadTable GET, x-amz-content-sha256" :
				     "LoadTable GET, no session token",
		    (double)(now_ns() - w0) / n, (double)(cpu_ns() - c0) / n,
		    (double)(nallocs - a0) / n);

		a0 = nallocs;
		w0 = now_ns();
		c0 = cpu_ns();
		for (i = 0; i < n; i++) {
			sigv4_body_init(b);
			for (k = 0; k < 4; k++)
				sigv4_body_update(b, body + k * 1024, 1024);
			if (sigv4_body_final(b, hash) == -1)
				return 1;
			post.payload_hash = hash;
			if (sigv4_sign(s, &post, now + i % 60, &sig) == -1 ||
			    sigv4_head(&sig, head, sizeof(head)) <= 0)
				return 1;
		}
		printf("%-34s %6.0f ns/sig (cpu %6.0f)  %.1f OpenSSL "
		       "allocs/sig\n",
		    round == 0	   ? "4 KB POST" :
			round == 1 ? "4 KB POST, x-amz-content-sha256" :
				     "4 KB POST, no session token",
		    (double)(now_ns() - w0) / n, (double)(cpu_ns() - c0) / n,
		    (double)(nallocs - a0) / n);

		if (round == 0) {
			/* A new day each time: the key derived every call. */
			long m = n / 10 > 0 ? n / 10 : 1;

			w0 = now_ns();
			for (i = 0; i < m; i++)
				if (sigv4_sign(s, &get, now + 86400 * (i + 1),
					&sig) == -1)
					return 1;
			printf("%-34s %6.0f ns/sig\n",
			    "LoadTable GET, key derived each",
			    (double)(now_ns() - w0) / m);
		}
		sigv4_body_free(b);
		sigv4_free(s);
	}
	return 0;
}
