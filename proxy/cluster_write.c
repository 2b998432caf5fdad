/*
 * floe: cluster_write.c -- writes in cluster mode. A change decided on
 * this node's copy (captured by the store, not made) becomes one etcd txn
 * that compares each wave's mod_revision with the one the decision read
 * and puts the new record and its event together; a bulk import goes in
 * txns of at most 128 operations, its event in the last. The answer waits
 * until this node's mirror applied the txn's revision (read your writes).
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
	bool rollback; /* its new state is rolled_back */
	int64_t decided; /* the mod_revision it was decided on */
	int64_t revision; /* etcd's highest revision of the txns */
	struct etcd_call *range; /* reading the concurrent change */
	struct event *timer; /* gives up waiting for the mirror */
	cluster_done_cb done;
	void *arg;
};

/* One txn of a write. */
struct cluster_chunk {
	struct cluster_write *w;
	struct etcd_call *call;
	size_t first; /* its first op */
	size_t n;
};

static void cluster_write_pump(struct cluster_write *);
static void cluster_write_send(struct cluster_chunk *);
static void cluster_write_cb(const struct etcd_result *, void *);
static void cluster_conflict_cb(const struct etcd_result *, void *);
static void cluster_write_end(struct cluster_write *, int, const char *);
static void cluster_write_timeout_cb(evutil_socket_t, short, void *);
static void cluster_write_free(struct cluster_write *);
static int cluster_op_from(struct cluster *, struct cluster_write *,
    struct store_cap_op *);

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
	char num[16], part[160], *key;
	size_t klen;
	uint32_t n;

	memset(e, 0, sizeof(*e));
	switch (op->db) {
	case STORE_DB_OBJECTS:
		cluster_key(c, "objects/", op->key, op->keylen, &key, &klen);
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
		w->decided = (int64_t)op->decided_seq;
		w->rollback =
		    store_wave_record(op->val, op->vallen, &wv) == 0 &&
		    wv.state == WAVE_ROLLED_BACK;
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
	default:
		return -1;
	}
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
	struct cluster_write *w;
	size_t i;

	w = xcalloc(1, sizeof(*w));
	w->c = c;
	w->done = done;
	w->arg = arg;
	w->ops = xcalloc(cap->n + 1, sizeof(*w->ops));
	w->cmps = xcalloc(cap->n + 1, sizeof(*w->cmps));
	for (i = 0; i < cap->n; i++)
		(void)cluster_op_from(c, w, &cap->ops[i]);
	store_capture_clear(cap);
	if ((w->timer = evtimer_new(c->base, cluster_write_timeout_cb, w)) ==
	    NULL)
		fatalx("%s: evtimer_new failed", __func__);
	TAILQ_INSERT_TAIL(&c->writes, w, entry);
	if (w->ncmps > 0 && w->nops > CLUSTER_TXN_OPS) {
		/* Not expected: a transition writes a wave and its event. */
		cluster_write_end(w, 503, "a transition too large for one txn");
		return;
	}
	if (w->nops == 0) {
		cluster_write_end(w, 200, "");
		return;
	}
	w->nchunks = (w->nops + CLUSTER_TXN_OPS - 1) / CLUSTER_TXN_OPS;
	w->chunks = xcalloc(w->nchunks + 1, sizeof(*w->chunks));
	for (i = 0; i < w->nchunks; i++) {
		w->chunks[i].w = w;
		w->chunks[i].first = i * CLUSTER_TXN_OPS;
		w->chunks[i].n = w->nops - w->chunks[i].first;
		if (w->chunks[i].n > CLUSTER_TXN_OPS)
			w->chunks[i].n = CLUSTER_TXN_OPS;
	}
	cluster_write_pump(w);
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
	    cluster_pending_add(w->c, w->wave, w->ops[0].key, w->ops[0].value,
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
		op.key = w->cmps[0].key;
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
	if (res->err != ETCD_OK || res->nkvs == 0 ||
	    store_wave_record(res->kvs[0].value, res->kvs[0].value_len, &wv) ==
		-1) {
		snprintf(msg, sizeof(msg),
		    "wave %u changed concurrently (it was at revision %" PRId64
		    " when this was decided); nothing changed",
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
		    c->applied >= w->revision)
			cluster_write_end(w, 200, "");
}

/* The mirror did not catch up in time: answer anyway, and say so. */
static void
cluster_write_timeout_cb(evutil_socket_t fd __unused, short ev __unused,
    void *arg)
{
	struct cluster_write *w = arg;

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

	TAILQ_REMOVE(&w->c->writes, w, entry);
	cluster_write_free(w);
	done(status, msg, arg);
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
