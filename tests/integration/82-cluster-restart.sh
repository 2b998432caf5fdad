#!/bin/bash
# Cluster mode: a node killed with -9 while the others take CHANGES route
# changes, then restarted under its name: its first answers already come
# from its mirror (the table it had), it catches up (the time is printed),
# ends with the same routes and hash as the others, and takes its name
# back from the lease its previous run left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 82
CHANGES=${CLUSTER_CHANGES:-1000}
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
node_start 1
node_start 2
node_start 3

nctl 1 route set db.bunnies 1 && nctl 1 wave flip 1 lakehouse ||
	bad "route set and flip: $(cat "$T/ctl")"
wait_side 3 bunnies lakehouse && ok "node 3 follows the flip" || bad "node 3 did not follow"
# The node key's lease, exactly (jq would round the int64).
node_lease() { ectl get /floe/nodes/n3 -w fields | awk -F' : ' '/^"Lease"/ { print $2 }'; }
lease_before=$(node_lease)

node_stop 3 KILL
load=$(node tests/integration/cluster_load.js "$T/n1/floe.sock" "$CHANGES" 2) &&
	ok "$CHANGES route changes through node 1 while node 3 is down: $load" ||
	bad "changes through node 1: $load"
nctl 2 route set db.bunnies 2 || bad "route set on node 2: $(cat "$T/ctl")"
nadmin 1 GET /cluster
target=$(jq -r .stored_revision "$T/b")

# Restart: serves its mirror at once, then catches up.
resyncs=$(grep -c "cluster: resync" "$T/n3/floe.log")
t0=$(date +%s%N)
"$FLOE" -c "$T/n3/floe.conf" >>"$T/n3/floe.log" 2>&1 &
NODE_PID[3]=$!
first=
for i in $(seq 500); do
	first=$(node_side 3 bunnies)
	[ "$first" != error ] && break
	sleep 0.01
done
[ "$first" = lakehouse ] || [ "$first" = warehouse ] &&
	ok "node 3's first answer comes from its mirror ($first)" ||
	bad "node 3's first answer: $first"
caught=
for i in $(seq 1000); do
	rev=$(curl -s --max-time 1 --unix-socket "$T/n3/floe.sock" http://floe/cluster |
		jq -r '.applied_revision // 0' 2>/dev/null)
	[ "${rev:-0}" -ge "$target" ] && { caught=$(( ($(date +%s%N) - t0) / 1000000 )); break; }
	sleep 0.01
done
[ -n "$caught" ] && ok "node 3 caught up to revision $target in $caught ms (from its start)" ||
	bad "node 3 did not catch up to $target (at ${rev:-?})"
[ "$(node_side 3 bunnies)" = warehouse ] && ok "node 3 has the move of db.bunnies to wave 2" ||
	bad "node 3: db.bunnies answers from $(node_side 3 bunnies)"
n1=$(nctl 1 --json route list; jq '.routes | length' "$T/ctl")
n3=$(nctl 3 --json route list; jq '.routes | length' "$T/ctl")
[ "$n1" = "$n3" ] && [ "$n1" -ge "$CHANGES" ] && ok "nodes 1 and 3 hold the same $n3 routes" ||
	bad "routes: node 1 $n1, node 3 $n3"
[ "$(grep -c "cluster: resync" "$T/n3/floe.log")" = "$resyncs" ] &&
	ok "node 3 caught up through the watch (no resync)" ||
	bad "node 3 resynced instead of catching up"

# Its name: the key moved to a new lease and outlives the old one (3 s).
for i in $(seq 100); do
	lease_after=$(node_lease)
	[ -n "$lease_after" ] && [ "$lease_after" != "$lease_before" ] && break
	sleep 0.05
done
[ "$lease_after" != "$lease_before" ] && ok "node 3's key is on a new lease" ||
	bad "node 3's key lease: $lease_before -> $lease_after"
sleep 4
for i in $(seq 50); do
	nadmin 1 GET /cluster
	jq -e '(.nodes | length) == 3 and ([.nodes[].hash] | unique | length) == 1' \
		"$T/b" >/dev/null && break
	sleep 0.1
done
jq -e '(.nodes | length) == 3 and ([.nodes[].hash] | unique | length) == 1' "$T/b" >/dev/null &&
	ok "after the old lease expired: 3 nodes, one hash" ||
	bad "GET /cluster after the old lease: $(jq -c '[.nodes[] | [.name, .hash, .applied_revision]]' "$T/b")"
cluster_finish
