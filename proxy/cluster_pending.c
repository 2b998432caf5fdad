/*
 * floe: cluster_pending.c -- rollbacks while etcd is unreachable. An
 * operator's rollback that etcd cannot take is applied to this node's copy
 * at once and kept as pending; the mirror leaves that wave alone until
 * the rollback is written to etcd, which happens as soon as etcd answers
 * again. A pending rollback wins over a forward state (canary, lakehouse)
 * it then finds, and its event says so; any other state means the wave
 * was already moved back, and the pending rollback is dropped. Pending
 * rollbacks are kept in the store too, in the txn that applies them, so
 * a node restarted before etcd came back still writes them.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One rollback etcd has not taken yet. */
struct cluster_pending {
	TAILQ_ENTRY(cluster_pending) entry;
	struct cluster *c;
	uint32_t wave;
	char *key; /* PREFIX/waves/N */
	char *record; /* the rolled-back wave record */
	size_t reclen;
	char *event; /* its event (JSON) */
	int64_t found_rev; /* the record it is written over */
	char found[16]; /* that record's state */
	struct etcd_call *call;
	/*
	 * Settled in etcd: the mirror follows etcd for the wave again, and
	 * etcd's record is read to replace this node's own (LOCAL_SEQ: its
	 * sequence in the store).
	 */
	bool refresh;
	uint64_t local_seq;
};

static void cluster_pending_range_cb(const struct etcd_result *, void *);
static void cluster_pending_txn_cb(const struct etcd_result *, void *);
static void cluster_pending_drop(struct cluster_pending *, bool);
static void cluster_pending_settle(struct cluster_pending *);
static void cluster_pending_refresh(struct cluster_pending *);
static void cluster_pending_refresh_cb(const struct etcd_result *, void *);
static struct cluster_pending *cluster_pending_new(struct cluster *, uint32_t,
    const char *, size_t, const char *, size_t);
static int cluster_pending_load_cb(uint32_t, const void *, size_t, void *);

/* Whether wave N has a rollback pending here. */
bool
cluster_pending_has(const struct cluster *c, uint32_t n)
{
	const struct cluster_pending *p;

	TAILQ_FOREACH(p, &c->pending, entry)
		if (p->wave == n && !p->refresh)
			return true;
	return false;
}

/*
 * Apply the rollback of wave N (RECORD, EVENT) to this node's copy now and
 * keep it pending for etcd. 0, or -1 if the store refused it.
 */
