/*
 * floe: upstream_idle.c -- how long a pooled connection may stay idle
 * (pool_idle_timeout). A plain connection has a timer of its own, armed
 * when it connects and never moved for a request: a connection only notes
 * when it went idle, and the timer, when it fires, closes it if it has
 * been idle that long or is armed again for what is left (for the whole
 * timeout while it is busy: the request's own timer governs then). The
 * read event carries no timeout, which libevent would re-add at every
 * read. A TLS connection's bufferevent timeouts are set and cleared.
 */
#include <stdbool.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "lib/log.h"
#include "lib/units.h"
#include "proxy/conf.h"
#include "proxy/upstream.h"
#include "proxy/upstream_impl.h"

static void upstream_idle_cb(evutil_socket_t, short, void *);

/*
 * Bound C's life while it is idle (ON, since NOW), or not while it is
 * busy. NOW is when its answer was read whole: the microseconds floe then
 * takes to reply to the client are not part of its idle time.
 */
void
upstream_idle_timer(struct upconn *c, bool on, int64_t now)
{
	if (c->rev != NULL) {
		if (on)
			c->idle_us = now;
	} else
		bufferevent_set_timeouts(c->bev, on ? &c->u->idle_tv : NULL,
		    NULL);
}

/* A plain connection connected: its timer, armed for the whole timeout. */
void
upstream_idle_start(struct upconn *c)
{
	if ((c->idle_ev = evtimer_new(c->u->base, upstream_idle_cb, c)) ==
		NULL ||
	    evtimer_add(c->idle_ev, &c->u->idle_tv) == -1)
		fatalx("%s: out of memory", __func__);
}

/*
 * The timer fired. Busy: the request's own timer governs; idle long
 * enough: close it; idle for less: wait out the rest.
 */
static void
upstream_idle_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct upconn *c = arg;
	struct timeval tv;
	int64_t left;

	if (c->x != NULL) {
		evtimer_add(c->idle_ev, &c->u->idle_tv);
		return;
	}
	left = units_left_us(c->idle_us, c->u->t->pool_idle_ms);
	if (left <= 1000) {
		upstream_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT,
		    c);
		return;
	}
	tv = units_us_tv(left);
	evtimer_add(c->idle_ev, &tv);
}
