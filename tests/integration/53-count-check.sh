#!/bin/bash
# Integration 53: the metadata count check. When both current snapshots
# carry total-records, the lakehouse's is at least as new and neither side
# has delete files, a difference is written to the ledger (source
# metadata, bucket gap): it blocks the cutover gate and fires the
# reconcile trigger. With delete files the count says nothing (unknown,
# shown in /status); the check can be switched off per wave.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 53
catalog warehouse
catalog lakehouse --prefix lhp
POLICY_EXTRA="freshness_interval = 200ms
freshness_max_lag = 1h
freshness_for = 1h"
write_conf
start_floe
LH=http://127.0.0.1:${CAT_PORT[lakehouse]}

# summary JSON: set keys of the lakehouse's db.athena current summary.
summary() {
	curl -s --max-time 5 -o /dev/null -X POST --data-binary "$1" \
		"$LH/_test/summary"
}
# count_of: db.athena's count outcome in /status ("" if not polled yet).
count_of() {
	admin GET /status
	jq -r '.triggers.freshness.objects."db.athena".count // ""' "$T/a"
}
# wait_count WANT: poll /status until db.athena's count is WANT (3 s).
wait_count() {
	local i
	for i in $(seq 60); do
		[ "$(count_of)" = "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# The lakehouse commits a snapshot (the same 2 rows) newer than the
# warehouse's: the counts compare.
curl -s --max-time 5 -o /dev/null -X POST \
	--data-binary '{"table":"db.athena"}' "$LH/_test/advance"
ctl_ok "route" route set db.athena 1
ctl_ok "gate on for the wave" wave set 1 --min-clean 1
admin POST /ledger "$(ledger_rec db.athena clean "$(now_ts -60000)")"
ctl_ok "flip" wave flip 1 lakehouse
if wait_count match; then ok "2 rows on both sides: match"; else
	bad "count: $(count_of)"; fi

# Delete files: the count says nothing.
summary '{"table":"db.athena","total-records":"3","total-position-deletes":"1"}'
if wait_count unknown; then ok "with delete files the count is unknown"; else
	bad "count: $(count_of)"; fi
jq -r '.triggers.freshness.objects."db.athena".count_why' "$T/a" >"$T/why"
if grep -q "delete files" "$T/why"; then ok "and /status says why"; else
	bad "count_why: $(cat "$T/why")"; fi
sleep 0.5
expect_eq "an unknown count moves nothing" lakehouse "$(wave_state 1)"

# No delete files, 3 rows against 2: a gap in the ledger, the wave back.
summary '{"table":"db.athena","total-position-deletes":null}'
if wait_state 1 rolled_back 60; then ok "a count mismatch rolls back"; else
	bad "wave 1 is $(wave_state 1)"; fi
line=$(tail -n 1 "$T/rollback.log")
if echo "$line" | jq -e '.trigger == "reconcile" and .measured == "gap" and
	(.reason | contains("source metadata"))' >/dev/null; then
	ok "through the reconcile trigger, source metadata"
else
	bad "log line: $line"
fi
ctl_ok "ledger show" --json ledger show db.athena
if jq -e '[.records[] | select(.source == "metadata" and .bucket == "gap"
	and .count_match == false)] | length == 1' "$T/ctl" >/dev/null; then
	ok "one ledger record: source metadata, bucket gap"
else
	bad "ledger: $(head -c 500 "$T/ctl")"
fi
ctl_ok "ack" wave ack 1
ctl wave flip 1 lakehouse
expect_eq "the gap blocks the cutover gate (exit 1)" 1 "$RC"
if grep -q "gap" "$T/ctl"; then ok "the refusal names the gap"; else
	bad "flip said: $(cat "$T/ctl")"; fi

# Switched off for the wave: the mismatch is not looked at.
ctl_ok "gate back to the policy's (off)" wave set 1 --min-clean default
ctl_ok "count check off" wave set 1 --count-check off
ctl_ok "flip with the check off" wave flip 1 lakehouse
for i in $(seq 60); do
	[ "$(count_of)" = unknown ] && jq -r \
		'.triggers.freshness.objects."db.athena".count_why' "$T/a" |
		grep -q "switched off" && break
	sleep 0.05
done
expect_eq "switched off: unknown" unknown "$(count_of)"
jq -r '.triggers.freshness.objects."db.athena".count_why' "$T/a" >"$T/why"
expect_eq "and why" "switched off for this wave" "$(cat "$T/why")"
sleep 0.6
expect_eq "switched off: the mismatch moves nothing" lakehouse \
	"$(wave_state 1)"
ctl_ok "count check on" wave set 1 --count-check on
if wait_state 1 rolled_back 60; then ok "switched on again: back"; else
	bad "wave 1 is $(wave_state 1)"; fi
expect_eq "two rollbacks in all" 2 "$(rlog_lines)"
finish
