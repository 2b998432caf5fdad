/*
 * floe: cluster_mirror.c -- the mirror: etcd's routes, waves and events
 * copied into this node's store. A resync reads the whole prefix in pages
 * pinned to one revision R and replaces the store's copy in one txn
 * (logging what changed); then a watch from R + 1 applies each message's
 * events in one txn and records the highest revision applied. Nothing
 * advances on a timeout: a watch that ends is reopened from applied + 1;
 * a compacted revision, a revision going backwards or another cluster id
 * mean a resync.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "proxy/etcd.h"
#include "proxy/floe.h"
#include "routing/store.h"
#include "routing/wave.h"

/* What a key under the prefix is. */
enum cluster_key_kind {
	CLUSTER_KEY_OTHER,
	CLUSTER_KEY_STATE, /* objects/, waves/, events/: in the store */
	CLUSTER_KEY_NODE, /* nodes/NAME */
	CLUSTER_KEY_IMPORT, /* imports/ID: a bulk import's commit */
	CLUSTER_KEY_READERS, /* readers/NODE/...: a node's sightings */
	CLUSTER_KEY_RWANT, /* readers-want/NODE: a node asks for a copy */
	CLUSTER_KEY_RCOPY, /* readers-copy/NODE/FROM/PART: a copy's part */
	CLUSTER_KEY_LEADER, /* leader */
};

/* A wave's state before a resync, to say what it changed. */
struct cluster_old_wave {
	uint32_t n;
	uint8_t state;
	int64_t rollback_ms;
};

struct cluster_old_waves {
	struct cluster_old_wave *v;
	size_t n;
};

static enum cluster_key_kind cluster_classify(const char *, size_t,
    enum store_db *, unsigned char *, size_t *, const char **, size_t *);
static bool cluster_held(struct cluster *, enum store_db,
    const unsigned char *);
static int cluster_put(struct cluster *, struct store_mirror *, const char *,
    size_t, const char *, size_t, int64_t);
static void cluster_resync(struct cluster *);
static void cluster_resync_apply(struct cluster *, int64_t, uint64_t);
static void cluster_kvs_clear(struct cluster *);
static int cluster_old_wave_cb(const struct store_wave *, void *);
static void cluster_watch_open(struct cluster *);
static void cluster_watch_events(struct cluster *,
    const struct etcd_watch_msg *);
static void cluster_retry(struct cluster *, uint64_t);
static void cluster_retry_cb(evutil_socket_t, short, void *);
static json_t *cluster_rollback_seen(struct cluster *,
    const struct etcd_watch_msg *, const struct etcd_event *, const char *,
    size_t);
static json_t *cluster_event_of(struct cluster *, const struct etcd_watch_msg *,
    int64_t);
static json_t *cluster_resync_event(struct cluster *, uint32_t, int64_t);
static int cluster_resync_rollback(struct cluster *, struct store_mirror *,
    const struct cluster_old_waves *, const struct cluster_kv *,
    const unsigned char *, unsigned *);
static json_t *cluster_rollback_line(struct cluster *, uint32_t, const char *,
    const struct store_wave *, json_t *, int64_t, const char *);
static int cluster_rollback_keep(struct store_mirror *, json_t *);

/*
 * What KEY (without the prefix) is. For state keys: its database in *DB
 * and its store key in KB (*KLEN bytes; room for STORE_KEY_MAX); for node
 * keys: the name in *NAME (*NLEN bytes).
 */
