/*
 * floe: watch_impl.h -- private to the trigger watcher (watch.c,
 * watch_trigger.c, watch_poll.c); nothing else includes it but its unit
 * test. Owns struct watch (the counter table, the suspects, the timers,
 * the poll list, the pages in flight) and the steps the files hand each
 * other. Callers use proxy/watch.h. Loop thread only.
 */
#ifndef FLOE_PROXY_WATCH_IMPL_H
#define FLOE_PROXY_WATCH_IMPL_H

#include <sys/queue.h>

#include <stdbool.h>
#include <stdint.h>

#include <event2/util.h>
#include <jansson.h>

#include "policy/trigger.h"
#include "routing/route.h"
#include "routing/store.h"

struct event;
struct evbuffer;
struct fetch_req;
struct floe;

#define WATCH_SUSPECTS 64
#define WATCH_PAGED 256
#define WATCH_NAME_MAX (STORE_KEY_MAX * 3 + 8)

struct watch_obj;

/* One side's poll of one object: the fetch callback's argument. */
struct watch_poll {
	struct watch_obj *o;
	enum route_side side;
	struct fetch_req *req;
	char etag[256]; /* the catalog's ETag of the snapshot held */
	char etag_new[256]; /* what fetch copies in */
	struct trigger_snap snap;
	bool ever; /* SNAP was read once (a 304 keeps it) */
	bool known; /* read in this cycle */
	bool known_last; /* read in the last whole cycle */
	char why[160]; /* why not, for /status */
	uint64_t cred_gen; /* of floe's token the request carried */
};

/* An object of a moved wave, with what the poller knows of it. */
struct watch_obj {
	struct watch *w;
	struct route_obj key;
	char name[WATCH_NAME_MAX];
	uint32_t wave;
	bool count_off;
	bool seen; /* still in a watched wave (rebuild) */
	struct watch_poll p[ROUTE_NSIDES];
	struct trigger_fresh fresh;
	enum trigger_count count;
	const char *count_why;
	/* The snapshot pair of the last mismatch recorded in the ledger. */
	bool recorded;
	int64_t rec_id[ROUTE_NSIDES];
	/* Split brain: the warehouse snapshot last seen while frozen. */
	bool sb_has;
	int64_t sb_id;
	int64_t sb_ts_ms;
};

/* A webhook page being delivered. */
struct watch_page {
	struct watch *w;
	char *body;
	uint32_t wave;
	int tries;
	struct event *timer;
	struct fetch_req *req;
	TAILQ_ENTRY(watch_page) entry;
};

/* A frozen wave already paged about for one trigger. */
struct watch_paged {
	uint32_t wave;
	enum trigger_kind kind;
	uint64_t seq;
};

/* The watcher: one per floe (f->watch). */
struct watch {
	struct floe *f;
	struct trigger_table tab;
	uint64_t window_ms;
	struct event *check; /* activated from the request path */
	bool check_pending;
	uint32_t suspects[WATCH_SUSPECTS];
	unsigned nsuspects;
	bool suspects_overflow;
	int64_t suspect_us; /* when the first suspect was counted */
	struct event *tick; /* the error trigger every bucket */
	struct event *poll; /* the freshness poll every interval */
	struct watch_obj **objs;
	size_t nobjs;
	size_t objs_cap;
	/* The store's event sequence the poll list was built at. */
	bool built;
	uint64_t built_seq;
	size_t next_job; /* object * 2 + side */
	unsigned inflight;
	bool cycling;
	bool polling; /* the last poll ran here (cluster: the leader) */
	int64_t next_poll_ms; /* when the poll timer fires next */
	uint64_t cycles;
	int64_t last_cycle_ms;
	TAILQ_HEAD(, watch_page) pages;
	uint64_t pages_sent, pages_delivered, pages_failed;
	uint64_t tries_failed; /* every try that got no 2xx */
	/* The rollbacks made since watch_fired_take last took them. */
	json_t *fired;
	struct watch_paged paged[WATCH_PAGED];
	size_t npaged;
	uint64_t rollbacks;
};

/* watch.c: the watcher's life and its pages. */
int64_t watch_cached_ms(struct watch *);
void watch_schedule(struct event *, uint64_t ms);
void watch_page(struct watch *, uint32_t, json_t *);
/*
 * watch_page of a line's text LINE (LEN bytes, borrowed), with
 * "rollback_log":RLOG added last unless RLOG is NULL: the body
 * watch_page gives the line as an object.
 */
void watch_page_text(struct watch *, uint32_t, const char *line, size_t len,
    const char *rlog);

/* watch_trigger.c: the triggers evaluated, the waves moved back. */
void watch_check_cb(evutil_socket_t, short, void *);
void watch_tick_cb(evutil_socket_t, short, void *);
void watch_check_wave(struct watch *, uint32_t, int64_t since_us);
void watch_fire(struct watch *, uint32_t, enum trigger_kind, json_t *, json_t *,
    int64_t, const char *, int64_t);
void watch_cycle_end(struct watch *);

/* watch_split.c: the split-brain alarm of frozen waves. */
void watch_split_sample(struct watch *, struct watch_obj *, int64_t);
void watch_split_metrics_cb(struct evbuffer *, void *);

/* watch_poll.c: the freshness and count polls. */
void watch_poll_cb(evutil_socket_t, short, void *);
void watch_rebuild(struct watch *);

/*
 * watch_view.c: every armed wave's view for GET /status (caller frees),
 * and the triggers' metric families (a stats_metrics_cb; ARG: the watch).
 */
json_t *watch_views_json(struct watch *);
void watch_metrics_cb(struct evbuffer *, void *);

#endif
