#!/bin/bash
# Integration 90: workers = 2 under load. Eight loops read one table on
# fresh connections (spread over both workers by SO_REUSEPORT) while the
# table's wave is flipped, rolled back, acknowledged and flipped again
# through the master's admin socket: no read sent after floectl's
# acknowledgement is answered by the side the wave left, on either worker,
# and both workers answer after each change. Then GET /status and /metrics
# sum what both workers answered, and what their memos hold. Last, with TLS on the listener, a TLS 1.3
# session ticket one worker issued resumes on either worker.
# alone: load across workers
. "$(dirname "$0")/lib.sh"
lib_init 90
catalog warehouse
catalog lakehouse --prefix lhp
FLOE_EXTRA="workers = 2"
write_conf
start_floe

A=/v1/routed/namespaces/db/tables/athena
admin GET /status
expect_eq "two workers in /status" 2 "$(jq '.workers | length' "$T/b")"
expect_eq "each with its own pid" 2 \
	"$(jq '[.workers[].pid | select(. > 0)] | unique | length' "$T/b")"
ctl_ok "route athena" route set db.athena 1

now_ms() { date +%s%3N; }
node tests/integration/workers_load.js "$LISTEN" "$A" 8 "$T/stop" 30000 \
	>"$T/load" 2>"$T/load.err" &
LOAD=$!
pids+=($LOAD)
sleep 0.5
# Each change: when floectl was started and when it returned, the side
# reads sent after it must get.
: >"$T/changes"
change() { # WANT-SIDE FLOECTL-ARGS...
	local want=$1 t0
	shift
	t0=$(now_ms)
	ctl_ok "$*" "$@"
	echo "$t0 $(now_ms) $want" >>"$T/changes"
	sleep 0.4
}
change lakehouse wave flip 1 lakehouse
change warehouse wave rollback 1 --reason test
change warehouse wave ack 1
change lakehouse wave flip 1 lakehouse
change warehouse wave rollback 1 --reason test
touch "$T/stop"
wait $LOAD
forget_pid "$LOAD"

n=$(wc -l <"$T/load")
[ "$n" -ge 100 ] && ok "$n reads answered under load" ||
	bad "only $n reads under load ($(head -c 300 "$T/load.err"))"
expect_eq "no read failed" 0 "$(jq -s '[.[] | select(.err or .status != 200)] | length' "$T/load")"
# For each change: the reads sent after its acknowledgement and before the
# next change started.
i=0
mapfile -t CH <"$T/changes"
for line in "${CH[@]}"; do
	read -r _ ack want <<<"$line"
	i=$((i + 1))
	next=$(echo "${CH[$i]:-}" | awk '{print $1}')
	next=${next:-99999999999999}
	jq -s --argjson a "$ack" --argjson n "$next" \
		'[.[] | select(.t0 >= $a and .t0 < $n)]' "$T/load" >"$T/after"
	total=$(jq length "$T/after")
	wrong=$(jq --arg w "$want" '[.[] | select(.target != $w)] | length' "$T/after")
	workers=$(jq -c '[.[].worker] | unique' "$T/after")
	if [ "$total" -ge 4 ] && [ "$wrong" = 0 ]; then
		ok "change $i: all $total reads sent after the acknowledgement: $want"
	else
		bad "change $i: $wrong of $total reads after the acknowledgement not from $want: $(jq -c '[.[] | select(.target != "'"$want"'")][0:3]' "$T/after")"
	fi
	expect_eq "change $i: both workers answered after it" '["0","1"]' "$workers"
done

# The master's /status and /metrics sum both workers (copied on their tick).
sleep 1.2
admin GET /status
sum=$(jq '[.workers[].requests] | add' "$T/b")
total=$(jq .requests "$T/b")
[ "$total" -ge "$n" ] && [ "$sum" = "$total" ] &&
	ok "/status requests ($total) is the workers' sum, at least the $n reads" ||
	bad "/status requests $total, workers' sum $sum, reads $n"
# Each worker loaded the table from both sides: two entries in its memo.
jq -e '.memo.budget == 2 * 16777216 and .memo.entries == 4 and .memo.bytes > 0 and .memo.bytes <= .memo.budget' \
	"$T/b" >/dev/null &&
	ok "/status memo: both workers' memos summed (4 entries, 2 x 16M)" ||
	bad "/status memo: $(jq -c .memo "$T/b")"
curl -s --max-time 5 --unix-socket "$SOCK" http://floe/metrics >"$T/m"
lh=$(awk '/^floe_requests_total\{side="lakehouse",code="200"\}/{print $2}' "$T/m")
wh=$(awk '/^floe_requests_total\{side="warehouse",code="200"\}/{print $2}' "$T/m")
[ $((${lh:-0} + ${wh:-0})) -ge "$n" ] &&
	ok "/metrics counts both workers' answers (${lh:-0} lakehouse + ${wh:-0} warehouse)" ||
	bad "/metrics: lakehouse ${lh:-none}, warehouse ${wh:-none}, reads $n"
grep -q '^floe_workers 2$' "$T/m" && ok "floe_workers 2" || bad "floe_workers: $(grep floe_workers "$T/m")"
expect_eq "/metrics: the memos' entries and budget summed" \
	"4 $((2 * 16777216))" \
	"$(awk '$1 == "floe_memo_entries" { e = $2 } $1 == "floe_memo_budget_bytes" { b = $2 } END { print e, b }' "$T/m")"

# TLS: the workers share their master's session ticket keys.
stop_floe
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=floe-87" \
	-addext "subjectAltName=IP:127.0.0.1" -keyout "$T/tls.key" \
	-out "$T/tls.pem" 2>/dev/null
FLOE_EXTRA="workers = 2
tls_cert = $T/tls.pem
tls_key = $T/tls.key
listen_plain = 127.0.0.1:$(free_port)"
write_conf
PLAIN_BASE=$BASE
BASE=http://$(awk '/^listen_plain/{print $3}' "$T/floe.conf")
start_floe
# resume: one TLS 1.3 connection from the session in $T/sess (saved by the
# first), a LoadTable on it; prints "New|Reused WORKER".
resume() {
	local io=-sess_out
	[ -s "$T/sess" ] && io=-sess_in
	printf 'GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' "$A" |
		timeout 10 openssl s_client -connect "127.0.0.1:$LISTEN" \
			-CAfile "$T/tls.pem" -tls1_3 -ign_eof "$io" "$T/sess" \
			2>/dev/null | tr -d '\r' |
		awk '/^(New|Reused), / { sub(/,.*/, ""); h = $0 }
			tolower($1) == "x-floe-worker:" { w = $2 } END { print h, w }'
}
expect_eq "a full handshake saves a ticket" New "$(resume | awk '{print $1}')"
: >"$T/resumed"
# The kernel picks a worker per connection at random: all sixteen on one
# worker is a chance of 2^-15.
for i in $(seq 16); do resume >>"$T/resumed"; done
expect_eq "16 connections from the ticket: all resumed" 16 "$(grep -c '^Reused [01]$' "$T/resumed")"
expect_eq "on both workers" 2 "$(awk '{print $2}' "$T/resumed" | sort -u | wc -l)"
BASE=$PLAIN_BASE
finish
