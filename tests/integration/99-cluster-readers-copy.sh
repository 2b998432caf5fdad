#!/bin/bash
# Cluster mode: a node that reads etcd whole gets the reader inventory
# etcd no longer holds. Sightings travel as batches that live 5-10 min in
# etcd; here they are deleted and etcd's history compacted, as if that
# time had passed. Node 2, restarted after the compaction, resyncs and
# asks for a copy: node 1 (the leader) sends its whole inventory, and
# node 2 then lists the reader it missed while it was down. Node 3, new,
# lists every reader with node 1's counts and times, and its decommission
# gate refuses a freeze naming the stale readers it only knows from the
# copy. The asks are gone from etcd afterwards. Node 4, new while the
# others are stopped, refuses a freeze until its copy came. Node 1, the leader,
# killed and started past a compaction, gets its copy from node 2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 99
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
EXTRA_POLICY="decommission_min_clean = 1"
for k in 1 2 3; do node_conf "$k"; done
sed -i 's/^gate_min_clean = 0$/gate_min_clean = 1/' "$T"/n[123]/floe.conf
# Node 2's key outlives a SIGSTOP of it (the last part).
sed -i 's/^lease = 3s$/lease = 30s/' "$T/n2/floe.conf"
node_start 1
node_start 2

# load K TOKEN: a LoadTable of db.java_bunnies through node K's data path.
load() {
	curl -s -o /dev/null --max-time 5 -H "Authorization: Bearer $2" \
		"http://127.0.0.1:${NODE_PORT[$1]}/v1/routed/namespaces/db/tables/java_bunnies"
}
# readers K: node K's readers of db.java_bunnies, as identities.
readers() {
	nadmin "$1" GET '/readers?object=db.java_bunnies'
	jq -r '[.readers[].identity] | sort | join(",")' "$T/b"
}
# records K: the same, each with its side, count and times.
records() {
	nadmin "$1" GET '/readers?object=db.java_bunnies'
	jq -c '[.readers[] | [.identity, .side, .count, .first, .last]] | sort' "$T/b"
}
# stale K: node K's stale readers of wave 2, as identities.
stale() {
	nadmin "$1" GET '/readers?wave=2'
	jq -r '[.stale[].identity] | sort | join(",")' "$T/b"
}
# wait_readers K N: until node K lists N readers (15 s at most).
wait_readers() {
	local i
	for i in $(seq 150); do
		[ "$(readers "$1" | tr , '\n' | grep -c .)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

echo "== sightings through node 1 reach node 2 as batches"
nctl 1 route set db.java_bunnies 2
load 1 token-of-bob-9876543210
load 1 token-of-bob-9876543210
load 1 token-of-carol-5555555555
wait_readers 2 2 && ok "node 2 lists bob and carol: $(readers 2)" ||
	bad "node 2 lists '$(readers 2)', node 1 '$(readers 1)'"

echo "== node 2 is away while dave loads, and etcd forgets the batch"
node_stop 2
BATCHES=$(ectl get /floe/readers/n1/ --prefix --keys-only | grep -c .)
load 1 token-of-dave-1212121212
for i in $(seq 150); do
	[ "$(ectl get /floe/readers/n1/ --prefix --keys-only | grep -c .)" -gt "$BATCHES" ] &&
		break
	sleep 0.1
done
wait_readers 1 3 && ok "node 1 lists bob, carol and dave" ||
	bad "node 1 lists '$(readers 1)'"
ectl del /floe/readers/ --prefix >/dev/null
REV=$(ectl endpoint status -w json | jq '.[0].Status.header.revision')
ectl compact "$REV" >/dev/null &&
	ok "the batches are deleted and etcd compacted at revision $REV" ||
	bad "compact $REV failed"

echo "== node 2 comes back past the compaction: a resync, and a copy"
node_start 2
until_node 2 /cluster '.readers.copy == "done"' &&
	ok "node 2's copy is done: $(jq -c '.readers | {copy, copied, copied_from}' "$T/b")" ||
	bad "node 2: $(jq -c .readers "$T/b")"
jq -e '.resyncs >= 1' "$T/b" >/dev/null && ok "node 2 resynced" ||
	bad "node 2 did not resync: $(jq -c . "$T/b" | head -c 300)"
wait_readers 2 3 && ok "node 2 lists dave, whom it missed: $(readers 2)" ||
	bad "node 2 lists '$(readers 2)', node 1 '$(readers 1)'"

echo "== node 3 joins: every reader, with node 1's counts and times"
node_start 3
until_node 3 /cluster '.readers.copy == "done" and .readers.copied_from == "n1"' &&
	ok "node 3's copy came from node 1" ||
	bad "node 3: $(jq -c .readers "$T/b")"
R1=$(records 1)
R3=$(records 3)
[ "$R3" = "$R1" ] && jq -e 'length == 3 and ([.[] | .[2]] | sort == [1, 1, 2])' <<<"$R3" >/dev/null &&
	ok "node 3's records are node 1's: $R3" ||
	bad "node 3: $R3; node 1: $R1"
grep -q 'reader inventory is copied to node n3' "$T/n1/floe.log" &&
	grep -q 'reader inventory of node n1 is merged' "$T/n3/floe.log" &&
	ok "node 1 and node 3 log the copy" ||
	bad "logs: $(grep -h 'reader inventory' "$T"/n[13]/floe.log)"
for i in $(seq 100); do
	[ -z "$(ectl get /floe/readers-want/ --prefix --keys-only)" ] && break
	sleep 0.05
done
[ -z "$(ectl get /floe/readers-want/ --prefix --keys-only)" ] &&
	ok "no ask is left in etcd" ||
	bad "asks: $(ectl get /floe/readers-want/ --prefix --keys-only)"

echo "== node 3's decommission gate sees the stale readers"
nctl 1 ledger add db.java_bunnies --count ok --aggregate ok --hash ok \
	--at "$(date -u -d '-1 hours' +%Y-%m-%dT%H:%M:%SZ)"
nctl 1 wave flip 2 lakehouse
[ "$RC" = 0 ] && ok "wave 2 flipped through node 1" || bad "flip 2: $(cat "$T/ctl")"
nctl 3 ledger add db.java_bunnies --count ok --aggregate ok --hash ok
nctl 3 wave signoff 2 --by alice
[ "$(stale 3)" = "$(stale 1)" ] && [ "$(stale 3)" = "$(readers 1)" ] &&
	ok "node 3's stale readers are node 1's: $(stale 3)" ||
	bad "stale on node 3: '$(stale 3)', on node 1: '$(stale 1)'"
nctl 3 wave freeze 2
[ "$RC" = 1 ] && grep -q "3 stale readers still load the warehouse copy" "$T/ctl" &&
	ok "node 3 refuses the freeze, naming the three" ||
	bad "freeze on node 3: exit $RC: $(head -c 400 "$T/ctl")"

echo "== a node whose copy has not come refuses a freeze"
# Nodes 1 to 3 stopped (SIGSTOP): node 4, new, asks, and no one answers;
# node 2's key (lease 30 s) says a node is there to answer.
node_conf 4
sed -i 's/^gate_min_clean = 0$/gate_min_clean = 1/' "$T/n4/floe.conf"
for k in 1 2 3; do kill -STOP "${NODE_PID[$k]}"; done
node_start 4
nadmin 4 GET /cluster
jq -e '.readers.copy == "waiting" or .readers.copy == "asking"' "$T/b" >/dev/null &&
	ok "node 4 waits for its copy ($(jq -r .readers.copy "$T/b"))" ||
	bad "node 4: $(jq -c .readers "$T/b")"
copy_metric() {
	curl -s --unix-socket "$T/n$1/floe.sock" http://floe/metrics |
		awk '$1 == "floe_cluster_readers_copy_waiting" {print $2}'
}
[ "$(copy_metric 4)" = 1 ] && ok "node 4: floe_cluster_readers_copy_waiting 1" ||
	bad "node 4: floe_cluster_readers_copy_waiting '$(copy_metric 4)'"
nctl 4 wave freeze 2
[ "$RC" = 1 ] && grep -q "has not merged another node's copy of the reader inventory yet" "$T/ctl" &&
	ok "node 4 refuses the freeze until its copy is merged: $(cat "$T/ctl")" ||
	bad "freeze on node 4: exit $RC: $(head -c 400 "$T/ctl")"
for k in 1 2 3; do kill -CONT "${NODE_PID[$k]}"; done
until_node 4 /cluster '.readers.copy == "done"' &&
	ok "node 4's copy came from $(jq -r .readers.copied_from "$T/b") once the nodes went on" ||
	bad "node 4: $(jq -c .readers "$T/b")"
[ "$(copy_metric 4)" = 0 ] && ok "node 4: floe_cluster_readers_copy_waiting 0" ||
	bad "node 4: floe_cluster_readers_copy_waiting '$(copy_metric 4)'"
nctl 4 wave freeze 2
[ "$RC" = 1 ] && grep -q "3 stale readers still load the warehouse copy" "$T/ctl" &&
	ok "then node 4 refuses it for the three stale readers" ||
	bad "freeze on node 4: exit $RC: $(head -c 400 "$T/ctl")"

echo "== the leader resyncs: another node copies to it"
# Killed and started again within its lease, node 1 takes its leader key
# back; either way node 2 (the leader, or the first other node by name)
# answers node 1's ask.
node_stop 1 KILL
load 2 token-of-erin-3434343434
wait_readers 2 4 && ok "node 2 lists erin, who loaded while node 1 was down" ||
	bad "node 2 lists '$(readers 2)'"
for i in $(seq 150); do
	[ -n "$(ectl get /floe/readers/n2/ --prefix --keys-only)" ] && break
	sleep 0.1
done
ectl del /floe/readers/ --prefix >/dev/null
REV=$(ectl endpoint status -w json | jq '.[0].Status.header.revision')
ectl compact "$REV" >/dev/null || bad "compact $REV failed"
node_start 1
until_node 1 /cluster '.readers.copy == "done" and .readers.copied_from == "n2"' &&
	ok "node 1's copy came from node 2 ($(jq -r '.leader' "$T/b") leads)" ||
	bad "node 1: $(jq -c '{leader, readers}' "$T/b")"
wait_readers 1 4 && ok "node 1 lists erin: $(readers 1)" ||
	bad "node 1 lists '$(readers 1)'"
cluster_finish
