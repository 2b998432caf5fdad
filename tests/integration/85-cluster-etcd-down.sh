#!/bin/bash
# Cluster mode with etcd stopped: both nodes keep serving their mirror and
# stay ready; a flip is refused (exit 1) naming etcd; an operator's
# rollback holds on its node at once (exit 0, the output says it is
# pending for etcd). Both nodes restarted while etcd is down serve their
# copy, the pending rollback included. etcd restarted on its data: the
# pending rollback is written over the lakehouse state it finds, its
# event says so, and the other node follows and logs it. Past the lease
# without etcd no node says it leads (the polls stop); with etcd back one
# does again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 85
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
node_start 1
node_start 2

nctl 1 route set db.bunnies 1 && nctl 1 wave flip 1 lakehouse ||
	bad "route set and flip: $(cat "$T/ctl")"
wait_side 2 bunnies lakehouse || bad "node 2 did not follow the flip"

# Stop etcd, keeping how it ran to start it again on the same data.
mapfile -d '' eargs <"/proc/$(cat "$ETCD_DIR/1/pid")/cmdline"
tests/etcd/stop.sh "$ETCD_DIR" 1

nctl 2 wave flip 1 lakehouse --canary 50
[ "$RC" = 1 ] && grep -q etcd "$T/ctl" && ok "etcd down: a canary step exits 1 naming etcd" ||
	bad "etcd down: canary step: exit $RC: $(cat "$T/ctl")"
nctl 1 wave rollback 1 --reason "etcd is down"
[ "$RC" = 0 ] && grep -q "pending" "$T/ctl" &&
	ok "etcd down: the rollback exits 0 and says it is pending" ||
	bad "etcd down: rollback: exit $RC: $(cat "$T/ctl")"
[ "$(node_side 1 bunnies)" = warehouse ] && ok "node 1 answers from the warehouse at once" ||
	bad "node 1 answers from $(node_side 1 bunnies)"
# The pending rollback's event is the last one, and counted.
nadmin 1 GET /events
jq -e '.last_seq == ([.events[].seq] | max) and
	.events[-1].type == "wave.rollback"' "$T/b" >/dev/null &&
	ok "node 1's last event is the pending rollback, at last_seq" ||
	bad "node 1's events: $(jq -c '{last_seq, e: [.events[] | [.seq, .type]]}' "$T/b")"
nadmin 1 GET /status
jq -e '.waves.rolled_back == 1 and .waves.lakehouse == 0' "$T/b" >/dev/null &&
	ok "node 1's /status counts wave 1 rolled back" ||
	bad "node 1's /status waves: $(jq -c .waves "$T/b")"
[ "$(node_side 2 bunnies)" = lakehouse ] && ok "node 2 keeps serving its mirror" ||
	bad "node 2 answers $(node_side 2 bunnies)"
s=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${NODE_PORT[2]}/readyz")
[ "$s" = 200 ] && ok "node 2's /readyz stays 200" || bad "node 2's /readyz: $s"
# Each node counts how its change ended: failed on node 2, pending on 1.
nadmin 2 GET /metrics
grep -q '^floe_cluster_writes_total{result="failed"} 1$' "$T/b" &&
	grep -q '^floe_cluster_writes_total{result="conflict"} 0$' "$T/b" &&
	ok "node 2 counts its canary step as a failed write" ||
	bad "node 2's writes: $(grep floe_cluster_writes_total "$T/b")"
nadmin 1 GET /metrics
grep -q '^floe_cluster_writes_total{result="pending"} 1$' "$T/b" &&
	ok "node 1 counts its rollback as a pending write" ||
	bad "node 1's writes: $(grep floe_cluster_writes_total "$T/b")"
# Node 2 restarted while etcd is down: it serves its store's copy.
node_stop 2
"$FLOE" -c "$T/n2/floe.conf" >>"$T/n2/floe.log" 2>&1 &
NODE_PID[2]=$!
for i in $(seq 300); do
	[ "$(node_side 2 bunnies)" != error ] && break
	sleep 0.02
done
[ "$(node_side 2 bunnies)" = lakehouse ] &&
	ok "node 2 restarted with etcd down serves its copy" ||
	bad "node 2 restarted: $(node_side 2 bunnies)"
