#!/bin/bash
# Bulk route assignment: floectl route import (JSON lines from a file or
# stdin) and POST /routes/import (also a JSON array). A few thousand routes
# land in one import, resolve and route on the data path; a re-run changes
# nothing; a bad line, an object given twice, a guard refusal, an empty or
# missing file change nothing (floectl route list identical, exit 2 or 1)
# and the message names the line and the object. Exits 0 or 1.
# alone: reads a held store lock as a write that waits 0.3 s
. "$(dirname "$0")/lib.sh"
lib_init 36
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe

N=${IMPORT_N:-5000}
TBL=/v1/routed/namespaces/db/tables/bunnies

# last_seq: the store's last event sequence.
last_seq() {
	curl -s --max-time 10 --unix-socket "$SOCK" "http://floe/events?limit=1" |
		jq -r .last_seq
}
# routes FILE: floectl route list --json into FILE.
routes() {
	"$FLOECTL" -s "$SOCK" --json route list >"$1" 2>&1
}
# unchanged DESC: the routes are those in $T/before and no event was added
# (EVENTS more when given: refusals are recorded).
unchanged() {
	routes "$T/after"
	if cmp -s "$T/before" "$T/after"; then
		ok "$1: route list identical"
	else
		bad "$1: route list changed"
	fi
	expect_eq "$1: events" $((SEQ + ${2:-0})) "$(last_seq)"
}

# N tables db.t00001.. over waves 1..10, then db.bunnies in wave 7.
awk -v n="$N" 'BEGIN {
	for (i = 1; i < n; i++)
		printf "{\"object\":\"db.t%05d\",\"wave\":%d}\n", i, i % 10 + 1
	print "{\"object\":\"db.bunnies\",\"wave\":7}"
}' >"$T/routes.jsonl"

echo "== import $N routes"
SEQ=$(last_seq)
ctl_ok "import" route import "$T/routes.jsonl" &&
	expect_eq "floectl prints the counts" "$N set, 0 unchanged" "$(cat "$T/ctl")"
expect_eq "one synced txn: one event" $((SEQ + 1)) "$(last_seq)"
curl -s --unix-socket "$SOCK" "http://floe/events?after=$SEQ" >"$T/ev"
jq -e --argjson n "$N" '.events | length == 1 and .[0].type == "route.import"
	and .[0].set == $n and .[0].unchanged == 0 and .[0].records == $n
	and (.[0].actor | startswith("uid "))
	and ([.[0].waves[]] | add == $n) and (.[0].waves | length == 10)
	and .[0].waves["7"] == ($n / 10 + 1)' "$T/ev" >/dev/null &&
	ok "route.import event: counts per wave, not a list of objects" ||
	bad "event: $(head -c 400 "$T/ev")"
routes "$T/list"
expect_eq "route list holds every route" "$N" "$(jq '.routes | length' "$T/list")"

echo "== the lists in pages"
# floectl asks for 1,000 at a time and follows "next": the pages hold
# every route once, in the order of one unpaged GET /routes.
curl -s --unix-socket "$SOCK" http://floe/routes >"$T/whole"
jq -e --slurpfile w "$T/whole" '[.routes[].object] == [$w[0].routes[].object]
	and ($w[0].next == null)' "$T/list" >/dev/null &&
	ok "floectl route list: the pages are the whole list, in order" ||
	bad "route list pages differ from GET /routes"
curl -s --unix-socket "$SOCK" 'http://floe/routes?limit=1000' >"$T/p1"
next=$(jq -r .next "$T/p1")
jq -e --slurpfile w "$T/whole" '(.routes | length == 1000)
	and .next == .routes[999].object and .routes == $w[0].routes[0:1000]' \
	"$T/p1" >/dev/null && ok "GET /routes?limit=1000: a page and next" ||
	bad "page 1: $(jq -c '{n: (.routes | length), next}' "$T/p1")"
curl -s --unix-socket "$SOCK" -G --data-urlencode "after=$next" \
	'http://floe/routes?limit=1000' >"$T/p2"
