/*
 * floe: cluster_leader.c -- which node runs the freshness and count polls.
 * The leader holds the key PREFIX/leader (its value: the node's name),
 * put with this node's own lease (the one its nodes/NAME key goes with)
 * by a txn that compares the key's create_revision to 0: the first node
 * to ask gets it, the others read who has it. The mirror's watch on the
 * prefix brings the key's puts and deletes; when the leader's lease ends
 * (the node died, or lost etcd for longer than the lease), etcd deletes
 * the key and every node that sees the delete asks again.
 *
 * A node runs the polls only while it is sure it holds the key: while it
 * has seen the key with its own lease, and the lease cannot have expired
 * yet (the last renewal it sent, plus the TTL etcd granted). Without etcd
 * no node is sure past that, so the polls stop until etcd answers again;
 * two nodes never poll at once.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/nodename.h"
#include "lib/units.h"
#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "proxy/etcd.h"

static void cluster_leader_campaign(struct cluster *);
static void cluster_leader_takeover(struct cluster *);
static void cluster_leader_put(struct cluster *, struct etcd_cmp *);
static void cluster_leader_cb(const struct etcd_result *, void *);
static void cluster_leader_check(struct cluster *);
static void cluster_leader_resign_cb(const struct etcd_result *, void *);

/* Whether this node is sure it holds the leader key now. */
bool
cluster_is_leader(const struct cluster *c)
{
	return c != NULL && c->leading && units_mono_us() < c->sure_until_us;
}

/* The leader's name as last seen, or NULL when there is none. */
const char *
cluster_leader_name(const struct cluster *c)
{
	return c->leader[0] != '\0' ? c->leader : NULL;
}

/*
 * Say so when this node starts or stops running the polls. Called
 * whenever what it knows of the key or of its lease changed, and at each
 * heartbeat (the lease may have run out without an answer from etcd).
 */
static void
cluster_leader_check(struct cluster *c)
{
	bool now = cluster_is_leader(c);

	if (now == c->was_leader)
		return;
	c->was_leader = now;
	if (now) {
		c->leader_changes++;
		c->leading_since_ms = units_now_ms();
		log_info("cluster: this node (%s) is the leader: it runs the "
			 "freshness and count polls",
		    c->name);
	} else if (c->leading)
		log_warnx("cluster: this node can no longer renew its lease "
			  "in etcd, so it is not sure it still leads: the "
			  "freshness and count polls stop until it is");
	else
		log_info("cluster: this node no longer leads%s%s",
		    c->leader[0] != '\0' ? "; the leader is " : "", c->leader);
}

/*
 * This node's lease was granted or renewed (ALIVE: etcd keeps it for TTL
 * seconds from SENT_US, a units_mono_us time before it was asked), or
 * etcd said it is gone.
 */
void
cluster_leader_lease(struct cluster *c, bool alive, int64_t sent_us,
    int64_t ttl)
{
	if (!alive) {
		c->leading = false;
		c->sure_until_us = 0;
		cluster_leader_check(c);
		return;
	}
	c->sure_until_us = sent_us + ttl * 1000000;
	if (c->leader[0] == '\0')
		cluster_leader_campaign(c);
	else if (strcmp(c->leader, c->name) == 0 && c->leader_lease != c->lease)
		cluster_leader_takeover(c);
	cluster_leader_check(c);
}

/* At each heartbeat: the lease may have run out meanwhile. */
void
cluster_leader_beat(struct cluster *c)
{
	cluster_leader_check(c);
}

/*
 * The leader key was put (VALUE, VLEN: the holder's name, with LEASE) or
 * deleted, at revision REV, as the watch, a resync or a campaign's answer
 * shows it. Anything older than what is known is ignored.
 */
void
cluster_leader_seen(struct cluster *c, const char *value, size_t vlen,
    int64_t lease, int64_t rev, bool deleted)
{
	bool again = rev != 0 && rev == c->leader_rev;

	if (rev != 0 && rev < c->leader_rev)
		return;
	c->leader_rev = rev;
	if (deleted) {
		if (c->leader[0] != '\0')
			log_info("cluster: the leader key of %s is gone",
			    c->leader);
		c->leader[0] = '\0';
		c->leader_lease = 0;
		c->leading = false;
		cluster_leader_check(c);
		if (c->lease != 0)
			cluster_leader_campaign(c);
		return;
	}
	if (vlen >= sizeof(c->leader) || !node_name_ok(value, vlen)) {
		/* Put by hand: no node holds it, and none can take it. */
		if (!again)
			log_warnx(
			    "cluster: the leader key holds %zu bytes that are "
			    "not a node name: no node runs the polls until it "
			    "is deleted (etcdctl del %sleader)",
			    vlen, c->prefix);
		c->leader[0] = '\0';
		c->leader_lease = 0;
		c->leading = false;
		cluster_leader_check(c);
		return;
	}
	memcpy(c->leader, value, vlen);
	c->leader[vlen] = '\0';
	c->leader_lease = lease;
	c->leading = !c->resigned && c->lease != 0 && lease == c->lease &&
	    strcmp(c->leader, c->name) == 0;
	/* This node, restarted under its name while its old lease lives. */
	if (!c->leading && c->lease != 0 && strcmp(c->leader, c->name) == 0)
		cluster_leader_takeover(c);
	cluster_leader_check(c);
}

