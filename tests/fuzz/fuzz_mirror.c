/*
 * floe: fuzz_mirror.c -- libFuzzer target for a cluster node's mirror: the
 * way from etcd's events to the store (cluster_mirror.c and what it calls:
 * routes, waves, ledger records, bulk imports, reader batches and copies,
 * node and leader keys, rollback log lines). The input is a script of
 * etcd changes; the target keeps a model of etcd's keys and plays etcd to
 * the mirror's two callbacks as etcd would: a resync's range pages first,
 * then the watch, revisions rising, each event with the pair it replaced,
 * several events in one revision for a txn. Keys are of every kind floe
 * puts, values raw bytes or real records (routes, waves, bulk imports'
 * wrapped records and commit keys), so both the decoders' edges and the
 * apply logic behind them are reached.
 *
 * Checked after each message, beside what ASan and UBSan see:
 *   - the node has applied etcd's revision;
 *   - its hash of routes and waves, kept event by event, is the hash of
 *     the store's routes and waves computed from scratch: what a node that
 *     resyncs has, and what nodes compare (GET /cluster "disagrees");
 *   - /status and /metrics can be made of what etcd holds;
 * and at the end, a resync from the same keys leaves the same routes,
 * waves and ledger records, record for record, as the events did.
 *
 * Each input gets a new store in a scratch directory (under /dev/shm when
 * there is one) and a new cluster, so that a finding replays alone. etcd
 * itself is never reached: the endpoint is a closed port and the loop
 * never runs, so the calls the mirror makes (heartbeats, the leader, the
 * reader inventory's copy) wait unanswered and are cancelled at the end,
 * with the loop. FUZZ_MIRROR_TRACE=1 prints each event and, at the end,
 * each route and wave as the events and the resync left them.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "lib/log.h"
#include "lib/xmalloc.h"
#include "proxy/cluster.h"
#include "proxy/cluster_impl.h"
#include "proxy/conf.h"
#include "proxy/etcd.h"
#include "proxy/fetch.h"
#include "proxy/floe.h"
#include "proxy/stats.h"
#include "routing/store.h"
#include "routing/store_impl.h"
#include "tests/fuzz/fuzz_floe.h"

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define PREFIX "/floe/"
#define MAXKEYS 48 /* keys in the model of etcd */
#define MAXTXN 4 /* events in one revision */
#define CID 0x5eedULL /* etcd's cluster id */

/* One key of the model of etcd, the prefix included. */
struct mkv {
	char *key;
	size_t klen;
	char *val;
	size_t vlen;
	int64_t create, mod, version, lease;
};

static struct floe fz;
static bool trace; /* FUZZ_MIRROR_TRACE: say each event and record */
static unsigned gen[3]; /* each import slot's generation: its id */
static char scratch[64];
static struct mkv model[MAXKEYS];
static size_t nmodel;
static int64_t rev;

/* The input, read from the front; past its end every read is 0. */
struct in {
	const uint8_t *p;
	size_t n;
};

static char *
bytes_dup(const char *p, size_t n)
{
	char *d = xmalloc(n + 1);

	memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

/* KEY (LEN bytes) on stderr, its bytes outside ASCII's graphics in hex. */
static void
show(const void *key, size_t len)
{
	const unsigned char *p = key;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] > ' ' && p[i] < 0x7f && p[i] != '\\')
			fputc(p[i], stderr);
		else
			fprintf(stderr, "\\x%02x", p[i]);
}

static uint8_t
u8(struct in *in)
{
	uint8_t v;

	if (in->n == 0)
		return 0;
	v = *in->p++;
	in->n--;
	return v;
}

static size_t
take(struct in *in, char *out, size_t max)
{
	size_t n = u8(in) % (max + 1);

	if (n > in->n)
		n = in->n;
	memcpy(out, in->p, n);
	in->p += n;
	in->n -= n;
	return n;
}

/* A conf with [cluster]: once. */
int
LLVMFuzzerInitialize(int *argc __attribute__((unused)),
    char ***argv __attribute__((unused)))
{
	log_init(0);
	trace = getenv("FUZZ_MIRROR_TRACE") != NULL;
	fz.access_fd = -1;
	fz.conf = fuzz_floe_conf("mirror",
	    "[cluster]\netcd = http://127.0.0.1:1\nname = fz\n", scratch,
	    sizeof(scratch));
	return 0;
}

/*
 * A key of the kind the input picks, its tail from the input; or the key
 * of an import slot's current id.
 */
