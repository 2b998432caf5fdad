#!/bin/bash
# bench/cluster.sh BUILD_DIR -- `BENCH_ONLY=cluster make bench`: a floe
# node in cluster mode (a real etcd on loopback, its routes and waves
# mirrored from it) against a single-node floe with the same 10,000
# routes, both in front of the same bench-upstream, on the same CPU.
# Routed 4 KB LoadTables with wrk, rounds interleaved: medians of req/s,
# p50, p99 and the proxy's CPU per request (/proc), and the ratios cluster
# / single. The data path reads the node's store and never waits on etcd:
# the ratio should be about 1. Writes bench/results/only-cluster.json.
#
# Knobs: BENCH_ROUNDS (5), BENCH_SECS (4), BENCH_WARM (2), BENCH_CONNS
# (32), BENCH_ROUTES (10000), BENCH_LG_CPU (0), BENCH_PROXY_CPU (1),
# BENCH_OUT.
set -u
cd "$(dirname "$0")/.." || exit 1
TOP=$PWD
B=${1:-build}
FLOE=$TOP/$B/floe
FLOECTL=$TOP/$B/floectl
UPSTREAM=$TOP/$B/bench-upstream
ROUNDS=${BENCH_ROUNDS:-5}
SECS=${BENCH_SECS:-4}
WARM=${BENCH_WARM:-2}
CONNS=${BENCH_CONNS:-32}
ROUTES=${BENCH_ROUTES:-10000}
LG_CPU=${BENCH_LG_CPU:-0}
PX_CPU=${BENCH_PROXY_CPU:-1}
OUT=${BENCH_OUT:-bench/results/only-cluster.json}
FIXTURE=${BENCH_FIXTURE:-$TOP/tests/fixtures/iceberg/java_bunnies/metadata/v3.metadata.json}
HZ=$(getconf CLK_TCK)
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date +%s)

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
for c in wrk etcd taskset node curl jq cc pkg-config; do
	command -v $c >/dev/null || die "$c is needed (make deps)"
done
[ -x "$FLOE" ] && [ -x "$FLOECTL" ] || die "no $B/floe: make B=$B all first"
[ "$(nproc)" -lt 2 ] && LG_CPU=0 PX_CPU=0
if [ ! -x "$UPSTREAM" ] || [ bench/upstream.c -nt "$UPSTREAM" ]; then
	cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
		$(pkg-config --cflags libevent) -o "$UPSTREAM" bench/upstream.c \
		$(pkg-config --libs libevent) || die "building bench-upstream failed"
fi

