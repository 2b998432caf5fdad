#!/bin/bash
# Writes go to the authoritative side: the warehouse until the wave is
# frozen, even while reads come from the lakehouse, and the lakehouse
# after (the warehouse copy then refuses writes with 403). Create, commit,
# drop and register, routed by the name in the body or the path; renames and
# multi-table transactions whose tables are served by different sides are
# refused with 400 naming the tables and sides; a rename within one side
# passes.
. "$(dirname "$0")/lib.sh"
lib_init 42
catalog warehouse
catalog lakehouse --prefix lhp
POLICY_EXTRA="decommission_min_clean = 0"
write_conf
start_floe

SCHEMA='{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"}]}'
NS=/v1/routed/namespaces/db

# went NAME METHOD PATH-PART: how many METHOD requests catalog NAME logged
# whose URL holds PATH-PART.
went() {
	cat_requests "$1" | jq --arg m "$2" --arg p "$3" \
		'[.requests[] | select(.method == $m and (.url | contains($p)))] | length'
}

# wrote_to DESC SIDE METHOD PATH-PART: the write reached SIDE only.
wrote_to() {
	local other=warehouse
	[ "$2" = warehouse ] && other=lakehouse
	local a b
	a=$(went "$2" "$3" "$4")
	b=$(went "$other" "$3" "$4")
	if [ "$a" = 1 ] && [ "$b" = 0 ] && [ "$(hdr X-Floe-Target)" = "$2" ]; then
		ok "$1"
	else
		bad "$1: want it on the $2 only: $2 saw $a, $other saw $b," \
			"X-Floe-Target \"$(hdr X-Floe-Target)\"; $(last)"
	fi
	cat_clear warehouse
	cat_clear lakehouse
}

ctl_ok "rule" route set 'db.*' 1
ctl_ok "flip" wave flip 1 lakehouse
get $NS/tables/bunnies
expect_header "reads of db.* come from the lakehouse" X-Floe-Target lakehouse
cat_clear warehouse; cat_clear lakehouse

# --- wave 1 in lakehouse state: writes still go to the warehouse
post $NS/tables "{\"name\":\"created\",\"schema\":$SCHEMA}"
expect_status "create in a lakehouse-state wave" 200
wrote_to "create goes to the warehouse" warehouse POST /namespaces/db/tables
expect_jq "the create answer carries the warehouse's config" 200 \
	'.config["floe-test.catalog"] == "warehouse"'
post $NS/tables/bunnies '{"requirements":[],"updates":[{"action":"set-properties","updates":{"floe.test":"42"}}]}'
expect_status "commit to db.bunnies" 200
wrote_to "commit goes to the warehouse" warehouse POST /tables/bunnies
get /v1/warehouse/namespaces/db/tables/bunnies
expect_jq "the commit landed in the warehouse" 200 \
	'.metadata.properties["floe.test"] == "42"'
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_jq "... and not in the lakehouse" 200 \
	'(.metadata.properties["floe.test"] // null) == null'
cat_clear warehouse; cat_clear lakehouse
loc=$(curl -s "http://127.0.0.1:${CAT_PORT[warehouse]}/_test/tables" |
	jq -r '.tables[] | select(.identifier == "db.athena") | .["metadata-location"]')
post $NS/register "{\"name\":\"registered\",\"metadata-location\":\"$loc\"}"
expect_status "register db.registered" 200
wrote_to "register goes to the warehouse" warehouse POST /namespaces/db/register
req DELETE $NS/tables/created
expect_status "drop db.created" 204
wrote_to "drop goes to the warehouse" warehouse DELETE /tables/created
req DELETE $NS/tables/created
expect_error "drop again: the warehouse's 404 passes through" 404

# --- bodies floe must read to route
post $NS/tables '{"schema":{}}'
expect_error "create without a name is 400" 400 BadRequestException name
post $NS/tables 'not json'
expect_error "create with a body that is not JSON is 400" 400 BadRequestException JSON
post $NS/register '[1,2]'
expect_error "register with a JSON array body is 400" 400

# --- renames: refused across sides, passed within one
post /v1/routed/tables/rename \
	'{"source":{"namespace":["db"],"name":"registered"},"destination":{"namespace":["db"],"name":"renamed"}}'
expect_status "rename within db (one wave, one side)" 204
wrote_to "the rename went to the warehouse" warehouse POST /tables/rename
get /v1/warehouse/namespaces/db/tables/renamed
expect_status "the renamed table is there" 200
post /v1/routed/tables/rename \
	'{"source":{"namespace":["db"],"name":"bunnies"},"destination":{"namespace":["lh_only"],"name":"moved"}}'
expect_error "rename of a lakehouse-read table to an unassigned name: 400" \
	400 BadRequestException "db.bunnies"
expect_jq "... naming the destination" 400 \
	'.error.message | contains("lh_only.moved")'
expect_jq "... and both sides" 400 \
	'(.error.message | contains("lakehouse")) and (.error.message | contains("warehouse"))'
expect_eq "the refused rename reached no catalog" "0 0" \
	"$(went warehouse POST /tables/rename) $(went lakehouse POST /tables/rename)"

# --- multi-table transactions
TX='{"table-changes":[
 {"identifier":{"namespace":["db"],"name":"bunnies"},"requirements":[],"updates":[]},
 {"identifier":{"namespace":["wh_only"],"name":"legacy_bunnies"},"requirements":[],"updates":[]}]}'
post /v1/routed/transactions/commit "$TX"
expect_error "a transaction across sides: 400" 400 BadRequestException \
	"db.bunnies"
expect_jq "... naming both tables and sides" 400 '.error.message as $m |
	($m | contains("wh_only.legacy_bunnies")) and ($m | contains("lakehouse"))
	and ($m | contains("warehouse"))'
