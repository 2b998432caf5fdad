/*
 * floe: xmalloc.c -- allocation that cannot fail: running out of memory is
 * fatal, so callers never check.
 */
#include <sys/mman.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/xmalloc.h"

void *
xmalloc(size_t size)
{
	void *p;

	if (size == 0)
		fatalx("xmalloc: zero size");
	if ((p = malloc(size)) == NULL)
		fatalx("xmalloc: allocating %zu bytes: out of memory", size);
	return p;
}

/* Before a block of xmalloc_nofork: its mapping's length, or 0 (malloc). */
struct nofork_head {
	size_t maplen;
	size_t pad; /* the block stays 16-byte aligned, as malloc's */
};

/*
 * The mappings of xmalloc_nofork at most: a process has vm.max_map_count
 * (65,530 by default) for everything it maps, malloc's large blocks and
 * LMDB's map among them. 8,192 holds a cache of 8 GB of 1 MB answers.
 */
#define NOFORK_MAPS_MAX 8192
static size_t nofork_maps;

void *
xmalloc_nofork(size_t size)
{
	struct nofork_head *h;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len;

	if (size == 0 || size > SIZE_MAX - sizeof(*h) - pg)
		fatalx("%s: %zu bytes", __func__, size);
	if (size >= XMALLOC_NOFORK_MIN && nofork_maps < NOFORK_MAPS_MAX) {
		len = (sizeof(*h) + size + pg - 1) / pg * pg;
		/* Populated: one call faults in what the caller fills. */
		h = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (h != MAP_FAILED) {
			/* If this fails a fork copies it, as malloc's. */
			(void)madvise(h, len, MADV_DONTFORK);
			h->maplen = len;
			nofork_maps++;
			return h + 1;
		}
	}
	h = xmalloc(sizeof(*h) + size);
	h->maplen = 0;
	return h + 1;
}

void
xfree_nofork(void *p)
{
	struct nofork_head *h;

	if (p == NULL)
		return;
	h = (struct nofork_head *)p - 1;
	if (h->maplen == 0)
		free(h);
	else if (munmap(h, h->maplen) == -1)
		fatal("%s: munmap", __func__);
	else
		nofork_maps--;
}

bool
xnofork_mapped(const void *p)
{
	return ((const struct nofork_head *)p - 1)->maplen != 0;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p;

	if (nmemb == 0 || size == 0)
		fatalx("xcalloc: zero size");
	if ((p = calloc(nmemb, size)) == NULL)
		fatalx("xcalloc: allocating %zu * %zu bytes: out of memory",
		    nmemb, size);
	return p;
}

void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (nmemb == 0 || size == 0)
		fatalx("xreallocarray: zero size");
	if ((p = reallocarray(ptr, nmemb, size)) == NULL)
		fatalx(
		    "xreallocarray: allocating %zu * %zu bytes: out of memory",
		    nmemb, size);
	return p;
}

char *
xstrdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		fatalx("xstrdup: out of memory");
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char *p;

	if ((p = strndup(s, n)) == NULL)
		fatalx("xstrndup: out of memory");
	return p;
}

/* printf into a new string. Caller frees. */
char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("xasprintf: out of memory");
	return p;
}