static enum cluster_key_kind
cluster_classify(const char *key, size_t len, enum store_db *db,
    unsigned char *kb, size_t *klen, const char **name, size_t *nlen)
{
	char num[16], canon[16];
	uint32_t n;

	if (len > 8 && memcmp(key, "objects/", 8) == 0) {
		if (len - 8 > STORE_KEY_MAX)
			return CLUSTER_KEY_OTHER;
		*db = STORE_DB_OBJECTS;
		memcpy(kb, key + 8, len - 8);
		*klen = len - 8;
		return CLUSTER_KEY_STATE;
	}
	if (len > 6 && memcmp(key, "waves/", 6) == 0) {
		if (len - 6 >= sizeof(num))
			return CLUSTER_KEY_OTHER;
		memcpy(num, key + 6, len - 6);
		num[len - 6] = '\0';
		/*
		 * Only the key floe writes for a wave ("waves/7", not
		 * "waves/07"): one key per record, as a resync reads them.
		 */
		if (wave_parse(num, &n) == -1 ||
		    snprintf(canon, sizeof(canon), "%u", n) != (int)(len - 6) ||
		    memcmp(canon, num, len - 6) != 0)
			return CLUSTER_KEY_OTHER;
		*db = STORE_DB_WAVES;
		kb[0] = (unsigned char)(n >> 24);
		kb[1] = (unsigned char)(n >> 16);
		kb[2] = (unsigned char)(n >> 8);
		kb[3] = (unsigned char)n;
		*klen = 4;
		return CLUSTER_KEY_STATE;
	}
	if (len > 7 && memcmp(key, "events/", 7) == 0) {
		*db = STORE_DB_EVENTS;
		*klen = 0;
		return CLUSTER_KEY_STATE;
	}
	if (len > 7 && memcmp(key, "ledger/", 7) == 0) {
		if (cluster_ledger_key(key + 7, len - 7, kb, klen) == -1)
			return CLUSTER_KEY_OTHER;
		*db = STORE_DB_LEDGER;
		return CLUSTER_KEY_STATE;
	}
	if (len > 8 && memcmp(key, "imports/", 8) == 0) {
		*name = key + 8;
		*nlen = len - 8;
		return CLUSTER_KEY_IMPORT;
	}
	if (len > 8 && memcmp(key, "readers/", 8) == 0) {
		*name = key + 8;
		*nlen = len - 8;
		return CLUSTER_KEY_READERS;
	}
	if (len > 13 && memcmp(key, "readers-want/", 13) == 0) {
		*name = key + 13;
		*nlen = len - 13;
		return CLUSTER_KEY_RWANT;
	}
	if (len > 13 && memcmp(key, "readers-copy/", 13) == 0) {
		*name = key + 13;
		*nlen = len - 13;
		return CLUSTER_KEY_RCOPY;
	}
	if (len == 6 && memcmp(key, "leader", 6) == 0)
		return CLUSTER_KEY_LEADER;
	if (len > 6 && memcmp(key, "nodes/", 6) == 0) {
		*name = key + 6;
		*nlen = len - 6;
		return CLUSTER_KEY_NODE;
	}
	/* basis/N is only ever compared (cluster_write.c): not mirrored. */
	return CLUSTER_KEY_OTHER;
}

/* A wave with a rollback pending here keeps it until etcd has it. */
static bool
cluster_held(struct cluster *c, enum store_db db, const unsigned char *kb)
{
	return db == STORE_DB_WAVES &&
	    cluster_pending_has(c,
		(uint32_t)kb[0] << 24 | (uint32_t)kb[1] << 16 |
		    (uint32_t)kb[2] << 8 | kb[3]);
}

/*
 * Put one state key of etcd's (KEY without the prefix) in the mirror's
 * txn. STORE_OK, STORE_NOTFOUND (not floe's: skipped) or STORE_ERROR (the
 * txn is over).
 */
static int
cluster_put(struct cluster *c, struct store_mirror *m, const char *key,
    size_t len, const char *val, size_t vlen, int64_t rev)
{
	unsigned char kb[STORE_KEY_MAX];
	enum store_db db;
	size_t klen;
	const char *name;
	size_t nlen;

	if (cluster_classify(key, len, &db, kb, &klen, &name, &nlen) !=
	    CLUSTER_KEY_STATE)
		return STORE_NOTFOUND;
	if (cluster_held(c, db, kb))
		return STORE_NOTFOUND;
	/* A record of a bulk import: shown once the import is committed. */
	if (db != STORE_DB_EVENTS && cluster_wrapped(val, vlen))
		return cluster_import_put(m, db, kb, klen, val, vlen, rev,
		    c->imports);
	return store_mirror_put(m, db, kb, klen, val, vlen, rev);
}

