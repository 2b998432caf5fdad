/*
 * floe: cluster_write.c -- writes in cluster mode. A change decided on
 * this node's copy (captured by the store, not made) becomes one etcd txn
 * that compares what the decision read with the revision it read it at,
 * and puts the new records and the change's event together; a bulk import
 * goes in txns of at most 128 operations, its event in the last. The
 * answer waits until this node's mirror applied the txn's revision (read
 * your writes).
 *
 * What a decision read, and so compares: a transition, its wave's record;
 * a route change, the route and the records of the waves it leaves and
 * joins (the route guard). A gate reads more: every route of its wave and
 * their tables' ledger records, too many keys to compare. So each route
 * change and ledger record also puts PREFIX/basis/N for each wave N whose
 * gates it changes, and a gated transition (one that sends more reads to
 * the lakehouse, or a freeze) compares basis/N as not changed since the
 * revision its node's copy was at: a route or record that reached etcd
 * through another node and not yet this copy makes it lose (409).
 */
#include <inttypes.h>
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
#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "proxy/etcd.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

/* One write in flight: its operations, the txn sent, its waiting answer. */
struct cluster_write {
	TAILQ_ENTRY(cluster_write) entry;
	struct cluster *c;
	struct etcd_op *ops; /* all of them; keys and values owned */
	struct etcd_cmp *cmps; /* one per wave put */
	size_t nops;
	size_t ncmps;
	struct cluster_chunk *chunks; /* txns of CLUSTER_TXN_OPS at most */
	size_t nchunks;
	size_t sent; /* chunks sent */
	size_t taken; /* chunks etcd took */
	size_t inflight; /* sent and not answered */
	uint32_t wave; /* the wave compared, for the refusal */
	const char *wkey; /* its key (an operation's or in ckeys), or NULL */
	bool rollback; /* its new state is rolled_back */
	int64_t decided; /* the mod_revision it was decided on */
	int64_t read; /* the revision this node's copy was at (applied) */
	int64_t revision; /* etcd's highest revision of the txns */
	struct etcd_call *range; /* reading the concurrent change */
	struct event *timer; /* gives up waiting for the mirror */
	int now_status; /* answered on the next loop turn, with now_msg */
	const char *now_msg;
	char now_buf[192];
	cluster_done_cb done;
	void *arg;
	/* A bulk import (more than one txn): cluster_import.c's design. */
	bool bulk;
	bool committed; /* its commit txn was taken */
	char id[128]; /* NODE-MS-N */
	char *ikey; /* PREFIX/imports/ID */
	size_t ndata; /* its records: ops[0..ndata) */
	int64_t begun; /* the revision it was decided on */
	struct etcd_cmp *kcmps; /* one per record: not changed since begun */
	struct cluster_touch *touch; /* the waves whose gates it changes */
	size_t ntouch;
	char **ckeys; /* keys of compares no operation owns */
	size_t nckeys;
	bool gated; /* a transition that compares its wave's basis */
	struct etcd_call *call; /* its lease grant, open or commit txn */
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

static void cluster_write_pump(struct cluster_write *);
static void cluster_write_send(struct cluster_chunk *);
static void cluster_write_cb(const struct etcd_result *, void *);
static void cluster_conflict_cb(const struct etcd_result *, void *);
static void cluster_write_end(struct cluster_write *, int, const char *);
static void cluster_write_timeout_cb(evutil_socket_t, short, void *);
static void cluster_write_free(struct cluster_write *);
static int cluster_op_from(struct cluster *, struct cluster_write *,
    struct store_cap_op *);
static void cluster_bulk_wrap(struct cluster *, struct cluster_write *,
    struct store_cap_op *);
static void cluster_touch_scan(struct cluster *, struct cluster_write *,
    const struct store_capture *);
static void cluster_touch(struct cluster_write *, uint32_t, bool);
static void cluster_touch_txn(struct cluster *, struct cluster_write *);
static void cluster_basis_op(struct cluster *, uint32_t, struct etcd_op *);
static void cluster_wave_cmp(struct cluster *, struct cluster_write *,
    const char *, uint32_t, int64_t);
static unsigned cluster_share(const struct store_wave *);
static bool cluster_gated(struct cluster *, uint32_t,
    const struct store_wave *);
static void cluster_bulk_start(struct cluster_write *);
static bool cluster_op_is_event(const struct cluster *, const struct etcd_op *);
static void cluster_bulk_lease_cb(const struct etcd_result *, void *);
static void cluster_bulk_ka_cb(evutil_socket_t, short, void *);
static void cluster_bulk_kad_cb(const struct etcd_result *, void *);
static void cluster_bulk_open_cb(const struct etcd_result *, void *);
static void cluster_bulk_pump(struct cluster_write *);
static void cluster_bulk_chunk_cb(const struct etcd_result *, void *);
static void cluster_bulk_send(struct cluster_chunk *);
static void cluster_bulk_check(struct cluster_chunk *);
static void cluster_bulk_check_cb(const struct etcd_result *, void *);
static void cluster_bulk_recommit_cb(const struct etcd_result *, void *);
static void cluster_bulk_committed(struct cluster_write *, int64_t);
static void cluster_bulk_commit(struct cluster_write *);
static void cluster_bulk_commit_cb(const struct etcd_result *, void *);
static void cluster_bulk_fail(struct cluster_write *, const char *,
    const struct etcd_result *);
static void cluster_bulk_dropped_cb(const struct etcd_result *, void *);
static char *cluster_bulk_record(struct cluster_write *, const char *);
static int64_t cluster_bulk_ttl(const struct cluster *);

/*
 * Turn one captured operation into an etcd operation of W (taking its
 * buffers). 0, or -1 for one etcd does not hold.
 */
static int
cluster_op_from(struct cluster *c, struct cluster_write *w,
    struct store_cap_op *op)
{
	struct etcd_op *e = &w->ops[w->nops];
	struct etcd_cmp *cmp;
	struct store_wave wv;
	json_t *ev;
	char num[16], part[160], lk[STORE_KEY_MAX + 32], *key;
	size_t klen, llen;
	uint32_t n;

