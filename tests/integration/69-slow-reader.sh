#!/bin/bash
# A client that does not take a large answer makes floe hold little of it.
# In front of bench-upstream serving a LARGE_MB (default 64) LoadTable
# result, a client with a 64 KiB receive buffer asks for it, reads 256 KiB
# and stops: floe passes the answer on as it arrives (chunked, the config
# merged), stops reading the catalog once the client holds its share (the
# catalog's transfer shows as paused in /status), and its peak RSS stays
# within 40 MB of what it was before; once the client reads on, the whole
# answer arrives, merged, and the transfer is no longer paused. A
# catalog that goes away while paused has the answer cut short. The same
# over TLS, and from an https catalog.
# Then, with the LoadTable cache on, a 3 MB answer streamed is stored as it
# was sent (the next load is a hit with the same bytes), while one larger
# than a cache entry is not stored.
# alone: measures floe's RSS under load
. "$(dirname "$0")/lib.sh"
lib_init 69s
MB=${LARGE_MB:-64}
BIG=/v1/warehouse/namespaces/bench/tables/long_history
SMALL=/v1/warehouse/namespaces/bench/tables/t1

bench_upstream_build
pad_json "$T/large.json" "$MB"
pad_json "$T/mid.json" 3
# upstream LARGE: a bench-upstream on two new ports serving LARGE.
upstream() {
	upstream_start "$1"
	unset WH_URI LH_URI
}
# slow_client NAME BODY: a client of BIG (slowread.py: a 64 KiB receive
# buffer) that reads the head and 256 KiB, then waits for $T/go; its
# output in $T/NAME.out, the body in BODY, its pid in SLOW. A check fails
# when no head came within 10 s. SLOW_TLS_CA (a CA file): over TLS.
slow_client() {
	rm -f "$T/go"
	python3 tests/integration/slowread.py "$LISTEN" "$BIG" "$T/go" "$2" \
		>"$T/$1.out" 2>"$T/$1.err" &
	SLOW=$!
	pids+=($SLOW)
	for i in $(seq 200); do
		grep -qs '^head' "$T/$1.out" && break
		sleep 0.05
	done
	grep -qs '^head' "$T/$1.out" || bad "$1: no head: $(cat "$T/$1.err")"
}
kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$FLOE_PID/status"; }
st() { curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status; }
RSS_CHECKS=1 RSS_NOTE=
nm -D "$FLOE" 2>/dev/null | grep -q __asan_init &&
	RSS_CHECKS=0 RSS_NOTE=" (not checked: a sanitizer build)"

# --- 1. a client that stops reading ---------------------------------------
upstream "$T/large.json"
write_conf
start_floe
get "$SMALL"
expect_status "a 4 KB answer" 200
rss0=$(kb VmRSS)
slow_client slow "$T/big.body"
sleep 2
hwm=$(kb VmHWM)
s=$(st)
echo "a ${MB} MB answer, not read past 256 KiB: RSS $rss0 kB before," \
	"peak $hwm kB; held $(echo "$s" | jq .output.held_bytes) bytes;" \
	"warehouse $(echo "$s" | jq -c '.catalogs.warehouse | {connections, paused, waiting}')"
expect_eq "the catalog's transfer is paused" 1 \
	"$(echo "$s" | jq .catalogs.warehouse.paused)"
[ "$(echo "$s" | jq .output.held_bytes)" -le $((256 << 10)) ] &&
	ok "floe holds at most 256 KiB for the client" ||
	bad "floe holds $(echo "$s" | jq .output.held_bytes) bytes for it"
[ $RSS_CHECKS = 0 ] || [ $((hwm - rss0)) -lt $((40 * 1024)) ] &&
	ok "peak RSS within 40 MB of before: +$(((hwm - rss0) >> 10)) MB$RSS_NOTE" ||
	bad "peak RSS +$(((hwm - rss0) >> 10)) MB (peak $hwm kB, before $rss0 kB)"
touch "$T/go"
wait "$SLOW"
res=$(grep '^{' "$T/slow.out")
echo "read on: $res"
expect_eq "once it reads on, the answer ends with its last chunk" true \
	"$(echo "$res" | jq '.status == 200 and .chunked and .ended')"
python3 - "$T/big.body" "$MB" <<'PY' && ok "... whole, the config merged" ||
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["metadata"]["properties"]["floe-test.pad"]) == int(sys.argv[2]) << 20
assert "config" in d
PY
	bad "... not whole: $(head -c 200 "$T/big.body")"
expect_eq "... and the transfer is no longer paused" 0 \
	"$(st | jq .catalogs.warehouse.paused)"

# The catalog goes away while its transfer is paused: once the client
# reads on, its answer is cut short (no last chunk), and floe counts a
# 502 from the warehouse.
fails0=$(st | jq .catalogs.warehouse.failures)
slow_client slow2 "$T/cut.body"
sleep 1
expect_eq "a second slow client: paused" 1 "$(st | jq .catalogs.warehouse.paused)"
kill "$UPID"
wait "$UPID" 2>/dev/null
touch "$T/go"
wait "$SLOW"
res=$(grep '^{' "$T/slow2.out")
echo "the catalog killed meanwhile: $res"
expect_eq "... the answer is cut short: no last chunk" true \
	"$(echo "$res" | jq '.status == 200 and .chunked and (.ended | not)')"
expect_eq "... a warehouse failure" $((fails0 + 1)) \
	"$(st | jq .catalogs.warehouse.failures)"
