/*
 * floe: cluster_rcopy.c -- a copy of the reader inventory for a node that
 * resynced. Sightings reach other nodes as batches that live 5 to 10
 * minutes in etcd (cluster_readers.c): a node that reads etcd whole (a new
 * node, or one that was away past a compaction) finds only the last
 * minutes' batches, and would pass the decommission gate with stale
 * readers it never heard of. So after every resync a node asks for a copy:
 * it puts PREFIX/readers-want/NODE under its lease, and one other node
 * (the leader; when the asker leads, the first other node by name) puts
 * its whole readers records, in parts of at most RCOPY_PART bytes, under
 * PREFIX/readers-copy/NODE/FROM/NNNNNN and then .../FROM/end, all under a
 * lease of RCOPY_TTL. The asker merges each part as its mirror meets it,
 * keeping the larger count of each record (a copy is a whole count, not
 * loads since a flush), and deletes its want at the end. A copy merged
 * twice, or a batch also in a copy, changes nothing but a count that may
 * be over by one flush of the serving node.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/log.h"
#include "lib/nodename.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "proxy/etcd.h"
#include "routing/store.h"

#define RCOPY_TTL 120 /* s: the lease a copy's parts go with */
#define RCOPY_PART (256 * 1024) /* bytes of records in one part, about */
#define RCOPY_RETRY_MS 5000 /* a copy that failed, again after */

/* One part being packed. */
struct rcopy_pack {
	struct cluster *c;
	unsigned char *buf;
	size_t len;
	size_t n;
};

static void cluster_rcopy_ask_cb(const struct etcd_result *, void *);
static void cluster_rcopy_grant_cb(const struct etcd_result *, void *);
static void cluster_rcopy_part(struct cluster *);
static void cluster_rcopy_put_cb(const struct etcd_result *, void *);
static void cluster_rcopy_done(struct cluster *, const char *);
static void cluster_rcopy_forget_cb(const struct etcd_result *, void *);

/* Put or delete KEY (VAL, VLEN: a put with LEASE), calling CB. */
static struct etcd_call *
cluster_rcopy_op(struct cluster *c, const char *part, const char *suffix,
    const void *val, size_t vlen, int64_t lease, etcd_done_cb cb)
{
	struct etcd_op op = { .type =
				  val != NULL ? ETCD_OP_PUT : ETCD_OP_DELETE };
	struct etcd_txn t = { 0 };
	struct etcd_call *call;
	char *key;
	size_t klen;

	cluster_key(c, part, suffix, strlen(suffix), &key, &klen);
	op.key = key;
	op.key_len = klen;
	op.value = val;
	op.value_len = vlen;
	op.lease = lease;
	t.success = &op;
	t.nsuccess = 1;
	call = etcd_txn(c->etcd, &t, cb, c);
	free(key);
	return call;
}

/* A resync read etcd whole: ask for a copy of what it could not hold. */
void
cluster_rcopy_want(struct cluster *c)
{
	c->rcopy = CLUSTER_RCOPY_ASK;
	c->rwant_rev = 0;
	cluster_rcopy_tick(c);
}

/*
 * Which node serves NAME's want: the leader, unless NAME leads; then the
 * first other node by name. Whether it is this one.
 */
static bool
cluster_rcopy_mine(const struct cluster *c, const char *name)
{
	const char *best = NULL, *k;
	json_t *v;

	if (c->leader[0] != '\0' && strcmp(c->leader, name) != 0)
		return strcmp(c->leader, c->name) == 0 && cluster_is_leader(c);
	json_object_foreach(c->nodes, k, v)
		if (strcmp(k, name) != 0 &&
		    (best == NULL || strcmp(k, best) < 0))
			best = k;
	return best != NULL && strcmp(best, c->name) == 0;
}

/*
 * At each heartbeat and after the mirror applied something: put this
 * node's want once it has a lease; serve a want that is this node's to
 * serve.
 */
