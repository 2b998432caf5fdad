#!/bin/bash
# Integration 71: stale readers and the decommission gate. Two clients
# load a table before its wave flips; one reloads it after (revalidating
# with the ETag it had: floe answers 200, never a 304 across the flip, and
# notes the old-side revalidation); the other is a stale reader: floectl
# readers and eligible name it, and freeze is refused naming it with its
# last load until it reloads. floectl readers forget excuses a third one,
# as an event. Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 71
catalog warehouse
catalog lakehouse --prefix lhp
POLICY_EXTRA="decommission_min_clean = 1"
MPORT=$(free_port)
FLOE_EXTRA="metrics_listen = 127.0.0.1:$MPORT"
write_conf
start_floe
TOKA=token-of-alice-0123456789
TOKB=token-of-bob-9876543210
TOKC=token-of-carol-5555555555

# load TOKEN [INM]: a LoadTable of db.bunnies; status in S, ETag in ETAG.
load() {
	local h=()
	[ $# -ge 2 ] && h=(-H "If-None-Match: $2")
	curl -s -D "$T/h" -o /dev/null --max-time 5 -H "Authorization: Bearer $1" \
		"${h[@]}" "$BASE/v1/routed/namespaces/db/tables/bunnies" >/dev/null
	S=$(awk 'NR == 1 {print $2}' "$T/h")
	ETAG=$(awk 'tolower($1) == "etag:" {sub(/\r$/, ""); print $2}' "$T/h")
}

ctl_ok "route" route set db.bunnies 1
load $TOKA
expect_eq "alice loads the warehouse copy" 200 "$S"
ETAG_A=$ETAG
case $ETAG_A in *fl1.w.*) ok "alice's ETag is the warehouse's ($ETAG_A)" ;;
*) bad "alice's ETag: $ETAG_A" ;; esac
load $TOKA "$ETAG_A"
expect_eq "alice revalidates before the flip: 304" 304 "$S"
load $TOKB
expect_eq "bob loads the warehouse copy" 200 "$S"
load $TOKC
expect_eq "carol loads the warehouse copy" 200 "$S"
admin GET '/readers?object=db.bunnies'
ALICE=$(jq -r '.readers[] | select(.count == 2) | .identity' "$T/a")
BOB=$(jq -r --arg a "$ALICE" '.readers | sort_by(.first) | .[1].identity' "$T/a")
CAROL=$(jq -r '.readers | sort_by(.first) | .[2].identity' "$T/a")
jq -e '.stale == [] and .flipped == null' "$T/a" >/dev/null &&
	ok "no stale reader before the flip" || bad "before: $(head -c 400 "$T/a")"

ctl_ok "flip" wave flip 1 lakehouse
load $TOKA "$ETAG_A"
expect_eq "alice revalidates with the warehouse's ETag after the flip: 200, no 304" 200 "$S"
case $ETAG in *fl1.l.*) ok "the answer carries the lakehouse's ETag" ;;
*) bad "ETag after the flip: $ETAG" ;; esac

admin GET '/readers?wave=1'
jq -e --arg b "$BOB" --arg c "$CAROL" '(.stale | map(.identity) | sort) ==
	([$b, $c] | sort) and (.stale | all(.object == "db.bunnies" and
	.last_load != null and .last_seen != null))' "$T/a" >/dev/null &&
	ok "bob and carol are stale readers, alice is not" ||
	bad "stale: $(jq -c .stale "$T/a")"
# The counts are made by the worker's child, off the loop: the first
# scrape starts it and shows the last counts; they show once it is done.
for _ in $(seq 50); do
	curl -s --unix-socket "$SOCK" http://floe/metrics >"$T/m"
	grep -q '^floe_stale_readers{' "$T/m" && break
	sleep 0.1
done
curl -s "http://127.0.0.1:$MPORT/?wave=1" >"$T/page"
grep -q 'stale readers</dt><dd class="why">2: floectl readers --wave 1' "$T/page" &&
	ok "the status page shows the wave's stale readers" ||
	bad "page: $(grep -o 'stale readers[^<]*<[^<]*<[^<]*' "$T/page" | head -3)"
