#!/bin/bash
# Malformed and hostile requests on raw sockets: every one is answered with
# the right status and an Iceberg ErrorModel whose code is that status, and
# framing errors close the connection. Then the good side of HTTP/1.1:
# several requests on one connection, pipelined requests answered in
# order, chunked request bodies, HTTP/1.0.
. "$(dirname "$0")/lib.sh"
lib_init 45
catalog warehouse
catalog lakehouse --prefix lhp
FLOE_EXTRA="max_body = 1k
idle_timeout = 2s
header_timeout = 1s
max_header = 8k"
write_conf
start_floe

CRLF=$'\r\n'
H="Host: 127.0.0.1${CRLF}"

# expect_raw DESC STATUS [TYPE]: the first answer in $T/raw has STATUS and
# an ErrorModel body with code STATUS (and TYPE).
expect_raw() {
	local s body f
	s=$(raw_status)
	body=$(raw_body 1 2>/dev/null)
	f="(keys == [\"error\"]) and .error.code == $2
		and (.error.message | type == \"string\" and length > 0)
		and (.error.type | type == \"string\" and length > 0)"
	[ -n "${3:-}" ] && f="$f and .error.type == \"$3\""
	if [ "$s" = "$2" ] && echo "$body" | jq -e "$f" >/dev/null 2>&1; then
		ok "$1"
	else
		bad "$1: want $2 ErrorModel, got: $(head -c 400 "$T/raw" | tr '\r' ' ')"
	fi
}

# expect_closed DESC: the answer said Connection: close and the socket
# closed (raw returned before its timeout).
expect_closed() {
	if [ "$RAW_RC" = 0 ] && grep -qi '^connection: close' "$T/raw"; then
		ok "$1"
	else
		bad "$1: rc $RAW_RC, answer: $(head -c 200 "$T/raw" | tr '\r' ' ')"
	fi
}

# --- paths and methods (valid HTTP: ask for a close to end the read)
raw "GET /nope HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_raw "unknown path: 404" 404 NotFoundException
raw "GET /v1/routed/namespaces/db/tables/bunnies/nope HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_raw "unknown path below a table: 404" 404
raw "DELETE /v1/routed/namespaces HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_raw "DELETE on the namespace list: 405" 405
if grep -qi '^allow: GET, POST\s*$' "$T/raw"; then
	ok "... with Allow: GET, POST"
else
	bad "no Allow: $(head -c 300 "$T/raw" | tr '\r\n' '  ')"
fi
raw "PATCH /v1/routed/namespaces/db/tables/bunnies HTTP/1.1${CRLF}${H}Connection: close${CRLF}Content-Length: 0${CRLF}${CRLF}"
expect_raw "PATCH on a table: 405" 405
if grep -qi '^allow: GET, HEAD, POST, DELETE\s*$' "$T/raw"; then
	ok "... with Allow: GET, HEAD, POST, DELETE"
else
	bad "no Allow: $(head -c 300 "$T/raw" | tr '\r\n' '  ')"
fi
raw "GET /v1/oauth/tokens HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_raw "GET on the token endpoint: 405" 405
grep -qi '^allow: POST\s*$' "$T/raw" && ok "... with Allow: POST" ||
	bad "no Allow: $(head -c 300 "$T/raw" | tr '\r\n' '  ')"
raw "GET /v1/routed/namespaces/db/tables/bun%zzies HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_raw "bad percent-encoding: 400" 400 BadRequestException
raw "GET /v1/routed/namespaces/db/tables/bun%4 HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_raw "truncated percent-encoding: 400" 400
raw "GET /v1/routed/namespaces/db/tables/bun%01ies HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_raw "a control character in a name: 400" 400
raw "GET /v1/routed/namespaces//tables/x HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_raw "an empty namespace: 400 or 404" "$(raw_status | grep -E '^(400|404)$')"
# curl --request-target sends the target as given.
S=$(curl -s -o "$T/b" -w '%{http_code}' --max-time 5 \
	--request-target '/v1/routed/namespaces/db/tables/a%2' "$BASE/")
expect_error "curl --request-target with a broken escape: 400" 400

# --- framing errors: answered, then the connection closes
raw "GARBAGE${CRLF}${CRLF}"
expect_raw "a garbage request line: 400" 400
expect_closed "... and the connection closes"
raw $'\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03'
expect_raw "a TLS hello on the plain port: 400" 400
raw "GET /v1/config HTTP/1.1${CRLF}${H}X-Long: $(head -c 9000 /dev/zero | tr '\0' a)${CRLF}${CRLF}"
expect_raw "a header longer than max_header: 431" 431
expect_closed "... and the connection closes"
hs=
for i in $(seq 150); do hs="${hs}X-H$i: $i${CRLF}"; done
raw "GET /v1/config HTTP/1.1${CRLF}${H}${hs}${CRLF}"
expect_raw "150 header fields: 431" 431
raw "GET /v1/config?x=$(head -c 9000 /dev/zero | tr '\0' a) HTTP/1.1${CRLF}${H}${CRLF}"
expect_raw "a request-target longer than max_header: 414" 414
body=$(head -c 2000 /dev/zero | tr '\0' x)
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Type: application/json${CRLF}Content-Length: 2000${CRLF}${CRLF}$body"
expect_raw "a body larger than max_body (Content-Length): 413" 413
expect_closed "... and the connection closes"
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}${CRLF}7d0${CRLF}$body${CRLF}0${CRLF}${CRLF}"
expect_raw "a chunked body larger than max_body: 413" 413
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Transfer-Encoding: chunked${CRLF}${CRLF}zz${CRLF}abc${CRLF}0${CRLF}${CRLF}"
expect_raw "a bad chunk size: 400" 400
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: 5${CRLF}Transfer-Encoding: chunked${CRLF}${CRLF}5${CRLF}hello${CRLF}0${CRLF}${CRLF}"
expect_raw "Content-Length and Transfer-Encoding together: 400" 400
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: 5${CRLF}Content-Length: 6${CRLF}${CRLF}hello!"
expect_raw "two Content-Lengths: 400" 400
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: 5${CRLF}Content-Length: 5${CRLF}${CRLF}hello"
expect_raw "two equal Content-Lengths: 400" 400
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: -1${CRLF}${CRLF}"
expect_raw "a negative Content-Length: 400" 400
raw "CONNECT 127.0.0.1:80 HTTP/1.1${CRLF}${H}${CRLF}"
expect_raw "CONNECT: 400 or 405" "$(raw_status | grep -E '^(400|405)$')"
raw "GET /v1/config HTTP/1.1${CRLF}${H}Bad Header Name: x${CRLF}${CRLF}"
expect_raw "a header name with spaces: 400" 400
raw "GET /v1/config HTTP/1.1${CRLF}Connection: close${CRLF}${CRLF}"
expect_raw "an HTTP/1.1 request without Host: 400" 400
expect_eq "... saying so" 1 "$(grep -c 'no Host header' "$T/raw")"
raw "GET /v1/config HTTP/1.0${CRLF}${CRLF}"
expect_eq "an HTTP/1.0 request without Host is fine" 200 "$(raw_status)"
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length : 5${CRLF}${CRLF}hello"
expect_raw "whitespace before the colon (Content-Length : 5): 400" 400
raw "GET /v1/config HTTP/1.1${CRLF}${H}X-Empty:${CRLF}X-After: 1${CRLF}Connection: close${CRLF}${CRLF}"
expect_eq "an empty header value is fine" 200 "$(raw_status)"

# --- a slow client: half a request, then silence
start=$(date +%s%N)
raw "GET /v1/config HTTP/1.1${CRLF}${H}X-Slow: 1${CRLF}" 6
ms=$((($(date +%s%N) - start) / 1000000))
if [ "$RAW_RC" = 0 ] && [ "$ms" -lt 4000 ]; then
	ok "half a request head: closed after ${ms} ms (header_timeout = 1s)"
else
	bad "half a request head: rc $RAW_RC after ${ms} ms"
fi
expect_raw "... with 408" 408 RequestTimeoutException
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Length: 100${CRLF}${CRLF}{\"names" 6
if [ "$RAW_RC" = 0 ]; then
	ok "half a body: the connection does not hang ($(raw_status))"
else
	bad "half a body: still open after 6 s"
fi

# --- an idle keep-alive connection: closed after idle_timeout (2s)
start=$(date +%s%N)
raw "GET /healthz HTTP/1.1${CRLF}${H}${CRLF}" 8
ms=$((($(date +%s%N) - start) / 1000000))
if [ "$RAW_RC" = 0 ] && [ "$(raw_statuses)" = 200 ] && [ "$ms" -ge 1500 ] &&
	[ "$ms" -lt 5000 ]; then
	ok "an idle keep-alive connection is closed after idle_timeout (${ms} ms)"
else
	bad "idle keep-alive: rc $RAW_RC, answers \"$(raw_statuses)\", closed after ${ms} ms (want about 2000)"
fi

# --- idle_timeout counts from the last answer, not the first: requests at
# 0, 1.5 and 2.5 s on one connection are all answered (2.5 s is past the
# deadline the first answer set), and it closes about 2 s after the last.
printf 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >"$T/idle.in"
node -e '
	const net = require("net"), fs = require("fs");
	const [port, file, out] = process.argv.slice(1);
	const req = fs.readFileSync(file), got = [], t0 = Date.now();
	const s = net.connect(Number(port), "127.0.0.1");
	const done = () => {
		const answers = Buffer.concat(got).toString()
			.split("HTTP/1.1 200 ").length - 1;
		fs.writeFileSync(out, answers + " " + (Date.now() - t0));
		process.exit(0);
	};
	s.on("data", (d) => got.push(d));
	s.on("error", () => {});
	s.on("close", done);
	s.write(req);
	setTimeout(() => s.write(req), 1500);
	setTimeout(() => s.write(req), 2500);
	setTimeout(done, 9000);
' "$LISTEN" "$T/idle.in" "$T/idle.out"
read -r answers ms <"$T/idle.out"
if [ "$answers" = 3 ] && [ "$ms" -ge 4000 ] && [ "$ms" -lt 7000 ]; then
	ok "idle_timeout runs from the last answer: 3 answers, closed after ${ms} ms"
else
	bad "idle from the last answer: $answers answers, closed after ${ms} ms (want 3, about 4500)"
fi

# --- HEAD and HTTP/1.0
raw "HEAD /v1/routed/namespaces/db HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_eq "HEAD namespace: 204" 204 "$(raw_status)"
expect_eq "... and no body bytes" "" "$(sed -n '/^\r$/,$p' "$T/raw" | tail -n +2)"
raw "GET /healthz HTTP/1.0${CRLF}${CRLF}"
expect_eq "HTTP/1.0 without keep-alive: answered" 200 "$(raw_status)"
expect_closed "... and closed"

# --- keep-alive: several requests on one connection
curl -sv -o /dev/null -o /dev/null -o /dev/null --max-time 10 \
	"$BASE/v1/routed/namespaces/db/tables/bunnies" \
	"$BASE/v1/routed/namespaces/db/tables/athena" \
	"$BASE/v1/routed/namespaces" 2>"$T/curl.err"
n=$(grep -c 'Re-using existing connection' "$T/curl.err")
expect_eq "three requests, one connection (curl re-used it twice)" 2 "$n"
# And after an error answered without a close (404), the connection stays.
curl -sv -o /dev/null -o /dev/null --max-time 10 "$BASE/nope" \
	"$BASE/v1/routed/namespaces/db" 2>"$T/curl.err"
n=$(grep -c 'Re-using existing connection' "$T/curl.err")
expect_eq "a 404 keeps the connection" 1 "$n"

# --- pipelining: three requests in one write, answered in order; the
# first is forwarded to a slow catalog, the others are local
fault warehouse '{"match":"/tables/athena","delay_ms":300,"count":1}'
raw "GET /v1/routed/namespaces/db/tables/athena HTTP/1.1${CRLF}${H}${CRLF}GET /healthz HTTP/1.1${CRLF}${H}${CRLF}GET /v1/config?warehouse=lakehouse HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}" 8
expect_eq "pipelined: three answers" "200 200 200" "$(raw_statuses)"
expect_eq "... the slow table first" db.athena \
	"$(raw_body 1 | jq -r '.config["floe-test.table"]')"
expect_eq "... then /healthz" alive "$(raw_body 2 | jq -r .status)"
expect_eq "... then /v1/config" lakehouse "$(raw_body 3 | jq -r .overrides.prefix)"
# Many at once: 200 local answers and 50 forwarded, in one write.
many=
for i in $(seq 200); do many="${many}GET /healthz HTTP/1.1${CRLF}${H}${CRLF}"; done
for i in $(seq 50); do many="${many}GET /v1/routed/namespaces/db/tables/athena?n=$i HTTP/1.1${CRLF}${H}${CRLF}"; done
raw "${many}GET /v1/config HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}" 20
st=$(raw_statuses)
expect_eq "251 pipelined requests: 251 answers, all 200" "251 200" \
	"$(echo "$st" | wc -w) $(echo "$st" | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... the last one is /v1/config" routed \
	"$(raw_body 251 | jq -r .overrides.prefix)"
# A pipelined request behind a framing error is not answered.
raw "GET /healthz HTTP/1.1${CRLF}${H}${CRLF}GARBAGE${CRLF}${CRLF}GET /healthz HTTP/1.1${CRLF}${H}${CRLF}"
expect_eq "pipelined after garbage: the good one, the 400, then a close" \
	"200 400" "$(raw_statuses)"

# --- an h2c upgrade (Java's HttpClient asks for one on http://) is
# answered in HTTP/1.1 and the connection stays usable
raw "GET /v1/routed/namespaces/db/tables/athena HTTP/1.1${CRLF}${H}Connection: Upgrade, HTTP2-Settings${CRLF}Upgrade: h2c${CRLF}HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA${CRLF}${CRLF}GET /healthz HTTP/1.1${CRLF}${H}Connection: close${CRLF}${CRLF}"
expect_eq "an h2c upgrade request: answered in HTTP/1.1, then the next" \
	"200 200" "$(raw_statuses)"
expect_eq "... no 101" 0 "$(grep -c '^HTTP/1.1 101' "$T/raw")"

# --- a chunked request body is de-chunked on the way upstream
cat_clear warehouse
raw "POST /v1/routed/namespaces HTTP/1.1${CRLF}${H}Content-Type: application/json${CRLF}Transfer-Encoding: chunked${CRLF}Connection: close${CRLF}${CRLF}a${CRLF}{\"namespac${CRLF}e${CRLF}e\":[\"chunky\"]}${CRLF}0${CRLF}${CRLF}"
expect_eq "a chunked create namespace: 200" 200 "$(raw_status)"
expect_eq "... the catalog got the body whole" '{"namespace":["chunky"]}' \
	"$(cat_requests warehouse | jq -r '.requests[-1].body')"
expect_eq "... with a Content-Length, not chunked" "24 null" \
	"$(cat_requests warehouse | jq -r '.requests[-1].headers | "\(.["content-length"]) \(.["transfer-encoding"])"')"

kill -0 "$FLOE_PID" 2>/dev/null && ok "floe is still up" || bad "floe died"
get /v1/routed/namespaces/db/tables/bunnies
expect_status "and serves" 200
finish
