#!/bin/bash
# Cluster mode: the freshness and count polls run on one node only, the
# leader (the holder of the leased key /floe/leader), so the catalogs are
# polled once per cluster; killed with -9, the leader is replaced by
# another node within the lease TTL, which takes the polls over (a
# freshness run in progress starts again there and still rolls the
# lagging wave back); every node shows the leader (GET /cluster, floectl
# cluster, /metrics); a leader stopped with TERM gives the key up, and
# another leads well before its lease would end; a leader killed and
# restarted at once takes its key back; a leader key put by hand that
# names no node makes none lead, each saying why, until it is deleted.
# Polls are counted by the test catalogs.
# alone: bounds a takeover by the lease TTL
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 87
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
EXTRA_POLICY="freshness_interval = 200ms
freshness_max_lag = 1s
freshness_for = 2s"
WH=http://127.0.0.1:${CAT_PORT[warehouse]}
LH=http://127.0.0.1:${CAT_PORT[lakehouse]}
TTL=3 # lease = 3s in cluster.sh
for k in 1 2 3; do node_start $k; done

# leaders: "n1:0 n2:1 n3:0", each running node's is_leader.
leaders() {
	local k out=""
	for k in 1 2 3; do
		[ -n "${NODE_PID[$k]}" ] || continue
		out+="n$k:$(curl -s --max-time 1 --unix-socket "$T/n$k/floe.sock" \
			http://floe/cluster | jq -r 'if .is_leader then 1 else 0 end') "
	done
	echo "${out% }"
}
# the_leader: the one running node that says it leads, or "".
the_leader() {
	local l
	l=$(leaders | tr ' ' '\n' | grep ':1$' | cut -d: -f1)
	[ "$(echo "$l" | grep -c .)" = 1 ] && echo "${l#n}"
}
# wait_leader TRIES PAUSE: echo the one node that leads, polling at most
# TRIES times PAUSE seconds apart; "" if none came.
wait_leader() {
	local i l
	for i in $(seq "$1"); do
		l=$(the_leader)
		[ -n "$l" ] && break
		sleep "$2"
	done
	echo "$l"
}
# polls URL: LoadTable polls (?snapshots=refs) the catalog saw since cleared.
polls() {
	curl -s --max-time 5 "$1/_test/requests" |
		jq '[.requests[] | select(.url | contains("snapshots=refs"))] | length'
}
clear_polls() {
	curl -s --max-time 5 -X DELETE "$WH/_test/requests" >/dev/null
	curl -s --max-time 5 -X DELETE "$LH/_test/requests" >/dev/null
}
# cycles K: node K's finished poll cycles.
cycles() {
	curl -s --max-time 1 --unix-socket "$T/n$1/floe.sock" http://floe/status |
		jq '.triggers.freshness.cycles'
}

nctl 1 route set db.athena 1 && nctl 1 wave flip 1 lakehouse ||
	bad "route set and flip: $(cat "$T/ctl")"
L=$(wait_leader 100 0.1)
[ -n "$L" ] && ok "one leader among three nodes: n$L ($(leaders))" ||
	bad "no single leader: $(leaders)"
[ "$(ectl get /floe/leader --print-value-only)" = "n$L" ] &&
	ok "etcd's /floe/leader names n$L" ||
	bad "/floe/leader: $(ectl get /floe/leader --print-value-only)"
agree=1
for k in 1 2 3; do
	nadmin $k GET /cluster
	jq -e --arg l "n$L" '.leader == $l and
		([.nodes[] | select(.leader) | .name] == [$l])' "$T/b" >/dev/null || agree=0
done
[ $agree = 1 ] && ok "every node's GET /cluster names n$L the leader" ||
	bad "GET /cluster: $(jq -c '{leader, nodes: [.nodes[] | [.name, .leader]]}' "$T/b")"
# (Its exit status says whether every node has caught up, which right
# after the start need not be so yet; the leader lines are what counts.)
nctl $((L % 3 + 1)) cluster
grep -q "^leader n$L " "$T/ctl" &&
	grep -Eq "^n$L +leader " "$T/ctl" &&
	ok "floectl cluster on another node shows the leader" ||
	bad "floectl cluster: $(cat "$T/ctl")"