nadmin 2 GET /status
jq -e '.cluster.loaded and (.cluster.connected | not)' "$T/b" >/dev/null &&
	ok "its /status says: loaded, not connected" ||
	bad "node 2 /status cluster: $(jq -c .cluster "$T/b")"
grep -q '"pending_etcd":true' "$T/n1/rollback.log" &&
	ok "node 1's rollback log has the line, pending for etcd" ||
	bad "node 1's rollback log: $(cat "$T/n1/rollback.log")"

# Node 1 restarted before etcd is back: its store kept the rollback, and
# that it is pending.
node_stop 1
"$FLOE" -c "$T/n1/floe.conf" >>"$T/n1/floe.log" 2>&1 &
NODE_PID[1]=$!
for i in $(seq 300); do
	[ "$(node_side 1 bunnies)" != error ] && break
	sleep 0.02
done
[ "$(node_side 1 bunnies)" = warehouse ] &&
	ok "node 1 restarted with etcd down still answers from the warehouse" ||
	bad "node 1 restarted: $(node_side 1 bunnies)"
grep -q "still pending" "$T/n1/floe.log" && ok "node 1 still has the rollback pending" ||
	bad "node 1 forgot the pending rollback"

# No node is sure it leads once etcd has been away longer than the lease
# (3 s): the catalogs' polls stop everywhere.
sleep 3
nl=0
for k in 1 2; do
	nadmin $k GET /cluster
	jq -e '.is_leader' "$T/b" >/dev/null && nl=$((nl + 1))
done
[ $nl = 0 ] && ok "etcd down past the lease: no node says it leads" ||
	bad "etcd down: $nl nodes say they lead"

# etcd back: the rollback is written, node 2 follows.
setsid "${eargs[@]}" >>"$ETCD_DIR/1/log" 2>&1 </dev/null &
echo $! >"$ETCD_DIR/1/pid"
wait_side 2 bunnies warehouse 1500 && ok "etcd back: node 2 answers from the warehouse" ||
	bad "etcd back: node 2 answers $(node_side 2 bunnies)"
ectl get /floe/waves/1 >/dev/null || bad "etcdctl get failed"
nctl 2 wave show 1
grep -q rolled_back "$T/ctl" && ok "node 2: wave 1 is rolled back" || bad "node 2: $(cat "$T/ctl")"
nadmin 2 GET /events
jq -e '[.events[] | select(.pending_etcd == true and .over == "lakehouse"
	and .node == "n1")] | length == 1' "$T/b" >/dev/null &&
	ok "its event says it was pending and won over lakehouse" ||
	bad "events: $(jq -c '.events[-2:]' "$T/b")"
for i in $(seq 50); do
	grep -q '"node":"n1"' "$T/n2/rollback.log" 2>/dev/null && break
	sleep 0.1
done
grep -q '"node":"n1"' "$T/n2/rollback.log" && ok "node 2 logged the rollback, by n1" ||
	bad "node 2's rollback log: $(cat "$T/n2/rollback.log" 2>/dev/null)"
[ "$(grep -c . "$T/n1/rollback.log")" = 1 ] && ok "node 1 logged it once" ||
	bad "node 1's rollback log: $(cat "$T/n1/rollback.log")"
for i in $(seq 100); do
	nl=0
	for k in 1 2; do
		nadmin $k GET /cluster
		jq -e '.is_leader' "$T/b" >/dev/null && nl=$((nl + 1))
	done
	[ $nl = 1 ] && break
	sleep 0.1
done
[ $nl = 1 ] && ok "etcd back: one node leads again" || bad "etcd back: $nl leaders"

# The pending rollback settled, node 1 holds etcd's record of wave 1 in
# place of its own, as node 2 does: the two hash alike.
for i in $(seq 100); do
	nadmin 1 GET /cluster
	h1=$(jq -r .hash "$T/b")
	nadmin 2 GET /cluster
	h2=$(jq -r .hash "$T/b")
	[ "$h1" = "$h2" ] && break
	sleep 0.1
done
[ "$h1" = "$h2" ] && ok "etcd back: both nodes hash alike ($h1)" ||
	bad "etcd back: node 1 hashes $h1, node 2 $h2"
cluster_finish
