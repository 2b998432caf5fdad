/*
 * floe: xmalloc.h -- allocators that never return NULL: out of memory is
 * fatal. Their results are not checked by callers.
 */
#ifndef FLOE_LIB_XMALLOC_H
#define FLOE_LIB_XMALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xreallocarray(void *, size_t, size_t);
char *xstrdup(const char *);
char *xstrndup(const char *, size_t);
/*
 * Memory a forked child does not get, for what floe keeps of large
 * answers: a block of XMALLOC_NOFORK_MIN bytes or more is a mapping of its
 * own marked MADV_DONTFORK, so that the loop's stall at a fork (the kernel
 * copies the page tables of what the child gets) does not grow with it; a
 * smaller block, one past 8,192 such mappings, or one the kernel would not
 * map, is malloc's. A forked child must not touch such a block. Free it
 * with xfree_nofork (NULL is accepted); xnofork_mapped says whether it is
 * a mapping of its own. One thread only (floe's loop).
 */
#define XMALLOC_NOFORK_MIN (64 * 1024)
void *xmalloc_nofork(size_t);
void xfree_nofork(void *);
bool xnofork_mapped(const void *);
/* printf into a new string. Caller frees. */
char *xasprintf(const char *, ...)
    __attribute__((__format__(__printf__, 1, 2)));

#endif