int
cluster_pending_add(struct cluster *c, uint32_t n, const char *record,
    size_t reclen, const char *event, size_t evlen)
{
	struct store_mirror *m;
	struct store_wave w;
	struct rlog_entry e;
	unsigned char kb[4];
	uint64_t hash;
	json_t *line, *ev;
	unsigned char *kept;
	int rc, from = WAVE_WAREHOUSE;

	if (store_wave_get(c->st, n, &w) == STORE_OK)
		from = w.state;
	kb[0] = (unsigned char)(n >> 24);
	kb[1] = (unsigned char)(n >> 16);
	kb[2] = (unsigned char)(n >> 8);
	kb[3] = (unsigned char)n;
	/*
	 * The record keeps the revision it replaces; the event goes after
	 * the store's last sequence (not always stored + 1: a second pending
	 * rollback must not write over the first's event), and the commit
	 * makes it the last sequence, so that what waits for a change (the
	 * wave counts, the poll list, event followers) sees this one. etcd's
	 * later revisions may reuse its number: the event the rollback gets
	 * in etcd, once written there, tells it again.
	 */
	if ((m = store_mirror_begin(c->st)) == NULL)
		return -1;
	rc = STORE_OK;
	hash = cluster_stored_hash(m, STORE_DB_WAVES, kb, 4, &rc);
	if (rc != STORE_ERROR &&
	    (rc = store_mirror_put(m, STORE_DB_WAVES, kb, 4, record, reclen,
		 c->stored)) == STORE_OK)
		rc = store_mirror_put(m, STORE_DB_EVENTS, NULL, 0, event, evlen,
		    (int64_t)store_last_seq(c->st) + 1);
	if (rc != STORE_ERROR)
		hash ^= cluster_stored_hash(m, STORE_DB_WAVES, kb, 4, &rc);
	if (rc == STORE_ERROR)
		return -1;
	/* Kept as: the record's length (4 bytes), the record, the event. */
	kept = xmalloc(4 + reclen + evlen);
	kept[0] = (unsigned char)(reclen >> 24);
	kept[1] = (unsigned char)(reclen >> 16);
	kept[2] = (unsigned char)(reclen >> 8);
	kept[3] = (unsigned char)reclen;
	memcpy(kept + 4, record, reclen);
	memcpy(kept + 4 + reclen, event, evlen);
	rc = store_mirror_pending(m, n, kept, 4 + reclen + evlen);
	free(kept);
	if (rc == STORE_ERROR ||
	    store_mirror_commit(m, c->stored, c->cluster_id) != STORE_OK)
		return -1;
	/* The node's hash is of what its store holds: this record now. */
	c->hash ^= hash;
	cluster_pending_new(c, n, record, reclen, event, evlen);
	/* An operator's, or a trigger's (its event names it). */
	ev = json_loadb(event, evlen, 0, NULL);
	memset(&e, 0, sizeof(e));
	e.wave = n;
	e.from = wave_state_name(from);
	e.trigger = json_string_value(json_object_get(ev, "trigger"));
	if (e.trigger == NULL)
		e.trigger = "operator";
	e.measured = json_object_get(ev, "measured");
	e.threshold = json_object_get(ev, "threshold");
	if (store_wave_record(record, reclen, &w) == 0) {
		e.actor = w.actor;
		e.reason = w.reason[0] != '\0' ? w.reason : NULL;
	}
	if ((line = rlog_line(&e, c->st, units_now_ms())) != NULL) {
		(void)json_object_set_new(line, "node", json_string(c->name));
		(void)json_object_set_new(line, "pending_etcd", json_true());
		if (c->f->rlog != NULL)
			(void)rlog_append(c->f->rlog, line, units_now_ms(),
			    NULL);
		json_decref(line);
	}
	json_decref(ev);
	log_info("wave %u rolled back from %s on this node; etcd is "
		 "unreachable, the rollback is pending until it answers",
	    n, e.from);
	return 0;
}

/* A pending rollback of wave N in memory. */
static struct cluster_pending *
cluster_pending_new(struct cluster *c, uint32_t n, const char *record,
    size_t reclen, const char *event, size_t evlen)
{
	struct cluster_pending *p;
	char num[16];
	size_t klen;

	p = xcalloc(1, sizeof(*p));
	p->c = c;
	p->wave = n;
	snprintf(num, sizeof(num), "%u", n);
	cluster_key(c, "waves/", num, strlen(num), &p->key, &klen);
	p->record = xmalloc(reclen);
	memcpy(p->record, record, reclen);
	p->reclen = reclen;
	p->event = xstrndup(event, evlen);
	TAILQ_INSERT_TAIL(&c->pending, p, entry);
	return p;
}

/* One pending rollback kept in the store: back in memory. */
static int
cluster_pending_load_cb(uint32_t n, const void *val, size_t len, void *arg)
{
	struct cluster *c = arg;
	const unsigned char *v = val;
	size_t reclen;

	if (len < 4)
		return 0;
	reclen =
	    (size_t)v[0] << 24 | (size_t)v[1] << 16 | (size_t)v[2] << 8 | v[3];
	if (reclen > len - 4)
		return 0;
	cluster_pending_new(c, n, (const char *)v + 4, reclen,
	    (const char *)v + 4 + reclen, len - 4 - reclen);
	log_info("wave %u: a rollback made while etcd was unreachable is "
		 "still pending; it is written when etcd answers",
	    n);
	return 0;
}

/* Read the pending rollbacks the store kept (at start). */
void
cluster_pending_load(struct cluster *c)
{
	(void)store_pending_foreach(c->st, cluster_pending_load_cb, c);
}

/* Put the pending rollbacks back into a resync's txn M. */
int
cluster_pending_reput(struct cluster *c, struct store_mirror *m, int64_t rev)
{
	struct cluster_pending *p;
	unsigned char kb[4];

	TAILQ_FOREACH(p, &c->pending, entry) {
		if (p->refresh)
			continue; /* settled: the resync has etcd's record */
		kb[0] = (unsigned char)(p->wave >> 24);
		kb[1] = (unsigned char)(p->wave >> 16);
		kb[2] = (unsigned char)(p->wave >> 8);
		kb[3] = (unsigned char)p->wave;
		if (store_mirror_put(m, STORE_DB_WAVES, kb, 4, p->record,
			p->reclen, rev) == STORE_ERROR)
			return STORE_ERROR;
	}
	return STORE_OK;
}

