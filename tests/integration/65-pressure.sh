#!/bin/bash
# Connection pressure: N client connections at once (PRESSURE_N, default
# 2000; the 10,000 figure is measured the same way), half of them idle and
# half slowloris (a request head that never ends, one byte at a time).
# Other clients keep being served quickly; the slow heads get 408 and a
# close after header_timeout, the idle ones a close after idle_timeout;
# floe says what its open-files limit is.
. "$(dirname "$0")/lib.sh"
lib_init 65
N=${PRESSURE_N:-2000}
catalog warehouse
catalog lakehouse --prefix lhp
FLOE_EXTRA="header_timeout = 3s
idle_timeout = 4s"
write_conf
start_floe
grep -q "open files limit" "$T/floe.log" && ok "floe states its open-files limit: $(grep -o 'open files limit.*' "$T/floe.log" | head -1)" ||
	bad "no open files line"

# The crowd: opens N connections in batches, then reports when each kind
# closed and what the slow ones were answered.
cat >"$T/crowd.js" <<'JS'
const net = require("net");
const [port, n] = [Number(process.argv[2]), Number(process.argv[3])];
const t0 = Date.now();
let open = 0, opened = 0, failed = 0;
const closed = { idle: [], slow: [] }, got408 = { n: 0 };
function one(kind) {
	const s = net.connect(port, "127.0.0.1");
	let timer = null, buf = "";
	s.on("connect", () => {
		open++; opened++;
		if (opened === n) console.log("all-open " + (Date.now() - t0));
		if (kind === "slow") {
			s.write("GET /v1/config HTTP/1.1\r\nHost: x\r\nX-Slow: ");
			timer = setInterval(() => s.write("a"), 500);
		}
	});
	s.on("data", (d) => { buf += d; if (buf.startsWith("HTTP/1.1 408")) got408.n++; });
	s.on("error", () => { if (!timer && open === 0) failed++; });
	s.on("close", () => {
		if (timer) clearInterval(timer);
		closed[kind].push(Date.now() - t0);
		if (closed.idle.length + closed.slow.length === n) done();
	});
}
function done() {
	const max = (a) => a.length ? Math.max(...a) : -1;
	const min = (a) => a.length ? Math.min(...a) : -1;
	console.log(JSON.stringify({ opened, failed, idle_closed: closed.idle.length,
		slow_closed: closed.slow.length, got408: got408.n,
		idle_first_ms: min(closed.idle), idle_last_ms: max(closed.idle),
		slow_first_ms: min(closed.slow), slow_last_ms: max(closed.slow) }));
	process.exit(0);
}
let k = 0;
const batch = () => {
	for (let i = 0; i < 500 && k < n; i++, k++) one(k % 2 ? "slow" : "idle");
	if (k < n) setTimeout(batch, 20);
};
batch();
setTimeout(() => { console.log("timeout " + JSON.stringify({ opened, closed_idle: closed.idle.length, closed_slow: closed.slow.length })); process.exit(1); }, 30000);
JS
node "$T/crowd.js" "$LISTEN" "$N" >"$T/crowd.out" 2>&1 &
CROWD=$!
pids+=($CROWD)
for i in $(seq 200); do grep -q '^all-open' "$T/crowd.out" && break; sleep 0.05; done
grep -q '^all-open' "$T/crowd.out" && ok "$N connections open in $(awk '/^all-open/{print $2}' "$T/crowd.out") ms" ||
	bad "the crowd did not get in: $(cat "$T/crowd.out")"
sleep 0.5
conns=$(curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status | jq .connections)
if [ "${conns:-0}" -ge "$N" ]; then ok "floe holds them all (/status: $conns connections)"; else bad "/status connections: $conns"; fi
rss=$(awk '/VmRSS/{print $2}' "/proc/$FLOE_PID/status")
fds=$(ls "/proc/$FLOE_PID/fd" | wc -l)
echo "floe with $N clients: RSS ${rss} kB, $fds descriptors"
[ "$rss" -lt $((200 * 1024)) ] && ok "RSS with $N connections: $((rss / 1024)) MB" || bad "RSS $rss kB"

# Meanwhile other clients are served, and fast.
: >"$T/lat"
for i in $(seq 40); do
	curl -s -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 5 \
		"$BASE/v1/routed/namespaces/db/tables/bunnies" >>"$T/lat"
done
good=$(grep -c '^200 ' "$T/lat")
p=$(awk '{print $2 * 1000}' "$T/lat" | sort -n | awk '{a[NR]=$1} END{print a[int(NR*0.95)], a[NR]}')
expect_eq "40 loads during the crowd: all 200" 40 "$good"
read -r p95 pmax <<<"$p"
if awk -v m="$pmax" 'BEGIN{exit !(m < 1000)}'; then
	ok "... p95 ${p95} ms, max ${pmax} ms"
else
	bad "... too slow: p95 ${p95} ms, max ${pmax} ms"
fi
wait "$CROWD"
res=$(grep '^{' "$T/crowd.out")
echo "crowd: $res"
expect_eq "every connection was closed by floe" "$N" \
	"$(echo "$res" | jq '.idle_closed + .slow_closed')"
expect_eq "every slowloris head got a 408" $((N / 2)) "$(echo "$res" | jq .got408)"
slow_last=$(echo "$res" | jq .slow_last_ms)
idle_first=$(echo "$res" | jq .idle_first_ms)
idle_last=$(echo "$res" | jq .idle_last_ms)
[ "$slow_last" -lt 6000 ] && ok "slow heads closed by ${slow_last} ms (header_timeout 3s)" ||
	bad "slow heads lasted ${slow_last} ms"
[ "$idle_first" -ge 3500 ] && [ "$idle_last" -lt 7000 ] &&
	ok "idle connections closed between ${idle_first} and ${idle_last} ms (idle_timeout 4s)" ||
	bad "idle connections closed between ${idle_first} and ${idle_last} ms"
get /v1/routed/namespaces/db/tables/bunnies
expect_status "floe serves after the crowd" 200
expect_eq "and holds no connection of it" 0 \
	"$(curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status | jq .connections)"
finish
