#!/bin/bash
# Integration 57: the memo of checked answers. A LoadTable answer byte for
# byte the last one checked for its table is neither checked nor
# rewritten again (counted in memo_hits), and is still sent merged and
# rewritten as this client asked; one byte different anywhere, at the
# same length, is checked as always: a 502 naming the catalog, with the
# offset of the wrong byte, counted for the error trigger. The good bytes
# again: a 200 with the merged config. The same for a large answer, which
# is compared with the memo only until it is streamed, and then passed
# on with the edits its rewrite made the last time, by the same rules:
# byte for byte what floe sends without the memo. What the memo holds,
# in GET /status and /metrics: an entry per side and table loaded, its
# bytes within check_memo_size; nothing once it is 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 57m
catalog warehouse
catalog lakehouse --prefix lhp
POLICY_EXTRA="error_window = 20s
error_min_requests = 10
error_ratio = 2
error_floor = 1%"
write_conf
start_floe

A=/v1/routed/namespaces/db/tables/athena
LH=http://127.0.0.1:${CAT_PORT[lakehouse]}
ctl_ok "route" route set db.athena 1
ctl_ok "flip" wave flip 1 lakehouse

# memo_hits SIDE: the catalog's count of answers not checked again.
memo_hits() {
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
		jq ".catalogs.$1.memo_hits"
}
# fault_file NAME FILE: the fault rule in FILE (too large for an argument).
fault_file() {
	curl -s --max-time 5 -o /dev/null -H 'Content-Type: application/json' \
		--data-binary @"$2" "http://127.0.0.1:${CAT_PORT[$1]}/_test/fault"
}
failures() {
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
		jq ".catalogs.$1.failures"
}
# memo: GET /status's memo; memo_metric NAME: /metrics's NAME.
memo() {
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
		jq -c .memo
}
memo_metric() {
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/metrics |
		awk -v n="$1" '$1 == n { print $2 }'
}
# memo_agrees: /metrics shows what /status does.
memo_agrees() {
	local m
	m=$(memo)
	expect_eq "$1: /metrics as /status" \
		"$(jq -r '"\(.bytes) \(.entries) \(.budget)"' <<<"$m")" \
		"$(memo_metric floe_memo_bytes) $(memo_metric floe_memo_entries) $(memo_metric floe_memo_budget_bytes)"
}

# status_says DESC ERE: floectl status's memory line ends in ERE.
status_says() {
	ctl status
	grep -Eq "^memory +cache .*; $2\$" "$T/ctl" && ok "$1" ||
		bad "$1: $(grep -E '^memory' "$T/ctl" || head -c 400 "$T/ctl")"
}

expect_eq "nothing loaded: the memo is empty, its budget check_memo_size" \
	'{"budget":16777216,"bytes":0,"entries":0}' "$(memo)"
memo_agrees "... empty"
status_says "... floectl status: the memo empty" \
	'memo 0 B of 16\.0 MiB, 0 entries'

# A 4 KB LoadTable result with an upstream URL to rewrite, and the same
# length with one byte wrong in its middle.
python3 - "$T" "$LH" <<'PY' || bad "bodies"
import json, sys
t, lh = sys.argv[1], sys.argv[2]
good = json.dumps({
    "metadata-location": "s3://b/db/athena/metadata/v1.json",
    "metadata": {"format-version": 2, "location": "s3://b/db/athena",
                 "properties": {"pad": "p" * 3500, "n": -1.5e3}},
    "plan": lh + "/v1/lhp/namespaces/db/tables/athena/plan",
    "config": {"table.own": "x"}}, separators=(",", ":"))
i = good.index('"n":') + 3
bad = good[:i] + "?" + good[i + 1:]
assert len(bad) == len(good)
def rule(body, n):
    return json.dumps({"match": "athena", "body": body, "count": n})
open(t + "/good.rule", "w").write(rule(good, 3))
open(t + "/good1.rule", "w").write(rule(good, 1))
open(t + "/bad.rule", "w").write(rule(bad, 1))
open(t + "/bad3.rule", "w").write(rule(bad, 3))
open(t + "/bad.at", "w").write("at byte %d of %d" % (i, len(bad)))
PY

fault lakehouse "$(cat "$T/good.rule")"
h0=$(memo_hits lakehouse)
for i in 1 2 3; do
	get $A
	cp "$T/b" "$T/b$i"
	[ "$S" = 200 ] || bad "load $i: $(last)"
