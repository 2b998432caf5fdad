/*
 * floe: store.c -- the flag store on LMDB (STYLE.md section 10): one
 * environment, five named databases opened once, a parked read txn for the
 * hot path and one synced write txn per change, which also appends the
 * change's event and bumps the sequence kept in meta.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <lmdb.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "routing/store.h"

#define STORE_SCHEMA 1
#define STORE_MAPSIZE ((size_t)1 << 30)
#define STORE_NDBS 5
#define STORE_GROW_TRIES 8 /* doublings of the map for one write */

/* Record format versions: the first byte of every value. */
#define STORE_ROUTE_V1 1
#define STORE_WAVE_V1 1
#define STORE_ROUTE_V1_LEN (1 + 4 + 8 + 8)
#define STORE_WAVE_V1_LEN                                                      \
	(1 + 4 + 1 + 1 + 1 + 8 + 8 + 8 + 8 + 8 + 4 + 8 + 3 * 2 + 256 + 64 +    \
	    64 + 8 + 8 + 8)
/* Entries of the wave brief cache (direct-mapped by wave number). */
#define STORE_WCACHE 64
#define STORE_RCACHE 1024 /* routes a snapshot remembers (a power of 2) */
#define STORE_RCACHE_KEY 80 /* longer keys are looked up every time */
/* Ledger keys end with 8 bytes of ts (routing/ledger.h). */
#define STORE_LEDGER_TS 8

static char STORE_META_SCHEMA[] = "schema";
static char STORE_META_SEQ[] = "seq";

static size_t store_mapsize = STORE_MAPSIZE;

struct store {
	MDB_env *env;
	MDB_dbi objects;
	MDB_dbi waves;
	MDB_dbi ledger;
	MDB_dbi events;
	MDB_dbi meta;
	MDB_txn *rtxn; /* the parked read txn, reset between uses */
	int rdepth; /* nesting of store_read_begin */
	bool rfailed; /* a read of the current bracket failed */
	bool healthy;
	uint64_t last_seq;
	/*
	 * The snapshot the parked read txn holds: its txn id + 1, so that 0
	 * tags an empty cache entry. LMDB gives every committed write txn a
	 * new id; an entry of the caches below is used only while its gen is
	 * the current one.
	 */
	size_t rgen;
	/* Wave briefs (see store_wave_brief). */
	struct store_wcache {
		size_t gen;
		uint32_t n;
		int rc; /* STORE_OK or STORE_NOTFOUND */
		struct store_wave_brief b;
	} wcache[STORE_WCACHE];
	/* Lookups in objects (see store_route_get). */
	struct store_rcache {
		size_t gen;
		uint16_t klen;
		int8_t rc; /* STORE_OK or STORE_NOTFOUND */
		struct store_route r;
		unsigned char key[STORE_RCACHE_KEY];
	} rcache[STORE_RCACHE];
};

/* A cursor over a record being decoded: reads past the end give zeros. */
struct store_dec {
	const unsigned char *p;
	size_t len;
	size_t off;
};

/* A growing buffer for encoding. */
struct store_enc {
	unsigned char buf[STORE_WAVE_V1_LEN];
	size_t len;
};

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
};

static int store_mkdirs(const char *, char *, size_t);
static void store_damaged(struct store *, const char *, ...)
    __attribute__((__format__(__printf__, 2, 3)));
static int store_fail(struct store *, const char *, int);
static void store_ok(struct store *);
static void store_put_u8(struct store_enc *, uint8_t);
static void store_put_u16(struct store_enc *, uint16_t);
static void store_put_u32(struct store_enc *, uint32_t);
static void store_put_u64(struct store_enc *, uint64_t);
static void store_put_str(struct store_enc *, const char *, size_t);
static uint64_t store_get_uint(struct store_dec *, size_t);
static void store_get_str(struct store_dec *, char *, size_t);
static void store_route_encode(const struct store_route *, struct store_enc *);
static int store_route_decode(const MDB_val *, struct store_route *);
static void store_wave_encode(const struct store_wave *, struct store_enc *);
static int store_wave_decode(const MDB_val *, struct store_wave *);
static void store_wave_key(uint32_t, unsigned char[4]);
static void store_seq_key(uint64_t, unsigned char[8]);
static int store_meta_seq(MDB_txn *, MDB_dbi, uint64_t *);
static int store_rbegin(struct store *);
static void store_rend(struct store *);
static int store_grow(struct store *);
static int store_txn_begin(struct store *, MDB_txn **);
static int store_write_txn(struct store *, struct store_write *, int *);
static int store_write(struct store *, struct store_write *);
static uint32_t store_wave_num(const unsigned char[4]);
static int store_import_states(struct store *, MDB_txn *,
    struct store_states *);
