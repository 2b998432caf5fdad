#!/bin/bash
# Merged listings: namespaces and tables of both catalogs united,
# de-duplicated and sorted; floe's own paging (pageSize, next-page-token)
# over several pages; namespaces only one side has (listed, loaded through
# the lakehouse fallback); bad paging parameters are 400.
. "$(dirname "$0")/lib.sh"
lib_init 41
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe

# names: the table names of the last answer, comma-joined.
names() {
	jq -r '[.identifiers[] | .name] | join(",")' "$T/b"
}

# --- list namespaces
get /v1/routed/namespaces
expect_jq "list namespaces: both sides, deduplicated, sorted" 200 \
	'.namespaces == [["db"], ["lh_only"], ["wh_only"]]'
expect_header "list namespaces: answered by both" X-Floe-Target both
# Nested namespaces, one on each side, under db.
post /v1/warehouse/namespaces '{"namespace":["db","x_wh"]}'
expect_status "create db.x_wh on the warehouse (pinned)" 200
post /v1/lakehouse/namespaces '{"namespace":["db","a_lh"]}'
expect_status "create db.a_lh on the lakehouse (pinned)" 200
post /v1/lakehouse/namespaces '{"namespace":["db","x_wh"]}'
expect_status "create db.x_wh on the lakehouse too" 200
cat_clear warehouse
get "/v1/routed/namespaces?parent=db"
expect_jq "list namespaces under a parent: merged and sorted" 200 \
	'.namespaces == [["db","a_lh"], ["db","x_wh"]]'
expect_eq "the parent went upstream" true "$(cat_requests warehouse |
	jq '.requests[-1].url | test("parent=db")')"

# --- list tables: the union
get /v1/routed/namespaces/db/tables
expect_jq "list tables of db: the union, sorted" 200 \
	'[.identifiers[] | .name] == ["athena","bunnies","java_bunnies","lh_bunnies","wh_bunnies"]
	and ([.identifiers[] | .namespace] | unique) == [["db"]]'
expect_jq "list tables without paging: no next-page-token" 200 \
	'(.["next-page-token"] // null) == null'
all=$(names)

# --- paging: pageSize 2 over three pages, then pageSize 1 over five
cat_clear warehouse; cat_clear lakehouse
get "/v1/routed/namespaces/db/tables?pageSize=2"
expect_jq "page 1 of 3: two items and a token" 200 \
	'(.identifiers | length) == 2 and (.["next-page-token"] | type) == "string"'
got=$(names)
tok=$(jq -r '.["next-page-token"]' "$T/b")
for i in 2 3; do
	get "/v1/routed/namespaces/db/tables?pageSize=2&pageToken=$(jq -rn --arg t "$tok" '$t|@uri')"
	expect_status "page $i of 3" 200
	got="$got,$(names)"
	tok=$(jq -r '.["next-page-token"] // "null"' "$T/b")
done
expect_eq "the last page has no next-page-token" null "$tok"
expect_eq "three pages of 2 list everything once, in order" "$all" "$got"
bad_up=$(cat_requests warehouse; cat_requests lakehouse)
if echo "$bad_up" | jq -e -s '[.[].requests[].url | select(test("pageToken|pageSize"))] | length == 0' >/dev/null; then
	ok "floe pages itself: no pageToken/pageSize went upstream"
else
	bad "paging parameters went upstream: $(echo "$bad_up" | jq -c -s '[.[].requests[].url]')"
fi
got=
tok=
for i in $(seq 10); do
	q="pageSize=1"
	[ -n "$tok" ] && q="$q&pageToken=$(jq -rn --arg t "$tok" '$t|@uri')"
	get "/v1/routed/namespaces/db/tables?$q"
	[ "$S" = 200 ] || break
	got="$got${got:+,}$(names)"
	tok=$(jq -r '.["next-page-token"] // ""' "$T/b")
	[ -z "$tok" ] && break
done
expect_eq "pageSize 1 walks all five tables in five pages" "$all/5" \
	"$got/$i"
get "/v1/routed/namespaces/db/tables?pageToken="
expect_jq "an empty pageToken starts paging" 200 \
	'(.identifiers | length) == 5 and (.["next-page-token"] // null) == null'