static size_t
make_key(struct in *in, char *key, size_t max)
{
	static const char *const kinds[] = { "objects/db.t", "objects/db.",
		"waves/", "waves/1", "ledger/db.t", "imports/", "readers/n",
		"readers-want/", "readers-copy/fz/n", "readers-copy/n2/fz/",
		"nodes/n", "leader", "events/", "basis/", "",
		"ledger/db.t/000000000000000" };
	unsigned kind = u8(in) % (sizeof(kinds) / sizeof(kinds[0])), slot;
	size_t n;

	if (kind == 5 && (slot = u8(in)) < 3 * 64)
		return (size_t)snprintf(key, max, PREFIX "imports/i%u.%u",
		    slot % 3, gen[slot % 3]);
	n = (size_t)snprintf(key, max, PREFIX "%s", kinds[kind]);
	return n + take(in, key + n, max - n - 1);
}

/* The model's key KEY (KLEN bytes), or NULL. */
static struct mkv *
model_find(const char *key, size_t klen)
{
	size_t i;

	for (i = 0; i < nmodel; i++)
		if (model[i].klen == klen &&
		    memcmp(model[i].key, key, klen) == 0)
			return &model[i];
	return NULL;
}

/*
 * Whether M is the key of a committed import, which floe never writes
 * again nor deletes (the import's wrapped records name it) and nobody
 * may (docs/cluster.md, "Imports").
 */
static bool
committed(const struct mkv *m)
{
	size_t l = strlen(PREFIX "imports/");

	return m != NULL && m->klen > l &&
	    memcmp(m->key, PREFIX "imports/", l) == 0 &&
	    memmem(m->val, m->vlen, "\"committed\"", 11) != NULL;
}

/* Whether import ID (LEN bytes) is open in etcd. */
static bool
import_open(const char *id, size_t len)
{
	char key[64];
	struct mkv *m;
	int n = snprintf(key, sizeof(key), PREFIX "imports/%.*s", (int)len, id);

	return (m = model_find(key, (size_t)n)) != NULL &&
	    memmem(m->val, m->vlen, "\"open\"", 6) != NULL;
}

/*
 * A value for KEY of the kind the input picks; its length. A wrapped
 * record carries the record it replaces on this node's copy, as an
 * importing node's does.
 */
static size_t
make_value(struct in *in, const char *key, size_t klen, char *val, size_t max)
{
	struct store_route r;
	struct store_wave w;
	struct store_enc enc;
	char id[16], *wrapped;
	void *was = NULL;
	size_t n, waslen = 0, sk = strlen(PREFIX "objects/");
	size_t lk = strlen(PREFIX "ledger/");
	bool route;
	unsigned slot;

	switch (u8(in) % 6) {
	case 0: /* a route */
		memset(&r, 0, sizeof(r));
		r.wave = u8(in) % 4;
		r.since_ms = u8(in);
		store_route_encode(&r, &enc);
		memcpy(val, enc.buf, enc.len);
		return enc.len;
	case 1: /* a wave */
		memset(&w, 0, sizeof(w));
		w.state = u8(in) % 8;
		w.pct = u8(in) % 101;
		w.since_ms = u8(in);
		w.rollback_ms = u8(in) & 1;
		snprintf(w.reason, sizeof(w.reason), "r");
		store_wave_encode(&w, &enc);
		memcpy(val, enc.buf, enc.len);
		return enc.len;
	case 2: /* a route (or ledger record) of an open import, wrapped */
		memset(&r, 0, sizeof(r));
		r.wave = u8(in) % 4;
		store_route_encode(&r, &enc);
		slot = u8(in) % 3;
		/*
		 * An importer opens its import before it puts a record; it
		 * imports routes, which replace a route or none, and ledger
		 * records, each at a new key.
		 */
		n = (size_t)snprintf(id, sizeof(id), "i%u.%u", slot, gen[slot]);
		route = klen > sk && memcmp(key, PREFIX "objects/", sk) == 0;
		if (!import_open(id, n) ||
		    (!route &&
			(klen <= lk || memcmp(key, PREFIX "ledger/", lk) != 0 ||
			    model_find(key, klen) != NULL))) {
			memcpy(val, enc.buf, enc.len);
			return enc.len;
		}
		if (route &&
		    store_record_get(fz.store, STORE_DB_OBJECTS, key + sk,
			klen - sk, &was, &waslen) != STORE_OK) {
			was = NULL;
			waslen = 0;
		}
		wrapped = cluster_wrap(id, enc.buf, enc.len, was, waslen, &n);
		free(was);
		if (n > max)
			abort();
		memcpy(val, wrapped, n);
		free(wrapped);
		return n;
	case 3: /* an import's key */
		return (size_t)snprintf(val, max, "{\"state\":\"%s\"}",
		    u8(in) & 1 ? "committed" : "open");
	default: /* bytes */
		return take(in, val, max > 255 ? 255 : max);
	}
}

