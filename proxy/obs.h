/*
 * floe: obs.h -- the read-only observability listener (metrics_listen):
 * GET /metrics (Prometheus text), GET / (the status page) and GET
 * /status.json, over plain HTTP on TCP. Nothing on it changes state or
 * shows a secret: its bind address is its access control. Also the
 * metric families of the waves (state, canary share, rollbacks per
 * trigger, read from the rollback log), added to the registry for the
 * admin socket's /metrics too. Owns its server, the rollback log's
 * counts and an index of the store's events by wave. Loop thread only.
 */
#ifndef FLOE_PROXY_OBS_H
#define FLOE_PROXY_OBS_H

#include <stddef.h>

struct floe;
struct obs;

/*
 * Start: the waves' metric families join F's registry, and with HOSTPORT
 * (may be NULL: no listener) the listener opens. NULL with ERR.
 */
struct obs *obs_new(struct floe *, const char *hostport, char *err,
    size_t errlen);
/* Stop accepting; requests in flight finish (SIGTERM). Accepts NULL. */
void obs_drain(struct obs *);
/* Open connections, for the drain. */
unsigned obs_nconns(const struct obs *);
/* Close the listener and every connection, and free. Accepts NULL. */
void obs_free(struct obs *);

#endif
