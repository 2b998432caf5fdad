#!/bin/bash
# AWS SigV4 and Google service accounts, against independent verifiers.
# The warehouse is "Glue" (credentials file with a session token), the
# lakehouse "S3 Tables" (credentials in floe's environment, the payload
# hash sent): every request the test catalogs get, floe's own /v1/config
# included, is recomputed with botocore (tests/catauth/sigcheck.py) and
# refused when bad or stale; what floe signs is what it sends after its
# rewrites (a %1F namespace, a query with a comma and a space, a commit's
# body). Then a Google service account: the JWT-bearer grant verified
# with PyJWT by tests/catauth/tokens.py. No key, token or signature in
# floe's log, status or metrics.
. "$(dirname "$0")/lib.sh"
lib_init 67

AKID=AKIAFLOETEST$RANDOM
SKEY="floe/secret+$RANDOM$RANDOM$RANDOM"
STOK="FwoGZXIvYXdzE-session-$RANDOM$RANDOM$RANDOM"
LAKID=AKIALAKE$RANDOM
LSKEY="lake-secret-$RANDOM$RANDOM"
jq -n --arg a "$AKID" --arg s "$SKEY" --arg t "$STOK" \
	'{akid: $a, secret: $s, token: $t, region: "eu-west-1", service: "glue"}' >"$T/wh.json"
jq -n --arg a "$LAKID" --arg s "$LSKEY" \
	'{akid: $a, secret: $s, token: null, region: "us-east-1", service: "s3tables"}' >"$T/lh.json"
printf '[default]\naws_access_key_id = AKIANOTTHISONE\naws_secret_access_key = x\n\n[floe]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = %s\n' \
	"$AKID" "$SKEY" "$STOK" >"$T/aws.credentials"
chmod 600 "$T/aws.credentials"

catalog warehouse --sigv4 "$T/wh.json"
catalog lakehouse --prefix lhp --sigv4 "$T/lh.json"
WH_EXTRA="auth = sigv4
sigv4_region = eu-west-1
aws_credentials_file = $T/aws.credentials
aws_profile = floe"
LH_EXTRA="auth = sigv4
sigv4_region = us-east-1
sigv4_service = s3tables"
write_conf
# floe at debug level: log_debug must not leak either.
printf '#!/bin/sh\nexec "%s" -v "$@"\n' "$FLOE" >"$T/floe-v"
chmod +x "$T/floe-v"
FLOE=$T/floe-v
export AWS_ACCESS_KEY_ID=$LAKID AWS_SECRET_ACCESS_KEY=$LSKEY
unset AWS_SESSION_TOKEN
start_floe
ok "ready: both /v1/config were signed and accepted"

# verdicts NAME: the catalog's verdict on each request, one a line.
verdicts() { cat_requests "$1" | jq -r '.requests[] | "\(.sigv4) \(.method) \(.url)"'; }

ctl_ok "route set" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse
NS=/v1/routed/namespaces/db
get "$NS/tables/athena?snapshots=all&note=a,b%20c"
expect_status "Glue: a LoadTable with a comma and a space in its query" 200
get "$NS%1Fsub/tables/nope"
expect_error "Glue: a %1F namespace, signed as floe sends it" 404
post "$NS/tables/athena" '{"requirements":[],"updates":[{"action":"set-properties","updates":{"floe.sig":"1"}}]}'
expect_status "Glue: a commit, its body hashed" 200
big=$(head -c 300000 /dev/zero | tr '\0' x)
printf '{"requirements":[],"updates":[{"action":"set-properties","updates":{"floe.big":"%s"}}]}' \
	"$big" >"$T/big.json"
req POST "$NS/tables/athena" -H 'Content-Type: application/json' --data-binary @"$T/big.json"
expect_status "Glue: a 300 KB commit, its body hashed in many pieces" 200
get "$NS/tables/bunnies"
expect_status "S3 Tables: a LoadTable on the lakehouse" 200
expect_header "... answered by the lakehouse" X-Floe-Target lakehouse
n=$(verdicts warehouse | grep -vc '^ok ')
expect_eq "botocore agrees with every warehouse signature" 0 "$n"
n=$(verdicts lakehouse | grep -vc '^ok ')
expect_eq "... and with every lakehouse signature" 0 "$n"
verdicts warehouse | grep -q '^ok GET /v1/config' &&
	verdicts warehouse | grep -q '^ok POST /v1/namespaces/db/tables/athena$' &&
	verdicts warehouse | grep -q '%1Fsub/tables/nope' &&
	ok "... /v1/config, the commit and the %1F namespace among them" ||
	bad "warehouse verdicts: $(verdicts warehouse)"
last_wh() { cat_requests warehouse | jq -r "[.requests[] | select(.url | contains(\"athena\"))][-1].headers$1"; }
expect_eq "the session token went along" "$STOK" "$(last_wh '["x-amz-security-token"]')"
h=$(cat_requests lakehouse | jq -r '[.requests[] | select(.url | contains("bunnies"))][-1].headers["x-amz-content-sha256"]')
expect_eq "S3 Tables: the payload hash sent" "$(printf '' | sha256sum | cut -d' ' -f1)" "$h"

