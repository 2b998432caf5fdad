/*
 * floe: store.c -- the flag store on LMDB (STYLE.md section 10): one
 * environment, nine named databases opened once, the parked read txn that
 * brackets reads, write txns that adopt or grow the map, the sequence kept
 * in meta, and the store's health. Records are store_codec.c's, lookups
 * store_read.c's and changes store_write.c's.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "lib/log.h"
#include "lib/xmalloc.h"
#include "routing/store.h"
#include "routing/store_impl.h"

/*
 * 2: the bywave and counts DBIs (store_index.c); a store of schema 1 gets
 * them built when opened.
 */
#define STORE_SCHEMA 2
#define STORE_MAPSIZE ((size_t)1 << 30)
#define STORE_NDBS 9
#define STORE_MIGRATE_TRIES 8 /* doublings of the map for a migration */

static char STORE_META_SCHEMA[] = "schema";
static char STORE_META_SEQ[] = "seq";

static size_t store_mapsize = STORE_MAPSIZE;
static uint64_t store_serials; /* stores opened so far (store_serial) */

static int store_mkdirs(const char *, char *, size_t);

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
int
store_fail(struct store *s, const char *what, int rc)
{
	store_damaged(s, "%s: %s", what, store_strerror(s, rc));
	return STORE_ERROR;
}

/*
 * LMDB's text for RC, unless the disk is full: LMDB turns a short write
 * (the last bytes of a full disk) into EIO, "Input/output error", which
 * sends an operator looking for a broken disk. A failed write with less
 * than a page free on state_dir's filesystem is "disk full".
 */