/* Start the mirror: serve the store's copy, then catch up. */
void
cluster_mirror_start(struct cluster *c)
{
	c->retry = evtimer_new(c->base, cluster_retry_cb, c);
	if (c->retry == NULL)
		fatalx("%s: evtimer_new failed", __func__);
	if (store_mirror_state(c->st, &c->stored, &c->cluster_id) != STORE_OK)
		c->stored = 0;
	c->applied = c->changed = c->stored;
	if (c->stored > 0) {
		c->loaded = true;
		cluster_rehash(c);
		log_info("cluster: serving the copy of etcd's revision %lld "
			 "from the store; catching up",
		    (long long)c->stored);
		cluster_watch_open(c);
	} else
		cluster_resync(c);
}

/* Stop the mirror: no callback is called afterwards. */
void
cluster_mirror_stop(struct cluster *c)
{
	etcd_cancel(c->range);
	c->range = NULL;
	etcd_watch_cancel(c->watch);
	c->watch = NULL;
	cluster_kvs_clear(c);
	if (c->retry != NULL)
		event_free(c->retry);
	c->retry = NULL;
}

/* Read the whole prefix, pinned to one revision. */
static void
cluster_resync(struct cluster *c)
{
	struct etcd_op op = { .type = ETCD_OP_RANGE,
		.key = c->prefix,
		.key_len = c->plen,
		.prefix = true,
		.limit = 1000 };

	etcd_watch_cancel(c->watch);
	c->watch = NULL;
	c->watching = false;
	cluster_kvs_clear(c);
	c->range = etcd_range_all(c->etcd, &op, cluster_range_cb, c);
}

/* Forget a resync's pages. */
static void
cluster_kvs_clear(struct cluster *c)
{
	size_t i;

	for (i = 0; i < c->nkvs; i++) {
		free(c->kvs[i].key);
		free(c->kvs[i].value);
	}
	free(c->kvs);
	c->kvs = NULL;
	c->nkvs = c->kvcap = 0;
}

/* One page of a resync: keep its pairs; at the last one, apply them. */
void
cluster_range_cb(const struct etcd_result *res, void *arg)
{
	struct cluster *c = arg;
	struct cluster_kv *kv;
	size_t i;

	if (res->err != ETCD_OK) {
		c->range = NULL;
		if (strcmp(c->last_error, res->error) != 0)
			log_warnx("cluster: reading etcd failed: %s%s",
			    res->error,
			    c->loaded ? "; serving the store's copy" : "");
		strlcpy(c->last_error, res->error, sizeof(c->last_error));
		cluster_kvs_clear(c);
		cluster_retry(c, CLUSTER_RETRY_MS);
		return;
	}
	for (i = 0; i < res->nkvs; i++) {
		if (res->kvs[i].key_len < c->plen)
			continue;
		if (c->nkvs == c->kvcap) {
			c->kvcap = c->kvcap == 0 ? 1024 : c->kvcap * 2;
			c->kvs =
			    xreallocarray(c->kvs, c->kvcap, sizeof(*c->kvs));
		}
		kv = &c->kvs[c->nkvs++];
		kv->key_len = res->kvs[i].key_len - c->plen;
		kv->key = xmalloc(kv->key_len + 1);
		memcpy(kv->key, res->kvs[i].key + c->plen, kv->key_len);
		kv->key[kv->key_len] = '\0';
		kv->value_len = res->kvs[i].value_len;
		kv->value = xmalloc(kv->value_len + 1);
		memcpy(kv->value, res->kvs[i].value, kv->value_len);
		kv->value[kv->value_len] = '\0';
		kv->mod_revision = res->kvs[i].mod_revision;
		kv->lease = res->kvs[i].lease;
	}
	if (res->more)
		return;
	c->range = NULL;
	cluster_resync_apply(c, res->revision, res->header.cluster_id);
}

/* Collect a wave's state before a resync. */
static int
cluster_old_wave_cb(const struct store_wave *w, void *arg)
{
	struct cluster_old_waves *o = arg;

	o->v = xreallocarray(o->v, o->n + 1, sizeof(*o->v));
	o->v[o->n].n = w->n;
	o->v[o->n].state = w->state;
	o->v[o->n].rollback_ms = w->rollback_ms;
	o->n++;
	return 0;
}

/*
 * Replace the store's copy with the pages read at revision REV of the
 * cluster CID, in one txn; log every wave whose state it changed; watch
 * from REV + 1.
 */
