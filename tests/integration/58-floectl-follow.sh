#!/bin/bash
# Integration 58: floectl for following. events --follow and rollbacks
# --follow ride out a restart of floe and go on after the last event (or
# line) they printed: no duplicate, no gap. rollbacks --json prints the
# log's lines as they are in the file. wave watch shows a wave live,
# bounded by --count. status is a short summary (--all, --json for
# everything) that keeps a rollback's evidence, rounded. events gives
# long values lines of their own.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 58
catalog warehouse
catalog lakehouse --prefix lhp
POLICY_EXTRA="error_min_requests = 10"
write_conf
start_floe

"$FLOECTL" -s "$SOCK" --json events --follow >"$T/ev.out" 2>"$T/ev.err" &
EV_PID=$!
pids+=($EV_PID)
"$FLOECTL" -s "$SOCK" --json rollbacks --follow >"$T/rb.out" 2>"$T/rb.err" &
RB_PID=$!
pids+=($RB_PID)

ctl_ok "route 1" route set db.athena 1
ctl_ok "route 2" route set db.bunnies 2
ctl_ok "flip 1" wave flip 1 lakehouse --reason "first cut of the athena tables, agreed with the finance team in the weekly review"
admin POST /ledger "$(ledger_rec db.athena gap)"
expect_eq "a gap rolls wave 1 back" rolled_back "$(wave_state 1)"

