#!/bin/bash
# The cutover gate on every flip to canary or lakehouse: refusals that name
# each blocking object with its clean and dirty counts and buckets, a
# streak broken by a dirty record, raising a canary share (gated) and
# lowering it (not), per-wave overrides (wave set), namespace rules,
# floectl eligible with its drift triage, gate_min_clean = 0, and the
# event every transition and refusal leaves. Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
lib_init 33
catalog warehouse
catalog lakehouse
POLICY_EXTRA="gate_min_clean = 3
gate_window = 7d"
write_conf
sed -i '/^gate_min_clean = 0$/d' "$T/floe.conf"
start_floe

# clean OBJECT [N] [AGO]: N clean records (default 1), AGO hours ago.
clean() {
	local i
	for i in $(seq "${2:-1}"); do
		ctl_ok "clean record" ledger add "$1" --count ok --aggregate ok \
			--hash ok --at "$(date -u -d "-${3:-1} hours -$i minutes" +%Y-%m-%dT%H:%M:%SZ)" ||
			return 1
	done
}
# state N: the wave's state.
state() {
	curl -s --unix-socket "$SOCK" "http://floe/waves/$1" | jq -r .state
}
last_event() {
	curl -s --unix-socket "$SOCK" "http://floe/events?after=$(($(curl -s \
		--unix-socket "$SOCK" http://floe/events?limit=1 | jq .last_seq) - 1))" |
		jq '.events[-1]' >"$T/ev"
}

ctl_ok "route" route set db.orders 1
ctl_ok "route" route set db.items 1

echo "== no evidence: refused"
ctl wave flip 1 lakehouse
expect_eq "flip without records: exit 1" 1 "$RC"
grep -q 'refused: wave 1: cutover gate: need at least 3 clean records per object in the last 7d, none dirty; 2 of 2 objects blocking' \
	"$T/ctl" && ok "the refusal says what the gate needs" || bad "message: $(cat "$T/ctl")"
grep -Eq '^db.orders +0 +0 +-' "$T/ctl" && grep -Eq '^db.items +0 +0 +-' "$T/ctl" &&
	ok "each blocking object is listed with its counts" || bad "table: $(cat "$T/ctl")"
expect_eq "still on the warehouse" warehouse "$(state 1)"
last_event
jq -e '.type == "wave.refused" and .action == "flip" and .gate.pass == false and (.gate.objects | length) == 2 and (.actor | startswith("uid "))' \
	"$T/ev" >/dev/null && ok "the refusal is an event with its evidence" || bad "event: $(cat "$T/ev")"
ctl wave flip 1 lakehouse --canary 10
expect_eq "a canary is gated too" 1 "$RC"

echo "== partial evidence"
clean db.orders 3
clean db.items 2
ctl wave flip 1 lakehouse --canary 10
expect_eq "one object short: exit 1" 1 "$RC"
grep -q '1 of 2 objects blocking: db.items 2 clean, 0 dirty' "$T/ctl" &&
	ok "only the short object blocks" || bad "$(cat "$T/ctl")"
clean db.items 1 2
ctl_ok "flip to a canary" wave flip 1 lakehouse --canary 10 &&
	grep -qx 'wave 1: warehouse -> canary (0 % → 10 %)' "$T/ctl" && ok "the gate holds: canary"
last_event
jq -e '.type == "wave.flip" and .gate.pass == true and (.gate.objects | map(.clean) | sort) == [3,3]' \
	"$T/ev" >/dev/null && ok "the flip's event carries the evidence" || bad "event: $(cat "$T/ev")"

echo "== a streak broken by one dirty record"
ctl_ok "a gap" ledger add db.items --count ok --aggregate fail --hash fail --bucket gap \
	--at "$(date -u -d '-30 minutes' +%Y-%m-%dT%H:%M:%SZ)"
clean db.items 3 0
ctl wave flip 1 lakehouse --canary 50
expect_eq "raising the share is a gated flip: refused" 1 "$RC"
grep -q 'db.items 6 clean, 1 dirty (gap 1)' "$T/ctl" && ok "the dirty record and its bucket are named" ||
	bad "$(cat "$T/ctl")"
grep -Eq '^db.items +6 +1 +gap 1' "$T/ctl" && ok "the table shows the bucket" || bad "$(cat "$T/ctl")"
ctl wave flip 1 lakehouse
expect_eq "to the lakehouse: refused" 1 "$RC"
ctl_ok "lowering the share is not gated" wave flip 1 lakehouse --canary 5
expect_eq "canary at 5" 5 "$(curl -s --unix-socket "$SOCK" http://floe/waves/1 | jq .pct)"

echo "== eligible and the triage"
ctl_ok "more trouble" ledger add db.orders --count ok --aggregate ok --hash fail --bucket value-drift
ctl_ok "stale" ledger add db.orders --count ok --aggregate fail --hash fail --bucket stale --at \
	"$(date -u -d '-30 seconds' +%Y-%m-%dT%H:%M:%SZ)"
ctl eligible 1
expect_eq "eligible of a blocked wave: exit 1" 1 "$RC"
grep -q 'cutover gate: BLOCKED' "$T/ctl" && ok "eligible: blocked" || bad "$(cat "$T/ctl")"
grep -q 'value-drift: fix the transform' "$T/ctl" && ok "triage: value-drift -> fix the transform" ||
	bad "$(cat "$T/ctl")"
grep -q 'db.orders  2 records since' "$T/ctl" && ok "the open run of db.orders: 2 records" || bad "$(cat "$T/ctl")"
grep -q 'gap: re-backfill' "$T/ctl" && bad "a gap followed by clean records is not open" ||
	ok "a resolved gap is not an open mismatch"
