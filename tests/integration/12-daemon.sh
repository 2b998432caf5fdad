#!/bin/bash
# The daemon's life: the access log (and switching it off), SIGHUP applying
# a new catalog token and keeping the old config on a bad file, SIGTERM
# letting a request in flight finish before floe exits 0.
. "$(dirname "$0")/lib.sh"
lib_init 12
catalog warehouse
catalog lakehouse
echo "token-one" >"$T/wh.token"
WH_EXTRA="token_file = $T/wh.token"
write_conf
start_floe

# Access log: one line per request, flushed within a second or so.
get /v1/routed/namespaces/db/tables/bunnies
get /v1/routed/namespaces/db/tables/nope
get "/v1/routed/namespaces/db/tables/bunnies?snapshots=all"
for i in $(seq 40); do
	[ "$(grep -c ' /v1/routed/namespaces/db/tables/' "$T/access.log" 2>/dev/null)" -ge 3 ] && break
	sleep 0.05
done
line=$(grep ' /v1/routed/namespaces/db/tables/bunnies ' "$T/access.log" | head -1)
if [[ $line =~ ^[0-9T:.-]+Z\ 127\.0\.0\.1\ GET\ /v1/routed/namespaces/db/tables/bunnies\ target=warehouse\ wave=none\ status=200\ upstream_ms=[0-9]+\.[0-9]{3}\ cache=(miss|hit|-)$ ]]; then
	ok "access log line: time, peer, method, path, target, wave, status, upstream ms"
else
	bad "access log line: \"$line\""
fi
[ "$(grep -c ' GET /v1/routed/namespaces/db/tables/bunnies target=warehouse wave=none status=200 ' "$T/access.log")" = 2 ] &&
	! grep -q 'snapshots' "$T/access.log" &&
	ok "the path is logged without its query" ||
	bad "the query in the access log: $(cat "$T/access.log")"
grep -q 'tables/nope target=warehouse wave=none status=404 ' "$T/access.log" &&
	ok "the catalog's 404 is logged with its status" || bad "no 404 line: $(cat "$T/access.log")"
n=$(cat_requests warehouse | jq -r '[.requests[] | select(.url | contains("tables/bunnies")) | .headers.authorization] | last')
expect_eq "the warehouse token replaces the client's" "Bearer token-one" "$n"

# SIGHUP: a new token applies to the next request.
echo "token-two" >"$T/wh.token"
kill -HUP "$FLOE_PID"
sleep 0.3
get /v1/routed/namespaces/db/tables/bunnies -H 'Authorization: Bearer client'
n=$(cat_requests warehouse | jq -r '[.requests[] | select(.url | contains("tables/bunnies")) | .headers.authorization] | last')
expect_eq "after SIGHUP the new token is sent" "Bearer token-two" "$n"
grep -q "reload: configuration .* applied" "$T/floe.log" && ok "reload logged" ||
	bad "no reload line in floe.log"

# A broken file on SIGHUP: floe says why and keeps running as it was.
cp "$T/floe.conf" "$T/floe.conf.good"
echo "bogus_key = 1" >>"$T/floe.conf"
kill -HUP "$FLOE_PID"
sleep 0.3
grep -q "reload: .*floe.conf:[0-9]*: .*bogus_key.*keeping the running configuration" "$T/floe.log" &&
	ok "a bad reload names the line and keeps the running config" ||
	bad "bad reload: $(tail -2 "$T/floe.log")"
get /v1/routed/namespaces/db/tables/bunnies
expect_status "still serving after the bad reload" 200
cp "$T/floe.conf.good" "$T/floe.conf"

# Expect: 100-continue gets its "go on" at once (curl waits a second
# otherwise); the body then reaches the catalog.
head -c 2000000 /dev/zero | tr '\0' ' ' >"$T/big"
t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 10 \
	-H 'Content-Type: application/json' -H 'Expect: 100-continue' \
	--data-binary @"$T/big" "$BASE/v1/routed/namespaces/db/tables/bunnies")
s=${t%% *}
secs=${t#* }
[ "$s" != 000 ] && [ "$s" != 408 ] && awk -v t="$secs" 'BEGIN{exit !(t < 0.9)}' &&
	ok "Expect: 100-continue answered at once (status $s in ${secs}s)" ||
	bad "Expect: 100-continue: status $s after ${secs}s"

# SIGTERM during a slow request: it finishes, then floe exits 0.
fault warehouse '{"match":"tables/bunnies","delay_ms":1500,"count":1}'
curl -s -o "$T/slow" -w '%{http_code}' --max-time 10 \
	"$BASE/v1/routed/namespaces/db/tables/bunnies" >"$T/slow.status" &
cpid=$!
sleep 0.5
kill -TERM "$FLOE_PID"
sleep 0.2
s=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$BASE/healthz")
expect_eq "no new connections while draining" 000 "$s"
wait "$cpid"
expect_eq "the request in flight got its answer" 200 "$(cat "$T/slow.status")"
wait "$FLOE_PID"
rc=$?
FLOE_PID=
expect_eq "floe exited 0 after draining" 0 "$rc"
[ ! -S "$SOCK" ] && ok "the admin socket is removed" || bad "admin socket left behind"

# access_log = off: no file.
rm -f "$T/access.log"
sed -i 's|^access_log .*|access_log = off|' "$T/floe.conf"
start_floe
get /v1/routed/namespaces/db/tables/bunnies
sleep 1.2
[ ! -e "$T/access.log" ] && ok "access_log = off writes nothing" || bad "access log written while off"
finish