	memset(e, 0, sizeof(*e));
	switch (op->db) {
	case STORE_DB_OBJECTS:
		cluster_key(c, "objects/", op->key, op->keylen, &key, &klen);
		/* Last changed where this copy has it (a bulk's, at begun). */
		if (!w->bulk) {
			cmp = &w->cmps[w->ncmps++];
			memset(cmp, 0, sizeof(*cmp));
			cmp->key = key;
			cmp->target = ETCD_CMP_MOD;
			cmp->result = ETCD_CMP_LESS;
			cmp->number = w->read + 1;
		}
		break;
	case STORE_DB_WAVES:
		n = (uint32_t)op->key[0] << 24 | (uint32_t)op->key[1] << 16 |
		    (uint32_t)op->key[2] << 8 | op->key[3];
		snprintf(num, sizeof(num), "%u", n);
		cluster_key(c, "waves/", num, strlen(num), &key, &klen);
		cmp = &w->cmps[w->ncmps++];
		memset(cmp, 0, sizeof(*cmp));
		cmp->key = key;
		cmp->target = ETCD_CMP_MOD;
		cmp->result = ETCD_CMP_EQUAL;
		cmp->number = (int64_t)op->decided_seq;
		w->wave = n;
		w->wkey = key;
		w->decided = (int64_t)op->decided_seq;
		if (store_wave_record(op->val, op->vallen, &wv) == 0) {
			w->rollback = wv.state == WAVE_ROLLED_BACK;
			/* Its gate read the wave's routes and ledger. */
			if (cluster_gated(c, n, &wv)) {
				w->gated = true;
				cluster_wave_cmp(c, w, "basis/", n, w->read);
			}
		}
		break;
	case STORE_DB_EVENTS:
		/* Unique per node; the mirror numbers it by its revision. */
		snprintf(part, sizeof(part), "%013" PRId64 "-%u-%s",
		    units_now_ms(), ++c->nevents, c->name);
		cluster_key(c, "events/", part, strlen(part), &key, &klen);
		/* The node that made the change rides with its event. */
		if ((ev = json_loadb((char *)op->val, op->vallen, 0, NULL)) !=
		    NULL) {
			(void)json_object_set_new(ev, "node",
			    json_string(c->name));
			free(op->val);
			op->val = (unsigned char *)json_dumps(ev,
			    JSON_COMPACT | JSON_SORT_KEYS);
			op->vallen =
			    op->val != NULL ? strlen((char *)op->val) : 0;
			json_decref(ev);
		}
		break;
	case STORE_DB_LEDGER:
		/* ledger/OBJECT/TS, TS in hex: readable, and in time order. */
		if ((llen = cluster_ledger_name(op->key, op->keylen, lk,
			 sizeof(lk))) == 0)
			return -1;
		cluster_key(c, "ledger/", lk, llen, &key, &klen);
		break;
	default:
		return -1;
	}
	if (w->bulk && op->db != STORE_DB_EVENTS && !op->del)
		cluster_bulk_wrap(c, w, op);
	e->type = op->del ? ETCD_OP_DELETE : ETCD_OP_PUT;
	e->key = key;
	e->key_len = klen;
	e->value = (const char *)op->val;
	e->value_len = op->vallen;
	op->val = NULL;
	w->nops++;
	return 0;
}

/* Commit what CAP recorded in etcd; DONE later. */
void
cluster_commit(struct cluster *c, struct store_capture *cap,
    cluster_done_cb done, void *arg)
{
	static const struct timeval zero = { 0, 0 };
	struct cluster_write *w;
	size_t i, nobj = 0, nev = 0, nguard = 0;
	bool transition = false;

	w = xcalloc(1, sizeof(*w));
	w->c = c;
	w->done = done;
	w->arg = arg;
	w->read = c->applied;
	for (i = 0; i < cap->n; i++) {
		transition |= cap->ops[i].db == STORE_DB_WAVES;
		nobj += cap->ops[i].db == STORE_DB_OBJECTS;
		nev += cap->ops[i].db == STORE_DB_EVENTS;
	}
	cluster_touch_scan(c, w, cap);
	for (i = 0; i < w->ntouch; i++)
		nguard += w->touch[i].guard;
	w->ops = xcalloc(cap->n + w->ntouch + 1, sizeof(*w->ops));
	w->cmps = xcalloc(2 * cap->n + w->ntouch + 1, sizeof(*w->cmps));
	/*
	 * More than one txn (or more compares than one takes):
	 * all-or-nothing through an import record. A transition never is.
	 */
	w->bulk = !transition &&
	    (cap->n + w->ntouch > CLUSTER_TXN_OPS ||
		nobj + nguard > CLUSTER_TXN_OPS);
	if (w->bulk) {
		snprintf(w->id, sizeof(w->id), "%s-%013" PRId64 "-%u", c->name,
		    units_now_ms(), ++c->nimports);
		w->begun = w->read;
	}
	for (i = 0; i < cap->n; i++)
		(void)cluster_op_from(c, w, &cap->ops[i]);
	store_capture_clear(cap);
	if (!w->bulk)
		cluster_touch_txn(c, w);
	if ((w->timer = evtimer_new(c->base, cluster_write_timeout_cb, w)) ==
	    NULL)
		fatalx("%s: evtimer_new failed", __func__);
	TAILQ_INSERT_TAIL(&c->writes, w, entry);
	/*
	 * Answered at once, but never from inside this call: the caller
	 * takes the answer later, and is not ready for it before we return.
	 */
	if (!w->bulk &&
	    (w->nops > CLUSTER_TXN_OPS || w->ncmps > CLUSTER_TXN_OPS)) {
		/* A transition that moves routes (none does now). */
		w->now_status = 503;
		w->now_msg = "a transition too large for one txn";
	} else if (w->bulk &&
	    (1 + nev + w->ntouch > CLUSTER_TXN_OPS ||
		1 + nguard > CLUSTER_TXN_OPS)) {
		/* Its commit puts a key per wave: one txn must hold them. */
		snprintf(w->now_buf, sizeof(w->now_buf),
		    "an import into or out of %zu waves: its commit is one "
		    "etcd txn, which holds %zu at most; nothing changed; "
		    "split it by wave",
		    w->ntouch, (size_t)CLUSTER_TXN_OPS - 1 - nev);
		w->now_status = 409;
		w->now_msg = w->now_buf;
	} else if (w->nops == 0) {
		w->now_status = 200;
		w->now_msg = "";
	}
	if (w->now_status != 0) {
		evtimer_add(w->timer, &zero);
		return;
	}
	if (w->bulk) {
		cluster_bulk_start(w);
		return;
	}
	w->nchunks = 1;
	w->chunks = xcalloc(w->nchunks + 1, sizeof(*w->chunks));
	w->chunks[0].w = w;
	w->chunks[0].first = 0;
	w->chunks[0].n = w->nops;
	cluster_write_pump(w);
}

/*
 * The waves whose gates CAP changes, into W->touch: those its routes
 * leave (as this copy has them) and join, and those its ledger records'
 * tables resolve to here.
 */
static void
cluster_touch_scan(struct cluster *c, struct cluster_write *w,
    const struct store_capture *cap)
{
	const struct store_cap_op *op;
	struct route_result res;
	struct store_route r;
	struct route_obj obj;
	void *was;
	size_t i, waslen;

	for (i = 0; i < cap->n; i++) {
		op = &cap->ops[i];
		switch (op->db) {
		case STORE_DB_OBJECTS:
			was = NULL;
			if (store_record_get(c->st, op->db, op->key, op->keylen,
				&was, &waslen) == STORE_OK &&
			    store_route_record(was, waslen, &r) == 0)
				cluster_touch(w, r.wave, true);
			free(was);
			if (!op->del &&
			    store_route_record(op->val, op->vallen, &r) == 0)
				cluster_touch(w, r.wave, true);
			break;
		case STORE_DB_LEDGER:
			if (op->keylen > LEDGER_TS_LEN &&
			    route_obj_from_key(op->key,
				op->keylen - LEDGER_TS_LEN, &obj) == 0 &&
			    route_resolve(c->st, &obj, 0, &res) == 0 &&
			    res.assigned)
				cluster_touch(w, res.wave, false);
			break;
		default:
			break;
		}
	}
}

/* Note wave N in W's touched waves (GUARD: its record is compared). */
static void
cluster_touch(struct cluster_write *w, uint32_t n, bool guard)
{
	size_t i;

	for (i = 0; i < w->ntouch; i++)
		if (w->touch[i].wave == n) {
			w->touch[i].guard |= guard;
			return;
		}
	w->touch = xreallocarray(w->touch, w->ntouch + 1, sizeof(*w->touch));
	w->touch[w->ntouch].wave = n;
	w->touch[w->ntouch].guard = guard;
	w->ntouch++;
}

/*
 * The touched waves in W's one txn: PREFIX/basis/N put for each, and the
 * record of each a route leaves or joins compared as not changed since
 * this copy's revision (the route guard read it).
 */
static void
cluster_touch_txn(struct cluster *c, struct cluster_write *w)
{
	size_t i;

	for (i = 0; i < w->ntouch; i++) {
		cluster_basis_op(c, w->touch[i].wave, &w->ops[w->nops++]);
		if (!w->touch[i].guard)
			continue;
		cluster_wave_cmp(c, w, "waves/", w->touch[i].wave, w->read);
		if (w->wkey == NULL) {
			w->wave = w->touch[i].wave;
			w->wkey = w->ckeys[w->nckeys - 1];
			w->decided = w->read;
		}
	}
}

/* Put PREFIX/basis/N into E ({"node","ts"}: its mod_revision counts). */
static void
cluster_basis_op(struct cluster *c, uint32_t n, struct etcd_op *e)
{
	char num[16], *key, *v;
	size_t klen;
	json_t *j;

	snprintf(num, sizeof(num), "%u", n);
	cluster_key(c, "basis/", num, strlen(num), &key, &klen);
	j = json_pack("{s:s,s:I}", "node", c->name, "ts",
	    (json_int_t)units_now_ms());
	if (j == NULL || (v = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: out of memory", __func__);
	json_decref(j);
	memset(e, 0, sizeof(*e));
	e->type = ETCD_OP_PUT;
	e->key = key;
	e->key_len = klen;
	e->value = v;
	e->value_len = strlen(v);
}

/*
 * Add to W a compare of PREFIX/PART/N: not changed after revision REV
 * (its mod_revision below REV + 1; a key never written is 0).
 */
static void
cluster_wave_cmp(struct cluster *c, struct cluster_write *w, const char *part,
    uint32_t n, int64_t rev)
{
	struct etcd_cmp *cmp = &w->cmps[w->ncmps++];
	char num[16], *key;
	size_t klen;

	snprintf(num, sizeof(num), "%u", n);
	cluster_key(c, part, num, strlen(num), &key, &klen);
	w->ckeys = xreallocarray(w->ckeys, w->nckeys + 1, sizeof(*w->ckeys));
	w->ckeys[w->nckeys++] = key;
	memset(cmp, 0, sizeof(*cmp));
	cmp->key = key;
	cmp->target = ETCD_CMP_MOD;
	cmp->result = ETCD_CMP_LESS;
	cmp->number = rev + 1;
}

/* The share of reads a wave in W's state sends to the lakehouse, in %. */
static unsigned
cluster_share(const struct store_wave *w)
{
	switch (w->state) {
	case WAVE_CANARY:
		return w->pct;
	case WAVE_LAKEHOUSE:
	case WAVE_FROZEN:
	case WAVE_RETIRED:
		return 100;
	default:
		return 0;
	}
}

/*
 * Whether wave N's new record TO is a move behind a gate: more reads to
 * the lakehouse than this copy's record sends (the cutover gate), or a
 * freeze (the decommission gate).
 */
static bool
cluster_gated(struct cluster *c, uint32_t n, const struct store_wave *to)
{
	struct store_wave from;

	memset(&from, 0, sizeof(from));
	if (store_wave_get(c->st, n, &from) == STORE_ERROR)
		return true;
	return cluster_share(to) > cluster_share(&from) ||
	    (to->state == WAVE_FROZEN && from.state != WAVE_FROZEN);
}

/*
 * Send what W may send now: up to CLUSTER_PIPELINE txns at once, but the
 * last one (which holds the change's event) only once every other one was
 * taken, so that the event never shows a half-made change.
 */
static void
cluster_write_pump(struct cluster_write *w)
{
	while (w->inflight < CLUSTER_PIPELINE && w->sent + 1 < w->nchunks)
		cluster_write_send(&w->chunks[w->sent]);
	if (w->sent + 1 == w->nchunks && w->taken == w->sent)
		cluster_write_send(&w->chunks[w->sent]);
}

/* Send chunk K of its write. */
static void
cluster_write_send(struct cluster_chunk *k)
{
	struct cluster_write *w = k->w;
	struct etcd_txn t = { 0 };

	t.cmps = k->first == 0 ? w->cmps : NULL;
	t.ncmps = k->first == 0 ? w->ncmps : 0;
	t.success = w->ops + k->first;
	t.nsuccess = k->n;
	w->sent++;
	w->inflight++;
	k->call = etcd_txn(w->c->etcd, &t, cluster_write_cb, k);
}

/* A txn of W answered. */
static void
cluster_write_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_chunk *k = arg;
	struct cluster_write *w = k->w;
	struct etcd_op op = { .type = ETCD_OP_RANGE };
	char msg[512];

	k->call = NULL;
	w->inflight--;
	/*
	 * A rollback holds here at once and is written to etcd when it
	 * answers again (a timed-out txn may have been taken: the pending
	 * write then finds it done).
	 */
	if ((res->err == ETCD_EUNAVAILABLE || res->err == ETCD_ETIMEDOUT) &&
	    w->rollback && w->nops == 2 &&
	    cluster_pending_add(w->c, w->wave, w->ops[0].value,
		w->ops[0].value_len, w->ops[1].value,
		w->ops[1].value_len) == 0) {
		snprintf(msg, sizeof(msg),
		    "rolled back on this node; etcd is unreachable (%s): the "
		    "rollback is pending and is written to etcd when it "
		    "answers again",
		    res->error);
		cluster_write_end(w, 202, msg);
		return;
	}
	if (res->err == ETCD_EUNAVAILABLE) {
		snprintf(msg, sizeof(msg),
		    "etcd is unreachable (%s): nothing changed; changes need "
		    "etcd in cluster mode",
		    res->error);
		cluster_write_end(w, 409, msg);
		return;
	}
	if (res->err != ETCD_OK) {
		snprintf(msg, sizeof(msg),
		    "etcd failed (%s)%s; see floectl wave list or route list",
		    res->error,
		    res->err == ETCD_ETIMEDOUT ?
			": the change may or may not have been made" :
			": nothing changed");
		if (w->nchunks > 1)
			snprintf(msg, sizeof(msg),
			    "etcd failed after %zu of %zu txns of this import "
			    "(%s): the routes of those are set, its event is "
			    "not written",
			    w->taken, w->nchunks, res->error);
		cluster_write_end(w, 409, msg);
		return;
	}
	if (!res->succeeded) {
		/* Name the change that got there first. */
		if (w->wkey == NULL) {
			snprintf(msg, sizeof(msg),
			    "a route this change read changed concurrently "
			    "(after etcd revision %" PRId64 ", which it was "
			    "decided on); nothing changed",
			    w->read);
			cluster_write_end(w, 409, msg);
			return;
		}
		op.key = w->wkey;
		w->range = etcd_range(w->c->etcd, &op, cluster_conflict_cb, w);
		return;
	}
	if (res->header.revision > w->revision)
		w->revision = res->header.revision;
	if (++w->taken < w->nchunks) {
		cluster_write_pump(w);
		return;
	}
	/* Read your writes: answer once the mirror applied the revision. */
	if (w->c->applied >= w->revision) {
		cluster_write_end(w, 200, "");
		return;
	}
	{
		struct timeval tv = { CLUSTER_APPLY_WAIT_MS / 1000, 0 };

		evtimer_add(w->timer, &tv);
	}
}

/* The wave a refused txn compared, as etcd holds it now. */
static void
cluster_conflict_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_write *w = arg;
	struct store_wave wv;
	char msg[768];

	w->range = NULL;
	if (res->err == ETCD_OK && w->gated &&
	    (res->nkvs == 0 || res->kvs[0].mod_revision <= w->decided)) {
		/* The wave held still: its basis moved (cluster_gated). */
		snprintf(msg, sizeof(msg),
		    "wave %u's routes or ledger records changed concurrently: "
		    "another node wrote some after etcd revision %" PRId64
		    ", which this node's copy had when its gate was decided; "
		    "nothing changed, and the gate is decided again when you "
		    "repeat",
		    w->wave, w->read);
		cluster_write_end(w, 409, msg);
		return;
	}
	if (res->err != ETCD_OK || res->nkvs == 0 ||
	    res->kvs[0].mod_revision <= w->decided ||
	    store_wave_record(res->kvs[0].value, res->kvs[0].value_len, &wv) ==
		-1) {
		snprintf(msg, sizeof(msg),
		    "wave %u, or a route this change read, changed "
		    "concurrently (after etcd revision %" PRId64
		    ", which it was decided on); nothing changed",
		    w->wave, w->decided);
		cluster_write_end(w, 409, msg);
		return;
	}
	snprintf(msg, sizeof(msg),
	    "wave %u changed concurrently: it is now %s (by %s%s%s, etcd "
	    "revision %" PRId64 "), not the state at revision %" PRId64
	    " this was decided on; nothing changed",
	    w->wave, wave_state_name(wv.state),
	    wv.actor[0] != '\0' ? wv.actor : "?",
	    wv.reason[0] != '\0' ? ": " : "", wv.reason,
	    res->kvs[0].mod_revision, w->decided);
	cluster_write_end(w, 409, msg);
}

/* The mirror applied more: answer the writes it caught up with. */
void
cluster_writes_applied(struct cluster *c)
{
	struct cluster_write *w, *tmp;

	TAILQ_FOREACH_SAFE(w, &c->writes, entry, tmp)
		if (w->taken == w->nchunks && w->nchunks > 0 &&
		    (!w->bulk || w->committed) && c->applied >= w->revision)
			cluster_write_end(w, 200, "");
}

/*
 * An answer decided in cluster_commit, on the loop turn after it; or the
 * mirror did not catch up in time: answer anyway, and say so.
 */
static void
cluster_write_timeout_cb(evutil_socket_t fd __unused, short ev __unused,
    void *arg)
{
	struct cluster_write *w = arg;

	if (w->now_status != 0) {
		cluster_write_end(w, w->now_status, w->now_msg);
		return;
	}
	log_warnx("cluster: etcd took revision %" PRId64 " but this node "
		  "has applied only %" PRId64 " after %d s",
	    w->revision, w->c->applied, CLUSTER_APPLY_WAIT_MS / 1000);
	cluster_write_end(w, 200, "");
}

/* Answer W with STATUS and free it. */
static void
cluster_write_end(struct cluster_write *w, int status, const char *msg)
{
	cluster_done_cb done = w->done;
	void *arg = w->arg;
	char copy[1024];

	/* MSG may be W's own (now_buf). */
	strlcpy(copy, msg, sizeof(copy));
	TAILQ_REMOVE(&w->c->writes, w, entry);
	cluster_write_free(w);
	done(status, copy, arg);
}

/* Free W (not answered). */
static void
cluster_write_free(struct cluster_write *w)
{
	size_t i;

	for (i = 0; i < w->nchunks; i++)
		etcd_cancel(w->chunks[i].call);
	free(w->chunks);
	etcd_cancel(w->range);
	etcd_cancel(w->call);
	etcd_cancel(w->kcall);
	if (w->ka != NULL)
		event_free(w->ka);
	/*
	 * Its lease ends with it: an import that failed loses its record
	 * (every mirror drops what it staged); a committed record has none.
	 */
	if (w->lease != 0)
		(void)etcd_lease_revoke(w->c->etcd, w->lease,
		    cluster_bulk_dropped_cb, NULL);
	free(w->ikey);
	free(w->kcmps);
	free(w->touch);
	for (i = 0; i < w->nckeys; i++)
		free(w->ckeys[i]);
	free(w->ckeys);
	if (w->timer != NULL)
		event_free(w->timer);
	for (i = 0; i < w->nops; i++) {
		free((char *)(uintptr_t)w->ops[i].key);
		free((char *)(uintptr_t)w->ops[i].value);
	}
	free(w->ops);
	free(w->cmps);
	free(w);
}

/* Stopping: the writes in flight are answered 503. */
void
cluster_writes_free(struct cluster *c)
{
	struct cluster_write *w;

	while ((w = TAILQ_FIRST(&c->writes)) != NULL)
		cluster_write_end(w, 503, "floe is stopping");
}

/*
 * A bulk import's record OP (a route or ledger put): its value becomes
 * the wrapped record of import W->id, carrying the record it replaces on
 * this node's copy (shown until the import is committed).
 */
static void
cluster_bulk_wrap(struct cluster *c, struct cluster_write *w,
    struct store_cap_op *op)
{
	void *was = NULL;
	size_t waslen = 0, len;
	char *v;