done
expect_jq "the same answer three times: merged" 200 \
	'.config["floe-test.catalog"] == "lakehouse" and .config["table.own"] == "x"'
expect_jq "... its URL pointed back at floe" 200 \
	".plan == \"$BASE/v1/lakehouse/namespaces/db/tables/athena/plan\""
cmp -s "$T/b1" "$T/b2" && cmp -s "$T/b1" "$T/b3" &&
	ok "... byte for byte the same each time" || bad "... the answers differ"
expect_eq "... the 2nd and 3rd not checked again" $((h0 + 2)) \
	"$(memo_hits lakehouse)"
jq -e '.entries == 1 and .bytes > 3500 and .bytes <= .budget' <<<"$(memo)" \
	>/dev/null && ok "... the memo holds one table, its answer's bytes" ||
	bad "... the memo: $(memo)"
get /v1/routed/namespaces/db/tables/bunnies
get /v1/routed/namespaces/db/tables/bunnies
expect_eq "another table, loaded twice: the memo holds two" 2 \
	"$(memo | jq .entries)"
memo_agrees "... two tables"

# One byte wrong, the same length: checked, 502, the offset exact.
f0=$(failures lakehouse)
fault lakehouse "$(cat "$T/bad.rule")"
get $A
expect_error "one byte wrong: 502 naming the catalog" 502 \
	BadGatewayException "lakehouse"
expect_jq "... with the offset of the wrong byte" 502 \
	".error.message | contains(\"$(cat "$T/bad.at")\")"
grep -aq '"n"?' "$T/b" && bad "... the wrong body was passed on" ||
	ok "... nothing of it passed on"
expect_eq "... a lakehouse failure" $((f0 + 1)) "$(failures lakehouse)"
expect_eq "... not a memo hit" $((h0 + 2)) "$(memo_hits lakehouse)"

# The good bytes again: the memo still holds them.
fault lakehouse "$(cat "$T/good1.rule")"
get $A
expect_status "the good answer again: 200" 200
cmp -s "$T/b1" "$T/b" && ok "... as before, merged and rewritten" ||
	bad "... other bytes: $(head -c 200 "$T/b")"
expect_eq "... not checked again" $((h0 + 3)) "$(memo_hits lakehouse)"

# Another Host: the rewrite's output is not reused (floe's base differs).
fault lakehouse "$(cat "$T/good1.rule")"
get $A -H "Host: floe.example:8181"
expect_jq "another Host: its own base in the URL" 200 \
	'.plan == "http://floe.example:8181/v1/lakehouse/namespaces/db/tables/athena/plan" and .config["floe-test.catalog"] == "lakehouse"'
expect_eq "... the verdict reused" $((h0 + 4)) "$(memo_hits lakehouse)"
fault lakehouse "$(cat "$T/good1.rule")"
get $A
cmp -s "$T/b1" "$T/b" && ok "... and the first base again after it" ||
	bad "... other bytes: $(head -c 200 "$T/b")"

# Counted for the error trigger: 3 more wrong answers make 4 errors in 10
# reads of wave 1 on the lakehouse: rolled back.
fault lakehouse "$(cat "$T/bad3.rule")"
for i in 1 2 3; do get $A; done
expect_eq "the 4th wrong answer was a 502 too" 502 "$S"
expect_eq "the wrong answers roll the wave back" rolled_back \
	"$(wave_state 1)"

# A large answer (now the warehouse's), streamed to HTTP/1.1 clients and
# whole to HTTP/1.0 ones. The first, streamed, is checked with its
# rewrite in one pass and kept as it passes; the same bytes again, either
# way, are not checked again (a stream compares them and rewrites
# unchecked). One byte wrong near its end: the pool checks from the first
# difference, and the stream is cut short at that byte. Another valid
# answer is checked from its difference, passed on whole, and kept.
python3 - "$T" <<'PY' || bad "large bodies"
import json, sys
t = sys.argv[1]
good = '{"metadata-location":"s3://b/m.json","metadata":{"format-version":2,' \
    '"properties":{"pad":"' + "x" * (2 << 20) + '","n":-1.5e3}},"config":{}}'
bad = good.replace('"n":-1.5e3', '"n":-1.5e!')
other = good.replace('"n":-1.5e3', '"n":-2.5e3')
assert len(bad) == len(good) == len(other)
def rule(body):
    return json.dumps({"match": "athena", "body": body, "count": 1})
