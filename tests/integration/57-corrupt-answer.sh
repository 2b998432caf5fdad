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
finish
