#!/bin/bash
# Integration 52: the error trigger. Reads of a moved wave that the
# lakehouse answers with 5xx, by resetting the connection or not in time
# are counted per wave and side in a sliding window; with at least
# error_min_requests reads and a rate above error_ratio x max(baseline,
# error_floor) the wave goes back before the next read. 4xx are the
# client's; below the minimum nothing moves; a baseline already high (the
# warehouse's rate before the flip, stored with it) raises the bar;
# errors consumers report count like floe's own. RUNS timed reverts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 52
catalog warehouse
catalog lakehouse --prefix lhp
LH_EXTRA="timeout = 400ms"
POLICY_EXTRA="error_window = 20s
error_min_requests = 10
error_ratio = 2
error_floor = 1%"
write_conf
start_floe

A=/v1/routed/namespaces/db/tables/athena
J=/v1/routed/namespaces/db/tables/java_bunnies
ctl_ok "route athena" route set db.athena 1
ctl_ok "route java_bunnies" route set db.java_bunnies 2
ctl_ok "flip 1" wave flip 1 lakehouse

# 4xx are the client's: five 404s are reads, not errors.
fault lakehouse '{"match":"athena","status":404,"count":5}'
for i in $(seq 5); do get $A; done
expect_eq "the lakehouse answered 404" 404 "$S"
# Then 5xx, garbage (502) and a timeout (504): 4 errors in 9 reads, one
# short of error_min_requests.
fault lakehouse '{"match":"athena","status":503,"count":2}'
fault lakehouse '{"match":"athena","garbage":true,"count":1}'
fault lakehouse '{"match":"athena","delay_ms":1000,"count":1}'
for i in $(seq 4); do get $A; done
expect_eq "a timeout is a 504" 504 "$S"
admin GET /status
jq '.triggers.errors["1"].lakehouse' "$T/a" >"$T/lh"
expect_eq "5xx, garbage and timeouts are counted: 4 errors" 4 \
	"$(jq .errors "$T/lh")"
expect_eq "4xx counted as reads, not errors: 9 reads" 9 \
	"$(jq .requests "$T/lh")"
expect_eq "4 failures in 9 reads (< 10 reads): still lakehouse" lakehouse \
	"$(wave_state 1)"
get $A
expect_header "the 10th read (ok) is the lakehouse's" X-Floe-Target lakehouse
expect_eq "the 10th read makes it 4 of 10: rolled back" rolled_back \
	"$(wave_state 1)"
get $A
expect_header "the next read: the warehouse" X-Floe-Target warehouse
line=$(tail -n 1 "$T/rollback.log")
if echo "$line" | jq -e '.trigger == "errors" and .wave == 1 and
	.measured == 0.4 and .threshold == 0.02 and .held_ms == 0 and
	.from == "lakehouse" and .actor == "floe" and
	(.reason | contains("4 of 10 reads"))' >/dev/null; then
	ok "the log line: rate 0.4 against 2 x floor 1% = 0.02"
else
	bad "log line: $line"
fi
ctl_ok "ack 1" wave ack 1
cat_clear lakehouse

# A baseline already high: 6 of 20 warehouse reads failed before the flip.
fault warehouse '{"match":"java_bunnies","status":503,"count":6}'
for i in $(seq 20); do get $J; done
cat_clear warehouse
ctl_ok "flip 2" wave flip 2 lakehouse
admin GET /waves/2
admin GET "/events?after=0"
if jq -e '[.events[] | select(.type == "wave.flip" and .wave == 2)][0]
	.baseline == {"requests":20,"errors":6}' "$T/a" >/dev/null; then
	ok "the flip stored the baseline: 6 errors in 20 reads"
else
	bad "flip event: $(jq -c '[.events[] | select(.type == "wave.flip")]' "$T/a" | head -c 400)"
fi
fault lakehouse '{"match":"java_bunnies","status":503,"count":5}'
for i in $(seq 12); do get $J; done
expect_eq "5 of 12 (42%) is under 2 x 30%: still lakehouse" lakehouse \
	"$(wave_state 2)"
fault lakehouse '{"match":"java_bunnies","status":503,"count":8}'
for i in $(seq 8); do get $J; done
expect_eq "13 of 20 (65%) is over 60%: rolled back" rolled_back \
	"$(wave_state 2)"
expect_eq "the threshold is 2 x the baseline" 0.6 \
	"$(tail -n 1 "$T/rollback.log" | jq .threshold)"
cat_clear lakehouse

# Errors that consumers report.
ctl_ok "flip 1 for reports" wave flip 1 lakehouse
ctl_ok "report below the minimum" wave report-errors 1 --errors 5 --total 5
expect_eq "5 of 5 reported (< 10): still lakehouse" lakehouse \
	"$(wave_state 1)"
if grep -q "5 errors in 5 lakehouse reads counted" "$T/ctl"; then
	ok "floectl says what was counted"
else
	bad "report-errors said: $(cat "$T/ctl")"
fi
ctl_ok "report more" wave report-errors 1 --errors 0 --total 200
expect_eq "5 of 205 (2.4%) > 2%: rolled back on the report" rolled_back \
	"$(wave_state 1)"
expect_eq "the reported errors' log line" errors \
	"$(tail -n 1 "$T/rollback.log" | jq -r .trigger)"
ctl wave report-errors 1 --errors 6 --total 5
expect_eq "more errors than reads is a usage error" 2 "$RC"
ctl_ok "ack for the timing" wave ack 1

# Speed: from the answer of the read that made the condition hold to the
# answer of the next one.
fault lakehouse '{"match":"athena","status":503}'
node tests/integration/speed.js errors "$SOCK" "$LISTEN" $A 1 \
	"${RUNS:-5}" 10 >"$T/speed" 2>"$T/speed.err"
if [ $? = 0 ] && [ "$(jq -s 'map(select(.target == "warehouse")) | length' \
	"$T/speed")" = "${RUNS:-5}" ]; then
	ok "every timed revert: the next read went to the warehouse"
else
	bad "timed reverts: $(cat "$T/speed" "$T/speed.err" | head -c 400)"
fi
jq -r .ms "$T/speed" | stats "errors: answer of the read that made it hold -> next read answered by the warehouse (ms)"
grep -o 'errors trigger: rolled back in [0-9]* us, [0-9]* us after' \
	"$T/floe.log" | awk '{print $8}' | stats "errors: failed read counted -> state changed, in floe (us)"
finish
