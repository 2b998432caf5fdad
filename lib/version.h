/*
 * floe: version.h -- the version floe and floectl were built from, shared
 * by both: `git describe --always --dirty` of the checkout, else the first
 * line of a source tarball's VERSION file, else "unknown". The Makefile
 * computes it and hands it to version.c alone. Owns nothing.
 */
#ifndef FLOE_LIB_VERSION_H
#define FLOE_LIB_VERSION_H

/* The version string, such as "16f54ac" or "v1.2-3-g9e1f2aa-dirty". */
const char *version_get(void);

#endif