jq -e --slurpfile w "$T/whole" '.routes == $w[0].routes[1000:2000]' "$T/p2" \
	>/dev/null && ok "?after=NEXT: the next page" || bad "page 2 is not the next 1000"
"$FLOECTL" -s "$SOCK" --json wave list >"$T/waves" 2>&1
curl -s --unix-socket "$SOCK" 'http://floe/waves?limit=3&after=3' >"$T/wp"
jq -e '[.waves[].wave] == [4, 5, 6] and .next == 6' "$T/wp" >/dev/null &&
	ok "GET /waves?limit=3&after=3: waves 4..6, next 6" || bad "waves page: $(cat "$T/wp")"
expect_eq "floectl wave list: every wave" 10 "$(jq '.waves | length' "$T/waves")"
ctl_ok "resolve" --json resolve db.t00042 &&
	expect_eq "resolve: db.t00042 in wave 3" 3 "$(jq .wave "$T/ctl")"
get "$TBL"
expect_header "a read through floe: wave 7" X-Floe-Wave 7
expect_header "on the warehouse" X-Floe-Target warehouse
ctl_ok "flip" wave flip 7 lakehouse
get "$TBL"
expect_header "after the flip: the lakehouse" X-Floe-Target lakehouse
get /v1/routed/namespaces/db/tables/athena
expect_header "an unimported table stays unassigned" X-Floe-Wave none

echo "== re-run: nothing changes"
SEQ=$(last_seq)
ctl_ok "import again" route import "$T/routes.jsonl" &&
	expect_eq "all unchanged" "0 set, $N unchanged" "$(cat "$T/ctl")"
ctl_ok "import - --json" --json route import - <"$T/routes.jsonl" &&
	jq -e --argjson n "$N" --argjson s "$SEQ" \
		'. == {"set": 0, "unchanged": $n, "seq": $s}' "$T/ctl" >/dev/null &&
	ok "--json prints the answer; stdin read" || bad "--json: $(cat "$T/ctl")"
routes "$T/after"
cmp -s "$T/list" "$T/after" && ok "a re-run keeps every route's since" ||
	bad "a re-run changed the route list"
expect_eq "a re-run writes no event" "$SEQ" "$(last_seq)"

echo "== bad files change nothing"
routes "$T/before"
SEQ=$(last_seq)
# A new wave for everything, one bad line in the middle.
sed 's/"wave":[0-9]*/"wave":20/' "$T/routes.jsonl" >"$T/moved.jsonl"
awk -v n=$((N / 2)) 'NR == n { print "{\"object\":\"db.bad\",\"wave\":\"x\"}"; next } { print }' \
	"$T/moved.jsonl" >"$T/bad.jsonl"
ctl route import "$T/bad.jsonl"
expect_eq "a bad line: exit 2" 2 "$RC"
grep -q "line $((N / 2)) (db.bad): field \"wave\" must be an integer" "$T/ctl" &&
	grep -q "nothing was imported" "$T/ctl" &&
	ok "the message names the line and the object" || bad "message: $(cat "$T/ctl")"
unchanged "bad line"

{ head -n 3 "$T/moved.jsonl"; echo '{"object":"db.t00002","wave":21}'; } >"$T/dup.jsonl"
ctl route import "$T/dup.jsonl"
expect_eq "an object twice with two waves: exit 2" 2 "$RC"
grep -q 'line 4 (db.t00002): wave 21, but line 2 gives it wave 20' "$T/ctl" &&
	ok "the message names both lines" || bad "message: $(cat "$T/ctl")"
unchanged "duplicate"

# db.bunnies is in wave 7, now on the lakehouse: a new table may not join.
{ head -n 10 "$T/moved.jsonl"; echo '{"object":"db.late","wave":7}'; } >"$T/guard.jsonl"
ctl route import "$T/guard.jsonl"
expect_eq "joining a lakehouse wave: refused, exit 1" 1 "$RC"
grep -q 'refused: line 11: wave 7 is lakehouse: db.late may join it only' "$T/ctl" &&
	ok "the refusal names the line and the object" || bad "message: $(cat "$T/ctl")"