open(t + "/lgood.rule", "w").write(rule(good))
open(t + "/lbad.rule", "w").write(rule(bad))
open(t + "/lother.rule", "w").write(rule(other))
open(t + "/lbad.at", "w").write("at byte %d" % (bad.index('"n":') + 4))
PY
h0=$(memo_hits warehouse)
fault_file warehouse "$T/lgood.rule"
get $A
expect_jq "a 2 MB answer: 200, merged" 200 \
	'.metadata.properties.n == -1500 and .config["floe-test.catalog"] == "warehouse"'
expect_eq "... streamed" chunked "$(hdr Transfer-Encoding)"
cp "$T/b" "$T/lb1"
fault_file warehouse "$T/lgood.rule"
get $A -0
cmp -s "$T/lb1" "$T/b" && ok "the same to HTTP/1.0: whole, the same bytes" ||
	bad "the same to HTTP/1.0: $(last)"
expect_eq "... kept as it was streamed: not checked again" $((h0 + 1)) \
	"$(memo_hits warehouse)"
fault_file warehouse "$T/lgood.rule"
get $A
expect_eq "the same streamed again: chunked" chunked "$(hdr Transfer-Encoding)"
cmp -s "$T/lb1" "$T/b" && ok "... the same bytes" || bad "... other bytes"
expect_eq "... not checked again" $((h0 + 2)) "$(memo_hits warehouse)"
f0=$(failures warehouse)
fault_file warehouse "$T/lbad.rule"
: >"$T/b"
curl -s -o "$T/b" --max-time 20 "$BASE$A"
rc=$?
expect_eq "a wrong byte near its end, streamed: cut short (curl: 18)" 18 "$rc"
grep -aq '1.5e!' "$T/b" && bad "... the wrong byte was passed on" ||
	ok "... not passed on"
expect_eq "... a warehouse failure" $((f0 + 1)) "$(failures warehouse)"
grep -q "cut short: answered 2xx with a body that is not JSON ($(cat "$T/lbad.at"))" \
	"$T/floe.log" && ok "... logged with the offset of the wrong byte" ||
	bad "... no log line: $(grep 'cut short' "$T/floe.log")"
fault_file warehouse "$T/lbad.rule"
get $A -0
expect_error "the same to HTTP/1.0: 502" 502 BadGatewayException \
	"$(cat "$T/lbad.at")"
fault_file warehouse "$T/lother.rule"
get $A
expect_jq "another valid answer, streamed: 200, whole" 200 \
	'.metadata.properties.n == -2500 and .config["floe-test.catalog"] == "warehouse"'
cp "$T/b" "$T/lb2"
expect_eq "... checked" $((h0 + 2)) "$(memo_hits warehouse)"
fault_file warehouse "$T/lother.rule"
get $A -0
cmp -s "$T/lb2" "$T/b" && ok "... kept: the same to HTTP/1.0" ||
	bad "... to HTTP/1.0: $(last)"
expect_eq "... not checked again" $((h0 + 3)) "$(memo_hits warehouse)"
jq -e '.entries == 3 and .bytes > 2097152 and .bytes <= .budget' \
	<<<"$(memo)" >/dev/null &&
	ok "the table on the other side too: 3 entries, the 2 MB answer's bytes" ||
	bad "the memo after the 2 MB answer: $(memo)"
status_says "... floectl status: over 2 MiB held, 3 entries" \
	'memo [2-9]\.[0-9] MiB of 16\.0 MiB, 3 entries'

# A 2 MB answer with upstream URLs (one at the top, one deep in it, and
# one that only begins like them) and a config to merge into: the same
# bytes streamed with another Host (other parameters: the memo's edits
# are not reused, the answer is rewritten), again with it (the edits
# reused), with the first Host again; then changed after the memo's
# bytes in a URL, and where a URL prefix begins. Each is compared below
# with what a floe without the memo sends.
WH=http://127.0.0.1:${CAT_PORT[warehouse]}
python3 - "$T" "$WH" <<'PY' || bad "large bodies with URLs"
import json, sys
t, wh = sys.argv[1], sys.argv[2]
def body(u, near):
    return json.dumps({
        "metadata-location": wh + "/v1/namespaces/db/tables/athena/m.json",
        "metadata": {"format-version": 2, "properties": {
            "pad": "x" * (2 << 20), "u": u, "near": near}},
        "config": {"table.own": "y"}}, separators=(",", ":"))
