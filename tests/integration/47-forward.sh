#!/bin/bash
# What floe sends upstream and what it hands back: the path prefix
# rewritten (the lakehouse catalog uses prefix lhp), names and the query as
# the client wrote them, forwarded and dropped headers (hop-by-hop,
# Authorization replaced by the side's token, X-Forwarded-For, Via), the
# side's catalog config merged into LoadTable results (the table's own keys
# win, checked against a stub catalog with colliding keys), URLs under the
# upstream rewritten to floe, and a Via loop answered 508.
. "$(dirname "$0")/lib.sh"
lib_init 47
catalog warehouse
catalog lakehouse --prefix lhp --token lh-secret
printf 'lh-secret\n' >"$T/lh.token"
LH_EXTRA="token_file = $T/lh.token"
write_conf
start_floe

# last_req NAME: the last request catalog NAME logged (JSON).
last_req() {
	cat_requests "$1" | jq -c '.requests[-1]'
}

# --- prefix rewriting, names and query as the client wrote them
ctl_ok "route" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse
cat_clear lakehouse
get "/v1/routed/namespaces/db/tables/bun%6Eies?snapshots=refs"
expect_jq "routed load from the lakehouse through its token" 200 \
	'.config["floe-test.side"] == "lakehouse"'
r=$(last_req lakehouse)
expect_eq "the path arrived as /v1/lhp/..., the name as encoded, the query kept" \
	"/v1/lhp/namespaces/db/tables/bun%6Eies?snapshots=refs" \
	"$(echo "$r" | jq -r .url)"
cat_clear warehouse
get "/v1/routed/namespaces/db/tables/athena?snapshots=all"
r=$(last_req warehouse)
expect_eq "the warehouse (no prefix) gets /v1/namespaces/..." \
	"/v1/namespaces/db/tables/athena?snapshots=all" \
	"$(echo "$r" | jq -r .url)"
expect_eq "Host is the upstream's" "127.0.0.1:${CAT_PORT[warehouse]}" \
	"$(echo "$r" | jq -r .headers.host)"

# --- headers
cat_clear lakehouse
get /v1/routed/namespaces/db/tables/bunnies \
	-H 'X-Iceberg-Access-Delegation: vended-credentials' \
	-H 'Idempotency-Key: 0190c7a5-8d5e-7000-8000-000000000001' \
	-H 'Authorization: Bearer client-token' \
	-H 'X-Forwarded-For: 203.0.113.9' \
	-H 'Connection: keep-alive, X-Hop' -H 'X-Hop: 1' \
	-H 'Keep-Alive: timeout=5' -H 'TE: trailers' -H 'Upgrade: h2c' \
	-H 'Proxy-Authorization: Basic Zm9vOmJhcg==' \
	-H 'Proxy-Connection: keep-alive' \
	-H 'X-Request-Id: req-47'
expect_status "load with many headers" 200
h=$(last_req lakehouse | jq -c .headers)
expect_eq "X-Iceberg-Access-Delegation forwarded" vended-credentials \
	"$(echo "$h" | jq -r '.["x-iceberg-access-delegation"]')"
expect_eq "Idempotency-Key forwarded" 0190c7a5-8d5e-7000-8000-000000000001 \
	"$(echo "$h" | jq -r '.["idempotency-key"]')"
expect_eq "X-Request-Id forwarded" req-47 \
	"$(echo "$h" | jq -r '.["x-request-id"]')"
expect_eq "Authorization replaced by the lakehouse's token" \
	"Bearer lh-secret" "$(echo "$h" | jq -r .authorization)"
xff=$(echo "$h" | jq -r '.["x-forwarded-for"]')
case $xff in
*127.0.0.1) ok "X-Forwarded-For ends with the client floe saw ($xff)" ;;
*) bad "X-Forwarded-For: want the peer 127.0.0.1 last, got \"$xff\"" ;;
esac
expect_eq "Via names floe" true \
	"$(echo "$h" | jq '.via | test("^1\\.1 floe")')"
for n in keep-alive te upgrade x-hop proxy-authorization proxy-connection; do
	expect_eq "hop-by-hop $n not forwarded" null "$(echo "$h" | jq -r --arg n "$n" '.[$n]')"
done
c=$(echo "$h" | jq -r '.connection // ""')
case $c in
*[Xx]-[Hh]op*) bad "the client's Connection header was forwarded: $c" ;;
*) ok "the client's Connection header was not forwarded (\"$c\")" ;;
esac
cat_clear warehouse
get /v1/routed/namespaces/db/tables/athena \
	-H 'Authorization: Bearer client-token'