static void
cluster_resync_apply(struct cluster *c, int64_t rev, uint64_t cid)
{
	struct cluster_old_waves old = { NULL, 0 }, now = { NULL, 0 };
	struct store_mirror *m;
	const char *name;
	size_t i, k, nlen, nstate = 0;
	unsigned nlines = 0;
	bool leader = false;
	enum store_db db;
	unsigned char kb[STORE_KEY_MAX];
	size_t klen;
	int rc = STORE_OK, from;

	(void)store_wave_foreach(c->st, cluster_old_wave_cb, &old);
	json_object_clear(c->nodes);
	json_object_clear(c->rwants);
	c->imports = cluster_import_states(c->kvs, c->nkvs);
	/*
	 * The range says who leads, whatever was seen before (another
	 * cluster's revisions may be higher).
	 */
	c->leader_rev = 0;
	if ((m = store_mirror_begin(c->st)) == NULL ||
	    store_mirror_reset(m) != STORE_OK)
		rc = STORE_ERROR;
	for (i = 0; rc != STORE_ERROR && i < c->nkvs; i++) {
		struct cluster_kv *kv = &c->kvs[i];

		switch (cluster_classify(kv->key, kv->key_len, &db, kb, &klen,
		    &name, &nlen)) {
		case CLUSTER_KEY_STATE:
			rc = cluster_put(c, m, kv->key, kv->key_len, kv->value,
			    kv->value_len, kv->mod_revision);
			nstate += rc == STORE_OK;
			if (rc == STORE_OK && db == STORE_DB_WAVES && c->loaded)
				rc = cluster_resync_rollback(c, m, &old, kv, kb,
				    &nlines);
			break;
		case CLUSTER_KEY_NODE:
			cluster_node_seen(c, kv->key, kv->key_len, kv->value,
			    kv->value_len, false);
			break;
		case CLUSTER_KEY_READERS:
			/* Sightings this copy has not merged yet. */
			if (!c->loaded || kv->mod_revision > c->applied)
				rc = cluster_readers_seen(c, m, name, nlen,
				    kv->value, kv->value_len);
			break;
		case CLUSTER_KEY_RWANT:
			cluster_rcopy_want_seen(c, name, nlen, kv->mod_revision,
			    false, true);
			break;
		case CLUSTER_KEY_RCOPY:
			rc = cluster_rcopy_seen(c, m, name, nlen, kv->value,
			    kv->value_len, true);
			break;
		case CLUSTER_KEY_LEADER:
			cluster_leader_seen(c, kv->value, kv->value_len,
			    kv->lease, kv->mod_revision, false);
			leader = true;
			break;
		case CLUSTER_KEY_IMPORT:
		case CLUSTER_KEY_OTHER:
			break;
		}
	}
	json_decref(c->imports);
	c->imports = NULL;
	if (!leader)
		cluster_leader_seen(c, NULL, 0, 0, rev, true);
	if (rc != STORE_ERROR)
		rc = cluster_pending_reput(c, m, rev);
	if (rc != STORE_ERROR)
		rc = store_mirror_commit(m, rev, cid);
	cluster_kvs_clear(c);
	if (rc == STORE_ERROR) {
		log_warnx("cluster: the store refused etcd's revision %lld: "
			  "%s; trying again",
		    (long long)rev, store_last_error(c->st));
		free(old.v);
		cluster_retry(c, CLUSTER_RETRY_MS * 4);
		return;
	}
	if (nlines > 0 && c->f->rlog != NULL)
		(void)rlog_flush(c->f->rlog, units_now_ms());
	/* The diff: every wave the resync moved, either way. */
	(void)store_wave_foreach(c->st, cluster_old_wave_cb, &now);
	for (i = 0; i < now.n; i++) {
		from = WAVE_WAREHOUSE;
		for (k = 0; k < old.n; k++)
			if (old.v[k].n == now.v[i].n)
				from = old.v[k].state;
		if (now.v[i].state != from)
			log_info("cluster: resync: wave %u %s -> %s",
			    now.v[i].n, wave_state_name(from),
			    wave_state_name(now.v[i].state));
	}
	for (k = 0; k < old.n; k++) {
		for (i = 0; i < now.n && now.v[i].n != old.v[k].n; i++)
			;
		if (i == now.n && old.v[k].state != WAVE_WAREHOUSE)
			log_info("cluster: resync: wave %u %s -> warehouse "
				 "(no record)",
			    old.v[k].n, wave_state_name(old.v[k].state));
	}
	free(now.v);
	free(old.v);
	if (c->loaded && c->cluster_id != 0 && cid != c->cluster_id)
		log_info("cluster: etcd's cluster id changed (%016llx -> "
			 "%016llx)",
		    (unsigned long long)c->cluster_id, (unsigned long long)cid);
	c->cluster_id = cid;
	c->applied = c->stored = c->changed = rev;
	c->loaded = true;
	c->resyncs++;
	c->last_error[0] = '\0';
	cluster_rehash(c);
	log_info("cluster: resync at etcd revision %lld: %zu records",
	    (long long)rev, nstate);
	cluster_writes_applied(c);
	cluster_watch_open(c);
	cluster_rcopy_want(c);
}

