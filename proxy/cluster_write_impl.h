/*
 * floe: cluster_write_impl.h -- a write in cluster mode, shared by
 * cluster_write.c (one txn: decide, compare, commit, answer) and
 * cluster_bulk.c (a bulk import across txns, all or nothing).
 */
#ifndef FLOE_PROXY_CLUSTER_WRITE_IMPL_H
#define FLOE_PROXY_CLUSTER_WRITE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "proxy/cluster.h"
#include "proxy/etcd.h"
#include "routing/store.h"

/* One write in flight: its operations, the txn sent, its waiting answer. */
struct cluster_write {
	TAILQ_ENTRY(cluster_write) entry;
	struct cluster *c;
	struct etcd_op *ops; /* all of them; keys and values owned */
	struct etcd_cmp *cmps; /* what its one txn compares */
	size_t nops;
	size_t ncmps;
	uint32_t wave; /* the wave compared, for the refusal */
	const char *wkey; /* its key (an operation's or in ckeys), or NULL */
	bool rollback; /* its new state is rolled_back */
	int64_t decided; /* the mod_revision it was decided on */
	int64_t read; /* the revision this node's copy was at (applied) */
	int64_t revision; /* the revision etcd took it at */
	bool committed; /* etcd took it (a bulk import: its commit txn) */
	bool lost; /* etcd refused its compares: another change won */
	struct etcd_call *call; /* its txn (a bulk's: lease, open, commit) */
	struct etcd_call *range; /* reading the concurrent change */
	struct event *timer; /* gives up waiting for the mirror */
	int now_status; /* answered on the next loop turn, with now_msg */
	const char *now_msg;
	char now_buf[192];
	cluster_done_cb done;
	void *arg;
	struct cluster_touch *touch; /* the waves whose gates it changes */
	size_t ntouch;
	char **ckeys; /* keys of compares no operation owns */
	size_t nckeys;
	bool gated; /* a transition that compares its wave's basis */
	bool routes; /* it changes routes: puts PREFIX/basis/routes */
	bool ledger; /* it adds ledger records: compares basis/routes */
	/* A bulk import (more than one txn): cluster_import.c's design. */
	bool bulk;
	struct cluster_chunk *chunks; /* txns of CLUSTER_TXN_OPS at most */
	size_t nchunks;
	size_t sent; /* chunks sent */
	size_t taken; /* chunks etcd took */
	size_t inflight; /* sent and not answered */
	char id[128]; /* NODE-MS-N */
	char *ikey; /* PREFIX/imports/ID */
	size_t ndata; /* its records: ops[0..ndata) */
	int64_t begun; /* the revision it was decided on */
	struct etcd_cmp *kcmps; /* one per record: not changed since begun */
	int64_t lease; /* the import record's own lease */
	unsigned ctries; /* checks of its commit after a timeout */
	struct etcd_call *kcall; /* a keepalive of it */
	struct event *ka; /* renews it every third of its TTL */
};

/* A wave whose gates a write changes (PREFIX/basis/N is put). */
struct cluster_touch {
	uint32_t wave;
	bool guard; /* a route leaves or joins it: its record is compared */
};

/* One txn of a write. */
struct cluster_chunk {
	struct cluster_write *w;
	struct etcd_call *call;
	size_t first; /* its first op */
	size_t n;
	unsigned tries; /* bulk: checks after a timeout */
};

/*
 * A bulk import's txn (or commit) that timed out is checked, and the check
 * repeated while it times out too, this many times in all.
 */
#define CLUSTER_BULK_TRIES 5

/* cluster_write.c */
void cluster_write_end(struct cluster_write *, int, const char *);
void cluster_basis_op(struct cluster *, uint32_t, struct etcd_op *);
void cluster_basis_named_op(struct cluster *, const char *, struct etcd_op *);
void cluster_cmp_unchanged(struct etcd_cmp *, const char *, int64_t);

/* cluster_bulk.c */
void cluster_bulk_wrap(struct cluster *, struct cluster_write *,
    struct store_cap_op *);
void cluster_bulk_start(struct cluster_write *);
void cluster_bulk_dropped_cb(const struct etcd_result *, void *);

#endif