ctl --json eligible 1
expect_eq "eligible --json of a blocked wave: exit 1" 1 "$RC"
jq -e '.waves[0].cutover.pass == false and .waves[0].cutover.min_clean == 3 and .waves[0].cutover.window == "7d"
	and (.waves[0].cutover.objects[] | select(.object == "db.items") | .dirty == 1 and .buckets.gap == 1)
	and (.waves[0].triage | map(.bucket)) == ["value-drift"]' "$T/ctl" >/dev/null &&
	ok "eligible --json: evidence and triage" || bad "$(cat "$T/ctl")"
ctl eligible
expect_eq "eligible, all waves, one blocked: exit 1" 1 "$RC"
# The value-drift record is dated after the flip: the reconcile trigger
# (integration 50) has put the canary back on the warehouse meanwhile.
grep -q '^wave 1  rolled_back' "$T/ctl" && ok "eligible without N lists every wave" || bad "$(cat "$T/ctl")"
ctl_ok "stale triage" ledger add db.items --count ok --aggregate fail --hash fail --bucket stale
ctl --json eligible 1
jq -e '(.waves[0].triage[] | select(.bucket == "stale") | .action | startswith("wait"))' "$T/ctl" >/dev/null &&
	ok "triage: stale -> wait" || bad "$(cat "$T/ctl")"

echo "== per-wave overrides"
ctl_ok "route" route set db.finance 2
clean db.finance 5
ctl_ok "wave set" wave set 2 --min-clean 10 --window 14d
ctl_ok "show" --json wave show 2
jq -e '.gate_min_clean == 10 and .gate_window == "14d"' "$T/ctl" >/dev/null &&
	ok "wave show has the overrides" || bad "$(cat "$T/ctl")"
ctl wave flip 2 lakehouse
expect_eq "5 clean is not 10: refused" 1 "$RC"
grep -q 'need at least 10 clean records per object in the last 14d' "$T/ctl" &&
	ok "the override is what the gate asks" || bad "$(cat "$T/ctl")"
clean db.finance 5 200
ctl_ok "ten in 14 days" wave flip 2 lakehouse
expect_eq "wave 2 flipped" lakehouse "$(state 2)"
ctl_ok "route" route set db.fin2 3
clean db.fin2 3 48
ctl_ok "set" wave set 3 --window 1d
ctl wave flip 3 lakehouse
expect_eq "records older than the overridden window do not count" 1 "$RC"
ctl_ok "set default" wave set 3 --window default
ctl_ok "back to the policy's window" wave flip 3 lakehouse
ctl wave set 3
expect_eq "wave set without an option: exit 2" 2 "$RC"
ctl wave set 3 --min-clean 0
expect_eq "--min-clean 0 is not an override" 2 "$RC"
ctl wave set 3 --window 7x
expect_eq "a bad window: exit 2" 2 "$RC"

echo "== rules"
ctl_ok "rule" route set sales.* 4
ctl wave flip 4 lakehouse
expect_eq "a rule whose tables have no records: refused" 1 "$RC"
grep -q 'sales.\* 0 clean, 0 dirty' "$T/ctl" && ok "the rule itself blocks" || bad "$(cat "$T/ctl")"
clean sales.a 3
clean sales.eu.b 2
ctl wave flip 4 lakehouse
expect_eq "a table under the rule is short" 1 "$RC"
grep -q '1 of 2 objects blocking: sales.eu.b 2 clean' "$T/ctl" &&
	ok "the rule's tables are judged one by one, sub-namespaces too" || bad "$(cat "$T/ctl")"
clean sales.eu.b 1 3
ctl_ok "the rule's tables are clean" wave flip 4 lakehouse

echo "== refusals that are not the gate's"
ctl_ok "rollback" wave rollback 4 --reason test
ctl wave flip 4 lakehouse
expect_eq "rolled back: refused before any gate" 1 "$RC"
grep -q 'acknowledge the rollback first' "$T/ctl" && ok "the lifecycle refusal comes first" || bad "$(cat "$T/ctl")"

echo "== gate_min_clean = 0 turns the gate off"
ctl_ok "route" route set db.free 5
ctl wave flip 5 lakehouse
expect_eq "gate on: refused" 1 "$RC"
sed -i 's/^gate_min_clean = 3$/gate_min_clean = 0/' "$T/floe.conf"
kill -HUP "$FLOE_PID"
for _ in $(seq 50); do grep -q 'reload' "$T/floe.log" && break; sleep 0.1; done
sleep 0.2
ctl_ok "gate off: flip" wave flip 5 lakehouse
last_event
jq -e '.type == "wave.flip" and .gate == "off"' "$T/ev" >/dev/null &&
	ok "the flip's event says the gate was off" || bad "event: $(cat "$T/ev")"
ctl eligible 2
expect_eq "wave 2's override still gates it: exit 1" 1 "$RC"
grep -q 'need at least 10' "$T/ctl" && ok "a per-wave override applies with the gate off by default" ||
	bad "$(cat "$T/ctl")"

echo "== every transition and refusal is an event"
curl -s --unix-socket "$SOCK" 'http://floe/events?limit=10000' >"$T/ev"
jq -e '([.events[] | select(.type == "wave.refused")] | length) >= 9
	and ([.events[] | select(.type == "wave.set")] | length) == 3
	and ([.events[] | select(.type == "wave.flip")] | length) >= 6
	and all(.events[] | select(.type | startswith("wave.")); .actor != null and .wave != null)' \
	"$T/ev" >/dev/null && ok "flips, refusals and overrides are events with actor and wave" ||
	bad "events: $(jq -c '[.events[] | .type]' "$T/ev")"
finish
