/*
 * floe: discover.h -- keeps each upstream's catalog config current: reads
 * its /v1/config at start (retrying with backoff while it cannot be
 * reached) and every config_refresh. Owns its timers and fetch requests;
 * updates floe->cat[side] and calls floe_catalog_changed().
 */
#ifndef FLOE_PROXY_DISCOVER_H
#define FLOE_PROXY_DISCOVER_H

struct floe;
struct discover;

struct discover *discover_new(struct floe *);
void discover_free(struct discover *);
/* Read both configs now (a reload or an operator asking). */
void discover_kick(struct discover *);

#endif