static void
kv_of(const struct mkv *m, struct etcd_kv *kv)
{
	kv->key = m->key;
	kv->key_len = m->klen;
	kv->value = m->val;
	kv->value_len = m->vlen;
	kv->create_revision = m->create;
	kv->mod_revision = m->mod;
	kv->version = m->version;
	kv->lease = m->lease;
}

/* Deliver a watch message to the mirror, if it watches. */
static bool
deliver(struct cluster *c, struct etcd_watch_msg *msg)
{
	if (c->watch == NULL)
		return false;
	msg->err = ETCD_OK;
	msg->error = "";
	msg->header.cluster_id = CID;
	msg->header.revision = rev;
	cluster_watch_cb(msg, c);
	return true;
}

/* A resync: the model's keys in pages of PAGE, read at REV. */
static void
resync(struct cluster *c, size_t page)
{
	struct etcd_kv kvs[MAXKEYS];
	struct etcd_result res;
	struct etcd_watch_msg msg;
	size_t i, at = 0;

	etcd_watch_cancel(c->watch);
	c->watch = NULL;
	c->watching = false;
	etcd_cancel(c->range);
	c->range = NULL;
	for (i = 0; i < nmodel; i++)
		kv_of(&model[i], &kvs[i]);
	do {
		memset(&res, 0, sizeof(res));
		res.err = ETCD_OK;
		res.error = "";
		res.endpoint = "";
		res.header.cluster_id = CID;
		res.header.revision = rev;
		res.revision = rev;
		res.kvs = kvs + at;
		res.nkvs = nmodel - at < page ? nmodel - at : page;
		at += res.nkvs;
		res.more = at < nmodel;
		cluster_range_cb(&res, c);
	} while (at < nmodel);
	/* etcd's first watch message says it is created. */
	memset(&msg, 0, sizeof(msg));
	msg.created = true;
	(void)deliver(c, &msg);
}

static uint64_t from_scratch;

static int
hash_route(const void *key, size_t keylen, const struct store_route *r,
    void *arg __attribute__((unused)))
{
	char buf[8 + STORE_KEY_MAX];

	if (keylen > sizeof(buf) - 8)
		__builtin_trap(); /* the store holds no longer key */
	memcpy(buf, "objects/", 8);
	memcpy(buf + 8, key, keylen);
	from_scratch ^= cluster_kv_hash(buf, 8 + keylen, (int64_t)r->seq);
	return 0;
}

static int
hash_wave(const struct store_wave *w, void *arg __attribute__((unused)))
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "waves/%u", w->n);

	from_scratch ^= cluster_kv_hash(buf, (size_t)n, (int64_t)w->seq);
	return 0;
}

/* Routes, waves and ledger records, record for record, as one digest. */
static uint64_t digest;

static void
mix(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		digest ^= b[i];
		digest *= 1099511628211ULL;
	}
}

static int
digest_route(const void *key, size_t keylen, const struct store_route *r,
    void *arg __attribute__((unused)))
{
	if (trace) {
		fprintf(stderr, "route ");
		show(key, keylen);
		fprintf(stderr, ": wave %u, seq %llu\n", r->wave,
		    (unsigned long long)r->seq);
	}
	mix(key, keylen);
	mix(&r->wave, sizeof(r->wave));
	mix(&r->seq, sizeof(r->seq));
	mix(&r->since_ms, sizeof(r->since_ms));
	return 0;
}

static int
digest_wave(const struct store_wave *w, void *arg __attribute__((unused)))
{
	if (trace)
		fprintf(stderr, "wave %u: state %u, pct %u, seq %llu\n", w->n,
		    w->state, w->pct, (unsigned long long)w->seq);
	mix(&w->n, sizeof(w->n));
	mix(&w->state, sizeof(w->state));
	mix(&w->pct, sizeof(w->pct));
	mix(&w->seq, sizeof(w->seq));
	mix(&w->since_ms, sizeof(w->since_ms));
	mix(&w->rollback_ms, sizeof(w->rollback_ms));
	return 0;
}

/* The objects with ledger records, to read theirs outside the walk. */
static struct {
	char key[STORE_KEY_MAX];
	size_t len;
} objs[MAXKEYS];
static size_t nobjs;