	if (op->db == STORE_DB_OBJECTS &&
	    store_record_get(c->st, op->db, op->key, op->keylen, &was,
		&waslen) != STORE_OK) {
		was = NULL;
		waslen = 0;
	}
	v = cluster_wrap(w->id, op->val, op->vallen, was, waslen, &len);
	free(was);
	free(op->val);
	op->val = (unsigned char *)v;
	op->vallen = len;
}

/* The value of PREFIX/imports/ID in STATE. Caller frees. */
static char *
cluster_bulk_record(struct cluster_write *w, const char *state)
{
	json_t *j;
	char *s;

	j = json_pack("{s:s,s:s,s:I,s:I,s:I}", "state", state, "node",
	    w->c->name, "begun", (json_int_t)w->begun, "records",
	    (json_int_t)w->ndata, "ts", (json_int_t)units_now_ms());
	if (j == NULL || (s = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: out of memory", __func__);
	json_decref(j);
	return s;
}

/* Whether OP puts an event (PREFIX/events/...). */
static bool
cluster_op_is_event(const struct cluster *c, const struct etcd_op *op)
{
	return op->key_len > c->plen + 7 &&
	    memcmp(op->key + c->plen, "events/", 7) == 0;
}

/*
 * Begin bulk import W: its records first (events last: they go with the
 * commit), a compare for each, then PREFIX/imports/ID "open" under this
 * node's lease (gone with the node if it dies mid-import).
 */
static void
cluster_bulk_start(struct cluster_write *w)
{
	struct cluster *c = w->c;
	struct etcd_op *sorted;
	size_t i, n = 0, klen;

	sorted = xcalloc(w->nops + 1, sizeof(*sorted));
	for (i = 0; i < w->nops; i++) {
		if (cluster_op_is_event(c, &w->ops[i]))
			continue;
		/* The same key twice (a repeated route): the last one holds. */
		if (n > 0 && sorted[n - 1].key_len == w->ops[i].key_len &&
		    memcmp(sorted[n - 1].key, w->ops[i].key,
			w->ops[i].key_len) == 0) {
			free((char *)(uintptr_t)sorted[n - 1].key);
			free((char *)(uintptr_t)sorted[n - 1].value);
			n--;
		}
		sorted[n++] = w->ops[i];
	}
	w->ndata = n;
	for (i = 0; i < w->nops; i++)
		if (cluster_op_is_event(c, &w->ops[i]))
			sorted[n++] = w->ops[i];
	free(w->ops);
	w->ops = sorted;
	w->nops = n;
	w->kcmps = xcalloc(w->ndata + 1, sizeof(*w->kcmps));
	for (i = 0; i < w->ndata; i++) {
		w->kcmps[i].key = w->ops[i].key;
		w->kcmps[i].target = ETCD_CMP_MOD;
		w->kcmps[i].result = ETCD_CMP_LESS;
		w->kcmps[i].number = w->begun + 1;
	}
	w->nchunks = (w->ndata + CLUSTER_TXN_OPS - 1) / CLUSTER_TXN_OPS;
	w->chunks = xcalloc(w->nchunks + 1, sizeof(*w->chunks));
	for (i = 0; i < w->nchunks; i++) {
		w->chunks[i].w = w;
		w->chunks[i].first = i * CLUSTER_TXN_OPS;
		w->chunks[i].n = w->ndata - w->chunks[i].first;
		if (w->chunks[i].n > CLUSTER_TXN_OPS)
			w->chunks[i].n = CLUSTER_TXN_OPS;
	}
	cluster_key(c, "imports/", w->id, strlen(w->id), &w->ikey, &klen);
	log_info("cluster: import %s: %zu records in %zu txns, decided at "
		 "revision %" PRId64,
	    w->id, w->ndata, w->nchunks, w->begun);
	if ((w->ka = evtimer_new(c->base, cluster_bulk_ka_cb, w)) == NULL)
		fatalx("%s: evtimer_new failed", __func__);
	w->call = etcd_lease_grant(c->etcd, cluster_bulk_ttl(c), 0,
	    cluster_bulk_lease_cb, w);
}

/*
 * The TTL of an import record's lease: 3 x the node's (30 s by default),
 * so that an import outlives a slow keepalive or two.
 */
static int64_t
cluster_bulk_ttl(const struct cluster *c)
{
	int64_t s = (int64_t)(3 * c->lease_ms / 1000);

	return s < 6 ? 6 : s;
}

/* The import's lease: put its record "open" under it. */
static void
cluster_bulk_lease_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_write *w = arg;
	struct etcd_op op;
	struct etcd_txn t = { 0 };
	struct timeval tv = { 0, 0 };
	char *v;

	w->call = NULL;
	if (res->err != ETCD_OK || res->lease == 0) {
		cluster_bulk_fail(w, "no lease for its import record", res);
		return;
	}
	w->lease = res->lease;
	tv.tv_sec = (time_t)(cluster_bulk_ttl(w->c) / 3);
	evtimer_add(w->ka, &tv);
	v = cluster_bulk_record(w, "open");
	memset(&op, 0, sizeof(op));
	op.type = ETCD_OP_PUT;
	op.key = w->ikey;
	op.value = v;
	op.value_len = strlen(v);
	op.lease = w->lease;
	t.success = &op;
	t.nsuccess = 1;
	w->call = etcd_txn(w->c->etcd, &t, cluster_bulk_open_cb, w);
	free(v);
}

/* Renew the import's lease while it runs. */
static void
cluster_bulk_ka_cb(evutil_socket_t fd __unused, short ev __unused, void *arg)
{
	struct cluster_write *w = arg;
	struct timeval tv = { (time_t)(cluster_bulk_ttl(w->c) / 3), 0 };

	if (w->kcall == NULL)
		w->kcall = etcd_lease_keepalive(w->c->etcd, w->lease,
		    cluster_bulk_kad_cb, w);
	evtimer_add(w->ka, &tv);
}

/* A keepalive answered; a lost lease shows at the commit's compare. */
static void
cluster_bulk_kad_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_write *w = arg;

	w->kcall = NULL;
	if (res->err != ETCD_OK)
		log_warnx("cluster: import %s: renewing its lease: %s", w->id,
		    res->error);
}

/* The import record is open: send the records. */
static void
cluster_bulk_open_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_write *w = arg;

