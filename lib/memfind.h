/*
 * floe: memfind.h -- find a byte string in a buffer, fast for the case the
 * request path has: an upstream URL (tens of bytes) in a LoadTable answer
 * (kilobytes) that almost never holds it.
 */
#ifndef FLOE_LIB_MEMFIND_H
#define FLOE_LIB_MEMFIND_H

#include <stddef.h>

/* The first NEEDLE (NLEN bytes) in HAY (LEN bytes), or NULL; as memmem. */
const void *memfind(const void *hay, size_t len, const void *needle,
    size_t nlen);

#endif