void
cluster_rcopy_tick(struct cluster *c)
{
	char val[160];
	const char *name;
	json_t *rev;

	if (c->rcopy == CLUSTER_RCOPY_ASK && c->rask == NULL && c->lease != 0) {
		snprintf(val, sizeof(val),
		    "{\"node\":\"%s\",\"resync_revision\":%" PRId64 "}",
		    c->name, c->applied);
		c->rask = cluster_rcopy_op(c, "readers-want/", c->name, val,
		    strlen(val), c->lease, cluster_rcopy_ask_cb);
	}
	if (c->rserve != NULL || units_now_ms() < c->rserve_next_ms)
		return;
	json_object_foreach(c->rwants, name, rev) {
		if (strcmp(name, c->name) == 0 || !cluster_rcopy_mine(c, name))
			continue;
		c->rserve = xstrdup(name);
		c->rserve_rev = json_integer_value(rev);
		c->rsafterlen = 0;
		c->rsparts = 0;
		c->rsrecords = 0;
		c->rscall = etcd_lease_grant(c->etcd, RCOPY_TTL, 0,
		    cluster_rcopy_grant_cb, c);
		return;
	}
}

static void
cluster_rcopy_ask_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->rask = NULL;
	if (res->err != ETCD_OK) {
		log_debug("cluster: readers want: %s", res->error);
		return; /* still ASK: the next heartbeat tries again */
	}
	if (c->rcopy == CLUSTER_RCOPY_ASK)
		c->rcopy = CLUSTER_RCOPY_ASKED;
}

/*
 * PREFIX/readers-want/NAME (NLEN bytes) was put at REV or deleted, as the
 * watch or a resync (RESYNC) shows it.
 */
void
cluster_rcopy_want_seen(struct cluster *c, const char *name, size_t nlen,
    int64_t rev, bool deleted, bool resync)
{
	char nm[128];

	if (nlen >= sizeof(nm) || !node_name_ok(name, nlen))
		return;
	memcpy(nm, name, nlen);
	nm[nlen] = '\0';
	if (strcmp(nm, c->name) == 0) {
		/* A resync asks again, whatever it finds of an older want. */
		if (resync)
			return;
		if (!deleted)
			c->rwant_rev = rev;
		else if (c->rcopy == CLUSTER_RCOPY_ASKED) {
			/* Gone with a lease that expired: ask again. */
			c->rcopy = CLUSTER_RCOPY_ASK;
			c->rwant_rev = 0;
		}
		return;
	}
	if (deleted)
		(void)json_object_del(c->rwants, nm);
	else
		(void)json_object_set_new(c->rwants, nm, json_integer(rev));
}

/*
 * A part of a copy, VAL (VLEN bytes) under PREFIX/readers-copy/REST (RLEN
 * bytes, "NODE/FROM/PART"): merged in M's txn when NODE is this one; an
 * end that answers this node's want completes the copy (not in a resync,
 * which asks again). STORE_OK or STORE_ERROR (the txn is over).
 */
