#!/bin/bash
# Cluster mode: a gate decided on one node's copy and a change to what it
# read, made at the same moment through another node. etcd is held with
# SIGSTOP until both nodes have their change waiting on it, so both are
# decided on the same state (however slow the machine); etcd takes them in
# either order. Every round must end as one node alone would have let it:
#
# - a route set into a wave on node 1 and a flip of that wave on node 2:
#   exactly one wins. Both winning is a flip whose cutover gate never saw
#   the new table (no ledger record) or a table that joined a lakehouse
#   wave without a gate.
# - a mismatched ledger record on node 1 and the flip on node 2: the flip
#   wins only if etcd took it before the record (as if made first: the
#   record is then the reconcile trigger's, not the gate's).
# - a route move of a table to another wave on node 1 and a ledger record
#   of that table on node 2: the record counts for the wave the table is
#   in when etcd takes it. One taken after the move is refused (409) and
#   counts for the new wave when repeated, never for the wave it left.
# - a 200-route import into a wave (bulk: more than one txn) on node 1
#   and its flip on node 2: exactly one wins. A bulk import of routes,
#   and one of ledger records, moves its waves' basis in its commit; one
#   into more waves than its commit txn holds is refused, nothing set;
#   a ledger import during which a route changes is refused whole.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
lib_init 97
ROUNDS=${CLUSTER_ROUNDS:-6}
catalog warehouse
catalog lakehouse --prefix lhp
cluster_etcd
node_conf 1
node_conf 2
sed -i 's/^gate_min_clean = 0$/gate_min_clean = 1/' "$T/n1/floe.conf" "$T/n2/floe.conf"
node_start 1
node_start 2
EPID=$(cat "$ETCD_DIR/1/pid")
HOUR_AGO=$(date -u -d '-1 hours' +%Y-%m-%dT%H:%M:%SZ)

# mod_revision of etcd key K (0: none).
modrev() {
	ectl get "$1" -w json | jq '.kvs[0].mod_revision // 0'
}
# wrote K RESULT: node K's floe_cluster_writes_total{result=RESULT}.
wrote() {
	nadmin "$1" GET /metrics
	awk -v m="floe_cluster_writes_total{result=\"$2\"}" '$1 == m { print $2 }' "$T/b"
}
state() {
	nadmin "$1" GET "/waves/$2"
	jq -r .state "$T/b"
}
# A wave W with one table db.okW, clean an hour ago, seen by node 2.
clean_wave() {
	nctl 1 route set "db.ok$1" "$1" || bad "route set db.ok$1: $(cat "$T/ctl")"
	nctl 1 ledger add "db.ok$1" --count ok --aggregate ok --hash ok --at "$HOUR_AGO" ||
		bad "ledger add db.ok$1: $(cat "$T/ctl")"
	until_node 2 "/ledger?object=db.ok$1" '.total == 1' ||
		bad "node 2 never had db.ok$1's record"
	until_node 2 "/resolve/db.ok$1" ".wave == $1" ||
		bad "node 2 never had db.ok$1's route"
}
# race: run "$A" through node 1 and "$B" through node 2 with etcd held;
# their exits in RA and RB, their output in $T/a.out and $T/b.out.
# Round R sends B first if odd (etcd takes them in either order).
race() {
	local pa pb
	kill -STOP "$EPID"
	if [ $((r % 2)) = 1 ]; then
		"$FLOECTL" -s "$T/n2/floe.sock" $B >"$T/b.out" 2>&1 &
		pb=$!
		sleep 0.1
	fi
	"$FLOECTL" -s "$T/n1/floe.sock" $A >"$T/a.out" 2>&1 &
	pa=$!
	if [ $((r % 2)) = 0 ]; then
		sleep 0.1
		"$FLOECTL" -s "$T/n2/floe.sock" $B >"$T/b.out" 2>&1 &
		pb=$!
	fi
	race_wait 1 2 || bad "round $r: a change was not waiting on etcd: $(cat "$T/b")"
	kill -CONT "$EPID"
	wait $pa; RA=$?
	wait $pb; RB=$?
}

