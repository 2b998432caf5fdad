#!/bin/bash
# Routing on the data path: a table is read from the warehouse, flipped to
# the lakehouse, rolled back and acknowledged, each step seen in the answer
# (X-Floe-Target, X-Floe-Wave, the side's own table config) and in the
# catalogs' request logs; namespace rules (object entry beats a rule, the
# longest rule wins); pinned prefixes; floe's own /v1/config.
. "$(dirname "$0")/lib.sh"
lib_init 40
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe

TBL=/v1/routed/namespaces/db/tables/bunnies

# side_is DESC PATH SIDE WAVE: a LoadTable answered by SIDE for WAVE.
side_is() {
	get "$2"
	if [ "$S" = 200 ] && [ "$(hdr X-Floe-Target)" = "$3" ] &&
		[ "$(hdr X-Floe-Wave)" = "$4" ] &&
		jq -e --arg s "$3" '.config["floe-test.side"] == $s' "$T/b" \
			>/dev/null 2>&1; then
		ok "$1"
	else
		bad "$1: want 200 from $3 wave $4, got target" \
			"\"$(hdr X-Floe-Target)\" wave \"$(hdr X-Floe-Wave)\"; $(last)"
	fi
}

# asked NAME PATH-PART: how many requests catalog NAME got whose URL holds
# PATH-PART.
asked() {
	cat_requests "$1" | jq --arg p "$2" \
		'[.requests[] | select(.url | contains($p))] | length'
}

# --- the wave lifecycle, seen by a reader
side_is "unassigned table reads from the warehouse" "$TBL" warehouse none
ctl_ok "route set" route set db.bunnies 1
side_is "wave 1 in state warehouse reads from the warehouse" "$TBL" warehouse 1
cat_clear warehouse; cat_clear lakehouse
ctl_ok "flip" wave flip 1 lakehouse
side_is "after the flip: the lakehouse" "$TBL" lakehouse 1
expect_eq "the lakehouse was asked, with its prefix" 1 \
	"$(asked lakehouse /v1/lhp/namespaces/db/tables/bunnies)"
expect_eq "the warehouse was not asked after the flip" 0 \
	"$(asked warehouse /tables/bunnies)"
# The same table really differs per side: other snapshot history.
wh_rows=$(curl -s "http://127.0.0.1:${CAT_PORT[warehouse]}/v1/namespaces/db/tables/bunnies" |
	jq -c '.["metadata-location"]')
lh_rows=$(jq -c '.["metadata-location"]' "$T/b")
lh_direct=$(curl -s "http://127.0.0.1:${CAT_PORT[lakehouse]}/v1/lhp/namespaces/db/tables/bunnies" |
	jq -c '.["metadata-location"]')
expect_eq "the body is the lakehouse's table" "$lh_direct" "$lh_rows"
[ "$wh_rows" != "$lh_rows" ] && ok "the two sides hold different metadata" ||
	bad "the two sides hold different metadata: both $wh_rows"
side_is "a read of another table stays on the warehouse" \
	/v1/routed/namespaces/db/tables/athena warehouse none
ctl_ok "rollback" wave rollback 1 --reason "integration test"
side_is "after the rollback: the warehouse" "$TBL" warehouse 1
ctl_ok "wave show" --json wave show 1
expect_eq "the wave is rolled_back" rolled_back "$(jq -r .state "$T/ctl")"
ctl wave flip 1 lakehouse
expect_eq "a flip before the ack is refused (exit 1)" 1 "$RC"
side_is "the refused flip moved nothing" "$TBL" warehouse 1
ctl_ok "ack" wave ack 1
ctl_ok "wave show" --json wave show 1
expect_eq "the ack returns the wave to warehouse" warehouse \
	"$(jq -r .state "$T/ctl")"
side_is "after the ack: the warehouse" "$TBL" warehouse 1

# HEAD (table exists) follows the wave too.
ctl_ok "flip again" wave flip 1 lakehouse
req HEAD "$TBL"
expect_status "HEAD table after the flip: 204" 204
expect_header "HEAD table answered by the lakehouse" X-Floe-Target lakehouse
ctl_ok "rollback" wave rollback 1
ctl_ok "ack" wave ack 1

# --- rules: db.* to wave 2; db.bunnies stays wave 1 (object beats rule)
ctl_ok "rule db.*" route set 'db.*' 2
ctl_ok "flip 2" wave flip 2 lakehouse
side_is "db.athena follows the rule db.* (wave 2)" \
	/v1/routed/namespaces/db/tables/athena lakehouse 2
