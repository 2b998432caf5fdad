/*
 * floe: cluster_import.c -- the mirror's side of bulk imports that take
 * more than one etcd txn (route and ledger imports; docs/cluster.md,
 * "Imports"). Such an import writes each record at its own key wrapped
 * with the import's id and the record it replaces; the records become
 * visible only when PREFIX/imports/ID says "committed", which the one
 * last txn writes. Until then every mirror keeps showing the replaced
 * record and stages the new one in its store; the commit applies the
 * staged records in the one LMDB txn that applies the commit key. An
 * import whose importer died loses its leased imports/ID key with the
 * importer's lease, and the mirrors drop what they staged for it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/log.h"
#include "lib/xmalloc.h"
#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "proxy/etcd.h"
#include "routing/store.h"

/* A wrapped value starts with these 8 bytes (no record or event does). */
static const char CLUSTER_WRAP_MAGIC[8] = { '\xff', 'f', 'l', 'o', 'e', 'i',
	'm', 'p' };
#define CLUSTER_WRAP_NONE UINT32_MAX

static void cluster_put_u32(unsigned char *, uint32_t);
static uint32_t cluster_get_u32(const unsigned char *);

static void
cluster_put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t
cluster_get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * Wrap the record NEW (NEWLEN bytes) of import ID, replacing WAS (or none
 * when WAS is NULL): MAGIC, u8 id length, id, u32 length and new record,
 * u32 length (CLUSTER_WRAP_NONE: none) and replaced record. Caller frees.
 */
char *
cluster_wrap(const char *id, const void *nv, size_t newlen, const void *was,
    size_t waslen, size_t *len)
{
	size_t idlen = strlen(id), n;
	unsigned char *p;

	if (idlen > 255 || newlen >= CLUSTER_WRAP_NONE ||
	    waslen >= CLUSTER_WRAP_NONE)
		fatalx("%s: record too large to wrap", __func__);
	n = sizeof(CLUSTER_WRAP_MAGIC) + 1 + idlen + 4 + newlen + 4 +
	    (was != NULL ? waslen : 0);
	p = xmalloc(n);
	*len = n;
	memcpy(p, CLUSTER_WRAP_MAGIC, sizeof(CLUSTER_WRAP_MAGIC));
	n = sizeof(CLUSTER_WRAP_MAGIC);
	p[n++] = (unsigned char)idlen;
	memcpy(p + n, id, idlen);
	n += idlen;
	cluster_put_u32(p + n, (uint32_t)newlen);
	memcpy(p + n + 4, nv, newlen);
	n += 4 + newlen;
	cluster_put_u32(p + n,
	    was != NULL ? (uint32_t)waslen : CLUSTER_WRAP_NONE);
	if (was != NULL)
		memcpy(p + n + 4, was, waslen);
	return (char *)p;
}

/* Whether V is a wrapped value (not whether it is a good one). */
bool
cluster_wrapped(const char *v, size_t len)
{
	return v != NULL && len >= sizeof(CLUSTER_WRAP_MAGIC) &&
	    memcmp(v, CLUSTER_WRAP_MAGIC, sizeof(CLUSTER_WRAP_MAGIC)) == 0;
}

/* Take V apart into W: 0, or -1 if it is not a good wrapped value. */
int
cluster_unwrap(const char *v, size_t len, struct cluster_wrap *w)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t n = sizeof(CLUSTER_WRAP_MAGIC);
	uint32_t l;

	memset(w, 0, sizeof(*w));
	if (!cluster_wrapped(v, len) || len < n + 1)
		return -1;
	w->idlen = p[n++];
	w->id = v + n;
	n += w->idlen;
	if (w->idlen == 0 || len < n + 4)
		return -1;
	l = cluster_get_u32(p + n);
	n += 4;
	if (l > len - n)
		return -1;
	w->nv = v + n;
	w->newlen = l;
	n += l;
	if (len < n + 4)
		return -1;
	l = cluster_get_u32(p + n);
	n += 4;
	if (l == CLUSTER_WRAP_NONE)
		return n == len ? 0 : -1;
	if (l != len - n)
		return -1;
	w->was = v + n;
	w->waslen = l;
	return 0;
}

/*
 * The record of a replaced route keeps the revision it was put at as its
 * sequence; a ledger record has none (it never replaces one).
 */