int
cluster_rcopy_seen(struct cluster *c, struct store_mirror *m, const char *rest,
    size_t rlen, const char *val, size_t vlen, bool resync)
{
	size_t own = strlen(c->name), n;
	const char *from, *slash;
	char fm[128];
	json_t *end;
	int rc;

	if (rlen <= own + 1 || memcmp(rest, c->name, own) != 0 ||
	    rest[own] != '/')
		return STORE_OK;
	from = rest + own + 1;
	if ((slash = memchr(from, '/', rlen - own - 1)) == NULL ||
	    (size_t)(slash - from) >= sizeof(fm) ||
	    !node_name_ok(from, (size_t)(slash - from)))
		return STORE_OK;
	memcpy(fm, from, (size_t)(slash - from));
	fm[slash - from] = '\0';
	if ((size_t)(rest + rlen - slash) != 4 ||
	    memcmp(slash + 1, "end", 3) != 0) {
		rc = cluster_readers_merge(m, val, vlen, true, &n);
		if (rc == STORE_OK)
			c->rcopied += n;
		return rc;
	}
	/* Its want's put may not have answered yet: the watch saw it. */
	if (resync || c->rcopy == CLUSTER_RCOPY_NONE ||
	    c->rcopy == CLUSTER_RCOPY_DONE || c->rwant_rev == 0 ||
	    (end = json_loadb(val, vlen, 0, NULL)) == NULL)
		return STORE_OK;
	if (json_integer_value(json_object_get(end, "want_revision")) ==
	    c->rwant_rev) {
		c->rcopy = CLUSTER_RCOPY_DONE;
		strlcpy(c->rcopy_from, fm, sizeof(c->rcopy_from));
		log_info("cluster: the reader inventory of node %s is merged "
			 "into this node's (%" PRId64 " records in %" PRId64
			 " parts): the readers this node missed while it was "
			 "away or before it joined",
		    fm,
		    (int64_t)json_integer_value(
			json_object_get(end, "records")),
		    (int64_t)json_integer_value(json_object_get(end, "parts")));
		etcd_cancel(c->rask);
		c->rask = cluster_rcopy_op(c, "readers-want/", c->name, NULL, 0,
		    0, cluster_rcopy_forget_cb);
	}
	json_decref(end);
	return STORE_OK;
}

static void
cluster_rcopy_forget_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->rask = NULL;
	if (res->err != ETCD_OK)
		log_debug("cluster: readers want: delete: %s (it goes with "
			  "this node's lease)",
		    res->error);
}

static void
cluster_rcopy_grant_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->rscall = NULL;
	if (res->err != ETCD_OK || res->lease == 0) {
		cluster_rcopy_done(c, res->error);
		return;
	}
	c->rslease = res->lease;
	cluster_rcopy_part(c);
}

/* Pack one record after the last one packed; stop once the part is full. */
static int
cluster_rcopy_pack_cb(const void *key, size_t keylen,
    const struct store_reader *r, void *arg)
{
	struct rcopy_pack *pk = arg;
	struct cluster *c = pk->c;
	unsigned char *p = pk->buf + pk->len;
	size_t rl;

	if (keylen > sizeof(c->rsafter))
		return 0; /* no store key is longer */
	/* The buffer holds RCOPY_PART plus one record of the largest size. */
	rl = store_reader_pack(r, p + 4 + keylen);
	p[0] = (unsigned char)(keylen >> 8);
	p[1] = (unsigned char)keylen;
	memcpy(p + 2, key, keylen);
	p[2 + keylen] = (unsigned char)(rl >> 8);
	p[3 + keylen] = (unsigned char)rl;
	pk->len += 4 + keylen + rl;
	pk->n++;
	memcpy(c->rsafter, key, keylen);
	c->rsafterlen = keylen;
	return pk->len >= RCOPY_PART;
}

/* Put the next part of the copy, or its end. */
static void
cluster_rcopy_part(struct cluster *c)
{
	struct rcopy_pack pk = { c, NULL, 0, 0 };
	char part[256], val[160];

	pk.buf =
	    xmalloc(RCOPY_PART + 4 + STORE_KEY_MAX + STORE_READER_PACK_MAX);
	if (store_reader_foreach_after(c->st, c->rsafter, c->rsafterlen,
		cluster_rcopy_pack_cb, &pk) != STORE_OK) {
		free(pk.buf);
		cluster_rcopy_done(c, store_last_error(c->st));
		return;
	}
	if (pk.n > 0) {
		snprintf(part, sizeof(part), "%s/%s/%06u", c->rserve, c->name,
		    c->rsparts++);
		c->rsrecords += pk.n;
		c->rscall = cluster_rcopy_op(c, "readers-copy/", part, pk.buf,
		    pk.len, c->rslease, cluster_rcopy_put_cb);
	} else {
		snprintf(part, sizeof(part), "%s/%s/end", c->rserve, c->name);
		snprintf(val, sizeof(val),
		    "{\"want_revision\":%" PRId64 ",\"records\":%" PRIu64
		    ",\"parts\":%u}",
		    c->rserve_rev, c->rsrecords, c->rsparts);
		c->rsend = true;
		c->rscall = cluster_rcopy_op(c, "readers-copy/", part, val,
		    strlen(val), c->rslease, cluster_rcopy_put_cb);
	}
	free(pk.buf);
}

