/*
 * floe: cluster.c -- cluster mode's lifecycle and this node's key: the
 * etcd client made from [cluster], the mirror started, and a leased key
 * PREFIX/nodes/NAME holding the node's applied revision, the hash of its
 * routes and waves, whether it is connected, its version and heartbeat,
 * rewritten every third of the lease. Every node's key is watched with the
 * rest of the prefix, so that GET /cluster shows all of them side by side,
 * and the leader (cluster_leader.c) among them.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/nodename.h"
#include "lib/units.h"
#include "lib/version.h"
#include "lib/xmalloc.h"
#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "proxy/conf.h"
#include "proxy/etcd.h"
#include "proxy/floe.h"
#include "routing/store.h"

static void cluster_beat_cb(evutil_socket_t, short, void *);
static void cluster_lease_cb(const struct etcd_result *, void *);
static void cluster_put_node(struct cluster *);
static void cluster_put_cb(const struct etcd_result *, void *);
static json_t *cluster_self(struct cluster *);
static json_t *cluster_status_cb(void *);
static void cluster_metrics_cb(struct evbuffer *, void *);

/* Start cluster mode for F. */
struct cluster *
cluster_new(struct floe *f, char *err, size_t errlen)
{
	const struct conf_cluster *k = &f->conf->cluster;
	struct etcd_conf ec = { .endpoints = k->etcd,
		.timeout_ms = k->etcd_timeout_ms,
		.user = k->user,
		.password_file = k->password_file,
		.ca_file = k->ca_file,
		.cert_file = k->cert_file,
		.key_file = k->key_file };
	struct cluster *c;
	struct timeval now = { 0, 0 };

	c = xcalloc(1, sizeof(*c));
	c->f = f;
	c->st = f->store;
	c->base = f->base;
	c->name = xstrdup(k->name);
	c->prefix = xstrdup(k->prefix);
	c->plen = strlen(c->prefix);
	c->lease_ms = k->lease_ms < 2000 ? 2000 : k->lease_ms;
	TAILQ_INIT(&c->writes);
	TAILQ_INIT(&c->pending);
	if ((c->nodes = json_object()) == NULL ||
	    (c->rwants = json_object()) == NULL)
		fatalx("%s: out of memory", __func__);
	if ((c->etcd = etcd_new(f->base, f->fetch, &ec, err, errlen)) == NULL) {
		json_decref(c->nodes);
		json_decref(c->rwants);
		free(c->name);
		free(c->prefix);
		free(c);
		return NULL;
	}
	if ((c->beat = event_new(f->base, -1, EV_PERSIST, cluster_beat_cb,
		 c)) == NULL)
		fatalx("%s: event_new failed", __func__);
	log_info("cluster: node %s, etcd %s, keys under %s", c->name, k->etcd,
	    c->prefix);
	stats_add_status(&f->stats, "cluster", cluster_status_cb, c);
	stats_add_metrics(&f->stats, cluster_metrics_cb, c);
	cluster_pending_load(c);
	cluster_mirror_start(c);
	/* The first heartbeat now, then every third of the lease. */
	if (event_base_once(f->base, -1, EV_TIMEOUT, cluster_beat_cb, c,
		&now) == -1)
		fatalx("%s: event_base_once failed", __func__);
	now.tv_sec = (time_t)(c->lease_ms / 3000);
	now.tv_usec = (suseconds_t)(c->lease_ms / 3 % 1000) * 1000;
	evtimer_add(c->beat, &now);
	return c;
}

/* Stop cluster mode. */
void
cluster_free(struct cluster *c)
{
	if (c == NULL)
		return;
	stats_remove(&c->f->stats, c);
	cluster_writes_free(c);
	cluster_pending_free(c);
	cluster_readers_free(c);
	cluster_rcopy_free(c);
	cluster_mirror_stop(c);
	cluster_leader_stop(c);
	etcd_cancel(c->lcall);
	etcd_cancel(c->pcall);
	if (c->beat != NULL)
		event_free(c->beat);
	/* The node key goes with its lease when it expires. */
	etcd_free(c->etcd);
	json_decref(c->nodes);
	free(c->name);
	free(c->prefix);
	free(c);
}

