/*
 * floe: admin_fx.h -- the fixture, helpers and stand-ins that test_admin.c
 * and test_admin_jobs.c share (admin_fx.c).
 */
#ifndef FLOE_TESTS_UNIT_ADMIN_FX_H
#define FLOE_TESTS_UNIT_ADMIN_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "proxy/admin.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/stats.h"
#include "proxy/watch.h"
#include "proxy/worker.h"
#include "routing/store.h"
#include "routing/wave.h"
#include "tests/unit/routing_tmp.h"

#define UID 1000

/* A floe with only its store: what admin.c uses. */
struct fixture {
	struct routing_tmp *tmp;
	struct floe f;
	struct conf conf; /* [policy] and rollback_log are read */
	char rlog_path[320];
};
/* Test doubles of the triggers (proxy/watch.c runs on a live floe). */
struct watch_calls {
	int baselines;
	int ledger_calls;
	size_t ledger_records;
	json_t *fired; /* what the next watch_fired_take gives */
};
extern struct watch_calls watch_calls;

/* Later answers of the worker test. */
struct later {
	struct event_base *base;
	int calls;
	int status;
	json_t *body;
	bool moved; /* the body came as an evbuffer (a large read's) */
};

int setup(void **state);
int teardown(void **state);
int call(struct fixture *fx, const char *method, const char *target,
    const char *body, json_t **out);
json_t *expect(struct fixture *fx, int status, const char *method,
    const char *target, const char *body);
const char *str(const json_t *j, const char *key);
json_int_t num(const json_t *j, const char *key);
char *raw(struct fixture *fx, const char *method, const char *target);
json_t *rollbacks(struct fixture *fx, unsigned after);
size_t rollback_lines(struct fixture *fx);
char *snapshot(struct fixture *fx);
void assert_refused(struct fixture *fx, const char *before, uint64_t seq,
    const char *type);
void route_set(struct fixture *fx, const char *object, unsigned wave);
void force_state(struct fixture *fx, uint32_t n, int state);
json_t *events_since(struct fixture *fx, uint64_t seq);
void later_cb(struct admin_reply *rep, void *arg);
void later_call(struct fixture *fx, struct later *l, const char *target,
    const char *body, int status);

#endif