expect_eq "without token_file the client's Authorization passes through" \
	"Bearer client-token" \
	"$(last_req warehouse | jq -r .headers.authorization)"
get /v1/routed/namespaces/db/tables/athena
expect_eq "no Authorization from floe when the client sent none" null \
	"$(last_req warehouse | jq -r .headers.authorization)"

get /v1/routed/namespaces/db/tables/athena -H "Via: 1.1 proxy-a, 1.1 proxy-b"
expect_status "a foreign Via does not count as a loop" 200

# --- floe announces namespace_separator "."; the catalogs use %1F: a
# multi-level namespace reaches each catalog in its own form
stop_floe
FLOE_EXTRA="namespace_separator = ." write_conf
start_floe
get /v1/config
expect_jq "floe announces its separator" 200 \
	'.overrides["namespace-separator"] == "%2E"'
for side in warehouse lakehouse; do
	post /v1/$side/namespaces '{"namespace":["db","sub"]}'
	post "/v1/$side/namespaces/db%1Fsub/tables" \
		"{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[]}}"
	expect_status "create db.sub.t on the $side (pinned, %1F)" 200
done
cat_clear warehouse
get /v1/routed/namespaces/db.sub/tables/t
expect_jq "load db.sub.t written with floe's separator" 200 \
	'.metadata | type == "object"'
expect_eq "... the warehouse got the levels joined by %1F" \
	/v1/namespaces/db%1Fsub/tables/t \
	"$(cat_requests warehouse | jq -r '.requests[-1].url')"
get /v1/routed/namespaces/db%1Fsub/tables/t
expect_status "load db.sub.t written with %1F" 200
get /v1/routed/namespaces/db.sub
expect_jq "load namespace db.sub" 200 '.namespace == ["db","sub"]'
get /v1/routed/namespaces/db.sub/tables
expect_jq "list tables of db.sub (both sides)" 200 \
	'[.identifiers[] | .name] == ["t"]'
get "/v1/routed/namespaces?parent=db.sub"
expect_jq "list namespaces under parent db.sub" 200 '.namespaces == []'
get "/v1/routed/namespaces?parent=db"
expect_jq "list namespaces under parent db" 200 \
	'.namespaces == [["db","sub"]]'
ctl_ok "route db.sub.t" route set db.sub.t 7
ctl_ok "flip 7" wave flip 7 lakehouse
cat_clear lakehouse
get /v1/routed/namespaces/db.sub/tables/t
expect_header "after the flip db.sub.t reads from the lakehouse" X-Floe-Target lakehouse
expect_status "... 200" 200
expect_eq "... which got /v1/lhp/namespaces/db%1Fsub/..." \
	/v1/lhp/namespaces/db%1Fsub/tables/t \
	"$(cat_requests lakehouse | jq -r '.requests[-1].url')"
post /v1/routed/namespaces/db.sub/tables/t '{"requirements":[],"updates":[]}'
expect_status "commit to db.sub.t (to the warehouse)" 200
get /v1/routed/namespaces/db/tables/bunnies
expect_status "single-level names pass as before" 200
# Only the separators change: every other byte of a segment goes on as
# the client encoded it ('+' is a '+' to a catalog that is not Java's).
for c in "db.my+sub/tables/my%20table|db%1Fmy+sub/tables/my%20table" \
	"db.a%20b/tables/x+y|db%1Fa%20b/tables/x+y" \
	"db%2Esub/tables/u|db%1Fsub/tables/u" \
	"db.caf%C3%A9/tables/t%2Bt|db%1Fcaf%C3%A9/tables/t%2Bt"; do
	cat_clear warehouse
	get "/v1/routed/namespaces/${c%%|*}"
	expect_eq "${c%%|*} reaches the catalog as ${c#*|}" \
		"/v1/namespaces/${c#*|}" \
		"$(cat_requests warehouse | jq -r '.requests[-1].url')"
done
cat_clear warehouse
get "/v1/routed/namespaces?parent=db.my+sub"
expect_eq "a parent is reframed the same way" \
	"/v1/namespaces?parent=db%1Fmy+sub" \
	"$(cat_requests warehouse | jq -r '.requests[-1].url')"

