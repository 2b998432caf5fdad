#!/bin/bash
# bench/run.sh BUILD_DIR -- `make bench`: floe against nginx and haproxy in
# one run, in front of the same fast upstream (bench/upstream.c) serving
# realistic LoadTable results (~4 KB, and ~1 MB for a long history).
# wrk and the upstream run on one CPU, the proxy under test on the other;
# each scenario is a warm-up and several rounds, reported as medians of
# requests/s, p50, p99, proxy CPU per request (from /proc), RSS and how
# busy the load CPU was; the 1 MB LoadTable also from paced clients, the
# same load offered to each proxy. Prints
# a table, one ratio line per scenario against nginx, checks the goals of
# issues 6 and 20 and writes bench/results/latest.json. The same run has
# TLS on the client side (keep-alive, and full handshakes with
# bench/tlshs.c), the session resumption check, an https catalog (TLS
# between the proxy and a TLS front before the upstream), and 200 slow
# clients (bench/slowread.c) reading a 1 MB answer at 64 KB/s. See
# bench/README.md.
#
# Knobs (environment): BENCH_ROUNDS (5), BENCH_SECS (4), BENCH_WARM (2),
# BENCH_BIG_SECS (2: rounds of the 1 MB scenarios), BENCH_CONNS (32),
# BENCH_ROUTES (10000), BENCH_IDLE (1000 idle clients), BENCH_SOAK (60:
# seconds of the RSS drift run, 0 skips it), BENCH_FULL=0 (skips the
# 1,000,000-route floe), BENCH_PERF=1 (perf profile of floe, top symbols),
# BENCH_LG_CPU (0) and BENCH_PROXY_CPU (1), BENCH_OUT (the JSON file),
# BENCH_COMMIT (the floe commit to record, when not run from a checkout),
# BENCH_POLL=1 (floe's freshness poll every minute, as by default).
# BENCH_ONLY=plain,tls,tlscat,slow,workers (a comma list: only those parts; the JSON then
# goes to bench/results/only-PARTS.json unless BENCH_OUT says otherwise),
# BENCH_SLOW_CLIENTS (200), BENCH_SLOW_RATE (65536 bytes/s),
# BENCH_SLOW_LIMIT (60: seconds before a slow run is cut), BENCH_WORKERS_IR=0
# (the workers part without its callgrind count of instructions),
# BENCH_WORKERS_BATCH=0 (the workers part without its SCHED_BATCH control),
# BENCH_PACE_MS (60: the mean pause of the paced 1 MB clients).
set -u
cd "$(dirname "$0")/.." || exit 1
TOP=$PWD
B=${1:-build}
# BENCH_ONLY=cluster: a cluster-mode node against a single node, alone.
[ "${BENCH_ONLY:-}" = cluster ] && exec bench/cluster.sh "$B"
FLOE=$TOP/$B/floe
FLOECTL=$TOP/$B/floectl
UPSTREAM=$TOP/$B/bench-upstream
ROUNDS=${BENCH_ROUNDS:-5}
SECS=${BENCH_SECS:-4}
WARM=${BENCH_WARM:-2}
BIG_SECS=${BENCH_BIG_SECS:-2}
CONNS=${BENCH_CONNS:-32}
ROUTES=${BENCH_ROUTES:-10000}
IDLE=${BENCH_IDLE:-1000}
SOAK=${BENCH_SOAK:-60}
FULL=${BENCH_FULL:-1}
PERF=${BENCH_PERF:-0}
LG_CPU=${BENCH_LG_CPU:-0}
PX_CPU=${BENCH_PROXY_CPU:-1}
ONLY=${BENCH_ONLY:-}
SLOW_N=${BENCH_SLOW_CLIENTS:-200}
SLOW_RATE=${BENCH_SLOW_RATE:-65536}
SLOW_LIMIT=${BENCH_SLOW_LIMIT:-60}
PACE_MS=${BENCH_PACE_MS:-60}
if [ -n "$ONLY" ]; then
	OUT=${BENCH_OUT:-bench/results/only-${ONLY//,/-}.json}
else
	OUT=${BENCH_OUT:-bench/results/latest.json}
fi
FIXTURE=${BENCH_FIXTURE:-$TOP/tests/fixtures/iceberg/java_bunnies/metadata/v3.metadata.json}
START=$(date +%s)
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# bench_cc, pids and scratch (cleaned up on exit), free_port, wait_http.
. bench/lib.sh
# want PART: is PART (plain, tls, tlscat, slow, workers) in this run?
want() { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }
for part in ${ONLY//,/ }; do
	case $part in plain | tls | tlscat | slow | workers) ;; *) die "BENCH_ONLY: unknown part $part (plain, tls, tlscat, slow, workers)" ;; esac
done

# --- tools ---------------------------------------------------------------
PATH=$PATH:/usr/sbin:/sbin
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || missing+=(nginx)
command -v haproxy >/dev/null || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]} with apt-get"
	SUDO=
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		"${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
fi
for c in wrk nginx haproxy taskset node curl jq cc pkg-config openssl; do
	command -v $c >/dev/null || die "$c is needed"
done
[ -x "$FLOE" ] && [ -x "$FLOECTL" ] || die "no $B/floe: make B=$B all first"
[ -f "$FIXTURE" ] || die "fixture not found: $FIXTURE"
if [ "$(nproc)" -lt 2 ]; then
	say "one CPU only: wrk and the proxy share it"
	LG_CPU=0 PX_CPU=0
fi
HZ=$(getconf CLK_TCK)

# The upstream, the TLS handshake client and the slow clients are not
# part of floe: built here, beside floe.
bench_cc "$UPSTREAM" bench/upstream.c libevent
TLSHS=$TOP/$B/bench-tlshs
SLOWREAD=$TOP/$B/bench-slowread
bench_cc "$TLSHS" bench/tlshs.c openssl
bench_cc "$SLOWREAD" bench/slowread.c

# --- scratch (removed, and the processes in pids stopped, on exit) -------
T=$(mktemp -d /tmp/floe-bench.XXXXXX)
scratch+=("$T")
# floe's store on tmpfs when there is one: the request path reads it
# through the page cache either way, and the route import's one synced
# transaction does not wait for a disk.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	S=$(mktemp -d /dev/shm/floe-bench.XXXXXX)
	scratch+=("$S")
else
	S=$T
fi

# PID and all its descendants.
proc_tree() {
	local p c
	echo "$1"
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		proc_tree "$c"
	done
}

# tree_ticks PID: "PID TICKS PARENT USER" for PID and each of its
# descendants (TICKS user + system CPU ticks, USER the user part; every
# thread).
tree_ticks() {
	local p f
	for p in $(proc_tree "$1"); do
		# Fields after the ")" of comm: utime and stime are 12 and 13.
		f=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || continue
		set -- $f
		echo "$p $((${12} + ${13})) $2 ${12}"
	done
}