/* Write every pending rollback to etcd (etcd answers again). */
void
cluster_pending_flush(struct cluster *c)
{
	struct cluster_pending *p;
	struct etcd_op op = { .type = ETCD_OP_RANGE };

	TAILQ_FOREACH(p, &c->pending, entry) {
		if (p->call != NULL)
			continue;
		if (p->refresh) {
			cluster_pending_refresh(p);
			continue;
		}
		op.key = p->key;
		p->call = etcd_range(c->etcd, &op, cluster_pending_range_cb, p);
	}
}

/* What etcd holds for the wave: write over a forward state, else drop. */
static void
cluster_pending_range_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_pending *p = arg;
	struct cluster *c = p->c;
	struct store_wave w;
	struct etcd_cmp cmp = { .target = ETCD_CMP_MOD,
		.result = ETCD_CMP_EQUAL };
	struct etcd_op ops[2];
	struct etcd_txn t = { 0 };
	json_t *ev;
	char part[160], *evkey, *val;
	size_t evklen;

	p->call = NULL;
	if (res->err != ETCD_OK)
		return; /* the next flush tries again */
	memset(&w, 0, sizeof(w));
	if (res->nkvs > 0 &&
	    store_wave_record(res->kvs[0].value, res->kvs[0].value_len, &w) ==
		-1)
		w.state = WAVE_WAREHOUSE;
	p->found_rev = res->nkvs > 0 ? res->kvs[0].mod_revision : 0;
	strlcpy(p->found, wave_state_name(w.state), sizeof(p->found));
	if (w.state != WAVE_CANARY && w.state != WAVE_LAKEHOUSE) {
		log_info("wave %u: etcd holds it %s; the rollback pending "
			 "here is dropped",
		    p->wave, p->found);
		cluster_pending_settle(p);
		return;
	}
	if ((ev = json_loads(p->event, 0, NULL)) == NULL)
		ev = json_object();
	(void)json_object_set_new(ev, "node", json_string(c->name));
	(void)json_object_set_new(ev, "pending_etcd", json_true());
	(void)json_object_set_new(ev, "over", json_string(p->found));
	(void)json_object_set_new(ev, "note",
	    json_string("applied on this node while etcd was unreachable, "
			"written when it answered again, over the forward "
			"state it found"));
	val = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(ev);
	if (val == NULL)
		return;
	snprintf(part, sizeof(part), "%013" PRId64 "-%u-%s", units_now_ms(),
	    ++c->nevents, c->name);
	cluster_key(c, "events/", part, strlen(part), &evkey, &evklen);
	cmp.key = p->key;
	cmp.number = p->found_rev;
	memset(ops, 0, sizeof(ops));
	ops[0].type = ops[1].type = ETCD_OP_PUT;
	ops[0].key = p->key;
	ops[0].value = p->record;
	ops[0].value_len = p->reclen;
	ops[1].key = evkey;
	ops[1].key_len = evklen;
	ops[1].value = val;
	ops[1].value_len = strlen(val);
	t.cmps = &cmp;
	t.ncmps = 1;
	t.success = ops;
	t.nsuccess = 2;
	p->call = etcd_txn(c->etcd, &t, cluster_pending_txn_cb, p);
	free(evkey);
	free(val);
}

/* The pending rollback's txn answered. */
static void
cluster_pending_txn_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_pending *p = arg;

	p->call = NULL;
	if (res->err != ETCD_OK || !res->succeeded)
		return; /* changed meanwhile, or etcd failed: next flush */
	log_info("wave %u: the rollback pending here is written to etcd "
		 "(revision %" PRId64 "), over %s",
	    p->wave, res->header.revision, p->found);
	cluster_pending_settle(p);
}

/*
 * P is settled in etcd: written there, or etcd held the wave moved back
 * already. The mirror follows etcd for the wave again; but it skipped
 * etcd's events for it while it held the rollback, and the store still
 * holds this node's record (its own sequence, actor, times), so etcd's
 * record is read again to replace it. Until then the node's hash says it
 * differs, as it does.
 */
