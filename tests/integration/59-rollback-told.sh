#!/bin/bash
# Integration 59: whoever causes an automatic rollback is told. The admin
# answer to a ledger write or an error report that made a trigger roll a
# wave back names the wave, the trigger and the measured value
# ("rolled_back"); floectl prints the change as usual, then a warning line
# per wave on stderr, and exits 0 (the change was made). The evidence
# stays visible afterwards: wave show (rounded; exact with --json).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 59
catalog warehouse
catalog lakehouse --prefix lhp
POLICY_EXTRA="error_min_requests = 10"
write_conf
start_floe

ctl_ok "route 3" route set db.orders 3
ctl_ok "route 4" route set db.items 4
ctl_ok "flip 3" wave flip 3 lakehouse
ctl_ok "flip 4" wave flip 4 lakehouse

# cmd DESC ARGS...: floectl, stdout in $T/out, stderr in $T/err, RC.
cmd() {
	shift
	"$FLOECTL" -s "$SOCK" "$@" >"$T/out" 2>"$T/err"
	RC=$?
}

cmd "clean" ledger add db.orders --count ok --aggregate ok --hash ok
expect_eq "a clean record: exit 0" 0 "$RC"
[ ! -s "$T/err" ] && ok "and no warning" || bad "warning: $(cat "$T/err")"

cmd "gap" ledger add db.orders --count fail --aggregate fail --hash fail \
	--bucket gap
expect_eq "the record that rolls wave 3 back: exit 0" 0 "$RC"
grep -q 'recorded' "$T/out" && ok "it was recorded" ||
	bad "out: $(cat "$T/out")"
expect_eq "one warning line" 1 "$(wc -l <"$T/err")"
grep -qx 'floectl: warning: this rolled wave 3 back to the warehouse: reconcile trigger, measured gap, threshold clean or stale' \
	"$T/err" && ok "the warning names the wave, the trigger and the value" ||
	bad "warning: $(cat "$T/err")"
expect_eq "wave 3 is rolled back" rolled_back "$(wave_state 3)"

# The error report of the issue: 40 of 100 reads on top of 10 good ones.
for i in $(seq 10); do get /v1/routed/namespaces/db/tables/items; done
cmd "report" --json wave report-errors 4 --errors 40 --total 100
expect_eq "the report that rolls wave 4 back: exit 0" 0 "$RC"
jq -e '.rolled_back | length == 1' "$T/out" >/dev/null &&
	jq -e '.rolled_back[0] | .wave == 4 and .trigger == "errors" and
		.from == "lakehouse" and .measured == (40 / 110) and
		.threshold == 0.02 and
		.evidence == "measured 36.36%, threshold 2.00%" and
		(.reason | contains("40 of 110 reads"))' "$T/out" >/dev/null &&
	ok "--json: the answer names it, the value exact" ||
	bad "answer: $(cat "$T/out")"
grep -q 'this rolled wave 4 back to the warehouse: errors trigger, measured 36.36%, threshold 2.00%' \
	"$T/err" && ok "the warning rounds it for people" ||
	bad "warning: $(cat "$T/err")"

ctl_ok "wave show 4" wave show 4
grep -Eq '^rollback +errors trigger: measured 36.36%, threshold 2.00%$' \
	"$T/ctl" && grep -q 'reason .*40 of 110 reads' "$T/ctl" &&
	ok "wave show: the evidence after the rollback" ||
	bad "wave show: $(cat "$T/ctl")"
ctl_ok "wave show 4 --json" --json wave show 4
jq -e '.rollback.trigger == "errors" and .rollback.measured == (40 / 110)
	and .rollback.threshold == 0.02' "$T/ctl" >/dev/null &&
	ok "wave show --json: exact" || bad "wave show --json: $(cat "$T/ctl")"
ctl_ok "wave show 3" wave show 3
grep -Eq '^rollback +reconcile trigger: measured gap, threshold clean or stale$' \
	"$T/ctl" && ok "wave show 3: the reconcile evidence" ||
	bad "wave show 3: $(cat "$T/ctl")"

ctl_ok "ack 3" wave ack 3
cmd "flip" wave flip 3 lakehouse
expect_eq "a flip: exit 0" 0 "$RC"
[ ! -s "$T/err" ] && ok "a change that rolls nothing back warns of nothing" ||
	bad "flip warned: $(cat "$T/err")"
# A bulk import that brings a dirty record is told the same way.
printf '%s\n' "$(ledger_rec db.orders value-drift)" >"$T/imp.jsonl"
cmd "import" ledger import "$T/imp.jsonl"
expect_eq "an import that rolls wave 3 back: exit 0" 0 "$RC"
grep -q 'this rolled wave 3 back to the warehouse: reconcile trigger, measured value-drift' \
	"$T/err" && ok "an import warns too" || bad "import: $(cat "$T/out" "$T/err")"
finish
