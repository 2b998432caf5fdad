/*
 * floe: cluster_write.c -- writes in cluster mode. A change decided on
 * this node's copy (captured by the store, not made) becomes one etcd txn
 * that compares what the decision read with the revision it read it at,
 * and puts the new records and the change's event together; a bulk import,
 * more than one txn holds, is cluster_bulk.c's. The answer waits until this
 * node's mirror applied the txn's revision (read your writes).
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
 *
 * Which basis/N a ledger record moves is read too: the wave its table
 * resolves to on this copy. So every route change also puts
 * PREFIX/basis/routes, and a ledger record compares it as not changed
 * since this copy's revision: a record whose table moved (or was routed)
 * through another node meanwhile loses, instead of moving the basis of a
 * wave the table has left.
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
#include "proxy/cluster_write_impl.h"
#include "proxy/etcd.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

static void cluster_write_send(struct cluster_write *);
static void cluster_write_cb(const struct etcd_result *, void *);
static void cluster_conflict_cb(const struct etcd_result *, void *);
static void cluster_write_timeout_cb(evutil_socket_t, short, void *);
static void cluster_write_free(struct cluster_write *);
static enum cluster_wrote cluster_wrote_how(const struct cluster_write *, int);
static int cluster_op_from(struct cluster *, struct cluster_write *,
    struct store_cap_op *);
static void cluster_touch_scan(struct cluster *, struct cluster_write *,
    const struct store_capture *);
static void cluster_touch(struct cluster_write *, uint32_t, bool);
static void cluster_touch_txn(struct cluster *, struct cluster_write *);
static void cluster_wave_cmp(struct cluster *, struct cluster_write *,
    const char *, uint32_t, int64_t);
static void cluster_key_cmp(struct cluster *, struct cluster_write *,
    const char *, const char *, int64_t);
static unsigned cluster_share(const struct store_wave *);
static bool cluster_gated(struct cluster *, uint32_t,
    const struct store_wave *);

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
		if (!w->bulk)
			cluster_cmp_unchanged(&w->cmps[w->ncmps++], key,
			    w->read);
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
	w->ops = xcalloc(cap->n + w->ntouch + 2, sizeof(*w->ops));
	w->cmps = xcalloc(2 * cap->n + w->ntouch + 2, sizeof(*w->cmps));
	/*
	 * More than one txn (or more compares than one takes):
	 * all-or-nothing through an import record. A transition never is.
	 */
	w->bulk = !transition &&
	    (cap->n + w->ntouch + w->routes > CLUSTER_TXN_OPS ||
		nobj + nguard + w->ledger > CLUSTER_TXN_OPS);
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
	    (1 + nev + w->routes + w->ntouch > CLUSTER_TXN_OPS ||
		1 + w->ledger + nguard > CLUSTER_TXN_OPS)) {
		/* Its commit puts a key per wave: one txn must hold them. */
		snprintf(w->now_buf, sizeof(w->now_buf),
		    "an import into or out of %zu waves: its commit is one "
		    "etcd txn, which holds %zu at most; nothing changed; "
		    "split it by wave",
		    w->ntouch, (size_t)CLUSTER_TXN_OPS - 1 - nev - w->routes);
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
	cluster_write_send(w);
}

/*
 * The waves whose gates CAP changes, into W->touch: those its routes
 * leave (as this copy has them) and join, and those its ledger records'
 * tables resolve to here. Notes whether it changes routes and whether it
 * adds ledger records (basis/routes: put, or compared).
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
			w->routes = true;
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
			w->ledger = true;
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
 * this copy's revision (the route guard read it). Then basis/routes: put
 * by a route change, compared by ledger records (their waves were read
 * from this copy's routes).
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
	if (w->routes)
		cluster_basis_named_op(c, "routes", &w->ops[w->nops++]);
	if (w->ledger)
		cluster_key_cmp(c, w, "basis/", "routes", w->read);
}

/* Put PREFIX/basis/N into E ({"node","ts"}: its mod_revision counts). */
void
cluster_basis_op(struct cluster *c, uint32_t n, struct etcd_op *e)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", n);
	cluster_basis_named_op(c, num, e);
}

