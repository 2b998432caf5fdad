/*
 * floe: xmalloc.h -- allocators that never return NULL: out of memory is
 * fatal. Their results are not checked by callers.
 */
#ifndef FLOE_LIB_XMALLOC_H
#define FLOE_LIB_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xreallocarray(void *, size_t, size_t);
char *xstrdup(const char *);
char *xstrndup(const char *, size_t);
/* printf into a new string. Caller frees. */
char *xasprintf(const char *, ...)
    __attribute__((__format__(__printf__, 1, 2)));

#endif