	w->call = NULL;
	if (res->err != ETCD_OK) {
		cluster_bulk_fail(w, "its import record could not be written",
		    res);
		return;
	}
	cluster_bulk_pump(w);
}

/* Up to CLUSTER_PIPELINE txns of records in flight; then the commit. */
static void
cluster_bulk_pump(struct cluster_write *w)
{
	while (w->inflight < CLUSTER_PIPELINE && w->sent < w->nchunks)
		cluster_bulk_send(&w->chunks[w->sent++]);
	if (w->taken == w->nchunks && w->call == NULL)
		cluster_bulk_commit(w);
}

/* Send the txn of records K, its keys compared. */
static void
cluster_bulk_send(struct cluster_chunk *k)
{
	struct cluster_write *w = k->w;
	struct etcd_txn t = { 0 };

	t.cmps = w->kcmps + k->first;
	t.ncmps = k->n;
	t.success = w->ops + k->first;
	t.nsuccess = k->n;
	w->inflight++;
	k->call = etcd_txn(w->c->etcd, &t, cluster_bulk_chunk_cb, k);
}

/* Read the first key of K's txn, to learn whether etcd took it. */
static void
cluster_bulk_check(struct cluster_chunk *k)
{
	struct cluster_write *w = k->w;
	struct etcd_op op = { .type = ETCD_OP_RANGE };

	k->tries++;
	op.key = w->ops[k->first].key;
	op.key_len = w->ops[k->first].key_len;
	w->inflight++;
	k->call = etcd_range(w->c->etcd, &op, cluster_bulk_check_cb, k);
}