T=$(mktemp -d /tmp/floe-bench-cluster.XXXXXX)
pids=()
cleanup() {
	local p
	trap - EXIT INT TERM
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	tests/etcd/stop.sh "$T/etcd" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	node -e 'const s=require("net").createServer();
		s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
# CPU ticks (user + system) of PID.
cpu_ticks() {
	local f
	f=$(sed 's/.*) //' "/proc/$1/stat") || return 1
	set -- $f
	echo $((${12} + ${13}))
}

# The upstream (on wrk's CPU) and etcd.
node bench/loadtable.js "$FIXTURE" 4096 "$T/small.json" >/dev/null ||
	die "generating the LoadTable result failed"
WH_PORT=$(free_port) LH_PORT=$(free_port)
taskset -c "$LG_CPU" "$UPSTREAM" -s "$T/small.json" -l "$T/small.json" \
	-p "$WH_PORT" -p "$LH_PORT" >"$T/upstream.out" 2>&1 &
pids+=($!)
mkdir -p "$T/etcd"
ETCD=$(tests/etcd/start.sh -o $$ "$T/etcd") || die "etcd did not start"
ETCD_PID=$(cat "$T/etcd/1/pid")

# start_floe NAME [CLUSTER_LINES]: a floe on PX_CPU with ROUTES routes
# (bench.t00001 ... over 100 waves), the measured table's wave flipped to
# the lakehouse. Sets FPID, FPORT, LOAD_SECS.
start_floe() {
	local name=$1 d=$T/$1 i t0 t1 k w
	FPORT=$(free_port)
	mkdir -p "$d"
	cat >"$d/floe.conf" <<EOF
[floe]
listen       = 127.0.0.1:$FPORT
admin_socket = $d/floe.sock
state_dir    = $d/state
rollback_log = $d/rollback.log
access_log   = off
cache_size   = 0

[warehouse]
uri = http://127.0.0.1:$WH_PORT

[lakehouse]
uri = http://127.0.0.1:$LH_PORT

[policy]
gate_min_clean = 0
freshness_interval = 1h
${2:-}
EOF
	taskset -c "$PX_CPU" "$FLOE" -c "$d/floe.conf" >"$d/floe.log" 2>&1 &
	FPID=$!
	pids+=($FPID)
	for i in $(seq 200); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
			"http://127.0.0.1:$FPORT/readyz")" = 200 ] && break
		sleep 0.05
	done
	[ "$i" = 200 ] && die "floe $name not ready: $(tail -5 "$d/floe.log")"
	k=$((ROUTES / 2)) w=$((ROUTES / 2 % 100 + 1))
	TBL=$(printf '/v1/routed/namespaces/bench/tables/t%05d' "$k")
	awk -v n="$ROUTES" 'BEGIN { for (i = 1; i <= n; i++)
		printf "{\"object\":\"bench.t%05d\",\"wave\":%d}\n", i, i % 100 + 1 }' \
		>"$T/routes"
	t0=$(date +%s.%N)
	"$FLOECTL" -s "$d/floe.sock" route import "$T/routes" >"$d/import" 2>&1 ||
		die "floe $name: route import failed: $(head -c 300 "$d/import")"
	t1=$(date +%s.%N)
	LOAD_SECS=$(echo "$t1 $t0" | awk '{printf "%.2f", $1 - $2}')
	"$FLOECTL" -s "$d/floe.sock" wave flip "$w" lakehouse >/dev/null ||
		die "floe $name: wave flip $w failed"
	curl -s -D - -o /dev/null "http://127.0.0.1:$FPORT$TBL" | tr -d '\r' |
		grep -qix 'x-floe-target: lakehouse' ||
		die "floe $name: $TBL is not answered from the lakehouse"
	say "floe $name: $ROUTES routes loaded in ${LOAD_SECS}s"
}
start_floe single
S_PID=$FPID S_PORT=$FPORT S_LOAD=$LOAD_SECS
start_floe cluster "[cluster]
etcd = $ETCD
name = bench"
C_PID=$FPID C_PORT=$FPORT C_LOAD=$LOAD_SECS
# jq 1.6's -e passes on no input at all: an empty answer is checked apart.
st=$(curl -s --unix-socket "$T/cluster/floe.sock" http://floe/cluster)
[ -n "$st" ] && jq -e '.connected and .loaded' <<<"$st" >/dev/null ||
	die "the cluster node is not connected"

# Rounds, interleaved: round r of single, then of cluster.
: >"$T/rounds.tsv"
round() {
	local name=$1 pid=$2 port=$3 r=$4 c0 c1 e0 e1
	c0=$(cpu_ticks "$pid") e0=$(cpu_ticks "$ETCD_PID")
	taskset -c "$LG_CPU" wrk -t 1 -c "$CONNS" -d "${SECS}s" --latency \
		"http://127.0.0.1:$port$TBL" >"$T/wrk.out" 2>&1
	c1=$(cpu_ticks "$pid") e1=$(cpu_ticks "$ETCD_PID")
	awk -v name="$name" -v r="$r" -v t=$((c1 - c0)) -v et=$((e1 - e0)) \
		-v hz="$HZ" '
	function us(v) {
		if (v ~ /us$/) return v + 0
		if (v ~ /ms$/) return v * 1000
		if (v ~ /s$/) return v * 1e6
		return v + 0
	}
	/requests in/ { req = $1 }
	/^Requests\/sec:/ { rps = $2 }
	$1 == "50%" { p50 = us($2) }
	$1 == "99%" { p99 = us($2) }
	/Non-2xx or 3xx responses:/ { bad = $5 }
	END { printf "%s\t%d\t%s\t%s\t%s\t%.2f\t%.2f\t%d\n", name, r, rps, p50,
		p99, t * 1e6 / hz / req, et * 1e6 / hz / req, bad }
	' "$T/wrk.out" >>"$T/rounds.tsv"
}
for name in single cluster; do
	port=$S_PORT
	[ $name = cluster ] && port=$C_PORT
	taskset -c "$LG_CPU" wrk -t 1 -c "$CONNS" -d "${WARM}s" \
		"http://127.0.0.1:$port$TBL" >/dev/null 2>&1
done
for r in $(seq "$ROUNDS"); do
	round single "$S_PID" "$S_PORT" "$r"
	round cluster "$C_PID" "$C_PORT" "$r"
done
bad=$(awk -F'\t' '{ s += $8 } END { print s + 0 }' "$T/rounds.tsv")
[ "$bad" = 0 ] || die "$bad answers were not 2xx"

# Medians and ratios, printed and written as JSON.
mkdir -p "$(dirname "$OUT")"
node -e '
const fs = require("fs");
const [tsv, out, meta] = process.argv.slice(1);
const rows = fs.readFileSync(tsv, "utf8").trim().split("\n").map((l) => l.split("\t"));
const med = (a) => { a = a.slice().sort((x, y) => x - y); const m = a.length >> 1;
	return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2; };
const res = {};
for (const name of ["single", "cluster"]) {
	const r = rows.filter((x) => x[0] === name);
	res[name] = { rounds: r.length, rps: med(r.map((x) => +x[2])),
		p50_us: med(r.map((x) => +x[3])), p99_us: med(r.map((x) => +x[4])),
		cpu_us_per_req: med(r.map((x) => +x[5])),
		etcd_cpu_us_per_req: med(r.map((x) => +x[6])) };
}
const ratio = { rps: res.cluster.rps / res.single.rps,
	p99: res.cluster.p99_us / res.single.p99_us,
	cpu_per_req: res.cluster.cpu_us_per_req / res.single.cpu_us_per_req };
const doc = Object.assign(JSON.parse(meta), { scenarios: res, ratio_cluster_to_single: ratio });
fs.writeFileSync(out, JSON.stringify(doc, null, 2) + "\n");
const f = (x, d) => x.toFixed(d);
console.log("scenario   req/s     p50 us   p99 us   CPU us/req  etcd CPU us/req");
for (const n of ["single", "cluster"]) {
	const s = res[n];
	console.log(`${n.padEnd(9)} ${f(s.rps, 0).padStart(7)} ${f(s.p50_us, 0).padStart(9)} ` +
		`${f(s.p99_us, 0).padStart(8)} ${f(s.cpu_us_per_req, 2).padStart(11)} ` +
		`${f(s.etcd_cpu_us_per_req, 2).padStart(16)}`);
}
console.log(`cluster / single: req/s ${f(ratio.rps, 3)}x, p99 ${f(ratio.p99, 3)}x, ` +
	`CPU/request ${f(ratio.cpu_per_req, 3)}x (goal: within 5 %)`);
' "$T/rounds.tsv" "$OUT" "$(jq -n --arg c "$(git describe --always --dirty 2>/dev/null)" \
	--arg l0 "$LOADAVG_START" --arg l1 "$(cut -d' ' -f1-3 /proc/loadavg)" \
	--argjson secs $(($(date +%s) - START)) --argjson routes "$ROUTES" \
	--argjson rounds "$ROUNDS" --argjson s "$SECS" --argjson conns "$CONNS" \
	--argjson sl "$S_LOAD" --argjson cl "$C_LOAD" \
	'{commit: $c, loadavg_start: $l0, loadavg_end: $l1, seconds: $secs,
	  routes: $routes, rounds: $rounds, round_secs: $s, conns: $conns,
	  import_secs: {single: $sl, cluster: $cl}}')" || die "report failed"
say "written to $OUT"
