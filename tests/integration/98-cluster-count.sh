#!/bin/bash
# Cluster mode: the metadata count check's ledger record is the cluster's.
# The leader polls the catalogs; when a flipped table's snapshots carry
# different total-records it records a gap in the ledger. That record goes
# through etcd like any ledger record: it is under ledger/ in etcd, the
# other node lists it and its cutover gate counts it, and the reconcile
# trigger rolls the wave back on every node.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 98
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
EXTRA_POLICY="freshness_interval = 200ms
freshness_max_lag = 1h
freshness_for = 1h"
node_conf 1
node_conf 2
sed -i 's/^gate_min_clean = 0$/gate_min_clean = 1/' "$T/n1/floe.conf" "$T/n2/floe.conf"
node_start 1
node_start 2
LH=http://127.0.0.1:${CAT_PORT[lakehouse]}
HOUR_AGO=$(date -u -d '-1 hours' +%Y-%m-%dT%H:%M:%SZ)

nadmin 1 GET /cluster
leader=$(jq -r .leader "$T/b")
case $leader in
n1) other=2 ;;
n2) other=1 ;;
*) bad "no leader: $(cat "$T/b")"; cluster_finish ;;
esac
ok "the leader is $leader; node $other does not poll"

# The lakehouse commits a snapshot (the same 2 rows) newer than the
# warehouse's, so the counts compare; the table is clean and flipped.
curl -s --max-time 5 -o /dev/null -X POST \
	--data-binary '{"table":"db.athena"}' "$LH/_test/advance"
nctl 1 route set db.athena 1 || bad "route set: $(cat "$T/ctl")"
nctl 1 ledger add db.athena --count ok --aggregate ok --hash ok --at "$HOUR_AGO" ||
	bad "ledger add: $(cat "$T/ctl")"
until_node 2 '/ledger?object=db.athena' '.total == 1' || bad "node 2 never had the record"
nctl 1 wave flip 1 lakehouse
[ "$RC" = 0 ] && ok "wave 1 flipped" || bad "flip: exit $RC: $(cat "$T/ctl")"

# Now the lakehouse says 3 rows: the leader records the mismatch.
curl -s --max-time 5 -o /dev/null -X POST \
	--data-binary '{"table":"db.athena","total-records":"3"}' "$LH/_test/summary"
for k in 1 2; do
	until_node $k /waves/1 '.state == "rolled_back"' &&
		ok "node $k: wave 1 rolled back" ||
		bad "node $k: wave 1 is $(jq -r .state "$T/b")"
done
n=$(ectl get /floe/ledger/ --prefix -w json | jq '.kvs | length')
[ "$n" = 2 ] && ok "etcd holds both ledger records of db.athena" ||
	bad "ledger records in etcd: $n"
until_node "$other" '/ledger?object=db.athena' '.total == 2' &&
	ok "node $other lists the leader's gap record" ||
	bad "node $other's ledger: $(cat "$T/b")"
jq -e '[.records[] | select(.source == "metadata" and .bucket == "gap")] | length == 1' \
	"$T/b" >/dev/null && ok "it is the metadata count's gap" ||
	bad "node $other's records: $(cat "$T/b")"
# The gap blocks the cutover gate on the node that did not record it.
nctl "$other" wave ack 1 || bad "ack: $(cat "$T/ctl")"
nctl "$other" wave flip 1 lakehouse
[ "$RC" = 1 ] && grep -q "cutover gate" "$T/ctl" &&
	ok "node $other: the flip is refused by the gate on the gap" ||
	bad "node $other: flip: exit $RC: $(head -c 300 "$T/ctl")"
cluster_finish