static int
ledger_obj(const void *obj, size_t len, void *arg __attribute__((unused)))
{
	if (nobjs == MAXKEYS || len > STORE_KEY_MAX)
		__builtin_trap();
	memcpy(objs[nobjs].key, obj, len);
	objs[nobjs++].len = len;
	return 0;
}

static int
digest_ledger(int64_t ts, const void *val, size_t len,
    void *arg __attribute__((unused)))
{
	mix(&ts, sizeof(ts));
	mix(val, len);
	return 0;
}

static uint64_t
store_digest(struct store *st)
{
	size_t i;

	digest = 14695981039346656037ULL;
	nobjs = 0;
	if (store_route_foreach(st, digest_route, NULL) != STORE_OK ||
	    store_wave_foreach(st, digest_wave, NULL) != STORE_OK ||
	    store_ledger_objects(st, "", 0, ledger_obj, NULL) < 0)
		__builtin_trap();
	for (i = 0; i < nobjs; i++) {
		mix(objs[i].key, objs[i].len);
		if (store_ledger_foreach(st, objs[i].key, objs[i].len,
			INT64_MIN, INT64_MAX, digest_ledger, NULL) < 0)
			__builtin_trap();
	}
	return digest;
}

/*
 * The invariants after a message the mirror applied; and what /status
 * and /metrics say of the cluster (node keys and the leader's are what
 * etcd holds) can be made.
 */
static void
check(struct cluster *c)
{
	json_t *status;
	char *metrics;

	if ((status = stats_status_json(&fz.stats)) == NULL ||
	    json_object_get(status, "cluster") == NULL ||
	    (metrics = stats_metrics_text(&fz.stats)) == NULL)
		__builtin_trap();
	json_decref(status);
	free(metrics);
	if (c->applied != rev)
		__builtin_trap();
	from_scratch = 0;
	(void)store_route_foreach(c->st, hash_route, NULL);
	(void)store_wave_foreach(c->st, hash_wave, NULL);
	if (c->hash != from_scratch)
		__builtin_trap();
}

/* One revision of 1..MAXTXN puts and deletes, as one watch message. */
static void
txn(struct cluster *c, struct in *in, size_t nev)
{
	struct etcd_event ev[MAXTXN];
	struct etcd_kv prev[MAXTXN];
	struct etcd_watch_msg msg;
	struct mkv *m;
	char key[96], val[1024];
	size_t i, k, klen, vlen, n = 0;

	rev++;
	for (i = 0; i < nev; i++) {
		if (u8(in) % 4 == 0 && nmodel > 0) {
			/* A delete of a key etcd has. */
			m = &model[u8(in) % nmodel];
			if (committed(m))
				continue;
			for (k = 0; k < n; k++)
				if (ev[k].kv.key_len == m->klen &&
				    memcmp(ev[k].kv.key, m->key, m->klen) == 0)
					break;
			if (k < n)
				continue; /* one event per key and revision */
			memset(&ev[n], 0, sizeof(ev[n]));
			ev[n].type = ETCD_EVENT_DELETE;
			kv_of(m, &prev[n]);
			ev[n].prev_kv = &prev[n];
			ev[n].kv.key = m->key;
			ev[n].kv.key_len = m->klen;
			ev[n].kv.mod_revision = rev;
			m->mod = -1; /* deleted at the end of the txn */
			n++;
			continue;
		}
		klen = make_key(in, key, sizeof(key));
		vlen = make_value(in, key, klen, val, sizeof(val));
		m = model_find(key, klen);
		for (k = 0; k < n; k++)
			if (ev[k].kv.key_len == klen &&
			    memcmp(ev[k].kv.key, key, klen) == 0)
				break;
		if (k < n || (m == NULL && nmodel == MAXKEYS) || committed(m))
			continue;
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = ETCD_EVENT_PUT;
		if (m != NULL) {
			kv_of(m, &prev[n]);
			prev[n].key = bytes_dup(m->key, m->klen);
			prev[n].value = bytes_dup(m->val, m->vlen);
			ev[n].prev_kv = &prev[n];
			free(m->val);
		} else {
			m = &model[nmodel++];
			memset(m, 0, sizeof(*m));
			m->key = bytes_dup(key, klen);
			m->klen = klen;
			m->create = rev;
		}
		m->val = bytes_dup(val, vlen);
		m->vlen = vlen;
		m->mod = rev;
		m->version++;
		m->lease = u8(in) & 1 ? 7 : 0;
		kv_of(m, &ev[n].kv);
		n++;
	}
	if (n == 0) {
		rev--;
		return;
	}
	memset(&msg, 0, sizeof(msg));
	msg.events = ev;
	msg.nevents = n;
	for (k = 0; trace && k < n; k++) {
		fprintf(stderr, "revision %lld: %s ", (long long)rev,
		    ev[k].type == ETCD_EVENT_PUT ? "put" : "delete");
		show(ev[k].kv.key, ev[k].kv.key_len);
		fprintf(stderr, " (%zu bytes)\n", ev[k].kv.value_len);
	}
	if (deliver(c, &msg))
		check(c);
	/* An import committed or given up: its slot's next one is new. */
	for (k = 0; k < n; k++) {
		const char *ik = ev[k].kv.key + strlen(PREFIX);
		size_t il = ev[k].kv.key_len - strlen(PREFIX);

		if (il > 9 && memcmp(ik, "imports/i", 9) == 0 && ik[9] >= '0' &&
		    ik[9] <= '2' &&
		    (ev[k].type == ETCD_EVENT_DELETE ||
			memmem(ev[k].kv.value, ev[k].kv.value_len, "committed",
			    9) != NULL))
			gen[ik[9] - '0']++;
	}
	/* The replaced pairs, and the keys the txn deleted. */
	for (k = 0; k < n; k++)
		if (ev[k].type == ETCD_EVENT_PUT && ev[k].prev_kv != NULL) {
			free(prev[k].key);
			free(prev[k].value);
		}
	for (i = 0; i < nmodel;) {
		if (model[i].mod != -1) {
			i++;
			continue;
		}
		free(model[i].key);
		free(model[i].val);
		model[i] = model[--nmodel];
	}
}