/* Whether the mirror is watching etcd. */
bool
cluster_connected(const struct cluster *c)
{
	return c->watching;
}

/*
 * The key PREFIX + PART + SUFFIX (SLEN bytes), in *KEY (*LEN bytes,
 * NUL-terminated). Caller frees.
 */
void
cluster_key(const struct cluster *c, const char *part, const void *suffix,
    size_t slen, char **key, size_t *len)
{
	size_t plen = strlen(part);

	*len = c->plen + plen + slen;
	*key = xmalloc(*len + 1);
	memcpy(*key, c->prefix, c->plen);
	memcpy(*key + c->plen, part, plen);
	memcpy(*key + c->plen + plen, suffix, slen);
	(*key)[*len] = '\0';
}

/* Heartbeat: renew the lease (or get one) and rewrite the node key. */
static void
cluster_beat_cb(evutil_socket_t fd __unused, short ev __unused, void *arg)
{
	struct cluster *c = arg;

	if (c->watching)
		cluster_pending_flush(c);
	cluster_leader_beat(c);
	cluster_rcopy_tick(c);
	if (c->lcall != NULL)
		return;
	/* The lease lives at least its TTL from now (the leader's bound). */
	c->lease_sent_us = units_mono_us();
	if (c->lease == 0)
		c->lcall = etcd_lease_grant(c->etcd,
		    (int64_t)(c->lease_ms / 1000), 0, cluster_lease_cb, c);
	else
		c->lcall = etcd_lease_keepalive(c->etcd, c->lease,
		    cluster_lease_cb, c);
}

/* A lease granted or renewed: write the node key with it. */
static void
cluster_lease_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->lcall = NULL;
	if (res->err == ETCD_ENOTFOUND) {
		/* Expired while etcd was away: a new one next beat. */
		c->lease = 0;
		cluster_leader_lease(c, false, 0, 0);
		return;
	}
	if (res->err != ETCD_OK) {
		log_debug("cluster: lease: %s", res->error);
		return;
	}
	if (res->lease != 0)
		c->lease = res->lease;
	cluster_put_node(c);
	cluster_leader_lease(c, true, c->lease_sent_us, res->ttl);
	cluster_rcopy_tick(c);
}

/* This node as its key holds it. Caller decrefs. */
static json_t *
cluster_self(struct cluster *c)
{
	char hash[20], ts[32];

	snprintf(hash, sizeof(hash), "%016" PRIx64, c->hash);
	c->beat_ms = units_now_ms();
	units_time_format(c->beat_ms, ts, sizeof(ts));
	return json_pack("{s:s, s:I, s:s, s:b, s:s, s:s, s:b}", "name", c->name,
	    "applied_revision", (json_int_t)c->applied, "hash", hash,
	    "connected", c->watching, "version", version_get(), "heartbeat", ts,
	    "loaded", c->loaded);
}

/* Put PREFIX/nodes/NAME with the lease. */
static void
cluster_put_node(struct cluster *c)
{
	struct etcd_op op = { .type = ETCD_OP_PUT };
	struct etcd_txn t = { 0 };
	json_t *self;
	char *key, *val;
	size_t klen;

	if (c->pcall != NULL || (self = cluster_self(c)) == NULL)
		return;
	val = json_dumps(self, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(self);
	if (val == NULL)
		return;
	cluster_key(c, "nodes/", c->name, strlen(c->name), &key, &klen);
	op.key = key;
	op.key_len = klen;
	op.value = val;
	op.value_len = strlen(val);
	op.lease = c->lease;
	t.success = &op;
	t.nsuccess = 1;
	c->pcall = etcd_txn(c->etcd, &t, cluster_put_cb, c);
	free(key);
	free(val);
}

static void
cluster_put_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->pcall = NULL;
	if (res->err != ETCD_OK)
		log_debug("cluster: node key: %s", res->error);
}

