#!/bin/bash
# floe's own credentials for the catalogs, against independent verifiers:
# the warehouse wants OAuth2 client-credentials tokens from
# tests/catauth/tokens.py (3 s lifetimes), checked by the test catalog at
# the token server's /introspect; the lakehouse wants a static token. A
# secret file others may read is refused; /v1/config and the data path
# carry the token; a run crossing two expiries under steady load has no
# failed request; a 401 asks for one early refresh, not a storm; with the
# token endpoint gone the warehouse gets 503 naming it, the lakehouse
# does not notice, /status and /metrics show it, and floe recovers once
# the endpoint is back; passthrough keeps floe's token to its own calls;
# no secret or token in any log, status or metric.
. "$(dirname "$0")/lib.sh"
lib_init 66

SECRET="wh-secret-$RANDOM$RANDOM"
printf '%s\n' "$SECRET" >"$T/wh.secret"
chmod 600 "$T/wh.secret"
printf 'lh-static-%s\n' "$RANDOM$RANDOM" >"$T/lh.token"
LH_TOKEN=$(cat "$T/lh.token")

# start_tokens: the token server, on TOK_PORT if it is set.
start_tokens() {
	local i
	: >"$T/tokens.out"
	/usr/bin/python3 tests/catauth/tokens.py --client-id floe-wh \
		--secret-file "$T/wh.secret" --port "${TOK_PORT:-0}" \
		>"$T/tokens.out" 2>"$T/tokens.err" &
	TOK_PID=$!
	pids+=($!)
	for i in $(seq 100); do
		grep -q '^ready ' "$T/tokens.out" && break
		sleep 0.05
	done
	TOK_PORT=$(awk '/^ready /{print $2}' "$T/tokens.out")
	[ -n "$TOK_PORT" ] || { echo "tokens.py did not start"; cat "$T/tokens.err"; exit 1; }
}
tokctl() {
	curl -s --max-time 5 -o /dev/null -X POST --data-binary "$1" \
		"http://127.0.0.1:$TOK_PORT/control"
}
tokstat() { curl -s --max-time 5 "http://127.0.0.1:$TOK_PORT/stats" | jq -r "$1"; }
status() { admin GET /status; jq -r "$1" "$T/b"; }

start_tokens
tokctl '{"lifetime": 3}'
catalog warehouse --introspect "http://127.0.0.1:$TOK_PORT/introspect"
catalog lakehouse --prefix lhp --token "$LH_TOKEN"
WH_EXTRA="auth = oauth2
oauth_token_uri = http://127.0.0.1:$TOK_PORT/oauth/tokens
client_id = floe-wh
client_secret_file = $T/wh.secret
scope = PRINCIPAL_ROLE:ALL"
LH_EXTRA="token_file = $T/lh.token"
MPORT=$(free_port)
FLOE_EXTRA="metrics_listen = 127.0.0.1:$MPORT"
write_conf
# floe at debug level: log_debug must not leak either.
printf '#!/bin/sh\nexec "%s" -v "$@"\n' "$FLOE" >"$T/floe-v"
chmod +x "$T/floe-v"
FLOE=$T/floe-v

# --- floe -t reads the secret as the daemon will
chmod 644 "$T/wh.secret"
out=$("$FLOE" -t -c "$T/floe.conf" 2>&1)
rc=$?
want="$T/wh.secret: mode 0644 lets its group or others at a secret; chmod 600 it"
[ $rc = 1 ] && [[ $out == *"[warehouse] client_secret_file: $want"* ]] &&
	ok "floe -t refuses a secret file others may read, naming it" ||
	bad "floe -t on a 0644 secret: exit $rc: $out"
chmod 600 "$T/wh.secret"
out=$("$FLOE" -t -c "$T/floe.conf" 2>&1) && ok "floe -t: the oauth2 keys are fine" ||
	bad "floe -t: $out"

# --- start: the token comes before the config, which needs it
start_floe
ok "ready: /v1/config was read with floe's token (the catalog checks every call)"
expect_eq "one token request at start" 1 "$(tokstat .issued)"
expect_eq "... with the scope" "PRINCIPAL_ROLE:ALL" "$(tokstat .last_scope)"
grep -q "the warehouse catalog: oauth2, tokens from 127.0.0.1:$TOK_PORT/oauth/tokens (client_credentials)" \
	"$T/floe.log" && ok "start-up names the token endpoint" ||
	bad "no start-up line for the warehouse's credential"
grep -q "the lakehouse catalog: token from $T/lh.token" "$T/floe.log" &&
	ok "auth defaults to token with a token_file" || bad "no lakehouse credential line"