grep -qx 'floe_stale_readers{wave="1"} 2' "$T/m" &&
	ok "/metrics: floe_stale_readers{wave=\"1\"} 2" ||
	bad "metrics: $(grep stale_readers "$T/m")"
jq -e --arg a "$ALICE" '.old_etag | length == 1 and .[0].identity == $a and
	.[0].side == "lakehouse"' "$T/a" >/dev/null &&
	ok "alice revalidated with an old-side ETag since the flip" ||
	bad "old_etag: $(jq -c .old_etag "$T/a")"
ctl_ok "floectl readers --wave" readers --wave 1
grep -q "^Stale readers" "$T/ctl" && grep -q "$BOB" "$T/ctl" &&
	grep -q "^Revalidated with an old-side ETag" "$T/ctl" &&
	grep -Eq "^  $ALICE +db.bunnies" "$T/ctl" && ok "floectl readers shows both lists" ||
	bad "floectl readers: $(cat "$T/ctl")"

echo "== forget excuses carol, as an event"
ctl readers forget "$CAROL" db.other
expect_eq "forget for a table carol never loaded: 404, exit 2" 2 "$RC"
grep -q "$CAROL has no warehouse load of db.other in the reader inventory" "$T/ctl" &&
	ok "says so" || bad "$(cat "$T/ctl")"
ctl_ok "forget" readers forget "$CAROL" db.bunnies
grep -q "$CAROL excused" "$T/ctl" && ok "floectl says so" || bad "$(cat "$T/ctl")"
admin GET '/events'
jq -e --arg c "$CAROL" '[.events[] | select(.type == "readers.forget" and
	.identity == $c and .object == "db.bunnies" and .records == 1)] |
	length == 1' "$T/a" >/dev/null && ok "the excuse is an event" ||
	bad "events: $(jq -c '.events[-2:]' "$T/a")"

echo "== the decommission gate waits for bob"
ctl_ok "clean" ledger add db.bunnies --count ok --aggregate ok --hash ok
ctl_ok "sign-off" wave signoff 1 --by alice
ctl eligible 1
expect_eq "eligible: blocked by a stale reader" 1 "$RC"
grep -q "stale readers" "$T/ctl" && grep -q "$BOB" "$T/ctl" && ! grep -q "$CAROL" "$T/ctl" &&
	ok "eligible names bob, not the excused carol" || bad "eligible: $(cat "$T/ctl")"
ctl wave freeze 1
expect_eq "freeze with a stale reader: refused" 1 "$RC"
grep -q "1 stale reader still loads the warehouse copy: $BOB (db.bunnies, last load 20" "$T/ctl" &&
	ok "the refusal names bob with his last load" || bad "freeze: $(cat "$T/ctl")"
expect_eq "still on the lakehouse" lakehouse "$(wave_state 1)"
load $TOKB
expect_eq "bob reloads" 200 "$S"
admin GET '/readers?wave=1'
jq -e '.stale == []' "$T/a" >/dev/null && ok "no stale reader left" || bad "$(jq -c .stale "$T/a")"
ctl_ok "freeze" wave freeze 1
expect_eq "frozen" frozen "$(wave_state 1)"

echo "== a new warehouse load after an excuse is stale again (warn mode)"
ctl_ok "route 2" route set db.java_bunnies 2
curl -s -o /dev/null -H "Authorization: Bearer $TOKC" \
	"$BASE/v1/routed/namespaces/db/tables/java_bunnies"
ctl_ok "flip 2" wave flip 2 lakehouse
ctl_ok "clean 2" ledger add db.java_bunnies --count ok --aggregate ok --hash ok
ctl_ok "sign-off 2" wave signoff 2 --by alice
sed -i 's/^decommission_min_clean = 1$/decommission_min_clean = 1\ndecommission_readers = warn/' "$T/floe.conf"
kill -HUP "$FLOE_PID"
for i in $(seq 50); do grep -q 'reload' "$T/floe.log" && break; sleep 0.1; done
sleep 0.3
ctl_ok "freeze 2 under warn" wave freeze 2
grep -q "^warning: wave 2: 1 stale reader still loads the warehouse copy: $CAROL" "$T/ctl" &&
	ok "warn: allowed, and carol named" || bad "warn: $(cat "$T/ctl")"
finish
