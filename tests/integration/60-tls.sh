#!/bin/bash
# TLS on the listener: tls_cert/tls_key make `listen` speak TLS 1.2 or
# newer, listen_plain adds a plain listener beside it, and SIGHUP reloads
# the certificate for new connections while an open one keeps going; a bad
# certificate on reload keeps the old one. Sessions resume from tickets
# (TLS 1.3 and 1.2), across a reload too; a ticket of an earlier floe
# process gets a full handshake.
. "$(dirname "$0")/lib.sh"
lib_init 60

# A throwaway CA and two server certificates for 127.0.0.1 signed by it.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=floe-test-ca" \
	-keyout "$T/ca.key" -out "$T/ca.pem" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$T/ext"
for n in one two; do
	openssl req -newkey rsa:2048 -nodes -subj "/CN=floe-$n" \
		-keyout "$T/$n.key" -out "$T/$n.csr" 2>/dev/null
	openssl x509 -req -in "$T/$n.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
		-CAcreateserial -days 2 -extfile "$T/ext" -out "$T/$n.pem" \
		2>/dev/null
done
[ -s "$T/one.pem" ] && [ -s "$T/two.pem" ] || { bad "openssl made no certificates"; finish; }
cp "$T/one.pem" "$T/tls.pem"
cp "$T/one.key" "$T/tls.key"
export CURL_CA_BUNDLE=$T/ca.pem

catalog warehouse
catalog lakehouse --prefix lhp
PLAIN=$(free_port)
FLOE_EXTRA="tls_cert = $T/tls.pem
tls_key = $T/tls.key
listen_plain = 127.0.0.1:$PLAIN
header_timeout = 1s
idle_timeout = 30s"
write_conf
BASE=https://127.0.0.1:$LISTEN
start_floe

# The subject CN of the certificate a new connection is served.
served_cn() {
	openssl s_client -connect "127.0.0.1:$LISTEN" -CAfile "$T/ca.pem" \
		</dev/null 2>/dev/null | openssl x509 -noout -subject 2>/dev/null |
		sed 's/.*CN *= *//'
}

get /v1/routed/namespaces/db/tables/bunnies
expect_status "a load over TLS, verified against the CA" 200
expect_header "... answered by the warehouse" X-Floe-Target warehouse
S=$(curl -s -o "$T/b" -w '%{http_code}' --max-time 5 \
	"http://127.0.0.1:$PLAIN/v1/routed/namespaces/db/tables/bunnies")
expect_status "the plain listener beside it serves too" 200
S=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
	"http://127.0.0.1:$LISTEN/healthz")
expect_eq "plain HTTP on the TLS port gets no HTTP answer" 000 "$S"

# A handshake that stalls (nothing sent, or half a ClientHello) is closed
# at header_timeout (1s), not at idle_timeout (30s).
for what in nothing half; do
	ms=$(node -e '
		const s = require("net").connect(Number(process.argv[1]), "127.0.0.1");
		const t0 = Date.now();
		s.on("connect", () => {
			if (process.argv[2] === "half")
				s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
		});
		s.on("close", () => { console.log(Date.now() - t0); process.exit(0); });
		s.on("error", () => {});
		setTimeout(() => { console.log("open"); process.exit(0); }, 8000);
	' "$LISTEN" "$what")
	if [ "$ms" != open ] && [ "$ms" -ge 800 ] && [ "$ms" -le 4000 ]; then
		ok "a stalled handshake ($what sent) is closed at header_timeout ($ms ms)"
	else
		bad "a stalled handshake ($what sent): closed after $ms ms"
	fi
done
curl -s -o /dev/null --max-time 5 --tls-max 1.1 "$BASE/healthz"
rc=$?
if [ $rc != 0 ]; then ok "TLS 1.1 is refused (curl exit $rc)"; else bad "TLS 1.1 was accepted"; fi
S=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --tlsv1.2 \
	--tls-max 1.2 "$BASE/healthz")
expect_eq "TLS 1.2 is served" 200 "$S"
S=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --tlsv1.3 \
	"$BASE/healthz")
expect_eq "TLS 1.3 is served" 200 "$S"
expect_eq "the first certificate is served" floe-one "$(served_cn)"

# resume FILE [ARGS]: a connection that saves its session (ticket) to FILE
# when FILE does not exist yet, or resumes from it; prints "New" or
# "Reused" and the status of the GET sent on it.
resume() {
	local f=$1 io=-sess_out
	shift
	[ -s "$f" ] && io=-sess_in
	printf 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' |
		timeout 10 openssl s_client -connect "127.0.0.1:$LISTEN" \
			-CAfile "$T/ca.pem" -ign_eof "$io" "$f" "$@" 2>/dev/null |
		tr -d '\r' | awk '/^(New|Reused), / { sub(/,.*/, ""); h = $0 }
			/^HTTP\/1.1 / { st = $2 } END { print h, st }'
}
expect_eq "a TLS 1.3 connection gets a full handshake and a ticket" "New 200" \
	"$(resume "$T/s13")"
