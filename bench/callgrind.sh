#!/bin/bash
# bench/callgrind.sh BUILD_DIR -- instructions (Ir) a routed LoadTable costs
# floe, counted by callgrind: floe under `valgrind --tool=callgrind` in
# front of bench/upstream.c (the bench's 3.7 KB LoadTable result, the
# catalog config merged in), its LoadTable cache off, BENCH_ROUTES routes
# in its store and the table's wave flipped to the lakehouse. One client
# (curl, one keep-alive connection, a bearer token and a User-Agent) loads
# the table CG_WARM times, the counters are zeroed (callgrind_control -z),
# it loads it CG_N times more, and the counters are dumped: the whole
# program's Ir (the event loop, the timers and the flushes that ran in
# that time included) divided by CG_N. Also prints what the reader
# inventory took of it: the inclusive Ir of the request path's note and of
# the inventory's timer callbacks, per load.
#
# Knobs (environment): CG_N (1000), CG_WARM (50), BENCH_ROUTES (10000),
# CG_OFF=1 (also measure a build without the reader note, see the end),
# CG_TLS=1 (the client speaks TLS 1.3 with P-256 to floe's TLS listener,
# an ECDSA P-256 certificate; the one handshake is in the count, about
# 1/CG_N of it per load),
# CG_OUT (keep the callgrind file there), BENCH_FIXTURE (as bench/run.sh),
# CG_LARGE=1 (load the table with a long history instead: the 1 MB
# result, streamed and rewritten on its way; CG_N then defaults to 20 and
# CG_WARM to 3), CG_VARY=1 (the catalog's answer differs from the one
# before at every load, at the same length: bench-upstream -v; what an
# answer floe has not seen before costs), CG_HEADVARY=1 (each request
# carries an X-Request-Id of its own, so no request head is the one
# before: what a head floe parses costs),
# CG_PORT (a free port P: the catalogs listen on P and P+1, floe on P+2
# and, with CG_TLS=1, P+3; default: any free ports), CG_WORKERS=N (floe
# with workers = N, its workers under callgrind too: the count is the
# master's and every worker's, and each process's share is printed; the
# one connection is served by one worker).
# Deterministic to a few Ir per request, apart from the timers: how many
# 5 s flushes land in the run depends on how fast valgrind runs. The
# ports are in the answer (its URLs) and in the headers, and the answer's
# URL scan finds more or fewer candidates with their digits: about 170 Ir
# a load between two runs with other ports. Compare builds with one
# CG_PORT.
set -u
cd "$(dirname "$0")/.." || exit 1
TOP=$PWD
B=${1:-build}
UPSTREAM=$TOP/$B/bench-upstream
LARGE=${CG_LARGE:-0}
if [ "$LARGE" = 1 ]; then
	N=${CG_N:-20}
	WARM=${CG_WARM:-3}
else
	N=${CG_N:-1000}
	WARM=${CG_WARM:-50}
fi
ROUTES=${BENCH_ROUTES:-10000}
FIXTURE=${BENCH_FIXTURE:-$TOP/tests/fixtures/iceberg/java_bunnies/metadata/v3.metadata.json}

