#!/bin/bash
# Cluster mode: a bulk import of N routes through node 1 goes to etcd in
# txns of at most 128 operations; floectl answers once node 1 applied the
# last one (its count is right there and then), and nodes 2 and 3 hold the
# same N routes and hash. The import's time is printed. A second import
# that moves them all, over the first one's wrapped records, and a route
# set over one of them keep every node's running hash what a node that
# starts and hashes its store from scratch finds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 84
N=${CLUSTER_IMPORT:-20000}
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd --quota-backend-bytes=4294967296
node_start 1
node_start 2
node_start 3

# import_routes FILE FIRST WHAT: the N routes db.t000001... to waves FIRST to
# FIRST+9 in turn, written to FILE and imported through node 1, timed.
import_routes() {
	local t0 ms
	awk -v n="$N" -v w="$2" 'BEGIN {
		for (i = 1; i <= n; i++)
			printf "{\"object\":\"db.t%06d\",\"wave\":%d}\n", i, i % 10 + w
	}' >"$1"
	t0=$(date +%s%N)
	nctl 1 route import "$1"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ "$RC" = 0 ] && grep -q "^$N set, 0 unchanged" "$T/ctl" &&
		ok "$3: $ms ms" || bad "$3: exit $RC: $(head -c 300 "$T/ctl")"
}
import_routes "$T/routes.jsonl" 1 "import of $N routes in cluster mode"
nadmin 1 GET '/routes?limit=1'
nctl 1 --json route list
[ "$(jq '.routes | length' "$T/ctl")" = "$N" ] &&
	ok "node 1 lists the $N routes as soon as floectl answered" ||
	bad "node 1 lists $(jq '.routes | length' "$T/ctl") routes"
for k in 2 3; do
	for i in $(seq 200); do
		nctl $k --json route list
		[ "$(jq '.routes | length' "$T/ctl")" = "$N" ] && break
		sleep 0.05
	done
	[ "$(jq '.routes | length' "$T/ctl")" = "$N" ] && ok "node $k holds the $N routes" ||
		bad "node $k holds $(jq '.routes | length' "$T/ctl") routes"
done
for i in $(seq 60); do
	nadmin 2 GET /cluster
	jq -e '(.nodes | length) == 3 and ([.nodes[].hash] | unique | length) == 1' \
		"$T/b" >/dev/null && break
	sleep 0.1
done
jq -e '([.nodes[].hash] | unique | length) == 1' "$T/b" >/dev/null &&
	ok "the 3 nodes have the same hash" ||
	bad "hashes: $(jq -c '[.nodes[] | [.name, .hash, .applied_revision]]' "$T/b")"
# Every node's by-wave counts, kept by its mirror, match the import.
for k in 1 2 3; do
	nadmin $k GET /waves
	jq -e --argjson n "$N" '([.waves[].objects] | add) == $n and
		(.waves | length) == 10 and
		all(.waves[]; .objects == ($n / 10 | floor))' "$T/b" >/dev/null &&
		ok "node $k counts the $N routes by wave" ||
		bad "node $k: $(jq -c '[.waves[] | [.wave, .objects]]' "$T/b")"
done
nadmin 2 GET '/waves/3?limit=2'
jq -e '.objects == ["db.t000002", "db.t000012"]' "$T/b" >/dev/null &&
	ok "node 2 lists a wave's routes from its index" ||
	bad "node 2 wave 3: $(head -c 300 "$T/b")"
# The same import again changes nothing: no txn at all.
rev=$(jq .applied_revision "$T/b")
nctl 1 route import "$T/routes.jsonl"
grep -q "^0 set, $N unchanged" "$T/ctl" && ok "the same import again: $N unchanged" ||
	bad "import again: $(head -c 300 "$T/ctl")"

# Every route to another wave: each record over the first import's
# wrapped one. Then a plain set over one of them.
import_routes "$T/routes2.jsonl" 11 "a second import moving the $N routes"
nctl 1 route set db.t000001 30 ||
	bad "route set: exit $RC: $(head -c 300 "$T/ctl")"
# Node 3 hashes its store from scratch as it starts; the others kept
# theirs event by event. Each node's own hash is in its own /cluster.
node_stop 3
node_start 3
same=
for i in $(seq 100); do
	hashes=$(for k in 1 2 3; do
		nadmin $k GET /cluster
		jq -r .hash "$T/b"
	done | sort -u)
	[ "$(echo "$hashes" | wc -l)" = 1 ] && same=1 && break
	sleep 0.1
done
[ -n "$same" ] &&
	ok "after it, the running hashes are node 3's from scratch" ||
	bad "hashes: $(echo $hashes)"
nadmin 3 GET '/routes?limit=1'
jq -e '.routes[0] | .object == "db.t000001" and .wave == 30' "$T/b" \
	>/dev/null && ok "node 3 has the set over the import" ||
	bad "node 3: $(head -c 300 "$T/b")"
cluster_finish
