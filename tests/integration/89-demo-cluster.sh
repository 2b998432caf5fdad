#!/bin/bash
# make demo-cluster (conf/demo-cluster.sh), on ports this test picks and
# in its scratch directory: etcd, the two catalogs and three nodes come
# up ready, the printed commands work (a flip through n1 is answered on
# n3 from the lakehouse; floectl cluster lists three nodes and a leader),
# and SIGTERM (as Ctrl-C) stops every process it started.
. "$(dirname "$0")/lib.sh"
lib_init 89
mapfile -t P < <(for i in 1 2 3 4 5 6 7; do free_port; done)
[ "$(printf '%s\n' "${P[@]}" | sort -u | wc -l)" = 7 ] || { echo "ports: ${P[*]}"; exit 1; }
DEMO_PORTS="${P[*]}" DEMO_VAR=$T/var setsid bash conf/demo-cluster.sh "$(dirname "$FLOE")" \
	>"$T/out" 2>&1 &
DEMO=$!
pids+=($DEMO)
for i in $(seq 300); do
	grep -q "A floe cluster is running" "$T/out" && break
	kill -0 $DEMO 2>/dev/null || break
	sleep 0.1
done
grep -q "A floe cluster is running" "$T/out" && ok "the demo cluster is up" ||
	{ bad "demo-cluster: $(tail -20 "$T/out")"; finish; }
NPIDS=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$T/out")
[ "$(echo "$NPIDS" | grep -c .)" = 3 ] && ok "it names the three nodes' pids" ||
	bad "pids: $NPIDS"
C1="$FLOECTL -s $T/var/n1/floe.sock"
$C1 route set db.bunnies 1 >/dev/null && $C1 wave flip 1 lakehouse >/dev/null ||
	bad "route set and flip through n1"
side=
for i in $(seq 100); do
	side=$(curl -si "localhost:${P[6]}/v1/routed/namespaces/db/tables/bunnies" |
		tr -d '\r' | awk -F': ' 'tolower($1) == "x-floe-target" { print $2 }')
	[ "$side" = lakehouse ] && break
	sleep 0.05
done
[ "$side" = lakehouse ] && ok "n3 answers from the lakehouse after the flip on n1" ||
	bad "n3 answers from '$side'"
for i in $(seq 50); do
	$C1 cluster >"$T/ctl" 2>&1 && grep -q "^leader n" "$T/ctl" && break
	sleep 0.1
done
[ "$(grep -c '^n[123] ' "$T/ctl")" = 3 ] && grep -q "^leader n" "$T/ctl" &&
	ok "floectl cluster: three nodes and a leader" || bad "floectl cluster: $(cat "$T/ctl")"
kill -TERM $DEMO
wait $DEMO 2>/dev/null
left=0
for p in $NPIDS; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
for port in "${P[@]}"; do
	(exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && left=$((left + 1))
done
[ $left = 0 ] && grep -q "stopping" "$T/out" && ok "SIGTERM stops the nodes, the catalogs and etcd" ||
	bad "$left processes or ports left after SIGTERM"
make -n demo-cluster 2>/dev/null | grep -q '^conf/demo-cluster.sh ' &&
	ok "make demo-cluster runs conf/demo-cluster.sh" ||
	bad "make -n demo-cluster: $(make -n demo-cluster 2>&1 | tail -2)"
if grep -qE 'Sanitizer|runtime error:' "$T"/var/n*/floe.log; then
	bad "a node's log has sanitizer reports:"
	grep -E -A 12 'Sanitizer|runtime error:' "$T"/var/n*/floe.log | head -40
fi
finish
