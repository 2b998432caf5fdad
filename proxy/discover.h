/*
 * floe: discover.h -- keeps each upstream's catalog config current: reads
 * its /v1/config at start (retrying with backoff while it cannot be
 * reached) and every config_refresh. Owns its timers and fetch requests;
 * updates floe->cat[side] and tells its owner through the callback given
 * to discover_new.
 */
#ifndef FLOE_PROXY_DISCOVER_H
#define FLOE_PROXY_DISCOVER_H

#include <stdbool.h>

#include "routing/route.h"

struct floe;
struct discover;

/*
 * SIDE's config was read and floe->cat[SIDE] holds it: CHANGED if it
 * differs from the one held before (the first read always does).
 */
typedef void (
    *discover_changed_cb)(enum route_side side, bool changed, void *arg);

/*
 * Start reading both configs of F (its base, conf, catalogs and fetch must
 * exist). CB (may be NULL) is called with ARG after each read.
 */
struct discover *discover_new(struct floe *f, discover_changed_cb cb,
    void *arg);
void discover_free(struct discover *);
/* Read both configs now (a reload or an operator asking). */
void discover_kick(struct discover *);
/*
 * Milliseconds until SIDE's config is read again (0: a read is under way,
 * or D is NULL), for a Retry-After.
 */
uint64_t discover_retry_ms(const struct discover *d, enum route_side side);

#endif
