/*
 * floe: gate.h -- the cutover and decommission gates over the reconcile
 * ledger. Pure: the caller gathers a wave's objects and their records
 * (routing/ledger.h) and passes them with *now*; the gate counts, judges
 * and explains. Owns nothing. The verdict goes to wave_flip/wave_freeze as
 * a struct wave_gate: routing never calls policy.
 */
#ifndef FLOE_POLICY_GATE_H
#define FLOE_POLICY_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routing/ledger.h"

typedef struct json_t json_t;

/* The numbers a wave is judged by. */
struct gate_params {
	uint32_t min_clean; /* cutover: clean records in the window; 0: off */
	int64_t window_ms; /* cutover: how far back */
	uint32_t decom_min_clean; /* decommission: clean records after flip */
};

/* The evidence of one object. */
struct gate_obj {
	unsigned clean; /* clean records counted */
	unsigned dirty; /* records counted that are not clean */
	unsigned buckets[LEDGER_NBUCKETS]; /* dirty records by bucket */
	int64_t newest_ms; /* newest record counted (0: none) */
	/*
	 * Open mismatch: dirty records newer than the newest clean one (0:
	 * none), the bucket of the newest of them and when they began.
	 */
	unsigned open;
	uint8_t open_bucket;
	int64_t open_since_ms;
	bool pass;
};

/* One object of a wave and its evidence, for the wave's verdict. */
struct gate_item {
	const char *name; /* text form ("db.orders") */
	struct gate_obj ev;
};

/*
 * The parameters of a wave: its overrides (0: none) over the policy's
 * defaults.
 */
void gate_params_for(const struct gate_params *defaults,
    uint32_t wave_min_clean, int64_t wave_window_ms, struct gate_params *out);

/*
 * Cutover evidence of one object from RECS (any order): the records dated
 * at or after NOW_MS - WINDOW_MS count. It passes with at least MIN_CLEAN
 * clean ones and no dirty one. MIN_CLEAN 0 is the gate turned off: it
 * passes whatever the records say.
 */
void gate_cutover(const struct ledger_rec *, size_t n,
    const struct gate_params *, int64_t now_ms, struct gate_obj *);
/*
 * Decommission evidence of one object: the records dated strictly after
 * FLIPPED_MS count; at least DECOM_MIN_CLEAN clean ones and no dirty one.
 * The sign-off is judged by gate_verdict.
 */
void gate_decommission(const struct ledger_rec *, size_t n,
    const struct gate_params *, int64_t flipped_ms, struct gate_obj *);

/*
 * The verdict over a wave's N objects: true if every one passes (and, for
 * the decommission gate, SIGNOFF is set). Writes one sentence for the
 * operator into MSG naming the blocking objects with their clean and dirty
 * counts and buckets (the first few; the JSON has them all).
 */
bool gate_verdict(bool decommission, uint32_t wave, const struct gate_params *,
    const struct gate_item *, size_t n, const char *signoff, char *msg,
    size_t msglen);

/* The JSON of one object's evidence. */
json_t *gate_obj_json(const char *name, const struct gate_obj *);

#endif