WH=/v1/routed/namespaces/db/tables/athena
LH=/v1/routed/namespaces/db/tables/bunnies
ctl_ok "route set" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse
get $WH
expect_status "a warehouse table, with floe's fetched token" 200
expect_header "... answered by the warehouse" X-Floe-Target warehouse
get $LH
expect_status "a lakehouse table, with the static token" 200
expect_header "... answered by the lakehouse" X-Floe-Target lakehouse
a=$(cat_requests warehouse | jq -r '[.requests[] | select(.url | contains("athena"))][-1].headers.authorization')
[[ $a == "Bearer tok-"* ]] && ok "the warehouse got a token the server issued" ||
	bad "the warehouse got Authorization \"$a\""

# --- steady load across two expiries: no failed request
cat_clear warehouse
node -e '
	const http = require("http");
	const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
	const [base, path, secs] = process.argv.slice(1);
	const end = Date.now() + Number(secs) * 1000, codes = {};
	let n = 0;
	async function worker() {
		while (Date.now() < end) {
			const s = await new Promise((res) => {
				http.get(base + path, { agent }, (r) => {
					r.resume();
					r.on("end", () => res(r.statusCode));
				}).on("error", () => res("error"));
			});
			codes[s] = (codes[s] || 0) + 1;
			n++;
			await new Promise((r) => setTimeout(r, 20));
		}
	}
	Promise.all([1, 2, 3, 4].map(worker)).then(() => {
		console.log(JSON.stringify({ n, codes }));
		agent.destroy();
	});
' "$BASE" "$WH" 8 >"$T/load.json"
n=$(jq .n "$T/load.json")
good=$(jq '.codes["200"] // 0' "$T/load.json")
issued=$(tokstat .issued)
[ "$n" -gt 100 ] && [ "$good" = "$n" ] &&
	ok "8 s of load over 3 s tokens: $n requests, all 200" ||
	bad "load: $(cat "$T/load.json")"
[ "$issued" -ge 3 ] && ok "the token was refreshed ahead of expiry ($issued issued)" ||
	bad "only $issued tokens issued in 8 s of 3 s tokens"
ntok=$(cat_requests warehouse | jq '[.requests[].headers.authorization] | unique | length')
[ "$ntok" -ge 3 ] && ok "the load carried $ntok successive tokens" ||
	bad "the load carried $ntok distinct tokens"
expect_eq "status: ok, 0 failures" "ok 0" \
	"$(status '.catalogs.warehouse.auth.token | "\(.state) \(.failures)"')"
expect_eq "status: the endpoint, host and path" "127.0.0.1:$TOK_PORT/oauth/tokens" \
	"$(status .catalogs.warehouse.auth.token.endpoint)"
admin GET /metrics
grep -q '^floe_catalog_token_ok{side="warehouse"} 1$' "$T/b" &&
	grep -q '^floe_catalog_token_fetches_total{side="warehouse"} [1-9]' "$T/b" &&
	ok "metrics: a token, fetches counted" || bad "metrics: $(grep token "$T/b")"

# --- the token endpoint goes away: 503 on that side only, then back
kill "$TOK_PID"
wait "$TOK_PID" 2>/dev/null
for i in $(seq 100); do
	get $WH
	[ "$S" = 503 ] && break
	sleep 0.1
done
expect_error "the token expired: the warehouse gets 503" 503 "" \
	"token endpoint 127.0.0.1:$TOK_PORT/oauth/tokens"
get $LH
expect_status "... the lakehouse is not affected" 200
expect_eq "status: gone, with the last error" "gone true" \
	"$(status '.catalogs.warehouse.auth.token | "\(.state) \(.last_error != null)"')"
page=$(curl -s --max-time 5 "http://127.0.0.1:$MPORT/")
grep -q "id=\"cat-warehouse\"><h3>warehouse <span class=\"down\">down</span>" <<<"$page" &&
	grep -q "<dt>token</dt><dd>gone, from 127.0.0.1:$TOK_PORT/oauth/tokens: " <<<"$page" &&
	ok "the status page: the warehouse down, its token gone, the endpoint named" ||
	bad "status page: $(grep -o '<div class="card" id="cat-warehouse">.\{0,600\}' <<<"$page")"
admin GET /metrics
grep -q '^floe_catalog_token_ok{side="warehouse"} 0$' "$T/b" &&
	grep -q '^floe_catalog_token_refresh_failing{side="warehouse"} 1$' "$T/b" &&
	ok "metrics: no token, refresh failing" || bad "metrics: $(grep token "$T/b")"
sleep 2
expect_eq "the outage is one warning line, whatever the retries" 1 \
	"$(grep -c 'token_failed: the warehouse catalog' "$T/floe.log")"
expect_eq "... and one line when the token expired" 1 \
	"$(grep -c "token_expire_cb: the warehouse catalog's token expired" "$T/floe.log")"
start_tokens
tokctl '{"lifetime": 60}'
for i in $(seq 200); do
	get $WH
	[ "$S" = 200 ] && break
	sleep 0.1
done
expect_status "the endpoint is back: the warehouse answers again" 200
grep -q "the warehouse catalog's token endpoint 127.0.0.1:$TOK_PORT/oauth/tokens answers again" \
	"$T/floe.log" && ok "... and the log says so" || bad "no recovery line"

