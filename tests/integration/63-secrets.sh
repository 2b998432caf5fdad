#!/bin/bash
# Secret hygiene: a scenario with known secret values -- the catalogs' own
# tokens, client tokens, JWTs, a client's passthrough token, the storage
# credentials the catalogs vend, an OAuth2 client secret and the tokens
# issued for it, AWS keys, a session token and the signatures made with
# them -- then every file and stream floe wrote
# (its log at debug level, the access log, the rollback log, the store, the
# admin API's /status, /metrics and events, floectl's output, every error
# answer) is searched for each of them.
. "$(dirname "$0")/lib.sh"
lib_init 63
WH_TOK=S3CRET-UPSTREAM-WH-7f1c
LH_TOK=S3CRET-UPSTREAM-LH-29ab
CL_TOK=S3CRET-CLIENT-spark-88d0
BAD_TOK=S3CRET-WRONG-guess-5e11
PASS_TOK=S3CRET-PASSTHROUGH-c0de
catalog warehouse --token "$WH_TOK"
catalog lakehouse --prefix lhp --token "$LH_TOK"
printf '%s\n' "$WH_TOK" >"$T/wh.token"
printf '%s\n' "$LH_TOK" >"$T/lh.token"
printf 'spark %s\n' "$(printf '%s' "$CL_TOK" | sha256sum | cut -d' ' -f1)" >"$T/clients.tokens"
WH_EXTRA="token_file = $T/wh.token"
LH_EXTRA="token_file = $T/lh.token"
write_conf
printf '[auth]\nmode = token\ntoken_file = %s\n' "$T/clients.tokens" >>"$T/floe.conf"
# floe at debug level: log_debug must not leak either.
printf '#!/bin/sh\nexec "%s" -v "$@"\n' "$FLOE" >"$T/floe-v"
chmod +x "$T/floe-v"
FLOE=$T/floe-v
start_floe
OUT=$T/out
mkdir -p "$OUT"
n=0
keep() { n=$((n + 1)); cp "$T/b" "$OUT/answer.$n" 2>/dev/null; cp "$T/h" "$OUT/headers.$n" 2>/dev/null; }

A="Authorization: Bearer $CL_TOK"
B=/v1/routed/namespaces/db/tables/bunnies
get $B -H "$A" -H 'X-Iceberg-Access-Delegation: vended-credentials'; keep
expect_status "a load with vended credentials" 200
jq -e '.config["s3.secret-access-key"] // (.["storage-credentials"][0].config["s3.secret-access-key"])' "$T/b" >/dev/null &&
	ok "... the client got its storage credentials" || bad "no credentials in the answer: $(head -c 300 "$T/b")"
VENDED_SECRET=$(jq -r '[.. | objects | .["s3.secret-access-key"]? // empty][0]' "$T/b")
VENDED_SESSION=$(jq -r '[.. | objects | .["s3.session-token"]? // empty][0]' "$T/b")
get $B/credentials -H "$A"
expect_status "load credentials" 200
get $B -H "Authorization: Bearer $BAD_TOK"; keep
expect_status "a wrong token: 401" 401
get $B -H "Authorization: Bearer"; keep
get $B -H "Authorization: Basic $(printf 'spark:%s' "$CL_TOK" | base64 -w0)"; keep
get "$B?token=$CL_TOK" -H "$A"; keep
get /v1/routed/namespaces/db/tables/nope -H "$A"; keep
expect_status "a catalog's 404 passes" 404
post /v1/oauth/tokens "grant_type=client_credentials&client_secret=$CL_TOK" -H "$A"; keep
# A malformed request that carries the token.
raw "GET $B HTTP/1.1"$'\r\n'"$A"$'\r\n'"Bad Header: x"$'\r\n\r\n'
cp "$T/raw" "$OUT/raw.1"
raw "GET $B HTTP/1.1"$'\r\n'"$A"$'\r\n'"X-Fold: a"$'\r\n'" b"$'\r\n\r\n'
cp "$T/raw" "$OUT/raw.2"
# Admin: canary by identity, a flip, a rollback, events, status, metrics.
ctl_ok "route" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse
get $B -H "$A" -H 'X-Iceberg-Access-Delegation: vended-credentials'
expect_header "lakehouse after the flip" X-Floe-Target lakehouse
LH_SECRET=$(jq -r '[.. | objects | .["s3.secret-access-key"]? // empty][0]' "$T/b")
ctl_ok "rollback" wave rollback 1 --reason "secrets test"
ctl resolve db.bunnies --client spark; cp "$T/ctl" "$OUT/ctl.resolve"
for c in status metrics events "route list" "wave list" "--json status" "--json events"; do
	# shellcheck disable=SC2086
	ctl $c; cp "$T/ctl" "$OUT/ctl.${c// /_}"
