#!/bin/bash
# Start a throwaway etcd (Debian's etcd-server) on 127.0.0.1 for floe's
# tests, wait until every member is healthy, and print its client URLs.
#
#   tests/etcd/start.sh [-n MEMBERS] [-t] [-o OWNER_PID] [-- ETCD_ARGS...] DIR
#
# DIR (made by the caller, e.g. mktemp -d) gets, per member K (1..N):
# DIR/K/pid, DIR/K/url, DIR/K/log and DIR/K/data; DIR/endpoints holds the
# client URLs joined by commas. -t serves clients over TLS with client
# certificates: DIR/tls/{ca,client}.{crt,key} are made for the test. With
# -o, a guard stops the members once OWNER_PID is gone, so a crashed test
# leaves nothing behind. Ports are picked by the kernel (bound, closed,
# handed to etcd); a start that loses that race is tried again.
# tests/etcd/stop.sh DIR stops everything by pid.
set -u
N=1 TLS=0 OWNER=
while getopts n:to: opt; do
	case $opt in
	n) N=$OPTARG ;;
	t) TLS=1 ;;
	o) OWNER=$OPTARG ;;
	*) echo "usage: $0 [-n N] [-t] [-o PID] DIR [-- ETCD_ARGS]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
DIR=${1:?usage: $0 [-n N] [-t] [-o PID] DIR [-- ETCD_ARGS]}
shift
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
command -v etcd >/dev/null || { echo "etcd is not installed (tests/deps.sh)" >&2; exit 1; }

# Free TCP ports on 127.0.0.1, one a line: bound by the kernel, then closed.
free_ports() {
	node -e 'const net=require("net");let n=+process.argv[1],out=[],ss=[];
		const one=()=>{const s=net.createServer();ss.push(s);
		s.listen(0,"127.0.0.1",()=>{out.push(s.address().port);
		if(out.length<n)one();else{ss.forEach(x=>x.close());
		console.log(out.join("\n"))}})};one()' "$1"
}

# A CA, a server certificate for 127.0.0.1 and a client certificate.
make_tls() {
	local t=$DIR/tls
	mkdir -p "$t"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=floe-test-ca \
		-keyout "$t/ca.key" -out "$t/ca.crt" 2>/dev/null || return 1
	openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 \
		-keyout "$t/server.key" -out "$t/server.csr" 2>/dev/null || return 1
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$t/server.ext"
	openssl x509 -req -in "$t/server.csr" -CA "$t/ca.crt" -CAkey "$t/ca.key" \
		-CAcreateserial -days 2 -extfile "$t/server.ext" \
		-out "$t/server.crt" 2>/dev/null || return 1
	openssl req -newkey rsa:2048 -nodes -subj /CN=floe \
		-keyout "$t/client.key" -out "$t/client.csr" 2>/dev/null || return 1
	printf 'extendedKeyUsage=clientAuth\n' >"$t/client.ext"
	openssl x509 -req -in "$t/client.csr" -CA "$t/ca.crt" -CAkey "$t/ca.key" \
		-CAcreateserial -days 2 -extfile "$t/client.ext" \
		-out "$t/client.crt" 2>/dev/null || return 1
}

# Is member K healthy? (etcd's /health through its client URL.)
healthy() {
	local url tls=()
	url=$(cat "$DIR/$1/url")
	[ $TLS = 1 ] && tls=(--cacert "$DIR/tls/ca.crt" --cert "$DIR/tls/client.crt"
		--key "$DIR/tls/client.key")
	curl -s --max-time 1 "${tls[@]}" "$url/health" | grep -q '"health":"true"'
}

# One attempt at starting all N members; 0 once all are healthy.
attempt() {
	local k ports cluster="" scheme=http i up
	mapfile -t ports < <(free_ports $((2 * N)))
	[ ${#ports[@]} = $((2 * N)) ] || return 1
	[ $TLS = 1 ] && scheme=https
	for k in $(seq "$N"); do
		cluster+="${cluster:+,}m$k=http://127.0.0.1:${ports[2 * k - 1]}"
	done
	for k in $(seq "$N"); do
		local cport=${ports[2 * k - 2]} pport=${ports[2 * k - 1]} tls=()
		mkdir -p "$DIR/$k"
		rm -rf "$DIR/$k/data"
		echo "$scheme://127.0.0.1:$cport" >"$DIR/$k/url"
		[ $TLS = 1 ] && tls=(--cert-file "$DIR/tls/server.crt"
			--key-file "$DIR/tls/server.key"
			--trusted-ca-file "$DIR/tls/ca.crt" --client-cert-auth)
		setsid etcd --name "m$k" --data-dir "$DIR/$k/data" \
			--listen-client-urls "$scheme://127.0.0.1:$cport" \
			--advertise-client-urls "$scheme://127.0.0.1:$cport" \
			--listen-peer-urls "http://127.0.0.1:$pport" \
			--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
			--initial-cluster "$cluster" \
			--initial-cluster-token "floe-test-$$" \
			--initial-cluster-state new \
			"${tls[@]}" "${EXTRA[@]}" \
			>"$DIR/$k/log" 2>&1 </dev/null &
		echo $! >"$DIR/$k/pid"
	done
	# At most 20 s for the cluster to elect a leader and serve.
	for i in $(seq 200); do
		up=0
		for k in $(seq "$N"); do
			kill -0 "$(cat "$DIR/$k/pid")" 2>/dev/null || return 1
			healthy "$k" && up=$((up + 1))
		done
		[ $up = "$N" ] && return 0
		sleep 0.1
	done
	return 1
}

[ $TLS = 1 ] && { make_tls || { echo "cannot make test certificates" >&2; exit 1; }; }
for try in 1 2 3; do
	if attempt; then
		urls=""
		for k in $(seq "$N"); do urls+="${urls:+,}$(cat "$DIR/$k/url")"; done
		echo "$urls" >"$DIR/endpoints"
		if [ -n "$OWNER" ]; then
			# The guard: stop the members once the owner is gone.
			pids=$(cat "$DIR"/[0-9]*/pid | tr '\n' ' ')
			setsid bash -c 'while kill -0 '"$OWNER"' 2>/dev/null; do
				sleep 1; done; kill -CONT '"$pids"' 2>/dev/null
				kill '"$pids"' 2>/dev/null' \
				>/dev/null 2>&1 </dev/null &
			echo $! >"$DIR/guard.pid"
		fi
		echo "$urls"
		exit 0
	fi
	echo "etcd start attempt $try failed:" >&2
	for k in $(seq "$N"); do
		kill -9 "$(cat "$DIR/$k/pid" 2>/dev/null)" 2>/dev/null
		tail -n 5 "$DIR/$k/log" >&2 2>/dev/null
	done
	sleep 0.2
done
exit 1