# --- the verifier refuses bad and stale signatures (floe's own, replayed)
WHURL=http://127.0.0.1:${CAT_PORT[warehouse]}
hdrs=()
while IFS= read -r l; do hdrs+=(-H "$l"); done < <(cat_requests warehouse |
	jq -r '[.requests[] | select(.method == "GET" and (.url | contains("athena")))][-1].headers
		| to_entries[] | select(.key | test("^(authorization|x-amz-)")) | "\(.key): \(.value)"')
u=$(cat_requests warehouse | jq -r '[.requests[] | select(.method == "GET" and (.url | contains("athena")))][-1].url')
s=$(curl -s -o "$T/r" -w '%{http_code}' "${hdrs[@]}" "$WHURL$u")
expect_eq "floe's signature replayed as it was: accepted" 200 "$s"
s=$(curl -s -o "$T/r" -w '%{http_code}' "${hdrs[@]}" "$WHURL${u/athena/bunnies}")
[ "$s" = 403 ] && grep -q 'signature mismatch' "$T/r" &&
	ok "... on another path: refused (403, signature mismatch)" || bad "another path: $s $(cat "$T/r")"
old=$(date -u -d '-10 min' +%Y%m%dT%H%M%SZ)
stale=()
for h in "${hdrs[@]}"; do
	case $h in x-amz-date:*) stale+=("x-amz-date: $old") ;; *) stale+=("$h") ;; esac
done
s=$(curl -s -o "$T/r" -w '%{http_code}' "${stale[@]}" "$WHURL$u")
[ "$s" = 403 ] && grep -q 'stale' "$T/r" &&
	ok "... 10 minutes old: refused (403, stale)" || bad "stale: $s $(cat "$T/r")"
s=$(curl -s -o "$T/r" -w '%{http_code}' "$WHURL$u")
expect_eq "... unsigned: refused" 403 "$s"

# --- hygiene: no secret key, session token or signature anywhere of floe's
admin GET /status
cp "$T/b" "$T/status.json"
expect_eq "status: the access key id and where it came from" \
	"sigv4 eu-west-1 glue $AKID $T/aws.credentials [floe]" \
	"$(jq -r '.catalogs.warehouse.auth | "\(.mode) \(.region) \(.service) \(.access_key_id) \(.credentials)"' "$T/status.json")"
admin GET /metrics
cp "$T/b" "$T/metrics.txt"
sigs=$(cat_requests warehouse | jq -r '.requests[].headers.authorization' | sed -n 's/.*Signature=//p' | sort -u)
leak=
for f in "$T/floe.log" "$T/access.log" "$T/status.json" "$T/metrics.txt"; do
	for s in "$SKEY" "$STOK" "$LSKEY" $sigs; do
		grep -qF -- "$s" "$f" 2>/dev/null && leak="$leak $f"
	done
done
[ -z "$leak" ] && ok "no secret key, session token or signature in log, status or metrics" ||
	bad "a secret in:$leak"
stop_floe
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY

# --- a Google service account: the JWT-bearer grant, checked with PyJWT
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/sa.pem" 2>/dev/null
openssl pkey -in "$T/sa.pem" -pubout -out "$T/sa.pub" 2>/dev/null
printf 'unused\n' >"$T/unused.secret"
/usr/bin/python3 tests/catauth/tokens.py --client-id unused --secret-file "$T/unused.secret" \
	--google-pub "$T/sa.pub" --google-email floe@proj.iam.gserviceaccount.com \
	>"$T/tokens.out" 2>"$T/tokens.err" &
pids+=($!)
for i in $(seq 100); do grep -q '^ready ' "$T/tokens.out" && break; sleep 0.05; done
TOK_PORT=$(awk '/^ready /{print $2}' "$T/tokens.out")
[ -n "$TOK_PORT" ] || { bad "tokens.py did not start: $(cat "$T/tokens.err")"; finish; }
jq -n --rawfile k "$T/sa.pem" --arg u "http://127.0.0.1:$TOK_PORT/google/token" \
	'{type: "service_account", private_key_id: "kid-1", private_key: $k,
	  client_email: "floe@proj.iam.gserviceaccount.com", token_uri: $u}' >"$T/sa.json"
chmod 600 "$T/sa.json"
stop_catalog warehouse
catalog warehouse --introspect "http://127.0.0.1:$TOK_PORT/introspect"
stop_catalog lakehouse
catalog lakehouse --prefix lhp
WH_EXTRA="auth = google
google_key_file = $T/sa.json"
LH_EXTRA=
WH_URI=http://127.0.0.1:${CAT_PORT[warehouse]}
LH_URI=http://127.0.0.1:${CAT_PORT[lakehouse]}
write_conf
start_floe
ok "google: ready (/v1/config carried the service account's token)"
get "$NS/tables/athena"
expect_status "google: a LoadTable on the warehouse" 200
st=$(curl -s "http://127.0.0.1:$TOK_PORT/stats")
expect_eq "the token server verified an RS256 assertion (PyJWT), cloud-platform scope" \
	"jwt https://www.googleapis.com/auth/cloud-platform 0" \
	"$(jq -r '"\(.last_auth) \(.last_scope) \(.refused)"' <<<"$st")"
expect_eq "status: google, jwt-bearer, ok" "google jwt-bearer ok" \
	"$(admin GET /status; jq -r '.catalogs.warehouse.auth | "\(.mode) \(.token.grant) \(.token.state)"' "$T/b")"
key=$(sed -n 2p "$T/sa.pem")
{ grep -qF -e "$key" "$T/floe.log" "$T/b" || grep -qE 'tok-[0-9]+-' "$T/floe.log" "$T/b"; } &&
	bad "a key or token in floe's log or status" || ok "no key or token in the log or status"
finish
