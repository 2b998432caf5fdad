#!/bin/bash
# Cluster mode: two operators on two nodes move the same wave at once, one
# rolling it back and one stepping it down to a canary share, both decided
# on the same state (etcd is held with SIGSTOP until both nodes have their
# change waiting on it, however slow the machine). Each round exactly
# one wins; the other exits 1 naming the concurrent change; every node
# ends in the winner's state. Then the same with etcd unreachable: the
# change is refused (exit 1) naming etcd, and nothing changed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 81
ROUNDS=${CLUSTER_ROUNDS:-8}
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
node_start 1
node_start 2
node_start 3
EPID=$(cat "$ETCD_DIR/1/pid")

nctl 1 route set db.bunnies 7 || bad "route set: $(cat "$T/ctl")"
wins_rb=0 wins_canary=0 named=0
for r in $(seq "$ROUNDS"); do
	# Back on the lakehouse, seen by node 2 as well.
	nctl 1 wave show 7 >/dev/null
	grep -q rolled_back "$T/ctl" && nctl 1 wave ack 7
	nctl 1 wave flip 7 lakehouse >/dev/null
	wait_side 2 bunnies lakehouse || bad "round $r: node 2 not on the lakehouse"
	kill -STOP "$EPID"
	"$FLOECTL" -s "$T/n1/floe.sock" wave rollback 7 --reason "round $r" \
		>"$T/a.out" 2>&1 &
	pa=$!
	"$FLOECTL" -s "$T/n2/floe.sock" wave flip 7 lakehouse --canary 30 \
		>"$T/b.out" 2>&1 &
	pb=$!
	race_wait 1 2 || bad "round $r: a change was not waiting on etcd: $(cat "$T/b")"
	kill -CONT "$EPID"
	wait $pa; ra=$?
	wait $pb; rb=$?
	if [ $ra = 0 ] && [ $rb = 1 ]; then
		wins_rb=$((wins_rb + 1)); loser=$T/b.out; want=rolled_back
	elif [ $ra = 1 ] && [ $rb = 0 ]; then
		wins_canary=$((wins_canary + 1)); loser=$T/a.out; want=canary
	else
		bad "round $r: exits $ra and $rb, want one 0 and one 1: $(cat "$T/a.out" "$T/b.out")"
		continue
	fi
	grep -q "changed concurrently" "$loser" && named=$((named + 1)) ||
		bad "round $r: the loser does not name the concurrent change: $(cat "$loser")"
	for k in 1 2 3; do
		for i in $(seq 100); do
			nctl $k wave show 7 >/dev/null
			grep -q "$want" "$T/ctl" && break
			sleep 0.02
		done
		grep -q "$want" "$T/ctl" ||
			bad "round $r: node $k is not $want: $(cat "$T/ctl")"
	done
done
[ $((wins_rb + wins_canary)) = "$ROUNDS" ] &&
	ok "$ROUNDS rounds: exactly one of two concurrent moves won each ($wins_rb rollbacks, $wins_canary canary steps)" ||
	bad "only $((wins_rb + wins_canary)) of $ROUNDS rounds had one winner"
[ "$named" = "$((wins_rb + wins_canary))" ] && ok "every loser named the concurrent change" ||
	bad "$named losers named the concurrent change"
cat "$T/b.out" "$T/a.out" | grep -m1 "changed concurrently" | sed 's/^/     /'

# etcd unreachable: a forward move is refused naming etcd, nothing moved.
nctl 1 wave show 7 >/dev/null
grep -q rolled_back "$T/ctl" && nctl 1 wave ack 7
nctl 1 wave show 7 >/dev/null; before=$(grep -o 'warehouse\|canary\|lakehouse' "$T/ctl" | head -1)
tests/etcd/stop.sh "$ETCD_DIR"
nctl 1 wave flip 7 lakehouse
[ "$RC" = 1 ] && grep -q etcd "$T/ctl" && ok "with etcd down a flip exits 1 naming etcd" ||
	bad "with etcd down a flip: exit $RC: $(cat "$T/ctl")"
nctl 1 wave show 7 >/dev/null
grep -q "$before" "$T/ctl" && ok "and the wave did not move ($before)" ||
	bad "the wave moved: $(cat "$T/ctl")"
[ "$(node_side 3 bunnies)" != error ] && ok "node 3 still serves from its mirror" ||
	bad "node 3 serves no more"
cluster_finish