static void
cluster_pending_settle(struct cluster_pending *p)
{
	struct store_wave w;

	if (store_pending_del(p->c->st, p->wave) != STORE_OK)
		log_warnx("cluster: wave %u: forgetting the pending rollback "
			  "in the store failed: %s",
		    p->wave, store_last_error(p->c->st));
	p->refresh = true;
	p->local_seq =
	    store_wave_get(p->c->st, p->wave, &w) == STORE_OK ? w.seq : 0;
	cluster_pending_refresh(p);
}

/* Read etcd's record of P's wave (again, at the next flush, on failure). */
static void
cluster_pending_refresh(struct cluster_pending *p)
{
	struct etcd_op op = { .type = ETCD_OP_RANGE };

	op.key = p->key;
	p->call = etcd_range(p->c->etcd, &op, cluster_pending_refresh_cb, p);
}

/*
 * etcd's record of a settled wave: in the store in place of this node's
 * own, unless the watch has put a newer one there since (or the record
 * is gone), or a new rollback is held here for the wave.
 */
static void
cluster_pending_refresh_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_pending *p = arg;
	struct cluster *c = p->c;
	struct store_mirror *m;
	unsigned char kb[4];
	uint64_t seq, hash;
	int rc = STORE_OK;

	p->call = NULL;
	if (res->err != ETCD_OK)
		return; /* the next flush reads it again */
	if ((m = store_mirror_begin(c->st)) == NULL)
		return;
	kb[0] = (unsigned char)(p->wave >> 24);
	kb[1] = (unsigned char)(p->wave >> 16);
	kb[2] = (unsigned char)(p->wave >> 8);
	kb[3] = (unsigned char)p->wave;
	if ((rc = store_mirror_seq(m, STORE_DB_WAVES, kb, 4, &seq)) ==
	    STORE_ERROR)
		return; /* the txn is over: the next flush reads it again */
	/* A newer record, or a new rollback held here for the wave. */
	if (rc != STORE_OK || seq != p->local_seq ||
	    cluster_pending_has(c, p->wave)) {
		store_mirror_abort(m);
		cluster_pending_drop(p, false);
		return;
	}
	hash = cluster_stored_hash(m, STORE_DB_WAVES, kb, 4, &rc);
	if (rc != STORE_ERROR && res->nkvs > 0)
		rc = store_mirror_put(m, STORE_DB_WAVES, kb, 4,
		    res->kvs[0].value, res->kvs[0].value_len,
		    res->kvs[0].mod_revision);
	if (rc != STORE_ERROR && (res->nkvs == 0 || rc == STORE_NOTFOUND))
		rc = store_mirror_del(m, STORE_DB_WAVES, kb, 4);
	if (rc != STORE_ERROR)
		hash ^= cluster_stored_hash(m, STORE_DB_WAVES, kb, 4, &rc);
	if (rc == STORE_ERROR ||
	    store_mirror_commit(m, c->stored, c->cluster_id) != STORE_OK) {
		log_warnx("cluster: wave %u: taking etcd's record after the "
			  "rollback pending here failed: %s; again later",
		    p->wave, store_last_error(c->st));
		return;
	}
	c->hash ^= hash;
	cluster_pending_drop(p, false);
}

/*
 * Forget P (and with STORED its copy in the store); the mirror follows
 * etcd for its wave again.
 */
static void
cluster_pending_drop(struct cluster_pending *p, bool stored)
{
	if (stored && store_pending_del(p->c->st, p->wave) != STORE_OK)
		log_warnx("cluster: wave %u: forgetting the pending rollback "
			  "in the store failed: %s",
		    p->wave, store_last_error(p->c->st));
	TAILQ_REMOVE(&p->c->pending, p, entry);
	etcd_cancel(p->call);
	free(p->key);
	free(p->record);
	free(p->event);
	free(p);
}

/* Forget every pending rollback (stopping). */
void
cluster_pending_free(struct cluster *c)
{
	struct cluster_pending *p;

	/* The store keeps them for the next start. */
	while ((p = TAILQ_FIRST(&c->pending)) != NULL)
		cluster_pending_drop(p, false);
}
