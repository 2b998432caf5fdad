/*
 * floe: wave.h -- the wave lifecycle: states and one function per
 * transition, each one store_wave_update (one synced txn plus its event).
 * Owns no state of its own; callers pass the store and now.
 */
#ifndef FLOE_ROUTING_WAVE_H
#define FLOE_ROUTING_WAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

enum wave_state {
	WAVE_WAREHOUSE = 0,
	WAVE_CANARY = 1,
	WAVE_LAKEHOUSE = 2,
	WAVE_ROLLED_BACK = 3,
	WAVE_FROZEN = 4,
	WAVE_RETIRED = 5,
};
#define WAVE_NSTATES 6
#define WAVE_MAX 2147483647u

enum wave_rc {
	WAVE_OK = 0,
	WAVE_REFUSED = 1, /* the transition is not allowed now: see MSG */
	WAVE_ERROR = -1,  /* the store failed */
};

const char *wave_state_name(enum wave_state);
/* -1 if NAME is not a state. */
int wave_state_parse(const char *name);
/* Parse a wave number "0".."2147483647". 0 or -1. */
int wave_parse(const char *, uint32_t *);

/*
 * Transitions. ACTOR is "floe" or the operator ("uid 1000"); REASON may be
 * NULL. On WAVE_REFUSED, MSG says why in one sentence for the operator.
 */
int wave_flip(struct store *, uint32_t n, enum wave_state to, unsigned pct,
    const char *actor, const char *reason, int64_t now_ms, char *msg,
    size_t msglen);
int wave_rollback(struct store *, uint32_t n, const char *actor,
    const char *reason, bool force_stale, int64_t now_ms, char *msg,
    size_t msglen);
int wave_ack(struct store *, uint32_t n, const char *actor, int64_t now_ms,
    char *msg, size_t msglen);

#endif