static int store_import_state(const struct store_states *, uint32_t);
static int store_event_put(struct store *, MDB_txn *, uint64_t, int64_t,
    json_t *);
static int store_ledger_put(struct store *, MDB_txn *, struct store_write *,
    int *);
static void store_ts_key(int64_t, unsigned char *);
static int store_route_in_cmp(const void *, const void *);
static int store_u32_cmp(const void *, const void *);
static int store_import_waves(json_t *, uint32_t *, size_t);
static int store_import_put(struct store *, MDB_txn *, struct store_write *,
    uint64_t, int *);

/* Create DIR and its parents with mode 0700 (mkdir -p). */
static int
store_mkdirs(const char *dir, char *err, size_t errlen)
{
	char path[PATH_MAX];
	char *p;

	if (strlcpy(path, dir, sizeof(path)) >= sizeof(path)) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	for (p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		if (*p == '/' && p[1] == '/')
			continue;
		{
			char c = *p;

			*p = '\0';
			if (mkdir(path, 0700) == -1 && errno != EEXIST) {
				snprintf(err, errlen, "mkdir %s: %s", path,
				    strerror(errno));
				return -1;
			}
			*p = c;
			if (c == '\0')
				break;
		}
	}
	return 0;
}

/* Note a failure of WHAT with LMDB code RC; returns STORE_ERROR. */
static int
store_fail(struct store *s, const char *what, int rc)
{
	store_damaged(s, "%s: %s", what, mdb_strerror(rc));
	return STORE_ERROR;
}

/*
 * The store failed. Logged once per outage, not per request: a damaged
 * record on the request path would otherwise flood the log.
 */
static void
store_damaged(struct store *s, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->healthy)
		log_warnx("flag store: %s; tables it decides are served by the "
			  "warehouse until it recovers",
		    msg);
	else
		log_debug("flag store: %s", msg);
	s->healthy = false;
	s->rfailed = true;
}

/*
 * Note a success: the store is healthy again. Reads count per bracket: a
 * resolution whose first read succeeds and second fails is a failure.
 */
static void
store_ok(struct store *s)
{
	if (s->rdepth > 0)
		return; /* decided when the bracket ends */
	if (!s->healthy)
		log_info("flag store: reads and writes succeed again");
	s->healthy = true;
}

/* Append one byte. */
static void
store_put_u8(struct store_enc *e, uint8_t v)
{
	e->buf[e->len++] = v;
}

/* Append V little-endian in 2 bytes. */
static void
store_put_u16(struct store_enc *e, uint16_t v)
{
	store_put_u8(e, v & 0xff);
	store_put_u8(e, v >> 8);
}

/* Append V little-endian in 4 bytes. */
static void
store_put_u32(struct store_enc *e, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		store_put_u8(e, (v >> (8 * i)) & 0xff);
}

/* Append V little-endian in 8 bytes. */
static void
store_put_u64(struct store_enc *e, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		store_put_u8(e, (v >> (8 * i)) & 0xff);
}

/*
 * Append a string field of capacity CAP: a 2-byte length, then CAP bytes
 * (the text, zero-padded). A fixed width keeps every later field at a
 * fixed offset, which is what lets older floes read newer records.
 */
static void
store_put_str(struct store_enc *e, const char *str, size_t cap)
{
	size_t n = strnlen(str, cap - 1);

	store_put_u16(e, (uint16_t)n);
	memcpy(e->buf + e->len, str, n);
	memset(e->buf + e->len + n, 0, cap - n);
	e->len += cap;
}

/* Read an unsigned little-endian field of WIDTH bytes; zero past the end. */
static uint64_t
store_get_uint(struct store_dec *d, size_t width)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < width; i++) {
		if (d->off + i < d->len)
			v |= (uint64_t)d->p[d->off + i] << (8 * i);
	}
	d->off += width;
	return v;
}

/* Read a string field written by store_put_str into BUF of CAP bytes. */
static void
store_get_str(struct store_dec *d, char *buf, size_t cap)
{
	size_t n = store_get_uint(d, 2), avail = 0;

	if (n > cap - 1)
		n = cap - 1;
	if (d->off < d->len)
		avail = d->len - d->off;
	if (n > avail)
		n = avail;
	memcpy(buf, d->p + (d->off < d->len ? d->off : 0), n);
	buf[n] = '\0';
	/* A NUL inside is a damaged record: keep what precedes it. */
	d->off += cap;
}

