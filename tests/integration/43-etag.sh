#!/bin/bash
# floe's ETags: bound to the side that answered and the route version, so
# an If-None-Match is forwarded (translated to the upstream's tag) only to
# the side and route it was minted for. After a flip, or any route change,
# the client's tag is dropped and it gets a full 200 from the new side,
# even for a table whose metadata (and upstream ETag) both sides share.
. "$(dirname "$0")/lib.sh"
lib_init 43
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe

TBL=/v1/routed/namespaces/db/tables/bunnies

# inm NAME: the If-None-Match of the last LoadTable catalog NAME logged
# ("null" if none).
inm() {
	cat_requests "$1" | jq -r '[.requests[] | select(.method == "GET" and
		(.url | test("/tables/")))][-1].headers["if-none-match"] // "null"'
}

# upstream_etag URL: the ETag a catalog gives directly.
upstream_etag() {
	curl -s -D - -o /dev/null "$1" | awk 'tolower($1) == "etag:" {
		sub(/\r$/, ""); sub(/^[^:]*: */, ""); print }'
}

ctl_ok "route" route set db.bunnies 1
get $TBL
expect_status "load bunnies" 200
tag=$(hdr ETag)
up=$(upstream_etag "http://127.0.0.1:${CAT_PORT[warehouse]}/v1/namespaces/db/tables/bunnies")
[ -n "$tag" ] && ok "floe gives an ETag ($tag)" || bad "no ETag from floe"
[ -n "$up" ] && [ "$tag" != "$up" ] && ok "floe's ETag differs from the upstream's ($up)" ||
	bad "floe's ETag \"$tag\" vs the upstream's \"$up\""
case $tag in
\"*\") ok "floe's ETag is a quoted strong tag" ;;
*) bad "floe's ETag is not a quoted strong tag: $tag" ;;
esac

# --- the same side, the same route: 304
cat_clear warehouse
get $TBL -H "If-None-Match: $tag"
expect_status "If-None-Match with floe's tag: 304" 304
expect_header "... from the warehouse" X-Floe-Target warehouse
expect_eq "... the upstream saw its own tag" "$up" "$(inm warehouse)"
expect_header "... the 304 repeats floe's ETag" ETag "$tag"
if [ ! -s "$T/b" ]; then ok "... with no body"; else bad "a 304 with a body: $(last)"; fi
get $TBL -H "If-None-Match: \"other\", $tag"
expect_status "floe's tag in a list: 304" 304
get $TBL -H "If-None-Match: $up"
expect_status "the upstream's own tag is not floe's: 200" 200
expect_eq "... and was not forwarded" null "$(inm warehouse)"
get $TBL -H 'If-None-Match: W/"junk"'
expect_status "a foreign weak tag: 200" 200
get $TBL -H 'If-None-Match: "fl1.w.999.0000"'
expect_status "a forged floe tag for another version: 200" 200
expect_eq "... not forwarded" null "$(inm warehouse)"

# --- after a flip: the tag is not forwarded, a full answer from the lakehouse
ctl_ok "flip" wave flip 1 lakehouse
cat_clear lakehouse
get $TBL -H "If-None-Match: $tag"
expect_status "after the flip the old tag gets 200" 200
expect_header "... from the lakehouse" X-Floe-Target lakehouse
expect_jq "... with the lakehouse's table" 200 \
	'.config["floe-test.side"] == "lakehouse" and (.metadata | type == "object")'
expect_eq "... the lakehouse saw no If-None-Match" null "$(inm lakehouse)"
ltag=$(hdr ETag)
[ -n "$ltag" ] && [ "$ltag" != "$tag" ] && ok "the lakehouse answer has its own floe tag" ||
	bad "lakehouse tag \"$ltag\" vs warehouse tag \"$tag\""
get $TBL -H "If-None-Match: $ltag"
expect_status "the lakehouse tag on the lakehouse: 304" 304
expect_header "... from the lakehouse" X-Floe-Target lakehouse

# --- an older route version: not forwarded, even on the same side
ctl_ok "rollback" wave rollback 1
cat_clear warehouse
get $TBL -H "If-None-Match: $tag"
expect_status "after flip and rollback the first tag (older route) gets 200" 200
expect_header "... from the warehouse" X-Floe-Target warehouse
expect_eq "... the warehouse saw no If-None-Match" null "$(inm warehouse)"
ntag=$(hdr ETag)
get $TBL -H "If-None-Match: $ntag"
expect_status "the new warehouse tag: 304" 304
ctl_ok "ack" wave ack 1
get $TBL -H "If-None-Match: $ntag"
expect_status "after the ack (a new route version) that tag gets 200" 200

# --- a table both sides share byte for byte (db.athena): the upstream
# ETags are equal, so only floe's binding keeps the client moving
ua=$(upstream_etag "http://127.0.0.1:${CAT_PORT[warehouse]}/v1/namespaces/db/tables/athena")
ub=$(upstream_etag "http://127.0.0.1:${CAT_PORT[lakehouse]}/v1/lhp/namespaces/db/tables/athena")
expect_eq "db.athena has the same upstream ETag on both sides" "$ua" "$ub"
ctl_ok "route athena" route set db.athena 2
get /v1/routed/namespaces/db/tables/athena
atag=$(hdr ETag)
ctl_ok "flip 2" wave flip 2 lakehouse
cat_clear lakehouse
get /v1/routed/namespaces/db/tables/athena -H "If-None-Match: $atag"
expect_status "shared metadata: after the flip the tag still gets 200" 200
expect_header "... from the lakehouse" X-Floe-Target lakehouse
expect_eq "... no If-None-Match reached the lakehouse" null "$(inm lakehouse)"

# --- pinned prefixes mint and honour tags for their side
get /v1/warehouse/namespaces/db/tables/athena
ptag=$(hdr ETag)
get /v1/warehouse/namespaces/db/tables/athena -H "If-None-Match: $ptag"
expect_status "pinned warehouse: its own tag is 304" 304
get /v1/lakehouse/namespaces/db/tables/athena -H "If-None-Match: $ptag"
expect_status "pinned lakehouse: the warehouse's tag is 200" 200
finish
