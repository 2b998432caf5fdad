#!/bin/bash
# Concurrency on the data path: 200 clients at once all get their answer;
# the upstream pool keeps at most max_conns connections to a catalog and
# reuses them (seen in the catalog's connection ids and in /status); a
# slow lakehouse does not delay warehouse requests.
# alone: 200 clients at once, and a slow side must not delay the other
. "$(dirname "$0")/lib.sh"
lib_init 46
catalog warehouse
catalog lakehouse --prefix lhp
WH_EXTRA="max_conns = 8"
write_conf
start_floe

ctl_ok "route" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse

# burst N PATH [PATH2]: N clients at once, each on its own connection,
# half on PATH and half on PATH2 (if given). Prints a JSON summary:
# {statuses: {code: count}, targets: {side: count}, ms: [min, max]}.
cat >"$T/burst.js" <<'EOF'
const http = require('http');
const [port, n, p1, p2] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const statuses = {}, targets = {}, times = [];
let left = Number(n);
const t0 = Date.now();
const bump = (o, k) => { o[k] = (o[k] || 0) + 1; };
const done = () => {
	if (--left > 0) return;
	console.log(JSON.stringify({ statuses, targets,
		ms: [Math.min(...times), Math.max(...times)] }));
	process.exit(0);
};
for (let i = 0; i < Number(n); i++) {
	const path = p2 && i % 2 ? p2 : p1;
	const start = Date.now();
	const req = http.get({ host: '127.0.0.1', port: Number(port), path, agent,
		timeout: 30000 }, (res) => {
		let len = 0;
		res.on('data', (d) => { len += d.length; });
		res.on('end', () => {
			times.push(Date.now() - start);
			bump(statuses, len > 0 || res.statusCode !== 200 ?
				res.statusCode : 'empty');
			bump(targets, res.headers['x-floe-target'] || 'none');
			done();
		});
	});
	req.on('timeout', () => req.destroy(new Error('timeout')));
	req.on('error', (e) => { times.push(Date.now() - start);
		bump(statuses, e.message); done(); });
}
setTimeout(() => { console.log(JSON.stringify({ statuses, targets,
	stuck: left })); process.exit(1); }, 60000);
EOF

# conns NAME: distinct client connections catalog NAME saw from floe
# (requests under /v1/ other than /v1/config).
conns() {
	cat_requests "$1" | jq '[.requests[] | select(.url | test("^/v1/(lhp/)?namespaces")) | .conn] | unique | length'
}

# --- 200 clients at once, half per side
cat_clear warehouse; cat_clear lakehouse
out=$(timeout 90 node "$T/burst.js" "$LISTEN" 200 \
	/v1/routed/namespaces/db/tables/athena \
	/v1/routed/namespaces/db/tables/bunnies)
echo "  burst: $out"
expect_eq "200 parallel clients all get 200" 200 \
	"$(echo "$out" | jq '.statuses["200"] // 0')"
