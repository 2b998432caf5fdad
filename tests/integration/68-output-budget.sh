#!/bin/bash
# What clients that do not read make floe hold. In front of bench-upstream
# serving a 1 MB LoadTable result: (1) 10 connections pipeline
# OUTPUT_PIPE requests each (default 100) and read nothing: each
# connection stops being read once an answer waits in its output, so floe
# holds about one answer per connection, and every answer still arrives,
# in order, once they read;
# (2) OUTPUT_N clients (default 300) ask once and never read: floe's
# answers stay within output_budget (new work gets 503 + Retry-After once
# it is reached), its RSS within the budget plus what is in flight, and
# after they leave floe gives the memory back (malloc_trim on the tick).
# OUTPUT_N=2000 is the figure in docs/performance.md.
# alone: measures floe's RSS under load
. "$(dirname "$0")/lib.sh"
lib_init 68
N=${OUTPUT_N:-300}
PIPE_CONNS=10
PIPE_N=${OUTPUT_PIPE:-100}
BUDGET_MB=64
BIG=/v1/routed/namespaces/bench/tables/long_history

bench_upstream 1m
# OUTPUT_OLD=1: a floe without output_budget (the figures before it).
FLOE_EXTRA="idle_timeout = 120s"
[ "${OUTPUT_OLD:-0}" = 1 ] || FLOE_EXTRA="$FLOE_EXTRA
output_budget = ${BUDGET_MB}M"
WH_EXTRA="max_conns = 8"
LH_EXTRA="max_conns = 8"
write_conf

kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$FLOE_PID/status"; }
# A sanitizer build keeps freed memory in quarantine: its RSS says nothing
# of floe's own bounds, which are then checked by the held bytes alone.
RSS_CHECKS=1 RSS_NOTE=
nm -D "$FLOE" 2>/dev/null | grep -q __asan_init &&
	RSS_CHECKS=0 RSS_NOTE=" (not checked: a sanitizer build)"
st() { curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status; }
# settle: wait until floe has answered nothing more for a second (30 s).
settle() {
	local a b i
	a=$(st | jq .requests)
	for i in $(seq 30); do
		sleep 1
		b=$(st | jq .requests)
		[ "$a" = "$b" ] && return 0
		a=$b
	done
}
# holders CONNS PIPELINE: start hold.py; waits for "sent".
holders() {
	rm -f "$T/go"
	python3 tests/integration/hold.py "$LISTEN" "$BIG" "$1" "$2" "$T/go" \
		>"$T/hold.out" 2>"$T/hold.err" &
	HOLD=$!
	pids+=($HOLD)
	for i in $(seq 600); do
		grep -q '^sent' "$T/hold.out" && return 0
		sleep 0.05
	done
	bad "the clients did not get their requests out: $(cat "$T/hold.err")"
}
# release ACTION: tell hold.py to read (or close) and wait for it (90 s).
release() {
	echo "$1" >"$T/go"
	for i in $(seq 900); do
		kill -0 "$HOLD" 2>/dev/null || break
		sleep 0.1
	done
	wait "$HOLD" 2>/dev/null
	RES=$(grep '^{' "$T/hold.out")
}

# --- 1. pipelining, nothing read ----------------------------------------
start_floe
get "$BIG"
expect_status "the 1 MB LoadTable is served" 200
size=$(stat -c %s "$T/b")
[ "$size" -gt 1000000 ] && ok "... $size bytes" || bad "... $size bytes"
rss0=$(kb VmRSS)
holders $PIPE_CONNS "$PIPE_N"
settle
hwm=$(kb VmHWM)
held=$(st | jq .output.held_bytes)
answered=$(st | jq .requests)
echo "pipelining $PIPE_CONNS x $PIPE_N, nothing read: RSS ${rss0} kB before," \
	"peak $hwm kB; held $held bytes; $((answered - 1)) answers queued"
# One answer (plus the budget) per connection, and little else.
[ "$held" -le $((PIPE_CONNS * (1100 << 10))) ] &&
	ok "held answers within one per connection ($((held >> 10)) KiB)" ||
	bad "held $held bytes for $PIPE_CONNS connections"
