#!/bin/bash
# The reconcile ledger through floectl and POST/GET /ledger: one record,
# JSON-lines imports (100,000 records in one import; all or nothing, the
# first bad line named), the same record stored once, records out of
# order, a different record for a stored (object, ts) refused, and the
# events every import and refusal leaves. Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
lib_init 32
catalog warehouse
catalog lakehouse
write_conf
start_floe

# api METHOD PATH [CURL ARGS]: the admin API; status in S, body in $T/b.
api() {
	local m=$1 p=$2
	shift 2
	S=$(curl -s -o "$T/b" -w '%{http_code}' --max-time 60 \
		--unix-socket "$SOCK" -X "$m" "$@" "http://floe$p")
}
# count OBJECT: how many records the ledger holds for OBJECT.
count() {
	api GET "/ledger?object=$1&limit=1"
	jq -r .total "$T/b"
}
# rec OBJECT TS [CLEAN|gap|stale|value-drift]: one JSON line.
rec() {
	case ${3:-clean} in
	clean) echo "{\"object\":\"$1\",\"ts\":\"$2\",\"count_match\":true,\"aggregate_match\":true,\"hash_match\":true,\"bucket\":\"clean\",\"source\":\"recon\"}" ;;
	*) echo "{\"object\":\"$1\",\"ts\":\"$2\",\"count_match\":true,\"aggregate_match\":false,\"hash_match\":false,\"bucket\":\"$3\",\"source\":\"recon\"}" ;;
	esac
}

echo "== ledger add and show"
ctl_ok "add" ledger add db.orders --count ok --aggregate ok --hash ok \
	--at 2026-01-01T06:00:00Z --source nightly &&
	grep -q 'db.orders at 2026-01-01T06:00:00.000Z: recorded' "$T/ctl" &&
	ok "ledger add records one"
ctl_ok "add again" ledger add db.orders --count ok --aggregate ok --hash ok \
	--at 2026-01-01T06:00:00Z --source nightly &&
	grep -q 'already recorded' "$T/ctl" && ok "the same record twice is stored once"
expect_eq "one record stored" 1 "$(count db.orders)"
ctl ledger add db.orders --count ok --aggregate fail --hash ok
expect_eq "a failing tier needs a bucket: exit 2" 2 "$RC"
grep -q 'needs a bucket' "$T/ctl" && ok "and says so" || bad "message: $(cat "$T/ctl")"
ctl ledger add db.orders --count maybe --aggregate ok --hash ok
expect_eq "ok|fail only" 2 "$RC"
ctl_ok "add a gap" ledger add db.orders --count ok --aggregate fail --hash fail \
	--bucket gap --at 2026-01-01T05:00:00Z
ctl_ok "show" ledger show db.orders
grep -q 'db.orders: 2 records' "$T/ctl" && ok "show counts" || bad "show: $(cat "$T/ctl")"
awk 'NR==3' "$T/ctl" | grep -q '2026-01-01T05:00:00.000Z.*FAIL.*gap' &&
	ok "show lists oldest first, a failing tier as FAIL" ||
	bad "show order: $(cat "$T/ctl")"
ctl_ok "show --json" --json ledger show db.orders
jq -e '.records | length == 2 and .[1].clean == true and .[1].source == "nightly" and .[0].bucket == "gap"' \
	"$T/ctl" >/dev/null && ok "show --json" || bad "show --json: $(cat "$T/ctl")"

echo "== import: out of order, duplicates, blank lines"
{
	rec db.items 2026-01-03T00:00:00Z
	rec db.items 2026-01-01T00:00:00Z
	echo
	rec db.items 2026-01-02T00:00:00Z stale
	rec db.items 2026-01-01T00:00:00Z
} >"$T/small.jsonl"
ctl_ok "import" ledger import "$T/small.jsonl" &&
	grep -q 'imported 4 records: 3 new, 1 already recorded' "$T/ctl" &&
	ok "import counts new and duplicate records"
ctl_ok "show items" --json ledger show db.items
jq -e '[.records[].ts] == ["2026-01-01T00:00:00.000Z","2026-01-02T00:00:00.000Z","2026-01-03T00:00:00.000Z"]' \
	"$T/ctl" >/dev/null && ok "records arrive out of order, read in time order" ||
	bad "order: $(cat "$T/ctl")"
ctl_ok "import from stdin" ledger import - <"$T/small.jsonl" &&
	grep -q '0 new, 4 already' "$T/ctl" && ok "import - reads stdin"