/* A node key (KEY without the prefix) was put or deleted. */
void
cluster_node_seen(struct cluster *c, const char *key, size_t len,
    const char *value, size_t vlen, bool deleted)
{
	char name[128];
	json_t *v;

	/* Only a node's name names a node (not one put by hand). */
	if (len <= 6 || len - 6 >= sizeof(name) ||
	    !node_name_ok(key + 6, len - 6))
		return;
	memcpy(name, key + 6, len - 6);
	name[len - 6] = '\0';
	if (deleted) {
		(void)json_object_del(c->nodes, name);
		return;
	}
	if ((v = json_loadb(value, vlen, 0, NULL)) == NULL ||
	    !json_is_object(v)) {
		json_decref(v);
		return;
	}
	/* The key names the node, whatever the value says (or lacks). */
	(void)json_object_set_new(v, "name", json_string(name));
	(void)json_object_set_new(c->nodes, name, v);
}

/*
 * Every node as its key says, this one as it is now; a node is flagged
 * "lagging" when its applied revision is behind the last change of
 * routes and waves this node applied, "disagrees" when it is caught up
 * but its hash differs.
 */
json_t *
cluster_status(struct cluster *c)
{
	json_t *nodes, *self, *n, *o, *st;
	const char *name, *hash;
	char mine[20];
	int64_t rev;
	size_t i;

	if ((nodes = json_array()) == NULL)
		return NULL;
	snprintf(mine, sizeof(mine), "%016" PRIx64, c->hash);
	self = cluster_self(c);
	json_object_foreach(c->nodes, name, n) {
		if (strcmp(name, c->name) == 0)
			continue;
		o = json_deep_copy(n);
		rev =
		    json_integer_value(json_object_get(o, "applied_revision"));
		hash = json_string_value(json_object_get(o, "hash"));
		(void)json_object_set_new(o, "lagging",
		    json_boolean(rev < c->changed));
		(void)json_object_set_new(o, "disagrees",
		    json_boolean(rev >= c->changed && hash != NULL &&
			strcmp(hash, mine) != 0));
		(void)json_array_append_new(nodes, o);
	}
	(void)json_object_set_new(self, "self", json_true());
	(void)json_object_set_new(self, "lagging", json_false());
	(void)json_object_set_new(self, "disagrees", json_false());
	(void)json_array_append_new(nodes, self);
	/* The leader as the key says, whatever the node keys say. */
	json_array_foreach(nodes, i, o)
		(void)json_object_set_new(o, "leader",
		    json_boolean(c->leader[0] != '\0' &&
			strcmp(json_string_value(json_object_get(o, "name")),
			    c->leader) == 0));
	/* By name, so that every node prints the same table. */
	for (i = 1; i < json_array_size(nodes); i++) {
		size_t k = i;

		while (k > 0 &&
		    strcmp(json_string_value(
			       json_object_get(json_array_get(nodes, k - 1),
				   "name")),
			json_string_value(
			    json_object_get(json_array_get(nodes, k),
				"name"))) > 0) {
			o = json_incref(json_array_get(nodes, k));
			(void)json_array_remove(nodes, k);
			(void)json_array_insert_new(nodes, k - 1, o);
			k--;
		}
	}
	st = json_pack("{s:s, s:s, s:s, s:b, s:b, s:I, s:I, s:s, s:I, s:s?, "
		       "s:b, s:{s:I,s:I,s:b}, s:I, s:o}",
	    "node", c->name, "prefix", c->prefix, "endpoint",
	    etcd_endpoint(c->etcd), "connected", c->watching, "loaded",
	    c->loaded, "applied_revision", (json_int_t)c->applied,
	    "stored_revision", (json_int_t)c->stored, "hash", mine, "resyncs",
	    (json_int_t)c->resyncs, "leader", cluster_leader_name(c),
	    "is_leader", cluster_is_leader(c), "readers", "waiting_bytes",
	    (json_int_t)c->rplen, "dropped", (json_int_t)c->rdropped,
	    "publishing", !c->rfailing, "writes",
	    (json_int_t)cluster_writes_waiting(c), "nodes", nodes);
	if (st != NULL)
		cluster_rcopy_status(c, json_object_get(st, "readers"));
	return st;
}

/* The "cluster" part of GET /status. */
static json_t *
cluster_status_cb(void *arg)
{
	return cluster_status(arg);
}

