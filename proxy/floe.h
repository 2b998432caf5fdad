/*
 * floe: floe.h -- struct floe, the daemon's root object, as data: the event
 * base, the active conf, the store, one upstream pool and one learned
 * catalog config per side, the control-plane client, the listeners and
 * the credentials floe presents to them, the stats. main.c builds it, in order,
 * and frees it; the modules it holds borrow it. One per process; everything
 * runs on its loop thread (a bulk import's parse and write run in a child
 * process: worker.h).
 */
#ifndef FLOE_PROXY_FLOE_H
#define FLOE_PROXY_FLOE_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/stats.h"
#include "routing/route.h"

struct event;
struct event_base;
struct conf;
struct store;
struct upstream;
struct catalog;
struct fetch;
struct server;
struct discover;
struct rlog;
struct worker;
struct auth;
struct tlsctx;
struct cache;
struct memo;
struct watch;
struct admin_sock;
struct inventory;
struct cluster;
struct cred;
struct obs;
struct workers;
struct workers_slot;
typedef struct json_t json_t;

struct floe {
	struct event_base *base;
	struct conf *conf;
	char *conf_path;
	struct store *store;
	struct upstream *up[ROUTE_NSIDES];
	struct cred *cred[ROUTE_NSIDES]; /* how floe authenticates to each */
	struct catalog *cat[ROUTE_NSIDES];
	struct fetch *fetch;
	struct discover *discover;
	struct server *front; /* the REST listener */
	struct server *admin; /* the admin socket */
	struct rlog *rlog; /* the rollback log, or NULL if it cannot open */
	struct cache *cache; /* LoadTable answers */
	struct memo *memo; /* checked answers, per side and table */
	struct watch *watch; /* the rollback triggers */
	struct inventory *inv; /* who loads which table from which side */
	struct worker *worker; /* bulk imports, off the loop; NULL in tests */
	struct admin_sock *admin_sock; /* who may, and the changes held */
	struct obs *obs; /* metrics_listen, and the waves' metrics */
	struct auth *auth; /* client authentication; NULL: mode none */
	struct tlsctx *tls; /* the listener's TLS context, or NULL */
	struct cluster *cluster; /* cluster mode ([cluster]), or NULL */
	/*
	 * workers = N > 1: the memory shared with the workers (NULL: one
	 * process, as with workers = 1); in a worker, its own slot of it
	 * (NULL in the master).
	 */
	struct workers *workers;
	struct workers_slot *wslot;
	struct event *sig[4];
	struct event *tick; /* 1 s housekeeping */
	int access_fd; /* -1: access log off */
	int64_t started_ms;
	uint64_t conf_gen; /* 1: the conf floe started with; +1 a reload */
	int64_t conf_loaded_ms; /* when the running conf was read */
	json_t *last_reload; /* the last reload's outcome, or NULL */
	/*
	 * Read the conf again now, as SIGHUP does (main.c sets it). Returns
	 * the outcome (see docs/operating.md, "Reload"); caller decrefs.
	 */
	json_t *(*reload)(struct floe *);
	bool draining;
	struct stats stats; /* the counters; the parts of /status, /metrics */
};

/* Both upstream configs known and the store healthy. */
bool floe_is_ready(const struct floe *);

#endif
