#!/bin/bash
# Integration 56: the status page in a real browser. 10,050 events over
# 100 waves, then a canary in two steps, a wave on the lakehouse, an
# errors rollback (40 of 100 reads), a reconcile rollback, an operator
# rollback whose reason is HTML, and a wave frozen and retired. Debian's
# chromium, headless, loads the page and dumps its DOM: the waves, their
# states, the rollbacks with trigger and evidence, the timeline and the
# escaped reason are there; the page is paged (50 waves, 100 events) and
# stays small and quick. Its "Memory and output" section shows GET
# /status's figures: the output budget (not warned), the cache off, the
# memo's entries after three LoadTables; not on a wave's page. Screenshots
# at a desktop and a phone size go to $FLOE_TEST_LOGDIR/56-status-page/
# (tests/run.sh sets it). Then a floe of two workers: the page's cache and
# memo are /status's, its workers' summed; and a floe with a 256 KiB
# output_budget that clients do not read: the output warned, a refused
# request counted, the memo off (screenshot: output-warned.png).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 56
command -v chromium >/dev/null || {
	echo "chromium is needed: make deps"
	exit 1
}
SHOTS=${FLOE_TEST_LOGDIR:-$T}/56-status-page
mkdir -p "$SHOTS"
# The store on tmpfs: 10,000 synced transactions in seconds, not minutes.
SHM=$(mktemp -d /dev/shm/floe-56.XXXXXX)
trap 'lib_cleanup; rm -rf "$SHM"' EXIT
catalog warehouse
catalog lakehouse --prefix lhp
MPORT=$(free_port)
M=http://127.0.0.1:$MPORT
FLOE_EXTRA="metrics_listen = 127.0.0.1:$MPORT"
POLICY_EXTRA="error_min_requests = 10
decommission_min_clean = 0
grace = 0s"
write_conf
sed -i "s#^state_dir .*#state_dir = $SHM/state#" "$T/floe.conf"
start_floe

if node tests/integration/wave-events.js "$SOCK" 10050 8 100 >"$T/bulk" 2>&1; then
	ok "10,050 events over waves 8..107: $(cat "$T/bulk")"
else
	bad "bulk events: $(cat "$T/bulk")"
fi
for w in 2 3 4 5 6 7; do ctl_ok "route $w" route set "db.t$w" "$w"; done
ctl_ok "canary 10%" wave flip 2 lakehouse --canary 10
ctl_ok "canary 30%" wave flip 2 lakehouse --canary 30
ctl_ok "flip 3" wave flip 3 lakehouse
ctl_ok "flip 4" wave flip 4 lakehouse
ctl wave report-errors 4 --errors 40 --total 100
expect_eq "40 of 100 reads roll wave 4 back" rolled_back "$(wave_state 4)"
ctl_ok "flip 5" wave flip 5 lakehouse
admin POST /ledger "$(ledger_rec db.t5 gap)"
expect_eq "a gap rolls wave 5 back" rolled_back "$(wave_state 5)"
ctl_ok "flip 6" wave flip 6 lakehouse
ctl_ok "operator rollback" wave rollback 6 \
	--reason '<script>alert("x")</script> & <b>co</b>'
ctl_ok "flip 7" wave flip 7 lakehouse
ctl_ok "signoff 7" wave signoff 7 --by sre
ctl_ok "freeze 7" wave freeze 7
ctl_ok "retire 7" wave retire 7

# Three LoadTables: the memo holds their answers.
for t in athena bunnies java_bunnies; do
	get "/v1/routed/namespaces/db/tables/$t"
	expect_status "LoadTable db.$t" 200
done

# The page as floe sends it: size and time at 106 waves, 10,000+ events.
t=$(curl -s -o "$T/page.html" -w '%{time_total}' --max-time 10 "$M/")
size=$(wc -c <"$T/page.html")
echo "page: $size bytes in ${t}s"
[ "$size" -lt 300000 ] && ok "the first page is small ($size bytes)" ||
	bad "the page is $size bytes"
awk -v t="$t" 'BEGIN { exit !(t < 1.0) }' && ok "and quick (${t}s)" ||
	bad "the page took ${t}s"
grep -q '<meta http-equiv="refresh"' "$T/page.html" &&
	ok "it refreshes itself" || bad "no refresh"
