#!/bin/bash
# Integration 54: the rollback log and the page. Each rollback is one
# fsynced JSON line, checked field by field; floectl rollbacks prints it
# readably, --json as is, --follow as it comes. A trigger's rollback
# pages once (an operator's does not page); a frozen wave is paged about
# once and not reverted; a webhook that is down delays nothing: the
# revert and its line happen at once, the failed page is logged.
# alone: bounds the answer to a POST that fires a trigger in time
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 54
catalog warehouse
catalog lakehouse --prefix lhp
webhook_start
POLICY_EXTRA="webhook = $WEBHOOK_URL
decommission_min_clean = 1"
write_conf
start_floe

"$FLOECTL" -s "$SOCK" rollbacks --follow >"$T/follow" 2>&1 &
FOLLOW=$!
pids+=($FOLLOW)
ctl_ok "rollbacks, none yet" rollbacks
expect_eq "an empty log says so" "no rollbacks" "$(cat "$T/ctl")"

ctl_ok "route" route set db.athena 1
ctl_ok "route rule" route set mkt.* 1
ctl_ok "flip" wave flip 1 lakehouse
before=$(date +%s%3N)
admin POST /ledger "$(ledger_rec db.athena gap)"
after=$(date +%s%3N)
# The worker's child writes the line once it is idle, not before the
# POST is answered: wait for it (5 s at most).
wait_lines() {
	local i
	for i in $(seq 100); do
		[ "$(rlog_lines)" -ge "$1" ] && return
		sleep 0.05
	done
}
wait_lines 1
expect_eq "one line" 1 "$(rlog_lines)"
line=$(head -n 1 "$T/rollback.log")
expect_eq "the keys, in order" \
	'["ts","wave","objects","trigger","measured","threshold","held_ms","from","to","actor","reason"]' \
	"$(echo "$line" | jq -c 'keys_unsorted')"
ts=$(echo "$line" | jq -r .ts)
tsms=$(node -e 'console.log(Date.parse(process.argv[1]))' -- "$ts")
if [[ $ts =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$ ]] &&
	[ "$tsms" -ge "$((before - 5))" ] && [ "$tsms" -le "$((after + 5))" ]; then
	ok "ts: RFC 3339 in ms, during the POST"
else
	bad "ts $ts not within $before..$after"
fi
expect_eq "wave" 1 "$(echo "$line" | jq .wave)"
expect_eq "objects: the wave's objects and rules" '["db.athena","mkt.*"]' \
	"$(echo "$line" | jq -c .objects)"
expect_eq "trigger" reconcile "$(echo "$line" | jq -r .trigger)"
expect_eq "measured" '"gap"' "$(echo "$line" | jq -c .measured)"
expect_eq "threshold" '"clean or stale"' "$(echo "$line" | jq -c .threshold)"
expect_eq "held_ms" 0 "$(echo "$line" | jq .held_ms)"
expect_eq "from" lakehouse "$(echo "$line" | jq -r .from)"
expect_eq "to" rolled_back "$(echo "$line" | jq -r .to)"
expect_eq "actor" floe "$(echo "$line" | jq -r .actor)"
if echo "$line" | jq -e '.reason | startswith("db.athena: ledger record at ")
	and contains("is gap") and contains("source test-job")' >/dev/null; then
	ok "reason: the object, the record and what to do"
else
	bad "reason: $(echo "$line" | jq -r .reason)"
fi

# The operator's rollback: the same line, nothing measured, no page.
ctl_ok "ack" wave ack 1
ctl_ok "flip again" wave flip 1 lakehouse
ctl_ok "operator rollback" wave rollback 1 --reason "dashboards look off"
line=$(tail -n 1 "$T/rollback.log")
if echo "$line" | jq -e '.trigger == "operator" and
	(.actor | startswith("uid ")) and .measured == null and
	.threshold == null and .held_ms == 0 and
	.reason == "dashboards look off"' >/dev/null; then
	ok "an operator's rollback: trigger operator, actor uid"
else
	bad "operator line: $line"
fi
sleep 0.5
expect_eq "one page: the trigger's, not the operator's" 1 \
	"$(webhook_posts | jq '.posts | length')"