done
for p in /status /metrics "/events?after=0" /waves/1 /routes; do
	curl -s --max-time 5 --unix-socket "$SOCK" "http://floe$p" >"$OUT/admin.${p//[^a-z]/_}"
done
# The upstream side failing: a catalog refusing floe's token, then gone.
printf 'S3CRET-STALE-UPSTREAM\n' >"$T/wh.token"
kill -HUP "$FLOE_PID"
sleep 0.3
get $B -H "$A"; keep
expect_status "the warehouse refuses floe's new token: its 401 passes" 401
stop_catalog lakehouse
get /v1/lakehouse/namespaces/db/tables/bunnies -H "$A"; keep
expect_status "the lakehouse gone: 502" 502
stop_floe

# A second run in jwt mode, then one in passthrough mode.
JWT=$(node -e '
	const c = require("crypto"), fs = require("fs");
	const k = c.randomBytes(32), b = (x) => Buffer.from(x).toString("base64url");
	fs.writeFileSync(process.argv[1], JSON.stringify({ keys: [{ kty: "oct", k: b(k) }] }));
	const h = b(JSON.stringify({ alg: "HS256" })), now = Math.floor(Date.now() / 1000);
	const p = b(JSON.stringify({ sub: "jwt-user", exp: now + 600 }));
	const s = c.createHmac("sha256", k).update(h + "." + p).digest("base64url");
	console.log(h + "." + p + "." + s);' "$T/jwks.json")
JWT_SIG=${JWT##*.}
BAD_JWT=${JWT%.*}.AAAA${JWT_SIG:4}
printf 'S3CRET-UPSTREAM-WH-7f1c\n' >"$T/wh.token"
sed -i '/^\[auth\]/,$d' "$T/floe.conf"
printf '[auth]\nmode = jwt\njwks_file = %s\n' "$T/jwks.json" >>"$T/floe.conf"
start_floe noready
get /v1/warehouse/namespaces/db/tables/bunnies -H "Authorization: Bearer $JWT"; keep
get /v1/warehouse/namespaces/db/tables/bunnies -H "Authorization: Bearer $BAD_JWT"; keep
expect_status "a JWT with a bad signature: 401" 401
stop_floe
sed -i '/^\[auth\]/,$d' "$T/floe.conf"
sed -i '/^token_file = .*wh.token/d' "$T/floe.conf"
printf '[auth]\nmode = passthrough\n' >>"$T/floe.conf"
start_floe noready
get /v1/warehouse/namespaces/db/tables/bunnies -H "Authorization: Bearer $PASS_TOK"; keep
get /v1/warehouse/namespaces/db/tables/bunnies -H "Authorization: Bearer $WH_TOK"; keep
curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status >"$OUT/admin.status2"
stop_floe

# A fourth run with floe's own catalog credentials: OAuth2 tokens for the
# warehouse (2 s lifetimes, its token endpoint then gone: a 503), SigV4
# with a session token for the lakehouse, a reload between.
OA_SECRET=S3CRET-OAUTH-CLIENT-51ab
AWS_SK=S3CRET-AWS-SECRET-KEY-9e0f
AWS_ST=S3CRET-AWS-SESSION-TOKEN-77c2
printf '%s\n' "$OA_SECRET" >"$T/oa.secret"
chmod 600 "$T/oa.secret"
/usr/bin/python3 tests/catauth/tokens.py --client-id floe --secret-file "$T/oa.secret" \
	>"$T/tok.out" 2>"$T/tok.err" &
TOK_PID=$!
pids+=($TOK_PID)
for i in $(seq 100); do grep -q '^ready ' "$T/tok.out" && break; sleep 0.05; done
TOK_PORT=$(awk '/^ready /{print $2}' "$T/tok.out")
curl -s -o /dev/null -X POST --data-binary '{"lifetime": 2}' "http://127.0.0.1:$TOK_PORT/control"
jq -n --arg s "$AWS_SK" --arg t "$AWS_ST" '{akid: "AKIASECRETSTEST", secret: $s,
	token: $t, region: "us-east-1", service: "glue"}' >"$T/aws.json"
printf '[default]\naws_access_key_id = AKIASECRETSTEST\naws_secret_access_key = %s\naws_session_token = %s\n' \
	"$AWS_SK" "$AWS_ST" >"$T/aws.credentials"
chmod 600 "$T/aws.credentials"
stop_catalog warehouse
catalog warehouse --introspect "http://127.0.0.1:$TOK_PORT/introspect"
catalog lakehouse --prefix lhp --sigv4 "$T/aws.json"
WH_URI=http://127.0.0.1:${CAT_PORT[warehouse]}
LH_URI=http://127.0.0.1:${CAT_PORT[lakehouse]}
WH_EXTRA="auth = oauth2
oauth_token_uri = http://127.0.0.1:$TOK_PORT/oauth/tokens
client_id = floe
client_secret_file = $T/oa.secret"
LH_EXTRA="auth = sigv4
sigv4_region = us-east-1
aws_credentials_file = $T/aws.credentials"
write_conf
start_floe
get /v1/warehouse/namespaces/db/tables/bunnies; keep
expect_status "oauth2: a load on the warehouse" 200
get /v1/lakehouse/namespaces/db/tables/bunnies; keep
expect_status "sigv4: a load on the lakehouse" 200
kill -HUP "$FLOE_PID"
sleep 0.3
kill "$TOK_PID"
wait "$TOK_PID" 2>/dev/null
for i in $(seq 60); do
	get /v1/warehouse/namespaces/db/tables/bunnies
	[ "$S" = 503 ] && break
	sleep 0.1
done
keep
expect_status "the token endpoint gone: 503" 503
for p in /status /metrics; do
	curl -s --max-time 5 --unix-socket "$SOCK" "http://floe$p" >"$OUT/admin.cred${p//[^a-z]/_}"
done
ctl status; cp "$T/ctl" "$OUT/ctl.cred_status"
ISSUED=$(cat_requests warehouse | jq -r '.requests[].headers.authorization // empty' | sed -n 's/^Bearer //p' | sort -u)
SIGS=$(cat_requests lakehouse | jq -r '.requests[].headers.authorization // empty' | sed -n 's/.*Signature=//p' | sort -u)
[ -n "$ISSUED" ] && [ -n "$SIGS" ] && ok "(issued tokens and signatures collected to search for)" ||
	bad "no issued token or signature seen by the catalogs"
stop_floe

# Everything floe wrote, and every error it answered.
files=("$T/floe.log" "$T/access.log" "$T/rollback.log" "$OUT"/*)
for f in "$T"/state/*; do files+=("$f"); done
for s in "$WH_TOK" "$LH_TOK" "$CL_TOK" "$BAD_TOK" "$PASS_TOK" "$JWT" \
	"$JWT_SIG" "${BAD_JWT##*.}" "$VENDED_SECRET" "$VENDED_SESSION" \
	"$LH_SECRET" S3CRET-STALE-UPSTREAM "$OA_SECRET" "$AWS_SK" "$AWS_ST" \
	$ISSUED $SIGS; do
	[ -n "$s" ] && [ "$s" != null ] || { bad "a secret value is empty"; continue; }
	hits=$(grep -laF -- "$s" "${files[@]}" 2>/dev/null | grep -v '/answer\.' )
	# Answers may hold vended credentials (they are the client's), never tokens.
	ahits=$(grep -laF -- "$s" "$OUT"/answer.* "$OUT"/raw.* 2>/dev/null)
	if [ -z "$hits" ] && { [ -z "$ahits" ] || [ "$s" = "$VENDED_SECRET" ] ||
		[ "$s" = "$VENDED_SESSION" ] || [ "$s" = "$LH_SECRET" ]; }; then
		ok "${s:0:12}… appears in no log, event, store file, admin answer or error"
	else
		bad "${s:0:12}… found in: $hits $ahits"
	fi
done
grep -qlaF -- "$VENDED_SECRET" "$OUT"/answer.* &&
	ok "(control: the search finds the vended secret in the client's answer)" ||
	bad "control: the search does not find what is there"
grep -q 'client=spark' "$T/access.log" && ok "(the access log does name the client)" || bad "no client= in the access log"
[ -s "$T/floe.log" ] && grep -q "debug\|upstream\|request\|conn" "$T/floe.log" &&
	ok "(floe.log holds debug lines: $(wc -l <"$T/floe.log") lines searched)" || bad "floe.log is empty"
finish
