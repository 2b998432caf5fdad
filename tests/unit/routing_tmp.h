/*
 * floe: routing_tmp.h -- helpers shared by the routing unit tests: a private
 * state directory per test, removed afterwards, and an event collector.
 * Header-only (static inline) so each test links only its own module.
 */
#ifndef FLOE_TESTS_ROUTING_TMP_H
#define FLOE_TESTS_ROUTING_TMP_H

#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <lmdb.h>

#include "routing/store.h"

/* Remove one entry found by nftw. */
static inline int
routing_tmp_rm_cb(const char *path, const struct stat *sb, int flag,
    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Make a fresh directory under TMPDIR into BUF; 0 or -1. */
static inline int
routing_tmp_mkdir(char *buf, size_t len)
{
	const char *base = getenv("TMPDIR");

	if (base == NULL || *base == '\0')
		base = "/tmp";
	if ((size_t)snprintf(buf, len, "%s/floe-routing-XXXXXX", base) >= len)
		return -1;
	return mkdtemp(buf) == NULL ? -1 : 0;
}

/* Remove DIR and everything below it. */
static inline int
routing_tmp_rmdir(const char *dir)
{
	return nftw(dir, routing_tmp_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* A store in its own temporary directory. */
struct routing_tmp {
	char dir[256];
	struct store *store;
};

/* Create a temporary directory and open a store in it; NULL on failure. */
static inline struct routing_tmp *
routing_tmp_open(void)
{
	struct routing_tmp *t = calloc(1, sizeof(*t));
	char err[512];

	if (t == NULL)
		return NULL;
	if (routing_tmp_mkdir(t->dir, sizeof(t->dir)) == -1) {
		free(t);
		return NULL;
	}
	if ((t->store = store_open(t->dir, err, sizeof(err))) == NULL) {
		fprintf(stderr, "store_open: %s\n", err);
		routing_tmp_rmdir(t->dir);
		free(t);
		return NULL;
	}
	return t;
}

/* Close the store and remove its directory. */
static inline void
routing_tmp_close(struct routing_tmp *t)
{
	if (t == NULL)
		return;
	store_free(t->store);
	routing_tmp_rmdir(t->dir);
	free(t);
}

/* store_event_cb appending each event, parsed, to the JSON array ARG. */
static inline int
routing_tmp_event_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	json_t *all = arg, *ev;
	json_error_t jerr;

	ev = json_loadb(json, len, 0, &jerr);
	if (ev == NULL)
		ev = json_string("unparsable");
	json_object_set_new(ev, "_key", json_integer((json_int_t)seq));
	json_array_append_new(all, ev);
	return 0;
}

/* All events after AFTER, parsed. Caller decrefs. */
static inline json_t *
routing_tmp_events(struct store *s, uint64_t after)
{
	json_t *all = json_array();

	if (store_event_foreach(s, after, 0, routing_tmp_event_cb, all) != 0) {
		json_decref(all);
		return NULL;
	}
	return all;
}

/*
 * Put a raw value into DBI NAME of the store in DIR, as an older or a newer
 * floe (or a damaged disk) would have left it. The store must be closed
 * meanwhile: LMDB forbids opening one environment twice in a process.
 * 0 or an LMDB code.
 */
static inline int
routing_tmp_raw_put(const char *dir, const char *name, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { keylen, (void *)(uintptr_t)key };
	MDB_val v = { vallen, (void *)(uintptr_t)val };
	int rc;

	if ((rc = mdb_env_create(&env)) != 0)
		return rc;
	if ((rc = mdb_env_set_maxdbs(env, 5)) != 0 ||
	    (rc = mdb_env_open(env, dir, MDB_NOTLS, 0600)) != 0 ||
	    (rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0) {
		mdb_env_close(env);
		return rc;
	}
	if ((rc = mdb_dbi_open(txn, name, 0, &dbi)) != 0 ||
	    (rc = mdb_put(txn, dbi, &k, &v, 0)) != 0) {
		mdb_txn_abort(txn);
		mdb_env_close(env);
		return rc;
	}
	rc = mdb_txn_commit(txn);
	mdb_env_close(env);
	return rc;
}

/* store_wave_update_cb forcing the state and pct in ARG (two bytes). */
static inline int
routing_tmp_force_cb(struct store_wave *w, json_t *event, bool *record,
    void *arg)
{
	const uint8_t *sp = arg;

	(void)event;
	(void)record;
	w->state = sp[0];
	w->pct = sp[1];
	return STORE_OK;
}

/* Set wave N of S to STATE/PCT directly, bypassing the lifecycle rules. */
static inline int
routing_tmp_force_wave(struct store *s, uint32_t n, uint8_t state, uint8_t pct,
    int64_t now)
{
	uint8_t sp[2] = { state, pct };

	return store_wave_update(s, n, now, routing_tmp_force_cb, sp, NULL);
}

#endif