nadmin $L GET /metrics
m1=$(grep -c '^floe_cluster_leader 1$' "$T/b")
nadmin $((L % 3 + 1)) GET /metrics
m0=$(grep -c '^floe_cluster_leader 0$' "$T/b")
[ "$m1$m0" = 11 ] && ok "metrics: floe_cluster_leader 1 on the leader, 0 elsewhere" ||
	bad "floe_cluster_leader: leader $m1, other $m0"

# count_window SECONDS: polls per catalog and cycles per node over it.
count_window() {
	local k
	for k in 1 2 3; do C0[$k]=$([ -n "${NODE_PID[$k]}" ] && cycles $k || echo 0); done
	clear_polls
	sleep "$1"
	PW=$(polls "$WH") PL=$(polls "$LH")
	for k in 1 2 3; do
		C1[$k]=$([ -n "${NODE_PID[$k]}" ] && cycles $k || echo 0)
		D[$k]=$((C1[$k] - C0[$k]))
	done
}
declare -A C0=() C1=() D=()
# 3 s at 200 ms: about 15 polls per catalog from one poller, 45 from three.
count_window 3
echo "   polls in 3 s: warehouse $PW, lakehouse $PL; cycles n1 ${D[1]} n2 ${D[2]} n3 ${D[3]}"
[ "$PW" -ge 5 ] && [ "$PW" -le 20 ] && [ "$PL" -ge 5 ] && [ "$PL" -le 20 ] &&
	ok "the catalogs are polled once per cluster ($PW, $PL in 3 s)" ||
	bad "polls in 3 s: warehouse $PW, lakehouse $PL"
busy=0
for k in 1 2 3; do [ "${D[$k]}" -gt 0 ] && busy=$((busy + 1)); done
[ $busy = 1 ] && [ "${D[$L]}" -gt 0 ] && ok "only the leader n$L ran poll cycles" ||
	bad "poll cycles: n1 ${D[1]} n2 ${D[2]} n3 ${D[3]} (leader n$L)"

# The lakehouse stops advancing while the warehouse does: a freshness run.
(while :; do
	curl -s --max-time 5 -X POST --data-binary '{"table":"db.athena"}' \
		"$WH/_test/advance" >/dev/null
	sleep 0.1
done) &
pids+=($!)
# Let the run start on the leader (the lag passes 1 s), then kill it.
for i in $(seq 50); do
	curl -s --max-time 1 --unix-socket "$T/n$L/floe.sock" http://floe/status |
		jq -e '.triggers.freshness.objects."db.athena".lag_ms > 1000' >/dev/null && break
	sleep 0.1
done
OLD=$L
t0=$(date +%s%N)
node_stop "$OLD" KILL
NEW=$(wait_leader 100 0.05)
ms=$((($(date +%s%N) - t0) / 1000000))
echo "   takeover: n$NEW leads $ms ms after n$OLD was killed (lease ${TTL}s)"
[ -n "$NEW" ] && [ "$NEW" != "$OLD" ] && ok "n$NEW took over from the killed n$OLD" ||
	bad "no new leader after the kill: $(leaders)"
# etcd revokes expired leases every 500 ms; then the watch, a campaign
# txn and this test's polling of three nodes.
[ "$ms" -le $((TTL * 1000 + 1500)) ] &&
	ok "within the lease TTL (${TTL}s, + 1.5 s for etcd's expiry sweep and the rest): $ms ms" ||
	bad "takeover took $ms ms"
grep -q "is the leader" "$T/n$NEW/floe.log" && ok "n$NEW's log says it leads" ||
	bad "n$NEW's log: $(grep -i leader "$T/n$NEW/floe.log" | tail -3)"
# The new leader finishes the freshness run: wave 1 goes back.
for i in $(seq 100); do
	[ "$(node_side "$NEW" athena)" = warehouse ] && break
	sleep 0.1
done
[ "$(node_side "$NEW" athena)" = warehouse ] &&
	ok "the new leader's freshness trigger rolled wave 1 back" ||
	bad "wave 1 on n$NEW: $(node_side "$NEW" athena)"
