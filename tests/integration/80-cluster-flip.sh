#!/bin/bash
# Cluster mode on a real etcd with three floe nodes: a route set and a
# flip on node 1 answer only once node 1 applied them (read your writes)
# and are seen by nodes 2 and 3; every node lists every node with equal
# hashes; propagation of flips and rollbacks from node 1's answer to the
# first answer of nodes 2 and 3 from the new side, over RUNS cycles
# (p50 and max printed, the max bounded); the rollback log of every node
# has each rollback, naming the node that made it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 80
RUNS=${CLUSTER_RUNS:-100}
NODES=${CLUSTER_NODES:-3} # 3 or more
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
for k in $(seq "$NODES"); do node_start "$k"; done

nctl 1 route set db.bunnies 1 && ok "route set on node 1" ||
	bad "route set on node 1: $RC $(cat "$T/ctl")"
[ "$(node_side 1 bunnies)" = warehouse ] && ok "node 1 reads from the warehouse" ||
	bad "node 1 reads from the warehouse: $(node_side 1 bunnies)"
nctl 1 wave flip 1 lakehouse && ok "flip on node 1" ||
	bad "flip on node 1: $RC $(cat "$T/ctl")"
# Read your writes: node 1 applied the flip before floectl returned.
[ "$(node_side 1 bunnies)" = lakehouse ] && ok "node 1 answers from the lakehouse at once" ||
	bad "node 1 answers from the lakehouse at once: $(node_side 1 bunnies)"
for k in $(seq 2 "$NODES"); do
	wait_side $k bunnies lakehouse && ok "node $k answers from the lakehouse" ||
		bad "node $k answers from the lakehouse: $(node_side $k bunnies)"
	nctl $k wave show 1 && grep -q lakehouse "$T/ctl" &&
		ok "node $k: floectl wave show says lakehouse" ||
		bad "node $k: wave show: $(cat "$T/ctl")"
done
# The events carry etcd's revisions: the same on every node.
e1=$(SOCK=$T/n1/floe.sock; admin GET /events; jq -c '[.events[] | [.seq, .type]]' "$T/b")
e3=$(SOCK=$T/n3/floe.sock; admin GET /events; jq -c '[.events[] | [.seq, .type]]' "$T/b")
[ -n "$e1" ] && [ "$e1" = "$e3" ] && ok "nodes 1 and 3 list the same events" ||
	bad "events differ: $e1 vs $e3"

# Every node lists all three, converged (the heartbeat is a third of 3 s).
# Node 3, which floectl asks below, may apply the last flip after node 2.
converged() {
	nadmin "$1" GET /cluster
	jq -e --argjson n "$NODES" '(.nodes | length) == $n and ([.nodes[].hash] | unique | length) == 1
		and ([.nodes[] | select(.lagging or .disagrees)] | length) == 0' \
		"$T/b" >/dev/null
}
for i in $(seq 50); do
	converged 3 && converged 2 && break
	sleep 0.1
done
jq -e --argjson n "$NODES" '(.nodes | length) == $n' "$T/b" >/dev/null &&
	ok "GET /cluster lists $NODES nodes" ||
	bad "GET /cluster lists $NODES nodes: $(cat "$T/b")"
jq -e '([.nodes[].hash] | unique | length) == 1' "$T/b" >/dev/null &&
	ok "the $NODES nodes have the same hash" || bad "hashes differ: $(cat "$T/b")"
nctl 3 cluster && [ "$(grep -c '^n[0-9]* ' "$T/ctl")" = "$NODES" ] &&
	ok "floectl cluster on node 3: $NODES nodes, none flagged" ||
	bad "floectl cluster: exit $RC: $(cat "$T/ctl")"
# A batch of reader sightings (each node flushes its reads every 5 s)
# changes no route or wave: a node whose heartbeat predates it is not
# lagging. Seen when node 3 stored a revision past its peers' heartbeats.
for i in $(seq 5); do node_side 3 bunnies >/dev/null; done
if until_node 3 /cluster '.stored_revision as $s |
	[.nodes[] | select(.self | not) | .applied_revision] | min < $s'; then
	jq -e '[.nodes[] | select(.lagging or .disagrees)] | length == 0' \
		"$T/b" >/dev/null &&
		ok "a reader batch past the peers' heartbeats flags none of them" ||
		bad "a reader batch flags peers: $(cat "$T/b")"
else
	bad "node 3 never stored past its peers' heartbeats: $(cat "$T/b")"
fi
nctl 3 --json cluster && jq -e '[.nodes[] | has("name", "applied_revision",
	"hash", "connected", "version", "heartbeat")] | all' "$T/ctl" >/dev/null &&
	ok "floectl --json cluster: each node with its fields" ||
	bad "floectl --json cluster: $(cat "$T/ctl")"
nadmin 1 GET /status
jq -e '.cluster.connected and .cluster.node == "n1"' "$T/b" >/dev/null &&
	ok "GET /status has the cluster" || bad "GET /status: $(head -c 300 "$T/b")"
nadmin 1 GET /metrics
grep -q '^floe_cluster_connected 1$' "$T/b" && grep -q "^floe_cluster_nodes $NODES\$" "$T/b" &&
	ok "metrics: floe_cluster_connected 1, floe_cluster_nodes $NODES" ||
	bad "metrics: $(grep floe_cluster "$T/b")"
if promtool check metrics <"$T/b" >"$T/promtool.out" 2>&1 && [ ! -s "$T/promtool.out" ]; then
	ok "promtool check metrics finds nothing to say about a node's metrics"
else
	bad "promtool check metrics: $(head -c 600 "$T/promtool.out")"
fi
# The key lives on a 3 s lease, put again every second: on a loaded
# machine a late keepalive can leave it out a moment, and the node puts it
# back. Five seconds to see it.
seen=
for _ in $(seq 50); do
	ectl get /floe/nodes/n3 --print-value-only >"$T/n3key" 2>&1
	jq -e '.name == "n3" and .connected' "$T/n3key" >/dev/null 2>&1 &&
		seen=1 && break
	sleep 0.1
done
[ -n "$seen" ] && ok "etcd holds node 3's key" ||
	bad "no node key for n3: $(head -c 300 "$T/n3key")"

# Propagation, RUNS flips and rollbacks.
nctl 1 wave rollback 1 && nctl 1 wave ack 1 || bad "rollback + ack: $(cat "$T/ctl")"
ports=$(for k in $(seq 2 "$NODES"); do printf '%s,' "${NODE_PORT[$k]}"; done)
prop=$(node tests/integration/cluster_prop.js "$T/n1/floe.sock" \
	"${ports%,}" /v1/routed/namespaces/db/tables/bunnies 1 "$RUNS")
if [ -n "$prop" ] && echo "$prop" | jq -e '.flip.max < 1000 and .rollback.max < 1000' >/dev/null; then
	ok "propagation over $RUNS flips and rollbacks to $((NODES - 1)) nodes: $prop"
else
	bad "propagation: $prop"
fi

# Every node logged every rollback, naming node 1.
for k in $(seq "$NODES"); do
	n=$(grep -c '"node":"n1"' "$T/n$k/rollback.log" 2>/dev/null)
	[ "${n:-0}" -ge "$((RUNS + 1))" ] && ok "node $k's rollback log has $n rollbacks by n1" ||
		bad "node $k's rollback log: ${n:-0} lines by n1, want $((RUNS + 1))"
done
cluster_finish