# --- the catalog config merge (the test catalog's keys differ per side)
get /v1/routed/namespaces/db/tables/bunnies
expect_jq "lakehouse LoadTable gets the lakehouse's catalog defaults" 200 '
	.config["s3.endpoint"] == "http://s3.lakehouse.floe.test"
	and .config["client.region"] == "eu-central-1"
	and .config["floe-test.catalog"] == "lakehouse"
	and .config.warehouse == "lake"
	and .config["floe-test.side"] == "lakehouse"
	and (.config | has("prefix") | not)'
get /v1/routed/namespaces/db/tables/athena
expect_jq "warehouse LoadTable gets the warehouse's catalog defaults" 200 '
	.config["s3.endpoint"] == "http://s3.warehouse.floe.test"
	and .config["client.region"] == "eu-west-1"
	and .config.warehouse == "analytics"
	and .config["floe-test.side"] == "warehouse"'
get /v1/routed/namespaces/db
expect_jq "a namespace answer is not merged" 200 '(has("config") | not)'

# --- a large LoadTable (a long history: ~400 KB, read in many pieces):
# config merged without rewriting the whole answer, and an upstream URL
# anywhere in it still rewritten
jq -nc '{requirements: [], updates: [{action: "set-properties", updates:
	([range(400)] | map({key: "big.\(.)", value: ("x" * 1000)})
	| from_entries)}]}' >"$T/big.json"
req POST /v1/routed/namespaces/db/tables/athena \
	-H 'Content-Type: application/json' --data-binary @"$T/big.json"
expect_status "commit 400 KB of properties to athena" 200
direct() {
	curl -s "http://127.0.0.1:${CAT_PORT[warehouse]}/v1/namespaces/db/tables/athena" >"$T/direct"
}
direct
get /v1/routed/namespaces/db/tables/athena
expect_jq "a 400 KB LoadTable gets the catalog defaults merged" 200 '
	(. | tostring | length) > 400000
	and .config["s3.endpoint"] == "http://s3.warehouse.floe.test"
	and .config["floe-test.side"] == "warehouse"'
expect_eq "... and is otherwise the catalog's answer (sha256 of the rest)" \
	"$(jq -cS 'del(.config)' "$T/direct" | sha256sum)" \
	"$(jq -cS 'del(.config)' "$T/b" 2>&1 | sha256sum)"
expect_eq "... its own config keys kept, the defaults added" \
	"$(jq -cS '.config' "$T/direct")" \
	"$(jq -cS '.config | with_entries(select(.key | IN("floe-test.side",
		"floe-test.table")))' "$T/b")"
UPURL="http://127.0.0.1:${CAT_PORT[warehouse]}/v1/namespaces/db/tables/athena"
post /v1/routed/namespaces/db/tables/athena "$(jq -nc --arg u "$UPURL" \
	'{requirements: [], updates: [{action: "set-properties",
	updates: {"big.199": $u}}]}')"
expect_status "commit an upstream URL into the middle of it" 200
get /v1/routed/namespaces/db/tables/athena
expect_jq "... which reaches the client as floe's URL for the same side" 200 \
	".metadata.properties[\"big.199\"] == \"$BASE/v1/warehouse/namespaces/db/tables/athena\"
	and .config[\"floe-test.side\"] == \"warehouse\""
jq -nc '{requirements: [], updates: [{action: "remove-properties",
	removals: [range(400) | "big.\(.)"]}]}' >"$T/big.json"
req POST /v1/routed/namespaces/db/tables/athena \
	-H 'Content-Type: application/json' --data-binary @"$T/big.json"
expect_status "remove the 400 KB of properties again" 200