side_is "db.bunnies: its own entry (wave 1) beats the rule" "$TBL" warehouse 1
side_is "a table of another namespace is not in the rule" \
	/v1/routed/namespaces/wh_only/tables/legacy_bunnies warehouse none
# Longest rule wins: db.sub.* (wave 3, warehouse) inside db.* (wave 2).
ctl_ok "rule db.sub.*" route set 'db.sub.*' 3
get /v1/routed/namespaces/db%1Fsub/tables/anything
expect_header "db.sub.anything: the longer rule db.sub.* (wave 3)" \
	X-Floe-Wave 3
expect_header "db.sub.anything: wave 3 reads the warehouse" \
	X-Floe-Target warehouse
get /v1/routed/namespaces/db%1Fother/tables/anything
expect_header "db.other.anything: the rule db.* (wave 2)" X-Floe-Wave 2
expect_header "db.other.anything: wave 2 reads the lakehouse" \
	X-Floe-Target lakehouse
ctl_ok "flip 3" wave flip 3 lakehouse
ctl_ok "rollback 2" wave rollback 2
get /v1/routed/namespaces/db%1Fsub/tables/anything
expect_header "db.sub.anything follows wave 3 to the lakehouse" \
	X-Floe-Target lakehouse
side_is "db.athena follows wave 2 back" \
	/v1/routed/namespaces/db/tables/athena warehouse 2
ctl_ok "rm the rule" route rm 'db.*'
side_is "without the rule db.athena is unassigned" \
	/v1/routed/namespaces/db/tables/athena warehouse none

# --- pinned prefixes
ctl_ok "ack 2" wave ack 2
ctl_ok "route athena" route set db.athena 2
ctl_ok "flip 2" wave flip 2 lakehouse
side_is "routed db.athena: lakehouse" /v1/routed/namespaces/db/tables/athena \
	lakehouse 2
get /v1/warehouse/namespaces/db/tables/athena
expect_status "pinned warehouse: 200" 200
expect_header "pinned warehouse: the warehouse answers" X-Floe-Target warehouse
expect_jq "pinned warehouse: its table" 200 \
	'.config["floe-test.side"] == "warehouse"'
get /v1/lakehouse/namespaces/wh_only/tables/legacy_bunnies
expect_header "pinned lakehouse: the lakehouse answers an unassigned table" \
	X-Floe-Target lakehouse
expect_error "pinned lakehouse: a warehouse-only table is 404 there" 404
get /v1/lakehouse/namespaces/lh_only/tables/new_bunnies
expect_jq "pinned lakehouse: a lakehouse-only table" 200 \
	'.config["floe-test.side"] == "lakehouse"'
get /v1/routed/namespaces/lh_only/tables/new_bunnies
expect_header "routed: the unassigned lakehouse-only table asks the warehouse" \
	X-Floe-Target warehouse
expect_status "routed: ... which does not have it" 404
cat_clear lakehouse
get /v1/lakehouse/namespaces/lh_only/tables/new_bunnies
expect_eq "pinned lakehouse: the path arrived with the lakehouse prefix" 1 \
	"$(asked lakehouse /v1/lhp/namespaces/lh_only/tables/new_bunnies)"
get /v1/nosuch/namespaces/db/tables/athena
expect_error "an unknown prefix is 404" 404 NoSuchWarehouseException nosuch

# --- floe's /v1/config
get /v1/config
expect_jq "config without warehouse: prefix routed" 200 \
	'.overrides.prefix == "routed" and (.defaults | type == "object")'
get "/v1/config?warehouse=warehouse"
expect_jq "config warehouse=warehouse: prefix warehouse" 200 \
	'.overrides.prefix == "warehouse"'
get "/v1/config?warehouse=lakehouse"
expect_jq "config warehouse=lakehouse: prefix lakehouse" 200 \
	'.overrides.prefix == "lakehouse"'
get "/v1/config?warehouse=analytics"
expect_jq "config warehouse=anything else: prefix routed" 200 \
	'.overrides.prefix == "routed"'
get "/v1/config?warehouse=lakehouses"
expect_jq "config warehouse=lakehouses (not exact): routed" 200 \
	'.overrides.prefix == "routed"'
expect_jq "config lists the endpoints floe serves" 200 '
	(.endpoints | index("GET /v1/{prefix}/namespaces/{namespace}/tables/{table}") != null)
	and (.endpoints | index("POST /v1/{prefix}/tables/rename") != null)
	and (.endpoints | index("GET /v1/{prefix}/namespaces") != null)
	and (.endpoints | all(test("^(GET|HEAD|POST|PUT|DELETE) /v1/")))'
expect_header "config is JSON" Content-Type application/json
finish