/* Encode R as a version 1 route record. */
static void
store_route_encode(const struct store_route *r, struct store_enc *e)
{
	e->len = 0;
	store_put_u8(e, STORE_ROUTE_V1);
	store_put_u32(e, r->wave);
	store_put_u64(e, r->seq);
	store_put_u64(e, (uint64_t)r->since_ms);
}

/*
 * Decode a route record of any version: missing fields (an older, shorter
 * record) read as zero and extra bytes (a newer floe) are ignored.
 */
static int
store_route_decode(const MDB_val *v, struct store_route *r)
{
	struct store_dec d = { v->mv_data, v->mv_size, 0 };

	if (v->mv_size < 1 || d.p[0] == 0)
		return -1;
	d.off = 1;
	memset(r, 0, sizeof(*r));
	r->wave = store_get_uint(&d, 4);
	r->seq = store_get_uint(&d, 8);
	r->since_ms = (int64_t)store_get_uint(&d, 8);
	return 0;
}

/* Encode W as a version 1 wave record. */
static void
store_wave_encode(const struct store_wave *w, struct store_enc *e)
{
	e->len = 0;
	store_put_u8(e, STORE_WAVE_V1);
	store_put_u32(e, w->n);
	store_put_u8(e, w->state);
	store_put_u8(e, w->pct);
	store_put_u8(e, w->flags);
	store_put_u64(e, w->seq);
	store_put_u64(e, (uint64_t)w->since_ms);
	store_put_u64(e, (uint64_t)w->flipped_ms);
	store_put_u64(e, (uint64_t)w->frozen_ms);
	store_put_u64(e, (uint64_t)w->rollback_ms);
	store_put_u32(e, w->gate_min_clean);
	store_put_u64(e, (uint64_t)w->gate_window_ms);
	store_put_str(e, w->reason, sizeof(w->reason));
	store_put_str(e, w->actor, sizeof(w->actor));
	store_put_str(e, w->signoff, sizeof(w->signoff));
	/* Added after the first release of the record: older ones read 0. */
	store_put_u64(e, (uint64_t)w->signoff_ms);
	store_put_u64(e, w->base_requests);
	store_put_u64(e, w->base_errors);
}

/* Decode a wave record of any version (see store_route_decode). */
static int
store_wave_decode(const MDB_val *v, struct store_wave *w)
{
	struct store_dec d = { v->mv_data, v->mv_size, 0 };

	if (v->mv_size < 1 || d.p[0] == 0)
		return -1;
	d.off = 1;
	memset(w, 0, sizeof(*w));
	w->n = store_get_uint(&d, 4);
	w->state = store_get_uint(&d, 1);
	w->pct = store_get_uint(&d, 1);
	w->flags = store_get_uint(&d, 1);
	w->seq = store_get_uint(&d, 8);
	w->since_ms = (int64_t)store_get_uint(&d, 8);
	w->flipped_ms = (int64_t)store_get_uint(&d, 8);
	w->frozen_ms = (int64_t)store_get_uint(&d, 8);
	w->rollback_ms = (int64_t)store_get_uint(&d, 8);
	w->gate_min_clean = store_get_uint(&d, 4);
	w->gate_window_ms = (int64_t)store_get_uint(&d, 8);
	store_get_str(&d, w->reason, sizeof(w->reason));
	store_get_str(&d, w->actor, sizeof(w->actor));
	store_get_str(&d, w->signoff, sizeof(w->signoff));
	w->signoff_ms = (int64_t)store_get_uint(&d, 8);
	w->base_requests = store_get_uint(&d, 8);
	w->base_errors = store_get_uint(&d, 8);
	return 0;
}

/* Wave keys are big-endian so that LMDB's byte order is numeric order. */
static void
store_wave_key(uint32_t n, unsigned char k[4])
{
	k[0] = n >> 24;
	k[1] = n >> 16;
	k[2] = n >> 8;
	k[3] = n;
}