/*
 * Put the key with this node's name and lease if CMP (on the key) holds,
 * else read who holds it; cluster_leader_cb takes the answer.
 */
static void
cluster_leader_put(struct cluster *c, struct etcd_cmp *cmp)
{
	struct etcd_op put = { .type = ETCD_OP_PUT },
		       get = { .type = ETCD_OP_RANGE };
	struct etcd_txn t = { 0 };
	char *key;
	size_t klen;

	cluster_key(c, "leader", "", 0, &key, &klen);
	cmp->key = key;
	put.key = get.key = key;
	put.key_len = get.key_len = klen;
	put.value = c->name;
	put.value_len = strlen(c->name);
	put.lease = c->lease;
	t.cmps = cmp;
	t.ncmps = 1;
	t.success = &put;
	t.nsuccess = 1;
	t.failure = &get;
	t.nfailure = 1;
	c->elease = c->lease;
	c->ecall = etcd_txn(c->etcd, &t, cluster_leader_cb, c);
	free(key);
}

/* Ask for the key: put it if nobody holds it, else read who does. */
static void
cluster_leader_campaign(struct cluster *c)
{
	struct etcd_cmp cmp = { .target = ETCD_CMP_CREATE,
		.result = ETCD_CMP_EQUAL,
		.number = 0 };

	if (c->ecall != NULL || c->lease == 0 || c->resigned)
		return;
	cluster_leader_put(c, &cmp);
}

/*
 * The key names this node but goes with a lease of a previous run of it
 * (restarted before that lease ran out): put it again with this node's
 * lease, if it still is the key seen.
 */
static void
cluster_leader_takeover(struct cluster *c)
{
	struct etcd_cmp cmp = { .target = ETCD_CMP_MOD,
		.result = ETCD_CMP_EQUAL };

	if (c->ecall != NULL || c->lease == 0 || c->leader_rev == 0 ||
	    c->resigned)
		return;
	cmp.number = c->leader_rev;
	cluster_leader_put(c, &cmp);
}

/* A campaign (or takeover) answered: this node holds the key, or who. */
static void
cluster_leader_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;
	const struct etcd_kv *kv;

	c->ecall = NULL;
	if (res->err != ETCD_OK) {
		/* The next renewal of the lease asks again. */
		log_debug("cluster: leader: %s", res->error);
		return;
	}
	if (res->succeeded) {
		cluster_leader_seen(c, c->name, strlen(c->name), c->elease,
		    res->header.revision, false);
		return;
	}
	if (res->nops > 0 && res->ops[0].nkvs > 0) {
		kv = &res->ops[0].kvs[0];
		cluster_leader_seen(c, kv->value, kv->value_len, kv->lease,
		    kv->mod_revision, false);
	}
	/* Gone between the compare and the read: the next renewal asks. */
}

/*
 * Give the key up (floe is draining): delete it if it still is the one
 * this node holds, so that another node takes the polls at once rather
 * than after the lease; never ask again. Not waited for.
 */
void
cluster_leader_resign(struct cluster *c)
{
	struct etcd_cmp cmp = { .target = ETCD_CMP_MOD,
		.result = ETCD_CMP_EQUAL };
	struct etcd_op del = { .type = ETCD_OP_DELETE };
	struct etcd_txn t = { 0 };
	char *key;
	size_t klen;

	c->resigned = true;
	etcd_cancel(c->ecall);
	c->ecall = NULL;
	if (!c->leading || c->leader_rev == 0)
		return;
	c->leading = false;
	c->leader[0] = '\0';
	cluster_leader_check(c);
	cluster_key(c, "leader", "", 0, &key, &klen);
	cmp.key = key;
	cmp.number = c->leader_rev;
	del.key = key;
	del.key_len = klen;
	t.cmps = &cmp;
	t.ncmps = 1;
	t.success = &del;
	t.nsuccess = 1;
	c->ecall = etcd_txn(c->etcd, &t, cluster_leader_resign_cb, c);
	free(key);
	log_info("cluster: draining: giving the leader key up");
}

/* The key given up (or not: then its lease ends it). */
static void
cluster_leader_resign_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->ecall = NULL;
	if (res->err != ETCD_OK || !res->succeeded)
		log_debug("cluster: leader: giving up: %s",
		    res->err != ETCD_OK ? res->error : "changed meanwhile");
}

/* Stop asking (cluster mode stops). */
void
cluster_leader_stop(struct cluster *c)
{
	etcd_cancel(c->ecall);
	c->ecall = NULL;
}
