/*
 * floe: store_fx.c -- the fixture the flag store tests share: a store in
 * a fresh directory per test, and the helpers both halves call.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <lmdb.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "routing/store.h"
#include "tests/unit/routing_tmp.h"
#include "tests/unit/store_fx.h"

/* Set up a store in a fresh directory. */
int
setup(void **state)
{
	struct routing_tmp *t = routing_tmp_open();

	if (t == NULL)
		return -1;
	*state = t;
	return 0;
}

/* Close the store and remove its directory. */
int
teardown(void **state)
{
	routing_tmp_close(*state);
	return 0;
}

/* store_wave_update_cb setting the state to *ARG. */
int
set_state_cb(struct store_wave *w, json_t *event, bool *record, void *arg)
{
	(void)event;
	(void)record;
	w->state = *(uint8_t *)arg;
	return STORE_OK;
}

/* Put a raw value into the closed store in DIR. */
void
raw_put(const char *dir, const char *name, const void *key, size_t keylen,
    const void *val, size_t vallen)
{
	assert_int_equal(routing_tmp_raw_put(dir, name, key, keylen, val,
			     vallen),
	    0);
}

/* store_event_cb recording sequence numbers. */
int
count_event_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	struct count *c = arg;

	assert_int_equal(strlen(json), len);
	c->seqs[c->n++] = seq;
	return 0;
}
