#!/bin/bash
# Integration 70: the reader inventory. Each table load is noted per
# object, side and client identity (the authenticated client, else
# token:HASH of its credential, never the credential, else its address),
# with its first and last load, count and user agent; GET /readers and
# floectl readers list them newest first with when each identity was
# last seen anywhere; the table's bound and evictions are in /status; a
# restart keeps the inventory (it is flushed to the store).
# Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 70
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe
TOKA=secret-token-of-alice-0123456789
TOKB=secret-token-of-bob-9876543210

# load TABLE TOKEN [UA]: a LoadTable through floe with that bearer token.
load() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
		-H "Authorization: Bearer $2" -A "${3:-spark/3.5 iceberg/1.6}" \
		"$BASE/v1/routed/namespaces/db/tables/$1"
}

ctl_ok "route" route set db.bunnies 1
expect_eq "alice loads" 200 "$(load bunnies $TOKA)"
expect_eq "alice loads again" 200 "$(load bunnies $TOKA)"
expect_eq "bob loads" 200 "$(load bunnies $TOKB trino/440)"
expect_eq "anonymous load of another table" 200 "$(curl -s -o /dev/null \
	-w '%{http_code}' "$BASE/v1/routed/namespaces/db/tables/java_bunnies")"
expect_eq "a listing is not a load" 200 "$(curl -s -o /dev/null \
	-w '%{http_code}' "$BASE/v1/routed/namespaces/db/tables")"

admin GET '/readers?object=db.bunnies'
expect_eq "GET /readers" 200 "$AS"
jq -e '.wave == 1 and .state == "warehouse" and .total == 2 and
	(.readers | length) == 2 and
	(.readers[0].user_agent == "trino/440") and
	(.readers | map(.side) | unique) == ["warehouse"] and
	(.readers | map(select(.count == 2)) | length) == 1 and
	(.readers | all(.identity | test("^token:[0-9a-f]{16}$"))) and
	(.readers | all(.last_seen != null and .first != null))' "$T/a" >/dev/null &&
	ok "two identities, newest first, with count, user agent, last seen" ||
	bad "readers: $(head -c 800 "$T/a")"
if grep -q "$TOKA\|$TOKB\|secret-token" "$T/a" "$T/floe.log"; then
	bad "a raw token was shown or logged"
else
	ok "no raw token anywhere"
fi
ALICE=$(jq -r '.readers[] | select(.count == 2) | .identity' "$T/a")
BOB=$(jq -r '.readers[] | select(.count == 1) | .identity' "$T/a")

admin GET '/readers?object=db.java_bunnies'
jq -e '.wave == null and .readers[0].identity == "127.0.0.1"' "$T/a" >/dev/null &&
	ok "an anonymous client is its address" || bad "anon: $(head -c 400 "$T/a")"
admin GET '/readers'
expect_eq "no object nor wave: 400" 400 "$AS"
admin GET '/readers?object=db.*'
expect_eq "a rule: 400" 400 "$AS"

ctl_ok "floectl readers" readers db.bunnies
grep -q "$ALICE" "$T/ctl" && grep -q 'trino/440' "$T/ctl" &&
	grep -q '2 reader records' "$T/ctl" && ok "floectl readers OBJECT" ||
	bad "floectl readers: $(cat "$T/ctl")"
ctl_ok "floectl readers --wave" readers --wave 1
grep -q "$BOB" "$T/ctl" && ok "floectl readers --wave N" || bad "$(cat "$T/ctl")"
ctl readers
expect_eq "floectl readers without OBJECT or --wave: usage" 2 "$RC"

admin GET /status
jq -e '.readers.capacity == 16384 and .readers.entries >= 5 and
	.readers.bytes > 0 and .readers.evicted == 0 and .readers.loads == 4' \
	"$T/a" >/dev/null && ok "/status: the bound, entries and evictions" ||
	bad "status: $(jq -c .readers "$T/a")"

echo "== a restart keeps it"
stop_floe
start_floe
admin GET '/readers?object=db.bunnies'
jq -e --arg a "$ALICE" '.total == 2 and
	(.readers[] | select(.identity == $a) | .count) == 2' "$T/a" >/dev/null &&
	ok "after a restart: both readers, the counts kept" ||
	bad "after restart: $(head -c 600 "$T/a")"
expect_eq "alice loads after the restart" 200 "$(load bunnies $TOKA)"
admin GET '/readers?object=db.bunnies'
jq -e --arg a "$ALICE" '(.readers[0].identity == $a) and
	(.readers[0].count == 3)' "$T/a" >/dev/null &&
	ok "new loads add to the stored count" || bad "$(head -c 600 "$T/a")"

echo "== an authenticated client is its name"
stop_floe
printf 'spark-etl %s\n' "$(printf '%s' "$TOKA" | sha256sum | cut -d' ' -f1)" >"$T/clients.tokens"
chmod 600 "$T/clients.tokens"
printf '[auth]\nmode = token\ntoken_file = %s\n' "$T/clients.tokens" >>"$T/floe.conf"
start_floe
expect_eq "spark-etl loads" 200 "$(load bunnies $TOKA)"
admin GET '/readers?object=db.bunnies'
jq -e '.readers[0].identity == "spark-etl" and .readers[0].count == 1' "$T/a" >/dev/null &&
	ok "the identity is the name authentication gave" || bad "auth: $(head -c 400 "$T/a")"
finish
