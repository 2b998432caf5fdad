#!/bin/bash
# GET /eligibility in pages: with limit, a wave's objects come in key order
# a page at a time with "next", the verdicts still over every object;
# after= without wave= is a 400; floectl eligible pages through a wave of
# more objects than one page and prints every one; the wave counts of
# GET /waves and GET /status follow imports, moves and deletes. Exits 0
# or 1.
. "$(dirname "$0")/lib.sh"
lib_init 77
catalog warehouse
catalog lakehouse
POLICY_EXTRA="gate_min_clean = 1"
write_conf
sed -i '/^gate_min_clean = 0$/d' "$T/floe.conf"
start_floe

# 2,500 tables on wave 9 (floectl's page is 1,000), 3 on wave 2, a rule.
awk 'BEGIN { for (i = 1; i <= 2500; i++)
	printf "{\"object\":\"db.t%04d\",\"wave\":9}\n", i
	for (i = 1; i <= 3; i++)
	printf "{\"object\":\"db.w2_%d\",\"wave\":2}\n", i }' >"$T/routes"
ctl_ok "import" route import "$T/routes"
ctl_ok "rule" route set 'ns.*' 2
ctl_ok "clean record" ledger add db.t0002 --count ok --aggregate ok --hash ok
ctl_ok "dirty record" ledger add db.t2500 --count fail --aggregate ok --hash ok --bucket gap

echo "== pages of one wave"
admin GET '/eligibility?wave=9&limit=1000'
expect_jq "page 1: 1,000 objects from the first, next is the last" 200 '
	.waves[0].objects_total == 2500 and
	(.waves[0].cutover.objects | length) == 1000 and
	(.waves[0].decommission.objects | length) == 1000 and
	.waves[0].cutover.objects[0].object == "db.t0001" and
	.waves[0].next == "db.t1000" and
	.waves[0].cutover.pass == false'
admin GET '/eligibility?wave=9&limit=1000&after=db.t1000'
expect_jq "page 2 starts after next" 200 '
	(.waves[0].cutover.objects | length) == 1000 and
	.waves[0].cutover.objects[0].object == "db.t1001" and
	.waves[0].next == "db.t2000"'
admin GET '/eligibility?wave=9&limit=1000&after=db.t2000'
expect_jq "the last page: 500, next null, the triage of its objects" 200 '
	(.waves[0].cutover.objects | length) == 500 and
	.waves[0].next == null and
	([.waves[0].triage[].objects[].object] == ["db.t2500"])'
admin GET '/eligibility?wave=9&limit=1000'
jq -e '[.waves[0].triage[].objects[]] | length == 0' "$T/b" >/dev/null &&
	ok "page 1's triage holds only its own objects" || bad "triage: $(jq -c .waves[0].triage "$T/b")"
admin GET '/eligibility?wave=9'
expect_jq "without a limit: every object, no next" 200 '
	(.waves[0].cutover.objects | length) == 2500 and
	(.waves[0] | has("next") | not)'
admin GET '/eligibility?after=db.t0001'
expect_jq "after without wave: 400" 400 '.error.message | test("give wave")'
admin GET '/eligibility?limit=2'
expect_jq "every wave, 2 objects each" 200 '
	[.waves[] | {w: .wave, n: (.cutover.objects | length)}] ==
	[{w: 2, n: 2}, {w: 9, n: 2}] and
	.waves[0].next != null'

echo "== floectl pages through"
ctl --json eligible 9
expect_eq "wave 9 is blocked: exit 1" 1 "$RC"
jq -e '.waves[0] as $w | ($w.cutover.objects | length) == 2500 and
	($w.decommission.objects | length) == 2500 and
	([$w.cutover.objects[].object] | . == (unique)) and
	($w | has("next") | not) and
	([$w.triage[].objects[].object] == ["db.t2500"])' "$T/ctl" >/dev/null &&
	ok "floectl gathers the 3 pages: 2,500 objects once each, in order" ||
	bad "floectl --json eligible 9: $(head -c 300 "$T/ctl")"
ctl eligible
expect_eq "every wave: blocked (exit 1)" 1 "$RC"
expect_eq "every object of wave 9 printed once" 2500 \
	"$(grep -cE '^    db\.t[0-9]{4} ' "$T/ctl")"
grep -q '^wave 2 ' "$T/ctl" && grep -q '^wave 9 ' "$T/ctl" &&
	ok "both waves printed" || bad "$(head -c 300 "$T/ctl")"

echo "== wave counts follow the routes"
admin GET /waves
expect_jq "GET /waves: counts from the store" 200 '
	[.waves[] | {w: .wave, o: .objects, r: .rules}] ==
	[{w: 2, o: 3, r: 1}, {w: 9, o: 2500, r: 0}]'
ctl_ok "move" route set db.t0001 2
ctl_ok "rm" route rm db.t0002
ctl_ok "rm rule" route rm 'ns.*'
admin GET /waves
expect_jq "after a move and two deletes" 200 '
	[.waves[] | {w: .wave, o: .objects, r: .rules}] ==
	[{w: 2, o: 4, r: 0}, {w: 9, o: 2498, r: 0}]'
admin GET /waves/9?limit=2
expect_jq "a wave's routes from the index, in order" 200 '
	.objects == ["db.t0003", "db.t0004"] and .next == "db.t0004"'
finish