expect_eq "the page is the log line" "$(head -n 1 "$T/rollback.log" |
	jq -cS .)" "$(webhook_posts | jq -cS '.posts[0].body')"

ctl_ok "floectl rollbacks" rollbacks
if grep -qE '  wave 1  reconcile  lakehouse -> rolled_back  by floe$' "$T/ctl" &&
	grep -q '    objects:   \["db.athena","mkt.\*"\]' "$T/ctl" &&
	grep -q '    measured:  gap  threshold: clean or stale' "$T/ctl" &&
	grep -q 'wave 1  operator  lakehouse -> rolled_back  by uid' "$T/ctl"; then
	ok "floectl rollbacks prints each line readably"
else
	bad "floectl rollbacks: $(cat "$T/ctl")"
fi
ctl_ok "floectl --json rollbacks" --json rollbacks
cmp -s "$T/ctl" "$T/rollback.log" &&
	ok "--json: the lines as they are in the file" ||
	bad "--json: $(diff "$T/ctl" "$T/rollback.log" | head -5)"
for i in $(seq 40); do
	[ "$(grep -c 'rolled_back' "$T/follow")" -ge 2 ] && break
	sleep 0.1
done
expect_eq "--follow printed both as they came" 2 \
	"$(grep -c -- '-> rolled_back' "$T/follow")"

# A frozen wave: paged about once, not reverted.
ctl_ok "ack 1" wave ack 1
ctl_ok "route 2" route set db.bunnies 2
ctl_ok "flip 2" wave flip 2 lakehouse
admin POST /ledger "$(ledger_rec db.bunnies clean)"
ctl_ok "signoff" wave signoff 2 --by "sre test"
ctl_ok "freeze" wave freeze 2 --reason "dual-write stopped"
admin POST /ledger "$(ledger_rec db.bunnies gap)"
expect_eq "a frozen wave stays frozen" frozen "$(wave_state 2)"
expect_eq "no rollback line for it" 2 "$(rlog_lines)"
admin POST /ledger "$(ledger_rec db.bunnies value-drift)"
sleep 0.5
webhook_posts >"$T/posts"
if jq -e '[.posts[].body | select(.wave == 2)] | length == 1' "$T/posts" \
	>/dev/null && jq -e '[.posts[].body | select(.wave == 2)][0] |
	.trigger == "reconcile" and .from == "frozen" and .to == "frozen" and
	(.action | startswith("page only"))' "$T/posts" >/dev/null; then
	ok "the frozen wave was paged about once, page only"
else
	bad "pages: $(jq -c '.posts' "$T/posts" | head -c 600)"
fi
admin GET "/events?after=0"
expect_eq "the page is an event" 1 \
	"$(jq '[.events[] | select(.type == "trigger.page")] | length' "$T/a")"

# The webhook is down: the revert and its line happen at once anyway.
stop_floe
kill "$WEBHOOK_PID" 2>/dev/null
wait "$WEBHOOK_PID" 2>/dev/null
write_conf
start_floe
ctl_ok "route 3" route set db.java_bunnies 3
ctl_ok "flip 3" wave flip 3 lakehouse
t0=$(date +%s%3N)
admin POST /ledger "$(ledger_rec db.java_bunnies gap)"
t1=$(date +%s%3N)
expect_eq "webhook down: rolled back at once" rolled_back "$(wave_state 3)"
if [ $((t1 - t0)) -lt 1000 ]; then
	ok "webhook down: the POST was answered in $((t1 - t0)) ms"
else
	bad "the POST took $((t1 - t0)) ms"
fi
wait_lines 3
expect_eq "webhook down: the line is written" 3 \
	"$(tail -n 1 "$T/rollback.log" | jq .wave)"
for i in $(seq 40); do
	grep -q 'webhook: page for wave 3 failed (try 1 of 5' "$T/floe.log" &&
		break
	sleep 0.05
done
if grep -q 'webhook: page for wave 3 failed (try 1 of 5' "$T/floe.log"; then
	ok "the failed page is logged, and retried"
else
	bad "no log of the failed page"
fi
kill "$FOLLOW" 2>/dev/null
finish