/* ... and PREFIX/basis/NAME. */
void
cluster_basis_named_op(struct cluster *c, const char *name, struct etcd_op *e)
{
	char *key, *v;
	size_t klen;
	json_t *j;

	cluster_key(c, "basis/", name, strlen(name), &key, &klen);
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
	char num[16];

	snprintf(num, sizeof(num), "%u", n);
	cluster_key_cmp(c, w, part, num, rev);
}

/* ... of PREFIX/PART/NAME. */
static void
cluster_key_cmp(struct cluster *c, struct cluster_write *w, const char *part,
    const char *name, int64_t rev)
{
	char *key;
	size_t klen;

	cluster_key(c, part, name, strlen(name), &key, &klen);
	w->ckeys = xreallocarray(w->ckeys, w->nckeys + 1, sizeof(*w->ckeys));
	w->ckeys[w->nckeys++] = key;
	cluster_cmp_unchanged(&w->cmps[w->ncmps++], key, rev);
}

/* CMP: KEY not written after revision REV (a key never written is 0). */
void
cluster_cmp_unchanged(struct etcd_cmp *cmp, const char *key, int64_t rev)
{
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

/* Send W's one txn: its compares, then all of its operations. */
static void
cluster_write_send(struct cluster_write *w)
{
	struct etcd_txn t = { 0 };

	t.cmps = w->cmps;
	t.ncmps = w->ncmps;
	t.success = w->ops;
	t.nsuccess = w->nops;
	w->call = etcd_txn(w->c->etcd, &t, cluster_write_cb, w);
}

/* W's txn answered. */
static void
cluster_write_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_write *w = arg;
	struct etcd_op op = { .type = ETCD_OP_RANGE };
	char msg[512];

	w->call = NULL;
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
		cluster_write_end(w, 409, msg);
		return;
	}
	if (!res->succeeded) {
		w->lost = true;
		/* Name the change that got there first. */
		if (w->wkey == NULL && w->ledger) {
			snprintf(msg, sizeof(msg),
			    "a route changed concurrently: another node changed "
			    "routes after etcd revision %" PRId64
			    ", which this node's copy had when it resolved the "
			    "records' tables to their waves; nothing changed, "
			    "and they are resolved again when you repeat",
			    w->read);
			cluster_write_end(w, 409, msg);
			return;
		}
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
	w->committed = true;
	w->revision = res->header.revision;
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
		if (w->committed && c->applied >= w->revision)
			cluster_write_end(w, 200, "");
}

/* How many changes through this node wait on etcd or its mirror. */
size_t
cluster_writes_waiting(const struct cluster *c)
{
	const struct cluster_write *w;
	size_t n = 0;

	TAILQ_FOREACH(w, &c->writes, entry)
		n++;
	return n;
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
void
cluster_write_end(struct cluster_write *w, int status, const char *msg)
{
	cluster_done_cb done = w->done;
	void *arg = w->arg;
	char copy[1024];

	/* MSG may be W's own (now_buf). */
	strlcpy(copy, msg, sizeof(copy));
	w->c->wrote[cluster_wrote_how(w, status)]++;
	TAILQ_REMOVE(&w->c->writes, w, entry);
	cluster_write_free(w);
	done(status, copy, arg);
}

/* How W ended, answered STATUS (floe_cluster_writes_total). */
static enum cluster_wrote
cluster_wrote_how(const struct cluster_write *w, int status)
{
	if (status == 200)
		return CLUSTER_WROTE_COMMITTED;
	if (status == 202)
		return CLUSTER_WROTE_PENDING;
	return w->lost ? CLUSTER_WROTE_CONFLICT : CLUSTER_WROTE_FAILED;
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
