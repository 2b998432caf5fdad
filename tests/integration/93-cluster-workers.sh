#!/bin/bash
# Cluster mode with workers: node 1 runs workers = 2 on a real etcd, node 2
# runs one process. The master of node 1 owns the mirror; its workers read
# the store it applies etcd's changes to. Under load on node 1 (fresh
# connections, spread over both workers):
#  - a flip made on node 2 reaches both workers of node 1;
#  - a rollback made through node 1 is acknowledged only once applied: no
#    read on either worker sent after the acknowledgement is answered by
#    the side the wave left, and node 2 follows;
#  - a worker killed with SIGKILL is started again and serves the
#    cluster's routes; /status and /cluster show the workers and the node.
# alone: load across workers
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 93
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
node_conf 1
sed -i 's/^access_log .*/&\nworkers      = 2/' "$T/n1/floe.conf"
grep -q '^workers *= 2$' "$T/n1/floe.conf" || {
	echo "could not add workers = 2 to node 1's conf"
	exit 1
}
node_start 1
node_start 2
A=/v1/routed/namespaces/db/tables/bunnies
now_ms() { date +%s%3N; }

nadmin 1 GET /status
expect_eq "node 1 runs two workers" 2 "$(jq '.workers | length' "$T/b")"
jq -e '.cluster.connected and .cluster.node == "n1"' "$T/b" >/dev/null &&
	ok "node 1's /status has the cluster" ||
	bad "node 1's /status: $(head -c 300 "$T/b")"

nctl 2 route set db.bunnies 1 && ok "route set on node 2" ||
	bad "route set on node 2: $RC $(cat "$T/ctl")"
wait_side 1 bunnies warehouse && ok "node 1 serves the route made on node 2" ||
	bad "node 1: $(node_side 1 bunnies)"

# load_on K NAME: reads of db.bunnies on node K's data path, fresh
# connections, until $T/stop; the answers in $T/NAME.
load_on() {
	rm -f "$T/stop"
	node tests/integration/workers_load.js "${NODE_PORT[$1]}" "$A" 6 \
		"$T/stop" 20000 >"$T/$2" 2>"$T/$2.err" &
	LOAD=$!
	pids+=($LOAD)
	sleep 0.5
}
load_stop() {
	touch "$T/stop"
	wait "$LOAD"
	forget_pid "$LOAD"
}

# reads_from NAME SINCE SIDE WHAT: the reads of $T/NAME sent at SINCE (ms)
# or later, at least 4 of them, are all 200s from SIDE, on both workers.
reads_from() {
	local n wrong
	jq -s --argjson a "$2" '[.[] | select(.t0 >= $a)]' "$T/$1" >"$T/late"
	n=$(jq length "$T/late")
	wrong=$(jq --arg s "$3" '[.[] | select(.status != 200 or .target != $s)] | length' "$T/late")
	[ "$n" -ge 4 ] && [ "$wrong" = 0 ] &&
		ok "$4: all $n reads from the $3" ||
		bad "$4: $wrong of $n reads not from the $3: $(jq -c --arg s "$3" '[.[] | select(.target != $s)][0:3]' "$T/late")"
	expect_eq "$4: both workers answered" '["0","1"]' \
		"$(jq -c '[.[].worker] | unique' "$T/late")"
}

# A flip on node 2 reaches both workers of node 1.
load_on 1 flip
nctl 2 wave flip 1 lakehouse && ok "flip on node 2" ||
	bad "flip on node 2: $RC $(cat "$T/ctl")"
t_flip=$(now_ms)
sleep 1.5
load_stop
# Reads sent 1 s after node 2's acknowledgement: the watch has delivered.
reads_from flip "$((t_flip + 1000))" lakehouse "node 1, 1 s after node 2's flip"

# A rollback through node 1: read your writes on both workers.
load_on 1 rollback
t0=$(now_ms)
nctl 1 wave rollback 1 --reason cluster-workers && ok "rollback on node 1" ||
	bad "rollback on node 1: $RC $(cat "$T/ctl")"
ack=$(now_ms)
sleep 1
load_stop
reads_from rollback "$ack" warehouse \
	"node 1, after its rollback's acknowledgement ($((ack - t0)) ms)"
wait_side 2 bunnies warehouse && ok "node 2 follows node 1's rollback" ||
	bad "node 2: $(node_side 2 bunnies)"
grep -q '"node":"n1"' "$T/n2/rollback.log" &&
	ok "node 2's rollback log has node 1's rollback" ||
	bad "node 2's rollback log: $(cat "$T/n2/rollback.log" 2>/dev/null)"

# A worker killed: started again, and it serves the cluster's routes.
nadmin 1 GET /status
pid0=$(jq '.workers[0].pid' "$T/b")
kill -9 "$pid0"
for i in $(seq 100); do
	nadmin 1 GET /status
	new0=$(jq '.workers[0].pid' "$T/b")
	[ "$new0" != "$pid0" ] && [ "$new0" -gt 0 ] 2>/dev/null && break
	sleep 0.05
done
[ "$new0" != "$pid0" ] && ok "worker 0 started again (pid $pid0 -> $new0)" ||
	bad "worker 0 not started again"
nctl 2 wave ack 1 && nctl 2 wave flip 1 lakehouse &&
	ok "ack and flip again on node 2" || bad "flip again: $RC $(cat "$T/ctl")"
t_flip=$(now_ms)
load_on 1 again
sleep 1.5
load_stop
reads_from again "$((t_flip + 1000))" lakehouse \
	"after the restart, node 1 follows node 2's flip"
nadmin 1 GET /cluster
jq -e '(.nodes | length) == 2' "$T/b" >/dev/null &&
	ok "node 1's /cluster lists both nodes" || bad "/cluster: $(head -c 300 "$T/b")"
cluster_finish
