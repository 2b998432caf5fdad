#!/bin/bash
# Upstream faults: a catalog that refuses connections, answers too late,
# sends garbage or resets is answered 502/504 with an ErrorModel naming the
# side; a commit that fails in flight is 502 CommitStateUnknownException;
# one side failing leaves the other serving. floe starts and serves its
# admin socket while a catalog is down (/readyz 503, requests for that side
# 503), and becomes ready once the catalog comes up.
. "$(dirname "$0")/lib.sh"
lib_init 44
catalog warehouse
catalog lakehouse --prefix lhp
WH_EXTRA=$'timeout = 1s\npool_idle_timeout = 2s'
LH_EXTRA="timeout = 1s"
write_conf
start_floe

WT=/v1/routed/namespaces/db/tables/athena
LT=/v1/routed/namespaces/db/tables/bunnies
ctl_ok "route" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse
get $LT
expect_header "bunnies reads from the lakehouse" X-Floe-Target lakehouse

# --- a pooled connection reused late in its idle time (pool_idle_timeout
# = 2s): the idle deadline must not cut the request short, and an idle
# connection is still closed once its time is up
COMMIT='{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}'
get $WT
sleep 1.5
cat_clear warehouse
fault warehouse '{"match":"/tables/athena","delay_ms":800,"count":1}'
post $WT "$COMMIT"
expect_status "a commit on a connection idle 1.5 s of 2 s, answered in 0.8 s" 200
expect_eq "... sent to the warehouse once" 1 \
	"$(cat_requests warehouse | jq '[.requests[] | select(.method == "POST")] | length')"
sleep 2.8
ctl --json status
expect_eq "the idle connection is closed after pool_idle_timeout" 0 \
	"$(jq '.catalogs.warehouse.connections' "$T/ctl")"
cat_clear warehouse

# --- timeouts
fault warehouse '{"match":"/tables/athena","delay_ms":3000,"count":1}'
start=$(date +%s%N)
get $WT
ms=$((($(date +%s%N) - start) / 1000000))
expect_error "a catalog slower than timeout = 1s: 504" 504 \
	GatewayTimeoutException warehouse
expect_jq "... naming the catalog's uri" 504 \
	".error.message | contains(\"127.0.0.1:${CAT_PORT[warehouse]}\")"
if [ "$ms" -ge 900 ] && [ "$ms" -lt 2800 ]; then
	ok "... after about the timeout (${ms} ms)"
else
	bad "the 504 came after ${ms} ms, want about 1000"
fi
get $WT
expect_status "the next read of the same table is fine" 200
cat_clear warehouse
# A request's deadline is its own: sent 0.6 s after a quick answer (whose
# timer may still be pending in the reused transfer), a slow one is cut
# about 1 s after it was sent, not when the quick one's second is up.
sleep 0.6
fault warehouse '{"match":"/tables/athena","delay_ms":3000,"count":1}'
start=$(date +%s%N)
get $WT
ms=$((($(date +%s%N) - start) / 1000000))
expect_error "a slow answer right after a quick one: 504" 504 \
	GatewayTimeoutException warehouse
if [ "$ms" -ge 900 ] && [ "$ms" -lt 2800 ]; then
	ok "... after about its own timeout (${ms} ms)"
else
	bad "the 504 came after ${ms} ms, want about 1000"
fi
cat_clear warehouse

# --- garbage, resets, 5xx
fault warehouse '{"match":"/tables/athena","garbage":true,"count":1}'
get $WT
expect_error "garbage from the catalog: 502" 502 BadGatewayException warehouse
cat_clear warehouse
fault warehouse '{"match":"/tables/athena","reset":true,"count":2}'
get $WT
expect_error "a reset (also on the one retry): 502" 502 BadGatewayException \
	warehouse
cat_clear warehouse
# A GET whose kept connection resets before the answer is sent once
# more, on a new connection, byte for byte as the first time.
get $WT
cat_clear warehouse
fault warehouse '{"match":"/tables/athena","reset":true,"count":1}'
get $WT
expect_status "a GET reset on a kept connection is sent again: 200" 200
expect_eq "... the catalog saw it twice, on two connections, the same" \
	"2 2 1" "$(cat_requests warehouse | jq -r '[.requests[] |
		select(.url | endswith("/tables/athena"))] | "\(length) \(
		[.[].conn] | unique | length) \([.[] | [.method, .url,
		(.headers | del(.connection))]] | unique | length)"')"
cat_clear warehouse
fault warehouse '{"match":"/tables/athena","status":503,"count":1}'
get $WT
expect_error "the catalog's own 503 passes through" 503
expect_header "... with its Retry-After" Retry-After 1
expect_header "... and X-Floe-Target" X-Floe-Target warehouse
get $WT
expect_status "after the faults the warehouse serves again" 200
cat_clear warehouse