const char *
store_strerror(const struct store *s, int rc)
{
	struct statvfs vfs;

	if (rc == ENOSPC || rc == EDQUOT)
		return log_strerror(rc);
	if (rc == EIO && s != NULL && s->dir != NULL &&
	    statvfs(s->dir, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < 65536)
		return log_strerror(ENOSPC);
	return mdb_strerror(rc);
}

const char *
store_last_error(const struct store *s)
{
	return s->healthy ? "" : s->err;
}

/*
 * The store failed. Logged once per outage, not per request: a damaged
 * record on the request path would otherwise flood the log.
 */
void
store_damaged(struct store *s, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	strlcpy(s->err, msg, sizeof(s->err));
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
void
store_ok(struct store *s)
{
	if (s->rdepth > 0)
		return; /* decided when the bracket ends */
	if (!s->healthy)
		log_info("flag store: reads and writes succeed again");
	s->healthy = true;
}

/* Read the last sequence from meta in TXN (0 if none yet). */
int
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

/* Put SEQ in meta in TXN as the last sequence. 0 or an LMDB code. */
int
store_meta_seq_put(MDB_txn *txn, MDB_dbi meta, uint64_t seq)
{
	MDB_val k = { sizeof(STORE_META_SEQ) - 1, STORE_META_SEQ };
	MDB_val v;
	struct store_enc enc;

	enc.len = 0;
	store_put_u64(&enc, seq);
	v = (MDB_val) { enc.len, enc.buf };
	return mdb_put(txn, meta, &k, &v, 0);
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
	uint64_t schema = 0;
	MDB_envinfo info;
	int rc, dead, tries = 0;
	const char *what;

	if (store_mkdirs(dir, err, errlen) == -1)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->dir = xstrdup(dir);
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

again:
	what = "mdb_txn_begin";
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		goto fail;
	what = "mdb_dbi_open";
	if ((rc = mdb_dbi_open(txn, "objects", MDB_CREATE, &s->objects)) != 0 ||
	    (rc = mdb_dbi_open(txn, "waves", MDB_CREATE, &s->waves)) != 0 ||
	    (rc = mdb_dbi_open(txn, "ledger", MDB_CREATE, &s->ledger)) != 0 ||
	    (rc = mdb_dbi_open(txn, "events", MDB_CREATE, &s->events)) != 0 ||
	    (rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &s->meta)) != 0 ||
	    (rc = mdb_dbi_open(txn, "rlog", MDB_CREATE, &s->rlog)) != 0 ||
	    (rc = mdb_dbi_open(txn, "readers", MDB_CREATE, &s->readers)) != 0 ||
	    (rc = mdb_dbi_open(txn, "bywave", MDB_CREATE | MDB_DUPSORT,
		 &s->bywave)) != 0 ||
	    (rc = mdb_dbi_open(txn, "counts", MDB_CREATE, &s->counts)) != 0)
		goto fail;

	k.mv_data = STORE_META_SCHEMA;
	k.mv_size = sizeof(STORE_META_SCHEMA) - 1;
	what = "schema";
	rc = mdb_get(txn, s->meta, &k, &v);
	if (rc == 0) {
		d = (struct store_dec) { v.mv_data, v.mv_size, 0 };
		schema = store_get_uint(&d, 4);
	} else if (rc != MDB_NOTFOUND)
		goto fail;
	if (schema < STORE_SCHEMA) {
		/* Older (or new): build what it lacks, then say it has it. */
		what = "building the by-wave index";
		if ((rc = store_index_build(s, txn)) == MDB_MAP_FULL &&
		    tries++ < STORE_MIGRATE_TRIES &&
		    mdb_env_info(s->env, &info) == 0) {
			mdb_txn_abort(txn);
			txn = NULL;
			if ((rc = mdb_env_set_mapsize(s->env,
				 info.me_mapsize * 2)) != 0)
				goto fail;
			goto again;
		}
		if (rc != 0)
			goto fail;
		if (schema > 0)
			log_info(
			    "store %s: schema %llu upgraded to %d (by-wave "
			    "index built)",
			    dir, (unsigned long long)schema, STORE_SCHEMA);
		ver[0] = STORE_SCHEMA;
		ver[1] = ver[2] = ver[3] = 0;
		v.mv_data = ver;
		v.mv_size = sizeof(ver);
		if ((rc = mdb_put(txn, s->meta, &k, &v, 0)) != 0)
			goto fail;
	} else if (schema > STORE_SCHEMA) {
		snprintf(err, errlen,
		    "%s: store schema %llu is newer than this floe's (%d)", dir,
		    (unsigned long long)schema, STORE_SCHEMA);
		mdb_txn_abort(txn);
		mdb_env_close(s->env);
		free(s->dir);
		free(s);
		return NULL;
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
	s->serial = ++store_serials;
	return s;

fail:
	snprintf(err, errlen, "%s: %s: %s", dir, what, store_strerror(s, rc));
	if (txn != NULL)
		mdb_txn_abort(txn);
	if (s->env != NULL)
		mdb_env_close(s->env);
	free(s->dir);
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
	free(s->dir);
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
int
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
void
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

/*
 * The last committed txn's id + 1, read from the meta pages (mdb_env_info
 * picks the newer of the two; a committer writes its meta page before it
 * returns, and before it publishes the id to new readers, so this is never
 * behind the snapshot a bracket begun afterwards reads). Inside a bracket,
 * the bracket's snapshot.
 */
uint64_t
store_snapshot(struct store *s)
{
	MDB_envinfo info;

	if (!s->healthy || s->cap != NULL)
		return 0;
	if (s->rdepth > 0)
		return (uint64_t)s->rgen; /* reads see the bracket's */
	if (mdb_env_info(s->env, &info) != 0)
		return 0;
	return (uint64_t)info.me_last_txnid + 1;
}

/* The snapshot of the open read bracket (0 outside one). */
uint64_t
store_read_snapshot(const struct store *s)
{
	return s->rdepth > 0 ? (uint64_t)s->rgen : 0;
}

/* This store's serial. */
uint64_t
store_serial(const struct store *s)
{
	return s->serial;
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
 * Double the map. Only between txns: the remap invalidates every pointer
 * into the map, so it is refused while a read bracket is open.
 */
int
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
int
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