if grep -qiE '<script|<link|src=|https?://[a-z]' "$T/page.html"; then
	bad "a script or an external asset: $(grep -oiE '<script|<link|src=[^ ]*|https?://[a-z][^ "]*' "$T/page.html" | head -3)"
else
	ok "no script and no external asset"
fi

# chrome ARGS...: headless chromium, bounded, run in $T.
chrome() {
	(cd "$T" && timeout 90 chromium --headless=new --no-sandbox \
		--disable-gpu --disable-dev-shm-usage --no-first-run \
		--user-data-dir="$T/chrome" "$@")
}

chrome --dump-dom "$M/" >"$T/dom.html" 2>"$T/chrome.err"
[ -s "$T/dom.html" ] && ok "chromium loads the page" ||
	bad "chromium: $(tail -5 "$T/chrome.err")"
# dom_has DESC PATTERN: the rendered DOM matches the extended regex.
dom_has() {
	if grep -qE "$2" "$T/dom.html"; then ok "$1"; else bad "$1: /$2/ not in the DOM"; fi
}
dom_has "wave 2 is a canary at 30%" 'data-wave="2" data-state="canary"'
dom_has "the canary steps are on its timeline" 'canary step</b> to 30%'
dom_has "wave 3 is on the lakehouse" 'data-wave="3" data-state="lakehouse"'
dom_has "wave 4 is rolled back" 'data-wave="4" data-state="rolled_back"'
dom_has "its rollback: trigger errors, 40.00% vs 2.00%" \
	'trigger <b class="trig">errors</b> · measured 40.00% vs threshold 2.00%'
dom_has "wave 5: trigger reconcile, measured gap" \
	'trigger <b class="trig">reconcile</b> · measured gap'
dom_has "wave 6: the operator's rollback" 'trigger <b class="trig">operator</b>'
dom_has "wave 7 is retired" 'data-wave="7" data-state="retired"'
dom_has "the catalogs' health" 'id="cat-lakehouse"'
dom_has "the escaped reason is text" '&lt;script&gt;alert\("x"\)&lt;/script&gt; &amp; &lt;b&gt;co&lt;/b&gt;'
if grep -q '<script' "$T/dom.html"; then
	bad "the reason became a script element"
else
	ok "the reason did not become markup"
fi
n=$(grep -o 'class="card s-[a-z_]*" id="wave-' "$T/dom.html" | wc -l)
attn=$(sed -n 's/.*id="attention"\(.*\)id="waves".*/\1/p' "$T/dom.html" |
	grep -o 'id="wave-' | wc -l)
expect_eq "50 wave cards a page, plus the $attn that need a look" \
	$((50 + attn)) "$n"
dom_has "the rolled-back waves need a look" 'id="attention".*data-wave="4"'
dom_has "pages: 3 of them" '<a href="/\?page=3">3</a>'

# status: GET /status on the admin socket into $T/st.json.
status() {
	curl -s -o "$T/st.json" --max-time 10 --unix-socket "$SOCK" \
		http://floe/status
}
# mem_attr FILE ID NAME: the data-NAME of the page's element ID in FILE.
mem_attr() {
	grep -o "id=\"$2\"[^>]*" "$1" | head -1 |
		sed -n "s/.* data-$3=\"\([^\"]*\)\".*/\1/p"
}
# mem_text FILE ID: the text of the page's card ID in FILE, tags dropped.
mem_text() {
	grep -o "id=\"$2\".*" "$1" | sed 's#</div>.*##; s/<[^>]*>/ /g' |
		tr -s ' '
}
# mem_agrees FILE DESC: the section in FILE has /status's ($T/st.json)
# output budget and refusals, and the cache's and memo's budget and
# entries.
mem_agrees() {
	local k f
	for k in budget refused; do
		expect_eq "$2: output $k as in /status" \
			"$(jq ".output.$k" "$T/st.json")" \
			"$(mem_attr "$1" mem-output "$k")"
	done
	for f in cache memo; do
		for k in budget entries; do
			expect_eq "$2: $f $k as in /status" \
				"$(jq ".$f.$k" "$T/st.json")" \
				"$(mem_attr "$1" "mem-$f" "$k")"
		done
	done
}
status
mem_agrees "$T/dom.html" "the page"
expect_eq "three LoadTables: three answers in the memo" 3 \
	"$(mem_attr "$T/dom.html" mem-memo entries)"