# --- commits that fail in flight
COMMIT='{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}'
fault warehouse '{"match":"/tables/athena","reset":true,"count":1}'
post $WT "$COMMIT"
expect_error "a commit whose connection resets: 502 CommitStateUnknown" 502 \
	CommitStateUnknownException warehouse
expect_eq "... and was sent once (never retried)" 1 "$(cat_requests warehouse |
	jq '[.requests[] | select(.method == "POST")] | length')"
cat_clear warehouse
fault warehouse '{"match":"/tables/athena","delay_ms":3000,"count":1}'
post $WT "$COMMIT"
expect_error "a commit that times out: 504 CommitStateUnknown" 504 \
	CommitStateUnknownException
cat_clear warehouse
fault warehouse '{"match":"/tables/athena","garbage":true,"count":1}'
post $WT "$COMMIT"
expect_error "a commit answered with garbage: 502 CommitStateUnknown" 502 \
	CommitStateUnknownException
cat_clear warehouse
fault warehouse '{"match":"/transactions/commit","reset":true,"count":1}'
post /v1/routed/transactions/commit \
	'{"table-changes":[{"identifier":{"namespace":["db"],"name":"athena"},"requirements":[],"updates":[]}]}'
expect_error "a transaction whose connection resets: 502 CommitStateUnknown" \
	502 CommitStateUnknownException
cat_clear warehouse
fault warehouse '{"match":"/namespaces/db/tables","reset":true,"count":1}'
post /v1/routed/namespaces/db/tables \
	'{"name":"t44","schema":{"type":"struct","fields":[]}}'
expect_error "a create whose connection resets: 502" 502
get $WT
expect_status "the warehouse serves after the failed commits" 200

# --- one side down: the other keeps serving
stop_catalog lakehouse
get $LT
expect_error "the lakehouse down (connection refused): 502" 502 \
	BadGatewayException lakehouse
expect_jq "... naming its uri" 502 \
	".error.message | contains(\"127.0.0.1:${CAT_PORT[lakehouse]}\")"
get $WT
expect_status "meanwhile warehouse reads work" 200
expect_header "... from the warehouse" X-Floe-Target warehouse
post $WT "$COMMIT"
expect_status "meanwhile warehouse commits work" 200
get /v1/routed/namespaces/db
expect_status "meanwhile namespace reads (warehouse) work" 200
get /v1/routed/namespaces
expect_error "a listing needs both sides: 502" 502 BadGatewayException lakehouse
ctl_ok "rollback while the lakehouse is down" wave rollback 1
get $LT
expect_header "rolled back: bunnies from the warehouse again" X-Floe-Target warehouse
expect_status "... 200" 200
ctl_ok "floectl status while a side is down" status
ctl_ok "ack" wave ack 1
ctl_ok "flip again while the lakehouse is down" wave flip 1 lakehouse

# --- floe starting while the lakehouse is down
stop_floe
LH_PORT=$(free_port)
LH_URI=http://127.0.0.1:$LH_PORT write_conf
start_floe noready
ctl_ok "the admin socket serves while the lakehouse is down" status
get /readyz
expect_jq "/readyz is 503, naming the missing config" 503 \
	'.ready == false and .lakehouse_config == false and .warehouse_config == true'
get $WT
expect_status "warehouse reads work before the lakehouse is known" 200
get $LT
expect_error "a lakehouse read before its config is known: 503" 503 \
	ServiceUnavailableException lakehouse
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_error "a pinned lakehouse read: 503" 503 ServiceUnavailableException lakehouse
get /v1/routed/namespaces/db/tables
expect_error "a listing (needs both): 503" 503 ServiceUnavailableException
CAT_FIXED_PORT=$LH_PORT catalog lakehouse --prefix lhp
if wait_ready 200 || wait_ready 200 || wait_ready 200; then
	ok "/readyz turns 200 once the lakehouse is up"
else
	bad "/readyz still $(curl -s "$BASE/readyz") 30 s after the lakehouse came up"
fi
get $LT
expect_status "the lakehouse read works now" 200
expect_header "... from the lakehouse" X-Floe-Target lakehouse
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_jq "the pinned lakehouse read works now" 200 \
	'.config["floe-test.side"] == "lakehouse"'
get /v1/routed/namespaces/db/tables
expect_status "listings work now" 200

# --- a catalog restarted under a running floe: its pooled connections
# are gone; the next reads and commits open new ones
for i in 1 2 3; do get $WT; done
WH_PORT=${CAT_PORT[warehouse]}
stop_catalog warehouse
CAT_FIXED_PORT=$WH_PORT catalog warehouse
get $WT
expect_status "a read after the warehouse restarted" 200
post $WT "$COMMIT"
expect_status "a commit after the warehouse restarted" 200
stop_catalog warehouse
CAT_FIXED_PORT=$WH_PORT catalog warehouse
post $WT "$COMMIT"
expect_status "a commit first thing after another restart" 200
finish
