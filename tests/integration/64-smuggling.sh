#!/bin/bash
# Request smuggling and framing, on both sides. A request framed two ways
# (Content-Length and Transfer-Encoding, two Content-Lengths, obsolete line
# folding, a bare LF, a bad chunk size, a GET with a body, two of a
# header a request carries once: Host, Authorization, Idempotency-Key) is a 400
# ErrorModel and a close, and nothing of it reaches a catalog. An answer
# framed two ways is a 502 naming the catalog, and that connection is
# closed, never reused: no byte of it can become the next client's answer.
. "$(dirname "$0")/lib.sh"
lib_init 64
catalog warehouse

# A raw catalog: a proper /v1/config, then for .../tables/CASE the bytes
# of that case, written as they are, without closing. It logs each
# connection's close as "close CONN" and each request as "req CONN PATH".
cat >"$T/raw.js" <<'JS'
const net = require("net");
const C = "\r\n";
const cases = {
	"cl-te": "HTTP/1.1 200 OK" + C + "Content-Length: 2" + C +
		"Transfer-Encoding: chunked" + C + C + "2" + C + "{}" + C + "0" + C + C,
	"two-cl": "HTTP/1.1 200 OK" + C + "Content-Length: 2" + C +
		"Content-Length: 40" + C + C + "{}",
	"fold": "HTTP/1.1 200 OK" + C + "Content-Type: application/json" + C +
		" ; x=1" + C + "Content-Length: 2" + C + C + "{}",
	"bare-lf": "HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
	"bad-chunk": "HTTP/1.1 200 OK" + C + "Transfer-Encoding: chunked" + C + C +
		"2x" + C + "{}" + C + "0" + C + C,
	"te-gzip": "HTTP/1.1 200 OK" + C + "Transfer-Encoding: gzip" + C + C + "{}",
	"huge": "HTTP/1.1 200 OK" + C + "Content-Length: 2147483648" + C + C + "{}",
	"extra": "HTTP/1.1 200 OK" + C + "Content-Length: 2" + C + C + "{}" +
		"HTTP/1.1 200 OK" + C + "Content-Length: 17" + C + C +
		"{\"smuggled\":true}",
};
let nconn = 0;
const srv = net.createServer((s) => {
	const id = ++nconn;
	let buf = "";
	s.on("data", (d) => {
		buf += d.toString("latin1");
		let e;
		while ((e = buf.indexOf("\r\n\r\n")) >= 0) {
			const head = buf.slice(0, e);
			buf = buf.slice(e + 4);
			const path = head.split(" ")[1];
			console.log("req " + id + " " + path);
			const m = /\/tables\/([a-z-]+)/.exec(path);
			if (m && cases[m[1]]) { s.write(cases[m[1]]); continue; }
			const body = path.startsWith("/v1/config")
				? '{"defaults":{},"overrides":{}}'
				: '{"metadata-location":"s3://b/m.json","metadata":{},"config":{}}';
			s.write("HTTP/1.1 200 OK" + C + "Content-Type: application/json" + C +
				"Content-Length: " + body.length + C + C + body);
		}
	});
	s.on("close", () => console.log("close " + id));
	s.on("error", () => {});
});
srv.listen(0, "127.0.0.1", () => console.log("ready " + srv.address().port));
JS
node "$T/raw.js" >"$T/raw.out" 2>&1 &
pids+=($!)
for i in $(seq 100); do grep -q '^ready' "$T/raw.out" && break; sleep 0.05; done
LH_URI=http://127.0.0.1:$(awk '/^ready/{print $2}' "$T/raw.out")
write_conf
start_floe

CRLF=$'\r\n'
H="Host: 127.0.0.1${CRLF}"

# front DESC REQUEST: a 400 ErrorModel, then a close.
front() {
	local body
	raw "$2"
	body=$(raw_body 1 2>/dev/null)
	if [ "$(raw_status)" = 400 ] && [ "$RAW_RC" = 0 ] &&
		grep -qi '^connection: close' "$T/raw" &&
		echo "$body" | jq -e '.error.code == 400 and .error.type == "BadRequestException"' >/dev/null 2>&1; then
		ok "front end: $1: 400 ErrorModel and close"
	else
		bad "front end: $1: rc $RAW_RC, $(head -c 300 "$T/raw" | tr '\r\n' '  ')"
	fi
}

cat_clear warehouse
front "Content-Length and Transfer-Encoding" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: 4${CRLF}Transfer-Encoding: chunked${CRLF}${CRLF}0${CRLF}${CRLF}GET /v1/routed/namespaces/smuggled HTTP/1.1${CRLF}${H}${CRLF}"
front "two Content-Lengths" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: 2${CRLF}Content-Length: 60${CRLF}${CRLF}{}GET /v1/routed/namespaces/smuggled HTTP/1.1${CRLF}${H}${CRLF}"
front "obsolete line folding" \
	"GET /v1/routed/namespaces HTTP/1.1${CRLF}${H}X-Note: a${CRLF} Transfer-Encoding: chunked${CRLF}${CRLF}"