echo "== a route joins the wave while it flips"
route_wins=0 flip_wins=0
for r in $(seq "$ROUNDS"); do
	w=$((10 + r))
	clean_wave $w
	A="route set db.new$w $w" B="wave flip $w lakehouse" race
	if [ $RA = 0 ] && [ $RB = 1 ]; then
		route_wins=$((route_wins + 1))
		grep -q "changed concurrently" "$T/b.out" ||
			bad "round $r: the flip's refusal does not say why: $(cat "$T/b.out")"
		# With the route on node 2 the gate sees db.new and refuses.
		until_node 2 "/resolve/db.new$w" ".wave == $w" ||
			bad "round $r: node 2 never had db.new$w"
		nctl 2 wave flip $w lakehouse
		[ "$RC" = 1 ] && grep -q "cutover gate" "$T/ctl" ||
			bad "round $r: flip again: exit $RC: $(head -c 300 "$T/ctl")"
		[ "$(state 1 $w)" = warehouse ] && [ "$(state 2 $w)" = warehouse ] ||
			bad "round $r: wave $w moved: $(state 1 $w) / $(state 2 $w)"
	elif [ $RA = 1 ] && [ $RB = 0 ]; then
		flip_wins=$((flip_wins + 1))
		grep -q "changed concurrently" "$T/a.out" ||
			bad "round $r: the route set's refusal does not say why: $(cat "$T/a.out")"
		until_node 1 "/waves/$w" '.state == "lakehouse"' ||
			bad "round $r: node 1 never had wave $w on the lakehouse"
		nadmin 1 GET "/resolve/db.new$w"
		[ "$(jq -r .why "$T/b")" = unassigned ] ||
			bad "round $r: db.new$w has a route: $(cat "$T/b")"
	else
		bad "round $r: route set exit $RA, flip exit $RB; want one 0 and one 1: $(cat "$T/a.out" "$T/b.out")"
	fi
done
[ $((route_wins + flip_wins)) = "$ROUNDS" ] &&
	ok "$ROUNDS rounds: one of the route set and the flip won each ($route_wins routes, $flip_wins flips)" ||
	bad "only $((route_wins + flip_wins)) of $ROUNDS rounds had one winner"
grep -h -m1 "changed concurrently" "$T/b.out" "$T/a.out" | head -1 | sed 's/^/     /'

echo "== a mismatch is recorded while the wave flips"
first=0 refused=0
for r in $(seq "$ROUNDS"); do
	w=$((30 + r))
	clean_wave $w
	A="ledger add db.ok$w --count fail --aggregate ok --hash ok --bucket value-drift"
	pre=$(ectl get "/floe/waves/$w" -w json | jq '.kvs[0].mod_revision // 0')
	B="wave flip $w lakehouse" race
	[ $RA = 0 ] || bad "round $r: the ledger record was refused: $(cat "$T/a.out")"
	# The mismatch: the newest of db.okW's two records in etcd.
	k=$(ectl get /floe/ledger/ --prefix --keys-only | grep "db.ok$w/" | tail -1)
	lrev=$(ectl get "$k" -w json | jq '.kvs[0].mod_revision')
	# Wave W's record just before etcd took the mismatch: flipped yet?
	at=$(ectl get "/floe/waves/$w" --rev=$((lrev - 1)) -w json |
		jq '.kvs[0].mod_revision // 0')
	if [ $RB = 1 ]; then
		refused=$((refused + 1))
		grep -q "changed concurrently" "$T/b.out" ||
			bad "round $r: the flip's refusal does not say why: $(cat "$T/b.out")"
		[ "$(state 2 $w)" = warehouse ] ||
			bad "round $r: wave $w is $(state 2 $w)"
	elif [ $RB = 0 ] && [ "$at" -gt "$pre" ]; then
		first=$((first + 1))
	else
		bad "round $r: flip exit $RB, taken after the mismatch (revision $lrev; the wave's record was last written at $at then, $pre before): its gate never saw it: $(cat "$T/b.out")"
	fi
done
[ $((first + refused)) = "$ROUNDS" ] &&
	ok "$ROUNDS rounds: no flip passed over a mismatch taken before it ($refused refused, $first taken first)" ||
	bad "only $((first + refused)) of $ROUNDS rounds ended as in one node"