/* Watch the prefix from the revision after the last one applied. */
static void
cluster_watch_open(struct cluster *c)
{
	struct etcd_watch_opts o = { .key = c->prefix,
		.key_len = c->plen,
		.prefix = true,
		.start_revision = c->applied + 1,
		.progress_notify = true,
		.prev_kv = true,
		.idle_timeout_ms = CLUSTER_WATCH_IDLE_MS };

	c->watching = false;
	c->watch = etcd_watch(c->etcd, &o, cluster_watch_cb, c);
}

/* One message of the watch. */
void
cluster_watch_cb(const struct etcd_watch_msg *msg, void *arg)
{
	struct cluster *c = arg;

	if (msg->err != ETCD_OK) {
		c->watch = NULL;
		c->watching = false;
		c->connected_ms = 0;
		if (msg->err == ETCD_ECOMPACTED) {
			log_info("cluster: etcd compacted past revision %lld "
				 "(oldest left %lld): resync",
			    (long long)c->applied + 1,
			    (long long)msg->compact_revision);
			cluster_resync(c);
			return;
		}
		if (strcmp(c->last_error, msg->error) != 0)
			log_warnx("cluster: the watch on etcd ended: %s; "
				  "serving the store's copy (revision %lld)",
			    msg->error, (long long)c->applied);
		strlcpy(c->last_error, msg->error, sizeof(c->last_error));
		cluster_retry(c, CLUSTER_RETRY_MS);
		return;
	}
	if (msg->created) {
		if (c->cluster_id != 0 &&
		    msg->header.cluster_id != c->cluster_id) {
			log_warnx("cluster: etcd's cluster id is %016llx, the "
				  "store's copy is of %016llx: resync",
			    (unsigned long long)msg->header.cluster_id,
			    (unsigned long long)c->cluster_id);
			cluster_resync(c);
			return;
		}
		if (msg->header.revision < c->applied) {
			log_warnx("cluster: etcd's revision went backwards "
				  "(%lld, applied %lld): resync",
			    (long long)msg->header.revision,
			    (long long)c->applied);
			cluster_resync(c);
			return;
		}
		if (c->last_error[0] != '\0')
			log_info("cluster: watching etcd again from revision "
				 "%lld",
			    (long long)c->applied + 1);
		c->last_error[0] = '\0';
		c->watching = true;
		c->connected_ms = units_now_ms();
		cluster_pending_flush(c);
		return;
	}
	if (msg->nevents == 0) {
		/* A progress notification: all up to its revision is here. */
		if (msg->header.revision > c->applied) {
			c->applied = msg->header.revision;
			cluster_writes_applied(c);
		}
		return;
	}
	cluster_watch_events(c, msg);
}

