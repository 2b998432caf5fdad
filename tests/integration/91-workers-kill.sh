#!/bin/bash
# Integration 91: workers = 2, a worker killed with SIGKILL under load.
# Reads take 300 ms at the catalog, so each worker has some in flight when
# worker 0 is killed: only reads on its own connections fail (at most the
# sixteen in flight), reads worker 1 held across the kill are answered, the
# master logs the death and starts worker 0 again (a new pid, starts 2),
# and it serves again. Then SIGHUP reloads the master and both workers.
# A worker started again runs its master's configuration, not the file,
# which may have changed (here: broken) since. SIGTERM, to the master or
# to every process at once as systemd sends it, drains all: reads in
# flight are answered, every process exits. A master killed outright
# takes its workers with it.
# alone: load across workers
. "$(dirname "$0")/lib.sh"
lib_init 91
catalog warehouse
catalog lakehouse --prefix lhp
FLOE_EXTRA="workers = 2"
write_conf
start_floe

A=/v1/routed/namespaces/db/tables/athena
now_ms() { date +%s%3N; }
fault warehouse '{"match":"athena","delay_ms":300}'
admin GET /status
pid0=$(jq '.workers[0].pid' "$T/b")
pid1=$(jq '.workers[1].pid' "$T/b")
# Sixteen clients, each read on a new connection that the kernel gives a
# worker at random: both workers hold some when worker 0 is killed, but for
# a chance of 2^-15.
node tests/integration/workers_load.js "$LISTEN" "$A" 16 "$T/stop" 30000 \
	>"$T/load" 2>"$T/load.err" &
LOAD=$!
pids+=($LOAD)
# 2.5 s of load, and until worker 0 has copied at least 10 answers to its
# slot (on its tick).
sleep 2.5
for i in $(seq 100); do
	admin GET /status
	pub0=$(jq '.workers[0].requests' "$T/b")
	[ "$pub0" -ge 10 ] && break
	sleep 0.1
done
kill_ms=$(now_ms)
kill -9 "$pid0"
# The master starts it again: a new pid in slot 0.
for i in $(seq 100); do
	admin GET /status
	new0=$(jq '.workers[0].pid' "$T/b")
	[ "$new0" != "$pid0" ] && [ "$new0" != 0 ] && break
	sleep 0.05
done
back_ms=$(now_ms)
expect_eq "slot 0 started twice" 2 "$(jq '.workers[0].starts' "$T/b")"
[ "$new0" != "$pid0" ] && [ "$new0" != 0 ] && kill -0 "$new0" 2>/dev/null &&
	ok "worker 0 runs again (pid $pid0 -> $new0)" ||
	bad "worker 0 not started again: pid $new0"
expect_eq "worker 1 untouched" "$pid1" "$(jq '.workers[1].pid' "$T/b")"
sleep 1.5
touch "$T/stop"
wait $LOAD
forget_pid "$LOAD"

grep -q "worker 0 (pid $pid0) killed by signal 9; starting it again" "$T/floe.log" &&
	ok "the master logged the death" || bad "no log line for worker 0's death"
# A read that fails was in flight on worker 0 (sent before the kill: at
# most one per client, 16), or is a client's next read, sent at once on a
# new connection that the kernel queued on the dying worker's listening
# socket before that closed (sent after the kill; the check below bounds
# when).
failed=$(jq -s '[.[] | select(.err or .status != 200)] | length' "$T/load")
inflight=$(jq -s --argjson k "$kill_ms" '[.[] | select((.err or .status != 200) and .t0 <= $k)] | length' "$T/load")
n=$(wc -l <"$T/load")
[ "$inflight" -ge 1 ] && [ "$inflight" -le 16 ] &&
	ok "$failed of $n reads failed: $inflight worker 0 had in flight (at most 16), $((failed - inflight)) sent as it died" ||
	bad "$failed of $n reads failed, $inflight sent before the kill: $(jq -c -s '[.[] | select(.err or .status != 200)][0:9]' "$T/load")"