static int64_t
cluster_was_rev(enum store_db db, const char *was, size_t len)
{
	struct store_route r;

	if (db == STORE_DB_OBJECTS && store_route_record(was, len, &r) == 0)
		return (int64_t)r.seq;
	return 0;
}

/*
 * A wrapped record of KEY (KB, KLEN in DB) at REV, in the mirror's txn M.
 * On a resync, IMPORTS maps each import id to its imports/ record's
 * state: committed shows the new record, anything else the replaced one,
 * and an open import also stages the new one. From the watch (IMPORTS
 * NULL) the record is only staged: its commit comes later. STORE_OK, or
 * STORE_ERROR (the txn is over).
 */
int
cluster_import_put(struct store_mirror *m, enum store_db db,
    const unsigned char *kb, size_t klen, const char *val, size_t vlen,
    int64_t rev, json_t *imports)
{
	struct cluster_wrap w;
	const char *state = NULL;
	char id[256];
	int rc;

	if (cluster_unwrap(val, vlen, &w) == -1) {
		log_warnx("cluster: a damaged import record at revision %lld; "
			  "skipped",
		    (long long)rev);
		return STORE_OK;
	}
	memcpy(id, w.id, w.idlen);
	id[w.idlen] = '\0';
	if (imports == NULL) {
		rc = store_mirror_stage(m, w.id, w.idlen, db, kb, klen, w.nv,
		    w.newlen, rev);
		return rc == STORE_ERROR ? STORE_ERROR : STORE_OK;
	}
	state = json_string_value(json_object_get(imports, id));
	if (state != NULL && strcmp(state, "committed") == 0)
		rc = store_mirror_put(m, db, kb, klen, w.nv, w.newlen, rev);
	else {
		rc = STORE_OK;
		if (w.was != NULL)
			rc = store_mirror_put(m, db, kb, klen, w.was, w.waslen,
			    cluster_was_rev(db, w.was, w.waslen));
		if (rc != STORE_ERROR && state != NULL &&
		    strcmp(state, "open") == 0)
			rc = store_mirror_stage(m, w.id, w.idlen, db, kb, klen,
			    w.nv, w.newlen, rev);
	}
	return rc == STORE_ERROR ? STORE_ERROR : STORE_OK;
}

/*
 * A write replaced (or deleted) a record whose previous value PREV was
 * wrapped: what was staged for it must not be applied over the new one.
 */
int
cluster_import_replaced(struct store_mirror *m, enum store_db db,
    const unsigned char *kb, size_t klen, const char *prev, size_t plen)
{
	struct cluster_wrap w;

	if (cluster_unwrap(prev, plen, &w) == -1)
		return STORE_OK;
	return store_mirror_unstage_one(m, w.id, w.idlen, db, kb, klen);
}

/*
 * PREFIX/imports/ID (NAME, NLEN) was put (VAL) or deleted: a commit
 * applies what was staged for ID; a delete (the importer gave up, or its
 * lease expired) drops it. *APPLIED says the store's records changed.
 */
int
cluster_import_seen(struct store_mirror *m, const char *name, size_t nlen,
    const char *val, size_t vlen, bool deleted, bool *applied)
{
	json_t *j;
	const char *state;
	bool commit;
	size_t n = 0;
	int rc;

	if (deleted)
		commit = false;
	else {
		j = json_loadb(val, vlen, 0, NULL);
		state = json_string_value(json_object_get(j, "state"));
		commit = state != NULL && strcmp(state, "committed") == 0;
		json_decref(j);
		if (!commit)
			return STORE_OK; /* open: its records come next */
	}
	rc = store_mirror_unstage(m, name, nlen, commit, &n);
	if (rc == STORE_ERROR)
		return rc;
	if (commit) {
		*applied = true;
		log_info("cluster: import %.*s committed: %zu records applied",
		    (int)nlen, name, n);
	} else if (n > 0)
		log_info("cluster: import %.*s abandoned: %zu staged records "
			 "dropped",
		    (int)nlen, name, n);
	return STORE_OK;
}

/*
 * On a resync: the state of every import named under PREFIX/imports/
 * among the KVS (N), as an object id -> "open" | "committed". Caller
 * decrefs.
 */