/* Apply one message's events (whole revisions) in one txn. */
static void
cluster_watch_events(struct cluster *c, const struct etcd_watch_msg *msg)
{
	struct store_mirror *m = NULL;
	const struct etcd_event *ev;
	unsigned char kb[STORE_KEY_MAX];
	enum store_db db;
	const char *key, *name;
	size_t i, len, klen, nlen;
	int64_t top = c->applied;
	uint64_t hash = c->hash;
	enum cluster_key_kind kind;
	bool rehash = false, routes = false, state;
	unsigned nlines = 0;
	json_t *line;
	int rc = STORE_OK;

	for (i = 0; i < msg->nevents && rc != STORE_ERROR; i++) {
		ev = &msg->events[i];
		if (ev->kv.mod_revision > top)
			top = ev->kv.mod_revision;
		if (ev->kv.key_len < c->plen)
			continue;
		key = ev->kv.key + c->plen;
		len = ev->kv.key_len - c->plen;
		kind = cluster_classify(key, len, &db, kb, &klen, &name, &nlen);
		switch (kind) {
		case CLUSTER_KEY_NODE:
			cluster_node_seen(c, key, len, ev->kv.value,
			    ev->kv.value_len, ev->type == ETCD_EVENT_DELETE);
			continue;
		case CLUSTER_KEY_LEADER:
			cluster_leader_seen(c, ev->kv.value, ev->kv.value_len,
			    ev->kv.lease, ev->kv.mod_revision,
			    ev->type == ETCD_EVENT_DELETE);
			continue;
		case CLUSTER_KEY_RWANT:
			cluster_rcopy_want_seen(c, name, nlen,
			    ev->kv.mod_revision, ev->type == ETCD_EVENT_DELETE,
			    false);
			continue;
		case CLUSTER_KEY_OTHER:
			continue;
		case CLUSTER_KEY_READERS:
		case CLUSTER_KEY_RCOPY:
		case CLUSTER_KEY_IMPORT:
		case CLUSTER_KEY_STATE:
			break;
		}
		if (m == NULL && (m = store_mirror_begin(c->st)) == NULL) {
			rc = STORE_ERROR;
			break;
		}
		if (kind == CLUSTER_KEY_READERS) {
			if (ev->type == ETCD_EVENT_PUT)
				rc = cluster_readers_seen(c, m, name, nlen,
				    ev->kv.value, ev->kv.value_len);
			continue;
		}
		if (kind == CLUSTER_KEY_RCOPY) {
			if (ev->type == ETCD_EVENT_PUT)
				rc = cluster_rcopy_seen(c, m, name, nlen,
				    ev->kv.value, ev->kv.value_len, false);
			continue;
		}
		if (cluster_watch_import(m, ev, kind == CLUSTER_KEY_IMPORT, db,
			kb, klen, name, nlen, &rc, &rehash))
			continue;
		/*
		 * A route or a wave: what lagging is, and in the hash as the
		 * store has it (etcd's value may not be a record, or its key
		 * not the canonical one of the record it names).
		 */
		state = db == STORE_DB_OBJECTS || db == STORE_DB_WAVES;
		routes |= state;
		if (state)
			hash ^= cluster_stored_hash(m, db, kb, klen, &rc);
		if (rc == STORE_ERROR)
			break;
		if (ev->type == ETCD_EVENT_DELETE) {
			if (db != STORE_DB_EVENTS)
				rc = store_mirror_del(m, db, kb, klen);
		} else {
			rc = cluster_put(c, m, key, len, ev->kv.value,
			    ev->kv.value_len, ev->kv.mod_revision);
			/*
			 * etcd's value is no record (put by hand): none is
			 * there now, as a resync would find.
			 */
			if (rc == STORE_NOTFOUND && db != STORE_DB_EVENTS &&
			    !cluster_held(c, db, kb))
				rc = store_mirror_del(m, db, kb, klen);
			if (rc == STORE_NOTFOUND)
				rc = STORE_OK;
			if (rc == STORE_OK && db == STORE_DB_WAVES &&
			    (line = cluster_rollback_seen(c, msg, ev, key,
				 len)) != NULL) {
				rc = cluster_rollback_keep(m, line);
				nlines++;
			}
		}
		if (state && rc == STORE_OK)
			hash ^= cluster_stored_hash(m, db, kb, klen, &rc);
	}
	if (m != NULL && rc != STORE_ERROR)
		rc = store_mirror_commit(m, top, c->cluster_id);
	if (rc == STORE_ERROR) {
		/* Never advance past what is not applied: resync later. */
		log_warnx("cluster: the store refused etcd's revision %lld: "
			  "%s; trying again",
		    (long long)top, store_last_error(c->st));
		etcd_watch_cancel(c->watch);
		c->watch = NULL;
		c->watching = false;
		cluster_retry(c, CLUSTER_RETRY_MS * 4);
		return;
	}
	/* The rollback log lines committed with the txn: write them. */
	if (nlines > 0 && c->f->rlog != NULL)
		(void)rlog_flush(c->f->rlog, units_now_ms());
	if (m != NULL)
		c->stored = top;
	/* A batch of reader sightings or a ledger record lags nobody. */
	if (routes || rehash)
		c->changed = top;
	c->hash = hash;
	c->applied = top;
	if (rehash)
		cluster_rehash(c);
	cluster_writes_applied(c);
	cluster_rcopy_tick(c);
}

