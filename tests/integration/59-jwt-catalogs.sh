#!/bin/bash
# Integration 59: in jwt mode a client's JWT is its credential to floe
# (audience floe), never a catalog's. A catalog with a token_file gets
# floe's token; one without gets no credential at all (floe -t and the
# start-up log say so); only passthrough forwards the client's token.
# Vended credentials are cached per token (its hash), not per subject:
# two tokens of the same sub never share an answer.
. "$(dirname "$0")/lib.sh"
lib_init 59
catalog warehouse
catalog lakehouse --prefix lhp
printf 'floe-wh-token\n' >"$T/wh.token"
WH_EXTRA="token_file = $T/wh.token"
CACHE_SIZE=1M
write_conf
cat >"$T/jwt.js" <<'JS'
const crypto = require("crypto"), fs = require("fs");
const dir = process.argv[2];
const b64 = (b) => Buffer.from(b).toString("base64url");
const hs = crypto.randomBytes(32);
fs.writeFileSync(dir + "/jwks.json", JSON.stringify({ keys: [
	{ kty: "oct", kid: "h1", k: b64(hs) } ]}));
const now = Math.floor(Date.now() / 1000);
const sign = (claims) => {
	const data = b64(JSON.stringify({ alg: "HS256", typ: "JWT", kid: "h1" })) +
		"." + b64(JSON.stringify(claims));
	return data + "." + b64(crypto.createHmac("sha256", hs).update(data).digest());
};
const base = { iss: "https://idp.test", aud: "floe", exp: now + 600, nbf: now - 5, sub: "etl" };
fs.writeFileSync(dir + "/jwt.read", sign(Object.assign({ scope: "read" }, base)));
fs.writeFileSync(dir + "/jwt.write", sign(Object.assign({ scope: "write" }, base)));
JS
node "$T/jwt.js" "$T" || bad "node could not make keys"
printf '[auth]\nmode = jwt\njwks_file = %s\naudience = floe\nissuer = https://idp.test\n' \
	"$T/jwks.json" >>"$T/floe.conf"

"$FLOE" -t -c "$T/floe.conf" 2>"$T/t.err"
expect_eq "floe -t passes" 0 "$?"
if grep -q "lakehouse.*no credential" "$T/t.err" &&
	! grep -q "warehouse.*no credential" "$T/t.err"; then
	ok "floe -t says the lakehouse gets no credential"
else
	bad "floe -t: $(cat "$T/t.err")"
fi
start_floe
grep -q "lakehouse.*no credential" "$T/floe.log" &&
	ok "the start-up log says so too" || bad "log: $(grep -i credential "$T/floe.log")"

R="Authorization: Bearer $(cat "$T/jwt.read")"
W="Authorization: Bearer $(cat "$T/jwt.write")"
get /v1/lakehouse/namespaces/db/tables/athena -H "$R"
expect_status "a lakehouse load with a JWT" 200
expect_eq "the lakehouse gets no credential, not the client's JWT" null \
	"$(cat_requests lakehouse | jq -r '[.requests[] | select(.url | contains("athena"))][-1].headers.authorization')"
get /v1/warehouse/namespaces/db/tables/bunnies -H "$R"
expect_eq "the warehouse gets floe's token" "Bearer floe-wh-token" \
	"$(cat_requests warehouse | jq -r '[.requests[] | select(.url | contains("bunnies"))][-1].headers.authorization')"
if { cat_requests warehouse; cat_requests lakehouse; } |
	grep -qF "$(cat "$T/jwt.read")"; then
	bad "a client's JWT reached a catalog"
else
	ok "no client JWT reached a catalog"
fi

# Two tokens, one sub: vended credentials are never shared.
D=(-H 'X-Iceberg-Access-Delegation: vended-credentials')
V=/v1/warehouse/namespaces/db/tables/java_bunnies
get $V -H "$R" "${D[@]}"
expect_header "read token: a miss" X-Floe-Cache miss
get $V -H "$R" "${D[@]}"
expect_header "read token again: a hit" X-Floe-Cache hit
get $V -H "$W" "${D[@]}"
expect_header "write token, same sub: a miss, not the read token's answer" \
	X-Floe-Cache miss
finish
