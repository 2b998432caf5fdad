/*
 * floe: compat.h -- portability glue shared by floe, floectl and the tests.
 * Owns nothing; defines __unused before <sys/tree.h>, which libbsd needs.
 */
#ifndef FLOE_LIB_COMPAT_H
#define FLOE_LIB_COMPAT_H

#ifndef __unused
#define __unused __attribute__((__unused__))
#endif

#include <sys/queue.h>
#include <sys/tree.h>

#define nitems(a) (sizeof(a) / sizeof((a)[0]))

#endif