[ -s "$T/s13" ] && ok "... which s_client saved" || bad "no session saved"
expect_eq "... and the next connection resumes from the ticket" "Reused 200" \
	"$(resume "$T/s13")"
expect_eq "... again (a ticket serves more than once)" "Reused 200" \
	"$(resume "$T/s13")"
expect_eq "TLS 1.2: a full handshake" "New 200" "$(resume "$T/s12" -tls1_2)"
expect_eq "TLS 1.2: resumed from the ticket" "Reused 200" \
	"$(resume "$T/s12" -tls1_2)"
expect_eq "TLS 1.2 without tickets: a full handshake" "New 200" \
	"$(resume "$T/s12id" -tls1_2 -no_ticket)"
expect_eq "TLS 1.2 without tickets: resumed by session id" "Reused 200" \
	"$(resume "$T/s12id" -tls1_2 -no_ticket)"
grep -q "port $LISTEN, TLS" "$T/floe.log" && ok "the log says the listener speaks TLS" ||
	bad "no TLS in the start line: $(head -5 "$T/floe.log")"

# A client with an open keep-alive TLS connection: one request, then the
# certificate changes under it, then a second request on the same socket.
node -e '
	const tls = require("tls"), fs = require("fs");
	const [port, ca, go] = process.argv.slice(1);
	const s = tls.connect({ host: "127.0.0.1", port: Number(port),
		ca: fs.readFileSync(ca) });
	let buf = "", n = 0;
	const send = () => s.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	s.on("secureConnect", () => {
		console.log("cn " + s.getPeerCertificate().subject.CN);
		send();
	});
	s.on("data", (d) => {
		buf += d;
		if (!buf.includes("\"alive\"}")) return;
		n++;
		console.log("answer " + n + " " + buf.split(" ")[1]);
		buf = "";
		if (n === 2) { s.end(); return; }
		const t = setInterval(() => {
			if (fs.existsSync(go)) { clearInterval(t); send(); }
		}, 20);
	});
	s.on("close", () => { console.log("closed after " + n); process.exit(0); });
	setTimeout(() => { console.log("timeout"); process.exit(1); }, 15000);
' "$LISTEN" "$T/ca.pem" "$T/go" >"$T/keep.out" 2>&1 &
KEEP=$!
pids+=($KEEP)
for i in $(seq 100); do grep -q "answer 1" "$T/keep.out" && break; sleep 0.05; done
cp "$T/two.pem" "$T/tls.pem"
cp "$T/two.key" "$T/tls.key"
kill -HUP "$FLOE_PID"
for i in $(seq 100); do grep -q "reload: TLS certificate" "$T/floe.log" && break; sleep 0.05; done
grep -q "reload: TLS certificate /CN=floe-two" "$T/floe.log" &&
	ok "SIGHUP reloads the certificate and says so" ||
	bad "no reload line: $(tail -3 "$T/floe.log")"
expect_eq "new connections get the new certificate" floe-two "$(served_cn)"
expect_eq "a ticket issued before the reload still resumes" "Reused 200" \
	"$(resume "$T/s13")"
touch "$T/go"
wait "$KEEP"
expect_eq "the open connection was not dropped: both answers on it" \
	"cn floe-one|answer 1 200|answer 2 200|closed after 2" \
	"$(tr '\n' '|' <"$T/keep.out" | sed 's/|$//')"

# A broken certificate file on reload: the running one stays.
echo "not a certificate" >"$T/tls.pem"
kill -HUP "$FLOE_PID"
for i in $(seq 100); do grep -q "tls_cert .*keeping the running" "$T/floe.log" && break; sleep 0.05; done
grep -q "tls_cert .*keeping the running configuration" "$T/floe.log" &&
	ok "a bad certificate on reload is refused, naming tls_cert" ||
	bad "no refusal: $(tail -3 "$T/floe.log")"
expect_eq "... and the last good certificate is still served" floe-two "$(served_cn)"
get /v1/routed/namespaces/db/tables/bunnies
expect_status "... and floe still serves over TLS" 200

# A key that does not match the certificate: floe does not start.
stop_floe
cp "$T/one.pem" "$T/tls.pem"
cp "$T/two.key" "$T/tls.key"
if "$FLOE" -c "$T/floe.conf" >"$T/bad.log" 2>&1; then
	bad "floe started with a key that does not match its certificate"
else
	grep -q "does not match tls_cert" "$T/bad.log" &&
		ok "a key that does not match the certificate: floe refuses to start" ||
		bad "unclear refusal: $(cat "$T/bad.log")"
fi

# A new floe process has new ticket keys: the old ticket is not accepted,
# the client gets a full handshake and its answer.
cp "$T/one.key" "$T/tls.key"
start_floe
expect_eq "a ticket of the previous floe process: a full handshake, served" \
	"New 200" "$(resume "$T/s13")"
finish