# CPU ticks (user + system, every thread) of PID and its descendants; with
# a second argument, "TOTAL USER".
cpu_ticks() {
	tree_ticks "$1" | awk -v user="${2:+1}" '{ t += $2; u += $4 }
		END { if (user) printf "%d %d\n", t, u; else printf "%d\n", t }'
}

# sched_policy -b|-o PID...: every thread of each PID and its descendants
# under SCHED_BATCH (-b) or back to SCHED_OTHER (-o), with chrt(1).
sched_policy() {
	local how=$1 p q
	shift
	for p in "$@"; do
		for q in $(proc_tree "$p"); do
			chrt "$how" -a -p 0 "$q" >/dev/null || return 1
		done
	done
}

# "VOLUNTARY INVOLUNTARY": the context switches of PID and its descendants
# (every thread): blocked waiting, and preempted.
ctx_switches() {
	local p
	for p in $(proc_tree "$1"); do
		cat "/proc/$p/task"/*/status 2>/dev/null
	done | awk '/^voluntary_ctxt_switches:/ { v += $2 }
		/^nonvoluntary_ctxt_switches:/ { n += $2 }
		END { printf "%d %d\n", v, n }'
}

# "BUSY TOTAL": the jiffies CPU N has spent, busy and in all, so far
# (user to steal; guest time is already in user).
cpu_busy() {
	awk -v c="cpu$1" '$1 == c { for (i = 2; i <= 9; i++) t += $i
		printf "%d %d\n", t - $5 - $6, t }' /proc/stat
}

# VmRSS in kB of PID and its descendants.
rss_kb() {
	local p sum=0 v
	for p in $(proc_tree "$1"); do
		v=$(awk '/^VmRSS:/{print $2}' "/proc/$p/status" 2>/dev/null)
		sum=$((sum + ${v:-0}))
	done
	echo $sum
}

# --- the upstream and its answers ----------------------------------------
node bench/loadtable.js "$FIXTURE" 4096 "$T/small.json" >/dev/null &&
	node bench/loadtable.js "$FIXTURE" 1048576 "$T/large.json" >/dev/null ||
	die "generating the LoadTable results failed"
SMALL_BYTES=$(stat -c %s "$T/small.json")
LARGE_BYTES=$(stat -c %s "$T/large.json")
WH_PORT=$(free_port) LH_PORT=$(free_port) DIRECT_PORT=$(free_port)
# The upstream the proxies use shares wrk's CPU; the one measured directly
# sits where the proxies sit.
taskset -c "$LG_CPU" "$UPSTREAM" -s "$T/small.json" -l "$T/large.json" \
	-p "$WH_PORT" -p "$LH_PORT" >"$T/upstream.out" 2>&1 &
pids+=($!)
taskset -c "$PX_CPU" "$UPSTREAM" -s "$T/small.json" -l "$T/large.json" \
	-p "$DIRECT_PORT" >"$T/direct.out" 2>&1 &
DIRECT_PID=$!
pids+=($DIRECT_PID)
wait_http "http://127.0.0.1:$WH_PORT/v1/config" &&
	wait_http "http://127.0.0.1:$DIRECT_PORT/v1/config" ||
	die "bench-upstream did not start: $(cat "$T"/upstream.out)"

# --- TLS -----------------------------------------------------------------
# One ECDSA P-256 certificate for 127.0.0.1, served by nginx, haproxy and
# floe alike. The clients (wrk, openssl s_client) read an OpenSSL
# configuration that allows TLS 1.3 only and the P-256 group only, so every
# handshake is ECDHE P-256 with an ECDSA P-256 signature; bench/tlshs.c
# sets the same itself.
TLSD=$T/tls
mkdir -p "$TLSD"
CLIENT_CNF=$TLSD/client.cnf
if want tls || want tlscat; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$TLSD/key.pem" \
		-out "$TLSD/cert.pem" 2>"$TLSD/openssl.err" ||
		die "openssl: no certificate: $(cat "$TLSD/openssl.err")"
	cat "$TLSD/cert.pem" "$TLSD/key.pem" >"$TLSD/haproxy.pem"
	cat >"$CLIENT_CNF" <<EOF
openssl_conf = bench_init
[bench_init]
ssl_conf = bench_ssl
[bench_ssl]
system_default = bench_tls
[bench_tls]
MinProtocol = TLSv1.3
Groups = P-256
EOF
fi
NGX_TLS_PORT=$(free_port) HAP_TLS_PORT=$(free_port)

# --- nginx ---------------------------------------------------------------
NGX_PORT=$(free_port)
# nginx as root runs its workers as root too (the bench's files are root's).
NGX_USER=
[ "$(id -u)" = 0 ] && NGX_USER="user root;"
# nginx_conf DIR WORKERS PORT [SERVERS]: nginx proxy_pass with upstream
# keep-alive, WORKERS worker processes, no logging, listening on PORT (and
# what follows it in the listen directive: "PORT ssl"); its pid, log and
# temporary paths in DIR; SERVERS: more server blocks. NGX_CAT: the
# catalog's port (WH_PORT); NGX_SERVER: more lines in the server block.
nginx_conf() {
	mkdir -p "$1"
	cat <<EOF
$NGX_USER
worker_processes $2;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $1/body;
	proxy_temp_path $1/proxy;
	fastcgi_temp_path $1/fastcgi;
	uwsgi_temp_path $1/uwsgi;
	scgi_temp_path $1/scgi;
	upstream catalog {
		server 127.0.0.1:${NGX_CAT:-$WH_PORT};
		keepalive 64;
	}
	server {
		listen 127.0.0.1:$3;
		${NGX_SERVER:-}
		location / {
			proxy_pass http://catalog;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			# 1 MB answers: stream them, never spill to a temp file.
			proxy_buffers 16 16k;
			proxy_max_temp_file_size 0;
		}
	}
${4:-}
}
EOF
}
# --- an https catalog ------------------------------------------------------
# A TLS front before the lakehouse port of the upstream, as a catalog's
# load balancer terminating TLS: nginx on the load CPU with the same
# certificate, TLS 1.3 only, keep-alive both ways. The proxies speak TLS
# to it (nginx and haproxy without verifying it, floe verifying it: a
# cost of the handshake only, and connections are kept).
FRONT_PORT=$(free_port) NGX_TLSCAT_PORT=$(free_port) HAP_TLSCAT_PORT=$(free_port)
NGX_TLSCAT=
if want tlscat; then
	NGX_CAT=$LH_PORT NGX_SERVER="ssl_certificate $TLSD/cert.pem;
		ssl_certificate_key $TLSD/key.pem;
		ssl_protocols TLSv1.3;
		keepalive_requests 1000000;" \
		nginx_conf "$T/front" 1 "$FRONT_PORT ssl" >"$T/front.conf"
	taskset -c "$LG_CPU" nginx -c "$T/front.conf" -p "$T/front" \
		>"$T/front/out" 2>&1 &
	pids+=($!)
	NGX_TLSCAT="	upstream tlscat {
		server 127.0.0.1:$FRONT_PORT;
		keepalive 64;
	}
	server {
		listen 127.0.0.1:$NGX_TLSCAT_PORT;
		keepalive_requests 1000000;
		location / {
			proxy_pass https://tlscat;
			proxy_http_version 1.1;
			proxy_set_header Connection \"\";
			proxy_ssl_protocols TLSv1.3;
			proxy_buffers 16 16k;
			proxy_max_temp_file_size 0;
		}
	}"
fi

# The same proxy behind TLS: nginx's defaults (session tickets on, no
# shared session cache) but TLS 1.3 allowed, and keep-alive connections
# not closed every 1,000 requests (floe does not close them either).
NGX_TLS=
want tls && NGX_TLS="	server {
		listen 127.0.0.1:$NGX_TLS_PORT ssl;
		ssl_certificate $TLSD/cert.pem;
		ssl_certificate_key $TLSD/key.pem;
		ssl_protocols TLSv1.2 TLSv1.3;
		keepalive_requests 1000000;
		location / {
			proxy_pass http://catalog;
			proxy_http_version 1.1;
			proxy_set_header Connection \"\";
			proxy_buffers 16 16k;
			proxy_max_temp_file_size 0;
		}
	}"
nginx_conf "$T/nginx" 1 "$NGX_PORT" "$NGX_TLS
$NGX_TLSCAT" >"$T/nginx.conf"
taskset -c "$PX_CPU" nginx -c "$T/nginx.conf" -p "$T/nginx" \
	>"$T/nginx/out" 2>&1 &
NGX_PID=$!
pids+=($NGX_PID)

# --- haproxy -------------------------------------------------------------
HAP_PORT=$(free_port)
cat >"$T/haproxy.cfg" <<EOF
# haproxy, one thread, server connections reused, no logging.
global
	nbthread 1
	maxconn 4096
defaults
	mode http
	http-reuse always
	timeout connect 2s
	timeout client 60s
	timeout server 60s
frontend bench
	bind 127.0.0.1:$HAP_PORT
	default_backend catalog
backend catalog
	server up 127.0.0.1:$WH_PORT
$(want tls && printf 'frontend bench-tls\n\tbind 127.0.0.1:%s ssl crt %s\n\tdefault_backend catalog\n' \
	"$HAP_TLS_PORT" "$TLSD/haproxy.pem")
$(want tlscat && printf 'frontend bench-tlscat\n\tbind 127.0.0.1:%s\n\tdefault_backend tlscat\nbackend tlscat\n\tserver front 127.0.0.1:%s ssl verify none ssl-min-ver TLSv1.3\n' \
	"$HAP_TLSCAT_PORT" "$FRONT_PORT")
EOF
taskset -c "$PX_CPU" haproxy -db -f "$T/haproxy.cfg" >"$T/haproxy.out" 2>&1 &
HAP_PID=$!
pids+=($HAP_PID)

# --- floe ----------------------------------------------------------------
# The freshness poller reads every table of a moved wave from both catalogs
# once a minute: for the 1,000,000-route floe that is 20,000 LoadTables,
# about 2 s of the proxy CPU that all the floes, nginx and haproxy share
# here, landing in whichever round runs then. The bench measures the
# request path, so the first poll is put past the run (BENCH_POLL=1 keeps
# the default minute).
FRESH="freshness_interval = 1h"
[ "${BENCH_POLL:-0}" = 1 ] && FRESH=
# start_floe NAME ROUTES: a floe on CPU PX_CPU in front of both upstream
# ports, with its own store holding ROUTES routes: the tables
# bench.t00001 ... over 100 waves, and bench.long_history. The table
# measured (TBL: its path; bench.t05000 for 10,000 routes, the middle one)
# and bench.long_history are in one wave, which is flipped to the
# lakehouse. EXTRA: more [floe] lines; LAKE: more [lakehouse] lines (how
# floe authenticates to it); PLAIN: a port of EXTRA's listen_plain, asked
# for readiness when `listen` speaks TLS. Sets FPORT, FPID, FSOCK,
# LOAD_SECS, TBL, BIG.
start_floe() {
	local name=$1 n=$2 extra=${3:-} lake=${4:-} d=$S/$1 i t0 t1 k w
	FPORT=$(free_port)
	local ready=${5:-$FPORT}
	FSOCK=$T/$name.sock
	mkdir -p "$d"
	cat >"$T/$name.conf" <<EOF
[floe]
listen       = 127.0.0.1:$FPORT
admin_socket = $FSOCK
state_dir    = $d/state
rollback_log = $T/$name-rollback.log
access_log   = off
$extra

[warehouse]
uri = http://127.0.0.1:$WH_PORT

[lakehouse]
uri = ${LAKE_URI:-http://127.0.0.1:$LH_PORT}
$lake

[policy]
gate_min_clean = 0
$FRESH
EOF
	taskset -c "$PX_CPU" "$FLOE" -c "$T/$name.conf" >"$T/$name.log" 2>&1 &
	FPID=$!
	pids+=($FPID)
	for i in $(seq 200); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
			"http://127.0.0.1:$ready/readyz")" = 200 ] && break
		sleep 0.05
	done
	[ "$i" = 200 ] && die "floe $name not ready: $(tail -5 "$T/$name.log")"
	# Every route in one floectl route import (POST /routes/import:
	# one synced store transaction).
	k=$((n / 2 > 0 ? n / 2 : 1))
	w=$((k % 100 + 1))
	TBL=$(printf '/v1/routed/namespaces/bench/tables/t%05d' "$k")
	BIG=/v1/routed/namespaces/bench/tables/long_history
	awk -v n="$n" -v w="$w" 'BEGIN {
		for (i = 1; i <= n; i++) {
			obj = i < n ? sprintf("bench.t%05d", i) : "bench.long_history"
			printf "{\"object\":\"%s\",\"wave\":%d}\n", obj, i < n ? i % 100 + 1 : w
		}
	}' >"$T/$name.routes"
	t0=$(date +%s.%N)
	"$FLOECTL" -s "$FSOCK" route import "$T/$name.routes" \
		>"$T/$name.import" 2>&1 ||
		die "floe $name: route import failed: $(head -c 300 "$T/$name.import")"
	t1=$(date +%s.%N)
	rm -f "$T/$name.routes"
	LOAD_SECS=$(echo "$t1 $t0" | awk '{printf "%.2f", $1 - $2}')
	i=$(awk '{print $1; exit}' "$T/$name.import")
	[ "$i" = "$n" ] || die "floe $name: $i of $n routes set"
	"$FLOECTL" -s "$FSOCK" wave flip "$w" lakehouse >/dev/null ||
		die "floe $name: wave flip $w lakehouse failed"
	say "floe $name: $n routes loaded in ${LOAD_SECS}s"
}

stop_pid() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# --- measuring -----------------------------------------------------------
ROUNDS_TSV=$T/rounds.tsv
SCEN_TSV=$T/scenarios.tsv
NOTES=$T/notes
: >"$ROUNDS_TSV"
: >"$SCEN_TSV"
: >"$NOTES"

# wrk_run URL SECS OUT [TOOL]: plain wrk, one thread, on the load CPU
# (https: TLS 1.3 and P-256 only, see CLIENT_CNF); TOOL hs: bench/tlshs.c
# instead, a full TLS handshake for every request, its output read as
# wrk's; TOOL paced: wrk with bench/paced.lua, each client pausing PACE_MS
# on average (exponentially distributed) between an answer and its next
# request.
wrk_run() {
	local hp script=()
	if [ "${4:-}" = hs ]; then
		hp=${1#https://127.0.0.1:}
		taskset -c "$LG_CPU" "$TLSHS" -p "${hp%%/*}" -u "/${hp#*/}" \
			-c "$CONNS" -d "$2" -g P-256 >"$3" 2>&1
		return
	fi
	[ "${4:-}" = paced ] && script=(-s bench/paced.lua)
	BENCH_PACE_MS=$PACE_MS OPENSSL_CONF=$CLIENT_CNF taskset -c "$LG_CPU" \
		wrk -t 1 -c "$CONNS" -d "${2}s" --latency "${script[@]}" "$1" \
		>"$3" 2>&1
}