/* The wave number of a 4-byte wave key. */
static uint32_t
store_wave_num(const unsigned char k[4])
{
	return (uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 |
	    (uint32_t)k[2] << 8 | k[3];
}

/* Event keys: the sequence, 8 bytes big-endian. */
static void
store_seq_key(uint64_t seq, unsigned char k[8])
{
	int i;

	for (i = 0; i < 8; i++)
		k[i] = seq >> (56 - 8 * i);
}

/* Read the last sequence from meta in TXN (0 if none yet). */
static int
store_meta_seq(MDB_txn *txn, MDB_dbi meta, uint64_t *seq)
{
	MDB_val k = { sizeof(STORE_META_SEQ) - 1, STORE_META_SEQ };
	MDB_val v;
	struct store_dec d;
	int rc;

	*seq = 0;
	if ((rc = mdb_get(txn, meta, &k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc != 0)
		return rc;
	d = (struct store_dec) { v.mv_data, v.mv_size, 0 };
	*seq = store_get_uint(&d, 8);
	return 0;
}

/* Set the initial map size for later opens. */
void
store_set_mapsize(size_t size)
{
	store_mapsize = size != 0 ? size : STORE_MAPSIZE;
}

/* Open (creating if needed) the store in DIR. */
struct store *
store_open(const char *dir, char *err, size_t errlen)
{
	struct store *s;
	MDB_txn *txn = NULL;
	MDB_val k, v;
	unsigned char ver[4];
	struct store_dec d;
	uint64_t schema;
	int rc, dead;
	const char *what;

	if (store_mkdirs(dir, err, errlen) == -1)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	what = "mdb_env_create";
	if ((rc = mdb_env_create(&s->env)) != 0)
		goto fail;
	what = "mdb_env_set_maxdbs";
	if ((rc = mdb_env_set_maxdbs(s->env, STORE_NDBS)) != 0)
		goto fail;
	what = "mdb_env_set_mapsize";
	if ((rc = mdb_env_set_mapsize(s->env, store_mapsize)) != 0)
		goto fail;
	what = "mdb_env_open";
	if ((rc = mdb_env_open(s->env, dir, MDB_NOTLS, 0600)) != 0)
		goto fail;
	/* Clear reader slots a killed floe left behind before anything. */
	what = "mdb_reader_check";
	if ((rc = mdb_reader_check(s->env, &dead)) != 0)
		goto fail;
	if (dead > 0)
		log_info("store %s: cleared %d stale reader slots", dir, dead);

	what = "mdb_txn_begin";
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		goto fail;
	what = "mdb_dbi_open";
	if ((rc = mdb_dbi_open(txn, "objects", MDB_CREATE, &s->objects)) != 0 ||
	    (rc = mdb_dbi_open(txn, "waves", MDB_CREATE, &s->waves)) != 0 ||
	    (rc = mdb_dbi_open(txn, "ledger", MDB_CREATE, &s->ledger)) != 0 ||
	    (rc = mdb_dbi_open(txn, "events", MDB_CREATE, &s->events)) != 0 ||
	    (rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &s->meta)) != 0)
		goto fail;

	k.mv_data = STORE_META_SCHEMA;
	k.mv_size = sizeof(STORE_META_SCHEMA) - 1;
	what = "schema";
	rc = mdb_get(txn, s->meta, &k, &v);
	if (rc == MDB_NOTFOUND) {
		ver[0] = STORE_SCHEMA;
		ver[1] = ver[2] = ver[3] = 0;
		v.mv_data = ver;
		v.mv_size = sizeof(ver);
		if ((rc = mdb_put(txn, s->meta, &k, &v, 0)) != 0)
			goto fail;
	} else if (rc != 0)
		goto fail;
	else {
		d = (struct store_dec) { v.mv_data, v.mv_size, 0 };
		if ((schema = store_get_uint(&d, 4)) > STORE_SCHEMA) {
			snprintf(err, errlen,
			    "%s: store schema %llu is newer than this floe's (%d)",
			    dir, (unsigned long long)schema, STORE_SCHEMA);
			mdb_txn_abort(txn);
			mdb_env_close(s->env);
			free(s);
			return NULL;
		}
	}
	what = "meta seq";
	if ((rc = store_meta_seq(txn, s->meta, &s->last_seq)) != 0)
		goto fail;
	what = "mdb_txn_commit";
	rc = mdb_txn_commit(txn);
	txn = NULL;
	if (rc != 0)
		goto fail;

	what = "read txn";
	if ((rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->rtxn)) != 0)
		goto fail;
	mdb_txn_reset(s->rtxn);
	s->healthy = true;
	return s;

fail:
	snprintf(err, errlen, "%s: %s: %s", dir, what, mdb_strerror(rc));
	if (txn != NULL)
		mdb_txn_abort(txn);
	if (s->env != NULL)
		mdb_env_close(s->env);
	free(s);
	return NULL;
}

/* Close the store. */
void
store_free(struct store *s)
{
	if (s == NULL)
		return;
	if (s->rtxn != NULL)
		mdb_txn_abort(s->rtxn);
	mdb_env_close(s->env);
	free(s);
}

/* Whether the last read or write worked. */
bool
store_is_healthy(const struct store *s)
{
	return s->healthy;
}

/* Clear reader slots of dead processes; they pin pages. */
void
store_maintain(struct store *s)
{
	int rc, dead = 0;

	if ((rc = mdb_reader_check(s->env, &dead)) != 0) {
		store_fail(s, "store_maintain: mdb_reader_check", rc);
		return;
	}
	if (dead > 0)
		log_info("store: cleared %d stale reader slots", dead);
}

/* Renew the parked read txn unless a bracket already holds it. */
static int
store_rbegin(struct store *s)
{
	int rc;

	if (s->rdepth++ > 0)
		return 0;
	s->rfailed = false;
	rc = mdb_txn_renew(s->rtxn);
	if (rc == MDB_MAP_RESIZED) {
		/* Another process grew the map: adopt its size. */
		(void)mdb_env_set_mapsize(s->env, 0);
		rc = mdb_txn_renew(s->rtxn);
	}
	if (rc != 0) {
		s->rdepth = 0;
		return store_fail(s, "store_read_begin: mdb_txn_renew", rc);
	}
	s->rgen = mdb_txn_id(s->rtxn) + 1;
	return 0;
}

/* Reset the parked read txn when the outermost bracket ends. */
static void
store_rend(struct store *s)
{
	if (s->rdepth == 0)
		return;
	if (--s->rdepth == 0) {
		mdb_txn_reset(s->rtxn);
		if (!s->rfailed)
			store_ok(s);
	}
}

/* Begin a batch of reads. */
int
store_read_begin(struct store *s)
{
	return store_rbegin(s) == 0 ? 0 : -1;
}

/* End a batch of reads. */
void
store_read_end(struct store *s)
{
	store_rend(s);
}

/*
 * KEY's slot in the route cache (FNV-1a), or NULL for a key too long to
 * be kept there.
 */
static struct store_rcache *
store_rcache_slot(struct store *s, const unsigned char *key, size_t keylen)
{
	uint32_t h = 2166136261u;
	size_t i;

	if (keylen > STORE_RCACHE_KEY)
		return NULL;
	for (i = 0; i < keylen; i++)
		h = (h ^ key[i]) * 16777619u;
	return &s->rcache[h & (STORE_RCACHE - 1)];
}

/*
 * Copy the assignment of KEY into R. The answer, found or not, is kept
 * for the snapshot it was read in (see struct store): the data path reads
 * a route from the map once per change, not once per request.
 */
int
store_route_get(struct store *s, const void *key, size_t keylen,
    struct store_route *r)
{
	MDB_val k = { keylen, (void *)(uintptr_t)key }, v;
	struct store_rcache *e;
	int rc;

	if (keylen == 0 || keylen > STORE_KEY_MAX)
		return STORE_NOTFOUND;
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	e = store_rcache_slot(s, key, keylen);
	if (e != NULL && e->gen == s->rgen && e->klen == keylen &&
	    memcmp(e->key, key, keylen) == 0) {
		*r = e->r;
		store_rend(s);
		return e->rc;
	}
	rc = mdb_get(s->rtxn, s->objects, &k, &v);
	if (rc == 0 && store_route_decode(&v, r) == -1) {
		store_damaged(s, "store_route_get: damaged record (%zu bytes)",
		    v.mv_size);
		rc = STORE_ERROR;
	} else if (rc == 0) {
		store_ok(s);
		rc = STORE_OK;
	} else if (rc == MDB_NOTFOUND) {
		store_ok(s);
		memset(r, 0, sizeof(*r));
		rc = STORE_NOTFOUND;
	} else
		rc = store_fail(s, "store_route_get", rc);
	if (e != NULL && rc != STORE_ERROR) {
		e->gen = s->rgen;
		e->klen = keylen;
		e->rc = rc;
		e->r = *r;
		memcpy(e->key, key, keylen);
	}
	store_rend(s);
	return rc;
}

/* Copy wave N into W. */
int
store_wave_get(struct store *s, uint32_t n, struct store_wave *w)
{
	unsigned char kb[4];
	MDB_val k = { sizeof(kb), kb }, v;
	int rc;

	store_wave_key(n, kb);
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	rc = mdb_get(s->rtxn, s->waves, &k, &v);
	if (rc == 0 && store_wave_decode(&v, w) == -1) {
		store_damaged(s, "store_wave_get: wave %u: damaged record", n);
		rc = STORE_ERROR;
	} else if (rc == 0) {
		w->n = n;
		store_ok(s);
		rc = STORE_OK;
	} else if (rc == MDB_NOTFOUND) {
		store_ok(s);
		rc = STORE_NOTFOUND;
	} else
		rc = store_fail(s, "store_wave_get", rc);
	store_rend(s);
	return rc;
}

/*
 * The routing fields of wave N, kept for the snapshot they were read in
 * (see struct store).
 */
int
store_wave_brief(struct store *s, uint32_t n, struct store_wave_brief *b)
{
	struct store_wcache *e;
	struct store_wave w;
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	e = &s->wcache[n % STORE_WCACHE];
	if (e->gen == s->rgen && e->n == n) {
		*b = e->b;
		store_rend(s);
		return e->rc;
	}
	rc = store_wave_get(s, n, &w);
	if (rc == STORE_OK) {
		b->state = w.state;
		b->pct = w.pct;
		b->seq = w.seq;
		b->since_ms = w.since_ms;
	} else
		memset(b, 0, sizeof(*b));
	if (rc != STORE_ERROR) {
		e->gen = s->rgen;
		e->n = n;
		e->rc = rc;
		e->b = *b;
	}
	store_rend(s);
	return rc;
}

/* Call CB for every assignment in key order. */
int
store_route_foreach(struct store *s, store_route_cb cb, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	unsigned char key[STORE_KEY_MAX];
	struct store_route r;
	size_t klen;
	int rc, op;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->objects, &c)) != 0) {
		store_rend(s);
		return store_fail(s, "store_route_foreach", rc);
	}
	for (op = MDB_FIRST; (rc = mdb_cursor_get(c, &k, &v, op)) == 0;
	     op = MDB_NEXT) {
		if (store_route_decode(&v, &r) == -1 ||
		    k.mv_size > sizeof(key)) {
			log_warnx("store_route_foreach: skipping a damaged "
				  "record");
			continue;
		}
		/* Copy out: the callback may read the store again. */
		klen = k.mv_size;
		memcpy(key, k.mv_data, klen);
		if (cb(key, klen, &r, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	mdb_cursor_close(c);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, "store_route_foreach", rc);
	store_ok(s);
	return STORE_OK;
}

/* Call CB for every wave record in numeric order. */
int
store_wave_foreach(struct store *s, store_wave_cb cb, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	struct store_wave w;
	int rc, op;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->waves, &c)) != 0) {
		store_rend(s);
		return store_fail(s, "store_wave_foreach", rc);
	}
	for (op = MDB_FIRST; (rc = mdb_cursor_get(c, &k, &v, op)) == 0;
	     op = MDB_NEXT) {
		if (k.mv_size != 4 || store_wave_decode(&v, &w) == -1) {
			log_warnx("store_wave_foreach: skipping a damaged "
				  "record");
			continue;
		}
		w.n = store_wave_num(k.mv_data);
		if (cb(&w, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	mdb_cursor_close(c);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, "store_wave_foreach", rc);
	store_ok(s);
	return STORE_OK;
}

/* Call CB for up to LIMIT events after sequence AFTER, oldest first. */
int
store_event_foreach(struct store *s, uint64_t after, size_t limit,
    store_event_cb cb, void *arg)
{
	MDB_cursor *c;
	MDB_val k, v;
	unsigned char kb[8];
	const unsigned char *p;
	uint64_t seq;
	size_t n = 0;
	char *json;
	int rc, op, i, stop;

	if (after == UINT64_MAX)
		return STORE_OK;
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->events, &c)) != 0) {
		store_rend(s);
		return store_fail(s, "store_event_foreach", rc);
	}
	store_seq_key(after + 1, kb);
	k.mv_data = kb;
	k.mv_size = sizeof(kb);
	for (op = MDB_SET_RANGE; (rc = mdb_cursor_get(c, &k, &v, op)) == 0;
	     op = MDB_NEXT) {
		if (limit != 0 && n >= limit) {
			rc = MDB_NOTFOUND;
			break;
		}
		if (k.mv_size != 8)
			continue;
		p = k.mv_data;
		for (seq = 0, i = 0; i < 8; i++)
			seq = seq << 8 | p[i];
		json = xmalloc(v.mv_size + 1);
		memcpy(json, v.mv_data, v.mv_size);
		json[v.mv_size] = '\0';
		stop = cb(seq, json, v.mv_size, arg);
		free(json);
		n++;
		if (stop != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	mdb_cursor_close(c);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, "store_event_foreach", rc);
	store_ok(s);
	return STORE_OK;
}