[ $RSS_CHECKS = 0 ] || [ $((hwm - rss0)) -lt $((48 * 1024)) ] &&
	ok "RSS grew by $(((hwm - rss0) >> 10)) MB$RSS_NOTE" ||
	bad "RSS grew by $(((hwm - rss0) >> 10)) MB (peak $hwm kB)"
[ $((answered - 1)) -le $((PIPE_CONNS * 4)) ] &&
	ok "no connection was read ahead ($((answered - 1)) answers made)" ||
	bad "$((answered - 1)) answers made for clients that read nothing"
t0=$(date +%s%N)
release read
t1=$(date +%s%N)
expect_eq "once they read, every connection gets all $PIPE_N answers" \
	$PIPE_CONNS "$(echo "$RES" | jq .complete)"
expect_eq "... all 200" $((PIPE_CONNS * PIPE_N)) "$(echo "$RES" | jq '.status["200"] // 0')"
echo "read back in $(((t1 - t0) / 1000000)) ms"
stop_floe

# --- 2. a crowd that never reads -----------------------------------------
start_floe
get "$BIG"
rss0=$(kb VmRSS)
holders "$N" 1
settle
hwm=$(kb VmHWM)
rss=$(kb VmRSS)
s=$(st)
held=$(echo "$s" | jq .output.held_bytes)
refused=$(echo "$s" | jq .output.refused)
echo "$N clients, nothing read: RSS ${rss0} kB before, peak $hwm kB," \
	"now $rss kB; held $held bytes; refused $refused"
if [ "${OUTPUT_OLD:-0}" != 1 ]; then
	# The budget, what may be in flight past it (8 connections a side of
	# 1 MB answers, read and rewritten), slack for the heap, and each
	# connection's own state (24 KiB).
	bound=$(((BUDGET_MB + 48) * 1024 + N * 24))
	[ $RSS_CHECKS = 0 ] || [ $((hwm - rss0)) -lt "$bound" ] &&
		ok "RSS peak within the budget: +$(((hwm - rss0) >> 10)) MB (bound $((bound >> 10)) MB)$RSS_NOTE" ||
		bad "RSS peak +$(((hwm - rss0) >> 10)) MB, bound $((bound >> 10)) MB"
	[ "$held" -le $(((BUDGET_MB + 9) << 20)) ] &&
		ok "held $((held >> 20)) MB for clients that do not read" ||
		bad "held $held bytes"
	if [ "$N" -gt $((BUDGET_MB * 2)) ]; then
		[ "$refused" -gt 0 ] && ok "past the budget, $refused requests got 503" ||
			bad "nothing refused past the budget"
		get "$BIG"
		expect_status "a new request meanwhile: 503" 503
		expect_eq "... Retry-After: 1" 1 "$(hdr Retry-After)"
		expect_jq "... a SlowDownException" 503 '.error.type == "SlowDownException"'
		expect_eq "... not a catalog failure" 0 \
			"$(st | jq '.catalogs.warehouse.failures')"
		# Requests that were waiting for a catalog connection when
		# the budget was reached were refused there, never sent.
		q=$(echo "$s" | jq '.catalogs.warehouse.refused_over_budget')
		[ "${q:-0}" -gt 0 ] &&
			ok "$q of them while waiting for a catalog connection" ||
			bad "none refused while waiting for a connection ($q)"
	fi
fi
release close
sleep 3
rss1=$(kb VmRSS)
echo "after they left: RSS $rss1 kB"
[ $RSS_CHECKS = 0 ] || [ "$rss1" -lt $((rss0 + 40 * 1024)) ] &&
	ok "the memory went back: RSS $((rss1 >> 10)) MB (was $((rss0 >> 10)) MB)$RSS_NOTE" ||
	bad "RSS $rss1 kB after the crowd left (was $rss0 kB)"
get "$BIG"
expect_status "served again once they left" 200
finish