echo "== a record is made while its table moves to another wave"
first=0 refused=0 c0=$(wrote 2 conflict) f0=$(wrote 2 failed)
for r in $(seq "$ROUNDS"); do
	from=$((60 + r)) to=$((80 + r))
	nctl 1 route set "db.mv$r" "$from" || bad "route set db.mv$r: $(cat "$T/ctl")"
	until_node 2 "/resolve/db.mv$r" ".wave == $from" ||
		bad "round $r: node 2 never had db.mv$r in wave $from"
	A="route set db.mv$r $to"
	B="ledger add db.mv$r --count fail --aggregate ok --hash ok --bucket value-drift"
	race
	[ $RA = 0 ] || bad "round $r: the route move was refused: $(cat "$T/a.out")"
	# The move's revision: its route's, in etcd (a table key's levels
	# are joined by 0x1e); every route change also writes basis/routes.
	mrev=$(ectl get /floe/objects/ --prefix -w json | jq --arg t "mv$r" \
		'[.kvs[] | select(.key | @base64d | endswith("\u001e" + $t)) | .mod_revision] | max // 0')
	[ "$(modrev /floe/basis/routes)" = "$mrev" ] ||
		bad "round $r: the move (revision $mrev) did not write basis/routes ($(modrev /floe/basis/routes))"
	k=$(ectl get /floe/ledger/ --prefix --keys-only | grep "db.mv$r/" | tail -1)
	if [ $RB = 0 ]; then
		lrev=$(modrev "$k")
		[ "$lrev" -gt 0 ] && [ "$lrev" -lt "$mrev" ] &&
			first=$((first + 1)) ||
			bad "round $r: the record was taken at revision $lrev, after db.mv$r moved to wave $to at $mrev: it counted for wave $from, which the table had left"
		continue
	fi
	refused=$((refused + 1))
	cp "$T/b.out" "$T/refused.out"
	grep -q "a route changed concurrently" "$T/b.out" ||
		bad "round $r: the record's refusal does not say why: $(cat "$T/b.out")"
	[ -z "$k" ] || bad "round $r: refused, yet etcd has $k"
	# Repeated once node 2 has the move, it counts for the new wave.
	until_node 2 "/resolve/db.mv$r" ".wave == $to" ||
		bad "round $r: node 2 never had db.mv$r in wave $to"
	nctl 2 ledger add "db.mv$r" --count fail --aggregate ok --hash ok --bucket value-drift ||
		bad "round $r: the repeated record: $(cat "$T/ctl")"
	k=$(ectl get /floe/ledger/ --prefix --keys-only | grep "db.mv$r/" | tail -1)
	[ -n "$k" ] && [ "$(modrev "/floe/basis/$to")" = "$(modrev "$k")" ] ||
		bad "round $r: the repeated record ($k) did not move basis/$to"
done
[ $((first + refused)) = "$ROUNDS" ] &&
	ok "$ROUNDS rounds: no record counted for a wave its table had left ($refused refused and repeated, $first taken first)" ||
	bad "only $((first + refused)) of $ROUNDS rounds ended as in one node"
if [ -f "$T/refused.out" ]; then sed "s/^/     /" "$T/refused.out"; fi
c1=$(wrote 2 conflict) f1=$(wrote 2 failed)
[ -n "$c0" ] && [ $((c1 - c0)) = "$refused" ] && [ "$f1" = "$f0" ] &&
	ok "node 2 counts them: floe_cluster_writes_total{result=\"conflict\"} $c0 -> $c1, \"failed\" $f1" ||
	bad "node 2's conflicts went $c0 -> $c1 (and failed $f0 -> $f1) for $refused refused records"

echo "== an import of 200 routes into the wave while it flips"
w=50
clean_wave $w
awk -v w=$w 'BEGIN { for (i = 1; i <= 200; i++)
	printf "{\"object\":\"db.bulk%03d\",\"wave\":%d}\n", i, w }' >"$T/routes.jsonl"
r=0
A="route import $T/routes.jsonl" B="wave flip $w lakehouse" race
if [ $RA = 0 ] && [ $RB = 1 ]; then
	ok "the import won; the flip was refused: $(head -c 200 "$T/b.out")"
	until_node 2 "/resolve/db.bulk200" ".wave == $w" ||
		bad "node 2 never had the import"
	nctl 2 wave flip $w lakehouse
	[ "$RC" = 1 ] && grep -q "cutover gate" "$T/ctl" &&
		ok "and a flip with the import in place is refused by the gate" ||
		bad "flip again: exit $RC: $(head -c 300 "$T/ctl")"
