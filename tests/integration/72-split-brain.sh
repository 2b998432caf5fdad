#!/bin/bash
# Integration 72: the split-brain alarm. After a freeze floe keeps polling
# the warehouse copy of the frozen wave's tables; a commit made to the
# warehouse catalog directly (not through floe) raises the alarm within
# one poll interval: an event with the snapshots, a rollback-log line
# with trigger split-brain, a page, floe_split_brain{wave} 1 in /metrics,
# wave show; the wave stays frozen. floectl wave ack-alarm clears it; a
# later direct commit raises it again, even across a restart.
# Exits 0 or 1.
# alone: bounds the alarm by one poll interval
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 72
catalog warehouse
catalog lakehouse --prefix lhp
webhook_start
INTERVAL_MS=500
MPORT=$(free_port)
FLOE_EXTRA="metrics_listen = 127.0.0.1:$MPORT"
POLICY_EXTRA="webhook = $WEBHOOK_URL
decommission_min_clean = 1
freshness_interval = ${INTERVAL_MS}ms"
write_conf
start_floe
WH=http://127.0.0.1:${CAT_PORT[warehouse]}

# advance: a commit to the warehouse catalog itself; its snapshot id.
advance() {
	curl -s --max-time 5 -X POST --data-binary '{"table":"db.bunnies"}' \
		"$WH/_test/advance" | jq '.snapshot["snapshot-id"]'
}
# alarm N: the wave's split_brain field.
alarm() {
	admin GET "/waves/$1"
	jq -r '.split_brain' "$T/a"
}
# wait_alarm N: poll until wave N has an alarm (at most 5 s); the ms taken.
wait_alarm() {
	local t0 i
	t0=$(date +%s%3N)
	for i in $(seq 250); do
		[ "$(alarm "$1")" != null ] && { echo $(($(date +%s%3N) - t0)); return 0; }
		sleep 0.02
	done
	return 1
}
metric() {
	curl -s --unix-socket "$SOCK" http://floe/metrics |
		awk -v k="floe_split_brain{wave=\"$1\"}" '$1 == k {print $2}'
}

ctl_ok "route" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse
ctl_ok "clean" ledger add db.bunnies --count ok --aggregate ok --hash ok
ctl_ok "sign-off" wave signoff 1 --by alice
ctl_ok "freeze" wave freeze 1
sleep $((INTERVAL_MS * 3 / 1000)).5
expect_eq "no alarm while the warehouse copy holds still" null "$(alarm 1)"
expect_eq "floe_split_brain 0" 0 "$(metric 1)"

echo "== a writer bypasses floe"
SNAP=$(advance)
if ms=$(wait_alarm 1); then
	if [ "$ms" -le $((INTERVAL_MS + 400)) ]; then
		ok "the alarm is raised within one poll interval ($ms ms, interval $INTERVAL_MS ms)"
	else
		bad "the alarm took $ms ms (interval $INTERVAL_MS ms)"
	fi
else
	bad "no alarm after a direct commit"
fi
expect_eq "the wave stays frozen" frozen "$(wave_state 1)"
admin GET '/events?after=0'
jq -e --argjson s "$SNAP" '[.events[] | select(.type == "wave.split_brain_alarm" and
	.wave == 1 and .object == "db.bunnies" and .snapshot_now.id == $s and
	.snapshot_now.ts != null and .snapshot_before.id != $s and
	.actor == "floe")] | length == 1' "$T/a" >/dev/null &&
	ok "an event with the object and both snapshots" ||
	bad "events: $(jq -c '[.events[] | select(.type == "wave.split_brain_alarm")]' "$T/a")"
line=$(grep '"split-brain"' "$T/rollback.log" | tail -n 1)
echo "$line" | jq -e --argjson s "$SNAP" '.trigger == "split-brain" and .wave == 1 and
	.from == "frozen" and .to == "frozen" and .snapshot_now.id == $s and
	.snapshot_before.id != null and .object == "db.bunnies"' >/dev/null &&
	ok "a rollback-log line with trigger split-brain and the snapshots" ||
	bad "rollback log: $(cat "$T/rollback.log")"
for i in $(seq 60); do
	[ "$(webhook_posts | jq '[.posts[] | select(.body.trigger == "split-brain")] | length')" -ge 1 ] && break
	sleep 0.05
done
webhook_posts | jq -e '[.posts[] | select(.body.trigger == "split-brain" and
	.body.wave == 1)] | length == 1' >/dev/null && ok "paged once" ||
	bad "pages: $(webhook_posts | head -c 600)"
expect_eq "floe_split_brain 1" 1 "$(metric 1)"
curl -s "http://127.0.0.1:$MPORT/?wave=1" >"$T/page"
grep -q 'split brain</dt><dd class="why">the warehouse copy changed after the freeze' "$T/page" &&
	grep -q 'data-type="wave.split_brain_alarm"' "$T/page" &&
	ok "the status page shows the alarm on the card and in the timeline" ||
	bad "page: $(grep -o 'split[^<]*' "$T/page" | head -5)"
ctl_ok "wave show" wave show 1
grep -Eq '^split_brain +20' "$T/ctl" && ok "floectl wave show has the alarm" ||
	bad "wave show: $(cat "$T/ctl")"
sleep 1.2
admin GET '/events?after=0'
expect_eq "raised once, not every poll" 1 \
	"$(jq '[.events[] | select(.type == "wave.split_brain_alarm")] | length' "$T/a")"

echo "== acknowledged"
ctl_ok "ack-alarm" wave ack-alarm 1
grep -q 'split-brain alarm raised .* is acknowledged' "$T/ctl" && ok "ack says so" ||
	bad "ack: $(cat "$T/ctl")"
expect_eq "cleared" null "$(alarm 1)"
expect_eq "floe_split_brain 0 again" 0 "$(metric 1)"
ctl wave ack-alarm 1
expect_eq "ack without an alarm: refused" 1 "$RC"
sleep 1.2
expect_eq "no new alarm without a new commit" null "$(alarm 1)"

echo "== a commit while floe is down raises it after the restart"
stop_floe
advance >/dev/null
start_floe
if ms=$(wait_alarm 1); then ok "raised after the restart ($ms ms)"; else bad "no alarm after restart"; fi
finish