expect_eq "the output is not warned" no \
	"$(mem_attr "$T/dom.html" mem-output warn)"
dom_has "... its card plain" '<div class="card" id="mem-output"'
dom_has "... held of 256.0 MiB, a percentage, a bar below 80 %" \
	'id="mem-output".*<dd>[0-9.]+ (B|KiB) of 256\.0 MiB \([0-9]+\.[0-9]%\)<span class="bar"><i class="" '
dom_has "... no request refused" '<dt>refused</dt><dd>0 requests \(503\)'
dom_has "the cache is off" 'id="mem-cache"[^>]*>.*<dd>off \(cache_size = 0\)'
t=$(mem_text "$T/dom.html" mem-memo)
grep -Eq ' held [0-9.]+ (B|KiB) of 16\.0 MiB entries 3 $' <<<"$t" &&
	ok "the memo: its bytes of check_memo_size, 3 entries" ||
	bad "the memo's card: $t"

chrome --dump-dom "$M/?page=3" >"$T/dom3.html" 2>/dev/null
grep -q 'data-wave="107"' "$T/dom3.html" && ok "page 3 has wave 107" ||
	bad "page 3: $(grep -o 'data-wave="[0-9]*"' "$T/dom3.html" | tail -3)"
chrome --dump-dom "$M/?wave=8" >"$T/dom8.html" 2>/dev/null
grep -q 'id="memory"' "$T/dom8.html" &&
	bad "a wave's page shows the memory section" ||
	ok "a wave's page leaves the memory section out"
expect_eq "wave 8's timeline: 100 events a page" 100 \
	"$(grep -o '<li class="ev' "$T/dom8.html" | wc -l)"
older=$(grep -o 'href="/?wave=8&amp;before=[0-9]*"' "$T/dom8.html" |
	sed 's/.*before=\([0-9]*\)"/\1/')
[ -n "$older" ] && ok "an older page (before=$older)" || bad "no older link"
curl -s -o "$T/w8b.html" "$M/?wave=8&before=$older"
expect_eq "the older page has the rest" 1 \
	"$(grep -o '<li class="ev' "$T/w8b.html" | wc -l)"
chrome --dump-dom "$M/?wave=4" >"$T/dom4.html" 2>/dev/null
grep -q 'data-type="wave.rollback"' "$T/dom4.html" &&
	grep -q 'lakehouse error rate 40.00% (40 of 100 reads' "$T/dom4.html" &&
	ok "wave 4's page: the rollback and its evidence" ||
	bad "wave 4: $(grep -o 'class="evidence">[^<]*' "$T/dom4.html")"

