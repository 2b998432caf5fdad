/*
 * floe: etag.h -- floe's own entity tags. A client ETag binds the upstream
 * ETag to the side that produced it and the route version of the object,
 * so a 304 can never keep a client on the side its table has left: an
 * If-None-Match minted for another side or an older route version is
 * dropped, not forwarded. Pure.
 *
 * Form: [W/]"fl1.<w|l>.<version hex>.<upstream opaque-tag>"
 */
#ifndef FLOE_PROXY_ETAG_H
#define FLOE_PROXY_ETAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routing/route.h"

#define ETAG_MAX 512

/*
 * Mint a client ETag from the upstream ETag UP (as the upstream sent it,
 * quotes and W/ included). 0, or -1 if UP is not an entity-tag or too long.
 */
int etag_mint(const char *up, size_t uplen, enum route_side, uint64_t version,
    char *out, size_t outlen);
/*
 * Translate a client If-None-Match value (one or more entity-tags, comma
 * separated, or "*") into the upstream one: only tags minted for SIDE and
 * VERSION are kept. Returns the length written to OUT, 0 if nothing may be
 * forwarded, -1 if malformed.
 */
int etag_unmint(const char *inm, size_t len, enum route_side, uint64_t version,
    char *out, size_t outlen);

/*
 * Does the If-None-Match value INM name a tag floe minted for the side
 * other than SIDE? (A client revalidating a table that has moved.)
 */
bool etag_is_other_side(const char *inm, size_t len, enum route_side);

#endif