# Microseconds from a wrk latency ("342.00us", "1.23ms", "2.00s").
# wrk_parse FILE: "rps requests p50_us p99_us errors non2xx".
wrk_parse() {
	awk '
	function us(v) {
		if (v ~ /us$/) return v + 0
		if (v ~ /ms$/) return v * 1000
		if (v ~ /m$/) return v * 60e6
		if (v ~ /s$/) return v * 1e6
		return v + 0
	}
	/requests in/ { req = $1 }
	/^Requests\/sec:/ { rps = $2 }
	$1 == "50%" { p50 = us($2) }
	$1 == "99%" { p99 = us($2) }
	/Socket errors:/ { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
	/Non-2xx or 3xx responses:/ { bad = $5 }
	END { printf "%s %s %s %s %d %d\n", rps, req, p50, p99, err, bad }
	' "$1"
}

# check NAME URL WANT_BYTES [HEADER=VALUE]: a GET must be 200 with a body
# of about WANT_BYTES (and the header, if given). Sets BODY_BYTES.
check() {
	local out code size
	# A first request fills a cache, if the proxy has one.
	curl -sk -o /dev/null --max-time 10 "$2"
	out=$(curl -sk -o "$T/check.body" -D "$T/check.h" \
		-w '%{http_code} %{size_download}' --max-time 10 "$2")
	code=${out% *} size=${out#* }
	[ "$code" = 200 ] || die "$1: $2 answered $code: $(head -c 300 "$T/check.body")"
	if [ "$size" -lt $(($3 * 9 / 10)) ] || [ "$size" -gt $(($3 * 12 / 10)) ]; then
		die "$1: body of $size bytes, want about $3"
	fi
	if [ -n "${4:-}" ] && ! tr -d '\r' <"$T/check.h" | grep -qix "${4/=/: }"; then
		die "$1: no ${4/=/: } in the answer: $(tr -d '\r' <"$T/check.h" | grep -i x-floe)"
	fi
	BODY_BYTES=$size
}

# scenario NAME PROXY URL PID SECS WANT_BYTES [HEADER=VALUE]: declare a
# scenario: wrk on URL for rounds of SECS, PID the proxy whose CPU and RSS
# are read, the answer checked for about WANT_BYTES (and the header).
# TOOL (8th): hs for bench/tlshs.c instead of wrk.
declare -A SC_PX SC_URL SC_PID SC_SECS SC_WANT SC_HDR SC_BYTES SC_TOOL
scenario() {
	SC_PX[$1]=$2 SC_URL[$1]=$3 SC_PID[$1]=$4 SC_SECS[$1]=$5 SC_WANT[$1]=$6
	SC_HDR[$1]=${7:-} SC_TOOL[$1]=${8:-}
}

# run_round SCENARIO R: one round, its figures appended to ROUNDS_TSV.
run_round() {
	local sc=$1 r=$2 pid=${SC_PID[$1]} c0 c1 u0 u1 rps req p50 p99 err bad
	local cpu usr v0 v1 n0 n1 b0 b1 t0 t1
	read -r v0 n0 <<<"$(ctx_switches "$pid")"
	read -r c0 u0 <<<"$(cpu_ticks "$pid" user)"
	read -r b0 t0 <<<"$(cpu_busy "$LG_CPU")"
	wrk_run "${SC_URL[$sc]}" "${SC_SECS[$sc]}" "$T/$sc.$r.wrk" \
		"${SC_TOOL[$sc]}"
	read -r b1 t1 <<<"$(cpu_busy "$LG_CPU")"
	read -r c1 u1 <<<"$(cpu_ticks "$pid" user)"
	read -r v1 n1 <<<"$(ctx_switches "$pid")"
	read -r rps req p50 p99 err bad <<<"$(wrk_parse "$T/$sc.$r.wrk")"
	[ -n "$req" ] && [ "$req" -gt 0 ] ||
		die "$sc: wrk failed: $(cat "$T/$sc.$r.wrk")"
	cpu=$(awk -v t=$((c1 - c0)) -v hz="$HZ" -v n="$req" \
		'BEGIN { printf "%.2f", t * 1e6 / hz / n }')
	# The user-space part of it: the rest is the kernel's (system calls,
	# TCP, the copies), which a proxy's own code changes little.
	usr=$(awk -v t=$((u1 - u0)) -v hz="$HZ" -v n="$req" \
		'BEGIN { printf "%.2f", t * 1e6 / hz / n }')
	# How busy the load CPU was (wrk, the upstream): near 100 %, the
	# client's own queue is in wrk's latencies.
	printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$sc" "$r" "$rps" "$p50" "$p99" "$cpu" "$req" "$err" "$bad" \
		"$usr" "$((v1 - v0))" "$((n1 - n0))" \
		"$(((b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1)))" >>"$ROUNDS_TSV"
}

# measure SCENARIO...: check and warm up each, then ROUNDS rounds of each,
# interleaved (round 1 of every scenario, then round 2 ...), so that what
# else runs on the machine weighs on all of them alike. RSS after the last.
measure() {
	local sc r
	for sc in "$@"; do
		check "$sc" "${SC_URL[$sc]}" "${SC_WANT[$sc]}" "${SC_HDR[$sc]}"
		SC_BYTES[$sc]=$BODY_BYTES
		wrk_run "${SC_URL[$sc]}" \
			"$((SC_SECS[$sc] < SECS ? 1 : WARM))" "$T/warm.out" \
			"${SC_TOOL[$sc]}"
	done
	for r in $(seq "$ROUNDS"); do
		for sc in "$@"; do
			run_round "$sc" "$r"
		done
	done
	for sc in "$@"; do
		printf '%s\t%s\t%s\t%s\t%s\n' "$sc" "${SC_PX[$sc]}" \
			"${SC_BYTES[$sc]}" "$(rss_kb "${SC_PID[$sc]}")" \
			"${SC_URL[$sc]}" >>"$SCEN_TSV"
		say "$sc: $(awk -F'\t' -v s="$sc" \
			'$1 == s { printf "%.0f/s ", $3 }' "$ROUNDS_TSV")"
	done
}

# idle_rss SCENARIO PROXY PORT PATH PID: RSS of PID with IDLE keep-alive
# clients that each got one answer and stay open.
idle_rss() {
	local sc=$1 px=$2 port=$3 path=$4 pid=$5 before after i st
	before=$(rss_kb "$pid")
	mkfifo "$T/idle.in"
	node bench/idle.js "$port" "$path" "$IDLE" <"$T/idle.in" \
		>"$T/idle.out" 2>&1 &
	local ipid=$!
	exec 7>"$T/idle.in"
	for i in $(seq 600); do
		grep -q '^ready' "$T/idle.out" && break
		sleep 0.05
	done
	st=$(cat "$T/idle.out")
	sleep 0.5
	after=$(rss_kb "$pid")
	exec 7>&-
	wait "$ipid" 2>/dev/null
	rm -f "$T/idle.in"
	printf '%s\t%s\t%s\t%s\t%s\n' "$sc" "$px" "$before" "$after" \
		"$st" >>"$T/idle.tsv"
	say "$sc: RSS ${before} kB -> ${after} kB with $st"
}

: >"$T/idle.tsv"
: >"$T/soak.tsv"
LOADS=()

# --- the run -------------------------------------------------------------
wait_http "http://127.0.0.1:$NGX_PORT/v1/config" ||
	die "nginx did not start: $(cat "$T/nginx/out" "$T/nginx/error.log")"
wait_http "http://127.0.0.1:$HAP_PORT/v1/config" ||
	die "haproxy did not start: $(cat "$T/haproxy.out")"
# Does this floe have the LoadTable cache? The routed scenarios run
# without it (every answer comes from the catalog); the cache scenario
# with it.
NOCACHE=
HAS_CACHE=0
printf '[floe]\ncache_size = 64M\n[warehouse]\nuri = http://127.0.0.1:1\n[lakehouse]\nuri = http://127.0.0.1:1\n' \
	>"$T/cache-probe.conf"
if "$FLOE" -t -c "$T/cache-probe.conf" >/dev/null 2>&1; then
	HAS_CACHE=1
	NOCACHE="cache_size = 0"
fi
PLAIN=/v1/namespaces/bench/tables/t05000
PLAIN_BIG=/v1/namespaces/bench/tables/long_history
LH=X-Floe-Target=lakehouse

# Every floe runs from the start, idle until its rounds: the 10,000-route
# one, the 10-route one, the cache one, the 1,000,000-route one.
start_floe routed "$ROUTES" "$NOCACHE"
F_PID=$FPID F_PORT=$FPORT F_TBL=$TBL F_BIG=$BIG
LOADS+=("routed $ROUTES $LOAD_SECS")
if want plain; then
	start_floe routed-10 10 "$NOCACHE"
	LOADS+=("routed-10 10 $LOAD_SECS")
	scenario floe-routed-10 floe "http://127.0.0.1:$FPORT$TBL" "$FPID" "$SECS" \
		"$SMALL_BYTES" "$LH"
	SMALL=(upstream nginx haproxy floe-routed floe-routed-10)
	# The same 10 routes with floe's own credential on every request to the
	# lakehouse: a bearer token, and an AWS SigV4 signature (with a session
	# token) over each request as it is sent. The upstream checks neither:
	# what is measured is floe's cost.
	printf 'bench-bearer-token-%s\n' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
		>"$T/lake.token"
	printf '[default]\naws_access_key_id = AKIABENCHEXAMPLE\naws_secret_access_key = %s\naws_session_token = %s\n' \
		"$(head -c 30 /dev/urandom | base64)" "$(head -c 470 /dev/urandom | base64 -w0)" \
		>"$T/aws.credentials"
	chmod 600 "$T/lake.token" "$T/aws.credentials"
	start_floe bearer 10 "$NOCACHE" "token_file = $T/lake.token"
	LOADS+=("bearer 10 $LOAD_SECS")
	scenario floe-bearer floe "http://127.0.0.1:$FPORT$TBL" "$FPID" "$SECS" \
		"$SMALL_BYTES" "$LH"
	start_floe sigv4 10 "$NOCACHE" "auth = sigv4
sigv4_region = us-east-1
aws_credentials_file = $T/aws.credentials"
	LOADS+=("sigv4 10 $LOAD_SECS")
	scenario floe-sigv4 floe "http://127.0.0.1:$FPORT$TBL" "$FPID" "$SECS" \
		"$SMALL_BYTES" "$LH"
	SMALL+=(floe-bearer floe-sigv4)
	# The routed floe in front of catalogs whose every answer differs
	# from the one before (bench-upstream -v, at the same length): an
	# answer floe's memo of checked answers has not seen, checked and
	# rewritten in full. Its 1 MB rounds are floe-vary-1m.
	VWH_PORT=$(free_port) VLH_PORT=$(free_port)
	taskset -c "$LG_CPU" "$UPSTREAM" -v -s "$T/small.json" \
		-l "$T/large.json" -p "$VWH_PORT" -p "$VLH_PORT" \
		>"$T/vary.out" 2>&1 &
	pids+=($!)
	wait_http "http://127.0.0.1:$VWH_PORT/v1/config" ||
		die "bench-upstream -v did not start: $(cat "$T"/vary.out)"
	WH_PORT=$VWH_PORT LH_PORT=$VLH_PORT start_floe vary "$ROUTES" "$NOCACHE"
	LOADS+=("vary $ROUTES $LOAD_SECS")
	scenario floe-vary floe "http://127.0.0.1:$FPORT$TBL" "$FPID" "$SECS" \
		"$SMALL_BYTES" "$LH"
	scenario floe-vary-1m floe "http://127.0.0.1:$FPORT$BIG" "$FPID" \
		"$BIG_SECS" "$LARGE_BYTES" "$LH"
	SMALL+=(floe-vary)
	if [ "$HAS_CACHE" = 1 ]; then
		# The same table and routes, answered from floe's LoadTable cache
		# (its default size and time to live).
		start_floe cache "$ROUTES"
		LOADS+=("cache $ROUTES $LOAD_SECS")
		scenario floe-cache floe "http://127.0.0.1:$FPORT$TBL" "$FPID" \
			"$SECS" "$SMALL_BYTES" X-Floe-Cache=hit
		SMALL+=(floe-cache)
	else
		echo "cache scenario: floe has no LoadTable cache yet" >>"$NOTES"
		say "cache scenario: floe has no LoadTable cache yet"
	fi
	if [ "$FULL" = 1 ]; then
		start_floe routed-1000000 1000000 "$NOCACHE"
		LOADS+=("routed-1000000 1000000 $LOAD_SECS")
		scenario floe-routed-1000000 floe "http://127.0.0.1:$FPORT$TBL" \
			"$FPID" "$SECS" "$SMALL_BYTES" "$LH"
		SMALL+=(floe-routed-1000000)
	else
		echo "1,000,000-route floe: skipped (BENCH_FULL=0)" >>"$NOTES"
	fi
fi

scenario upstream upstream "http://127.0.0.1:$DIRECT_PORT$PLAIN" \
	"$DIRECT_PID" "$SECS" "$SMALL_BYTES"
scenario nginx nginx "http://127.0.0.1:$NGX_PORT$PLAIN" "$NGX_PID" "$SECS" \
	"$SMALL_BYTES"
scenario haproxy haproxy "http://127.0.0.1:$HAP_PORT$PLAIN" "$HAP_PID" \
	"$SECS" "$SMALL_BYTES"
scenario floe-routed floe "http://127.0.0.1:$F_PORT$F_TBL" "$F_PID" "$SECS" \
	"$SMALL_BYTES" "$LH"
scenario upstream-1m upstream "http://127.0.0.1:$DIRECT_PORT$PLAIN_BIG" \
	"$DIRECT_PID" "$BIG_SECS" "$LARGE_BYTES"
scenario nginx-1m nginx "http://127.0.0.1:$NGX_PORT$PLAIN_BIG" "$NGX_PID" \
	"$BIG_SECS" "$LARGE_BYTES"
scenario haproxy-1m haproxy "http://127.0.0.1:$HAP_PORT$PLAIN_BIG" \
	"$HAP_PID" "$BIG_SECS" "$LARGE_BYTES"
scenario floe-routed-1m floe "http://127.0.0.1:$F_PORT$F_BIG" "$F_PID" \
	"$BIG_SECS" "$LARGE_BYTES" "$LH"
# The same 1 MB loads from paced clients (bench/paced.lua): the same
# offered load for both, below what either serves, where the scenarios
# above run each proxy flat out and the faster one saturates the load CPU.
# Rounds of twice SECS: a p99 of about 4,000 answers.
scenario nginx-1m-paced nginx "http://127.0.0.1:$NGX_PORT$PLAIN_BIG" \
	"$NGX_PID" "$((2 * SECS))" "$LARGE_BYTES" "" paced
scenario floe-routed-1m-paced floe "http://127.0.0.1:$F_PORT$F_BIG" \
	"$F_PID" "$((2 * SECS))" "$LARGE_BYTES" "$LH" paced

if want plain; then
	say "4 KB LoadTable: $ROUNDS x ${SECS}s after ${WARM}s, wrk -c $CONNS: ${SMALL[*]}"
	measure "${SMALL[@]}"

	# RSS drift: the floe that served the rounds above, SOAK seconds more
	# (before any 1 MB answer: those leave malloc arenas behind).
	if [ "$SOAK" -gt 0 ]; then
		say "RSS drift: floe routed for ${SOAK}s"
		r0=$(rss_kb "$F_PID")
		c0=$(cpu_ticks "$F_PID")
		wrk_run "http://127.0.0.1:$F_PORT$F_TBL" "$SOAK" "$T/soak.wrk"
		c1=$(cpu_ticks "$F_PID")
		r1=$(rss_kb "$F_PID")
		read -r rps req p50 p99 err bad <<<"$(wrk_parse "$T/soak.wrk")"
		printf 'floe-routed\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$SOAK" "$r0" \
			"$r1" "$rps" "$req" "$p99" "$((c1 - c0))" "$((err + bad))" \
			>>"$T/soak.tsv"
		say "RSS drift: ${r0} kB -> ${r1} kB over ${SOAK}s ($rps/s)"
	fi

	idle_rss floe-routed floe "$F_PORT" "$F_TBL" "$F_PID"
	idle_rss nginx nginx "$NGX_PORT" "$PLAIN" "$NGX_PID"
	idle_rss haproxy haproxy "$HAP_PORT" "$PLAIN" "$HAP_PID"

	say "1 MB LoadTable: $ROUNDS x ${BIG_SECS}s"
	measure upstream-1m nginx-1m haproxy-1m floe-routed-1m floe-vary-1m
	say "1 MB LoadTable, paced clients (${PACE_MS} ms): $ROUNDS x $((2 * SECS))s"
	measure nginx-1m-paced floe-routed-1m-paced

	if [ "$PERF" = 1 ] && command -v perf >/dev/null; then
		say "perf: floe routed, 5 s"
		wrk_run "http://127.0.0.1:$F_PORT$F_TBL" 7 "$T/perf.wrk" &
		perf_wrk=$!
		sleep 1
		perf record -q -g -p "$F_PID" -o "$T/perf.data" -- sleep 5 \
			>/dev/null 2>&1
		wait "$perf_wrk"
		perf report -i "$T/perf.data" --stdio --no-children \
			--sort dso,symbol 2>/dev/null | grep -E '^ +[0-9.]+%' |
			sed 's/[ -]*$//' | head -15 >bench/results/perf-floe.txt
		say "perf: top symbols in bench/results/perf-floe.txt"
		cat bench/results/perf-floe.txt >&2
	fi
fi

# --- workers = 2 against workers = 1 --------------------------------------
# The same routed 4 KB LoadTable from a floe of one process and from a
# master with two workers, both on the proxy CPU (a worker inherits its
# master's affinity): the CPU per request of the master and its workers
# together against the single process's. With one proxy CPU the two
# workers share it, so req/s cannot grow here; see bench/README.md.
if want workers; then
	start_floe workers-1 "$ROUTES" "$NOCACHE
workers = 1"
	LOADS+=("workers-1 $ROUTES $LOAD_SECS")
	scenario floe-workers-1 floe "http://127.0.0.1:$FPORT$TBL" "$FPID" \
		"$SECS" "$SMALL_BYTES" "$LH"
	start_floe workers-2 "$ROUTES" "$NOCACHE
workers = 2"
	LOADS+=("workers-2 $ROUTES $LOAD_SECS")
	scenario floe-workers-2 floe "http://127.0.0.1:$FPORT$TBL" "$FPID" \
		"$SECS" "$SMALL_BYTES" "$LH"
	# nginx the same way: its one worker against two on the proxy CPU,
	# in the same rounds. What a second process sharing the CPU costs a
	# proxy that is not floe.
	NGX2_PORT=$(free_port)
	nginx_conf "$T/nginx-2" 2 "$NGX2_PORT" >"$T/nginx-2.conf"
	taskset -c "$PX_CPU" nginx -c "$T/nginx-2.conf" -p "$T/nginx-2" \
		>"$T/nginx-2/out" 2>&1 &
	NGX2_PID=$!
	pids+=($NGX2_PID)
	wait_http "http://127.0.0.1:$NGX2_PORT/v1/config" ||
		die "nginx with two workers did not start: $(cat "$T/nginx-2/out" "$T/nginx-2/error.log")"
	scenario nginx-workers-1 nginx "http://127.0.0.1:$NGX_PORT$PLAIN" \
		"$NGX_PID" "$SECS" "$SMALL_BYTES"
	scenario nginx-workers-2 nginx "http://127.0.0.1:$NGX2_PORT$PLAIN" \
		"$NGX2_PID" "$SECS" "$SMALL_BYTES"
	say "workers: 4 KB LoadTable, $ROUNDS x ${SECS}s, workers = 1 and 2 (floe and nginx)"
	tree_ticks "$FPID" >"$T/split.0"
	tree_ticks "$NGX2_PID" >>"$T/split.0"
	measure floe-workers-1 floe-workers-2 nginx-workers-1 nginx-workers-2
	# How each two-worker proxy spread the rounds' CPU over its processes.
	tree_ticks "$FPID" >"$T/split.1"
	tree_ticks "$NGX2_PID" >>"$T/split.1"
	for sc in floe-workers-2:"$FPID" nginx-workers-2:"$NGX2_PID"; do
		printf '%s\t%s\n' "${sc%%:*}" "$(awk -v root="${sc#*:}" '
			NR == FNR { t0[$1] = $2; next }
			$3 == root || $1 == root { d = $2 - t0[$1]; all += d
				w[n++] = ($1 == root ? "master " : "") d }
			END { s = ""; for (i = 0; i < n; i++) s = s (i ? " " : "") w[i]
				print s " of " all }' "$T/split.0" "$T/split.1")"
	done >"$T/workers_split.tsv"
	# The same four again with every process under SCHED_BATCH, which
	# takes away wakeup preemption: a worker woken while another runs
	# waits for it to block instead of taking the CPU at once. Where two
	# workers share a CPU, how often the scheduler switches between them
	# on a wakeup, and not what a request costs floe, is what this
	# separates. A control only: the goal is the default policy's.
	if [ "${BENCH_WORKERS_BATCH:-1}" = 1 ] && command -v chrt >/dev/null; then
		WB=("${SC_PID[floe-workers-1]}" "$FPID" "$NGX_PID" "$NGX2_PID")
		sched_policy -b "${WB[@]}" || die "chrt -b failed"
		for sc in floe-workers-1 floe-workers-2 nginx-workers-1 nginx-workers-2; do
			scenario "$sc-batch" "${SC_PX[$sc]}" "${SC_URL[$sc]}" \
				"${SC_PID[$sc]}" "$SECS" "$SMALL_BYTES" "${SC_HDR[$sc]}"
		done
		say "workers: the same under SCHED_BATCH (no wakeup preemption)"
		measure floe-workers-1-batch floe-workers-2-batch \
			nginx-workers-1-batch nginx-workers-2-batch
		sched_policy -o "${WB[@]}" || die "chrt -o failed"
	fi
	kill "$NGX2_PID" 2>/dev/null
	wait "$NGX2_PID" 2>/dev/null
	forget_pid "$NGX2_PID"
	# The same request counted in instructions (bench/callgrind.sh
	# CG_WORKERS): what a second worker costs apart from what sharing
	# the one proxy CPU does to its caches and its scheduling.
	if [ "${BENCH_WORKERS_IR:-1}" = 1 ] && command -v valgrind >/dev/null &&
		command -v callgrind_control >/dev/null; then
		for w in 1 2; do
			CG_WORKERS=$w bench/callgrind.sh "$B" >"$T/cgw.$w" 2>&1
			ir=$(awk '/Ir per routed LoadTable/ {
				for (i = 1; i < NF; i++) if ($(i + 1) == "Ir") print $i }' \
				"$T/cgw.$w")
			if [ -z "$ir" ]; then
				say "callgrind, workers = $w failed: $(tail -3 "$T/cgw.$w")"
				rm -f "$T/workers_ir"
				break
			fi
			echo "$w $ir" >>"$T/workers_ir"
		done
		[ -f "$T/workers_ir" ] &&
			say "workers: instructions per request (callgrind): $(tr '\n' ' ' <"$T/workers_ir")"
	fi
fi

# --- TLS on the client side ----------------------------------------------
# resume_check NAME PORT PATH: a first connection (TLS 1.3, P-256) saves
# its session, as a ticket, and a second offers it. One line of tls.tsv:
# how each was made (New or Reused), the protocol, cipher, key exchange
# group and the server's signature of the first.
resume_check() {
	local f=$T/$1.sess one two
	local get="GET $3 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
	one=$(printf "$get" | OPENSSL_CONF=$CLIENT_CNF timeout 10 \
		openssl s_client -connect "127.0.0.1:$2" -ign_eof \
		-sess_out "$f" 2>&1)
	two=$(printf "$get" | OPENSSL_CONF=$CLIENT_CNF timeout 10 \
		openssl s_client -connect "127.0.0.1:$2" -ign_eof \
		-sess_in "$f" 2>&1)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" \
		"$(awk '/^(New|Reused), /{sub(/,.*/, ""); print; exit}' <<<"$one")" \
		"$(awk '/^(New|Reused), /{sub(/,.*/, ""); print; exit}' <<<"$two")" \
		"$(awk '/^(New|Reused), /{sub(/,$/, "", $2); print $2; exit}' <<<"$one")" \
		"$(awk '/^(New|Reused), /{print $NF; exit}' <<<"$one")" \
		"$(awk -F', ' '/^Server Temp Key:/{print $2; exit}' <<<"$one")" \
		"$(awk -F': ' '/^Peer signature type:/{print $2; exit}' <<<"$one")" \
		>>"$T/tls.tsv"
	say "TLS $1: $(tail -1 "$T/tls.tsv" | tr '\t' ' ')"
}
: >"$T/tls.tsv"
if want tls; then
	TLS_PLAIN=$(free_port)
	start_floe tls "$ROUTES" "$NOCACHE
tls_cert = $TLSD/cert.pem
tls_key = $TLSD/key.pem
listen_plain = 127.0.0.1:$TLS_PLAIN" "" "$TLS_PLAIN"
	LOADS+=("tls $ROUTES $LOAD_SECS")
	for hs in "" hs; do
		sfx=-tls${hs:+-hs}
		scenario "nginx$sfx" nginx "https://127.0.0.1:$NGX_TLS_PORT$PLAIN" \
			"$NGX_PID" "$SECS" "$SMALL_BYTES" "" "$hs"
		scenario "haproxy$sfx" haproxy \
			"https://127.0.0.1:$HAP_TLS_PORT$PLAIN" "$HAP_PID" "$SECS" \
			"$SMALL_BYTES" "" "$hs"
		scenario "floe$sfx" floe "https://127.0.0.1:$FPORT$TBL" "$FPID" \
			"$SECS" "$SMALL_BYTES" "$LH" "$hs"
	done
	resume_check nginx "$NGX_TLS_PORT" "$PLAIN"
	resume_check haproxy "$HAP_TLS_PORT" "$PLAIN"
	resume_check floe "$FPORT" "$TBL"
	say "TLS 4 KB LoadTable, keep-alive (wrk) and a full handshake per request (bench-tlshs -c $CONNS)"
	measure nginx-tls haproxy-tls floe-tls nginx-tls-hs haproxy-tls-hs \
		floe-tls-hs
	for sc in nginx-tls-hs haproxy-tls-hs floe-tls-hs; do
		echo "$sc: bench-tlshs $(cat "$T/$sc".*.wrk | awk '/^tls: /{
			split($2, a, "="); r += a[2]; l = $0 } END {
			sub(/^tls: resumed=[0-9]+ /, "", l)
			printf "resumed=%d (all rounds) %s", r, l }')" >>"$NOTES"
	done
fi

# --- an https catalog -----------------------------------------------------
# The routed 4 KB and 1 MB LoadTable with TLS between the proxy and the
# catalog's front (see above): what reading and writing TLS records to a
# catalog costs each proxy.
if want tlscat; then
	wait_http "https://127.0.0.1:$FRONT_PORT/v1/config" ||
		die "the TLS front did not start: $(cat "$T/front/out" "$T/front/error.log")"
	LAKE_URI=https://127.0.0.1:$FRONT_PORT start_floe tlscat "$ROUTES" \
		"$NOCACHE" "ca_file = $TLSD/cert.pem"
	LOADS+=("tlscat $ROUTES $LOAD_SECS")
	for big in "" -1m; do
		path=$PLAIN secs=$SECS bytes=$SMALL_BYTES ftbl=$TBL
		[ -n "$big" ] && path=$PLAIN_BIG secs=$BIG_SECS \
			bytes=$LARGE_BYTES ftbl=$BIG
		scenario "nginx-tlscat$big" nginx \
			"http://127.0.0.1:$NGX_TLSCAT_PORT$path" "$NGX_PID" "$secs" \
			"$bytes"
		scenario "haproxy-tlscat$big" haproxy \
			"http://127.0.0.1:$HAP_TLSCAT_PORT$path" "$HAP_PID" "$secs" \
			"$bytes"
		scenario "floe-tlscat$big" floe "http://127.0.0.1:$FPORT$ftbl" \
			"$FPID" "$secs" "$bytes" "$LH"
	done
	say "an https catalog: 4 KB and 1 MB LoadTable, $ROUNDS rounds each"
	measure nginx-tlscat haproxy-tlscat floe-tlscat
	measure nginx-tlscat-1m haproxy-tlscat-1m floe-tlscat-1m
fi

# --- slow clients ---------------------------------------------------------
# slow_run NAME PROXY PORT PATH PID: SLOW_N clients with a 64 KB receive
# buffer and a 1448-byte MSS each GET the 1 MB LoadTable and read it at
# SLOW_RATE bytes/s; the proxy's VmRSS (PID and its children) sampled
# every 100 ms by the client. One line of slow.tsv.
slow_run() {
	local pids
	pids=$(proc_tree "$5" | paste -sd, -)
	taskset -c "$LG_CPU" "$SLOWREAD" -p "$3" -u "$4" -n "$SLOW_N" \
		-r "$SLOW_RATE" -b 65536 -m 1448 -t "$SLOW_LIMIT" -P "$pids" \
		>"$T/slow.$1.out" 2>&1 || die "$1: slow clients: $(cat "$T/slow.$1.out")"
	printf '%s\t%s\t%s\n' "$1" "$2" "$(cat "$T/slow.$1.out")" >>"$T/slow.tsv"
	say "slow $1: $(cat "$T/slow.$1.out")"
}
: >"$T/slow.tsv"
if want slow; then
	check floe-routed-1m "http://127.0.0.1:$F_PORT$F_BIG" "$LARGE_BYTES" "$LH"
	say "slow clients: $SLOW_N x 1 MB LoadTable read at $SLOW_RATE bytes/s"
	slow_run nginx nginx "$NGX_PORT" "$PLAIN_BIG" "$NGX_PID"
	slow_run haproxy haproxy "$HAP_PORT" "$PLAIN_BIG" "$HAP_PID"
	slow_run floe-routed floe "$F_PORT" "$F_BIG" "$F_PID"
fi


# --- report --------------------------------------------------------------
printf '%s\n' "${LOADS[@]}" >"$T/loads.txt"
mkdir -p "$(dirname "$OUT")"
{
	echo "nproc=$(nproc)"
	echo "kernel=$(uname -r)"
	echo "cpu=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)"
	echo "nginx=$(nginx -v 2>&1 | sed 's/.*version: //')"
	echo "haproxy=$(haproxy -v 2>&1 | awk 'NR==1{print $3}')"
	echo "wrk=$(wrk -v 2>&1 | awk 'NR==1{print $2}')"
	echo "libevent=$(pkg-config --modversion libevent)"
	echo "floe_commit=${BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- proxy routing lib policy cache 2>/dev/null || echo +dirty)}"
	echo "hz=$HZ"
	echo "routes=$ROUTES"
	echo "loadavg_start=$LOADAVG_START"
	echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "duration_s=$(($(date +%s) - START))"
	echo "rounds=$ROUNDS"
	echo "secs=$SECS"
	echo "big_secs=$BIG_SECS"
	echo "pace_ms=$PACE_MS"
	echo "warm=$WARM"
	echo "conns=$CONNS"
	echo "lg_cpu=$LG_CPU"
	echo "proxy_cpu=$PX_CPU"
	echo "small_bytes=$SMALL_BYTES"
	echo "large_bytes=$LARGE_BYTES"
	echo "idle_clients=$IDLE"
	echo "floe_cache=$HAS_CACHE"
	echo "only=${ONLY:-all}"
	echo "slow_clients=$SLOW_N"
	echo "slow_rate=$SLOW_RATE"
	echo "openssl=$(openssl version | awk '{print $2}')"
} >"$T/machine.txt"
node bench/report.js "$T" "$OUT"
