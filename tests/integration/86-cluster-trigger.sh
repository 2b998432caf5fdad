#!/bin/bash
# Cluster mode: the error trigger fires on node 1 (its lakehouse reads of
# a flipped wave fail); the rollback is one etcd txn, so node 2 follows,
# and each node writes it once in its rollback log, with the trigger and
# the node that fired it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 86
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
EXTRA_POLICY="error_window = 20s
error_min_requests = 10
error_ratio = 2
error_floor = 1%"
node_start 1
node_start 2

nctl 1 route set db.athena 1 && nctl 2 wave flip 1 lakehouse ||
	bad "route set and flip: $(cat "$T/ctl")"
wait_side 1 athena lakehouse || bad "node 1 did not follow the flip"
fault lakehouse '{"match":"athena","status":503,"count":5}'
for i in $(seq 10); do node_side 1 athena >/dev/null; done
wait_side 1 athena warehouse && ok "node 1's error trigger rolled the wave back" ||
	bad "node 1 answers $(node_side 1 athena)"
wait_side 2 athena warehouse && ok "node 2 follows the trigger's rollback" ||
	bad "node 2 answers $(node_side 2 athena)"
ectl get /floe/waves/1 >/dev/null
nctl 2 wave show 1
grep -q rolled_back "$T/ctl" && ok "node 2: wave 1 rolled back" || bad "node 2: $(cat "$T/ctl")"
for k in 1 2; do
	for i in $(seq 50); do
		[ -s "$T/n$k/rollback.log" ] && break
		sleep 0.1
	done
	[ "$(grep -c . "$T/n$k/rollback.log")" = 1 ] &&
		jq -e '.trigger == "errors" and .node == "n1" and .actor == "floe"' \
			"$T/n$k/rollback.log" >/dev/null &&
		ok "node $k logged it once: trigger errors, node n1" ||
		bad "node $k's rollback log: $(cat "$T/n$k/rollback.log")"
done
cluster_finish