unchanged "guard refusal" 1
curl -s --unix-socket "$SOCK" "http://floe/events?after=$SEQ" |
	jq -e '.events[0].type == "route.refused" and .events[0].action == "import"
		and .events[0].line == 11 and .events[0].object == "db.late"' >/dev/null &&
	ok "the refusal is recorded" || bad "refusal event"
SEQ=$((SEQ + 1))

: >"$T/empty.jsonl"
ctl route import "$T/empty.jsonl"
expect_eq "an empty file: exit 2" 2 "$RC"
ctl route import "$T/missing.jsonl"
expect_eq "a missing file: exit 2" 2 "$RC"
grep -q "missing.jsonl" "$T/ctl" && ok "and says which" || bad "message: $(cat "$T/ctl")"
ctl route import
expect_eq "no file: usage, exit 2" 2 "$RC"
unchanged "empty, missing"
"$FLOECTL" -s "$T/nobody.sock" route import "$T/routes.jsonl" >"$T/ctl" 2>&1
expect_eq "floe unreachable: exit 3" 3 "$?"

echo "== forced, and the array form"
sed 's/"wave":7}$/"wave":7,"force":true}/' "$T/guard.jsonl" >"$T/forced.jsonl"
ctl_ok "forced import" route import "$T/forced.jsonl" &&
	expect_eq "forced: 10 moved, db.late joins" "11 set, 0 unchanged" "$(cat "$T/ctl")"
S=$(curl -s -o "$T/b" -w '%{http_code}' --unix-socket "$SOCK" \
	-H 'Content-Type: application/json' --data-binary \
	'[{"object":"db.t00001","wave":20},{"object":"arr.*","wave":3}]' \
	http://floe/routes/import)
expect_jq "POST /routes/import takes a JSON array" 200 \
	'.set == 1 and .unchanged == 1'
ctl_ok "resolve a rule's table" --json resolve arr.anything &&
	expect_eq "the rule from the array decides" 3 "$(jq .wave "$T/ctl")"

echo "== an import runs beside the data path; a change waits behind it"
# A second process holds the store's writer lock (mdb_load reading a pipe
# that stays open, as a wedged tool would), so the import is running for as
# long as this script says, on any machine: engine reads must still be
# answered, and a change sent meanwhile must wait behind the import.
HDR='VERSION=3\nformat=bytevalue\ndatabase=waves\ntype=btree\nHEADER=END\n'
held() { # 0 when a write to the store cannot start within 0.3 s
	printf "${HDR}DATA=END\n" | timeout 0.3 mdb_load -s waves "$T/state"
	[ $? = 124 ]
}
# floe is the store's only writer by design: what floe itself writes on
# its loop meanwhile (the reader inventory of the reads above) goes to
# the store first, so that only the import waits on the held lock.
curl -s -o /dev/null --unix-socket "$SOCK" "http://floe/readers?object=db.bunnies"
mkfifo "$T/hold"
mdb_load -s waves "$T/state" <"$T/hold" &
HOLD=$!
exec 7>"$T/hold"
printf "$HDR" >&7
for _ in $(seq 50); do held && break; done
held && ok "the writer lock is held" || bad "the writer lock is not held"

BIG=${IMPORT_BIG_N:-300000}
awk -v n="$BIG" 'BEGIN {
	for (i = 1; i <= n; i++)
		printf "{\"object\":\"big.t%07d\",\"wave\":%d}\n", i, i % 10 + 30
}' >"$T/big.jsonl"
SEQ=$(last_seq)
"$FLOECTL" -s "$SOCK" route import "$T/big.jsonl" >"$T/big.out" 2>&1 &
IMP=$!
imports() { # the imports /status shows running or queued
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
		jq -r '.admin.imports // 0'
}
for _ in $(seq 100); do [ "$(imports)" -ge 1 ] && break; sleep 0.1; done
expect_eq "the import is running" 1 "$(imports)"
"$FLOECTL" -s "$SOCK" route set db.during 3 >"$T/during.out" 2>&1 &
CHG=$!
# A change whose client gives up while it waits is dropped.
curl -s -o /dev/null --max-time 0.3 --unix-socket "$SOCK" \
	-H 'Content-Type: application/json' \
	--data '{"object":"db.gaveup","wave":3}' http://floe/routes
