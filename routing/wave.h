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
struct store_wave;
typedef struct json_t json_t;

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

/* store_wave.flags */
#define WAVE_F_NO_COUNT_CHECK 0x01 /* the metadata count check is off */

enum wave_rc {
	WAVE_OK = 0,
	WAVE_REFUSED = 1, /* the transition is not allowed now: see MSG */
	WAVE_ERROR = -1, /* the store failed */
};

const char *wave_state_name(enum wave_state);
/* -1 if NAME is not a state. */
int wave_state_parse(const char *name);
/* Parse a wave number "0".."2147483647". 0 or -1. */
int wave_parse(const char *, uint32_t *);

/*
 * A gate's verdict for one transition. The gates live in policy/gate.h,
 * which routing does not call: the caller reads the wave (its record with
 * event sequence SEQ), gathers the ledger, asks the gate and hands the
 * verdict here. Inside the transition's txn wave.c checks that the wave is
 * still that record (else it refuses: the wave changed meanwhile) and
 * whether the gate applies to the move at all (lowering a canary share
 * does not need it). Borrowed for the call.
 */
struct wave_gate {
	bool pass;
	uint64_t seq; /* the wave record the verdict was computed on */
	const char *msg; /* the verdict in one sentence */
	json_t *evidence; /* per-object evidence, copied into the event */
};

/* Per-wave cutover gate overrides (wave_set). */
struct wave_overrides {
	bool set_min_clean;
	uint32_t min_clean; /* 0: back to the policy's */
	bool set_window;
	int64_t window_ms; /* 0: back to the policy's */
	bool set_count_check;
	bool count_check; /* the metadata count check (on by default) */
};

/*
 * The wave's warehouse reads over error_window as it leaves the
 * warehouse: the error trigger's baseline, stored with the flip.
 */
struct wave_baseline {
	uint64_t requests;
	uint64_t errors;
};

/*
 * What a trigger measured when it rolled a wave back (wave_rollback_why),
 * copied into the event: the rollback log's trigger name and its values.
 * Borrowed for the call.
 */
struct wave_evidence {
	const char *trigger; /* "errors", "freshness", "reconcile" */
	json_t *measured; /* NULL: null */
	json_t *threshold; /* NULL: null */
};

/*
 * Transitions. ACTOR is "floe" or the operator ("uid 1000"); REASON may be
 * NULL. On WAVE_REFUSED, MSG says why in one sentence for the operator.
 *
 * wave_flip moves to the canary (PCT 1..99; 100 is the lakehouse) or the
 * lakehouse. GATE is the cutover gate's verdict; NULL means the policy has
 * the gate turned off (gate_min_clean = 0), which the event records.
 */
int wave_flip(struct store *, uint32_t n, enum wave_state to, unsigned pct,
    const struct wave_gate *gate, const char *actor, const char *reason,
    int64_t now_ms, char *msg, size_t msglen);
/*
 * wave_flip with the error baseline BASE (may be NULL: none), stored in
 * the wave record and the event when the wave leaves the warehouse; a
 * raise of a canary keeps the baseline of the first move.
 */
int wave_flip_base(struct store *, uint32_t n, enum wave_state to, unsigned pct,
    const struct wave_gate *gate, const struct wave_baseline *,
    const char *actor, const char *reason, int64_t now_ms, char *msg,
    size_t msglen);
int wave_rollback(struct store *, uint32_t n, const char *actor,
    const char *reason, bool force_stale, int64_t now_ms, char *msg,
    size_t msglen);
/* wave_rollback by a trigger: its evidence EV goes into the event. */
int wave_rollback_why(struct store *, uint32_t n, const struct wave_evidence *,
    const char *actor, const char *reason, bool force_stale, int64_t now_ms,
    char *msg, size_t msglen);
/*
 * The rollback log line of a rollback from state FROM (enum wave_state),
 * built while the rollback's txn is open: a C string without newline
 * (caller frees), or NULL (out of memory: the rollback goes on unlogged).
 */
typedef char *(*wave_line_fn)(int from, void *arg);
/*
 * wave_rollback_why, with the line LINE(from, ARG) kept pending for the
 * rollback log in the rollback's own txn: one synced commit for both.
 */
int wave_rollback_line(struct store *, uint32_t n, const struct wave_evidence *,
    const char *actor, const char *reason, bool force_stale, int64_t now_ms,
    wave_line_fn line, void *arg, char *msg, size_t msglen);
int wave_ack(struct store *, uint32_t n, const char *actor, int64_t now_ms,
    char *msg, size_t msglen);
/* Record BY's sign-off of a canary or lakehouse wave (decommission gate). */
int wave_signoff(struct store *, uint32_t n, const char *by, const char *actor,
    int64_t now_ms, char *msg, size_t msglen);
/*
 * Freeze a lakehouse wave: GATE (required) is the decommission gate's
 * verdict. Writes to the warehouse copy are refused from now on and the
 * grace period of GRACE_MS starts.
 */
int wave_freeze(struct store *, uint32_t n, const struct wave_gate *gate,
    uint64_t grace_ms, const char *actor, const char *reason, int64_t now_ms,
    char *msg, size_t msglen);
/*
 * Retire a frozen wave once its grace period is over (wave_grace_ends)
 * without a rollback since the freeze. Final. Its event carries "frozen"
 * and "grace_ends".
 */
int wave_retire(struct store *, uint32_t n, uint64_t grace_ms,
    const char *actor, int64_t now_ms, char *msg, size_t msglen);
/*
 * When W's grace period ends with GRACE_MS configured now: the end
 * announced at its freeze, unless the grace has been lengthened since.
 */
int64_t wave_grace_ends(const struct store_wave *w, uint64_t grace_ms);
/*
 * The split-brain alarm of a frozen wave: its warehouse copy changed
 * after the freeze. wave_alarm raises it (refused if the wave is not
 * frozen or has one already; DETAIL, borrowed, goes into the event: the
 * object and the snapshots); wave_ack_alarm is an operator's
 * acknowledgement (refused without one). The state never changes.
 */
int wave_alarm(struct store *, uint32_t n, json_t *detail, int64_t now_ms,
    char *msg, size_t msglen);
int wave_ack_alarm(struct store *, uint32_t n, const char *actor,
    int64_t now_ms, char *msg, size_t msglen);
/*
 * A dry run: VERB tried on wave N as stored now, by the same rules, and
 * nothing written. WAVE_OK when it would be done (MSG says what it would
 * say), WAVE_REFUSED with MSG saying why not, WAVE_ERROR.
 */
enum wave_try_verb {
	WAVE_TRY_FLIP,
	WAVE_TRY_FREEZE,
	WAVE_TRY_RETIRE,
};
struct wave_try {
	enum wave_try_verb verb;
	enum wave_state to; /* flip */
	unsigned pct; /* flip */
	const struct wave_gate *gate; /* flip (NULL: off), freeze */
	uint64_t grace_ms; /* freeze, retire */
};
int wave_try(struct store *, uint32_t n, const struct wave_try *,
    int64_t now_ms, char *msg, size_t msglen);
/* Set or clear wave N's cutover gate overrides (any state but retired). */
int wave_set(struct store *, uint32_t n, const struct wave_overrides *,
    const char *actor, int64_t now_ms, char *msg, size_t msglen);

#endif