/* The cluster's part of GET /metrics. */
static void
cluster_metrics_cb(struct evbuffer *out, void *arg)
{
	struct cluster *c = arg;
	json_t *st, *n;
	size_t i, lagging = 0, disagree = 0, nodes = 0;

	if ((st = cluster_status(c)) != NULL) {
		json_array_foreach(json_object_get(st, "nodes"), i, n) {
			nodes++;
			lagging += json_is_true(json_object_get(n, "lagging"));
			disagree +=
			    json_is_true(json_object_get(n, "disagrees"));
		}
		json_decref(st);
	}
	evbuffer_add_printf(out,
	    "# HELP floe_cluster_applied_revision The etcd revision this "
	    "node's mirror has applied.\n"
	    "# TYPE floe_cluster_applied_revision gauge\n"
	    "floe_cluster_applied_revision %" PRId64 "\n"
	    "# HELP floe_cluster_connected 1 while the mirror watches etcd.\n"
	    "# TYPE floe_cluster_connected gauge\n"
	    "floe_cluster_connected %d\n"
	    "# HELP floe_cluster_resyncs_total Full reads of etcd into the "
	    "store.\n"
	    "# TYPE floe_cluster_resyncs_total counter\n"
	    "floe_cluster_resyncs_total %u\n"
	    "# HELP floe_cluster_state_hash The hash of this node's routes "
	    "and waves (its low 52 bits: equal on converged nodes).\n"
	    "# TYPE floe_cluster_state_hash gauge\n"
	    "floe_cluster_state_hash %" PRIu64 "\n"
	    "# HELP floe_cluster_leader 1 while this node is the leader, "
	    "the one that runs the freshness and count polls.\n"
	    "# TYPE floe_cluster_leader gauge\n"
	    "floe_cluster_leader %d\n"
	    "# HELP floe_cluster_leader_changes_total Times this node became "
	    "the leader.\n"
	    "# TYPE floe_cluster_leader_changes_total counter\n"
	    "floe_cluster_leader_changes_total %u\n"
	    "# HELP floe_cluster_nodes Nodes with a key in etcd.\n"
	    "# TYPE floe_cluster_nodes gauge\n"
	    "floe_cluster_nodes %zu\n"
	    "# HELP floe_cluster_nodes_lagging Nodes behind the last change "
	    "this node applied.\n"
	    "# TYPE floe_cluster_nodes_lagging gauge\n"
	    "floe_cluster_nodes_lagging %zu\n"
	    "# HELP floe_cluster_nodes_disagreeing Caught-up nodes whose "
	    "routes and waves hash differently.\n"
	    "# TYPE floe_cluster_nodes_disagreeing gauge\n"
	    "floe_cluster_nodes_disagreeing %zu\n"
	    "# HELP floe_cluster_writes_total Changes made through this "
	    "node, by how they ended: committed in etcd, pending (a "
	    "rollback held here while etcd is away), conflict (lost to a "
	    "change through another node), failed (etcd failed or was "
	    "away).\n"
	    "# TYPE floe_cluster_writes_total counter\n"
	    "floe_cluster_writes_total{result=\"committed\"} %" PRIu64 "\n"
	    "floe_cluster_writes_total{result=\"pending\"} %" PRIu64 "\n"
	    "floe_cluster_writes_total{result=\"conflict\"} %" PRIu64 "\n"
	    "floe_cluster_writes_total{result=\"failed\"} %" PRIu64 "\n"
	    "# HELP floe_cluster_readers_copy_waiting 1 while this node has "
	    "resynced from etcd and not yet merged another node's copy of "
	    "the reader inventory.\n"
	    "# TYPE floe_cluster_readers_copy_waiting gauge\n"
	    "floe_cluster_readers_copy_waiting %d\n",
	    c->applied, c->watching ? 1 : 0, c->resyncs,
	    c->hash & ((UINT64_C(1) << 52) - 1), cluster_is_leader(c) ? 1 : 0,
	    c->leader_changes, nodes, lagging, disagree,
	    c->wrote[CLUSTER_WROTE_COMMITTED], c->wrote[CLUSTER_WROTE_PENDING],
	    c->wrote[CLUSTER_WROTE_CONFLICT], c->wrote[CLUSTER_WROTE_FAILED],
	    c->rcopy == CLUSTER_RCOPY_ASK || c->rcopy == CLUSTER_RCOPY_ASKED);
}