# --- a stub catalog whose config collides with the table's own keys
stop_floe
STUB_PORT=$(free_port)
cat >"$T/stub.js" <<'EOF'
const http = require('http');
const port = Number(process.argv[2]);
const base = `http://127.0.0.1:${port}`;
http.createServer((req, res) => {
	const send = (o) => { const b = JSON.stringify(o)
			.replace('"@BIG@"', '8163542890362123457');
		res.writeHead(200, { 'Content-Type': 'application/json',
			'Content-Length': Buffer.byteLength(b) }); res.end(b); };
	if (req.url.startsWith('/v1/config'))
		return send({ defaults: { shared: 'default', 'only.default': 'd',
				ov: 'default', 'signer.uri': `${base}/v1/sp/sign` },
			overrides: { prefix: 'sp', ov: 'override', shared: 'override',
				uri: 'http://elsewhere.invalid' } });
	if (req.url === '/v1/sp/namespaces/db/tables/t')
		return send({ 'metadata-location': 's3://b/t/metadata/v1.json',
			metadata: { 'format-version': 2, 'table-uuid': 'u',
				location: 's3://b/t', 'last-updated-ms': 1,
				'current-snapshot-id': '@BIG@' },
			config: { shared: 'table', 'own.key': 'mine',
				'credentials.uri': `${base}/v1/sp/namespaces/db/tables/t/credentials` } });
	res.writeHead(404, { 'Content-Type': 'application/json' });
	res.end('{"error":{"message":"no","type":"NotFoundException","code":404}}');
}).listen(port, '127.0.0.1', () => console.log(`ready ${port}`));
EOF
node "$T/stub.js" "$STUB_PORT" >"$T/stub.out" 2>&1 &
pids+=($!)
for i in $(seq 100); do grep -q ready "$T/stub.out" 2>/dev/null && break; sleep 0.05; done
WH_URI=http://127.0.0.1:$STUB_PORT
write_conf
start_floe
get /v1/routed/namespaces/db/tables/t -H "Host: floe.example:8181"
expect_jq "merge: the table's own key wins over defaults and overrides" 200 \
	'.config.shared == "table" and .config["own.key"] == "mine"'
expect_jq "merge: overrides win over defaults" 200 \
	'.config.ov == "override" and .config["only.default"] == "d"'
expect_jq "merge: prefix and uri are not merged" 200 \
	'(.config | has("prefix") | not) and (.config | has("uri") | not)'
expect_jq "merge: upstream URLs point back at floe, pinned to the side" 200 '
	.config["signer.uri"] == "http://floe.example:8181/v1/warehouse/sign"
	and .config["credentials.uri"] ==
	"http://floe.example:8181/v1/warehouse/namespaces/db/tables/t/credentials"'
if grep -q '"current-snapshot-id":8163542890362123457' "$T/b"; then
	ok "merge: a 64-bit snapshot id survives exactly"
else
	bad "merge: the 64-bit snapshot id was changed: $(grep -o 'current-snapshot-id[^,}]*' "$T/b")"
fi

# --- interim answers (100 Continue, 103 Early Hints) before the final one
stop_floe
RAW_PORT=$(free_port)
cat >"$T/interim.js" <<'EOF'
const net = require('net');
const port = Number(process.argv[2]);
net.createServer((s) => {
	let buf = '';
	s.on('data', (d) => {
		buf += d.toString('latin1');
		let e;
		while ((e = buf.indexOf('\r\n\r\n')) >= 0) {
			const head = buf.slice(0, e);
			buf = buf.slice(e + 4);
			const url = head.split(' ')[1];
			const cfg = url.startsWith('/v1/config');
			const body = cfg ? '{"defaults":{},"overrides":{}}' :
				'{"metadata-location":"s3://b/m.json","metadata":{"format-version":2},"config":{"k":"v"}}';
			const pre = cfg ? '' : 'HTTP/1.1 100 Continue\r\n\r\n' +
				'HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n';
			s.write(pre + 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n' +
				`Content-Length: ${body.length}\r\n\r\n${body}`);
		}
	});
	s.on('error', () => {});
}).listen(port, '127.0.0.1', () => console.log(`ready ${port}`));
EOF
node "$T/interim.js" "$RAW_PORT" >"$T/interim.out" 2>&1 &
pids+=($!)
for i in $(seq 100); do grep -q ready "$T/interim.out" 2>/dev/null && break; sleep 0.05; done
WH_URI=http://127.0.0.1:$RAW_PORT
write_conf
start_floe
get /v1/routed/namespaces/db/tables/t
expect_jq "100 and 103 before the answer are skipped: the client gets the 200" \
	200 '.config.k == "v"'
get /v1/routed/namespaces/db/tables/t
expect_jq "... and the pooled connection serves the next request" 200 \
	'.config.k == "v"'

# --- a catalog uri pointing back at floe: 508, not an endless loop
stop_floe
LOOP_PORT=$(free_port)
LISTEN=$LOOP_PORT WH_URI=http://127.0.0.1:$LOOP_PORT write_conf
LISTEN=$LOOP_PORT
BASE=http://127.0.0.1:$LOOP_PORT
start_floe
get /v1/routed/namespaces/db/tables/athena
expect_error "a request that loops through floe is 508" 508 \
	LoopDetectedException "loop"
if kill -0 "$FLOE_PID" 2>/dev/null; then ok "floe survives the loop"; else bad "floe died on the loop"; fi
finish