elif [ $RA = 1 ] && [ $RB = 0 ]; then
	ok "the flip won; the import was refused: $(head -c 200 "$T/a.out")"
	nadmin 1 GET "/resolve/db.bulk001"
	[ "$(jq -r .why "$T/b")" = unassigned ] && ok "and none of its routes is set" ||
		bad "db.bulk001 after the refused import: $(cat "$T/b")"
else
	bad "import exit $RA, flip exit $RB; want one 0 and one 1: $(cat "$T/a.out" "$T/b.out")"
fi

echo "== a bulk import moves the basis of its waves in its commit"
# The revision of the newest committed import record.
last_import() {
	ectl get /floe/imports/ --prefix -w json |
		jq '[.kvs[] | select(.value | @base64d | fromjson | .state == "committed") | .mod_revision] | max'
}
sed 's/"wave":50/"wave":51/' "$T/routes.jsonl" >"$T/routes51.jsonl"
nctl 1 route import "$T/routes51.jsonl"
[ "$RC" = 0 ] || bad "route import into wave 51: $(head -c 300 "$T/ctl")"
b=$(modrev /floe/basis/51) c=$(last_import)
[ "$b" -gt 0 ] && [ "$b" = "$c" ] &&
	ok "200 routes into wave 51: basis/51 written by the import's commit (revision $c)" ||
	bad "basis/51 at revision $b, the import committed at $c"
# One txn commits it: an import into more waves than that holds is refused.
awk 'BEGIN { for (i = 1; i <= 130; i++)
	printf "{\"object\":\"db.spread%03d\",\"wave\":%d}\n", i, 200 + i }' >"$T/spread.jsonl"
nctl 1 route import "$T/spread.jsonl"
[ "$RC" = 1 ] && grep -q "split it by wave" "$T/ctl" &&
	ok "an import into 130 waves is refused: $(head -c 160 "$T/ctl")" ||
	bad "an import into 130 waves: exit $RC: $(head -c 300 "$T/ctl")"
nadmin 1 GET /resolve/db.spread001
[ "$(jq -r .why "$T/b")" = unassigned ] && ok "and none of its routes is set" ||
	bad "db.spread001 after the refused import: $(cat "$T/b")"
awk 'BEGIN { for (i = 1; i <= 200; i++)
	printf "{\"object\":\"db.bulk%03d\",\"ts\":\"2026-11-29T06:00:00Z\",\"count_match\":true,\"aggregate_match\":true,\"hash_match\":true,\"bucket\":\"clean\"}\n", i }' >"$T/ledger.jsonl"
nctl 2 ledger import "$T/ledger.jsonl"
[ "$RC" = 0 ] || bad "ledger import on node 2: $(head -c 300 "$T/ctl")"
b2=$(modrev /floe/basis/51) c=$(last_import)
[ "$b2" -gt "$b" ] && [ "$b2" = "$c" ] &&
	ok "200 ledger records of its tables, through node 2: basis/51 moved to that commit (revision $c)" ||
	bad "basis/51 at revision $b2 (was $b), the ledger import committed at $c"
# Its records' tables were resolved at its start: a route changed before
# its commit makes it lose, whole.
sed 's/06:00:00Z/07:00:00Z/' "$T/ledger.jsonl" >"$T/ledger2.jsonl"
r=0
A="route set db.bulk001 52" B="ledger import $T/ledger2.jsonl" race
[ $RA = 0 ] && [ $RB = 1 ] && grep -q "a route changed while it ran" "$T/b.out" &&
	ok "a ledger import while a route changes is refused: $(head -c 220 "$T/b.out")" ||
	bad "route set exit $RA, ledger import exit $RB: $(cat "$T/a.out" "$T/b.out")"
nadmin 2 GET "/ledger?object=db.bulk002"
[ "$(jq .total "$T/b")" = 1 ] && ok "and none of its records is there" ||
	bad "db.bulk002's records after the refused import: $(cat "$T/b")"
cluster_finish
