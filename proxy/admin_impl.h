/*
 * floe: admin_impl.h -- private to the admin API (admin.c and its
 * admin_*.c parts, but admin_sock.c); nothing else includes it. Owns
 * struct admin_req, the one request being served, and the helpers every
 * resource's file shares: answers and errors, the query and the body,
 * the waves' list and state, the gates' evidence, the worker's jobs.
 * Callers use proxy/admin.h.
 */
#ifndef FLOE_PROXY_ADMIN_IMPL_H
#define FLOE_PROXY_ADMIN_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policy/gate.h"
#include "proxy/admin.h"
#include "routing/route.h"
#include "routing/store.h"

#define ADMIN_MAX_SEGS 4
#define ADMIN_EVENTS_LIMIT 1000 /* default page of GET /events */
#define ADMIN_EVENTS_MAX 10000 /* largest page a client may ask for */
#define ADMIN_ELIGIBLE_MAX 100000 /* largest page of GET /eligibility */
/* A read's answer larger than this is moved to its peer, not copied. */
#define ADMIN_REPLY_MOVE (64 * 1024)
/* The most rows of a page the loop builds itself (admin_rows_many). */
#define ADMIN_LOOP_ROWS 1000
/* What a read's answer holds, for admin_rows_many. */
enum {
	ADMIN_ROWS_NONE, /* little: always on the loop */
	ADMIN_ROWS_PAGE, /* rows, a page of them by default */
	ADMIN_ROWS_ALL, /* rows, every one of them by default */
	ADMIN_ROWS_FILE, /* the rollback log's lines */
};
/* The pages of GET /eligibility one child reads ahead, in bytes at most. */
#define ADMIN_ELIGIBLE_AHEAD (32u << 20)
/* How long the loop answers with them while the store is unchanged. */
#define ADMIN_ELIGIBLE_KEEP_MS (60 * 1000)
#define ADMIN_JSON_FLAGS (JSON_COMPACT)
#define ADMIN_CT_JSON "application/json"
#define ADMIN_CT_METRICS "text/plain; version=0.0.4"
#define ADMIN_TEXT_MAX (STORE_KEY_MAX * 3 + 8) /* an object's text form */
#define ADMIN_MSG_MAX (ADMIN_TEXT_MAX + 256) /* a guard's reason */

struct evbuffer;
struct ledger_rec;

/* One request being served. */
struct admin_req {
	struct floe *f;
	struct store *st;
	const char *method;
	char *path; /* raw path, without the query */
	char *query; /* raw query, or NULL */
	char *seg[ADMIN_MAX_SEGS]; /* decoded path segments */
	int nseg;
	struct evbuffer *in; /* the body as received */
	const char *body; /* IN as one block: see admin_req_body */
	size_t body_len;
	admin_later_cb later_cb; /* NULL: answer at once */
	void *later_arg;
	bool later; /* answered through LATER_CB */
	char actor[32]; /* "uid N" */
	int64_t now_ms;
	struct admin_reply *reply;
	/* Around every error message: the record at fault, the outcome. */
	char where[ADMIN_TEXT_MAX + 64];
	const char *outcome;
	/*
	 * Cluster mode: ledger records for the reconcile trigger, acted on
	 * only once etcd took the change (admin_cluster.c). Owned.
	 */
	struct evbuffer *after;
	/*
	 * A worker's child wrote the rollback log's pending lines (an
	 * operator's rollback): RLOG_E is how it went (0 or the errno), for
	 * the loop's counters and events (admin_job.c).
	 */
	bool rlog_done;
	int rlog_e;
	/*
	 * A read's child: the pages that follow the one answered, for the
	 * loop to answer the next requests with (GET /eligibility); NULL on
	 * the loop.
	 */
	struct evbuffer *ahead;
};

/* One wave as GET /waves sees it: its record and what points at it. */
struct admin_wave_sum {
	uint32_t n;
	bool has_rec;
	struct store_wave w;
	unsigned objects;
	unsigned rules;
};

struct admin_wave_list {
	struct admin_wave_sum *v;
	size_t len;
	size_t cap;
};

/*
 * A wave's objects and their gate evidence: its own tables, the tables
 * its rules cover (found in the ledger), and rules that cover none.
 */
struct admin_evidence {
	uint32_t wave;
	struct store *st;
	struct gate_params defaults; /* [policy] */
	struct gate_params p; /* with the wave's overrides */
	char **names;
	struct route_obj *keys;
	struct gate_obj *cut; /* cutover evidence */
	struct gate_obj *dec; /* decommission evidence */
	size_t n;
	size_t cap;
	/* While expanding a rule. */
	const struct route_obj *rule;
	size_t found;
	bool failed;
	/* The records of the object being read. */
	struct ledger_rec *recs;
	size_t nrecs;
	size_t rcap;
};

/* One record of a bulk import, from admin_records. */
typedef int (*admin_record_fn)(struct admin_req *, json_t *, size_t, void *);
/* A bulk import's work, run by admin_job_start. */
typedef void (*admin_job_fn)(struct admin_req *, struct evbuffer *);

/* admin.c: the answers. */
void admin_error(struct admin_req *, int, const char *, ...)
    __attribute__((__format__(__printf__, 3, 4)));
void admin_reply_json(struct admin_req *, int, json_t *);
void admin_reply_fired(struct floe *, struct admin_reply *);
void admin_refused(struct admin_req *, const char *, json_t *);
json_t *admin_time_json(int64_t);
json_t *admin_str_json(const char *);
/* admin.c: the query string. */
int admin_query_get(const struct admin_req *, const char *, char **);
int admin_query_uint(struct admin_req *, const char *, unsigned long long,
    unsigned long long, const char *, unsigned long long *);