/*
 * A txn of records K timed out: etcd may have taken it or not (a loaded
 * etcd answers late). Read its first key: if it holds this import's
 * record, the txn was taken; if not, send it again (its compares keep a
 * late first copy from landing after it).
 */
static void
cluster_bulk_check_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_chunk *k = arg;
	struct cluster_write *w = k->w;
	struct cluster_wrap cw;

	k->call = NULL;
	w->inflight--;
	if (res->err == ETCD_ETIMEDOUT && k->tries < CLUSTER_BULK_TRIES) {
		cluster_bulk_check(k);
		return;
	}
	if (res->err != ETCD_OK) {
		cluster_bulk_fail(w,
		    "a txn of its records timed out and could not be checked",
		    res);
		return;
	}
	if (res->nkvs == 1 &&
	    cluster_unwrap(res->kvs[0].value, res->kvs[0].value_len, &cw) ==
		0 &&
	    cw.idlen == strlen(w->id) && memcmp(cw.id, w->id, cw.idlen) == 0) {
		w->taken++;
		cluster_bulk_pump(w);
		return;
	}
	log_info("cluster: import %s: a txn that timed out was not taken; "
		 "sending it again",
	    w->id);
	cluster_bulk_send(k);
}

/* A txn of records answered. */
static void
cluster_bulk_chunk_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_chunk *k = arg;
	struct cluster_write *w = k->w;

	k->call = NULL;
	w->inflight--;
	if (res->err == ETCD_ETIMEDOUT && k->tries < CLUSTER_BULK_TRIES) {
		cluster_bulk_check(k);
		return;
	}
	if (res->err != ETCD_OK) {
		cluster_bulk_fail(w, "a txn of its records failed", res);
		return;
	}
	if (!res->succeeded) {
		cluster_bulk_fail(w,
		    "one of its records changed in etcd after the revision "
		    "the import was decided on (a concurrent change, or this "
		    "node's copy was behind etcd: try again)",
		    NULL);
		return;
	}
	w->taken++;
	cluster_bulk_pump(w);
}

