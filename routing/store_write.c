/*
 * floe: store_write.c -- the flag store's single write path: one function
 * per transition (a route set or removed, a wave updated through its
 * callback, an event, ledger records, a bulk import of routes), each one
 * synced txn that also appends the change's event and bumps the sequence;
 * a full map is grown and the txn retried.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <lmdb.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "routing/store.h"
#include "routing/store_impl.h"

#define STORE_GROW_TRIES 8 /* doublings of the map for one write */

/* The state of every wave with a record (an import's guard asks). */
struct store_states {
	struct store_wave_st {
		uint32_t n;
		uint8_t state;
	} * v;
	size_t n;
};

/* What a write txn does besides appending the event. */
enum store_op {
	STORE_OP_ROUTE_PUT,
	STORE_OP_ROUTE_DEL,
	STORE_OP_WAVE_UPDATE,
	STORE_OP_EVENT,
	STORE_OP_LEDGER,
	STORE_OP_ROUTE_IMPORT,
	STORE_OP_READERS_EXCUSE,
};

struct store_write {
	enum store_op op;
	const void *key;
	size_t keylen;
	uint32_t wave;
	int64_t now_ms;
	json_t *event;
	store_wave_update_cb cb;
	void *arg;
	const struct store_kv *kv; /* STORE_OP_LEDGER */
	size_t nkv;
	struct store_ledger_res *lres;
	const struct store_route_in *rin; /* STORE_OP_ROUTE_IMPORT */
	size_t nrin;
	store_route_import_cb icb;
	struct store_import_res *ires;
	const void *obj; /* STORE_OP_READERS_EXCUSE, with KEY the identity */
	size_t objlen;
	/*
	 * STORE_OP_WAVE_UPDATE: a rollback log line to keep pending in the
	 * same txn, read once CB said yes (CB may set it); NULL: none.
	 */
	char *const *rline;
};

static int store_write_txn(struct store *, struct store_write *, int *);
static int store_write(struct store *, struct store_write *);
static int store_route_old(struct store *, MDB_txn *,
    const struct store_write *, struct store_route *, bool *);
static int store_import_states(struct store *, MDB_txn *,
    struct store_states *);
static int store_import_state(const struct store_states *, uint32_t);
static int store_event_put(struct store *, MDB_txn *, uint64_t, int64_t,
    json_t *);
static int store_ledger_put(struct store *, MDB_txn *, struct store_write *,
    int *);
static int store_route_in_cmp(const void *, const void *);
static int store_u32_cmp(const void *, const void *);
static int store_import_waves(json_t *, uint32_t *, size_t);
static int store_import_put(struct store *, MDB_txn *, struct store_write *,
    uint64_t, int *);

/*
 * Stamp EVENT with SEQ and NOW_MS and put it in TXN. The stamps stay in the
 * caller's object only if the txn commits (store_write removes them).
 */
