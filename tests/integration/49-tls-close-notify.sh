#!/bin/bash
# floe ends its connections to an https catalog with a close_notify: when
# one has idled for pool_idle_timeout and when floe stops. A catalog on
# OpenSSL 3 or a JVM logs a connection that ends without one as truncated,
# and OpenSSL will not resume its session. The catalog sits behind a TLS
# front (tlsclose.py) that says how each connection ended.
. "$(dirname "$0")/lib.sh"
lib_init 49c

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
	-addext "subjectAltName=DNS:localhost" -keyout "$T/cat.key" \
	-out "$T/cat.pem" 2>/dev/null
[ -s "$T/cat.pem" ] || { bad "openssl made no certificate"; finish; }

catalog warehouse
catalog lakehouse --prefix lhp
python3 tests/integration/tlsclose.py "$T/cat.pem" "$T/cat.key" \
	"${CAT_PORT[lakehouse]}" "$T/ends.jsonl" >"$T/front.out" 2>&1 &
pids+=($!)
for i in $(seq 100); do
	FRONT=$(awk '/^ready /{print $2}' "$T/front.out")
	[ -n "$FRONT" ] && break
	sleep 0.05
done
[ -n "$FRONT" ] || { bad "the TLS front did not start: $(cat "$T/front.out")"; finish; }
LH_URI=https://localhost:$FRONT
LH_EXTRA="ca_file = $T/cat.pem
pool_idle_timeout = 1s"
write_conf
start_floe

# The data path's connections, by the first request each carried (the
# control plane's carry GET /v1/config).
ends() {
	jq -sc '[.[] | select(.request // "" | contains("/tables/"))]' \
		"$T/ends.jsonl" 2>/dev/null || echo '[]'
}

get /v1/lakehouse/namespaces/db/tables/bunnies
expect_status "a load from the https catalog" 200
sleep 1.5
e=$(ends)
if jq -e 'length == 1 and .[0].end == "close_notify"' <<<"$e" >/dev/null; then
	ok "a connection idle for pool_idle_timeout ends with a close_notify"
else
	bad "want one data-path connection ended by a close_notify: $e"
fi

# The next connection resumes, and stopping floe closes it cleanly too.
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_status "a load on a new connection" 200
stop_floe
for i in $(seq 40); do
	e=$(ends)
	[ "$(jq length <<<"$e")" = 2 ] && break
	sleep 0.05
done
if jq -e 'length == 2 and .[1].end == "close_notify" and .[1].resumed' \
	<<<"$e" >/dev/null; then
	ok "floe's stop ends its pooled connection with a close_notify"
else
	bad "want a second connection, resumed, ended by a close_notify: $e"
fi
finish
