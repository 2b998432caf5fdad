#!/bin/bash
# Integration 55: a rollback whose log line the disk cannot take. The log
# lives on a 64 KiB tmpfs filled to the last byte; the line's write is
# short (the rest of a page) and then ENOSPC. The rollback is applied,
# the log keeps no part of the line, the line waits in the flag store and
# /status, /metrics and the events say so ("disk full"); once space is
# freed the tick writes it, whole, and the next rollback's line follows
# it. floectl says the line is pending and exits 4; a trigger's page says
# so too. Needs root (mount); a test that cannot mount fails, it never
# skips.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 55
FULL=$T/full
mkdir -p "$FULL"
if ! mount -t tmpfs -o size=64k tmpfs "$FULL"; then
	echo "FAIL cannot mount a tmpfs at $FULL (this test needs root)"
	exit 1
fi
trap 'umount "$FULL" 2>/dev/null; lib_cleanup' EXIT
catalog warehouse
catalog lakehouse --prefix lhp
webhook_start
POLICY_EXTRA="webhook = $WEBHOOK_URL"
write_conf
sed -i "s|^rollback_log = .*|rollback_log = $FULL/rollback.log|" "$T/floe.conf"
# One line of 4,000 bytes: the next line starts 96 bytes before the end
# of a page, so a full disk takes part of it (a short write).
node -e 'process.stdout.write(JSON.stringify({wave: 0,
	pad: "x".repeat(3980)}) + "\n")' >"$FULL/rollback.log"
expect_eq "the first line is 4000 bytes" 4000 "$(stat -c %s "$FULL/rollback.log")"
start_floe

ctl_ok "route" route set db.athena 1
ctl_ok "flip" wave flip 1 lakehouse
dd if=/dev/zero of="$FULL/filler" bs=4k 2>/dev/null
if dd if=/dev/zero of="$FULL/more" bs=1 count=1 2>/dev/null &&
	[ -s "$FULL/more" ]; then
	bad "the tmpfs is not full"
fi
rm -f "$FULL/more"

ctl wave rollback 1 --reason "disk is full"
expect_eq "floectl: the rollback is done, with a warning: exit 4" 4 "$RC"
if grep -q "warning: wave 1 rolled back, but its rollback log line is not written yet (disk full" "$T/ctl" &&
	grep -q "wave 1: lakehouse -> rolled_back" "$T/ctl"; then
	ok "floectl says the line is pending, and why"
else
	bad "floectl: $(cat "$T/ctl")"
fi
expect_eq "the rollback is applied all the same" rolled_back "$(wave_state 1)"
expect_eq "no part of the line in the log" 4000 \
	"$(stat -c %s "$FULL/rollback.log")"
expect_eq "the log ends with a newline" "" \
	"$(tail -c 1 "$FULL/rollback.log" | tr -d '\n')"
admin GET /status
cp "$T/a" "$T/b"; S=$AS
expect_jq "/status: one line pending, disk full" 200 \
	'.rollback_log.pending == 1 and (.rollback_log.error | startswith("disk full"))
	 and .rollback_log.failed >= 1'
admin GET /metrics
if grep -qx 'floe_rollback_log_pending 1' "$T/a" &&
	grep -qE '^floe_rollback_log_failures_total [1-9]' "$T/a"; then
	ok "/metrics: pending 1, failures counted"
else
	bad "/metrics: $(grep rollback_log "$T/a")"
fi
admin GET '/events?after=0'
cp "$T/a" "$T/b"; S=$AS
expect_jq "an event says the log is failing" 200 \
	'[.events[] | select(.type == "rollback_log.failing")] | length == 1
	 and (.[0].error | startswith("disk full"))'

# A trigger's rollback while full: its page says the log lacks it.
ctl_ok "ack" wave ack 1
ctl_ok "flip again" wave flip 1 lakehouse
admin POST /ledger "$(ledger_rec db.athena gap)"
expect_eq "the reconcile trigger rolls back all the same" rolled_back \
	"$(wave_state 1)"
for i in $(seq 40); do
	[ "$(webhook_posts | jq '.posts | length')" -ge 1 ] && break
	sleep 0.05
done
if webhook_posts | jq -e '.posts[0].body | .trigger == "reconcile" and
	.rollback_log == "pending"' >/dev/null; then
	ok "the page says the log line is pending"
else
	bad "page: $(webhook_posts | head -c 400)"
fi

# Still full a few ticks later: still pending, the log untouched.
sleep 2.2
expect_eq "retried, nothing written while full" 4000 \
	"$(stat -c %s "$FULL/rollback.log")"
admin GET /status
expect_eq "two lines pending" 2 "$(jq .rollback_log.pending "$T/a")"

rm -f "$FULL/filler"
for i in $(seq 50); do
	[ "$(wc -l <"$FULL/rollback.log")" = 3 ] && break
	sleep 0.1
done
expect_eq "space freed: the tick writes both lines" 3 \
	"$(wc -l <"$FULL/rollback.log")"
line=$(sed -n 2p "$FULL/rollback.log")
if echo "$line" | jq -e '.wave == 1 and .trigger == "operator" and
	.reason == "disk is full"' >/dev/null; then
	ok "the operator's line is whole, and first"
else
	bad "line 2: $line"
fi
line=$(sed -n 3p "$FULL/rollback.log")
if echo "$line" | jq -e '.wave == 1 and .trigger == "reconcile" and
	(has("rollback_log") | not)' >/dev/null; then
	ok "the trigger's line follows it, as logged"
else
	bad "line 3: $line"
fi
admin GET /status
cp "$T/a" "$T/b"; S=$AS
expect_jq "/status: none pending, no error" 200 \
	'.rollback_log.pending == 0 and .rollback_log.error == null'
admin GET '/events?after=0'
cp "$T/a" "$T/b"; S=$AS
expect_jq "an event says the log takes lines again" 200 \
	'[.events[] | select(.type == "rollback_log.written")] | length == 1'

ctl_ok "ack" wave ack 1
ctl_ok "flip again" wave flip 1 lakehouse
ctl_ok "rollback, disk not full: exit 0" wave rollback 1 --reason "second"
grep -q warning "$T/ctl" && bad "a warning with the log fine: $(cat "$T/ctl")"
expect_eq "the next line follows, not glued" 4 \
	"$(wc -l <"$FULL/rollback.log")"
ctl_ok "floectl rollbacks" rollbacks --json
if jq -se 'length == 4 and ([.[] | select(has("unparsed"))] | length == 0)' \
	"$T/ctl" >/dev/null 2>&1; then
	ok "every line reads back"
else
	bad "rollbacks: $(head -c 400 "$T/ctl")"
fi
finish
