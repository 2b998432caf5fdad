#!/bin/bash
# The end of a wave: sign-off, the decommission gate on freeze (clean
# records after the flip, none dirty, a sign-off), 403 for writes to the
# warehouse copy of a frozen wave, the grace period before retire, a
# rollback since the freeze that forbids retiring, --force-stale, and
# retired being final. Every transition and refusal is an event.
# Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
lib_init 35
catalog warehouse
catalog lakehouse
POLICY_EXTRA="decommission_min_clean = 2
grace = 3s"
write_conf
start_floe

state() {
	curl -s --unix-socket "$SOCK" "http://floe/waves/$1" | jq -r .state
}
# clean OBJECT N: N clean records dated now (after any flip so far).
clean() {
	local i
	for i in $(seq "$2"); do
		ctl_ok "clean record" ledger add "$1" --count ok --aggregate ok --hash ok || return 1
	done
}
commit_body='{"requirements":[],"updates":[]}'

ctl_ok "route" route set db.bunnies 1
ctl_ok "clean before the flip" ledger add db.bunnies --count ok --aggregate ok --hash ok \
	--at "$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)"
ctl_ok "clean before the flip" ledger add db.bunnies --count ok --aggregate ok --hash ok \
	--at "$(date -u -d '-2 hour' +%Y-%m-%dT%H:%M:%SZ)"

echo "== sign-off and freeze before the lakehouse"
ctl wave signoff 1 --by alice
expect_eq "sign-off of a warehouse wave: refused" 1 "$RC"
grep -q 'a sign-off is for a wave whose readers are on the lakehouse' "$T/ctl" &&
	ok "says why" || bad "$(cat "$T/ctl")"
ctl wave signoff 1
expect_eq "sign-off without --by: exit 2" 2 "$RC"
ctl wave freeze 1
expect_eq "freeze a warehouse wave: refused" 1 "$RC"
ctl_ok "canary" wave flip 1 lakehouse --canary 50
ctl wave freeze 1
expect_eq "freeze a canary: refused" 1 "$RC"
grep -q 'flip it to the lakehouse before freezing' "$T/ctl" && ok "a canary must finish first" ||
	bad "$(cat "$T/ctl")"
ctl_ok "lakehouse" wave flip 1 lakehouse

echo "== the decommission gate"
ctl wave freeze 1
expect_eq "no records after the flip, no sign-off: refused" 1 "$RC"
grep -q 'no sign-off' "$T/ctl" && grep -Eq '^db.bunnies +0 +0' "$T/ctl" &&
	ok "records before the flip do not count; the sign-off is missing" || bad "$(cat "$T/ctl")"
clean db.bunnies 2
ctl wave freeze 1
expect_eq "clean records but no sign-off: refused" 1 "$RC"
ctl_ok "sign-off" wave signoff 1 --by "alice (data owner)" &&
	grep -q 'wave 1 signed off by alice (data owner)' "$T/ctl" && ok "sign-off recorded"
ctl_ok "show" --json wave show 1
jq -e '.signoff == "alice (data owner)" and .signoff_at != null' "$T/ctl" >/dev/null &&
	ok "wave show has the sign-off" || bad "$(cat "$T/ctl")"
ctl_ok "eligible" --json eligible 1
jq -e '.waves[0].decommission.pass == true and .waves[0].decommission.objects[0].clean == 2' \
	"$T/ctl" >/dev/null && ok "eligible: the decommission gate holds" || bad "$(cat "$T/ctl")"

echo "== a dirty record after the flip blocks (wave 2)"
ctl_ok "route" route set db.other 2
ctl_ok "flip 2" wave flip 2 lakehouse
clean db.other 3
# A stale record: dirty for the gate, but not a rollback trigger (a gap or
# value-drift after the flip would roll the wave back: integration 50).
ctl_ok "stale" ledger add db.other --count ok --aggregate fail --hash fail --bucket stale
ctl_ok "sign-off 2" wave signoff 2 --by bob
ctl wave freeze 2
expect_eq "dirty after the flip: refused" 1 "$RC"
grep -Eq '^db.other +3 +1 +stale 1' "$T/ctl" && ok "the dirty record is named" ||
	bad "$(cat "$T/ctl")"
expect_eq "wave 2 still on the lakehouse" lakehouse "$(state 2)"

echo "== freeze"
req POST /v1/warehouse/namespaces/db/tables/bunnies -H 'Content-Type: application/json' \
	--data-binary "$commit_body"
[ "$S" != 403 ] && ok "before the freeze the warehouse copy takes writes ($S)" ||
	bad "403 before the freeze"
ctl_ok "freeze" wave freeze 1 --reason "dual-write stopped" &&
	grep -q 'wave 1 frozen: writes to the warehouse copy are refused' "$T/ctl" && ok "frozen"
