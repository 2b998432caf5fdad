/*
 * floe: test_store_mirror.c -- the flag store's mirror txns (cluster
 * mode): the last sequence after an event numbered past the applied
 * revision (a rollback pending for etcd), never going back except by a
 * resync; rollback log lines kept in a mirror txn, committed with it or
 * not at all; a record's sequence as a mirror txn has it. The fixture is
 * in store_fx.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "routing/store.h"
#include "routing/store_impl.h"
#include "tests/unit/routing_tmp.h"
#include "tests/unit/store_fx.h"

static const char EV[] = "{\"type\":\"wave.rollback\"}";

/* Commit one mirror txn at REV, with an event at EVREV (0: none). */
static void
mirror(struct store *s, int64_t rev, int64_t evrev, bool reset)
{
	struct store_mirror *m = store_mirror_begin(s);

	assert_non_null(m);
	if (reset)
		assert_int_equal(store_mirror_reset(m), STORE_OK);
	if (evrev != 0)
		assert_int_equal(store_mirror_put(m, STORE_DB_EVENTS, NULL, 0,
				     EV, sizeof(EV) - 1, evrev),
		    STORE_OK);
	assert_int_equal(store_mirror_commit(m, rev, 7), STORE_OK);
}

/* The last sequence follows the highest event; only a resync lowers it. */
static void
test_mirror_seq(void **state)
{
	struct routing_tmp *t = *state;
	struct count c = { .n = 0 };
	uint64_t seq;
	int64_t rev;
	uint64_t cid;

	mirror(t->store, 5, 5, false);
	assert_int_equal(store_last_seq(t->store), 5);
	/* A pending rollback's event, past the revision applied. */
	mirror(t->store, 5, 6, false);
	assert_int_equal(store_last_seq(t->store), 6);
	assert_int_equal(store_seq_read(t->store, &seq), STORE_OK);
	assert_int_equal(seq, 6);
	assert_int_equal(store_mirror_state(t->store, &rev, &cid), STORE_OK);
	assert_int_equal(rev, 5);
	assert_int_equal(cid, 7);
	/* etcd's next revision below it: the sequence stays. */
	mirror(t->store, 5, 0, false);
	assert_int_equal(store_last_seq(t->store), 6);
	mirror(t->store, 9, 9, false);
	assert_int_equal(store_last_seq(t->store), 9);
	assert_true(
	    store_event_foreach(t->store, 0, 0, count_event_cb, &c) >= 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.seqs[0], 5);
	assert_int_equal(c.seqs[1], 6);
	assert_int_equal(c.seqs[2], 9);
	/* A resync (another etcd cluster) numbers anew. */
	mirror(t->store, 3, 3, true);
	assert_int_equal(store_last_seq(t->store), 3);
	assert_int_equal(store_seq_read(t->store, &seq), STORE_OK);
	assert_int_equal(seq, 3);
}

/*
 * store_mirror_seq, what the mirror's running hash is kept from: a route's
 * or a wave's sequence as the txn has it, none for a value that is not a
 * record, after a delete, or in another database.
 */
static void
test_mirror_record_seq(void **state)
{
	struct routing_tmp *t = *state;
	struct store_mirror *m;
	struct store_route r = { .wave = 2 };
	struct store_wave w = { .state = 0 };
	struct store_enc re, we;
	unsigned char wk[4];
	uint64_t seq = 0;

	store_route_encode(&r, &re);
	store_wave_encode(&w, &we);
	store_wave_key(3, wk);
	m = store_mirror_begin(t->store);
	assert_non_null(m);
	assert_int_equal(store_mirror_seq(m, STORE_DB_OBJECTS, "db.t", 4, &seq),
	    STORE_NOTFOUND);
	assert_int_equal(store_mirror_put(m, STORE_DB_OBJECTS, "db.t", 4,
			     re.buf, re.len, 12),
	    STORE_OK);
	assert_int_equal(store_mirror_put(m, STORE_DB_WAVES, wk, 4, we.buf,
			     we.len, 13),
	    STORE_OK);
	assert_int_equal(store_mirror_seq(m, STORE_DB_OBJECTS, "db.t", 4, &seq),
	    STORE_OK);
	assert_int_equal(seq, 12);
	assert_int_equal(store_mirror_seq(m, STORE_DB_WAVES, wk, 4, &seq),
	    STORE_OK);
	assert_int_equal(seq, 13);
	/* Not a record: not put, the route before it stays. */
	assert_int_equal(store_mirror_put(m, STORE_DB_OBJECTS, "db.t", 4, "", 0,
			     14),
	    STORE_NOTFOUND);
	assert_int_equal(store_mirror_seq(m, STORE_DB_OBJECTS, "db.t", 4, &seq),
	    STORE_OK);
	assert_int_equal(seq, 12);
	assert_int_equal(store_mirror_seq(m, STORE_DB_LEDGER, "db.t", 4, &seq),
	    STORE_NOTFOUND);
	assert_int_equal(store_mirror_del(m, STORE_DB_OBJECTS, "db.t", 4),
	    STORE_OK);
	assert_int_equal(store_mirror_seq(m, STORE_DB_OBJECTS, "db.t", 4, &seq),
	    STORE_NOTFOUND);
	assert_int_equal(store_mirror_commit(m, 14, 7), STORE_OK);
}

/* Rollback log lines in a mirror txn: with its commit, or not at all. */
static void
test_mirror_rlog(void **state)
{
	struct routing_tmp *t = *state;
	struct store_mirror *m;
	uint64_t id;
	char *line;
	size_t len, n;

	m = store_mirror_begin(t->store);
	assert_non_null(m);
	assert_int_equal(store_mirror_rlog(m, "{\"a\":1}", 7), STORE_OK);
	store_mirror_abort(m);
	assert_int_equal(store_rlog_first(t->store, &id, &line, &len),
	    STORE_NOTFOUND);

	assert_int_equal(store_rlog_put(t->store, "{\"z\":0}", 7, &id),
	    STORE_OK);
	assert_int_equal(id, 1);
	m = store_mirror_begin(t->store);
	assert_non_null(m);
	assert_int_equal(store_mirror_rlog(m, "{\"a\":1}", 7), STORE_OK);
	assert_int_equal(store_mirror_rlog(m, "{\"b\":2}", 7), STORE_OK);
	assert_int_equal(store_mirror_commit(m, 4, 7), STORE_OK);
	assert_int_equal(store_rlog_count(t->store, &n), STORE_OK);
	assert_int_equal(n, 3);
	/* In order, after the line already pending. */
	assert_int_equal(store_rlog_del(t->store, 1), STORE_OK);
	assert_int_equal(store_rlog_first(t->store, &id, &line, &len),
	    STORE_OK);
	assert_int_equal(id, 2);
	assert_int_equal(len, 7);
	assert_memory_equal(line, "{\"a\":1}", 7);
	free(line);
	assert_int_equal(store_rlog_del(t->store, 2), STORE_OK);
	assert_int_equal(store_rlog_first(t->store, &id, &line, &len),
	    STORE_OK);
	assert_int_equal(id, 3);
	assert_memory_equal(line, "{\"b\":2}", 7);
	free(line);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mirror_seq, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_mirror_rlog, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_mirror_record_seq, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
