#!/bin/bash
# An https catalog behind a TLS front (tlsclose.py) that says how each
# connection ended, and can read slowly, speak TLS 1.2 at most, or end a
# connection right behind an answer.
# 1. floe ends its connections with a close_notify: when one has idled for
#    pool_idle_timeout and when floe stops. A catalog on OpenSSL 3 or a
#    JVM logs a connection that ends without one as truncated.
# 2. A catalog that reads slowly: a 6 MB commit on a pooled connection,
#    written with SSL_write at once, fills floe's socket; the record
#    SSL_write could not hand over and the rest wait their turn, and the
#    body arrives whole and in order (its SHA-256, in the catalog's log).
# 3. A catalog that speaks TLS 1.2 at most: its sessions resume too.
# 4. A catalog that ends a connection right after an answer: its last
#    bytes and a close_notify come in one segment, and floe must not pool
#    the connection: a commit pipelined behind a load (never retried: its
#    state would be unknown), which floe starts as the load's answer
#    ends, goes on a new one.
. "$(dirname "$0")/lib.sh"
lib_init 49f

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
	-addext "subjectAltName=DNS:localhost" -keyout "$T/cat.key" \
	-out "$T/cat.pem" 2>/dev/null
[ -s "$T/cat.pem" ] || { bad "openssl made no certificate"; finish; }

catalog warehouse
catalog lakehouse --prefix lhp
tls_front python3 tests/integration/tlsclose.py "$T/cat.pem" "$T/cat.key" \
	"${CAT_PORT[lakehouse]}" "$T/ends.jsonl"
LH_URI=https://localhost:$FRONT
LH_EXTRA="ca_file = $T/cat.pem
pool_idle_timeout = 1s"
write_conf
start_floe

# The data path's connections that ended, by the first request each
# carried (the control plane's carry GET /v1/config); with N, once N
# have ended (the front logs a connection when floe's end reaches it),
# or after 2 s.
ends() {
	local i e
	for i in $(seq 40); do
		e=$(jq -sc '[.[] | select(.request // "" | contains("/tables/"))]' \
			"$T/ends.jsonl" 2>/dev/null || echo '[]')
		[ -z "${1:-}" ] || [ "$(jq length <<<"$e")" = "$1" ] && break
		sleep 0.05
	done
	echo "$e"
}

get /v1/lakehouse/namespaces/db/tables/bunnies
expect_status "a load from the https catalog" 200
sleep 1
e=$(ends 1)
if jq -e 'length == 1 and .[0].end == "close_notify"' <<<"$e" >/dev/null; then
	ok "a connection idle for pool_idle_timeout ends with a close_notify"
else
	bad "want one data-path connection ended by a close_notify: $e"
fi

# The next connection resumes, and stopping floe closes it cleanly too.
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_status "a load on a new connection" 200
stop_floe
e=$(ends 2)
if jq -e 'length == 2 and .[1].end == "close_notify" and .[1].resumed' \
	<<<"$e" >/dev/null; then
	ok "floe's stop ends its pooled connection with a close_notify"
else
	bad "want a second connection, resumed, ended by a close_notify: $e"
fi

# --- 2. a catalog that reads slowly ----------------------------------------
kill -USR1 "$FRONT_PID"
sleep 0.1
printf '{"requirements":[],"updates":[],"floe-test-pad":"%s"}' \
	"$(head -c 4718592 /dev/urandom | base64 -w0)" >"$T/commit.json"
want=$(sha256sum <"$T/commit.json" | cut -d' ' -f1)
start_floe
# The commit follows at once: the connection idles no longer than
# pool_idle_timeout.
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_status "a load opens a slow connection" 200
req POST /v1/lakehouse/namespaces/db/tables/bunnies \
	-H 'Content-Type: application/json' --data-binary @"$T/commit.json"
expect_status "a 6 MB commit to a catalog that reads slowly" 200
got=$(curl -s --max-time 5 "http://127.0.0.1:${CAT_PORT[lakehouse]}/_test/requests" |
	jq -r '[.requests[] | select(.url | contains("/tables/bunnies"))] |
		.[-2:] | if .[0].conn == .[1].conn then .[1].body_sha256
			else "the commit was not on the load'"'"'s connection" end')
expect_eq "... arrived whole and in order (SHA-256), on the pooled connection" \
	"$want" "$got"
stop_floe
e=$(ends 3)
if jq -e '.[2].slow' <<<"$e" >/dev/null; then
	ok "... a slow one"
else
	bad "want the third connection to be slow: $e"
fi

# --- 3. a TLS 1.2 catalog -------------------------------------------------
mv "$T/ends.jsonl" "$T/ends-1.3.jsonl"
tls_front python3 tests/integration/tlsclose.py "$T/cat.pem" "$T/cat.key" \
	"${CAT_PORT[lakehouse]}" "$T/ends.jsonl" 1.2
LH_URI=https://localhost:$FRONT
write_conf
start_floe
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_status "a load from a TLS 1.2 catalog" 200
e=$(ends 1) # floe's idle close
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_status "a load on a new connection" 200
stop_floe
e=$(ends 2)
if jq -e 'map([.version, .resumed]) ==
	[["TLSv1.2", false], ["TLSv1.2", true]]' <<<"$e" >/dev/null; then
	ok "... which resumed the catalog's TLS 1.2 session"
else
	bad "want two TLS 1.2 connections, the second resumed: $e"
fi

# --- 4. a close_notify behind an answer ------------------------------------
mv "$T/ends.jsonl" "$T/ends-1.2.jsonl"
tls_front python3 tests/integration/tlsclose.py "$T/cat.pem" "$T/cat.key" \
	"${CAT_PORT[lakehouse]}" "$T/ends.jsonl"
kill -USR2 "$FRONT_PID"
sleep 0.1
LH_URI=https://localhost:$FRONT
write_conf
start_floe
CRLF=$'\r\n'
body='{"requirements":[],"updates":[]}'
raw "GET /v1/lakehouse/namespaces/db/tables/bunnies HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${CRLF}POST /v1/lakehouse/namespaces/db/tables/bunnies HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}Content-Type: application/json${CRLF}Content-Length: ${#body}${CRLF}Connection: close${CRLF}${CRLF}$body" 10
expect_eq "a load, the catalog's close_notify, and a commit pipelined behind" \
	"200 200" "$(raw_statuses)"
r=$(curl -s --max-time 5 "http://127.0.0.1:${CAT_PORT[lakehouse]}/_test/requests" |
	jq -c '[.requests[] | select(.url | contains("/tables/bunnies"))] |
		.[-2:] | {load: .[0].method, commit: .[1].method,
			apart: (.[0].conn != .[1].conn)}')
expect_eq "... on a new connection" \
	'{"load":"GET","commit":"POST","apart":true}' "$r"
e=$(ends 2)
if jq -e 'map(.end) == ["bye", "bye"]' <<<"$e" >/dev/null; then
	ok "... both connections ended by the catalog after their answer"
else
	bad "want two connections the catalog ended: $e"
fi
finish