expect_eq "state frozen" frozen "$(state 1)"
req POST /v1/warehouse/namespaces/db/tables/bunnies -H 'Content-Type: application/json' \
	--data-binary "$commit_body"
expect_error "a write to the warehouse copy: 403" 403 ForbiddenException "wave 1 is frozen"
get /v1/routed/namespaces/db/tables/bunnies
expect_header "reads on the lakehouse" X-Floe-Target lakehouse
curl -s --unix-socket "$SOCK" http://floe/resolve/db.bunnies >"$T/b"
jq -e '.write_target == "lakehouse" and .refuses_warehouse_writes == true' "$T/b" >/dev/null &&
	ok "the lakehouse is authoritative" || bad "resolve: $(cat "$T/b")"
ctl wave freeze 1
expect_eq "freeze twice: refused" 1 "$RC"
ctl wave flip 1 lakehouse
expect_eq "flip a frozen wave: refused" 1 "$RC"

echo "== retire needs the grace period"
ctl wave retire 1
expect_eq "retire during the grace: refused" 1 "$RC"
grep -q 'is in its grace period until' "$T/ctl" && ok "says until when" || bad "$(cat "$T/ctl")"
ctl wave rollback 1 --reason "oops"
expect_eq "rollback of a frozen wave without --force-stale: refused" 1 "$RC"
grep -q 'use --force-stale' "$T/ctl" && ok "says --force-stale" || bad "$(cat "$T/ctl")"
sleep 3.2
ctl_ok "retire" wave retire 1 && grep -q 'wave 1: frozen -> retired' "$T/ctl" && ok "retired after the grace"
ctl wave rollback 1 --force-stale
expect_eq "rollback of a retired wave: refused" 1 "$RC"
grep -q 'retired is final: the warehouse copy of its tables is no longer written nor consulted' "$T/ctl" &&
	ok "retired is final, and says why" || bad "$(cat "$T/ctl")"
ctl wave retire 1
expect_eq "retire twice: refused" 1 "$RC"
ctl wave set 1 --min-clean 3
expect_eq "overrides of a retired wave: refused" 1 "$RC"
req POST /v1/warehouse/namespaces/db/tables/bunnies -H 'Content-Type: application/json' \
	--data-binary "$commit_body"
expect_error "retired: warehouse writes still 403" 403 ForbiddenException

echo "== a rollback since the freeze forbids retiring (wave 3)"
ctl_ok "route" route set db.third 3
ctl_ok "flip 3" wave flip 3 lakehouse
clean db.third 2
ctl_ok "sign-off 3" wave signoff 3 --by carol
ctl_ok "freeze 3" wave freeze 3
ctl_ok "operator rollback with --force-stale" wave rollback 3 --force-stale --reason "lakehouse broke"
tail -n 1 "$T/rollback.log" | jq -e '.wave == 3 and .from == "frozen" and .trigger == "operator"' >/dev/null &&
	ok "the forced rollback is in the rollback log" || bad "rollback log: $(tail -n 1 "$T/rollback.log")"
sleep 3.2
ctl wave retire 3
expect_eq "retire after a rollback since the freeze: refused" 1 "$RC"
grep -q 'was rolled back at .* after its freeze at' "$T/ctl" && ok "says the rollback forbids it" ||
	bad "$(cat "$T/ctl")"
ctl_ok "ack" wave ack 3
ctl_ok "flip again" wave flip 3 lakehouse
ctl wave freeze 3
expect_eq "the rollback cleared the sign-off: refused" 1 "$RC"
grep -q 'no sign-off' "$T/ctl" && ok "a new run needs a new sign-off" || bad "$(cat "$T/ctl")"

echo "== events"
curl -s --unix-socket "$SOCK" 'http://floe/events?limit=10000' >"$T/ev"
jq -e '([.events[] | select(.type == "wave.signoff")] | length) == 3
	and ([.events[] | select(.type == "wave.freeze")] | length) == 2
	and ([.events[] | select(.type == "wave.retire")] | length) == 1
	and (.events[] | select(.type == "wave.freeze" and .wave == 1)
		| .gate.pass == true and .signoff == "alice (data owner)" and .grace == "3s" and .gate.objects[0].clean == 2)
	and ([.events[] | select(.type == "wave.refused" and .action == "freeze")] | length) == 7
	and ([.events[] | select(.type == "wave.refused" and .action == "retire")] | length) == 3
	and ([.events[] | select(.type == "wave.refused" and .action == "signoff")] | length) == 1' \
	"$T/ev" >/dev/null && ok "sign-offs, freezes, retires and their refusals are events with the evidence" ||
	bad "events: $(jq -c '[.events[] | select(.type | startswith("wave.")) | [.type, .action, .wave]]' "$T/ev")"
finish
