/*
 * floe: cluster_bulk.c -- a bulk import in cluster mode: more records than
 * one etcd txn holds, written invisible under an import record with its
 * own lease, then made visible on every node by one commit txn (with the
 * import's event and the basis/ key of each wave it touches). The design
 * is in docs/cluster.md, "Imports: all or nothing across txns"; the
 * mirror's side is cluster_import.c.
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
#include "routing/store.h"

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
static bool cluster_bulk_recheck(struct cluster_write *,
    const struct etcd_result *);
static void cluster_bulk_committed(struct cluster_write *, int64_t);
static void cluster_bulk_commit(struct cluster_write *);
static void cluster_bulk_commit_cb(const struct etcd_result *, void *);
static void cluster_bulk_fail(struct cluster_write *, const char *,
    const struct etcd_result *);
static char *cluster_bulk_record(struct cluster_write *, const char *);
static int64_t cluster_bulk_ttl(const struct cluster *);

/*
 * A bulk import's record OP (a route or ledger put): its value becomes
 * the wrapped record of import W->id, carrying the record it replaces on
 * this node's copy (shown until the import is committed).
 */
void
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
void
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
	for (i = 0; i < w->ndata; i++)
		cluster_cmp_unchanged(&w->kcmps[i], w->ops[i].key, w->begun);
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
		w->lost = true;
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
 * import record is still there (the lease held), no wave the routes leave
 * or join moved since the import was decided and, for ledger records, no
 * route changed since (their tables' waves were read then). Its event
 * goes with it, PREFIX/basis/N of each wave whose gates it changes and,
 * for routes, PREFIX/basis/routes.
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
	cmps = xcalloc(w->ntouch + 2, sizeof(*cmps));
	wkeys = xcalloc(w->ntouch + 2, sizeof(*wkeys));
	cmps[0].key = w->ikey;
	cmps[0].target = ETCD_CMP_VERSION;
	cmps[0].result = ETCD_CMP_GREATER;
	cmps[0].number = 0;
	for (i = 0; i < w->ntouch; i++) {
		if (!w->touch[i].guard)
			continue;
		snprintf(num, sizeof(num), "%u", w->touch[i].wave);
		cluster_key(c, "waves/", num, strlen(num), &wkeys[n], &klen);
		cluster_cmp_unchanged(&cmps[n + 1], wkeys[n], w->begun);
		n++;
	}
	if (w->ledger) {
		cluster_key(c, "basis/", "routes", 6, &wkeys[n], &klen);
		cluster_cmp_unchanged(&cmps[n + 1], wkeys[n], w->begun);
		n++;
	}
	ops = xcalloc(2 + nev + w->ntouch, sizeof(*ops));
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
	if (w->routes)
		cluster_basis_named_op(c, "routes", &ops[nops++]);
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

/*
 * A commit, or its check, that timed out (RES): read the import record
 * again, CLUSTER_BULK_TRIES times in all; taken or not, it says. True
 * when the read was sent.
 */
static bool
cluster_bulk_recheck(struct cluster_write *w, const struct etcd_result *res)
{
	struct etcd_op op = { .type = ETCD_OP_RANGE };

	if (res->err != ETCD_ETIMEDOUT || w->ctries >= CLUSTER_BULK_TRIES)
		return false;
	w->ctries++;
	op.key = w->ikey;
	w->call = etcd_range(w->c->etcd, &op, cluster_bulk_recommit_cb, w);
	return true;
}

/* The commit answered: wait for this node's mirror to apply it. */
static void
cluster_bulk_commit_cb(const struct etcd_result *res, void *arg)
{
	struct cluster_write *w = arg;

	w->call = NULL;
	if (cluster_bulk_recheck(w, res))
		return;
	if (res->err != ETCD_OK) {
		cluster_bulk_fail(w, "its commit failed", res);
		return;
	}
	if (!res->succeeded) {
		w->lost = true;
		cluster_bulk_fail(w,
		    w->ledger ?
			"a route changed while it ran (its records' tables "
			"are resolved to their waves again when you repeat), "
			"or its import record expired with this node's lease" :
			"a wave its routes leave or join changed while it ran, "
			"or its import record expired with this node's lease",
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
	if (cluster_bulk_recheck(w, res))
		return;
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
void
cluster_bulk_dropped_cb(const struct etcd_result *res __unused,
    void *arg __unused)
{
}
