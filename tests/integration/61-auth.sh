#!/bin/bash
# Client authentication, [auth] mode: token (named SHA-256 hashes, 401
# ErrorModel otherwise, the name in the access log and the canary hash,
# reloaded on SIGHUP), jwt (RS256, ES256 and HS256 against a JWKS file,
# exp/nbf/aud/iss, identity = sub) and passthrough (the client's token goes
# to the catalog; identity = a hash of it), and /v1/oauth/tokens.
. "$(dirname "$0")/lib.sh"
lib_init 61
catalog warehouse
catalog lakehouse --prefix lhp

sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
printf '# floe clients\nspark %s\ntrino %s\n' "$(sha tok-spark-1)" \
	"$(sha tok-trino-2)" >"$T/clients.tokens"
write_conf
printf '[auth]\nmode = token\ntoken_file = %s\n' "$T/clients.tokens" >>"$T/floe.conf"
start_floe
grep -q "client authentication: token (2 clients)" "$T/floe.log" &&
	ok "start-up says token mode with 2 clients" || bad "no auth line: $(cat "$T/floe.log")"

B=/v1/routed/namespaces/db/tables/bunnies
get $B
expect_error "no Authorization: 401" 401 NotAuthorizedException "no Authorization"
expect_header "... with WWW-Authenticate: Bearer" WWW-Authenticate 'Bearer realm="floe"'
get $B -H "Authorization: Bearer tok-spark-X"
expect_error "an unknown token: 401" 401 NotAuthorizedException "unknown token"
get $B -H "Authorization: Basic dG9rLXNwYXJrLTE="
expect_error "Basic auth: 401" 401 NotAuthorizedException
get /v1/config -H "Authorization: Bearer nope"
expect_status "/v1/config needs a token too" 401
get /healthz
expect_status "/healthz needs none" 200
cat_clear warehouse
get $B -H "Authorization: Bearer tok-spark-1"
expect_status "spark's token: 200" 200
get $B -H "authorization: bearer tok-trino-2"
expect_status "trino's token, lower-case scheme: 200" 200
n=$(cat_requests warehouse | jq '[.requests[] | select(.headers.authorization != null)] | length')
expect_eq "client tokens are floe's: never forwarded to the catalog" 0 "$n"
for i in $(seq 40); do grep -q 'client=trino' "$T/access.log" 2>/dev/null && break; sleep 0.05; done
grep -q "tables/bunnies target=warehouse .* client=spark$" "$T/access.log" &&
	ok "the access log names the client (client=spark)" ||
	bad "access log: $(cat "$T/access.log")"
grep -q 'status=401' "$T/access.log" && ok "401s are in the access log" || bad "no 401 line"

# Canary stickiness follows the name: floectl resolve --client NAME
# predicts the side every request with NAME's token gets.
ctl_ok "route" route set db.bunnies 1
curl -s -o /dev/null --unix-socket "$SOCK" -X POST \
	-H 'Content-Type: application/json' \
	--data-binary '{"to":"canary","pct":50}' http://floe/waves/1/flip
both=""
for c in spark trino; do
	want=$(curl -s --unix-socket "$SOCK" "http://floe/resolve/db.bunnies?client=$c" | jq -r .target)
	tok=tok-spark-1
	[ $c = trino ] && tok=tok-trino-2
	for i in 1 2 3; do
		get $B -H "Authorization: Bearer $tok"
		[ "$(hdr X-Floe-Target)" = "$want" ] || { bad "$c: request $i went to $(hdr X-Floe-Target), resolve said $want"; continue 2; }
	done
	ok "canary: $c's requests all go where resolve --client $c says ($want)"
done

post /v1/oauth/tokens 'grant_type=client_credentials' -H "Authorization: Bearer tok-spark-1"
expect_jq "/v1/oauth/tokens in token mode: a 400 OAuthError saying what to configure" 400 \
	'(keys == ["error","error_description"]) and .error == "invalid_request" and
	 (.error_description | contains("configure the client with a"))'

# SIGHUP reads the token file again.
printf 'spark %s\nflink %s\n' "$(sha tok-spark-1)" "$(sha tok-flink-3)" >"$T/clients.tokens"
kill -HUP "$FLOE_PID"
for i in $(seq 100); do grep -q "reload: configuration" "$T/floe.log" && break; sleep 0.05; done
get $B -H "Authorization: Bearer tok-flink-3"
expect_status "after SIGHUP a new client's token works" 200
get $B -H "Authorization: Bearer tok-trino-2"
expect_status "... and a removed one is refused" 401
echo "spark nothex" >"$T/clients.tokens"
kill -HUP "$FLOE_PID"
for i in $(seq 100); do grep -q "clients.tokens: line 1" "$T/floe.log" && break; sleep 0.05; done
grep -q "reload: .*clients.tokens: line 1: .*keeping the running" "$T/floe.log" &&
	ok "a broken token file on reload: refused with its line, old tokens kept" ||
	bad "no refusal: $(tail -3 "$T/floe.log")"
get $B -H "Authorization: Bearer tok-flink-3"
expect_status "... flink still works" 200
stop_floe