json_t *
cluster_import_states(const struct cluster_kv *kvs, size_t n)
{
	json_t *o, *j;
	const char *state;
	char id[256];
	size_t i, l;

	if ((o = json_object()) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < n; i++) {
		if (kvs[i].key_len <= 8 ||
		    memcmp(kvs[i].key, "imports/", 8) != 0)
			continue;
		l = kvs[i].key_len - 8;
		if (l >= sizeof(id))
			continue;
		memcpy(id, kvs[i].key + 8, l);
		id[l] = '\0';
		j = json_loadb(kvs[i].value, kvs[i].value_len, 0, NULL);
		state = json_string_value(json_object_get(j, "state"));
		(void)json_object_set_new(o, id,
		    json_string(state != NULL ? state : "open"));
		json_decref(j);
	}
	return o;
}

/*
 * One event EV of the watch, in the mirror's txn M, if it is about an
 * import: PREFIX/imports/ID (IMPORT, its id NAME), a wrapped record
 * (staged), or a write over a wrapped record (what was staged for that
 * key is dropped; the caller goes on with the write). True when handled;
 * a failure in *RC (STORE_ERROR: the txn is over); *REHASH when the
 * store's records changed in a way the running hash cannot follow: an
 * import's commit. What is staged or unstaged is not a record anyone
 * sees, and a write over a wrapped record is hashed by the caller as any
 * write is, so neither needs a rehash: a rehash for each of a re-import's
 * txns scanned the whole store once per 128 records.
 */
bool
cluster_watch_import(struct store_mirror *m, const struct etcd_event *ev,
    bool import, enum store_db db, const unsigned char *kb, size_t klen,
    const char *name, size_t nlen, int *rc, bool *rehash)
{
	if (import) {
		*rc = cluster_import_seen(m, name, nlen, ev->kv.value,
		    ev->kv.value_len, ev->type == ETCD_EVENT_DELETE, rehash);
		return true;
	}
	if (db == STORE_DB_EVENTS)
		return false;
	if (ev->prev_kv != NULL &&
	    cluster_wrapped(ev->prev_kv->value, ev->prev_kv->value_len)) {
		*rc = cluster_import_replaced(m, db, kb, klen,
		    ev->prev_kv->value, ev->prev_kv->value_len);
		if (*rc == STORE_ERROR)
			return true;
	}
	if (ev->type != ETCD_EVENT_PUT ||
	    !cluster_wrapped(ev->kv.value, ev->kv.value_len))
		return false;
	*rc = cluster_import_put(m, db, kb, klen, ev->kv.value,
	    ev->kv.value_len, ev->kv.mod_revision, NULL);
	return true;
}

/*
 * A ledger key as etcd holds it, after "ledger/": the object's store key,
 * "/", the record's time as 16 hex digits (DESIGN's ledger/OBJECT/TS).
 * Into KB (STORE_KEY_MAX) as the store's key. 0 or -1.
 */
int
cluster_ledger_key(const char *k, size_t len, unsigned char *kb, size_t *klen)
{
	uint64_t t = 0;
	size_t i, olen;
	int d;

	if (len < 18 || k[len - 17] != '/')
		return -1;
	olen = len - 17;
	if (olen + 8 > STORE_KEY_MAX)
		return -1;
	for (i = len - 16; i < len; i++) {
		if (k[i] >= '0' && k[i] <= '9')
			d = k[i] - '0';
		else if (k[i] >= 'a' && k[i] <= 'f')
			d = k[i] - 'a' + 10;
		else
			return -1;
		t = t << 4 | (uint64_t)d;
	}
	memcpy(kb, k, olen);
	for (i = 0; i < 8; i++)
		kb[olen + i] = (unsigned char)(t >> (56 - 8 * i));
	*klen = olen + 8;
	return 0;
}

/* The inverse: the store's ledger key KEY as etcd's, after "ledger/". */
size_t
cluster_ledger_name(const unsigned char *key, size_t keylen, char *out,
    size_t outlen)
{
	uint64_t t = 0;
	size_t i, olen;

	if (keylen <= 8 || outlen < keylen - 8 + 18)
		return 0;
	olen = keylen - 8;
	for (i = 0; i < 8; i++)
		t = t << 8 | key[olen + i];
	memcpy(out, key, olen);
	snprintf(out + olen, outlen - olen, "/%016llx", (unsigned long long)t);
	return olen + 17;
}