# wait_lines FILE N: until FILE has N lines (10 s at most).
wait_lines() {
	local i
	for i in $(seq 200); do
		[ "$(wc -l <"$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
admin GET /status
last=$(jq '.store.last_seq' "$T/a")
wait_lines "$T/ev.out" "$last" && ok "events --follow printed $last events" ||
	bad "events --follow: $(wc -l <"$T/ev.out") of $last"
wait_lines "$T/rb.out" 1 && ok "rollbacks --follow printed the rollback" ||
	bad "rollbacks --follow: $(cat "$T/rb.out" "$T/rb.err")"

stop_floe
sleep 1.2 # the followers poll twice while floe is away
kill -0 "$EV_PID" 2>/dev/null && kill -0 "$RB_PID" 2>/dev/null &&
	ok "both followers outlive floe" || bad "a follower exited with floe"
start_floe
ctl_ok "ack 1" wave ack 1
ctl_ok "flip 2" wave flip 2 lakehouse
ctl wave report-errors 2 --errors 40 --total 110
expect_eq "40 of 110 reads roll wave 2 back" rolled_back "$(wave_state 2)"
ctl_ok "flip 1 again" wave flip 1 lakehouse
ctl_ok "status, wave 1 armed" status
grep -Eq '^wave 1 +lakehouse: errors [0-9.]+% of [0-9]+ reads \(threshold [0-9.]+%\), lag .*\(limit [0-9a-z ]+\)$' "$T/ctl" &&
	ok "status: the armed wave against its thresholds" ||
	bad "status: no armed wave 1 line: $(cat "$T/ctl")"
ctl_ok "wave watch 1" wave watch 1 --count 1 --interval 1
grep -Eq '  wave 1  lakehouse 100%.*  errors [0-9.]+% of [0-9]+ reads \(threshold [0-9.]+%\)  lag ' "$T/ctl" &&
	ok "wave watch: an armed wave against its thresholds" ||
	bad "wave watch 1: $(cat "$T/ctl")"
ctl_ok "operator rollback" wave rollback 1 --reason "by hand"
admin GET /status
last=$(jq '.store.last_seq' "$T/a")
wait_lines "$T/ev.out" "$last"
wait_lines "$T/rb.out" 3
kill "$EV_PID" "$RB_PID"
wait "$EV_PID"
expect_eq "events --follow ends with 0 on SIGTERM" 0 "$?"
wait "$RB_PID"
expect_eq "rollbacks --follow ends with 0 on SIGTERM" 0 "$?"
expect_eq "events --follow: 1..$last, no duplicate, no gap" \
	"$(seq 1 "$last" | tr '\n' ' ')" "$(jq -r .seq "$T/ev.out" | tr '\n' ' ')"
grep -q 'reconnecting' "$T/ev.err" && grep -q 'floe is back' "$T/ev.err" &&
	ok "events --follow said floe went and came back" ||
	bad "events stderr: $(cat "$T/ev.err")"
expect_eq "it said so once" 1 "$(grep -c reconnecting "$T/ev.err")"
if cmp -s "$T/rb.out" "$T/rollback.log"; then
	ok "rollbacks --follow --json: the log's 3 lines, byte for byte"
else
	bad "rollbacks --follow: $(diff "$T/rb.out" "$T/rollback.log" | head -5)"
fi

ctl_ok "rollbacks --json" --json rollbacks
cmp -s "$T/ctl" "$T/rollback.log" &&
	ok "rollbacks --json: the lines as they are in the file" ||
	bad "rollbacks --json: $(diff "$T/ctl" "$T/rollback.log" | head -5)"
ctl_ok "rollbacks" rollbacks
grep -q 'measured:  36.36%  threshold: 2.00%' "$T/ctl" &&
	ok "rollbacks: the measured ratio rounded for people" ||
	bad "rollbacks: $(cat "$T/ctl")"
grep -q '"measured":0.36363636363636' "$T/rollback.log" &&
	ok "the log keeps it exact" || bad "log: $(cat "$T/rollback.log")"

ctl_ok "status" status
if [ "$(wc -l <"$T/ctl")" -le 15 ] && grep -q '^floe .* ready' "$T/ctl" &&
	grep -q '^wave 2 *ROLLED BACK .*(errors): measured 36.36%, threshold 2.00%' \
		"$T/ctl" && grep -q 'floectl wave ack 2' "$T/ctl" &&
	grep -q '^lakehouse  up' "$T/ctl"; then
	ok "status: a short summary with the rollback's evidence, rounded"
else
	bad "status: $(cat "$T/ctl")"
fi
ctl_ok "status --all" status --all
grep -q '^store.last_seq' "$T/ctl" && [ "$(wc -l <"$T/ctl")" -gt 30 ] &&
	ok "status --all: every member" || bad "status --all: $(head -5 "$T/ctl")"
ctl_ok "status --json" --json status
jq -e '.rolled_back["2"].measured == 0.36363636363636365 and
	.rolled_back["2"].trigger == "errors"' "$T/ctl" >/dev/null &&
	ok "status --json: the evidence exact" ||
	bad "status --json: $(jq -c .rolled_back "$T/ctl")"

ctl_ok "wave watch" wave watch 2 --count 2 --interval 1
expect_eq "wave watch --count 2: two lines" 2 \
	"$(grep -c '  wave 2  rolled_back 0%' "$T/ctl")"
grep -q 'rolled back by floe (errors): measured 36.36%, threshold 2.00%' \
	"$T/ctl" && grep -q '^  + [0-9]*  .*  wave.rollback' "$T/ctl" &&
	ok "wave watch: the evidence and the wave's events" ||
	bad "wave watch: $(cat "$T/ctl")"
ctl wave watch 2 --count 0
expect_eq "wave watch --count 0 is a usage error" 2 "$RC"

ctl_ok "events" events
grep -q '^    reason: first cut of the athena tables' "$T/ctl" &&
	ok "events: a long value on a line of its own" ||
	bad "events: $(cat "$T/ctl")"
grep -q '^    baseline.requests: \|^[0-9].*baseline={' "$T/ctl" &&
	ok "events: an object as fields or short inline" ||
	bad "events: $(cat "$T/ctl")"
long=$(awk 'length > 100' "$T/ctl" | wc -l)
expect_eq "events: no line over 100 columns" 0 "$long"
finish