late=$(jq -s --argjson k "$kill_ms" '[.[] | select((.err or .status != 200) and .t0 > $k + 500)] | length' "$T/load")
expect_eq "no read sent 0.5 s after the kill failed (the dead one's backlog is its own)" 0 "$late"
held=$(jq -s --argjson k "$kill_ms" '[.[] | select(.worker == "1" and .t0 < $k and .t1 > $k)] | length' "$T/load")
[ "$held" -ge 1 ] && ok "worker 1 answered the $held reads it held across the kill" ||
	bad "no read of worker 1 spanned the kill"
during=$(jq -s --argjson k "$kill_ms" --argjson b "$back_ms" '[.[] | select(.worker == "1" and .t0 > $k and .t1 < $b + 300)] | length' "$T/load")
[ "$during" -ge 1 ] && ok "worker 1 kept serving: $during reads sent after the kill" ||
	bad "worker 1 answered no read sent after the kill"
after0=$(jq -s --argjson b "$back_ms" '[.[] | select(.worker == "0" and .t0 > $b)] | length' "$T/load")
[ "$after0" -ge 1 ] && ok "the new worker 0 answered $after0 reads" ||
	bad "the new worker 0 answered nothing"
# The dead worker's answers stay counted (copied on each tick: those of
# its last second may be lost).
sleep 1.2
admin GET /status
answered=$((n - failed))
recent=$(jq -s --argjson k "$kill_ms" '[.[] | select(.worker == "0" and .t1 > $k - 1100 and .t1 <= $k)] | length' "$T/load")
early=$(jq -s --argjson k "$kill_ms" '[.[] | select(.worker == "0" and .t1 <= $k - 1100)] | length' "$T/load")
total=$(jq .requests "$T/b")
[ "$pub0" -ge 10 ] && [ "$total" -ge $((answered - recent)) ] &&
	ok "/status counts $total of the $answered answers: the $pub0 the dead worker had copied too" ||
	bad "/status counts $total answers of $answered (the dead worker had copied $pub0, answered $early before its last second, $recent in it)"
expect_eq "/metrics: one restart" 1 \
	"$(curl -s --unix-socket "$SOCK" http://floe/metrics | awk '/^floe_worker_restarts_total/{print $2}')"

# SIGHUP: the master reads the file, then each worker does.
sed -i 's/^cache_size .*/cache_size = 1M/' "$T/floe.conf"
kill -HUP "$FLOE_PID"
for i in $(seq 100); do
	[ "$(grep -c 'reload: configuration .* applied (generation 2)' "$T/floe.log")" -ge 3 ] && break
	sleep 0.05
done
for w in "" "worker 0: " "worker 1: "; do
	grep -q "Z ${w}reload: configuration .* applied (generation 2)" "$T/floe.log" &&
		ok "SIGHUP reloaded ${w:-the master}" || bad "no reload line for ${w:-the master}"
done
CACHE_SIZE=1M
get $A
expect_header "a worker serves with the new file (cache on)" X-Floe-Cache miss

# A broken file on disk, not reloaded: worker 1 dies and comes back with
# the configuration its master runs.
cp "$T/floe.conf" "$T/floe.conf.good"
printf '[floe]\nworkers = many\n' >"$T/floe.conf"
admin GET /status
old1=$(jq '.workers[1].pid' "$T/b")
kill -9 "$old1"
for i in $(seq 100); do
	admin GET /status
	new1=$(jq '.workers[1].pid' "$T/b")
	[ "$new1" != "$old1" ] && [ "$new1" != 0 ] && break
	sleep 0.05
done
served=
for i in $(seq 60); do
	get "$A?after-broken-file=$i"
	[ "$S" = 200 ] && [ "$(hdr X-Floe-Worker)" = 1 ] && served=1 && break
done
[ -n "$served" ] && ok "worker 1 started again with the running configuration (the file is broken)" ||
	bad "worker 1 did not serve after a restart with a broken file on disk"
