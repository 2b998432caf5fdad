/*
 * floe: floe.c -- what struct floe can say of itself: whether it is ready.
 */
#include <stdbool.h>

#include "proxy/catalog.h"
#include "proxy/floe.h"
#include "routing/store.h"

/* Both catalog configs known and the store open and healthy. */
bool
floe_is_ready(const struct floe *f)
{
	return f->store != NULL && store_is_healthy(f->store) &&
	    f->cat[ROUTE_WAREHOUSE]->known && f->cat[ROUTE_LAKEHOUSE]->known;
}
