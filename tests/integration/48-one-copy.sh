#!/bin/bash
# Loads of a table that arrive together copy its answer once. A streamed
# answer is copied as it passes, for the memo of checked answers and for
# the LoadTable cache, each of which keeps one; 32 first loads of a 3 MB
# table at once used to make 32 copies for each (some 190 MB, and fresh
# pages to fault in). One answer of a side's table is now copied at a
# time. floe's peak RSS (VmHWM) across the 32 loads says how many. The
# cache's copy is a mapping a forked child does not get (VmFlags dc in
# smaps), and a job forked with it there runs.
. "$(dirname "$0")/lib.sh"
lib_init 48o
BIG=/v1/warehouse/namespaces/bench/tables/long_history

bench_upstream 3
CACHE_SIZE=64M
write_conf
start_floe

hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$FLOE_PID/status"; }

# A small load first, so that the peak before is floe at work.
get /v1/warehouse/namespaces/bench/tables/t1
expect_status "a small load" 200
h0=$(hwm)
# 32 connections, then 32 requests at once (a barrier), each read whole.
python3 - "$LISTEN" "$BIG" >"$T/big.codes" <<'PY'
import hashlib, json, socket, sys, threading
port, path = int(sys.argv[1]), sys.argv[2]
go = threading.Barrier(32)
out = []
def load():
    s = socket.create_connection(("127.0.0.1", port))
    go.wait()
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
               "Connection: close\r\n\r\n" % (path, port)).encode())
    got = bytearray()
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got += b
    head, _, body = bytes(got).partition(b"\r\n\r\n")
    if b"chunked" in head.lower():
        whole, at = b"", 0
        while True:
            eol = body.index(b"\r\n", at)
            size = int(body[at:eol], 16)
            if size == 0:
                break
            whole += body[eol + 2:eol + 2 + size]
            at = eol + 2 + size + 2
        body = whole
    json.loads(body)  # whole JSON, or this load prints nothing
    out.append("%s %s" % (head.split(b" ")[1].decode(),
                          hashlib.sha256(body).hexdigest()[:16] + ":%d" % len(body)))
ts = [threading.Thread(target=load) for _ in range(32)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("\n".join(out))
PY
h1=$(hwm)
# All 200, all the same JSON of more than 3 MB.
n=$(awk '$1 == 200 { split($2, a, ":"); if (a[2] > 3000000) print $2 }' \
	"$T/big.codes" | sort | uniq -c | awk '{ print $1 }')
expect_eq "32 loads of a 3 MB table at once, all whole and the same" 32 "$n"
grow=$(((h1 - h0) / 1024))
if [ "$grow" -lt 32 ]; then
	ok "... floe's peak RSS grew by ${grow} MB (one copy each for the memo and the cache)"
else
	bad "... floe's peak RSS grew by ${grow} MB: a copy for each load?"
fi
# The one copy was the cache's: the next load is a hit.
get "$BIG"
expect_header "the next load is the cache's" X-Floe-Cache hit

# The mappings of 3 MB or more that a fork does not copy.
dc=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { size = 0 }
	/^Size:/ { size = $2 }
	/^VmFlags:/ && / dc/ && size >= 3000 { n++ }
	END { print n + 0 }' "/proc/$FLOE_PID/smaps")
expect_eq "the cache's copy is not a forked child's" 1 "$dc"
f0=$(curl -s --unix-socket "$SOCK" http://floe/status | jq .admin.forks)
printf '{"object":"bench.t2","wave":4}\n' >"$T/r"
ctl_ok "an import (a forked job)" --json route import "$T/r"
f1=$(curl -s --unix-socket "$SOCK" http://floe/status | jq .admin.forks)
expect_eq "... forked once, and ran" "$((f0 + 1)) set" \
	"$f1 $(jq -r 'if .set == 1 then "set" else . end' "$T/ctl")"
get "$BIG"
expect_header "the cache's copy serves the next load" X-Floe-Cache hit
finish