# png_ok DESC FILE WIDTH: a PNG of WIDTH pixels, more than 20 kB.
png_ok() {
	local w
	w=$(od -An -j16 -N4 -tu1 "$2" 2>/dev/null |
		awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
	if [ -f "$2" ] && [ "$(head -c 4 "$2" | od -An -c | tr -d ' ')" = \
		'211PNG' ] && [ "$(wc -c <"$2")" -gt 20000 ] && [ "$w" = "$3" ]; then
		ok "$1: $2, $(wc -c <"$2") bytes, ${w}px wide"
	else
		bad "$1: $2 ($(ls -l "$2" 2>&1), width $w)"
	fi
}
chrome --screenshot="$SHOTS/desktop.png" --window-size=1280,1800 \
	--hide-scrollbars "$M/" >/dev/null 2>&1
png_ok "desktop screenshot" "$SHOTS/desktop.png" 1280
chrome --screenshot="$SHOTS/phone.png" --window-size=390,1600 \
	--hide-scrollbars "$M/" >/dev/null 2>&1
png_ok "phone screenshot" "$SHOTS/phone.png" 390
chrome --screenshot="$SHOTS/wave4.png" --window-size=390,1200 \
	--hide-scrollbars "$M/?wave=4" >/dev/null 2>&1
png_ok "wave 4 on a phone" "$SHOTS/wave4.png" 390
stop_floe

# Two workers, the cache on: the master's page shows its workers' cache
# and memo summed, as its /status does (the figures a worker publishes
# on its tick: wait until both loads of each table are counted).
CACHE_SIZE=1M
FLOE_EXTRA="metrics_listen = 127.0.0.1:$MPORT
workers = 2"
write_conf
start_floe
for i in 1 2; do
	for t in athena bunnies java_bunnies; do
		get "/v1/routed/namespaces/db/tables/$t"
		[ "$S" = 200 ] || bad "workers: LoadTable db.$t: $S"
	done
done
for i in $(seq 50); do
	status
	[ "$(jq '.cache.hits + .cache.misses' "$T/st.json")" = 6 ] && break
	sleep 0.1
done
curl -s -o "$T/wpage.html" --max-time 10 "$M/"
status
expect_eq "workers: six loads counted" 6 \
	"$(jq '.cache.hits + .cache.misses' "$T/st.json")"
expect_eq "workers: the cache's budget is both workers'" $((2 << 20)) \
	"$(mem_attr "$T/wpage.html" mem-cache budget)"
mem_agrees "$T/wpage.html" "workers"
t=$(mem_text "$T/wpage.html" mem-cache)
want=$(jq -r '.cache | " held [0-9.]+ (B|KiB) of 2\\.0 MiB entries \(.entries) hits \(.hits) misses \(.misses) $"' "$T/st.json")
grep -Eq "$want" <<<"$t" && ok "workers: the cache's bytes, entries, hits, misses" ||
	bad "workers: the cache's card: $t (want /$want/)"
stop_floe

# Clients that do not read 1 MiB answers, output_budget 256 KiB: the page
# warns of the output and counts the request refused; the memo is off.
CACHE_SIZE=0
FLOE_EXTRA="metrics_listen = 127.0.0.1:$MPORT
output_budget = 256k
check_memo_size = 0"
write_conf
start_floe
printf '{"name":"big","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","type":"long","required":false}]},"properties":{"pad":"%s"}}' \
	"$(head -c 1048576 /dev/zero | tr '\0' p)" >"$T/big.json"
req POST /v1/routed/namespaces/db/tables -H 'Content-Type: application/json' \
	--data-binary @"$T/big.json"
expect_status "a table of 1 MiB" 200
python3 tests/integration/hold.py "$LISTEN" \
	/v1/routed/namespaces/db/tables/big 4 1 "$T/go" \
	>"$T/hold.out" 2>"$T/hold.err" &
HOLD=$!
pids+=($HOLD)
for i in $(seq 200); do
	grep -q '^sent' "$T/hold.out" && break
	sleep 0.05
done
for i in $(seq 100); do
	status
	[ "$(jq '.output.held_bytes >= 209716' "$T/st.json")" = true ] && break
	sleep 0.05
done
get /v1/routed/namespaces/db/tables/athena
expect_status "past the budget, a request is refused" 503
curl -s -o "$T/opage.html" --max-time 10 "$M/"
status
mem_agrees "$T/opage.html" "output held"
expect_eq "the output is warned" yes "$(mem_attr "$T/opage.html" mem-output warn)"
grep -q '<div class="card warn" id="mem-output"' "$T/opage.html" &&
	ok "... its card in the warning colour" ||
	bad "... its card: $(grep -o '<div class="card[^>]*id="mem-output"' "$T/opage.html")"
t=$(mem_text "$T/opage.html" mem-output)
grep -Eq ' refused [1-9][0-9]* requests? \(503\) requests were refused since start' <<<"$t" &&
	ok "... the refused requests counted and said" || bad "the output's card: $t"
grep -Eq '<i class="(warn|over)"' <<<"$(grep -o 'id="mem-output".*' "$T/opage.html" | sed 's#</div>.*##')" &&
	ok "... its bar past 80 %" || bad "... its bar: $t"
grep -q 'id="mem-memo" data-budget="0".*<dd>off (check_memo_size = 0)' "$T/opage.html" &&
	ok "the memo is off" || bad "the memo's card: $(mem_text "$T/opage.html" mem-memo)"
chrome --screenshot="$SHOTS/output-warned.png" --window-size=1280,900 \
	--hide-scrollbars "$M/" >/dev/null 2>&1
png_ok "the warned output on a desktop" "$SHOTS/output-warned.png" 1280
echo close >"$T/go"
wait "$HOLD" 2>/dev/null
forget_pid "$HOLD"
finish