expect_header "... with the reloaded cache_size (1M): cache on" X-Floe-Cache miss
grep -q "worker 1: .*workers.*many" "$T/floe.log" &&
	bad "the new worker read the broken file" || ok "the new worker never read the file"
cp "$T/floe.conf.good" "$T/floe.conf"

# SIGTERM: reads in flight are answered, then every process exits.
rm -f "$T/stop"
node tests/integration/workers_load.js "$LISTEN" "$A?drain={n}" 4 "$T/stop" 8000 \
	>"$T/drain" 2>"$T/drain.err" &
LOAD=$!
pids+=($LOAD)
admin GET /status
w0=$(jq '.workers[0].pid' "$T/b")
w1=$(jq '.workers[1].pid' "$T/b")
# Reads in flight on both workers (each waits 300 ms at the catalog).
for i in $(seq 40); do
	admin GET /status
	[ "$(jq '[.workers[].connections] | min' "$T/b")" -ge 1 ] && break
	sleep 0.05
done
# The four clients read in step, 300 ms a read: a signal in the first 20 ms
# of one (or after its end) finds none in flight by the check below. Send
# it about 150 ms into a read, reckoned from the last read answered (the
# load writes each answer's line as it ends).
last=
for i in $(seq 100); do
	last=$(tail -n 1 "$T/drain" 2>/dev/null | jq '.t1 | floor' 2>/dev/null)
	[ -n "$last" ] && break
	sleep 0.02
done
[ -n "$last" ] || bad "drain: no read answered in 2 s ($(head -c 300 "$T/drain.err"))"
into=$((($(now_ms) - ${last:-0}) % 300))
[ "$into" -lt 150 ] && sleep "$(awk -v m=$((150 - into)) 'BEGIN { print m / 1000 }')"
[ "$into" -gt 200 ] && sleep "$(awk -v m=$((450 - into)) 'BEGIN { print m / 1000 }')"
# As systemd stops a unit: SIGTERM to every process of it at once (the
# master passes it on as well: a worker drains to its end all the same).
term_ms=$(now_ms)
kill -TERM "$FLOE_PID" "$w0" "$w1"
wait "$FLOE_PID"
rc=$?
FLOE_PID=
touch "$T/stop"
wait $LOAD
expect_eq "the master exits 0" 0 "$rc"
held=$(jq -s --argjson k "$term_ms" '[.[] | select(.t0 < $k - 20 and .t1 > $k)]' "$T/drain")
n_held=$(echo "$held" | jq length)
n_bad=$(echo "$held" | jq '[.[] | select(.status != 200)] | length')
[ "$n_held" -ge 2 ] && [ "$n_bad" = 0 ] &&
	ok "the $n_held reads in flight at SIGTERM were answered" ||
	bad "drain: $n_bad of $n_held reads in flight at SIGTERM not answered: $(echo "$held" | jq -c '.[0:3]') ($(wc -l <"$T/drain") reads: $(head -c 300 "$T/drain"))"
kill -0 "$w0" 2>/dev/null || kill -0 "$w1" 2>/dev/null &&
	bad "a worker outlived its master" || ok "both workers exited"
expect_eq "both workers drained and exited 0" 2 \
	"$(grep -c 'worker [01] (pid [0-9]*) stopped$' "$T/floe.log")"
grep -q "while draining" "$T/floe.log" && bad "a worker died while draining"

start_floe
admin GET /status
ws=$(jq -r '.workers[].pid' "$T/b" | tr '\n' ' ')
kill -9 "$FLOE_PID"
wait "$FLOE_PID" 2>/dev/null
FLOE_PID=
for i in $(seq 100); do
	alive=
	for w in $ws; do kill -0 "$w" 2>/dev/null && alive="$alive $w"; done
	[ -z "$alive" ] && break
	sleep 0.1
done
[ -n "$ws" ] && [ -z "$alive" ] && ok "the master killed: its workers ($ws) drained and exited" ||
	bad "workers still running after their master was killed:$alive"
finish
