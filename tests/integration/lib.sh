# Shared helpers for the data-path integration tests (source it; bash).
# Each script gets its own mktemp -d directory, catalogs on ports the
# kernel picks, a floe on a free port with a generated floe.conf, bounded
# waits, and a trap that stops every process it started by pid.
#
#   . tests/integration/lib.sh
#   lib_init 40
#   catalog warehouse; catalog lakehouse --prefix lhp
#   write_conf; start_floe
#   get /v1/routed/namespaces/db/tables/bunnies
#   expect_status "load" 200; expect_header "target" X-Floe-Target warehouse
#   finish
set -u
cd "${FLOE_TOP:-$(dirname "${BASH_SOURCE[0]}")/../..}" || exit 1
FLOE=${FLOE:-build/floe}
FLOECTL=${FLOECTL:-build/floectl}
fail=0
npass=0
pids=()
FLOE_PID=
declare -A CAT_PORT=() CAT_PID=()

# jq, except that under -e (--exit-status) an input holding no JSON value
# at all fails (exit 4: "no valid result"). Debian 12's jq 1.6 exits 0
# then, so a check such as jq -e '.state == "lakehouse"' on an empty
# answer (floe not up, a request that failed) would pass.
jq() {
	local a check=false out rc
	for a in "$@"; do
		case $a in
		--exit-status) check=true ;;
		--*) ;;
		-*e*) check=true ;;
		-*) ;;
		*) break ;;
		esac
	done
	$check || {
		command jq "$@"
		return
	}
	out=$(command jq "$@")
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out"
	[ "$rc" = 0 ] && [ -z "$out" ] && return 4
	return "$rc"
}

# lib_init NAME: the scratch directory and the cleanup trap.
lib_init() {
	T=$(mktemp -d "/tmp/floe-$1.XXXXXX")
	SOCK=$T/floe.sock
	trap lib_cleanup EXIT
}

# Stop everything this script started, by pid, then remove the scratch dir.
lib_cleanup() {
	local p
	[ -n "$FLOE_PID" ] && kill "$FLOE_PID" 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "$FLOE_PID" ] && wait "$FLOE_PID" 2>/dev/null
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if [ "$fail" != 0 ] && [ -f "$T/floe.log" ]; then
		echo "--- floe.log (last 30 lines)"
		tail -n 30 "$T/floe.log"
	fi
	rm -rf "$T"
}

# forget_pid PID: take PID, waited for, out of pids, so that the cleanup
# does not signal whatever process has its number by then.
forget_pid() {
	local p keep=()
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}

