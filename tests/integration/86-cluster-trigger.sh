#!/bin/bash
# Cluster mode: the error trigger fires on node 1 (its lakehouse reads of
# a flipped wave fail); the rollback is one etcd txn, so node 2 follows,
# and each node writes it once in its rollback log, with the trigger and
# the node that fired it. A frozen wave is paged about, not rolled back,
# and the page's event goes through etcd: every node lists it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 86
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
EXTRA_POLICY="error_window = 20s
error_min_requests = 10
error_ratio = 2
error_floor = 1%
decommission_min_clean = 1"
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

# Wave 2 frozen: the trigger on node 1 pages, and node 2 lists the event.
nctl 1 route set db.bunnies 2 && nctl 1 wave flip 2 lakehouse &&
	nctl 1 ledger add db.bunnies --count ok --aggregate ok --hash ok &&
	nctl 1 wave signoff 2 --by "sre test" &&
	nctl 1 wave freeze 2 --reason "dual-write stopped" ||
	bad "wave 2 to frozen: $(cat "$T/ctl")"
wait_side 1 bunnies lakehouse || bad "node 1 did not follow wave 2's flip"
fault lakehouse '{"match":"bunnies","status":503,"count":5}'
for i in $(seq 10); do node_side 1 bunnies >/dev/null; done
PAGE='[.events[] | select(.type == "trigger.page")]'
until_node 2 "/events?after=0" "$PAGE | length == 1" &&
	jq -e "$PAGE[0] | .node == \"n1\" and .wave == 2 and
		.trigger == \"errors\" and .from == \"frozen\"" "$T/b" >/dev/null &&
	ok "node 2 lists node 1's page of frozen wave 2" ||
	bad "node 2's page events: $(jq -c "$PAGE" "$T/b")"
nctl 2 wave show 2
grep -q frozen "$T/ctl" && ok "node 2: wave 2 stays frozen" ||
	bad "node 2: $(cat "$T/ctl")"
expect_eq "node 1 wrote no rollback line for it" 1 \
	"$(grep -c . "$T/n1/rollback.log")"
cluster_finish