/* The sequence of the last committed event (cached from meta). */
uint64_t
store_last_seq(struct store *s)
{
	return s->last_seq;
}

void
store_seq_seen(struct store *s, uint64_t seq)
{
	if (seq > s->last_seq)
		s->last_seq = seq;
}

/* The sequence of the last committed event, by any process (from meta). */
int
store_seq_read(struct store *s, uint64_t *seq)
{
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	rc = store_meta_seq(s->rtxn, s->meta, seq);
	if (rc != 0)
		rc = store_fail(s, "store_seq_read", rc);
	store_rend(s);
	return rc == 0 ? STORE_OK : STORE_ERROR;
}

/*
 * Double the map. Only between txns: the remap invalidates every pointer
 * into the map, so it is refused while a read bracket is open.
 */
static int
store_grow(struct store *s)
{
	MDB_envinfo info;
	int rc;

	if (s->rdepth > 0) {
		log_warnx("store: map full inside a read batch; not growing");
		return -1;
	}
	if ((rc = mdb_env_info(s->env, &info)) != 0)
		return store_fail(s, "store: mdb_env_info", rc);
	if ((rc = mdb_env_set_mapsize(s->env, info.me_mapsize * 2)) != 0)
		return store_fail(s, "store: mdb_env_set_mapsize", rc);
	log_info("store: map full, grown from %zu to %zu bytes",
	    info.me_mapsize, info.me_mapsize * 2);
	return 0;
}