static void
cluster_rcopy_put_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;

	c->rscall = NULL;
	if (res->err != ETCD_OK) {
		cluster_rcopy_done(c, res->error);
		return;
	}
	if (!c->rsend) {
		cluster_rcopy_part(c);
		return;
	}
	log_info("cluster: this node's reader inventory is copied to node %s, "
		 "which resynced (%" PRIu64 " records in %u parts)",
	    c->rserve, c->rsrecords, c->rsparts);
	/* Served, unless it asked again meanwhile. */
	if (json_integer_value(json_object_get(c->rwants, c->rserve)) ==
	    c->rserve_rev)
		(void)json_object_del(c->rwants, c->rserve);
	cluster_rcopy_done(c, NULL);
}

/* A copy ended; ERROR when it failed (it is tried again later). */
static void
cluster_rcopy_done(struct cluster *c, const char *error)
{
	if (error != NULL) {
		log_warnx("cluster: the copy of this node's reader inventory "
			  "to node %s failed: %s; again in %d s",
		    c->rserve, error, RCOPY_RETRY_MS / 1000);
		c->rserve_next_ms = units_now_ms() + RCOPY_RETRY_MS;
	}
	free(c->rserve);
	c->rserve = NULL;
	c->rsend = false;
	cluster_rcopy_tick(c);
}

/* Whether another node's key is live: one that can send a copy. */
static bool
cluster_rcopy_peer(const struct cluster *c)
{
	const char *k;
	json_t *v;

	json_object_foreach(c->nodes, k, v)
		if (strcmp(k, c->name) != 0)
			return true;
	return false;
}

/* The decommission gate asks whether this node may miss stale readers. */
bool
cluster_readers_incomplete(const struct cluster *c, char *msg, size_t msglen)
{
	if (c == NULL ||
	    (c->rcopy != CLUSTER_RCOPY_ASK &&
		c->rcopy != CLUSTER_RCOPY_ASKED) ||
	    !cluster_rcopy_peer(c))
		return false;
	snprintf(msg, msglen,
	    "this node resynced from etcd and has not merged another node's "
	    "copy of the reader inventory yet (GET /cluster: readers.copy is "
	    "\"%s\"), so it may not know every stale reader: try again in a "
	    "few seconds, or through another node",
	    c->rcopy == CLUSTER_RCOPY_ASK ? "asking" : "waiting");
	return true;
}

/* What GET /cluster shows of copies, into the "readers" object O. */
void
cluster_rcopy_status(const struct cluster *c, json_t *o)
{
	static const char *const states[] = { "none", "asking", "waiting",
		"done" };

	(void)json_object_set_new(o, "copy", json_string(states[c->rcopy]));
	(void)json_object_set_new(o, "copied",
	    json_integer((json_int_t)c->rcopied));
	(void)json_object_set_new(o, "copied_from",
	    c->rcopy_from[0] != '\0' ? json_string(c->rcopy_from) :
				       json_null());
	(void)json_object_set_new(o, "copying_to",
	    c->rserve != NULL ? json_string(c->rserve) : json_null());
}

/* Stop: cancel what is in flight. */
void
cluster_rcopy_free(struct cluster *c)
{
	etcd_cancel(c->rask);
	etcd_cancel(c->rscall);
	c->rask = c->rscall = NULL;
	free(c->rserve);
	c->rserve = NULL;
	json_decref(c->rwants);
	c->rwants = NULL;
}