get "/v1/routed/namespaces?pageSize=2"
expect_jq "list namespaces paged" 200 \
	'.namespaces == [["db"],["lh_only"]] and (.["next-page-token"] | type) == "string"'
tok=$(jq -r '.["next-page-token"]' "$T/b")
get "/v1/routed/namespaces?pageSize=2&pageToken=$(jq -rn --arg t "$tok" '$t|@uri')"
expect_jq "list namespaces page 2" 200 \
	'.namespaces == [["wh_only"]] and (.["next-page-token"] // null) == null'

# --- bad paging
get "/v1/routed/namespaces/db/tables?pageToken=not-a-floe-token"
expect_error "a pageToken floe did not issue is 400" 400 BadRequestException pageToken
get "/v1/routed/namespaces?pageToken=2"
expect_error "an upstream-style pageToken is 400 for namespaces" 400
get "/v1/routed/namespaces/db/tables?pageSize=0"
expect_error "pageSize 0 is 400" 400 BadRequestException pageSize
get "/v1/routed/namespaces/db/tables?pageSize=abc"
expect_error "pageSize abc is 400" 400 BadRequestException pageSize
get "/v1/routed/namespaces/db/tables?pageSize=-3"
expect_error "pageSize -3 is 400" 400

# --- a namespace only one side has
get /v1/routed/namespaces/lh_only/tables
expect_jq "list tables of a lakehouse-only namespace" 200 \
	'[.identifiers[] | .name] == ["new_bunnies"]'
get /v1/routed/namespaces/wh_only/tables
expect_jq "list tables of a warehouse-only namespace" 200 \
	'[.identifiers[] | .name] == ["legacy_bunnies"]'
get /v1/routed/namespaces/nowhere/tables
expect_error "list tables of a namespace neither side has: 404" 404
get /v1/routed/namespaces/lh_only
expect_jq "load a lakehouse-only namespace: the lakehouse answers" 200 \
	'.namespace == ["lh_only"]'
expect_header "... X-Floe-Target lakehouse" X-Floe-Target lakehouse
get /v1/routed/namespaces/db
expect_jq "load db: the warehouse answers" 200 \
	'.namespace == ["db"] and .properties.side == "warehouse"'
expect_header "... X-Floe-Target warehouse" X-Floe-Target warehouse
get /v1/routed/namespaces/wh_only
expect_header "load a warehouse-only namespace: warehouse" X-Floe-Target warehouse
req HEAD /v1/routed/namespaces/lh_only
expect_status "HEAD a lakehouse-only namespace: 204" 204
expect_header "... from the lakehouse" X-Floe-Target lakehouse
get /v1/routed/namespaces/nowhere
expect_error "load a namespace neither side has: 404" 404
req HEAD /v1/routed/namespaces/nowhere
expect_status "HEAD a namespace neither side has: 404" 404
get /v1/warehouse/namespaces/lh_only
expect_status "pinned warehouse: no fallback to the lakehouse" 404

# --- views are listed from both sides too
get /v1/routed/namespaces/db/views
expect_jq "list views of db: the warehouse's view" 200 \
	'[.identifiers[] | .name] == ["bunny_names"]'

# --- a listing when one side fails is an error, not half a listing
fault lakehouse '{"match":"/namespaces/db/tables","status":500,"count":1}'
get /v1/routed/namespaces/db/tables
if [ "$S" -ge 500 ] && jq -e '.error.code >= 500' "$T/b" >/dev/null 2>&1; then
	ok "a side answering 500 fails the listing ($S)"
else
	bad "a side answering 500: want 5xx ErrorModel, $(last)"
fi
cat_clear lakehouse
# A reset on a pooled connection is retried once on a fresh one (a GET is
# idempotent); a second reset is the answer.
fault lakehouse '{"match":"/namespaces/db/tables","reset":true,"count":1}'
get /v1/routed/namespaces/db/tables
expect_jq "one reset on a reused connection: retried, whole listing" 200 \
	'(.identifiers | length) == 5'
fault lakehouse '{"match":"/namespaces/db/tables","reset":true,"count":2}'
get /v1/routed/namespaces/db/tables
expect_error "a side resetting twice fails the listing with 502" 502 \
	BadGatewayException lakehouse
get /v1/routed/namespaces/db/tables
expect_jq "the next listing is whole again" 200 '(.identifiers | length) == 5'
finish