expect_eq "... 100 from each side" "100 100" \
	"$(echo "$out" | jq -r '"\(.targets.warehouse // 0) \(.targets.lakehouse // 0)"')"
wc=$(conns warehouse)
if [ "$wc" -ge 1 ] && [ "$wc" -le 8 ]; then
	ok "the warehouse saw $wc connections for 100 requests (max_conns 8)"
else
	bad "the warehouse saw $wc connections for 100 requests, max_conns is 8"
fi
lc=$(conns lakehouse)
if [ "$lc" -ge 1 ] && [ "$lc" -le 64 ]; then
	ok "the lakehouse saw $lc connections for 100 requests (max_conns 64)"
else
	bad "the lakehouse saw $lc connections for 100 requests, max_conns is 64"
fi
curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status >"$T/status"
expect_eq "/status: the warehouse pool reused connections" true \
	"$(jq '.catalogs.warehouse.reused >= 92' "$T/status")"
expect_eq "/status: nothing waits after the burst" "0 0" \
	"$(jq -r '"\(.catalogs.warehouse.waiting) \(.catalogs.lakehouse.waiting)"' "$T/status")"
expect_eq "/status: at most 8 warehouse connections open" true \
	"$(jq '.catalogs.warehouse.connections <= 8 and .catalogs.warehouse.connections >= 1' "$T/status")"

# --- sequential requests reuse one pooled connection
cat_clear warehouse
for i in $(seq 10); do get /v1/routed/namespaces/db/tables/athena; done
expect_eq "10 sequential requests: one upstream connection" 1 "$(conns warehouse)"

# --- a second burst, with listings (both sides per request)
cat_clear warehouse; cat_clear lakehouse
out=$(timeout 90 node "$T/burst.js" "$LISTEN" 200 \
	/v1/routed/namespaces/db/tables /v1/routed/namespaces)
echo "  burst: $out"
expect_eq "200 parallel listings all get 200" 200 \
	"$(echo "$out" | jq '.statuses["200"] // 0')"

# --- a slow lakehouse does not delay the warehouse
fault lakehouse '{"match":"/tables/bunnies","delay_ms":3000}'
timeout 90 node "$T/burst.js" "$LISTEN" 40 \
	/v1/routed/namespaces/db/tables/bunnies >"$T/slow.json" &
slow=$!
pids+=($slow)
sleep 0.3
out=$(timeout 90 node "$T/burst.js" "$LISTEN" 40 \
	/v1/routed/namespaces/db/tables/athena)
echo "  warehouse during the slow lakehouse: $out"
expect_eq "40 warehouse reads during 40 slow lakehouse reads: all 200" 40 \
	"$(echo "$out" | jq '.statuses["200"] // 0')"
max=$(echo "$out" | jq '.ms[1]')
if [ "$max" -lt 1500 ]; then
	ok "... the slowest took ${max} ms (the lakehouse takes 3000)"
else
	bad "warehouse reads were held up by the slow lakehouse: ${max} ms"
fi
start=$(date +%s%N)
get /v1/routed/namespaces/db/tables/athena
ms=$((($(date +%s%N) - start) / 1000000))
expect_status "a single warehouse read meanwhile" 200
[ "$ms" -lt 1000 ] && ok "... in ${ms} ms" || bad "a single warehouse read took ${ms} ms"
wait "$slow"
expect_eq "the slow lakehouse reads all completed with 200" 40 \
	"$(jq '.statuses["200"] // 0' "$T/slow.json")"
cat_clear lakehouse

# --- clients that go away while their request waits upstream
fault lakehouse '{"match":"/tables/bunnies","delay_ms":1500}'
fault lakehouse '{"match":"/namespaces/db/tables","delay_ms":1500}'
node -e '
	const net = require("net");
	const paths = ["/v1/routed/namespaces/db/tables/bunnies",
		"/v1/routed/namespaces/db/tables"];
	let n = 0;
	for (let i = 0; i < 20; i++) {
		const s = net.connect(Number(process.argv[1]), "127.0.0.1", () => {
			s.write(`GET ${paths[i % 2]} HTTP/1.1\r\nHost: x\r\n\r\n`);
			setTimeout(() => { s.destroy(); if (++n === 20) process.exit(0); }, 200);
		});
		s.on("error", () => {});
	}
	setTimeout(() => process.exit(1), 10000);' "$LISTEN"
expect_eq "20 clients sent requests and hung up" 0 "$?"
# Before the catalog answers (1.5 s), floe must have closed their
# upstream connections: poll for up to 1 s.
for i in $(seq 10); do
	busy=$(curl -s --max-time 1 --unix-socket "$SOCK" http://floe/status |
		jq '.catalogs.lakehouse.connections - .catalogs.lakehouse.idle')
	[ "$busy" = 0 ] && break
	sleep 0.1
done
expect_eq "their upstream transfers were dropped (no lakehouse connection busy)" 0 "$busy"
cat_clear lakehouse
get /v1/routed/namespaces/db/tables/bunnies
expect_status "the next lakehouse read works" 200
get /v1/routed/namespaces/db/tables
expect_status "the next listing works" 200
sleep 1.5
kill -0 "$FLOE_PID" 2>/dev/null && ok "floe is up after the late answers" || bad "floe died"
curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status >"$T/status"
expect_eq "/status: no client connections left open" 0 \
	"$(jq '.connections' "$T/status")"
kill -0 "$FLOE_PID" 2>/dev/null && ok "floe is still up" || bad "floe died"
finish