/*
 * Every record is in etcd, invisible: one txn makes them visible, if the
 * import record is still there (the lease held) and no wave the routes
 * leave or join moved since the import was decided. Its event goes with
 * it, and PREFIX/basis/N of each wave whose gates it changes.
 */
static void
cluster_bulk_commit(struct cluster_write *w)
{
	struct cluster *c = w->c;
	struct etcd_cmp *cmps;
	struct etcd_op *ops;
	struct etcd_txn t = { 0 };
	char num[16], *v, **wkeys;
	size_t i, n = 0, nev = w->nops - w->ndata, nops = 1, klen;

	/* cluster_commit refused an import of more waves than this holds. */
	cmps = xcalloc(w->ntouch + 1, sizeof(*cmps));
	wkeys = xcalloc(w->ntouch + 1, sizeof(*wkeys));
	cmps[0].key = w->ikey;
	cmps[0].target = ETCD_CMP_VERSION;
	cmps[0].result = ETCD_CMP_GREATER;
	cmps[0].number = 0;
	for (i = 0; i < w->ntouch; i++) {
		if (!w->touch[i].guard)
			continue;
		snprintf(num, sizeof(num), "%u", w->touch[i].wave);
		cluster_key(c, "waves/", num, strlen(num), &wkeys[n], &klen);
		cmps[n + 1].key = wkeys[n];
		cmps[n + 1].target = ETCD_CMP_MOD;
		cmps[n + 1].result = ETCD_CMP_LESS;
		cmps[n + 1].number = w->begun + 1;
		n++;
	}
	ops = xcalloc(1 + nev + w->ntouch, sizeof(*ops));
	v = cluster_bulk_record(w, "committed");
	ops[0].type = ETCD_OP_PUT;
	ops[0].key = w->ikey;
	ops[0].value = v;
	ops[0].value_len = strlen(v);
	/* No lease: a committed import stays. */
	for (i = 0; i < nev; i++)
		ops[nops++] = w->ops[w->ndata + i];
	/* The waves whose gates it changes: a gate decided before loses. */
	for (i = 0; i < w->ntouch; i++)
		cluster_basis_op(c, w->touch[i].wave, &ops[nops++]);
	t.cmps = cmps;
	t.ncmps = n + 1;
	t.success = ops;
	t.nsuccess = nops;
	w->call = etcd_txn(c->etcd, &t, cluster_bulk_commit_cb, w);
	free(v);
	for (i = 1 + nev; i < nops; i++) {
		free((char *)(uintptr_t)ops[i].key);
		free((char *)(uintptr_t)ops[i].value);
	}
	free(ops);
	for (i = 0; i < n; i++)
		free(wkeys[i]);
	free(wkeys);
	free(cmps);
}