/* Begin a write txn, adopting a map grown by another process. */
static int
store_txn_begin(struct store *s, MDB_txn **txn)
{
	int rc;

	rc = mdb_txn_begin(s->env, NULL, 0, txn);
	if (rc == MDB_MAP_RESIZED) {
		(void)mdb_env_set_mapsize(s->env, 0);
		rc = mdb_txn_begin(s->env, NULL, 0, txn);
	}
	return rc;
}

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
	store_seq_key(seq, kb);
	v.mv_data = text;
	v.mv_size = strlen(text);
	rc = mdb_put(txn, s->events, &k, &v, MDB_APPEND);
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
	struct store_route r;
	struct store_wave wave;
	unsigned char kb[8];
	uint64_t seq;
	bool record = false;
	int rc;

	*res = STORE_OK;

	if ((rc = store_txn_begin(s, &txn)) != 0)
		return rc;
	if ((rc = store_meta_seq(txn, s->meta, &seq)) != 0)
		goto abort;
	seq++;

	switch (w->op) {
	case STORE_OP_ROUTE_PUT:
		memset(&r, 0, sizeof(r));
		r.wave = w->wave;
		r.seq = seq;
		r.since_ms = w->now_ms;
		store_route_encode(&r, &enc);
		k = (MDB_val) { w->keylen, (void *)(uintptr_t)w->key };
		v = (MDB_val) { enc.len, enc.buf };
		if ((rc = mdb_put(txn, s->objects, &k, &v, 0)) != 0)
			goto abort;
		break;
	case STORE_OP_ROUTE_DEL:
		k = (MDB_val) { w->keylen, (void *)(uintptr_t)w->key };
		if ((rc = mdb_del(txn, s->objects, &k, NULL)) == MDB_NOTFOUND) {
			mdb_txn_abort(txn);
			*res = STORE_NOTFOUND;
			return 0;
		}
		if (rc != 0)
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
			if ((rc = mdb_put(txn, s->waves, &k, &v, 0)) != 0)
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
	enc.len = 0;
	store_put_u64(&enc, seq);
	k = (MDB_val) { sizeof(STORE_META_SEQ) - 1, STORE_META_SEQ };
	v = (MDB_val) { enc.len, enc.buf };
	if ((rc = mdb_put(txn, s->meta, &k, &v, 0)) != 0)
		goto abort;
	/* Commit frees the txn even when it fails. */
	if ((rc = mdb_txn_commit(txn)) != 0)
		return rc;
	s->last_seq = seq;
	return 0;

abort:
	mdb_txn_abort(txn);
	return rc;
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
	};
	json_t *own = NULL;
	int rc, res, tries;

	if (w->event == NULL)
		w->event = own = json_pack("{s:s}", "type", names[w->op]);
	if (w->event == NULL || !json_is_object(w->event)) {
		store_damaged(s, "event is not a JSON object");
		return STORE_ERROR;
	}
	rc = store_write_txn(s, w, &res);
	/* A big import may need the map to double a few times. */
	for (tries = 0; rc == MDB_MAP_FULL && tries < STORE_GROW_TRIES &&
	     store_grow(s) == 0;
	     tries++)
		rc = store_write_txn(s, w, &res);
	if (rc != 0) {
		(void)json_object_del(w->event, "seq");
		(void)json_object_del(w->event, "ts");
		json_decref(own);
		store_damaged(s, "%s: %s", names[w->op], mdb_strerror(rc));
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

/* The 8-byte big-endian form of a ts. */
static void
store_ts_key(int64_t ts, unsigned char *k)
{
	int i;

	for (i = 0; i < STORE_LEDGER_TS; i++)
		k[i] = (uint64_t)ts >> (56 - 8 * i);
}

/* Records of one object in a time range, oldest first. */
int
store_ledger_foreach(struct store *s, const void *obj, size_t objlen,
    int64_t from_ms, int64_t to_ms, store_ledger_cb cb, void *arg)
{
	unsigned char kb[STORE_KEY_MAX];
	const unsigned char *p;
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t ts;
	int rc, op, i;

	if (objlen == 0 || objlen > STORE_KEY_MAX - STORE_LEDGER_TS)
		return STORE_OK;
	if (from_ms < 0)
		from_ms = 0;
	if (to_ms < from_ms)
		return STORE_OK;
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->ledger, &c)) != 0) {
		store_rend(s);
		return store_fail(s, "store_ledger_foreach", rc);
	}
	memcpy(kb, obj, objlen);
	store_ts_key(from_ms, kb + objlen);
	k = (MDB_val) { objlen + STORE_LEDGER_TS, kb };
	for (op = MDB_SET_RANGE; (rc = mdb_cursor_get(c, &k, &v, op)) == 0;
	     op = MDB_NEXT) {
		p = k.mv_data;
		/*
		 * Another object's key may share this one as a prefix; its
		 * next byte is a name byte or a separator (>= 0x1d), above
		 * the leading 0 of any ts, so it sorts after this range.
		 */
		if (k.mv_size != objlen + STORE_LEDGER_TS ||
		    memcmp(p, obj, objlen) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
		for (ts = 0, i = 0; i < STORE_LEDGER_TS; i++)
			ts = ts << 8 | p[objlen + (size_t)i];
		if ((int64_t)ts > to_ms) {
			rc = MDB_NOTFOUND;
			break;
		}
		if (cb((int64_t)ts, v.mv_data, v.mv_size, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
	}
	mdb_cursor_close(c);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, "store_ledger_foreach", rc);
	store_ok(s);
	return STORE_OK;
}

/* Each object with ledger records under PREFIX, once. */
int
store_ledger_objects(struct store *s, const void *prefix, size_t plen,
    store_ledger_obj_cb cb, void *arg)
{
	unsigned char kb[STORE_KEY_MAX + 1];
	MDB_cursor *c;
	MDB_val k, v;
	size_t olen;
	int rc, op;

	if (plen > STORE_KEY_MAX)
		return STORE_OK;
	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->ledger, &c)) != 0) {
		store_rend(s);
		return store_fail(s, "store_ledger_objects", rc);
	}
	memcpy(kb, prefix, plen);
	k = (MDB_val) { plen, kb };
	op = plen > 0 ? MDB_SET_RANGE : MDB_FIRST;
	while ((rc = mdb_cursor_get(c, &k, &v, op)) == 0) {
		if (k.mv_size <= STORE_LEDGER_TS ||
		    memcmp(k.mv_data, prefix, plen) != 0) {
			if (k.mv_size > STORE_LEDGER_TS) {
				rc = MDB_NOTFOUND;
				break;
			}
			op = MDB_NEXT;
			continue;
		}
		olen = k.mv_size - STORE_LEDGER_TS;
		/* Copy out: the callback may read the store again. */
		memcpy(kb, k.mv_data, olen);
		if (cb(kb, olen, arg) != 0) {
			rc = MDB_NOTFOUND;
			break;
		}
		/*
		 * Skip this object's other records. Every ts starts with a
		 * 0 byte (ts < 2^56), and a longer object's next byte is at
		 * least 0x1d, so OBJ + 0x01 lies between the two.
		 */
		kb[olen] = 0x01;
		k = (MDB_val) { olen + 1, kb };
		op = MDB_SET_RANGE;
	}
	mdb_cursor_close(c);
	store_rend(s);
	if (rc != MDB_NOTFOUND)
		return store_fail(s, "store_ledger_objects", rc);
	store_ok(s);
	return STORE_OK;
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

int
store_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int d = memcmp(a, b, alen < blen ? alen : blen);

	if (d != 0)
		return d;
	return alen < blen ? -1 : alen > blen;
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
		if ((rc = mdb_cursor_put(c, &k, &v, 0)) != 0)
			goto out;
		waves[ir->set++] = in->wave;
	}
	rc = 0;
	if (json_object_set_new(w->event, "set",
		json_integer((json_int_t)ir->set)) == -1 ||
	    json_object_set_new(w->event, "unchanged",
		json_integer((json_int_t)ir->unchanged)) == -1)
		rc = ENOMEM;
	else
		rc = store_import_waves(w->event, waves, ir->set);
out:
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
