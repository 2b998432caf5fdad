/*
 * floe: store_rlog.c -- the rollback log's pending lines (the rlog DBI):
 * a line is kept here before it is appended to the log and removed once
 * it is durable there, so a line the log could not take (a full disk, a
 * crash between the two) is retried until it lands, in order. Keys are
 * 8-byte big-endian numbers in the order the lines came; values are the
 * lines without their newline. Bookkeeping of the log, not a change of
 * floe's state: no event, no sequence.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "lib/xmalloc.h"
#include "routing/store.h"
#include "routing/store_impl.h"

#define STORE_RLOG_GROW_TRIES 4

static int store_rlog_put_txn(struct store *, const char *, size_t, uint64_t *);
static int store_rlog_del_txn(struct store *, uint64_t);

/*
 * Put LINE (LEN bytes) in TXN after the last pending line, its key in
 * *ID: alone (store_rlog_put) or in the txn of the rollback it tells
 * (store_wave_update_rlog). 0 or LMDB's code.
 */
int
store_rlog_put_in(struct store *s, MDB_txn *txn, const char *line, size_t len,
    uint64_t *id)
{
	MDB_cursor *c;
	MDB_val k, v;
	unsigned char kb[8];
	uint64_t next = 1;
	int rc;

	if ((rc = mdb_cursor_open(txn, s->rlog, &c)) != 0)
		return rc;
	rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	if (rc == 0 && k.mv_size == 8)
		next = store_be64_num(k.mv_data) + 1;
	mdb_cursor_close(c);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	store_be64_key(next, kb);
	k = (MDB_val) { sizeof(kb), kb };
	v = (MDB_val) { len, (void *)(uintptr_t)line };
	if ((rc = mdb_put(txn, s->rlog, &k, &v, MDB_APPEND)) != 0)
		return rc;
	*id = next;
	return 0;
}

/* One txn of store_rlog_put. 0 or LMDB's. */
static int
store_rlog_put_txn(struct store *s, const char *line, size_t len, uint64_t *id)
{
	MDB_txn *txn;
	uint64_t next;
	int rc;

	if ((rc = store_txn_begin(s, &txn)) != 0)
		return rc;
	if ((rc = store_rlog_put_in(s, txn, line, len, &next)) != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	if ((rc = mdb_txn_commit(txn)) != 0)
		return rc;
	*id = next;
	return 0;
}

/* Keep LINE (LEN bytes, no newline) as the last pending line. */
int
store_rlog_put(struct store *s, const char *line, size_t len, uint64_t *id)
{
	int rc, tries;

	rc = store_rlog_put_txn(s, line, len, id);
	for (tries = 0; rc == MDB_MAP_FULL && tries < STORE_RLOG_GROW_TRIES &&
	     store_grow(s) == 0;
	     tries++)
		rc = store_rlog_put_txn(s, line, len, id);
	if (rc != 0)
		return store_fail(s, "store_rlog_put", rc);
	store_ok(s);
	return STORE_OK;
}

/* One txn of store_rlog_del. 0, MDB_NOTFOUND or LMDB's code. */
static int
store_rlog_del_txn(struct store *s, uint64_t id)
{
	MDB_txn *txn;
	MDB_val k;
	unsigned char kb[8];
	int rc;

	if ((rc = store_txn_begin(s, &txn)) != 0)
		return rc;
	store_be64_key(id, kb);
	k = (MDB_val) { sizeof(kb), kb };
	if ((rc = mdb_del(txn, s->rlog, &k, NULL)) != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	return mdb_txn_commit(txn);
}

/* The line ID has landed: forget it. */
int
store_rlog_del(struct store *s, uint64_t id)
{
	int rc;

	if ((rc = store_rlog_del_txn(s, id)) == MDB_NOTFOUND)
		return STORE_NOTFOUND;
	if (rc != 0)
		return store_fail(s, "store_rlog_del", rc);
	store_ok(s);
	return STORE_OK;
}

/* The oldest pending line. */
int
store_rlog_first(struct store *s, uint64_t *id, char **line, size_t *len)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	if ((rc = mdb_cursor_open(s->rtxn, s->rlog, &c)) != 0) {
		store_rend(s);
		return store_fail(s, "store_rlog_first", rc);
	}
	rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	if (rc == 0 && k.mv_size == 8) {
		*id = store_be64_num(k.mv_data);
		*line = xmalloc(v.mv_size + 1);
		memcpy(*line, v.mv_data, v.mv_size);
		(*line)[v.mv_size] = '\0';
		*len = v.mv_size;
	} else if (rc == 0)
		rc = MDB_CORRUPTED;
	mdb_cursor_close(c);
	store_rend(s);
	if (rc == MDB_NOTFOUND)
		return STORE_NOTFOUND;
	if (rc != 0)
		return store_fail(s, "store_rlog_first", rc);
	return STORE_OK;
}

/* How many lines are pending: LMDB's count, no walk. */
int
store_rlog_count(struct store *s, size_t *n)
{
	MDB_stat st;
	int rc;

	if (store_rbegin(s) != 0)
		return STORE_ERROR;
	rc = mdb_stat(s->rtxn, s->rlog, &st);
	store_rend(s);
	if (rc != 0)
		return store_fail(s, "store_rlog_count", rc);
	*n = st.ms_entries;
	return STORE_OK;
}

/* The id of the last committed write txn: LMDB's. */
uint64_t
store_txnid(struct store *s)
{
	MDB_envinfo info;

	if (mdb_env_info(s->env, &info) != 0)
		return 0;
	return (uint64_t)info.me_last_txnid;
}