for k in 1 2 3; do
	[ -n "${NODE_PID[$k]}" ] || continue
	for i in $(seq 50); do
		[ -s "$T/n$k/rollback.log" ] && break
		sleep 0.1
	done
	[ "$(grep -c . "$T/n$k/rollback.log")" = 1 ] &&
		jq -e --arg n "n$NEW" '.trigger == "freshness" and .node == $n' \
			"$T/n$k/rollback.log" >/dev/null &&
		ok "n$k logged the rollback once, fired by n$NEW" ||
		bad "n$k's rollback log: $(cat "$T/n$k/rollback.log")"
done

# The killed node comes back: it follows, the leader stays.
node_start "$OLD"
sleep 1
[ "$(the_leader)" = "$NEW" ] && ok "n$OLD restarted: n$NEW still leads" ||
	bad "after the restart: $(leaders)"
nadmin "$OLD" GET /cluster
jq -e --arg l "n$NEW" '.leader == $l and (.is_leader | not)' "$T/b" >/dev/null &&
	ok "the restarted n$OLD names n$NEW the leader" ||
	bad "n$OLD's GET /cluster: $(jq -c '{leader, is_leader}' "$T/b")"

# The leader stopped cleanly gives the key up: another leads at once,
# not a lease later.
t0=$(date +%s%N)
node_stop "$NEW"
L2=$(wait_leader 100 0.05)
ms=$((($(date +%s%N) - t0) / 1000000))
echo "   n$NEW stopped with TERM: n$L2 leads $ms ms later"
[ -n "$L2" ] && [ "$L2" != "$NEW" ] && [ "$ms" -lt $((TTL * 1000)) ] &&
	ok "n$NEW stopped with TERM gave the key up: n$L2 leads after $ms ms" ||
	bad "after stopping n$NEW: leader '$L2' after $ms ms"
grep -q "giving the leader key up" "$T/n$NEW/floe.log" &&
	ok "n$NEW's log says it gave the key up" || bad "n$NEW's log: $(tail -3 "$T/n$NEW/floe.log")"

# The leader killed and restarted at once, under its name, while its old
# lease still holds the key: it takes the key back with its new lease.
node_stop "$L2" KILL
t0=$(date +%s%N)
node_start "$L2"
for i in $(seq 100); do
	[ "$(the_leader)" = "$L2" ] && break
	sleep 0.05
done
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(the_leader)" = "$L2" ] && [ "$ms" -lt $((TTL * 1000)) ] &&
	ok "n$L2 restarted within its lease leads again after $ms ms" ||
	bad "n$L2 restarted: leaders $(leaders) after $ms ms"

# The leader key put by hand with what is no node's name (a byte that is
# not UTF-8): no node leads, each says why, and GET /cluster still
# answers; once the key is deleted, a node leads again.
printf '\377' | ectl put /floe/leader >/dev/null || bad "etcdctl put failed"
for i in $(seq 50); do
	leaders | grep -q ':1' || break
	sleep 0.1
done
for k in 1 2 3; do
	[ -n "${NODE_PID[$k]}" ] || continue
	nadmin "$k" GET /cluster
	[ "$S" = 200 ] && jq -e '.leader == null and (.is_leader | not)' "$T/b" >/dev/null &&
		ok "n$k: GET /cluster answers, no leader" ||
		bad "n$k: GET /cluster $S: $(head -c 300 "$T/b")"
	grep -q "the leader key holds 1 bytes that are not a node name" "$T/n$k/floe.log" &&
		ok "n$k logs why no node leads" || bad "n$k's log: $(tail -3 "$T/n$k/floe.log")"
	curl -s --unix-socket "$T/n$k/floe.sock" http://floe/metrics |
		grep -qx "floe_cluster_leader 0" && ok "n$k: floe_cluster_leader 0" ||
		bad "n$k's floe_cluster_leader is not 0"
done
ectl del /floe/leader >/dev/null || bad "etcdctl del failed"
L3=$(wait_leader 60 0.1)
[ -n "$L3" ] && ok "the key deleted, n$L3 leads" || bad "after the delete: $(leaders)"
cluster_finish