/* admin_body.c: the body and the names in it. */
json_t *admin_body(struct admin_req *, bool);
int admin_records(struct admin_req *, const char *, const char **,
    admin_record_fn, void *);
int admin_body_check(struct admin_req *, json_t *, const char *const *);
int admin_body_string(struct admin_req *, json_t *, const char *, bool,
    const char **);
int admin_body_int(struct admin_req *, json_t *, const char *, bool, json_int_t,
    json_int_t, json_int_t, json_int_t *);
int admin_body_bool(struct admin_req *, json_t *, const char *, bool *);
int admin_parse_object(struct admin_req *, const char *, struct route_obj *);
int admin_query_object(struct admin_req *, const char *, struct route_obj *,
    bool *);
int admin_parse_wave(struct admin_req *, const char *, uint32_t *);

/* admin_waves.c: a wave's state, every wave. */
int admin_wave_state(struct admin_req *, uint32_t, struct store_wave *, bool *);
int admin_waves_collect(struct store *, struct admin_wave_list *);
json_t *admin_wave_sum_json(const struct admin_wave_sum *);

/* admin_evidence.c: the policy and the gates' evidence. */
void admin_policy(const struct admin_req *, struct gate_params *, uint64_t *);
int admin_evidence(struct admin_req *, uint32_t, const struct store_wave *,
    struct admin_evidence *);
void admin_evidence_clear(struct admin_evidence *);
bool admin_verdict(const struct admin_evidence *, bool, const char *, char *,
    size_t);
json_t *admin_evidence_json(const struct admin_evidence *, bool, bool);

/* admin_readers.c: the stale readers of a wave, as its gate sees them. */
int admin_readers_stale(struct admin_req *, const struct admin_evidence *,
    const struct store_wave *, json_t **);
int admin_readers_gate(struct admin_req *, const struct admin_evidence *,
    const struct store_wave *, char *, size_t, json_t **);
json_t *admin_readers_recent(struct admin_req *, const struct route_obj *,
    size_t, int64_t);
/* Dry runs look this far back for who read what they would move. */
#define ADMIN_DRY_READERS_MS (24 * 3600 * 1000LL)

/* admin_job.c: run a bulk import, in the worker's child if it can. */
void admin_job_start(struct admin_req *, admin_job_fn);
/* Hand the ledger records of ALARMS to the reconcile trigger. */
void admin_job_alarms(struct floe *, struct evbuffer *);
/*
 * The same for a read that scans the store (GET /eligibility): the loop,
 * and the engine requests on it, are not held while it reads.
 */
void admin_job_read(struct admin_req *, admin_job_fn);
/*
 * The same for a gated wave move (admin_verbs.c): the child reads the
 * gate's evidence and makes the move in its own store.
 */
void admin_job_change(struct admin_req *, admin_job_fn);
/* admin_job_read, for a handler of admin_dispatch's table. */
void admin_job_read_cmd(struct admin_req *, void (*)(struct admin_req *));
/*
 * The same for an operator's rollback: the loop's rollback log is held
 * (rlog_hold) while the child writes the lines pending, and told how it
 * went once the child is done.
 */
void admin_job_rollback(struct admin_req *, admin_job_fn);
/*
 * admin_rlog.c: an operator's rollback and its log line. Whether R's
 * rollback is made by the worker's child (its line is written there, off
 * the loop). The line of wave N's rollback (FROM, REASON) is built from
 * the store and kept pending in the rollback's txn (admin_rlog_line is a
 * wave_line_fn on it); admin_rlog_write appends and fsyncs the pending
 * lines where R runs and says how in the answer's "rollback_log".
 */
bool admin_rlog_offload(const struct admin_req *);
struct admin_rlog_line {
	json_t *line; /* without "from" yet */
};
void admin_rlog_line_init(struct admin_req *, uint32_t n, const char *reason,
    struct admin_rlog_line *);
char *admin_rlog_line(int from, void *arg);
void admin_rlog_line_clear(struct admin_rlog_line *);
json_t *admin_rlog_write(struct admin_req *);

/* admin_cluster.c: changes through etcd in cluster mode. */
bool admin_cluster_captures(const struct admin_req *);
void admin_cluster_run(struct admin_req *, void (*)(struct admin_req *));

/* The resources, one handler each (admin_dispatch's table). */
void admin_cluster_get(struct admin_req *);
void admin_status(struct admin_req *);
void admin_metrics(struct admin_req *);
void admin_events_get(struct admin_req *);
void admin_rollbacks_get(struct admin_req *);
void admin_routes_get(struct admin_req *);
void admin_routes_post(struct admin_req *);
void admin_routes_delete(struct admin_req *);
void admin_routes_import(struct admin_req *);
void admin_resolve(struct admin_req *);
void admin_waves_get(struct admin_req *);
void admin_wave_get(struct admin_req *);
void admin_wave_flip(struct admin_req *);
void admin_wave_rollback(struct admin_req *);
void admin_wave_ack(struct admin_req *);
void admin_wave_signoff(struct admin_req *);
void admin_wave_freeze(struct admin_req *);
void admin_wave_retire(struct admin_req *);
void admin_wave_ack_alarm(struct admin_req *);
void admin_wave_set(struct admin_req *);
void admin_wave_errors(struct admin_req *);
void admin_ledger_get(struct admin_req *);
void admin_ledger_post(struct admin_req *);
void admin_eligibility(struct admin_req *);
void admin_readers_get(struct admin_req *);
void admin_readers_forget(struct admin_req *);

#endif