static int
store_event_put(struct store *s, MDB_txn *txn, uint64_t seq, int64_t now_ms,
    json_t *event)
{
	unsigned char kb[8];
	char ts[32], *text;
	MDB_val k = { sizeof(kb), kb }, v;
	int rc;

	units_time_format(now_ms, ts, sizeof(ts));
	if (json_object_set_new(event, "seq", json_integer((json_int_t)seq)) ==
		-1 ||
	    json_object_set_new(event, "ts", json_string(ts)) == -1)
		return ENOMEM;
	if ((text = json_dumps(event, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		return ENOMEM;
	store_be64_key(seq, kb);
	v.mv_data = text;
	v.mv_size = strlen(text);
	rc = mdb_put(txn, s->events, &k, &v, MDB_APPEND);
	if (rc == 0)
		rc = store_cap_put(s, s->events, &k, &v, false);
	free(text);
	return rc;
}

/*
 * Put W's ledger records in TXN. A key already there is a duplicate when
 * its value is the same, else a conflict: *RES becomes STORE_REFUSED and
 * the caller aborts. Returns 0 or an LMDB code.
 */
static int
store_ledger_put(struct store *s, MDB_txn *txn, struct store_write *w, int *res)
{
	const struct store_kv *kv;
	MDB_val k, v;
	size_t i;
	int rc;

	w->lres->added = w->lres->duplicates = 0;
	w->lres->conflict = 0;
	for (i = 0; i < w->nkv; i++) {
		kv = &w->kv[i];
		k = (MDB_val) { kv->keylen, (void *)(uintptr_t)kv->key };
		v = (MDB_val) { kv->vallen, (void *)(uintptr_t)kv->val };
		rc = mdb_put(txn, s->ledger, &k, &v, MDB_NOOVERWRITE);
		if (rc == 0) {
			w->lres->added++;
			if ((rc = store_cap_put(s, s->ledger, &k, &v, false)) !=
			    0)
				return rc;
			continue;
		}
		if (rc != MDB_KEYEXIST)
			return rc;
		/* On MDB_KEYEXIST, V now points at the stored value. */
		if (v.mv_size == kv->vallen &&
		    memcmp(v.mv_data, kv->val, kv->vallen) == 0) {
			w->lres->duplicates++;
			continue;
		}
		w->lres->conflict = i;
		*res = STORE_REFUSED;
		return 0;
	}
	if (json_object_set_new(w->event, "added",
		json_integer((json_int_t)w->lres->added)) == -1 ||
	    json_object_set_new(w->event, "duplicates",
		json_integer((json_int_t)w->lres->duplicates)) == -1)
		return ENOMEM;
	return 0;
}

/*
 * One write txn: the change W describes, its event and the new sequence in
 * meta. Returns 0 or an LMDB code for store_write to handle, and the
 * outcome in *RES: STORE_OK, STORE_NOTFOUND (nothing to delete),
 * STORE_REFUSED or STORE_ERROR (the update callback's). A refusal the
 * callback asks to record commits the event alone.
 */
static int
store_write_txn(struct store *s, struct store_write *w, int *res)
{
	MDB_txn *txn;
	MDB_val k, v;
	struct store_enc enc;
	struct store_route r, old;
	struct store_wave wave;
	struct store_tally tally = { 0 };
	unsigned char kb[8];
	uint64_t seq, decided;
	bool record = false, found;
	int rc;

	*res = STORE_OK;

	if ((rc = store_txn_begin(s, &txn)) != 0)
		return rc;
	if ((rc = store_meta_seq(txn, s->meta, &seq)) != 0)
		goto abort;
	seq++;

	switch (w->op) {
	case STORE_OP_ROUTE_PUT:
		if ((rc = store_route_old(s, txn, w, &old, &found)) != 0)
			goto abort;
		memset(&r, 0, sizeof(r));
		r.wave = w->wave;
		r.seq = seq;
		r.since_ms = w->now_ms;
		store_route_encode(&r, &enc);
		k = (MDB_val) { w->keylen, (void *)(uintptr_t)w->key };
		v = (MDB_val) { enc.len, enc.buf };
		if ((rc = mdb_put(txn, s->objects, &k, &v, 0)) != 0 ||
		    (rc = store_cap_put(s, s->objects, &k, &v, false)) != 0 ||
		    (rc = store_index_move(s, txn, w->key, w->keylen,
			 found ? &old : NULL, &w->wave, &tally)) != 0 ||
		    (rc = store_tally_apply(s, txn, &tally)) != 0)
			goto abort;
		break;
	case STORE_OP_ROUTE_DEL:
		if ((rc = store_route_old(s, txn, w, &old, &found)) != 0)
			goto abort;
		k = (MDB_val) { w->keylen, (void *)(uintptr_t)w->key };
		if ((rc = mdb_del(txn, s->objects, &k, NULL)) == MDB_NOTFOUND) {
			mdb_txn_abort(txn);
			*res = STORE_NOTFOUND;
			return 0;
		}
		if (rc != 0 ||
		    (rc = store_cap_put(s, s->objects, &k, NULL, true)) != 0 ||
		    (found &&
			((rc = store_index_move(s, txn, w->key, w->keylen, &old,
			      NULL, &tally)) != 0 ||
			    (rc = store_tally_apply(s, txn, &tally)) != 0)))
			goto abort;
		break;
	case STORE_OP_WAVE_UPDATE:
		store_wave_key(w->wave, kb);
		k = (MDB_val) { 4, kb };
		rc = mdb_get(txn, s->waves, &k, &v);
		if (rc == MDB_NOTFOUND)
			memset(&wave, 0, sizeof(wave));
		else if (rc != 0)
			goto abort;
		else if (store_wave_decode(&v, &wave) == -1) {
			rc = MDB_CORRUPTED;
			goto abort;
		}
		wave.n = w->wave;
		decided = wave.seq;
		*res = w->cb(&wave, w->event, &record, w->arg);
		if (*res != STORE_OK && *res != STORE_REFUSED)
			*res = STORE_ERROR;
		if (*res == STORE_ERROR || (*res == STORE_REFUSED && !record)) {
			mdb_txn_abort(txn);
			return 0;
		}
		if (*res == STORE_OK) {
			wave.n = w->wave;
			wave.seq = seq;
			store_wave_encode(&wave, &enc);
			v = (MDB_val) { enc.len, enc.buf };
			if ((rc = mdb_put(txn, s->waves, &k, &v, 0)) != 0 ||
			    (rc = store_cap_put(s, s->waves, &k, &v, false)) !=
				0)
				goto abort;
			if (s->cap != NULL && s->cap->n > 0)
				s->cap->ops[s->cap->n - 1].decided_seq =
				    decided;
			if (w->rline != NULL && *w->rline != NULL &&
			    (rc = store_rlog_put_in(s, txn, *w->rline,
				 strlen(*w->rline), &decided)) != 0)
				goto abort;
		}
		break;
	case STORE_OP_EVENT:
		break;
	case STORE_OP_LEDGER:
		if ((rc = store_ledger_put(s, txn, w, res)) != 0)
			goto abort;
		if (*res == STORE_REFUSED) {
			mdb_txn_abort(txn);
			return 0;
		}
		break;
	case STORE_OP_READERS_EXCUSE:
		if ((rc = store_readers_excuse_put(s, txn, w->key, w->keylen,
			 w->obj, w->objlen, w->now_ms, &w->nkv)) != 0)
			goto abort;
		if (w->nkv == 0) {
			mdb_txn_abort(txn);
			*res = STORE_NOTFOUND;
			return 0;
		}
		if (json_object_set_new(w->event, "records",
			json_integer((json_int_t)w->nkv)) == -1) {
			rc = ENOMEM;
			goto abort;
		}
		break;
	case STORE_OP_ROUTE_IMPORT:
		if ((rc = store_import_put(s, txn, w, seq, res)) != 0)
			goto abort;
		/* Refused, failed, or nothing to change: no event either. */
		if (*res != STORE_OK || w->ires->set == 0) {
			mdb_txn_abort(txn);
			return 0;
		}
		break;
	}

	if ((rc = store_event_put(s, txn, seq, w->now_ms, w->event)) != 0)
		goto abort;
	if ((rc = store_meta_seq_put(txn, s->meta, seq)) != 0)
		goto abort;
	/* Captured (cluster mode): etcd commits it, the mirror applies it. */
	if (s->cap != NULL) {
		mdb_txn_abort(txn);
		return 0;
	}
	/* Commit frees the txn even when it fails. */
	if ((rc = mdb_txn_commit(txn)) != 0)
		return rc;
	s->last_seq = seq;
	return 0;

abort:
	store_tally_clear(&tally);
	mdb_txn_abort(txn);
	return rc;
}

/*
 * The route W names as TXN holds it, into *OLD (*FOUND: whether there is
 * one; a damaged record counts as none). 0 or an LMDB code.
 */
static int
store_route_old(struct store *s, MDB_txn *txn, const struct store_write *w,
    struct store_route *old, bool *found)
{
	MDB_val k = { w->keylen, (void *)(uintptr_t)w->key }, v;
	int rc;

	*found = false;
	if ((rc = mdb_get(txn, s->objects, &k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc != 0)
		return rc;
	*found = store_route_decode(&v, old) == 0;
	return 0;
}

/*
 * Run a write, doubling the map and retrying on MDB_MAP_FULL (which
 * the commit reports as often as the put).
 */
static int
store_write(struct store *s, struct store_write *w)
{
	/* Also the type of the event written when the caller gave none. */
	static const char *const names[] = {
		[STORE_OP_ROUTE_PUT] = "route.set",
		[STORE_OP_ROUTE_DEL] = "route.rm",
		[STORE_OP_WAVE_UPDATE] = "wave.update",
		[STORE_OP_EVENT] = "event",
		[STORE_OP_LEDGER] = "ledger.import",
		[STORE_OP_ROUTE_IMPORT] = "route.import",
		[STORE_OP_READERS_EXCUSE] = "readers.forget",
	};
	json_t *own = NULL;
	size_t capn;
	int rc, res, tries;

	if (w->event == NULL)
		w->event = own = json_pack("{s:s}", "type", names[w->op]);
	if (w->event == NULL || !json_is_object(w->event)) {
		store_damaged(s, "event is not a JSON object");
		return STORE_ERROR;
	}
	capn = s->cap != NULL ? s->cap->n : 0;
	rc = store_write_txn(s, w, &res);
	/* A big import may need the map to double a few times. */
	for (tries = 0; rc == MDB_MAP_FULL && tries < STORE_GROW_TRIES &&
	     store_grow(s) == 0;
	     tries++) {
		store_cap_rewind(s, capn);
		rc = store_write_txn(s, w, &res);
	}
	if (rc != 0) {
		store_cap_rewind(s, capn);
		(void)json_object_del(w->event, "seq");
		(void)json_object_del(w->event, "ts");
		json_decref(own);
		store_damaged(s, "%s: %s", names[w->op], store_strerror(s, rc));
		return STORE_ERROR;
	}
	json_decref(own);
	/* STORE_ERROR here is the callback's: the store itself worked. */
	if (res != STORE_ERROR)
		store_ok(s);
	return res;
}

/* Assign KEY to WAVE. */
int
store_route_put(struct store *s, const void *key, size_t keylen, uint32_t wave,
    int64_t now_ms, json_t *event)
{
	struct store_write w = { .op = STORE_OP_ROUTE_PUT,
		.key = key,
		.keylen = keylen,
		.wave = wave,
		.now_ms = now_ms,
		.event = event };

	if (keylen == 0 || keylen > STORE_KEY_MAX) {
		log_warnx("store_route_put: key of %zu bytes", keylen);
		return STORE_ERROR;
	}
	return store_write(s, &w);
}

/* Remove the assignment of KEY. */
int
store_route_del(struct store *s, const void *key, size_t keylen, int64_t now_ms,
    json_t *event)
{
	struct store_write w = { .op = STORE_OP_ROUTE_DEL,
		.key = key,
		.keylen = keylen,
		.now_ms = now_ms,
		.event = event };

	if (keylen == 0 || keylen > STORE_KEY_MAX)
		return STORE_NOTFOUND;
	return store_write(s, &w);
}

/* Read-modify-write wave N through CB in one txn. */
int
store_wave_update(struct store *s, uint32_t n, int64_t now_ms,
    store_wave_update_cb cb, void *arg, json_t *event)
{
	struct store_write w = { .op = STORE_OP_WAVE_UPDATE,
		.wave = n,
		.now_ms = now_ms,
		.event = event,
		.cb = cb,
		.arg = arg };

	return store_write(s, &w);
}

/* store_wave_update, with the rollback log line *LINE kept pending. */
int
store_wave_update_rlog(struct store *s, uint32_t n, int64_t now_ms,
    store_wave_update_cb cb, void *arg, json_t *event, char *const *line)
{
	struct store_write w = { .op = STORE_OP_WAVE_UPDATE,
		.wave = n,
		.now_ms = now_ms,
		.event = event,
		.cb = cb,
		.arg = arg,
		.rline = line };

	return store_write(s, &w);
}

/* Append ledger records, all or nothing. */
int
store_ledger_append(struct store *s, const struct store_kv *kv, size_t n,
    int64_t now_ms, json_t *event, struct store_ledger_res *res)
{
	struct store_write w = { .op = STORE_OP_LEDGER,
		.now_ms = now_ms,
		.event = event,
		.kv = kv,
		.nkv = n,
		.lres = res };
	size_t i;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < n; i++) {
		if (kv[i].keylen <= STORE_LEDGER_TS ||
		    kv[i].keylen > STORE_KEY_MAX || kv[i].vallen == 0) {
			log_warnx("store_ledger_append: record %zu: key of %zu "
				  "bytes, value of %zu",
			    i, kv[i].keylen, kv[i].vallen);
			return STORE_ERROR;
		}
	}
	return store_write(s, &w);
}

/* Append EVENT alone. */
int
store_event_append(struct store *s, int64_t now_ms, json_t *event)
{
	struct store_write w = { .op = STORE_OP_EVENT,
		.now_ms = now_ms,
		.event = event };

	return store_write(s, &w);
}

/* LMDB's key order, then by NO. */
static int
store_route_in_cmp(const void *a, const void *b)
{
	const struct store_route_in *x = a, *y = b;
	int d;

	if ((d = store_key_cmp(x->key, x->keylen, y->key, y->keylen)) != 0)
		return d;
	if (x->no != y->no)
		return x->no < y->no ? -1 : 1;
	return 0;
}

/* Sort imported routes into key order. */
void
store_route_in_sort(struct store_route_in *in, size_t n)
{
	if (n > 1)
		qsort(in, n, sizeof(*in), store_route_in_cmp);
}

/* Order wave numbers. */
static int
store_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Set "waves" in EVENT: how many of the N routes set went to each wave
 * (WAVES is sorted in place). A million routes over a hundred waves make
 * a hundred members, never a list of objects. 0 or ENOMEM.
 */
static int
store_import_waves(json_t *event, uint32_t *waves, size_t n)
{
	json_t *o;
	char name[16];
	size_t i, j;

	if ((o = json_object()) == NULL)
		return ENOMEM;
	qsort(waves, n, sizeof(*waves), store_u32_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && waves[j] == waves[i]; j++)
			;
		snprintf(name, sizeof(name), "%u", waves[i]);
		if (json_object_set_new(o, name,
			json_integer((json_int_t)(j - i))) == -1) {
			json_decref(o);
			return ENOMEM;
		}
	}
	return json_object_set_new(event, "waves", o) == -1 ? ENOMEM : 0;
}

/*
 * Put W's imported routes in TXN with sequence SEQ, through one cursor: in
 * key order each lookup and put starts from the page the last one left.
 * Returns 0 or an LMDB code; a refusal (or the callback's error) in *RES,
 * the counts in W->ires and EVENT.
 */
static int
store_import_put(struct store *s, MDB_txn *txn, struct store_write *w,
    uint64_t seq, int *res)
{
	struct store_import_res *ir = w->ires;
	const struct store_route_in *in;
	struct store_route old, r;
	struct store_enc enc;
	MDB_cursor *c;
	MDB_val k, v;
	uint32_t *waves;
	size_t i;
	struct store_states st;
	struct store_tally tally = { 0 };
	bool found;
	int rc;

	memset(ir, 0, sizeof(*ir));
	if ((rc = store_import_states(s, txn, &st)) != 0)
		return rc;
	if ((rc = mdb_cursor_open(txn, s->objects, &c)) != 0) {
		free(st.v);
		return rc;
	}
	waves = xreallocarray(NULL, w->nrin, sizeof(*waves));
	memset(&r, 0, sizeof(r));
	r.seq = seq;
	r.since_ms = w->now_ms;
	for (i = 0; i < w->nrin; i++) {
		in = &w->rin[i];
		k = (MDB_val) { in->keylen, (void *)(uintptr_t)in->key };
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
		if (rc != 0 && rc != MDB_NOTFOUND)
			goto out;
		found = rc == 0;
		if (found && store_route_decode(&v, &old) == -1) {
			rc = MDB_CORRUPTED;
			goto out;
		}
		if (found && old.wave == in->wave) {
			ir->unchanged++;
			continue;
		}
		if (!in->force && w->icb != NULL) {
			*res = w->icb(i, found ? &old : NULL,
			    found ? store_import_state(&st, old.wave) : 0,
			    store_import_state(&st, in->wave), w->arg);
			if (*res != STORE_OK) {
				if (*res != STORE_REFUSED)
					*res = STORE_ERROR;
				ir->refused = i;
				rc = 0;
				goto out;
			}
		}
		r.wave = in->wave;
		store_route_encode(&r, &enc);
		/* MDB_SET_KEY pointed K at the stored key: point it back. */
		k = (MDB_val) { in->keylen, (void *)(uintptr_t)in->key };
		v = (MDB_val) { enc.len, enc.buf };
		if ((rc = mdb_cursor_put(c, &k, &v, 0)) != 0 ||
		    (rc = store_cap_put(s, s->objects, &k, &v, false)) != 0 ||
		    (rc = store_index_move(s, txn, in->key, in->keylen,
			 found ? &old : NULL, &in->wave, &tally)) != 0)
			goto out;
		waves[ir->set++] = in->wave;
	}
	if ((rc = store_tally_apply(s, txn, &tally)) != 0)
		goto out;
	if (json_object_set_new(w->event, "set",
		json_integer((json_int_t)ir->set)) == -1 ||
	    json_object_set_new(w->event, "unchanged",
		json_integer((json_int_t)ir->unchanged)) == -1)
		rc = ENOMEM;
	else
		rc = store_import_waves(w->event, waves, ir->set);
out:
	store_tally_clear(&tally);
	free(waves);
	free(st.v);
	mdb_cursor_close(c);
	return rc;
}

/*
 * The state of every wave with a record, read in the import's own txn (a
 * flip cannot slip in between what the guard sees and what is written).
 */
static int
store_import_states(struct store *s, MDB_txn *txn, struct store_states *st)
{
	struct store_wave wave;
	MDB_cursor *c;
	MDB_val k, v;
	size_t cap = 0;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((rc = mdb_cursor_open(txn, s->waves, &c)) != 0)
		return rc;
	/* Keys are big-endian: the waves come in numeric order. */
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		if (k.mv_size != 4 || store_wave_decode(&v, &wave) == -1) {
			rc = MDB_CORRUPTED;
			break;
		}
		if (st->n == cap) {
			cap = cap != 0 ? cap * 2 : 64;
			st->v = xreallocarray(st->v, cap, sizeof(*st->v));
		}
		st->v[st->n].n = store_wave_num(k.mv_data);
		st->v[st->n++].state = wave.state;
	}
	mdb_cursor_close(c);
	if (rc != MDB_NOTFOUND) {
		free(st->v);
		st->v = NULL;
		return rc;
	}
	return 0;
}

/* The state of wave N in ST: 0 when it has no record. */
static int
store_import_state(const struct store_states *st, uint32_t n)
{
	size_t lo = 0, hi = st->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (st->v[mid].n == n)
			return st->v[mid].state;
		if (st->v[mid].n < n)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Assign many routes in one txn, all or nothing. */
int
store_route_import(struct store *s, const struct store_route_in *in, size_t n,
    int64_t now_ms, store_route_import_cb cb, void *arg, json_t *event,
    struct store_import_res *res)
{
	struct store_write w = { .op = STORE_OP_ROUTE_IMPORT,
		.now_ms = now_ms,
		.event = event,
		.arg = arg,
		.rin = in,
		.nrin = n,
		.icb = cb,
		.ires = res };
	size_t i;

	memset(res, 0, sizeof(*res));
	if (n == 0)
		return STORE_OK;
	for (i = 0; i < n; i++) {
		if (in[i].keylen == 0 || in[i].keylen > STORE_KEY_MAX) {
			log_warnx("store_route_import: route %zu: key of %u "
				  "bytes",
			    i, in[i].keylen);
			return STORE_ERROR;
		}
	}
	return store_write(s, &w);
}

/* Excuse a reader of warehouse copies, with EVENT. */
int
store_readers_excuse(struct store *s, const char *ident, size_t idlen,
    const void *obj, size_t objlen, int64_t now_ms, json_t *event)
{
	struct store_write w = { .op = STORE_OP_READERS_EXCUSE,
		.key = ident,
		.keylen = idlen,
		.obj = obj,
		.objlen = objlen,
		.now_ms = now_ms,
		.event = event };

	if (idlen == 0 || idlen > STORE_KEY_MAX || objlen > STORE_KEY_MAX)
		return STORE_NOTFOUND;
	return store_write(s, &w);
}