# --- jwt: keys and tokens made by node's crypto.
cat >"$T/jwt.js" <<'JS'
const crypto = require("crypto"), fs = require("fs");
const dir = process.argv[2];
const b64 = (b) => Buffer.from(b).toString("base64url");
const rsa = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
const hs = crypto.randomBytes(32);
const jwk = (k, kid) => Object.assign(k.publicKey.export({ format: "jwk" }), { kid });
fs.writeFileSync(dir + "/jwks.json", JSON.stringify({ keys: [
	jwk(rsa, "r1"), jwk(ec, "e1"), { kty: "oct", kid: "h1", k: b64(hs) },
]}));
const now = Math.floor(Date.now() / 1000);
const sign = (alg, claims, hdr = {}) => {
	const h = b64(JSON.stringify(Object.assign({ alg, typ: "JWT" }, hdr)));
	const p = b64(JSON.stringify(claims));
	const data = h + "." + p;
	let s = "";
	if (alg === "RS256") s = b64(crypto.sign("sha256", Buffer.from(data), rsa.privateKey));
	if (alg === "ES256") s = b64(crypto.sign("sha256", Buffer.from(data),
		{ key: ec.privateKey, dsaEncoding: "ieee-p1363" }));
	if (alg === "HS256") s = b64(crypto.createHmac("sha256", hs).update(data).digest());
	return data + "." + s;
};
const base = { iss: "https://idp.test", aud: "floe", exp: now + 600, nbf: now - 5 };
const t = {
	alice: sign("RS256", Object.assign({ sub: "alice@corp" }, base), { kid: "r1" }),
	bob: sign("ES256", Object.assign({ sub: "svc-bob" }, base)),
	carol: sign("HS256", Object.assign({ sub: "carol" }, base, { aud: ["x", "floe"] })),
	expired: sign("RS256", Object.assign({}, base, { sub: "late", exp: now - 3600 })),
	future: sign("RS256", Object.assign({}, base, { sub: "early", nbf: now + 3600 })),
	aud: sign("RS256", Object.assign({}, base, { sub: "a", aud: "other" })),
	iss: sign("ES256", Object.assign({}, base, { sub: "a", iss: "https://evil" })),
	none: sign("none", Object.assign({ sub: "mallory" }, base)),
	tampered: (() => { const x = sign("RS256", Object.assign({ sub: "alice" }, base)).split(".");
		x[1] = b64(JSON.stringify(Object.assign({ sub: "root" }, base))); return x.join("."); })(),
};
for (const k of Object.keys(t)) fs.writeFileSync(dir + "/jwt." + k, t[k]);
JS
node "$T/jwt.js" "$T" || bad "node could not make keys"
sed -i '/^\[auth\]/,$d' "$T/floe.conf"
printf '[auth]\nmode = jwt\njwks_file = %s\naudience = floe\nissuer = https://idp.test\n' \
	"$T/jwks.json" >>"$T/floe.conf"
: >"$T/access.log"
start_floe
grep -q "client authentication: jwt (3 keys)" "$T/floe.log" && ok "jwt mode with 3 keys" ||
	bad "no jwt line: $(grep auth "$T/floe.log")"
for c in "alice:RS256:alice@corp" "bob:ES256:svc-bob" "carol:HS256:carol"; do
	IFS=: read -r who alg sub <<<"$c"
	get $B -H "Authorization: Bearer $(cat "$T/jwt.$who")"
	expect_status "a $alg JWT verifies (sub $sub)" 200
done
for c in "expired:expired" "future:nbf" "aud:audience" "iss:issuer" \
	"none:alg must be" "tampered:signature"; do
	IFS=: read -r which why <<<"$c"
	get $B -H "Authorization: Bearer $(cat "$T/jwt.$which")"
	expect_error "JWT $which: 401 ($why)" 401 NotAuthorizedException "$why"
	if grep -qF "$(cat "$T/jwt.$which")" "$T/b"; then bad "the 401 echoes the token"; fi
done
for i in $(seq 40); do grep -q 'client=carol' "$T/access.log" 2>/dev/null && break; sleep 0.05; done
grep -q 'client=alice@corp$' "$T/access.log" && grep -q 'client=svc-bob$' "$T/access.log" &&
	ok "the identity in the access log is the JWT's sub" ||
	bad "access log: $(cat "$T/access.log")"
stop_floe

# --- passthrough: the client's token goes to the catalog.
sed -i '/^\[auth\]/,$d' "$T/floe.conf"
printf '[auth]\nmode = passthrough\n' >>"$T/floe.conf"
: >"$T/access.log"
start_floe
cat_clear warehouse
get /v1/warehouse/namespaces/db/tables/bunnies -H "Authorization: Bearer client-own-token"
expect_status "passthrough: a client's token is served" 200
expect_eq "... and forwarded to the catalog as it came" "Bearer client-own-token" \
	"$(cat_requests warehouse | jq -r '[.requests[] | select(.url | contains("bunnies"))][-1].headers.authorization')"
get $B
expect_error "passthrough without a token: 401" 401 NotAuthorizedException
want="client=tok-$(sha client-own-token | cut -c1-16)"
for i in $(seq 40); do grep -q "$want" "$T/access.log" 2>/dev/null && break; sleep 0.05; done
grep -q "$want\$" "$T/access.log" && ok "identity = a hash of the token ($want)" ||
	bad "access log: $(cat "$T/access.log")"
grep -q 'client-own-token' "$T/access.log" "$T/floe.log" && bad "the token is in a log" ||
	ok "the token itself is in no log"
cat_clear warehouse
post /v1/oauth/tokens 'grant_type=client_credentials&client_id=a&client_secret=b' \
	-H 'Content-Type: application/x-www-form-urlencoded'
expect_header "/v1/oauth/tokens is forwarded to the warehouse" X-Floe-Target warehouse
expect_eq "... at /v1/oauth/tokens, with its body" \
	"POST /v1/oauth/tokens grant_type=client_credentials&client_id=a&client_secret=b" \
	"$(cat_requests warehouse | jq -r '.requests[-1] | "\(.method) \(.url) \(.body)"')"
finish
