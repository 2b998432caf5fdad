#!/bin/bash
# Cluster mode: node 2 is stopped; meanwhile wave 1 flips, a route is
# removed and another set, and etcd is compacted past node 2's revision.
# Restarted, node 2 serves its old mirror, finds its revision compacted,
# resyncs from a new range (logging the wave the resync moved) and ends
# with the others' routes, waves and hash.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 83
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
node_start 1
node_start 2

nctl 1 route set db.bunnies 1 && nctl 1 route set db.athena 1 ||
	bad "route set: $(cat "$T/ctl")"
wait_side 2 athena warehouse || bad "node 2 does not see db.athena"
node_stop 2
nctl 1 wave flip 1 lakehouse || bad "flip: $(cat "$T/ctl")"
nctl 1 route rm db.athena || bad "route rm: $(cat "$T/ctl")"
nctl 1 route set db.tables2 2 || bad "route set: $(cat "$T/ctl")"
rev=$(ectl get /floe/waves/1 -w json | jq -r .header.revision)
ectl compact "$rev" >/dev/null && ok "etcd compacted at revision $rev" ||
	bad "etcd compact $rev failed"

node_start 2
for i in $(seq 200); do
	grep -q "cluster: resync: wave 1 warehouse -> lakehouse" "$T/n2/floe.log" && break
	sleep 0.05
done
grep -q "compacted past revision" "$T/n2/floe.log" && ok "node 2 found its revision compacted" ||
	bad "node 2 did not report the compaction"
grep -q "cluster: resync: wave 1 warehouse -> lakehouse" "$T/n2/floe.log" &&
	ok "node 2 resynced and logged the wave it moved" || bad "no resync diff in node 2's log"
wait_side 2 bunnies lakehouse && ok "node 2 answers db.bunnies from the lakehouse" ||
	bad "node 2: db.bunnies from $(node_side 2 bunnies)"
nctl 2 --json route list
jq -e '[.routes[].object] | sort == ["db.bunnies", "db.tables2"]' "$T/ctl" >/dev/null &&
	ok "node 2's routes: db.athena gone, db.tables2 there" ||
	bad "node 2's routes: $(cat "$T/ctl")"
for i in $(seq 60); do
	nadmin 1 GET /cluster
	jq -e '(.nodes | length) == 2 and ([.nodes[].hash] | unique | length) == 1' \
		"$T/b" >/dev/null && break
	sleep 0.1
done
jq -e '([.nodes[].hash] | unique | length) == 1' "$T/b" >/dev/null &&
	ok "nodes 1 and 2 have the same hash" ||
	bad "hashes: $(jq -c '[.nodes[] | [.name, .hash, .applied_revision]]' "$T/b")"
# And it follows again: a rollback on node 1 reaches node 2.
nctl 1 wave rollback 1 || bad "rollback: $(cat "$T/ctl")"
wait_side 2 bunnies warehouse && ok "node 2 follows the watch again" ||
	bad "node 2 after the resync: $(node_side 2 bunnies)"
cluster_finish