say() { printf 'callgrind: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}
# bench_cc, pids and scratch (cleaned up on exit), free_port, wait_http.
. bench/lib.sh

for c in valgrind callgrind_control callgrind_annotate node curl cc \
	pkg-config; do
	command -v $c >/dev/null || die "$c is needed"
done
[ -x "$B/floe" ] && [ -x "$B/floectl" ] || die "no $B/floe: make B=$B all first"
[ -f "$FIXTURE" ] || die "fixture not found: $FIXTURE"
bench_cc "$UPSTREAM" bench/upstream.c libevent
T=$(mktemp -d /tmp/floe-cg.XXXXXX)
scratch+=("$T")

node bench/loadtable.js "$FIXTURE" 4096 "$T/small.json" >/dev/null &&
	node bench/loadtable.js "$FIXTURE" 1048576 "$T/large.json" >/dev/null ||
	die "generating the LoadTable results failed"
# port N: CG_PORT + N, or any free port.
port() {
	if [ -n "${CG_PORT:-}" ]; then echo $((CG_PORT + $1)); else free_port; fi
}
WH_PORT=$(port 0) LH_PORT=$(port 1)
VARY=()
[ "${CG_VARY:-0}" = 1 ] && VARY=(-v)
"$UPSTREAM" "${VARY[@]}" -s "$T/small.json" -l "$T/large.json" -p "$WH_PORT" \
	-p "$LH_PORT" >"$T/upstream.out" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$WH_PORT/v1/config" ||
	die "bench-upstream did not start: $(cat "$T/upstream.out")"

# loads URL COUNT: COUNT loads of URL on one connection, with a bearer
# token and a User-Agent; fails unless each was a 200 from the lakehouse.
loads() {
	local args=() one=() i
	one=(-s -H 'Authorization: Bearer bench-callgrind-token-0123456789'
		-A 'Spark/3.5.1 iceberg/1.6.0' -w '%{http_code}\n')
	[ "${CG_TLS:-0}" = 1 ] &&
		one+=(--cacert "$T/cert.pem" --tlsv1.3 --curves prime256v1)
	if [ "${CG_HEADVARY:-0}" = 1 ]; then
		# A request id of its own in each request: every head differs
		# from the one before (--next keeps the connection).
		for i in $(seq "$2"); do
			[ "$i" -gt 1 ] && args+=(--next)
			args+=("${one[@]}" -D "$T/heads.$i" -o /dev/null
				-H "X-Request-Id: cg-$RANDOM-$i" "$1")
		done
		curl "${args[@]}" >"$T/codes" || return 1
		cat "$T"/heads.* >"$T/heads"
		rm -f "$T"/heads.*
	else
		for i in $(seq "$2"); do args+=(-o /dev/null "$1"); done
		curl "${one[@]}" -D "$T/heads" "${args[@]}" >"$T/codes" ||
			return 1
	fi
	[ "$(grep -c '^200$' "$T/codes")" = "$2" ] &&
		[ "$(grep -ci '^X-Floe-Target: lakehouse' "$T/heads")" = "$2" ]
}

# measure BUILD_DIR: a floe of BUILD_DIR under callgrind, CG_WARM loads,
# the counters zeroed, CG_N loads, the counters dumped. Prints its
# figures; sets IR (Ir per load).
measure() {
	local floe=$TOP/$1/floe floectl=$TOP/$1/floectl f i k w url
	local fpid fport pport total t0 t1 scheme=http tls=() procs p t most
	fport=$(port 2)
	pport=$fport
	if [ "${CG_TLS:-0}" = 1 ]; then
		pport=$(port 3)
		scheme=https
		tls=("tls_cert = $T/cert.pem" "tls_key = $T/key.pem"
			"listen_plain = 127.0.0.1:$pport")
	fi
	rm -rf "$T/state" "$T"/cg.out*
	printf '%s\n' "[floe]" "listen = 127.0.0.1:$fport" "${tls[@]}" \
		"admin_socket = $T/floe.sock" "state_dir = $T/state" \
		"rollback_log = $T/rollback.log" "access_log = off" \
		"cache_size = 0" "[warehouse]" "uri = http://127.0.0.1:$WH_PORT" \
		"[lakehouse]" "uri = http://127.0.0.1:$LH_PORT" "[policy]" \
		"gate_min_clean = 0" "freshness_interval = 1h" >"$T/floe.conf"
	[ -n "${CG_WORKERS:-}" ] &&
		sed -i "2i workers = $CG_WORKERS" "$T/floe.conf"
	valgrind --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$T/cg.out.%p" \
		"$floe" -c "$T/floe.conf" >"$T/floe.log" 2>&1 &
	fpid=$!
	pids+=($fpid)
	wait_http "http://127.0.0.1:$pport/readyz" 1200 ||
		die "floe not ready: $(tail -5 "$T/floe.log")"
	# floe, and with CG_WORKERS its workers (each under callgrind).
	procs=("$fpid")
	if [ -n "${CG_WORKERS:-}" ] && [ "$CG_WORKERS" -gt 1 ]; then
		for i in $(seq 600); do
			mapfile -t procs < <(pgrep -P "$fpid")
			[ "${#procs[@]}" -ge "$CG_WORKERS" ] && break
			sleep 0.1
		done
		[ "${#procs[@]}" -ge "$CG_WORKERS" ] ||
			die "$CG_WORKERS workers did not start: $(tail -5 "$T/floe.log")"
		procs=("$fpid" "${procs[@]}")
	fi
	# The routes and the flip, as bench/run.sh: the table measured is the
	# middle one, its wave on the lakehouse (with CG_LARGE=1,
	# bench.long_history, in the same wave).
	k=$((ROUTES / 2 > 0 ? ROUTES / 2 : 1))
	w=$((k % 100 + 1))
	awk -v n="$ROUTES" -v w="$w" 'BEGIN {
		for (i = 1; i <= n; i++)
			printf "{\"object\":\"bench.t%05d\",\"wave\":%d}\n", i,
			    i % 100 + 1
		printf "{\"object\":\"bench.long_history\",\"wave\":%d}\n", w
	}' >"$T/routes"
	"$floectl" -s "$T/floe.sock" route import "$T/routes" >"$T/import" 2>&1 ||
		die "route import failed: $(head -c 300 "$T/import")"
	"$floectl" -s "$T/floe.sock" wave flip "$w" lakehouse >/dev/null ||
		die "wave flip $w lakehouse failed"
	url=$(printf '%s://127.0.0.1:%s/v1/routed/namespaces/bench/tables/t%05d' \
		"$scheme" "$fport" "$k")
	[ "$LARGE" = 1 ] && url=${url%/*}/long_history
	loads "$url" "$WARM" ||
		die "warm-up loads failed: $(sort "$T/codes" | uniq -c)"
	for p in "${procs[@]}"; do
		callgrind_control -z "$p" >/dev/null 2>&1 ||
			die "callgrind_control -z $p failed"
	done
	t0=$(date +%s.%N)
	loads "$url" "$N" || die "loads failed: $(sort "$T/codes" | uniq -c)"
	t1=$(date +%s.%N)
	for p in "${procs[@]}"; do
		callgrind_control -d "$p" >/dev/null 2>&1 ||
			die "callgrind_control -d $p failed"
	done
	# Each dump is written while its process runs: wait for it whole.
	total=0 most=0 f=
	for p in "${procs[@]}"; do
		for i in $(seq 100); do
			grep -qs '^totals:' "$T/cg.out.$p.1" && break
			sleep 0.1
		done
		t=$(awk '/^totals:/ { print $2 }' "$T/cg.out.$p.1" 2>/dev/null)
		[ -n "$t" ] || die "no callgrind dump of process $p"
		total=$((total + t))
		[ "${#procs[@]}" -gt 1 ] &&
			printf '  process %s%s: %s Ir per load\n' "$p" \
				"$([ "$p" = "$fpid" ] && echo " (master)")" \
				"$(awk -v t="$t" -v n="$N" 'BEGIN { printf "%.0f", t / n }')"
		# The one that did the most (the worker that served) is kept.
		if [ "$t" -gt "$most" ]; then most=$t f=$T/cg.out.$p.1; fi
	done
	[ -n "${CG_OUT:-}" ] && cp "$f" "$CG_OUT.$(basename "$1")"
	IR=$(awk -v t="$total" -v n="$N" 'BEGIN { printf "%.0f", t / n }')
	printf '%s: %d loads in %s s under callgrind: %s Ir per routed %s\n' \
		"$1" "$N" "$(echo "$t1 $t0" | awk '{ printf "%.1f", $1 - $2 }')" "$IR" \
		"$([ "$LARGE" = 1 ] && echo "1 MB LoadTable" || echo LoadTable)"
	# What the reader inventory's functions took (inclusive), per load.
	callgrind_annotate --inclusive=yes --threshold=100 "$f" 2>/dev/null |
		awk -v n="$N" '/\[.*\]$/ {
			c = $1; gsub(",", "", c)
			if (c !~ /^[0-9]+$/) next
			for (i = 2; i <= NF; i++) if ($i ~ /:/) { fn = $i; break }
			sub(/.*:/, "", fn)
			if (fn ~ /^(inventory_(note|timer_cb|soon_cb)|readers_(see|note))$/)
				printf "  %s: %.0f Ir per load\n", fn, c / n
		}'
	kill "$fpid"
	wait "$fpid" 2>/dev/null
}

if [ "${CG_TLS:-0}" = 1 ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$T/key.pem" \
		-out "$T/cert.pem" 2>"$T/openssl.err" ||
		die "openssl: no certificate: $(cat "$T/openssl.err")"
fi
measure "$B"
ON=$IR
# CG_OFF=1: the same sources built with -DFLOE_BENCH_NO_READERS (no reader
# noted on the request path) into $B-noreaders: the inventory's share.
if [ "${CG_OFF:-0}" = 1 ]; then
	make -s B="$B-noreaders" CFLAGS="-O2 -g -DFLOE_BENCH_NO_READERS" all ||
		die "building $B-noreaders failed"
	measure "$B-noreaders"
	awk -v on="$ON" -v off="$IR" 'BEGIN {
		printf "reader inventory: %+d Ir per load, %+.2f %% (on %d, off %d)\n",
		    on - off, 100 * (on - off) / off, on, off
	}'
fi