expect_eq "the refused transaction reached no catalog" "0 0" \
	"$(went warehouse POST /transactions/commit) $(went lakehouse POST /transactions/commit)"
TX='{"table-changes":[
 {"identifier":{"namespace":["db"],"name":"bunnies"},"requirements":[],"updates":[{"action":"set-properties","updates":{"tx":"1"}}]},
 {"identifier":{"namespace":["db"],"name":"athena"},"requirements":[],"updates":[{"action":"set-properties","updates":{"tx":"1"}}]}]}'
post /v1/routed/transactions/commit "$TX"
expect_status "a transaction within one wave" 204
wrote_to "... goes to its authoritative side, the warehouse" warehouse \
	POST /transactions/commit
post /v1/routed/transactions/commit '{"table-changes":[]}'
expect_error "an empty transaction is 400" 400
TX='{"table-changes":[
 {"identifier":{"namespace":["wh_only"],"name":"legacy_bunnies"},"requirements":[],"updates":[{"action":"set-properties","updates":{"tx":"2"}}]}]}'
post /v1/routed/transactions/commit "$TX"
expect_status "a transaction on unassigned tables" 204
wrote_to "... goes to the warehouse" warehouse POST /transactions/commit

# --- a canary wave: each name's read side is sticky per client and name,
# but a rename within the wave keeps the table in its wave: never refused.
ctl_ok "rule wh_only.* wave 3" route set 'wh_only.*' 3
ctl_ok "canary 50" wave flip 3 lakehouse --canary 50
from=legacy_bunnies
refused=0
for i in $(seq 8); do
	post /v1/routed/tables/rename "{\"source\":{\"namespace\":[\"wh_only\"],\"name\":\"$from\"},\"destination\":{\"namespace\":[\"wh_only\"],\"name\":\"c$i\"}}"
	if [ "$S" = 204 ]; then from=c$i; else refused=$((refused + 1)); echo "  rename $from -> c$i: $(last)"; fi
done
expect_eq "8 renames within one canary wave: none refused" 0 "$refused"
get /v1/warehouse/namespaces/wh_only/tables/$from
expect_status "the table ends under its last name on the warehouse" 200

# --- freeze wave 1 (db.*): the lakehouse is authoritative now
ctl_ok "signoff" wave signoff 1 --by integration-42
ctl_ok "freeze" wave freeze 1 --reason "dual-write stopped"
cat_clear warehouse; cat_clear lakehouse
post $NS/tables/bunnies '{"requirements":[],"updates":[{"action":"set-properties","updates":{"floe.frozen":"1"}}]}'
expect_status "commit to a frozen wave's table" 200
wrote_to "... goes to the lakehouse" lakehouse POST /tables/bunnies
get /v1/lakehouse/namespaces/db/tables/bunnies
expect_jq "... and landed there" 200 '.metadata.properties["floe.frozen"] == "1"'
cat_clear lakehouse
post $NS/tables "{\"name\":\"created_late\",\"schema\":$SCHEMA}"
expect_status "create in a frozen wave" 200
wrote_to "... goes to the lakehouse" lakehouse POST /namespaces/db/tables
expect_jq "... with the lakehouse's config" 200 \
	'.config["floe-test.catalog"] == "lakehouse"'
post /v1/warehouse/namespaces/db/tables/athena '{"requirements":[],"updates":[]}'
expect_error "a write to the warehouse copy of a frozen wave: 403" 403 \
	ForbiddenException athena
expect_jq "... naming the state" 403 '.error.message | contains("frozen")'
req DELETE /v1/warehouse/namespaces/db/tables/athena
expect_error "a drop of the warehouse copy: 403" 403 ForbiddenException
expect_eq "the refused writes reached no catalog" "0 0" \
	"$(( $(went warehouse POST /tables/athena) + $(went warehouse DELETE /tables/athena) )) $(went lakehouse POST /tables/athena)"
get /v1/warehouse/namespaces/db/tables/athena
expect_status "reads of the warehouse copy still pass (pinned)" 200
post /v1/routed/tables/rename \
	'{"source":{"namespace":["db"],"name":"athena"},"destination":{"namespace":["lh_only"],"name":"moved"}}'
expect_error "rename frozen (lakehouse) -> unassigned (warehouse): 400" 400 \
	BadRequestException "db.athena"
expect_jq "... naming both tables and sides" 400 '.error.message as $m |
	($m | contains("lh_only.moved")) and ($m | contains("lakehouse"))
	and ($m | contains("warehouse"))'
cat_clear lakehouse
post /v1/routed/tables/rename \
	'{"source":{"namespace":["db"],"name":"created_late"},"destination":{"namespace":["db"],"name":"created_later"}}'
expect_status "rename within the frozen wave" 204
wrote_to "... goes to the lakehouse" lakehouse POST /tables/rename
TX='{"table-changes":[
 {"identifier":{"namespace":["db"],"name":"bunnies"},"requirements":[],"updates":[]},
 {"identifier":{"namespace":["db"],"name":"athena"},"requirements":[],"updates":[]}]}'
post /v1/routed/transactions/commit "$TX"
expect_status "a transaction within the frozen wave" 204
wrote_to "... goes to the lakehouse" lakehouse POST /transactions/commit
TX='{"table-changes":[
 {"identifier":{"namespace":["db"],"name":"bunnies"},"requirements":[],"updates":[]},
 {"identifier":{"namespace":["lh_only"],"name":"new_bunnies"},"requirements":[],"updates":[]}]}'
post /v1/routed/transactions/commit "$TX"
expect_error "a transaction across frozen and unassigned tables: 400" 400 \
	BadRequestException "lh_only.new_bunnies"
finish
