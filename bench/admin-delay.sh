#!/bin/bash
# floe: bench/admin-delay.sh -- how long each admin command holds engine
# requests on a large store. A floe in front of bench-upstream gets
# ROUTES routes (default 1,000,000, over 100 waves) in one route import;
# then, for each admin command, a probe asks for a routed 4 KB LoadTable
# every 2 ms on one keep-alive connection while the command runs. Prints
# one line per command: its time, the probe's worst latency during it and
# in a baseline just before (the delay floe adds is the difference), and
# the probes' 99th percentile during it (on a busy machine the longest of
# thousands of probes is the machine's as much as floe's).
#
#   bench/admin-delay.sh [BUILD_DIR]      (ROUTES=N to change the count)
#
# Binds 127.0.0.1 only; the store lives in /dev/shm when there is one.
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-build}
FLOE=$B/floe
FLOECTL=$B/floectl
N=${ROUTES:-1000000}
FIXTURE=${BENCH_FIXTURE:-tests/fixtures/iceberg/java_bunnies/metadata/v3.metadata.json}
PROBE=tests/integration/probe.py
PATH_T=/v1/routed/namespaces/bench/tables/t00001

say() { printf 'admin-delay: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
[ -x "$FLOE" ] && [ -x "$FLOECTL" ] || die "no $FLOE: make B=$B all first"

T=$(mktemp -d /tmp/floe-admin-delay.XXXXXX)
S=$T
[ -d /dev/shm ] && [ -w /dev/shm ] && S=$(mktemp -d /dev/shm/floe-admin-delay.XXXXXX)
pids=()
cleanup() {
	local p
	# floe's worker child (a long read) first: floe would wait for it.
	[ -n "${FPID:-}" ] &&
		for p in $(ps -o pid= --ppid "$FPID" 2>/dev/null); do kill "$p"; done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
	[ "$S" != "$T" ] && rm -rf "$S"
}
trap cleanup EXIT
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cc -std=c11 -D_GNU_SOURCE -O2 $(pkg-config --cflags libevent) \
	-o "$T/upstream" bench/upstream.c $(pkg-config --libs libevent) ||
	die "building bench-upstream failed"
node bench/loadtable.js "$FIXTURE" 4096 "$T/small.json" >/dev/null ||
	die "generating the LoadTable result failed"
WP=$(free_port)
LP=$(free_port)
FP=$(free_port)
"$T/upstream" -s "$T/small.json" -l "$T/small.json" -p "$WP" -p "$LP" \
	>"$T/upstream.out" 2>&1 &
pids+=($!)
cat >"$T/floe.conf" <<EOF
[floe]
listen       = 127.0.0.1:$FP
admin_socket = $T/floe.sock
state_dir    = $S/state
rollback_log = $T/rollback.log
access_log   = off
cache_size   = 0

[warehouse]
uri = http://127.0.0.1:$WP

[lakehouse]
uri = http://127.0.0.1:$LP

[policy]
gate_min_clean = 0
freshness_interval = 1h
EOF
"$FLOE" -c "$T/floe.conf" >"$T/floe.log" 2>&1 &
FPID=$!
pids+=($FPID)
for i in $(seq 200); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
		"http://127.0.0.1:$FP/readyz")" = 200 ] && break
	sleep 0.05
done
[ "$i" = 200 ] && die "floe not ready: $(tail -5 "$T/floe.log")"

awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++)
	printf "{\"object\":\"bench.t%05d\",\"wave\":%d}\n", i, i % 100 + 1 }' >"$T/routes"
t0=$(date +%s.%N)
"$FLOECTL" -s "$T/floe.sock" route import "$T/routes" >"$T/import" 2>&1 ||
	die "route import failed: $(head -c 300 "$T/import")"
t1=$(date +%s.%N)
rm -f "$T/routes"
say "$N routes imported in $(echo "$t1 $t0" | awk '{printf "%.1f", $1 - $2}') s;" \
	"floe RSS $(awk '/VmRSS/{print $2}' /proc/$FPID/status) kB"
curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FP$PATH_T" | grep -q 200 ||
	die "the probe's table is not served"

# measure NAME CMD...: the probe's worst latency during CMD, and before.
measure() {
	local name=$1 base during t0 t1
	shift
	python3 "$PROBE" "$FP" "$PATH_T" 2 100 >"$T/base.json"
	rm -f "$T/stop" "$T/stop.ready"
	python3 "$PROBE" "$FP" "$PATH_T" 2 1000000 "$T/stop" >"$T/during.json" &
	local p=$!
	while [ ! -e "$T/stop.ready" ]; do sleep 0.02; done
	sleep 0.1
	t0=$(date +%s%N)
	"$@" >"$T/out" 2>&1 || say "$name: exit $?: $(head -c 200 "$T/out")"
	t1=$(date +%s%N)
	sleep 0.1
	touch "$T/stop"
	wait "$p"
	base=$(jq .max "$T/base.json")
	during=$(jq .max "$T/during.json")
	printf '%-34s %8d ms   probe max %8.1f ms, p99 %6.1f ms (baseline max %5.1f ms), %d probes; RSS %d MB\n' \
		"$name" $(((t1 - t0) / 1000000)) "$during" \
		"$(jq .p99 "$T/during.json")" "$base" \
		"$(jq .n "$T/during.json")" \
		$(($(awk '/VmRSS/{print $2}' /proc/$FPID/status) / 1024))
}
ctl() { "$FLOECTL" -s "$T/floe.sock" "$@"; }
api() { curl -s -o /dev/null --max-time 600 --unix-socket "$T/floe.sock" "http://floe$1"; }

echo "admin commands on $N routes (floe $(git describe --always --dirty 2>/dev/null)):"
measure "idle (2 s, nothing running)" sleep 2
measure "status" ctl status
measure "status (again, store unchanged)" ctl status
measure "wave list" ctl wave list
measure "GET /waves?limit=100" api "/waves?limit=100"
measure "GET /routes?limit=1000 (a page)" api "/routes?limit=1000"
measure "GET /routes?limit=1000 (page 500)" api "/routes?limit=1000&after=bench.t500000"
measure "route list (every page)" ctl route list
measure "wave show 7" ctl wave show 7
measure "wave flip 7 lakehouse" ctl wave flip 7 lakehouse --reason bench
measure "wave rollback 7" ctl wave rollback 7 --reason bench
measure "ledger show" ctl ledger show bench.t00007
measure "resolve" ctl resolve bench.t00007
measure "eligible 7" ctl eligible 7
# Last: on a large store it holds floe longer than floectl waits.
measure "eligible (every wave)" ctl eligible