/*
 * A wave's record in EV went to rolled_back from another state: every node
 * writes the rollback in its own rollback log, naming the node that fired.
 * Returns the line (caller decrefs) or NULL.
 */
static json_t *
cluster_rollback_seen(struct cluster *c, const struct etcd_watch_msg *msg,
    const struct etcd_event *ev, const char *key, size_t len)
{
	struct store_wave w, prev;
	json_t *line, *event;
	const char *node;
	uint32_t n;
	char num[16];

	if (store_wave_record(ev->kv.value, ev->kv.value_len, &w) == -1 ||
	    w.state != WAVE_ROLLED_BACK)
		return NULL;
	memset(&prev, 0, sizeof(prev));
	if (ev->prev_kv != NULL &&
	    store_wave_record(ev->prev_kv->value, ev->prev_kv->value_len,
		&prev) == -1)
		return NULL;
	if (prev.state == WAVE_ROLLED_BACK || len - 6 >= sizeof(num))
		return NULL;
	memcpy(num, key + 6, len - 6);
	num[len - 6] = '\0';
	if (wave_parse(num, &n) == -1)
		return NULL;
	/* The event written with it says which trigger and which node. */
	event = cluster_event_of(c, msg, ev->kv.mod_revision);
	node = json_string_value(json_object_get(event, "node"));
	/* This node logged it when it applied it, etcd being away. */
	if (node != NULL && strcmp(node, c->name) == 0 &&
	    json_is_true(json_object_get(event, "pending_etcd"))) {
		json_decref(event);
		return NULL;
	}
	line = cluster_rollback_line(c, n, wave_state_name(prev.state), &w,
	    event, ev->kv.mod_revision, "applied from etcd");
	json_decref(event);
	return line;
}

/*
 * The rollback log line of wave N, rolled back from FROM to the record W
 * by the change EVENT (borrowed; NULL: not known) at etcd revision REV,
 * with the node that made it; said in floe's log too, HOW it came.
 * Caller decrefs; NULL if out of memory.
 */
static json_t *
cluster_rollback_line(struct cluster *c, uint32_t n, const char *from,
    const struct store_wave *w, json_t *event, int64_t rev, const char *how)
{
	const char *trigger, *node;
	struct rlog_entry e;
	json_t *line;

	trigger = json_string_value(json_object_get(event, "trigger"));
	node = json_string_value(json_object_get(event, "node"));
	memset(&e, 0, sizeof(e));
	e.wave = n;
	e.from = from;
	e.trigger = trigger != NULL ? trigger : "operator";
	e.measured = json_object_get(event, "measured");
	e.threshold = json_object_get(event, "threshold");
	e.actor = w->actor;
	e.reason = w->reason[0] != '\0' ? w->reason : NULL;
	if ((line = rlog_line(&e, c->st, units_now_ms())) == NULL)
		return NULL;
	(void)json_object_set_new(line, "node",
	    json_string(node != NULL ? node : "?"));
	(void)json_object_set_new(line, "revision",
	    json_integer((json_int_t)rev));
	log_info("wave %u rolled back from %s by %s (%s revision %lld)", n,
	    from, w->actor, how, (long long)rev);
	return line;
}

/*
 * Keep LINE (taken) in the mirror's txn M as a pending rollback log line;
 * the txn's commit makes it durable with the rollback, rlog_flush writes
 * it. STORE_OK, or STORE_ERROR (M is over).
 */
static int
cluster_rollback_keep(struct store_mirror *m, json_t *line)
{
	char *text;
	int rc;

	text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(line);
	if (text == NULL)
		return STORE_OK; /* out of memory: the line is lost, not the txn
				  */
	rc = store_mirror_rlog(m, text, strlen(text));
	free(text);
	return rc;
}

/*
 * A resync put wave record KV (its store key KB): if it is rolled back
 * and the store's copy OLD did not have that rollback (another state, or
 * another rollback time), this node missed it while it was away: keep
 * its rollback log line in M, once. STORE_OK or STORE_ERROR (M is over).
 */