front "a bare LF" \
	"GET /v1/routed/namespaces HTTP/1.1${CRLF}${H}X-A: 1"$'\n'"Content-Length: 5${CRLF}${CRLF}"
front "a bad chunk size (0x3)" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}${CRLF}0x3${CRLF}abc${CRLF}0${CRLF}${CRLF}"
front "a negative chunk size" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}${CRLF}-3${CRLF}abc${CRLF}0${CRLF}${CRLF}"
front "a chunk size with a space (3 x)" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}${CRLF}3 x${CRLF}abc${CRLF}0${CRLF}${CRLF}"
front "a bare LF after chunk data" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}${CRLF}3${CRLF}abc"$'\n'"0${CRLF}${CRLF}"
front "a chunk size past 64 bits" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}${CRLF}10000000000000000${CRLF}abc${CRLF}0${CRLF}${CRLF}"
front "a GET with a body" \
	"GET /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: 56${CRLF}${CRLF}GET /v1/routed/namespaces/smuggled HTTP/1.1${CRLF}${H}${CRLF}"
front "a chunked GET" \
	"GET /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}${CRLF}0${CRLF}${CRLF}"
front "a Transfer-Encoding other than chunked" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: gzip, chunked${CRLF}${CRLF}0${CRLF}${CRLF}"
front "two Transfer-Encodings" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}Transfer-Encoding: chunked${CRLF}${CRLF}0${CRLF}${CRLF}"
front "two Hosts" \
	"GET /v1/routed/namespaces HTTP/1.1${CRLF}${H}Host: evil${CRLF}${CRLF}"
front "two Authorizations" \
	"GET /v1/routed/namespaces HTTP/1.1${CRLF}${H}Authorization: Bearer a${CRLF}authorization: Bearer attacker-chosen${CRLF}${CRLF}"
grep -q 'more than one Authorization' "$T/raw" &&
	ok "... the message names the header" || bad "message: $(cat "$T/raw")"
front "two Idempotency-Keys" \
	"POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Idempotency-Key: a${CRLF}Content-Length: 2${CRLF}IDEMPOTENCY-KEY: b${CRLF}${CRLF}{}"
raw "GET /v1/routed/namespaces HTTP/2.0${CRLF}${H}${CRLF}"
expect_eq "front end: HTTP/2.0 text: 505" 505 "$(raw_status)"
n=$(cat_requests warehouse | jq '[.requests[] | select(.url | test("smuggled|/namespaces$"))] | length')
expect_eq "none of these reached the catalog" 0 "$n"
raw "GET /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: 0${CRLF}Connection: close${CRLF}${CRLF}"
expect_eq "a GET with Content-Length: 0 is fine" 200 "$(raw_status)"

# The answer side: each bad answer is a 502 and that connection closes.
for c in cl-te two-cl fold bare-lf bad-chunk te-gzip; do
	before=$(grep -c '^close' "$T/raw.out")
	get "/v1/lakehouse/namespaces/db/tables/$c"
	expect_error "answer side: $c: 502" 502 BadGatewayException "lakehouse"
	for i in $(seq 40); do
		[ "$(grep -c '^close' "$T/raw.out")" -gt "$before" ] && break
		sleep 0.05
	done
	if [ "$(grep -c '^close' "$T/raw.out")" -gt "$before" ]; then
		ok "answer side: $c: floe closed that connection"
	else
		bad "answer side: $c: the connection stayed open"
	fi
done
grep -q 'invalid answer from lakehouse' "$T/b" && ok "... the message says the answer was invalid" ||
	bad "message: $(cat "$T/b")"

# A catalog's answer too large to read: the message says it is the
# answer's, not the request's.
get /v1/lakehouse/namespaces/db/tables/huge
expect_error "answer side: a 2 GB Content-Length: 502" 502 BadGatewayException \
	"answer body too large"
grep -q 'request body' "$T/b" && bad "the message blames the request: $(cat "$T/b")"

# Bytes after a complete answer never become the next answer.
get /v1/lakehouse/namespaces/db/tables/extra
expect_eq "an answer with bytes after its body: the body" "200 {}" "$S $(cat "$T/b")"
for i in 1 2 3; do
	get /v1/lakehouse/namespaces/db/tables/plain
	if [ "$S" = 200 ] && ! grep -q smuggled "$T/b"; then
		ok "the next answer ($i) is its own, not the smuggled one"
	else
		bad "the next answer ($i): $(last)"
	fi
done
kill -0 "$FLOE_PID" 2>/dev/null && ok "floe is still up" || bad "floe died"
finish