during=0 slowest=0
for _ in $(seq 20); do
	s=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 "$BASE$TBL")
	[ "${s% *}" = 200 ] && during=$((during + 1))
	slowest=$(awk -v a="$slowest" -v b="${s#* }" 'BEGIN { print (b > a ? b : a) }')
done
expect_eq "engine reads answered while the import runs" 20 "$during"
awk -v s="$slowest" 'BEGIN { exit !(s < 1) }' &&
	ok "the slowest of them took ${slowest}s" ||
	bad "an engine read took ${slowest}s while the import ran"
expect_eq "the import is still running" 1 "$(imports)"
# Those reads were noted in the reader inventory, which flushes every 5 s:
# the flush must wait for the import, not hold the loop on the lock.
sleep 5.5
s=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 3 "$BASE$TBL")
expect_eq "an engine read past the inventory's flush time" 200 "${s% *}"
expect_eq "the import is still running past it" 1 "$(imports)"
waiting() {
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
		jq .admin.changes_waiting
}
# The abandoned change leaves the queue once floe sees its client gone.
for _ in $(seq 50); do [ "$(waiting)" = 1 ] && break; sleep 0.1; done
expect_eq "the change waits behind it, the abandoned one is dropped" 1 \
	"$(waiting)"
kill -0 "$CHG" 2>/dev/null && ok "floectl route set is waiting" ||
	bad "floectl route set returned while the import ran"

printf 'DATA=END\n' >&7
exec 7>&-
wait "$HOLD" || bad "the lock holder failed"
wait "$IMP"
expect_eq "the import lands" "$BIG set, 0 unchanged" "$(cat "$T/big.out")"
wait "$CHG"
expect_eq "the change sent meanwhile lands" "db.during -> wave 3" \
	"$(cat "$T/during.out")"
curl -s --unix-socket "$SOCK" "http://floe/events?after=$SEQ" >"$T/ev"
expect_eq "after the import, in the order sent" "route.import route.set" \
	"$(jq -r '[.events[].type] | join(" ")' "$T/ev")"
ctl_ok "resolve the abandoned change" --json resolve db.gaveup &&
	expect_eq "a change abandoned while it waited is not applied" \
		unassigned "$(jq -r .why "$T/ctl")"
expect_eq "no change waits once the import is done" 0 "$(waiting)"

echo "== a wave's objects in pages"
curl -s --unix-socket "$SOCK" http://floe/waves/30 >"$T/w30whole"
"$FLOECTL" -s "$SOCK" --json wave show 30 >"$T/w30" 2>&1
jq -e --slurpfile w "$T/w30whole" --argjson n $((BIG / 10)) \
	'(.objects | length == $n) and .objects == $w[0].objects
	and (has("next") | not) and .state == "warehouse"' "$T/w30" >/dev/null &&
	ok "floectl wave show 30: its $((BIG / 10)) objects, pages joined in order" ||
	bad "wave show 30: $(head -c 300 "$T/w30")"
curl -s --unix-socket "$SOCK" 'http://floe/waves/30?limit=1000' >"$T/wp1"
jq -e --slurpfile w "$T/w30whole" '(.objects | length == 1000)
	and .next == .objects[999] and .objects == $w[0].objects[0:1000]' \
	"$T/wp1" >/dev/null && ok "GET /waves/30?limit=1000: a page and next" ||
	bad "wave page: $(jq -c '{n: (.objects | length), next}' "$T/wp1")"
finish
