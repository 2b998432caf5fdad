#!/bin/bash
# floe: bench/callgrind.sh [BUILD_DIR] -- user-space instructions per routed
# LoadTable: floe under callgrind in front of bench-upstream (the bench's
# 3.7 KB LoadTable result and its /v1/config, merged into each answer),
# 10 routes, the table's wave flipped to the lakehouse, the LoadTable cache
# off; one keep-alive client (curl) loads the table 50 times to warm up,
# the counters are zeroed (callgrind_control -z), it loads it
# CALLGRIND_LOADS times (1,000), they are dumped, and the whole program's
# instructions (every function, libevent and libc included) are divided by
# the loads. Prints the figure and the top functions (inclusive).
set -eu
cd "$(dirname "$0")/.."
TOP=$PWD
B=${1:-build}
LOADS=${CALLGRIND_LOADS:-1000}
FIXTURE=${BENCH_FIXTURE:-$TOP/../shared/fixtures/iceberg/java_bunnies/metadata/v3.metadata.json}
case $B in /*) BD=$B ;; *) BD=$TOP/$B ;; esac
FLOE=$BD/floe
FLOECTL=$BD/floectl
UPSTREAM=$BD/bench-upstream
for c in valgrind callgrind_control callgrind_annotate curl node; do
	command -v $c >/dev/null || { echo "callgrind: $c is needed" >&2; exit 1; }
done
[ -x "$FLOE" ] || { echo "callgrind: no $FLOE: make B=$B all" >&2; exit 1; }
if [ ! -x "$UPSTREAM" ] || [ bench/upstream.c -nt "$UPSTREAM" ]; then
	cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
		$(pkg-config --cflags libevent) -o "$UPSTREAM" bench/upstream.c \
		$(pkg-config --libs libevent)
fi
T=$(mktemp -d /tmp/floe-callgrind.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || :; done
	rm -rf "$T"
}
trap cleanup EXIT
free_port() {
	node -e 'const s=require("net").createServer();
		s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
wait_200() {
	local i
	for i in $(seq 600); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1")" = 200 ] &&
			return 0
		sleep 0.1
	done
	return 1
}

node bench/loadtable.js "$FIXTURE" 4096 "$T/small.json" >/dev/null
node bench/loadtable.js "$FIXTURE" 65536 "$T/large.json" >/dev/null
WH=$(free_port) LH=$(free_port) PORT=$(free_port)
"$UPSTREAM" -s "$T/small.json" -l "$T/large.json" -p "$WH" -p "$LH" \
	>"$T/upstream.out" 2>&1 &
pids+=($!)
wait_200 "http://127.0.0.1:$WH/v1/config"
cat >"$T/floe.conf" <<CONF
[floe]
listen       = 127.0.0.1:$PORT
admin_socket = $T/floe.sock
state_dir    = $T/state
rollback_log = $T/rollback.log
access_log   = off
cache_size   = 0

[warehouse]
uri = http://127.0.0.1:$WH

[lakehouse]
uri = http://127.0.0.1:$LH

[policy]
gate_min_clean = 0
freshness_interval = 1h
CONF
valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" \
	"$FLOE" -c "$T/floe.conf" >"$T/floe.log" 2>&1 &
FPID=$!
pids+=($FPID)
wait_200 "http://127.0.0.1:$PORT/readyz" ||
	{ echo "callgrind: floe not ready: $(tail -5 "$T/floe.log")" >&2; exit 1; }
for i in $(seq 1 10); do
	printf '{"object":"bench.t%05d","wave":1}\n' "$i"
done >"$T/routes"
"$FLOECTL" -s "$T/floe.sock" route import "$T/routes" >/dev/null
"$FLOECTL" -s "$T/floe.sock" wave flip 1 lakehouse >/dev/null
URL="http://127.0.0.1:$PORT/v1/namespaces/bench/tables/t00005"
[ "$(curl -s -D - -o /dev/null "$URL" | tr -d '\r' |
	awk -F': ' 'tolower($1) == "x-floe-target" {print $2}')" = lakehouse ] ||
	{ echo "callgrind: the table is not routed to the lakehouse" >&2; exit 1; }
# load N: N keep-alive GETs of the table from one curl, each a 200.
load() {
	local n=$1 i
	for i in $(seq "$n"); do echo "url = \"$URL\""; echo 'output = "/dev/null"'; done \
		>"$T/curl.cfg"
	codes=$(curl -s -K "$T/curl.cfg" -w '%{http_code}\n' -A bench-callgrind)
	[ "$(echo "$codes" | grep -c '^200$')" = "$n" ] ||
		{ echo "callgrind: not every load answered 200" >&2; exit 1; }
}
load 50
callgrind_control -z "$FPID" >/dev/null 2>&1
load "$LOADS"
callgrind_control -d "$FPID" >/dev/null 2>&1
sleep 1
dump=$(ls -t "$T"/cg.out.* | head -n 1)
total=$(callgrind_annotate "$dump" 2>/dev/null |
	awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "floe $(cat "$BD/version" 2>/dev/null): $LOADS routed LoadTables" \
	"(3.7 KB, config merged, cache off): $((total / LOADS)) instructions a load"
callgrind_annotate --inclusive=yes --show-percs=no "$dump" 2>/dev/null |
	awk -v n="$LOADS" '/^-+$/ {d++} d >= 3 && $1 ~ /^[0-9,]+$/ && c++ < 30 {
		gsub(",", "", $1); sub(/ \[.*/, "", $2); printf "%8d  %s\n", $1 / n, $2 }'