/*
 * The input is a script, one step after another until it ends:
 *   0-3  a txn of one event;  4  a txn of 1 + (next byte % 4) events
 *   5    a progress notification;  6  a resync, in pages of 1 + (next % 8)
 *   7    etcd compacted past the watch: the mirror resyncs
 * An event: a byte (% 4 == 0 with keys in etcd: a delete of the key the
 * next byte picks), else a put: make_key, make_value, then a byte whose
 * low bit gives the key a lease.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct etcd_watch_msg msg;
	struct cluster *c;
	char path[128], err[512];
	uint64_t events;
	size_t i;
	uint8_t op;

	if ((fz.base = event_base_new()) == NULL ||
	    (fz.fetch = fetch_new(fz.base)) == NULL)
		abort();
	snprintf(path, sizeof(path), "%s/state", scratch);
	if ((fz.store = store_open(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	if ((c = cluster_new(&fz, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	nmodel = 0;
	rev = 1;
	memset(gen, 0, sizeof(gen));
	resync(c, 1);
	while (in.n > 0) {
		op = u8(&in);
		switch (op % 8) {
		case 0:
		case 1:
		case 2:
		case 3:
			txn(c, &in, 1);
			break;
		case 4:
			txn(c, &in, 1 + u8(&in) % MAXTXN);
			break;
		case 5: /* a progress notification */
			memset(&msg, 0, sizeof(msg));
			if (deliver(c, &msg))
				check(c);
			break;
		case 6:
			resync(c, 1 + u8(&in) % 8);
			check(c);
			break;
		case 7: /* etcd compacted past the watch: a resync */
			if (c->watch == NULL)
				break;
			memset(&msg, 0, sizeof(msg));
			etcd_watch_cancel(c->watch);
			msg.err = ETCD_ECOMPACTED;
			msg.error = "compacted";
			msg.compact_revision = rev;
			cluster_watch_cb(&msg, c);
			resync(c, 8);
			check(c);
			break;
		}
	}
	/* What the events built, a resync builds from the same keys. */
	events = store_digest(c->st);
	if (c->watch != NULL) {
		resync(c, 3);
		if (store_digest(c->st) != events)
			__builtin_trap();
		check(c);
	}
	cluster_free(c);
	store_free(fz.store);
	fz.store = NULL;
	fetch_free(fz.fetch);
	fz.fetch = NULL;
	event_base_free(fz.base);
	fz.base = NULL;
	for (i = 0; i < nmodel; i++) {
		free(model[i].key);
		free(model[i].val);
	}
	nmodel = 0;
	snprintf(path, sizeof(path), "%s/state/data.mdb", scratch);
	if (unlink(path) == -1)
		abort();
	snprintf(path, sizeof(path), "%s/state/lock.mdb", scratch);
	(void)unlink(path);
	return 0;
}