good = body(wh + "/v1/namespaces/db/x", wh + "/v2/no")
inurl = body(wh + "/v1/namespaces/db/y", wh + "/v2/no")
atpre = body(wh + "/v1/namespaces/db/x", wh + "/v1/no")
for n, b in (("u", good), ("uinurl", inurl), ("uatpre", atpre)):
    open(t + "/%s.rule" % n, "w").write(
        json.dumps({"match": "athena", "body": b, "count": 1}))
PY
HOST2="Host: floe.example:8181"
h1=$(memo_hits warehouse)
for k in 1:u: 2:u:"$HOST2" 3:u:"$HOST2" 4:u: 5:u: 6:uinurl: 7:uatpre:; do
	IFS=: read -r i rule host <<<"$k"
	fault_file warehouse "$T/$rule.rule"
	if [ -n "$host" ]; then get $A -H "$host"; else get $A; fi
	[ "$S" = 200 ] && [ "$(hdr Transfer-Encoding)" = chunked ] ||
		bad "URLs, load $i: $(last)"
	cp "$T/b" "$T/u$i"
done
jq -e ".metadata.properties.u == \"$BASE/v1/warehouse/namespaces/db/x\" and .metadata.properties.near == \"$WH/v2/no\" and .config[\"table.own\"] == \"y\" and .config[\"floe-test.catalog\"] == \"warehouse\"" \
	"$T/u1" >/dev/null &&
	ok "a 2 MB answer with URLs, streamed: rewritten, merged" ||
	bad "a 2 MB answer with URLs: $(head -c 300 "$T/u1")"
jq -e ".metadata.properties.near == \"$BASE/v1/warehouse/no\"" "$T/u7" \
	>/dev/null && ok "... changed where a URL prefix begins: rewritten" ||
	bad "... changed where a URL prefix begins: not rewritten"
expect_eq "... the same bytes 4 times after the first: not checked again" \
	$((h1 + 4)) "$(memo_hits warehouse)"
jq -e ".metadata.properties.u == \"http://floe.example:8181/v1/warehouse/namespaces/db/x\"" \
	"$T/u3" >/dev/null && ok "... with another Host: its base" ||
	bad "... with another Host: $(head -c 300 "$T/u3")"
cmp -s "$T/u2" "$T/u3" && ok "... the same bytes each time with it" ||
	bad "... with it, other bytes"
cmp -s "$T/u1" "$T/u4" && cmp -s "$T/u1" "$T/u5" &&
	ok "... and with the first again" || bad "... the first Host: other bytes"

# check_memo_size = 0: nothing kept, every answer checked.
sed -i 's/^\[floe\]$/[floe]\ncheck_memo_size = 0/' "$T/floe.conf"
kill -HUP "$FLOE_PID"
for i in $(seq 100); do
	grep -q 'applied (generation 2)' "$T/floe.log" && break
	sleep 0.1
done
grep -q 'applied (generation 2)' "$T/floe.log" && ok "reloaded" ||
	bad "no reload: $(tail -n 3 "$T/floe.log")"
for v in -0 -0 --http1.1; do
	fault_file warehouse "$T/lother.rule"
	get $A $v
	[ "$S" = 200 ] || bad "check_memo_size = 0: $(last)"
done
expect_eq "check_memo_size = 0 (reloaded): every answer checked" \
	$((h1 + 4)) "$(memo_hits warehouse)"
expect_eq "... the memo empty" '{"budget":0,"bytes":0,"entries":0}' \
	"$(memo)"
memo_agrees "... empty"
status_says "... floectl status: the memo off" 'memo off'
cmp -s "$T/lb2" "$T/b" && ok "... the same answer" || bad "... other bytes"
for k in 1:u: 2:u:"$HOST2" 6:uinurl: 7:uatpre:; do
	IFS=: read -r i rule host <<<"$k"
	fault_file warehouse "$T/$rule.rule"
	if [ -n "$host" ]; then get $A -H "$host"; else get $A; fi
	cmp -s "$T/u$i" "$T/b" &&
		ok "URLs, load $i: what floe sends without the memo" ||
		bad "URLs, load $i: without the memo, other bytes: $(cmp "$T/u$i" "$T/b")"
done
finish
