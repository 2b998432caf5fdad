#!/bin/bash
# Integration 57: a catalog's 200 that is not what it claims. An answer
# floe must merge or rewrite (a LoadTable, a listing) that says it is
# JSON and does not parse is a 502 naming the catalog, never passed on
# as a 200, and it counts as that catalog's error for the error trigger:
# a corrupt lakehouse rolls its wave back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 57
catalog warehouse
catalog lakehouse --prefix lhp
POLICY_EXTRA="error_window = 20s
error_min_requests = 5
error_ratio = 2
error_floor = 1%"
write_conf
start_floe

A=/v1/routed/namespaces/db/tables/athena
BAD='{this is not json <html>'$'\xff\xfe'' ...'
ctl_ok "route" route set db.athena 1
ctl_ok "flip" wave flip 1 lakehouse
get $A
expect_header "a good load is the lakehouse's" X-Floe-Target lakehouse

fault lakehouse "$(jq -cn --arg b "$BAD" '{match: "athena", body: $b, count: 1}')"
get $A
expect_error "a LoadTable 200 that is not JSON: 502" 502 BadGatewayException \
	"lakehouse"
if grep -aq 'this is not json' "$T/b"; then
	bad "the corrupt body was passed on: $(head -c 200 "$T/b")"
else
	ok "nothing of the corrupt body is passed on"
fi

# A merged listing: one side's page that is not JSON fails the listing.
fault lakehouse "$(jq -cn --arg b "$BAD" '{match: "/namespaces/db/tables", body: $b, count: 1}')"
get /v1/routed/namespaces/db/tables
expect_error "a listing page that is not JSON: 502" 502 BadGatewayException \
	"lakehouse"

# Counted for the error trigger: 3 more corrupt loads make 4 errors in 5
# reads of wave 1 on the lakehouse (error_min_requests), over 2 x 1%:
# rolled back.
fault lakehouse "$(jq -cn --arg b "$BAD" '{match: "athena", body: $b, count: 3}')"
for i in 1 2 3; do get $A; done
expect_eq "the 4th corrupt answer was a 502 too" 502 "$S"
expect_eq "a corrupt lakehouse rolls its wave back" rolled_back "$(wave_state 1)"
get $A
expect_header "the next read: the warehouse" X-Floe-Target warehouse
line=$(tail -n 1 "$T/rollback.log")
[ -n "$line" ] && echo "$line" | jq -e '.trigger == "errors" and .wave == 1' >/dev/null &&
	ok "the rollback log names the error trigger" || bad "line: $line"

# A large answer (now the warehouse's), read in many pieces, is passed
# on as it arrives, chunked, and checked as it goes: its head is sent
# before a wrong byte 2 MB in is read, so the answer is cut short there
# (no last chunk: the client sees a transfer that did not end, never a
# whole 200), nothing of the read holding the wrong byte is passed on,
# and floe counts a 502 from the warehouse (access log, failures, the
# error trigger). A large answer that is JSON passes, whole.
python3 - "$T" <<'PY' || bad "large bodies"
import json, sys
pad = "x" * (2 << 20) + "\\u00e9"
good = '{"metadata-location":"s3://b/m.json","metadata":{"format-version":2,' \
    '"properties":{"pad":"' + pad + '","n":-1.5e3}},"config":{}}'
bad = good.replace('"n":-1.5e3', '"n":01')
open(sys.argv[1] + "/good.json", "w").write(json.dumps({"match": "athena", "body": good, "count": 1}))
open(sys.argv[1] + "/bad.json", "w").write(json.dumps({"match": "athena", "body": bad, "count": 1}))
b = bad.encode("latin1")
open(sys.argv[1] + "/bad.at", "w").write("at byte %d of %d" % (b.index(b'"n":01') + 5, len(b)))
PY
curl -s --max-time 5 -o /dev/null -H 'Content-Type: application/json' \
	--data-binary @"$T/bad.json" "http://127.0.0.1:${CAT_PORT[warehouse]}/_test/fault"
fails0=$(curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
	jq '.catalogs.warehouse.failures')
: >"$T/b"
curl -s -o "$T/b" -D "$T/h" --max-time 20 "$BASE$A"
rc=$?
[ "$rc" = 18 ] &&
	ok "a 2 MB LoadTable with a wrong byte near its end is cut short (curl: 18)" ||
	bad "a 2 MB LoadTable with a wrong byte near its end: curl exit $rc"
expect_eq "... sent chunked" chunked "$(hdr Transfer-Encoding)"
grep -aq '"n":01' "$T/b" && bad "... the wrong byte was passed on" ||
	ok "... nothing from the read that holds the wrong byte ($(stat -c %s "$T/b") bytes)"
jq -e . "$T/b" >/dev/null 2>&1 && bad "... what arrived parses as JSON" ||
	ok "... what arrived is not a whole JSON text"
expect_eq "... a warehouse failure" $((fails0 + 1)) \
	"$(curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
		jq '.catalogs.warehouse.failures')"
grep -q "cut short: answered 2xx with a body that is not JSON (at byte $(sed 's/at byte \([0-9]*\).*/\1/' "$T/bad.at"))" \
	"$T/floe.log" && ok "... logged with the offset of the wrong byte" ||
	bad "... no log line: $(grep 'cut short' "$T/floe.log")"
curl -s --max-time 5 -o /dev/null -H 'Content-Type: application/json' \
	--data-binary @"$T/good.json" "http://127.0.0.1:${CAT_PORT[warehouse]}/_test/fault"
get $A
expect_status "a 2 MB LoadTable 200 that is JSON passes" 200
expect_eq "... chunked" chunked "$(hdr Transfer-Encoding)"
jq -e '.metadata.properties.n == -1500' "$T/b" >/dev/null &&
	ok "... whole" || bad "... not whole: $(head -c 200 "$T/b")"
# A large answer floe passes on unchanged (a 500 of 2 MB) streams too,
# with the catalog's own Content-Length.
python3 - "$T" <<'PY' || bad "large error"
import json, sys
body = '{"error":{"message":"' + "y" * (2 << 20) + '","type":"E","code":500}}'
open(sys.argv[1] + "/err.json", "w").write(json.dumps({"match": "athena", "status": 500, "body": body, "count": 1}))
open(sys.argv[1] + "/err.body", "w").write(body)
PY
curl -s --max-time 5 -o /dev/null -H 'Content-Type: application/json' \
	--data-binary @"$T/err.json" "http://127.0.0.1:${CAT_PORT[warehouse]}/_test/fault"
get $A
expect_status "a 2 MB 500 from the catalog is passed on" 500
expect_eq "... with its Content-Length" "$(stat -c %s "$T/err.body")" \
	"$(hdr Content-Length)"
expect_eq "... not chunked" "" "$(hdr Transfer-Encoding)"
cmp -s "$T/b" "$T/err.body" && ok "... byte for byte" || bad "... other bytes"
sleep 1.2 # the access log is written on the tick
grep -q 'tables/athena target=warehouse wave=1 status=502' "$T/access.log" &&
	ok "the cut answer is a 502 in the access log" ||
	bad "access log: $(grep athena "$T/access.log" | tail -n 3)"
finish
