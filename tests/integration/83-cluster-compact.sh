#!/bin/bash
# Cluster mode: node 2 is stopped; meanwhile wave 1 flips, a route is
# removed and another set, and etcd is compacted past node 2's revision.
# Restarted, node 2 serves its old mirror, finds its revision compacted,
# resyncs from a new range (logging the wave the resync moved) and ends
# with the others' routes, waves and hash. A rollback node 2 applies from
# the watch is in its rollback log once; rollbacks it finds only through
# a resync (one of a wave it last saw forward, one of a wave rolled back
# again after a new flip) are written there too, once each, naming the
# node that made them, and a restart writes none again.
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
for i in $(seq 50); do
	[ -s "$T/n2/rollback.log" ] && break
	sleep 0.1
done
[ "$(grep -c . "$T/n2/rollback.log")" = 1 ] &&
	jq -e '.wave == 1 and .node == "n1" and .from == "lakehouse"' \
		"$T/n2/rollback.log" >/dev/null &&
	ok "node 2 logged the rollback it got from the watch, once" ||
	bad "node 2's rollback log: $(cat "$T/n2/rollback.log")"

# Rollbacks node 2 learns of only through a resync.
nctl 1 wave flip 2 lakehouse || bad "flip 2: $(cat "$T/ctl")"
wait_side 2 tables2 lakehouse || bad "node 2 does not see flip 2"
node_stop 2
nctl 1 wave rollback 2 --reason "seen by a resync" || bad "rollback 2: $(cat "$T/ctl")"
nctl 1 wave ack 1 && nctl 1 wave flip 1 lakehouse && nctl 1 wave rollback 1 ||
	bad "ack, flip and rollback 1 again: $(cat "$T/ctl")"
rev=$(ectl get /floe/waves/1 -w json | jq -r .header.revision)
ectl compact "$rev" >/dev/null || bad "etcd compact $rev failed"
node_start 2
wait_side 2 tables2 warehouse && ok "node 2 resynced: wave 2 rolled back" ||
	bad "node 2: db.tables2 from $(node_side 2 tables2)"
for i in $(seq 50); do
	[ "$(grep -c . "$T/n2/rollback.log")" -ge 3 ] && break
	sleep 0.1
done
jq -s -e 'length == 3 and (.[1:] | map([.wave, .from, .node, .trigger]) | sort ==
	[[1, "lakehouse", "n1", "operator"], [2, "lakehouse", "n1", "operator"]])' \
	"$T/n2/rollback.log" >/dev/null &&
	ok "node 2 logged both rollbacks found by the resync, once each" ||
	bad "node 2's rollback log after the resync: $(cat "$T/n2/rollback.log")"
jq -s -e '.[] | select(.wave == 2) | .reason == "seen by a resync"' \
	"$T/n2/rollback.log" >/dev/null && ok "with the rollback's reason" ||
	bad "no reason: $(cat "$T/n2/rollback.log")"
node_stop 2
node_start 2
nctl 1 route set db.after 1 || bad "route set: $(cat "$T/ctl")"
for i in $(seq 50); do
	nctl 2 --json route list
	jq -e '[.routes[].object] | index("db.after")' "$T/ctl" >/dev/null && break
	sleep 0.1
done
[ "$(grep -c . "$T/n2/rollback.log")" = 3 ] &&
	ok "node 2 restarted: nothing logged again" ||
	bad "node 2's rollback log after a restart: $(cat "$T/n2/rollback.log")"
[ "$(grep -c . "$T/n1/rollback.log")" = 3 ] &&
	ok "node 1 logged each of the three rollbacks once" ||
	bad "node 1's rollback log: $(cat "$T/n1/rollback.log")"
cluster_finish