expect_eq "... no transfer left paused" 0 \
	"$(st | jq .catalogs.warehouse.paused)"
sleep 1.2 # the access log is written on the tick
grep -q 'long_history target=warehouse wave=none status=502' "$T/access.log" &&
	ok "... a 502 in the access log" ||
	bad "... access log: $(tail -n 2 "$T/access.log")"
stop_floe

# --- 1b. the same over TLS ------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=floe-test" \
	-addext "subjectAltName=IP:127.0.0.1" -keyout "$T/tls.key" \
	-out "$T/tls.pem" 2>/dev/null || bad "openssl made no certificate"
upstream "$T/large.json"
PLAIN=$(free_port)
FLOE_EXTRA="tls_cert = $T/tls.pem
tls_key = $T/tls.key
listen_plain = 127.0.0.1:$PLAIN"
write_conf
BASE=https://127.0.0.1:$LISTEN
export CURL_CA_BUNDLE=$T/tls.pem
start_floe
rss0=$(kb VmRSS)
SLOW_TLS_CA=$T/tls.pem slow_client slow3 "$T/tls.body"
sleep 2
hwm=$(kb VmHWM)
s=$(st)
echo "over TLS, not read past 256 KiB: RSS $rss0 kB before, peak $hwm kB;" \
	"held $(echo "$s" | jq .output.held_bytes) bytes"
expect_eq "over TLS: the catalog's transfer is paused" 1 \
	"$(echo "$s" | jq .catalogs.warehouse.paused)"
[ $RSS_CHECKS = 0 ] || [ $((hwm - rss0)) -lt $((40 * 1024)) ] &&
	ok "... peak RSS within 40 MB of before: +$(((hwm - rss0) >> 10)) MB$RSS_NOTE" ||
	bad "... peak RSS +$(((hwm - rss0) >> 10)) MB"
touch "$T/go"
wait "$SLOW"
res=$(grep '^{' "$T/slow3.out")
expect_eq "... once it reads on, the whole answer, chunked" true \
	"$(echo "$res" | jq --argjson n $((MB << 20)) '.status == 200 and .chunked and .ended and .length > $n')"
stop_floe
unset FLOE_EXTRA CURL_CA_BUNDLE

# --- 1c. an https catalog -------------------------------------------------
# The catalog behind a TLS front (tlsfront.js): floe reads its records
# ahead, several in one read, and takes what OpenSSL holds beyond the one
# the bufferevent read. A transfer paused with records held must resume
# with them (the socket will not say so again), whole and in order.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
	-addext "subjectAltName=DNS:localhost" -keyout "$T/cat.key" \
	-out "$T/cat.pem" 2>/dev/null || bad "openssl made no certificate"
upstream "$T/large.json"
tls_front node tests/integration/tlsfront.js "$T/cat.pem" "$T/cat.key" "$WP"
WH_URI=https://localhost:$FRONT
WH_EXTRA="ca_file = $T/cat.pem"
write_conf
start_floe
get "$BIG"
expect_status "a ${MB} MB answer from an https catalog" 200
python3 - "$T/b" "$MB" <<'PY' && ok "... whole, the config merged" ||
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["metadata"]["properties"]["floe-test.pad"]) == int(sys.argv[2]) << 20
assert "config" in d
PY
	bad "... not whole: $(head -c 200 "$T/b")"
slow_client slow4 "$T/tlscat.body"
sleep 1
expect_eq "a slow client of the https catalog: its transfer is paused" 1 \
	"$(st | jq .catalogs.warehouse.paused)"
touch "$T/go"
wait "$SLOW"
res=$(grep '^{' "$T/slow4.out")
expect_eq "... once it reads on, the answer ends with its last chunk" true \
	"$(echo "$res" | jq '.status == 200 and .chunked and .ended')"
cmp -s "$T/tlscat.body" "$T/b" && ok "... the same bytes as read at once" ||
	bad "... other bytes: $(stat -c %s "$T/tlscat.body") against $(stat -c %s "$T/b")"
get "$SMALL"
expect_status "... and the pooled connection serves the next load" 200
expect_eq "... one connection to the catalog for all" 1 \
	"$(st | jq .catalogs.warehouse.connections)"
stop_floe
unset WH_URI WH_EXTRA

# --- 2. the cache stores what it streams, within an entry ------------------
upstream "$T/mid.json"
CACHE_SIZE=64M
FLOE_EXTRA="cache_ttl = 60s"
write_conf
start_floe
get "$BIG"
expect_status "a 3 MB answer" 200
expect_eq "... streamed" chunked "$(hdr Transfer-Encoding)"
expect_eq "... a miss" miss "$(hdr X-Floe-Cache)"
cp "$T/b" "$T/first"
get "$BIG"
expect_eq "the next load of it: a hit" hit "$(hdr X-Floe-Cache)"
cmp -s "$T/b" "$T/first" && ok "... the same bytes, $(stat -c %s "$T/b")" ||
	bad "... other bytes: $(stat -c %s "$T/b") against $(stat -c %s "$T/first")"
stop_floe
CACHE_SIZE=16M # an entry: 2 MB
write_conf
start_floe
get "$BIG"
expect_eq "with 2 MB entries a 3 MB answer is streamed" chunked \
	"$(hdr Transfer-Encoding)"
get "$BIG"
expect_eq "... and not stored: the next load is a miss" miss \
	"$(hdr X-Floe-Cache)"
jq -e '.metadata.properties["floe-test.pad"] | length == 3145728' "$T/b" \
	>/dev/null && ok "... whole" || bad "... not whole"
finish
