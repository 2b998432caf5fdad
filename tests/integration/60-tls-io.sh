#!/bin/bash
# TLS reads and writes at their edges. floe reads records ahead of the
# socket (one read a request) and writes an answer with SSL_write as soon
# as it is made, leaving what the socket does not take to the bufferevent:
# - a request that arrives in the same segment as the client's Finished,
#   and a second pipelined behind it in its own record, are both answered
#   (200 fresh connections each for TLS 1.3 and 1.2, none hangs);
# - a 4 MB answer to a client that reads slowly (16 KiB receive buffer,
#   1448-byte MSS), pipelined with a small one, arrives whole and
#   byte-identical to the plain listener's, and the connection then serves
#   another: a record the socket did not take was sent again exactly.
# Both again with workers = 2.
. "$(dirname "$0")/lib.sh"
lib_init 60io
BIG=/v1/warehouse/namespaces/bench/tables/long_history
SMALL=/v1/warehouse/namespaces/bench/tables/t1

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-days 2 -subj "/CN=floe-test" -addext "subjectAltName=IP:127.0.0.1" \
	-keyout "$T/tls.key" -out "$T/tls.pem" 2>/dev/null
[ -s "$T/tls.pem" ] || { bad "openssl made no certificate"; finish; }

bench_upstream 4
PLAIN=$(free_port)
FLOE_EXTRA="tls_cert = $T/tls.pem
tls_key = $T/tls.key
listen_plain = 127.0.0.1:$PLAIN"
write_conf
BASE=https://127.0.0.1:$LISTEN
export CURL_CA_BUNDLE=$T/tls.pem
start_floe

for v in 1.3 1.2; do
	expect_eq "TLS $v: a request behind the Finished and one behind it, 200 connections: all answered" \
		'{"ok": 200, "hung": 0, "failed": 0}' \
		"$(timeout 120 python3 tests/integration/tlsio.py behind "$LISTEN" "$SMALL" 200 $v)"
done

curl -s -o "$T/plain" --max-time 30 "http://127.0.0.1:$PLAIN$BIG"
[ "$(stat -c %s "$T/plain")" -gt $((4 << 20)) ] &&
	ok "the plain listener's answer: $(stat -c %s "$T/plain") bytes" ||
	bad "the plain listener's answer: $(stat -c %s "$T/plain") bytes"
curl -s -o "$T/small" --max-time 30 "http://127.0.0.1:$PLAIN$SMALL"
mkdir "$T/slow"
expect_eq "a slow TLS reader: the large answer, a small one pipelined, the large again" \
	"200 200 200" \
	"$(timeout 120 python3 tests/integration/tlsio.py slow "$LISTEN" "$BIG" "$SMALL" "$T/slow")"
cmp -s "$T/plain" "$T/slow/1" && ok "... the first large answer is whole and exact" ||
	bad "... the first large answer differs: $(stat -c %s "$T/slow/1") bytes"
cmp -s "$T/small" "$T/slow/2" && ok "... the small one behind it is exact" ||
	bad "... the small answer differs: $(stat -c %s "$T/slow/2") bytes"
cmp -s "$T/plain" "$T/slow/3" && ok "... and the second large answer is whole and exact" ||
	bad "... the second large answer differs: $(stat -c %s "$T/slow/3") bytes"
S=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE$SMALL")
expect_eq "floe still serves over TLS" 200 "$S"

# The same in worker processes.
stop_floe
FLOE_EXTRA="$FLOE_EXTRA
workers = 2"
write_conf
BASE=https://127.0.0.1:$LISTEN
start_floe
expect_eq "workers = 2: a request behind the Finished and one behind it, 200 connections: all answered" \
	'{"ok": 200, "hung": 0, "failed": 0}' \
	"$(timeout 120 python3 tests/integration/tlsio.py behind "$LISTEN" "$SMALL" 200 1.3)"
rm -f "$T/slow/"*
expect_eq "workers = 2: the slow TLS reader's three answers" "200 200 200" \
	"$(timeout 120 python3 tests/integration/tlsio.py slow "$LISTEN" "$BIG" "$SMALL" "$T/slow")"
cmp -s "$T/plain" "$T/slow/1" && cmp -s "$T/small" "$T/slow/2" &&
	cmp -s "$T/plain" "$T/slow/3" && ok "... whole and exact" ||
	bad "... they differ: $(stat -c %s "$T/slow/"*)"
finish
