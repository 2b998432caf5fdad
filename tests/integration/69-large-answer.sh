#!/bin/bash
# One large answer must not hold up the other side's requests. In front
# of bench-upstream, a client downloads a LARGE_MB (default 64) LoadTable
# result from the warehouse, three times, while a probe asks the
# lakehouse for a 4 KB one every 5 ms. The delay floe adds is the probe's
# worst latency during the downloads less its worst in a baseline run
# where a second floe serves the same downloads (the machine as busy,
# floe's loop not): at most 50 ms, in the best of up to three attempts.
# LARGE_MB=200 is the figure in docs/performance.md.
. "$(dirname "$0")/lib.sh"
lib_init 69
MB=${LARGE_MB:-64}
BIG=/v1/warehouse/namespaces/bench/tables/long_history
SMALL=/v1/lakehouse/namespaces/bench/tables/t1

bench_upstream "$MB"
WP1=$WP LP1=$LP

# A large answer that names its catalog's uri (near its end) still has
# it pointed back at floe: the search made as it arrives finds it.
WP2=$(free_port)
LP2=$(free_port)
python3 - "$T/small.json" "$T/named.json" "http://127.0.0.1:$WP2" <<'PY' || { bad "named.json"; finish; }
import json, sys
d = json.load(open(sys.argv[1]))
p = d["metadata"].setdefault("properties", {})
p["floe-test.pad"] = "x" * (3 << 20)
p["floe-test.url"] = sys.argv[3] + "/v1/namespaces/bench/tables/long_history/x"
open(sys.argv[2], "w").write(json.dumps(d, separators=(",", ":")))
PY
upstream_start "$T/named.json" "$WP2" "$LP2"
write_conf
start_floe
get "$BIG"
expect_status "a 3 MB answer naming its catalog" 200
grep -q "127.0.0.1:$WP2" "$T/b" && bad "... the catalog's uri was passed on" ||
	ok "... the catalog's uri is not passed on"
grep -q "127.0.0.1:$LISTEN/v1/warehouse/namespaces/bench/tables/long_history/x" "$T/b" &&
	ok "... it points at floe, pinned to the warehouse" ||
	bad "... no URL pointing at floe: $(grep -o '"floe-test.url":"[^"]*"' "$T/b")"
stop_floe

CAT_PORT[warehouse]=$WP1
CAT_PORT[lakehouse]=$LP1
unset WH_URI LH_URI
write_conf
start_floe

get "$SMALL"
expect_status "the lakehouse's 4 KB answer" 200

# A second floe, in front of the same catalogs, to serve the baseline's
# downloads: the machine does the same work, but not floe's loop.
LISTEN2=$(free_port)
sed -e "s|127.0.0.1:$LISTEN|127.0.0.1:$LISTEN2|" -e "s|$SOCK|$T/floe2.sock|" \
	-e "s|$T/state|$T/state2|" -e "s|$T/access.log|$T/access2.log|" \
	"$T/floe.conf" >"$T/floe2.conf"
"$FLOE" -c "$T/floe2.conf" >"$T/floe2.log" 2>&1 &
pids+=($!)
for i in $(seq 200); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
		"http://127.0.0.1:$LISTEN2/readyz")" = 200 ] && break
	sleep 0.05
done

# probe_during PORT OUT: probe this floe while PORT serves three large
# answers; their status, size and time go to $T/big.
probe_during() {
	rm -f "$T/stop" "$T/stop.ready"
	python3 tests/integration/probe.py "$LISTEN" "$SMALL" 5 100000 \
		"$T/stop" >"$2" &
	PROBE=$!
	pids+=($PROBE)
	for i in $(seq 100); do [ -e "$T/stop.ready" ] && break; sleep 0.05; done
	for k in 1 2 3; do
		curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}\n' \
			--max-time 60 "http://127.0.0.1:$1$BIG" >>"$T/big"
	done
	sleep 0.3
	touch "$T/stop"
	wait "$PROBE"
}
# A delay floe makes comes back in every run; the machine's own (a busy
# shared machine stops a process for tens of ms now and then) does not:
# up to three attempts, each a baseline and a run, and the best counts.
best=
for attempt in 1 2 3; do
	: >"$T/big"
	probe_during "$LISTEN2" "$T/base.json"
	echo "baseline (another floe serves them): $(jq -c '{status, n, max, p50, p99, top: (.lat | sort | reverse | .[0:5])}' "$T/base.json")"
	probe_during "$LISTEN" "$T/during.json"
	echo "the large answers: $(tr '\n' ';' <"$T/big")"
	echo "during (this floe serves them): $(jq -c '{status, n, max, p50, p99, top: (.lat | sort | reverse | .[0:5])}' "$T/during.json")"
	base=$(jq .max "$T/base.json")
	during=$(jq .max "$T/during.json")
	expect_eq "six ${MB} MB answers, whole" 6 \
		"$(awk -v s=$((MB << 20)) '$1 == 200 && $2 > s {n++} END {print n + 0}' "$T/big")"
	expect_eq "every probe answered 200" "$(jq .n "$T/during.json")" \
		"$(jq '.status["200"] // 0' "$T/during.json")"
	if awk -v d="$during" -v b="$base" 'BEGIN {exit !(d - b <= 50)}'; then
		best="$during ms (baseline $base ms, attempt $attempt)"
		break
	fi
	echo "attempt $attempt: a lakehouse probe waited $during ms (baseline $base ms)"
done
if [ -n "$best" ]; then
	ok "the lakehouse waited at most $best"
else
	bad "a lakehouse probe waited over 50 ms more than its baseline in three attempts"
fi
finish