# --- a 401 from the catalog: one early refresh, not a storm
before=$(tokstat .issued)
fault warehouse '{"match": "athena", "status": 401, "count": 5}'
for i in 1 2 3 4 5; do get $WH; done
expect_status "the catalog's 401 goes to the client" 401
sleep 0.5
expect_eq "five 401s, one early refresh" 1 \
	"$(status .catalogs.warehouse.auth.token.early_refreshes)"
expect_eq "... one token request" $((before + 1)) "$(tokstat .issued)"
get $WH
expect_status "the new token works" 200

# --- SIGHUP: same keys keep the token; a secret file others may read
# refuses the reload, naming it
before=$(tokstat .issued)
kill -HUP "$FLOE_PID"
for i in $(seq 50); do grep -q 'reload: configuration' "$T/floe.log" && break; sleep 0.1; done
get $WH
expect_status "after a reload: 200" 200
expect_eq "... with the token it had (no token request)" "$before" "$(tokstat .issued)"
chmod 644 "$T/wh.secret"
kill -HUP "$FLOE_PID"
for i in $(seq 50); do grep -q 'lets its group or others' "$T/floe.log" && break; sleep 0.1; done
grep -q "client_secret_file: $T/wh.secret: mode 0644 lets its group or others at a secret; chmod 600 it; keeping the running configuration" \
	"$T/floe.log" && ok "a secret file others may read refuses the reload, naming it" ||
	bad "no refused reload: $(tail -3 "$T/floe.log")"
chmod 600 "$T/wh.secret"
get $WH
expect_status "... and the running credential serves on" 200

# --- secret hygiene: no secret or token in any log, status or metric
admin GET /status
cp "$T/b" "$T/status.json"
admin GET /metrics
cp "$T/b" "$T/metrics.txt"
leaks=$(grep -l -e "$SECRET" -e "$LH_TOKEN" -E -e 'tok-[0-9]+-' \
	"$T/floe.log" "$T/access.log" "$T/status.json" "$T/metrics.txt" 2>/dev/null)
[ -z "$leaks" ] && ok "no secret or token in the log, access log, status or metrics" ||
	bad "a secret or token in: $leaks"
out=$(promtool check metrics <"$T/metrics.txt" 2>&1) && [ -z "$out" ] &&
	ok "promtool check metrics: nothing to say, token families included" ||
	bad "promtool check metrics: $out"

# --- the token endpoint down at start: not ready, 503 naming it; ready
# once it answers
stop_floe
kill "$TOK_PID"
wait "$TOK_PID" 2>/dev/null
: >"$T/floe.log"
start_floe noready
for i in $(seq 50); do grep -q 'token_failed:' "$T/floe.log" && break; sleep 0.1; done
get $WH
expect_error "down at start: 503 naming the token endpoint" 503 ServiceUnavailableException \
	"127.0.0.1:$TOK_PORT/oauth/tokens"
expect_eq "... /readyz says not ready" 503 \
	"$(curl -s -o /dev/null -w '%{http_code}' "$BASE/readyz")"
grep -q "token_failed: the warehouse catalog's token endpoint 127.0.0.1:$TOK_PORT/oauth/tokens: .*; retrying, requests to it get 503 meanwhile" \
	"$T/floe.log" && ok "... and the log says requests get 503 meanwhile" ||
	bad "no first-fetch failure line: $(grep token_ "$T/floe.log")"
start_tokens
wait_ready 200 && ok "the endpoint up: ready, the config read with the first token" ||
	bad "not ready after the token endpoint came up: $(tail -3 "$T/floe.log")"
get $WH
expect_status "... and the warehouse answers" 200

# --- passthrough: floe's token on its own calls, the client's on requests
stop_floe
printf '[auth]\nmode = passthrough\n' >>"$T/floe.conf"
cat_clear warehouse
start_floe
ok "passthrough: ready (floe's token on /v1/config)"
get $WH -H "Authorization: Bearer client-own-token"
expect_status "a client token the catalog does not know: its 401" 401
a=$(cat_requests warehouse | jq -r '[.requests[] | select(.url | contains("athena"))][-1].headers.authorization')
expect_eq "... the client's own Authorization went to the catalog" "Bearer client-own-token" "$a"
a=$(cat_requests warehouse | jq -r '[.requests[] | select(.url | contains("/v1/config"))][-1].headers.authorization')
[[ $a == "Bearer tok-"* ]] && ok "... and floe's on /v1/config" || bad "/v1/config had \"$a\""
get $LH -H "Authorization: Bearer client-own-token"
a=$(cat_requests lakehouse | jq -r '[.requests[] | select(.url | contains("bunnies"))][-1].headers.authorization')
expect_eq "... to the token_file catalog too (its static token stays on floe's calls)" \
	"Bearer client-own-token $S" "$a $S"
expect_eq "... a client's 401 is no reason to refresh floe's token" 0 \
	"$(status .catalogs.warehouse.auth.token.early_refreshes)"
finish
