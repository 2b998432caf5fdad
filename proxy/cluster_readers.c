/*
 * floe: cluster_readers.c -- the reader inventory across the cluster. Each
 * node flushes its sightings into its own store (proxy/inventory.c) and
 * publishes the same batch to etcd as one key, PREFIX/readers/NODE/MS-N,
 * under a lease that lets it live 5 to 10 minutes; every other node's
 * mirror merges each batch it sees into its own store, in the txn that
 * applies its revision (a node's own batches are skipped: it has them).
 * So each node's readers records are the cluster's, and the decommission
 * gate and floectl readers read them where they run. What it costs etcd:
 * at most one put per node per flush (5 s) while tables are loaded, each
 * at most INVENTORY_BATCH records of at most about 620 bytes, and live
 * keys for the last 5-10 minutes only; each put reaches every node's
 * watch.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "proxy/etcd.h"
#include "routing/store.h"

#define CLUSTER_READERS_TTL 600 /* s: the lease batches go with */
#define CLUSTER_READERS_REGRANT_MS (300 * 1000) /* a new lease after */
#define CLUSTER_READERS_PEND_MAX (768 * 1024) /* bytes waiting, at most */

static void cluster_readers_grant_cb(const struct etcd_result *, void *);
static void cluster_readers_put(struct cluster *);
static void cluster_readers_put_cb(const struct etcd_result *, void *);

/*
 * Publish the batch IN (N records) that this node just flushed into its
 * store, as store_reader_wire writes them.
 */
void
cluster_readers_publish(struct cluster *c, const struct store_reader_in *in,
    size_t n)
{
	size_t i, need;

	if (c == NULL || n == 0)
		return;
	for (i = 0; i < n; i++) {
		if (c->rplen + STORE_READER_WIRE_MAX > c->rpcap) {
			c->rpcap = c->rpcap == 0 ? 65536 : c->rpcap * 2;
			c->rpend = xreallocarray(c->rpend, c->rpcap, 1);
		}
		if ((need = store_reader_wire(&in[i], c->rpend + c->rplen)) ==
		    0)
			continue;
		if (c->rplen + need > CLUSTER_READERS_PEND_MAX)
			c->rdropped++;
		else
			c->rplen += need;
	}
	cluster_readers_put(c);
}

/* Put what waits, under a lease young enough; get one first if not. */
static void
cluster_readers_put(struct cluster *c)
{
	struct etcd_op op = { .type = ETCD_OP_PUT };
	struct etcd_txn t = { 0 };
	char part[160], *key;
	size_t klen;

	if (c->rplen == 0 || c->rgrant != NULL || c->rput != NULL)
		return;
	if (c->rlease == 0 ||
	    units_now_ms() - c->rlease_ms > CLUSTER_READERS_REGRANT_MS) {
		c->rgrant = etcd_lease_grant(c->etcd, CLUSTER_READERS_TTL, 0,
		    cluster_readers_grant_cb, c);
		return;
	}
	snprintf(part, sizeof(part), "%s/%013" PRId64 "-%u", c->name,
	    units_now_ms(), ++c->rseq);
	cluster_key(c, "readers/", part, strlen(part), &key, &klen);
	op.key = key;
	op.key_len = klen;
	op.value = (const char *)c->rpend;
	op.value_len = c->rplen;
	op.lease = c->rlease;
	t.success = &op;
	t.nsuccess = 1;
	c->rput = etcd_txn(c->etcd, &t, cluster_readers_put_cb, c);
	c->rsent = c->rplen;
	free(key);
}

static void
cluster_readers_grant_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->rgrant = NULL;
	if (res->err != ETCD_OK || res->lease == 0) {
		if (!c->rfailing)
			log_warnx("cluster: reader sightings are not published "
				  "to etcd: lease: %s; the next flush tries "
				  "again",
			    res->error);
		c->rfailing = true;
		return;
	}
	c->rlease = res->lease;
	c->rlease_ms = units_now_ms();
	cluster_readers_put(c);
}

/*
 * The put answered: drop what it carried; on a failure keep it for the
 * next flush (what waits is bounded: past it, records are dropped).
 */
static void
cluster_readers_put_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->rput = NULL;
	if (res->err != ETCD_OK) {
		if (!c->rfailing)
			log_warnx("cluster: reader sightings are not published "
				  "to etcd: %s; the next flush tries again",
			    res->error);
		c->rfailing = true;
		/* A lease that expired: get another next time. */
		if (res->err == ETCD_ENOTFOUND)
			c->rlease = 0;
		return;
	}
	if (c->rfailing)
		log_info("cluster: reader sightings are published to etcd "
			 "again");
	c->rfailing = false;
	memmove(c->rpend, c->rpend + c->rsent, c->rplen - c->rsent);
	c->rplen -= c->rsent;
	c->rsent = 0;
	cluster_readers_put(c);
}

/*
 * Another node's batch VAL (VLEN bytes) under readers/NAME (NLEN bytes):
 * merged into the store in M's txn, unless it is this node's own. STORE_OK
 * or STORE_ERROR (the txn is over).
 */
int
cluster_readers_seen(struct cluster *c, struct store_mirror *m,
    const char *name, size_t nlen, const char *val, size_t vlen)
{
	size_t own = strlen(c->name), n;

	if (nlen > own && memcmp(name, c->name, own) == 0 && name[own] == '/')
		return STORE_OK;
	return cluster_readers_merge(m, val, vlen, false, &n);
}

/*
 * Merge the records in VAL (VLEN bytes, as cluster_readers_publish
 * writes them) in M's txn: as loads since a flush, or (COPY) as another
 * node's whole records. How many were in it in *N. STORE_OK or
 * STORE_ERROR (the txn is over).
 */
int
cluster_readers_merge(struct store_mirror *m, const char *val, size_t vlen,
    bool copy, size_t *np)
{
	struct store_reader_in *in = NULL;
	size_t n = 0, cap = 0, at = 0, k;
	int rc;

	for (;;) {
		if (n == cap) {
			cap = cap == 0 ? 64 : cap * 2;
			in = xreallocarray(in, cap, sizeof(*in));
		}
		if ((k = store_reader_unwire(val + at, vlen - at, &in[n])) == 0)
			break;
		n++;
		at += k;
	}
	rc = n > 0 ? store_mirror_readers(m, in, n, copy) : STORE_OK;
	free(in);
	*np = n;
	return rc;
}

/* Stop: cancel what is in flight, free what waits. */
void
cluster_readers_free(struct cluster *c)
{
	etcd_cancel(c->rgrant);
	etcd_cancel(c->rput);
	c->rgrant = c->rput = NULL;
	free(c->rpend);
	c->rpend = NULL;
	c->rplen = c->rpcap = c->rsent = 0;
}