ok() { npass=$((npass + 1)); echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# finish: stop floe, check its log for sanitizer reports (a SAN=1 build
# reports leaks and UB there), print the count and exit 0 or 1.
finish() {
	[ -n "$FLOE_PID" ] && stop_floe
	if [ -f "$T/floe.log" ] &&
		grep -qE 'Sanitizer|runtime error:' "$T/floe.log"; then
		bad "floe's log has sanitizer reports:"
		grep -E -A 12 'Sanitizer|runtime error:' "$T/floe.log" | head -60
	fi
	if [ "$fail" = 0 ]; then
		echo "all $npass checks passed"
		exit 0
	fi
	echo "some checks failed ($npass passed)"
	exit 1
}

# A free TCP port on 127.0.0.1 (the kernel picks it; it is closed again).
free_port() {
	node -e 'const s=require("net").createServer();
		s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# tls_front CMD [ARGS...]: start a TLS front (tlsfront.js, tlsclose.py)
# that binds a free port and prints "ready PORT", its output in
# $T/front.out; sets FRONT (the port) and FRONT_PID. Fails the test when
# it does not start.
tls_front() {
	local i
	"$@" >"$T/front.out" 2>&1 &
	pids+=($!)
	FRONT_PID=$!
	FRONT=
	for i in $(seq 100); do
		FRONT=$(awk '/^ready /{print $2}' "$T/front.out")
		[ -n "$FRONT" ] && return
		sleep 0.05
	done
	bad "the TLS front did not start: $(cat "$T/front.out")"
	finish
}

# The table the bench's LoadTable results grow from (as bench/run.sh).
LOADTABLE_FIXTURE=${BENCH_FIXTURE:-tests/fixtures/iceberg/java_bunnies/metadata/v3.metadata.json}

# bench_upstream_build: the bench's catalog (bench/upstream.c) built as
# $T/upstream, and the bench's 3.7 KB LoadTable result in $T/small.json.
bench_upstream_build() {
	cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
		$(pkg-config --cflags libevent) -o "$T/upstream" bench/upstream.c \
		$(pkg-config --libs libevent) || { bad "building bench-upstream"; finish; }
	node bench/loadtable.js "$LOADTABLE_FIXTURE" 4096 "$T/small.json" >/dev/null ||
		{ bad "generating the LoadTable result"; finish; }
}

# pad_json OUT MB: $T/small.json with a table property of MB MiB.
pad_json() {
	python3 - "$T/small.json" "$1" "$2" <<'PY' || { bad "generating $1"; finish; }
import json, sys
d = json.load(open(sys.argv[1]))
d["metadata"].setdefault("properties", {})["floe-test.pad"] = "x" * (int(sys.argv[3]) << 20)
open(sys.argv[2], "w").write(json.dumps(d, separators=(",", ":")))
PY
}

# upstream_start LARGE [WPORT LPORT]: $T/upstream serving $T/small.json
# and LARGE on two ports (free ones by default), WP and LP, as the
# warehouse and the lakehouse (CAT_PORT); its pid in UPID. Fails the test
# when it does not answer.
upstream_start() {
	local i
	WP=${2:-$(free_port)}
	LP=${3:-$(free_port)}
	"$T/upstream" -s "$T/small.json" -l "$1" -p "$WP" -p "$LP" \
		>>"$T/upstream.out" 2>&1 &
	UPID=$!
	pids+=($UPID)
	for i in $(seq 100); do
		curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$WP/v1/config" && break
		sleep 0.05
	done
	curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$WP/v1/config" ||
		{ bad "bench-upstream did not start: $(cat "$T/upstream.out")"; finish; }
	CAT_PORT[warehouse]=$WP
	CAT_PORT[lakehouse]=$LP
}

# bench_upstream MB: the three above: a large result ($T/large.json) of MB
# MiB of table property, or with MB "1m" the bench's own 1 MB result.
bench_upstream() {
	bench_upstream_build
	if [ "$1" = 1m ]; then
		node bench/loadtable.js "$LOADTABLE_FIXTURE" 1048576 "$T/large.json" >/dev/null ||
			{ bad "generating large.json"; finish; }
	else
		pad_json "$T/large.json" "$1"
	fi
	upstream_start "$T/large.json"
}

# catalog NAME [ARGS...]: start a test catalog on a free port; sets PORT,
# CAT_PORT[NAME] and CAT_PID[NAME]. With CAT_FIXED_PORT set, use that port.
catalog() {
	local name=$1 i
	shift
	node tests/catalog/catalog.js --port "${CAT_FIXED_PORT:-0}" \
		--name "$name" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	pids+=($!)
	CAT_PID[$name]=$!
	PORT=
	for i in $(seq 200); do
		PORT=$(awk '/^ready /{print $2}' "$T/$name.out" 2>/dev/null)
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	if [ -z "$PORT" ]; then
		echo "catalog $name did not start"
		cat "$T/$name.err"
		exit 1
	fi
	CAT_PORT[$name]=$PORT
}

# stop_catalog NAME: SIGTERM one catalog and wait for it.
stop_catalog() {
	kill "${CAT_PID[$1]}" 2>/dev/null
	wait "${CAT_PID[$1]}" 2>/dev/null
}

# write_conf: floe.conf in $T. LISTEN (default: a free port), WH_URI,
# LH_URI (default: the catalogs started), and extra lines in FLOE_EXTRA,
# WH_EXTRA, LH_EXTRA, POLICY_EXTRA. The LoadTable cache is off unless
# CACHE_SIZE is set: these tests watch what reaches the catalogs.
write_conf() {
	LISTEN=${LISTEN:-$(free_port)}
	WH_URI=${WH_URI:-http://127.0.0.1:${CAT_PORT[warehouse]}}
	LH_URI=${LH_URI:-http://127.0.0.1:${CAT_PORT[lakehouse]}}
	BASE=http://127.0.0.1:$LISTEN
	cat >"$T/floe.conf" <<EOF
[floe]
listen       = 127.0.0.1:$LISTEN
admin_socket = $SOCK
state_dir    = $T/state
rollback_log = $T/rollback.log
access_log   = $T/access.log
cache_size   = ${CACHE_SIZE:-0}
${FLOE_EXTRA:-}

[warehouse]
uri = $WH_URI
warehouse = analytics
${WH_EXTRA:-}

[lakehouse]
uri = $LH_URI
warehouse = lake
${LH_EXTRA:-}

[policy]
gate_min_clean = 0
${POLICY_EXTRA:-}
EOF
}

# start_floe [noready]: run floe, wait for its admin socket and (unless
# noready) for /readyz 200; at most 10 s each.
start_floe() {
	local i
	"$FLOE" -c "$T/floe.conf" >>"$T/floe.log" 2>&1 &
	FLOE_PID=$!
	for i in $(seq 200); do
		curl -s -o /dev/null --max-time 1 --unix-socket "$SOCK" \
			http://floe/status && break
		if ! kill -0 "$FLOE_PID" 2>/dev/null; then
			echo "floe exited at start"
			cat "$T/floe.log"
			FLOE_PID=
			exit 1
		fi
		sleep 0.05
	done
	[ "${1:-}" = noready ] && return 0
	wait_ready 200 || {
		echo "floe not ready: $(curl -s "$BASE/readyz")"
		cat "$T/floe.log"
		exit 1
	}
}

# wait_ready [STATUS]: poll /readyz until it answers STATUS (10 s at most).
wait_ready() {
	local i s
	for i in $(seq 200); do
		s=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
			"$BASE/readyz")
		[ "$s" = "${1:-200}" ] && return 0
		sleep 0.05
	done
	return 1
}

# stop_floe [SIGNAL]: signal floe (TERM by default) and wait for it.
stop_floe() {
	kill -"${1:-TERM}" "$FLOE_PID" 2>/dev/null
	wait "$FLOE_PID" 2>/dev/null
	FLOE_PID=
}

# ctl ARGS...: floectl on this floe's socket; output in $T/ctl, status in RC.
ctl() {
	"$FLOECTL" -s "$SOCK" "$@" >"$T/ctl" 2>&1
	RC=$?
	return $RC
}

# ctl_ok DESC ARGS...: floectl must succeed.
ctl_ok() {
	local d=$1
	shift
	if ctl "$@"; then
		return 0
	fi
	bad "$d: floectl $* exited $RC: $(head -c 400 "$T/ctl")"
	return 1
}

# admin METHOD PATH [JSON]: a request to floe's admin API on its socket.
# Status in S, body in $T/b, content type in CT.
admin() {
	local args=(-s -o "$T/b" -w '%{http_code} %{content_type}' -X "$1"
		--max-time 20 --unix-socket "$SOCK") out
	[ $# -ge 3 ] &&
		args+=(-H 'Content-Type: application/json' --data-binary "$3")
	: >"$T/b"
	out=$(curl "${args[@]}" "http://floe$2")
	S=${out%% *}
	CT=${out#* }
}

# req METHOD PATH [CURL ARGS...]: a request to floe's REST listener. Status
# in S, body in $T/b, response headers in $T/h.
req() {
	local m=$1 p=$2
	shift 2
	local args=(-s -o "$T/b" -D "$T/h" -w '%{http_code}' --max-time 20)
	if [ "$m" = HEAD ]; then args+=(-I); else args+=(-X "$m"); fi
	# curl writes no file for an empty body: never read a stale one.
	: >"$T/b"
	S=$(curl "${args[@]}" "$@" "$BASE$p")
}

get() { req GET "$@"; }

# post PATH JSON [CURL ARGS...]
post() {
	local p=$1 d=$2
	shift 2
	req POST "$p" -H 'Content-Type: application/json' --data-binary "$d" "$@"
}

# hdr NAME: the value of response header NAME of the last answer.
hdr() {
	awk -v n="$(echo "$1" | tr 'A-Z' 'a-z')" 'BEGIN{IGNORECASE=1}
		{ sub(/\r$/, "") }
		{ i = index($0, ":"); if (i == 0) next
		  k = tolower(substr($0, 1, i - 1))
		  if (k == n) { v = substr($0, i + 1); sub(/^[ \t]+/, "", v)
		  print v; exit } }' "$T/h"
}

# What the last answer was, for failure messages.
last() {
	echo "status $S, body: $(head -c 300 "$T/b")"
}

# expect_status DESC STATUS
expect_status() {
	if [ "$S" = "$2" ]; then ok "$1"; else bad "$1: want status $2, $(last)"; fi
}

# expect_jq DESC STATUS FILTER: status and a jq filter on the body.
expect_jq() {
	if [ "$S" = "$2" ] && jq -e "$3" "$T/b" >/dev/null 2>&1; then
		ok "$1"
	else
		bad "$1: want status $2 and $3; $(last)"
	fi
}

# expect_header DESC NAME VALUE: a response header has VALUE exactly.
expect_header() {
	local v
	v=$(hdr "$2")
	if [ "$v" = "$3" ]; then
		ok "$1"
	else
		bad "$1: want $2: \"$3\", got \"$v\" ($(last))"
	fi
}

# expect_error DESC STATUS [TYPE] [MESSAGE-PART]: an Iceberg ErrorModel
# whose code equals the status.
expect_error() {
	local f="(keys == [\"error\"]) and (.error.code == $2)
		and (.error.message | type == \"string\")
		and (.error.type | type == \"string\")"
	[ -n "${3:-}" ] && f="$f and (.error.type == \"$3\")"
	[ -n "${4:-}" ] && f="$f and (.error.message | contains(\"$4\"))"
	expect_jq "$1" "$2" "$f"
}

# expect_eq DESC WANT GOT
expect_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: want \"$2\", got \"$3\""; fi
}

# cat_requests NAME: the catalog's request log (JSON) on stdout.
cat_requests() {
	curl -s --max-time 5 "http://127.0.0.1:${CAT_PORT[$1]}/_test/requests"
}

# cat_clear NAME: empty a catalog's request log and its faults.
cat_clear() {
	curl -s --max-time 5 -o /dev/null -X DELETE \
		"http://127.0.0.1:${CAT_PORT[$1]}/_test/requests"
	curl -s --max-time 5 -o /dev/null -X DELETE \
		"http://127.0.0.1:${CAT_PORT[$1]}/_test/fault"
}

# fault NAME JSON: add a fault rule to a catalog.
fault() {
	curl -s --max-time 5 -o /dev/null -X POST \
		-H 'Content-Type: application/json' --data-binary "$2" \
		"http://127.0.0.1:${CAT_PORT[$1]}/_test/fault"
}

# raw DATA [SECONDS]: send DATA (bytes as given) on one TCP connection to
# floe without closing our side; what came back is in $T/raw. Reads until
# floe closes, SECONDS at most (default 5): RAW_RC 0 if floe closed, 2 on
# the time limit. A reset after the answer is not an error.
raw() {
	printf '%s' "$1" >"$T/raw.in"
	node -e '
		const net = require("net"), fs = require("fs");
		const [port, file, secs] = process.argv.slice(1);
		const got = [];
		const done = (rc) => {
			fs.writeFileSync(process.argv[4], Buffer.concat(got));
			process.exit(rc);
		};
		const s = net.connect(Number(port), "127.0.0.1");
		s.on("data", (d) => got.push(d));
		s.on("error", () => {});
		s.on("close", () => done(0));
		s.write(fs.readFileSync(file));
		setTimeout(() => done(2), Number(secs) * 1000);
	' "$LISTEN" "$T/raw.in" "${2:-5}" "$T/raw"
	RAW_RC=$?
}

# raw_status: the status of the first answer in $T/raw.
raw_status() {
	head -n 1 "$T/raw" | awk '{print $2}'
}

# raw_statuses: the statuses of every answer in $T/raw, by Content-Length,
# space-separated.
raw_statuses() {
	node -e '
		const b = require("fs").readFileSync(process.argv[1], "latin1");
		let off = 0;
		const out = [];
		while (off < b.length) {
			const e = b.indexOf("\r\n\r\n", off);
			if (e < 0) break;
			const head = b.slice(off, e);
			const st = /^HTTP\/1\.[01] (\d{3})/.exec(head);
			if (!st) break;
			out.push(st[1]);
			const m = /content-length: *(\d+)/i.exec(head);
			off = e + 4 + (m ? Number(m[1]) : 0);
		}
		process.stdout.write(out.join(" "));' "$T/raw"
}

# raw_body N: the body of the Nth (1-based) answer in $T/raw, by its
# Content-Length.
raw_body() {
	node -e '
		const b = require("fs").readFileSync(process.argv[1], "latin1");
		let off = 0, n = Number(process.argv[2]), out = "";
		for (let k = 1; k <= n; k++) {
			const e = b.indexOf("\r\n\r\n", off);
			if (e < 0) process.exit(1);
			const m = /content-length: *(\d+)/i.exec(b.slice(off, e));
			const len = m ? Number(m[1]) : 0;
			out = b.slice(e + 4, e + 4 + len);
			off = e + 4 + len;
		}
		process.stdout.write(out);' "$T/raw" "$1"
}
