/*
 * floe: cluster.h -- cluster mode on etcd ([cluster] in floe.conf): etcd
 * holds the routes, waves and events, and this node's store is its copy.
 * Owns the etcd client, the mirror (a paged range pinned to one revision,
 * then a watch from the next one), this node's leased key under
 * PREFIX/nodes/, the leader key PREFIX/leader (which node polls the
 * catalogs), what it knows of the other nodes, and the writes in
 * flight (each a txn; its answer waits until the mirror applied it).
 * Borrows struct floe (its store, fetch client and rollback log). The
 * data path never calls it. Loop thread only.
 */
#ifndef FLOE_PROXY_CLUSTER_H
#define FLOE_PROXY_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cluster;
struct floe;
struct store_capture;
struct store_reader_in;
typedef struct json_t json_t;

/*
 * Start cluster mode for F (F's conf has [cluster] etcd): the mirror
 * serves what the store holds at once and catches up from etcd. NULL
 * with a message in ERR if the etcd client cannot be made.
 */
struct cluster *cluster_new(struct floe *f, char *err, size_t errlen);
/* Stop: revoke the node's lease (not waited for), cancel all, free. */
void cluster_free(struct cluster *);

/*
 * The end of a write: STATUS 200 once etcd took it and this node applied
 * it; 202 for a rollback etcd could not take that holds on this node and
 * is pending for etcd; else the HTTP status to answer (409: refused by
 * etcd, a concurrent change or etcd unreachable or timing out, MSG naming
 * which and whether anything may have changed; 503: floe is stopping).
 */
typedef void (*cluster_done_cb)(int status, const char *msg, void *arg);
/*
 * Commit the writes CAP recorded (taken: cleared here) in etcd: one txn,
 * comparing each wave's revision to the one it was decided on, or txns
 * of at most 128 operations for a bulk import. DONE is always called,
 * later, from the loop.
 */
void cluster_commit(struct cluster *, struct store_capture *cap,
    cluster_done_cb done, void *arg);

/*
 * Publish the reader sightings IN (N) this node just flushed into its
 * store, for the other nodes' stores (cluster_readers.c). Accepts a NULL
 * cluster.
 */
void cluster_readers_publish(struct cluster *, const struct store_reader_in *,
    size_t n);

/*
 * Whether this node's reader inventory may lack loads another node knows
 * of: it resynced, has not merged a copy yet, and another node is up to
 * send one (cluster_rcopy.c). MSG says so for an operator. NULL: false.
 */
bool cluster_readers_incomplete(const struct cluster *, char *msg,
    size_t msglen);

/*
 * Whether this node is the leader, sure of it now: the one node of the
 * cluster that runs the freshness and count polls. False without etcd
 * once this node's lease may have run out. NULL: false.
 */
bool cluster_is_leader(const struct cluster *);
/* The leader's name as last seen, or NULL if none is known. */
const char *cluster_leader_name(const struct cluster *);
/*
 * floe is draining: stop polling and give the leader key up at once (not
 * waited for), so that another node takes the polls without waiting for
 * this node's lease to run out.
 */
void cluster_leader_resign(struct cluster *);

/* Whether the mirror is watching etcd now. */
bool cluster_connected(const struct cluster *);
/*
 * GET /cluster and the "cluster" part of /status: this node, every node
 * seen under PREFIX/nodes/, lagging or disagreeing ones flagged. Caller
 * decrefs.
 */
json_t *cluster_status(struct cluster *);

#endif