/* The commit answered: wait for this node's mirror to apply it. */
static void
cluster_bulk_commit_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_write *w = arg;

	w->call = NULL;
	if (res->err == ETCD_ETIMEDOUT && w->ctries < CLUSTER_BULK_TRIES) {
		/* Taken or not? Its import record says. */
		struct etcd_op op = { .type = ETCD_OP_RANGE };

		w->ctries++;
		op.key = w->ikey;
		w->call =
		    etcd_range(w->c->etcd, &op, cluster_bulk_recommit_cb, w);
		return;
	}
	if (res->err != ETCD_OK) {
		cluster_bulk_fail(w, "its commit failed", res);
		return;
	}
	if (!res->succeeded) {
		cluster_bulk_fail(w,
		    "a wave its routes leave or join changed while it ran, or "
		    "its import record expired with this node's lease",
		    NULL);
		return;
	}
	cluster_bulk_committed(w, res->header.revision);
}

/* The import record after a commit that timed out: committed, or again. */
static void
cluster_bulk_recommit_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_write *w = arg;
	json_t *j;
	const char *state;
	bool done;

	w->call = NULL;
	if (res->err == ETCD_ETIMEDOUT && w->ctries < CLUSTER_BULK_TRIES) {
		struct etcd_op op = { .type = ETCD_OP_RANGE };

		w->ctries++;
		op.key = w->ikey;
		w->call =
		    etcd_range(w->c->etcd, &op, cluster_bulk_recommit_cb, w);
		return;
	}
	if (res->err != ETCD_OK) {
		cluster_bulk_fail(w,
		    "its commit timed out and could not be "
		    "checked",
		    res);
		return;
	}
	if (res->nkvs == 0) {
		cluster_bulk_fail(w, "its import record expired", NULL);
		return;
	}
	j = json_loadb(res->kvs[0].value, res->kvs[0].value_len, 0, NULL);
	state = json_string_value(json_object_get(j, "state"));
	done = state != NULL && strcmp(state, "committed") == 0;
	json_decref(j);
	if (done)
		cluster_bulk_committed(w, res->kvs[0].mod_revision);
	else
		cluster_bulk_commit(w);
}

