#!/bin/bash
# Integration 50: the reconcile trigger. A ledger record dated after the
# flip that is neither clean nor stale puts the wave back on the warehouse
# while the POST that brought it is answered: the very next read goes to
# the warehouse, flips are refused until ack, one rollback logs and pages
# once. Clean and stale records, records dated before the flip and
# records of unassigned tables move nothing. RUNS (default 5) timed
# reverts, reported as min/median/p90/max.
# alone: reports the revert times it measures
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 50
catalog warehouse
catalog lakehouse --prefix lhp
webhook_start
POLICY_EXTRA="webhook = $WEBHOOK_URL"
write_conf
start_floe

L=/v1/routed/namespaces/db/tables/athena
ctl_ok "route" route set db.athena 1
ctl_ok "flip" wave flip 1 lakehouse
get $L
expect_header "flipped: the lakehouse answers" X-Floe-Target lakehouse

admin POST /ledger "$(ledger_rec db.athena clean)"
expect_eq "a clean record is taken" 200 "$AS"
admin POST /ledger "$(ledger_rec db.athena stale)"
expect_eq "a stale record is taken" 200 "$AS"
expect_eq "clean and stale records move nothing" lakehouse "$(wave_state 1)"
admin POST /ledger "$(ledger_rec db.athena gap "$(now_ts -600000)")"
expect_eq "a gap dated before the flip is taken" 200 "$AS"
expect_eq "a gap dated before the flip moves nothing" lakehouse \
	"$(wave_state 1)"
admin POST /ledger "$(ledger_rec db.bunnies gap)"
expect_eq "a gap of an unassigned table moves nothing" lakehouse \
	"$(wave_state 1)"
expect_eq "no rollback logged yet" 0 "$(rlog_lines)"

admin POST /ledger "$(ledger_rec db.athena value-drift)"
expect_eq "the dirty record is taken (200)" 200 "$AS"
get $L
expect_header "the very next read goes to the warehouse" X-Floe-Target \
	warehouse
expect_eq "the wave is rolled back" rolled_back "$(wave_state 1)"
expect_eq "one rollback log line" 1 "$(rlog_lines)"
line=$(tail -n 1 "$T/rollback.log")
if echo "$line" | jq -e '.wave == 1 and .trigger == "reconcile" and
	.actor == "floe" and .from == "lakehouse" and .to == "rolled_back" and
	.objects == ["db.athena"] and .measured == "value-drift" and
	.threshold == "clean or stale" and .held_ms == 0 and
	(.reason | contains("db.athena")) and (.reason | contains("value-drift"))' \
	>/dev/null; then
	ok "the log line names the trigger, record, objects and states"
else
	bad "log line: $line"
fi

ctl wave flip 1 lakehouse
expect_eq "flips are refused until ack (exit 1)" 1 "$RC"
admin POST /ledger "$(ledger_rec db.athena gap)"
expect_eq "a second dirty record is taken" 200 "$AS"
expect_eq "a second dirty record logs no second rollback" 1 "$(rlog_lines)"
for i in $(seq 60); do
	[ "$(webhook_posts | jq '.posts | length')" -ge 1 ] && break
	sleep 0.05
done
sleep 0.3
webhook_posts >"$T/posts"
expect_eq "one page" 1 "$(jq '.posts | length' "$T/posts")"
if jq -e '.posts[0].body | .wave == 1 and .trigger == "reconcile" and
	.to == "rolled_back" and .objects == ["db.athena"]' "$T/posts" \
	>/dev/null && jq -e '.posts[0].type == "application/json"' "$T/posts" \
	>/dev/null; then
	ok "the page is a JSON POST with the log line's fields"
else
	bad "page: $(head -c 400 "$T/posts")"
fi
admin GET "/events?after=0"
if jq -e '[.events[] | select(.type == "wave.rollback" and .actor == "floe")]
	| length == 1' "$T/a" >/dev/null; then
	ok "the rollback is an event by floe"
else
	bad "events: $(head -c 400 "$T/a")"
fi

# A canary goes back the same way.
ctl_ok "ack" wave ack 1
ctl_ok "canary" wave flip 1 lakehouse --canary 50
admin POST /ledger "$(ledger_rec db.athena gap)"
expect_eq "a canary wave is rolled back too" rolled_back "$(wave_state 1)"
expect_eq "from canary" canary "$(tail -n 1 "$T/rollback.log" | jq -r .from)"
ctl_ok "ack again" wave ack 1

# Speed: from the POST's answer to the next read's answer.
node tests/integration/speed.js reconcile "$SOCK" "$LISTEN" db.athena $L 1 \
	"${RUNS:-5}" >"$T/speed" 2>"$T/speed.err"
if [ $? = 0 ] && [ "$(jq -s 'map(select(.target == "warehouse")) | length' \
	"$T/speed")" = "${RUNS:-5}" ]; then
	ok "every timed revert: the next read went to the warehouse"
else
	bad "timed reverts: $(tail -c 300 "$T/speed") $(cat "$T/speed.err")"; tail -n 8 "$T/floe.log"
fi
jq -r .ms "$T/speed" | stats "reconcile: POST answer -> next read answered by the warehouse (ms)"
grep -o 'reconcile trigger: rolled back in [0-9]* us, [0-9]* us after' \
	"$T/floe.log" | awk '{print $8}' | stats "reconcile: record committed -> state changed, in floe (us)"
# The revert is done before the POST is answered: the check above (every
# next read went to the warehouse) holds that. The times are reported,
# not held to a bound: what is timed is one more proxied read through a
# node client and a node catalog, 3-8 ms on the test machine without any
# revert, and a loaded machine or a sanitizer build stretches it
# (docs/sre.md).
finish
