#!/bin/bash
# Integration 51: the freshness trigger. floe polls both catalogs for the
# current snapshot of each object of a moved wave every
# freshness_interval (If-None-Match once it has an ETag); a lakehouse
# whose snapshots stop advancing while the warehouse's advance falls
# behind, and when the lag stays above freshness_max_lag for
# freshness_for the wave goes back. A lakehouse that keeps up moves
# nothing; a catalog that cannot be read makes the lag unknown (shown,
# never a revert by itself). The lag is in /status and floectl status.
# RUNS (default 3) timed reverts: delay after the condition held.
# alone: bounds the freshness delay in time
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 51
catalog warehouse
catalog lakehouse --prefix lhp
POLICY_EXTRA="freshness_interval = 200ms
freshness_max_lag = 1s
freshness_for = 1s"
write_conf
start_floe
WH=http://127.0.0.1:${CAT_PORT[warehouse]}
LH=http://127.0.0.1:${CAT_PORT[lakehouse]}

# advance URL TABLE: commit a new snapshot now; its timestamp-ms on stdout.
advance() {
	curl -s --max-time 5 -X POST --data-binary "{\"table\":\"$2\"}" \
		"$1/_test/advance" | jq '.snapshot["timestamp-ms"]'
}

ctl_ok "route athena" route set db.athena 1
ctl_ok "route bunnies" route set db.bunnies 2
ctl_ok "route java" route set db.java_bunnies 3
# The dual-write: the warehouse's athena and both bunnies advance every
# 100 ms; the lakehouse's athena does not.
(while :; do
	advance "$WH" db.athena >/dev/null
	advance "$WH" db.bunnies >/dev/null
	advance "$LH" db.bunnies >/dev/null
	sleep 0.1
done) &
pids+=($!)
fault lakehouse '{"match":"java_bunnies","status":503}'
L=$(advance "$LH" db.athena)
ctl_ok "flip 1" wave flip 1 lakehouse
ctl_ok "flip 2" wave flip 2 lakehouse
ctl_ok "flip 3" wave flip 3 lakehouse
# Wait for a whole poll of the three (at most 1.5 s after the flips).
for i in $(seq 30); do
	admin GET /status
	jq '.triggers.freshness.objects' "$T/a" >"$T/objs"
	jq -e '."db.athena".state == "known" and
		((."db.java_bunnies".state // "") | startswith("unknown:"))' "$T/objs" \
		>/dev/null && break
	sleep 0.05
done
lag=$(jq '."db.athena".lag_ms' "$T/objs")
if [ "$(jq -r '."db.athena".state' "$T/objs")" = known ] &&
	[ "$lag" -gt -1000 ] 2>/dev/null && [ "$lag" -lt 1500 ]; then
	ok "/status: db.athena's lag is known ($lag ms)"
else
	bad "/status objects: $(head -c 600 "$T/objs")"
fi
if jq -e '."db.java_bunnies".state | startswith("unknown")' "$T/objs" \
	>/dev/null && jq -e '."db.java_bunnies".state | contains("HTTP 503")' \
	"$T/objs" >/dev/null; then
	ok "a lakehouse answering 503: the lag is unknown, and why"
else
	bad "java_bunnies: $(jq -c '."db.java_bunnies"' "$T/objs")"
fi
ctl_ok "floectl status --all" status --all
if grep -q 'triggers.freshness.objects.db.athena.lag_ms' "$T/ctl"; then
	ok "floectl status --all shows the lag per object"
else
	bad "floectl status: $(grep -i fresh "$T/ctl" | head -5)"
fi
expect_eq "still on the lakehouse while the lag is under 1s" lakehouse \
	"$(wave_state 1)"

if wait_state 1 rolled_back 100; then
	ok "the lagging wave went back"
else
	bad "wave 1 is $(wave_state 1) after 5 s"
fi
get /v1/routed/namespaces/db/tables/athena
expect_header "reads go to the warehouse" X-Floe-Target warehouse
line=$(tail -n 1 "$T/rollback.log")
if echo "$line" | jq -e '.trigger == "freshness" and .wave == 1 and
	.objects == ["db.athena"] and (.measured | type == "number") and
	.measured > 1000 and .threshold == 1000 and .held_ms >= 1000 and
	.held_ms < 2000 and .from == "lakehouse" and .actor == "floe" and
	(.reason | contains("db.athena: the lakehouse is"))' >/dev/null; then
	ok "the log line: lag, threshold, how long it held"
else
	bad "log line: $line"
fi
# The condition held from L + max_lag + for; how late did floe act?
d=$(echo "$line" | jq --argjson l "$L" \
	'(.ts | sub("\\.[0-9]+Z$"; "Z") | fromdate) * 1000 +
	 (.ts | capture("\\.(?<ms>[0-9]+)Z$").ms | tonumber) - ($l + 2000)')
echo "$d" >"$T/delays"
if [ "$d" -le 1000 ]; then
	ok "acted ${d} ms after the condition held (interval 200 ms + run)"
else
	bad "acted ${d} ms after the condition held"
fi
cat_requests lakehouse >"$T/lhreq"
if jq -e '[.requests[] | select((.url | contains("athena")) and
	.headers["if-none-match"] != null)] | length > 0' "$T/lhreq" \
	>/dev/null; then
	ok "polls revalidate with If-None-Match"
else
	bad "no conditional poll of the lakehouse"
fi
if jq -e '[.requests[] | select(.url | contains("athena"))][0].url |
	contains("snapshots=refs")' "$T/lhreq" >/dev/null; then
	ok "polls ask for the refs only"
else
	bad "poll url: $(jq -c '[.requests[] | .url][0]' "$T/lhreq")"
fi
expect_eq "a lakehouse that keeps up stays" lakehouse "$(wave_state 2)"
expect_eq "an unknown lag moves nothing" lakehouse "$(wave_state 3)"
expect_eq "one rollback line" 1 "$(rlog_lines)"

# The poll list is rebuilt only when the store changed: a table that joins
# a moved wave is polled from the next cycle on, one that leaves is not.
# watched NAME: true if the poll list holds NAME, after up to 2 s.
watched() {
	local i
	for i in $(seq 40); do
		admin GET /status
		[ "$(jq --arg o "$1" '.triggers.freshness.objects | has($o)' \
			"$T/a")" = "$2" ] && break
		sleep 0.05
	done
	jq --arg o "$1" '.triggers.freshness.objects | has($o)' "$T/a"
}
expect_eq "unchanged routes: the poll list keeps its tables" true \
	"$(watched db.bunnies true)"
ctl_ok "db.late joins moved wave 2 (forced)" route set db.late 2 --force
expect_eq "... and is polled from the next cycle" true "$(watched db.late true)"
ctl_ok "db.late leaves it" route rm db.late
expect_eq "... and is no longer polled" false "$(watched db.late false)"

# Timed runs: ack, the lakehouse catches up once, flip, wait.
for i in $(seq "${RUNS:-3}"); do
	ctl wave ack 1
	L=$(advance "$LH" db.athena)
	ctl wave flip 1 lakehouse
	wait_state 1 rolled_back 100 || { bad "run $i: no revert"; break; }
	tail -n 1 "$T/rollback.log" | jq --argjson l "$L" \
		'(.ts | sub("\\.[0-9]+Z$"; "Z") | fromdate) * 1000 +
		 (.ts | capture("\\.(?<ms>[0-9]+)Z$").ms | tonumber) - ($l + 2000)' \
		>>"$T/delays"
done
stats "freshness: revert after the condition held, interval 200 ms (ms)" \
	<"$T/delays"
finish