/* Import W is committed at REV: answer once this node applied it. */
static void
cluster_bulk_committed(struct cluster_write *w, int64_t rev)
{
	struct timeval tv = { CLUSTER_APPLY_WAIT_MS / 1000, 0 };

	w->committed = true;
	w->revision = rev;
	log_info("cluster: import %s committed at revision %" PRId64, w->id,
	    w->revision);
	if (w->c->applied >= w->revision) {
		cluster_write_end(w, 200, "");
		return;
	}
	evtimer_add(w->timer, &tv);
}

/*
 * Bulk import W failed (WHY; RES the etcd answer, if any): nothing of it
 * is visible anywhere. Its lease is revoked (cluster_write_free), which
 * deletes its import record, so that every mirror drops what it staged;
 * if that fails too, the lease expires.
 */
static void
cluster_bulk_fail(struct cluster_write *w, const char *why,
    const struct etcd_result *res)
{
	char msg[768];
	bool maybe = res != NULL && res->err == ETCD_ETIMEDOUT &&
	    w->call == NULL && w->taken == w->nchunks;

	snprintf(msg, sizeof(msg),
	    "import %s refused after %zu of %zu txns: %s%s%s; %s", w->id,
	    w->taken, w->nchunks, why, res != NULL ? ": " : "",
	    res != NULL ? res->error : "",
	    maybe ? "the commit may or may not have been taken: see floectl "
		    "route list" :
		    "nothing of it is visible on any node");
	log_info("cluster: %s", msg);
	cluster_write_end(w, 409, msg);
}

/* The import record's delete answered (nothing waits for it). */
static void
cluster_bulk_dropped_cb(const struct etcd_result *res __unused,
    void *arg __unused)
{
}
