#!/bin/bash
# Integration 73: --dry-run for wave flip, freeze, retire and route set.
# Each says what would happen (the tables that move, the gate that would
# refuse and why, the identities that loaded them in the last day), exits
# 1 when it would be refused, and changes nothing: no state, no route, no
# event. Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 73
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe

nevents() {
	admin GET '/events?after=0'
	jq '.events | length' "$T/a"
}
ctl_ok "route" route set db.bunnies 1
curl -s -o /dev/null -H 'Authorization: Bearer tok-a' "$BASE/v1/routed/namespaces/db/tables/bunnies"
curl -s -o /dev/null -H 'Authorization: Bearer tok-b' "$BASE/v1/routed/namespaces/db/tables/bunnies"
E0=$(nevents)

ctl_ok "flip --dry-run" wave flip 1 lakehouse --dry-run
grep -q '^dry run: wave 1: warehouse -> lakehouse would proceed$' "$T/ctl" &&
	grep -q 'tables it moves: 1: db.bunnies' "$T/ctl" &&
	grep -Eq 'identities that loaded them since .*: 2 \(token:' "$T/ctl" &&
	grep -q 'nothing changed' "$T/ctl" && ok "flip --dry-run: what would move, and who read it" ||
	bad "flip dry: $(cat "$T/ctl")"
ctl_ok "flip --dry-run --json" --json wave flip 1 lakehouse --dry-run
jq -e '.dry_run and .would == "proceed" and .objects == ["db.bunnies"] and
	.readers_last_day.identities == 2' "$T/ctl" >/dev/null &&
	ok "--json has it all" || bad "$(cat "$T/ctl")"
expect_eq "still on the warehouse" warehouse "$(wave_state 1)"
expect_eq "no event" "$E0" "$(nevents)"

ctl_ok "flip" wave flip 1 lakehouse
E1=$(nevents)
ctl wave freeze 1 --dry-run
expect_eq "freeze --dry-run, no sign-off: would be refused, exit 1" 1 "$RC"
grep -q 'would be refused' "$T/ctl" && grep -q 'no sign-off' "$T/ctl" &&
	grep -q 'decommission gate: BLOCKED' "$T/ctl" &&
	ok "freeze --dry-run names the gate and why" || bad "freeze dry: $(cat "$T/ctl")"
ctl wave retire 1 --dry-run
expect_eq "retire --dry-run of a lakehouse wave: exit 1" 1 "$RC"
grep -q 'wave 1 is lakehouse: only a frozen wave can retire' "$T/ctl" &&
	ok "retire --dry-run says why" || bad "retire dry: $(cat "$T/ctl")"
ctl route set db.java_bunnies 1 --dry-run
expect_eq "route set into a lakehouse wave --dry-run: exit 1" 1 "$RC"
grep -q 'may join it only while the wave is on the warehouse' "$T/ctl" &&
	grep -q 'reads warehouse) -> wave 1 lakehouse (reads lakehouse) would be refused' "$T/ctl" &&
	ok "route set --dry-run: the guard, and where reads would go" || bad "route dry: $(cat "$T/ctl")"
ctl_ok "route set --dry-run, allowed" route set db.java_bunnies 2 --dry-run
grep -q 'would proceed' "$T/ctl" && ok "route set --dry-run: would proceed" || bad "$(cat "$T/ctl")"
admin GET /routes
jq -e '[.routes[] | select(.object == "db.java_bunnies")] | length == 0' "$T/a" >/dev/null &&
	ok "no route was written" || bad "routes: $(cat "$T/a")"
expect_eq "still on the lakehouse" lakehouse "$(wave_state 1)"
expect_eq "no event from any dry run" "$E1" "$(nevents)"
finish