echo "== import: all or nothing"
seq0=$(curl -s --unix-socket "$SOCK" http://floe/events?limit=1 | jq .last_seq)
{
	rec db.new 2026-01-01T00:00:00Z
	rec db.new 2026-01-02T00:00:00Z
	echo '{"object":"db.new","ts":"2026-01-03T00:00:00Z","count_match":true,"aggregate_match":true}'
	rec db.new 2026-01-04T00:00:00Z
} >"$T/bad.jsonl"
ctl ledger import "$T/bad.jsonl"
expect_eq "a bad line: exit 2" 2 "$RC"
grep -q 'line 3: field "hash_match" is required; nothing was imported' "$T/ctl" &&
	ok "the first bad line is named with its reason" || bad "message: $(cat "$T/ctl")"
expect_eq "nothing of it was stored" 0 "$(count db.new)"
printf '%s\n%s\n' "$(rec db.new 2026-01-01T00:00:00Z)" '{"object":' >"$T/in"
ctl ledger import - <"$T/in"
expect_eq "a line that is not JSON: exit 2" 2 "$RC"
grep -q 'line 2: not JSON' "$T/ctl" && ok "names the line that is not JSON" || bad "$(cat "$T/ctl")"
rec db.new 2999-01-01T00:00:00Z >"$T/in"
ctl ledger import - <"$T/in"
grep -q 'line 1: ts "2999-01-01T00:00:00Z" is in the future' "$T/ctl" &&
	ok "a record from the future is refused" || bad "$(cat "$T/ctl")"
ctl ledger import "$T/nonexistent"
expect_eq "a missing file: exit 2" 2 "$RC"
seq1=$(curl -s --unix-socket "$SOCK" http://floe/events?limit=1 | jq .last_seq)
expect_eq "a bad import leaves no event" "$seq0" "$seq1"

echo "== a different record for a stored (object, ts) is refused"
{
	rec db.items 2026-01-05T00:00:00Z
	rec db.items 2026-01-03T00:00:00Z value-drift
} >"$T/in"
ctl ledger import - <"$T/in"
expect_eq "conflict: exit 1" 1 "$RC"
grep -q 'line 2: db.items at 2026-01-03T00:00:00.000Z already has a different record; the ledger is append-only' \
	"$T/ctl" && ok "the conflict names its line" || bad "$(cat "$T/ctl")"
expect_eq "nothing of that import was stored" 3 "$(count db.items)"
curl -s --unix-socket "$SOCK" "http://floe/events?after=$seq1" >"$T/ev"
jq -e '[.events[] | select(.type == "ledger.refused" and .object == "db.items" and (.actor | startswith("uid ")))] | length == 1' \
	"$T/ev" >/dev/null && ok "the refusal is an event" || bad "events: $(cat "$T/ev")"

echo "== the admin API"
api POST /ledger -H 'Content-Type: application/json' --data-binary \
	"[$(rec db.arr 2026-01-01T00:00:00Z),$(rec db.arr 2026-01-02T00:00:00Z gap)]"
expect_jq "POST /ledger takes a JSON array" 200 '.records == 2 and .added == 2 and .duplicates == 0'
api POST /ledger --data-binary "[$(rec db.arr 2026-01-09T00:00:00Z),{\"object\":\"db.arr\"}]"
expect_error "a bad element names its record" 400 BadRequestException "record 2: field"
api POST /ledger --data-binary ''
expect_error "an empty body" 400 BadRequestException "no records"
api GET /ledger
expect_error "GET /ledger needs the object" 400 BadRequestException "give the object"
api GET '/ledger?object=db.*'
expect_error "GET /ledger of a rule" 400 BadRequestException "tables, not rules"
api GET '/ledger?object=db.arr&limit=1'
expect_jq "limit keeps the newest" 200 '.total == 2 and (.records | length) == 1 and .records[0].bucket == "gap"'
api DELETE /ledger
expect_error "DELETE /ledger" 405 MethodNotAllowedException

echo "== 100,000 records in one import"
node -e '
	const t0 = Date.parse("2026-01-01T00:00:00Z");
	const out = [];
	for (let i = 0; i < 100000; i++) {
		const clean = i % 10 !== 0;
		out.push(JSON.stringify({object: "big.t" + (i % 1000),
			ts: new Date(t0 + i * 1000).toISOString(),
			count_match: true, aggregate_match: clean,
			hash_match: clean, bucket: clean ? "clean" : "gap",
			source: "bulk"}));
	}
	require("fs").writeFileSync(process.argv[1], out.join("\n") + "\n");' "$T/big.jsonl"
start=$(date +%s%N)
ctl_ok "import 100,000" ledger import "$T/big.jsonl" &&
	grep -q 'imported 100000 records: 100000 new' "$T/ctl" && ok "100,000 records in one import"
echo "     (took $((($(date +%s%N) - start) / 1000000)) ms)"
expect_eq "each object got its share" 100 "$(count big.t7)"
curl -s --unix-socket "$SOCK" "http://floe/events?after=$seq1" >"$T/ev"
jq -e '[.events[] | select(.type == "ledger.import" and .records == 100000)] | length == 1' \
	"$T/ev" >/dev/null && ok "one event for the whole import" || bad "events"
# The same file again: all duplicates, and still one txn.
ctl_ok "import again" ledger import "$T/big.jsonl" &&
	grep -q '0 new, 100000 already recorded' "$T/ctl" && ok "re-import stores nothing twice"
# A bad last line: none of the 100,000 is stored.
{ head -n 99999 "$T/big.jsonl" | sed 's/big\./bigger./'; echo '{"object":"bigger.t1","ts":"x"}'; } >"$T/big-bad.jsonl"
ctl ledger import "$T/big-bad.jsonl"
expect_eq "bad line 100000: exit 2" 2 "$RC"
grep -q 'line 100000: ' "$T/ctl" && ok "line 100000 named" || bad "$(cat "$T/ctl")"
expect_eq "none of the 99,999 good lines was stored" 0 "$(count bigger.t7)"

echo "== survives a restart"
stop_floe
start_floe
expect_eq "records are durable" 100 "$(count big.t7)"
finish
