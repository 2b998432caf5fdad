#!/bin/bash
# make demo-cluster: cluster mode on this machine. One etcd (Debian's
# etcd-server; client 127.0.0.1:12379), the two demo catalogs (warehouse
# on 9001, lakehouse on 9002) and three floe nodes n1, n2, n3 on 8181,
# 8182, 8183, each with its own state, socket and logs under
# var/cluster/nK/. Ctrl-C stops all of them. Every run starts from nothing:
# var/cluster/ (etcd's data included) is removed first.
#   conf/demo-cluster.sh [BUILD_DIR]
# DEMO_PORTS="WH LH ETCD ETCD_PEER N1 N2 N3" and DEMO_VAR=DIR move it (the
# tests run it on ports they pick).
set -u
cd "$(dirname "$0")/.."
B=${1:-build}
FLOE=$B/floe FLOECTL=$B/floectl
read -r WH LH EC EP P1 P2 P3 <<<"${DEMO_PORTS:-9001 9002 12379 12380 8181 8182 8183}"
V=${DEMO_VAR:-var/cluster}
pids=()
stop() {
	trap - INT TERM EXIT
	echo; echo "demo-cluster: stopping the floe nodes, the catalogs and etcd"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	exit 0
}
command -v etcd >/dev/null ||
	{ echo "demo-cluster: etcd is not installed (make deps)" >&2; exit 1; }
for port in $WH $LH $EC $EP $P1 $P2 $P3; do
	if (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
		echo "demo-cluster: port $port is already in use; stop what holds it" >&2
		exit 1
	fi
done
for k in 1 2 3; do
	if [ -S "$V/n$k/floe.sock" ] && curl -s -o /dev/null --max-time 1 \
		--unix-socket "$V/n$k/floe.sock" http://floe/status; then
		echo "demo-cluster: node n$k is running on $V/n$k; stop it first" >&2
		exit 1
	fi
done
rm -rf "$V"
mkdir -p "$V/etcd" "$V/log"
trap stop INT TERM EXIT

etcd --name demo --data-dir "$V/etcd/data" \
	--listen-client-urls "http://127.0.0.1:$EC" \
	--advertise-client-urls "http://127.0.0.1:$EC" \
	--listen-peer-urls "http://127.0.0.1:$EP" \
	--initial-advertise-peer-urls "http://127.0.0.1:$EP" \
	--initial-cluster "demo=http://127.0.0.1:$EP" \
	--experimental-watch-progress-notify-interval=1s \
	>"$V/log/etcd.log" 2>&1 </dev/null &
pids+=($!)
node tests/catalog/catalog.js --port "$WH" --name warehouse \
	>"$V/log/warehouse-catalog.log" 2>&1 &
pids+=($!)
node tests/catalog/catalog.js --port "$LH" --name lakehouse --prefix lake \
	>"$V/log/lakehouse-catalog.log" 2>&1 &
pids+=($!)
for i in $(seq 100); do
	curl -s --max-time 1 "http://127.0.0.1:$EC/health" | grep -q true && break
	sleep 0.1
done
curl -s --max-time 1 "http://127.0.0.1:$EC/health" | grep -q true ||
	{ echo "demo-cluster: etcd did not start; see $V/log/etcd.log" >&2; exit 1; }

ports=("" "$P1" "$P2" "$P3")
npid=()
for k in 1 2 3; do
	d=$(realpath -m "$V/n$k")
	mkdir -p "$d"
	cat >"$d/floe.conf" <<EOC
; floe.conf of node n$k of make demo-cluster (written by conf/demo-cluster.sh).
[floe]
listen       = 127.0.0.1:${ports[$k]}
admin_socket = $d/floe.sock
state_dir    = $d/state
rollback_log = $d/rollback.log
access_log   = $d/access.log

[warehouse]
uri       = http://127.0.0.1:$WH
warehouse = analytics

[lakehouse]
uri       = http://127.0.0.1:$LH
warehouse = lakehouse

[policy]
gate_min_clean = 0

[cluster]
etcd  = http://127.0.0.1:$EC
name  = n$k
lease = 5s
EOC
	"$FLOE" -c "$d/floe.conf" >"$d/floe.log" 2>&1 &
	pids+=($!)
	npid[$k]=$!
done
for k in 1 2 3; do
	for i in $(seq 100); do
		curl -sf "http://127.0.0.1:${ports[$k]}/readyz" >/dev/null && break
		sleep 0.1
	done
	curl -sf "http://127.0.0.1:${ports[$k]}/readyz" >/dev/null || {
		echo "demo-cluster: node n$k did not become ready; see $V/n$k/floe.log" >&2
		exit 1
	}
done
C1="$FLOECTL -s $V/n1/floe.sock" C3="$FLOECTL -s $V/n3/floe.sock"
cat <<EOT

A floe cluster is running: three nodes sharing their routes and waves
through etcd (http://127.0.0.1:$EC, keys under /floe/), in front of two
Iceberg REST catalogs (warehouse :$WH, lakehouse :$LH).
  n1  http://127.0.0.1:$P1  (pid ${npid[1]})
  n2  http://127.0.0.1:$P2  (pid ${npid[2]})
  n3  http://127.0.0.1:$P3  (pid ${npid[3]})
Try:

  # every node side by side, and the leader (it polls the catalogs)
  $C1 cluster
  # a change on n1 ...
  $C1 route set db.bunnies 1
  $C1 wave flip 1 lakehouse
  # ... is answered on n3 from the lakehouse
  curl -si localhost:$P3/v1/routed/namespaces/db/tables/bunnies | grep X-Floe
  # a rollback on any node: every node follows, and logs it naming n3
  $C3 wave rollback 1 --reason "from n3"
  cat $V/n*/rollback.log
  # the leader key; kill -9 the leader's pid: another node leads (and
  # polls) once its 5 s lease has run out
  ETCDCTL_API=3 etcdctl --endpoints=localhost:$EC get /floe/leader --print-value-only

Logs: $V/n*/floe.log and $V/log/. Ctrl-C stops the nodes, the
catalogs and etcd; the next make demo-cluster starts from nothing again.
EOT
wait