static int
cluster_resync_rollback(struct cluster *c, struct store_mirror *m,
    const struct cluster_old_waves *old, const struct cluster_kv *kv,
    const unsigned char *kb, unsigned *nlines)
{
	const struct cluster_old_wave *o = NULL;
	struct store_wave w;
	const char *from, *node;
	json_t *event, *line;
	uint32_t n;
	size_t i;

	if (store_wave_record(kv->value, kv->value_len, &w) == -1 ||
	    w.state != WAVE_ROLLED_BACK)
		return STORE_OK;
	n = (uint32_t)kb[0] << 24 | (uint32_t)kb[1] << 16 |
	    (uint32_t)kb[2] << 8 | kb[3];
	for (i = 0; i < old->n && o == NULL; i++)
		if (old->v[i].n == n)
			o = &old->v[i];
	if (o != NULL && o->state == WAVE_ROLLED_BACK &&
	    o->rollback_ms == w.rollback_ms)
		return STORE_OK;
	event = cluster_resync_event(c, n, kv->mod_revision);
	node = json_string_value(json_object_get(event, "node"));
	if (node != NULL && strcmp(node, c->name) == 0 &&
	    json_is_true(json_object_get(event, "pending_etcd"))) {
		json_decref(event);
		return STORE_OK;
	}
	from = json_string_value(json_object_get(event, "from"));
	if (from == NULL)
		from = wave_state_name(o != NULL ? o->state : WAVE_WAREHOUSE);
	line = cluster_rollback_line(c, n, from, &w, event, kv->mod_revision,
	    "found by a resync at");
	json_decref(event);
	if (line == NULL)
		return STORE_OK;
	(*nlines)++;
	return cluster_rollback_keep(m, line);
}

/*
 * The last rollback event of wave N at or before revision REV among a
 * resync's pages, parsed, or NULL. Caller decrefs.
 */
static json_t *
cluster_resync_event(struct cluster *c, uint32_t n, int64_t rev)
{
	static const char type[] = "\"wave.rollback\"";
	const struct cluster_kv *kv, *best = NULL;
	json_t *ev;
	size_t i;

	for (i = 0; i < c->nkvs; i++) {
		kv = &c->kvs[i];
		if (kv->mod_revision > rev ||
		    (best != NULL && kv->mod_revision <= best->mod_revision) ||
		    kv->key_len <= 7 || memcmp(kv->key, "events/", 7) != 0 ||
		    memmem(kv->value, kv->value_len, type, sizeof(type) - 1) ==
			NULL)
			continue;
		if ((ev = json_loadb(kv->value, kv->value_len, 0, NULL)) ==
		    NULL)
			continue;
		if (json_integer_value(json_object_get(ev, "wave")) ==
		    (json_int_t)n)
			best = kv;
		json_decref(ev);
	}
	return best != NULL ?
	    json_loadb(best->value, best->value_len, 0, NULL) :
	    NULL;
}

/* The event of MSG put at revision REV, parsed, or NULL. Caller decrefs. */
static json_t *
cluster_event_of(struct cluster *c, const struct etcd_watch_msg *msg,
    int64_t rev)
{
	const struct etcd_kv *kv;
	size_t i;

	for (i = 0; i < msg->nevents; i++) {
		kv = &msg->events[i].kv;
		if (msg->events[i].type != ETCD_EVENT_PUT ||
		    kv->mod_revision != rev || kv->key_len < c->plen + 7 ||
		    memcmp(kv->key + c->plen, "events/", 7) != 0)
			continue;
		return json_loadb(kv->value, kv->value_len, 0, NULL);
	}
	return NULL;
}

/* Try the watch (or the resync) again in MS. */
static void
cluster_retry(struct cluster *c, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000),
		(suseconds_t)(ms % 1000) * 1000 };

	evtimer_add(c->retry, &tv);
}

/* Reopen the watch, or resync when the store holds no good copy. */
static void
cluster_retry_cb(evutil_socket_t fd __unused, short ev __unused, void *arg)
{
	struct cluster *c = arg;

	if (c->watch != NULL || c->range != NULL)
		return;
	if (!c->loaded)
		cluster_resync(c);
	else
		cluster_watch_open(c);
}
