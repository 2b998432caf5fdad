/*
 * floe: version.c -- the build's version string. FLOE_VERSION comes from
 * the Makefile (-D, for this file only, so that a new commit rebuilds one
 * object); a build without it says "unknown".
 */
#include "lib/version.h"

#ifndef FLOE_VERSION
#define FLOE_VERSION "unknown"
#endif

/* The version floe and floectl were built from. */
const char *
version_get(void)
{
	return FLOE_VERSION;
}
