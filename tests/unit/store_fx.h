/*
 * floe: store_fx.h -- the fixture shared by test_store.c and
 * test_store_import.c: setup/teardown of a store in a fresh directory,
 * the clock they start from, and the helpers both call.
 */
#ifndef FLOE_TESTS_STORE_FX_H
#define FLOE_TESTS_STORE_FX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "routing/store.h"

#define T0 1700000000123LL

/* Sequence numbers seen by count_event_cb. */
struct count {
	uint64_t seqs[16];
	size_t n;
};

/* Set up a store in a fresh directory. */
int setup(void **state);
/* Close the store and remove its directory. */
int teardown(void **state);
/* store_wave_update_cb setting the state to *ARG. */
int set_state_cb(struct store_wave *w, json_t *event, bool *record, void *arg);
/* Put a raw value into the closed store in DIR. */
void raw_put(const char *dir, const char *name, const void *key, size_t keylen,
    const void *val, size_t vallen);
/* store_event_cb recording sequence numbers into the struct count ARG. */
int count_event_cb(uint64_t seq, const char *json, size_t len, void *arg);

#endif
