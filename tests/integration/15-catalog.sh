#!/bin/bash
# The test catalog itself: start a warehouse (with a prefix) and a lakehouse
# (without one, with a token) and run tests/catalog/selftest.sh against them.
set -u
cd "$(dirname "$0")/../.."
T=$(mktemp -d /tmp/floe-15.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

# start NAME ARGS...: start a catalog on a free port, set PORT.
start() {
	local name=$1; shift
	node tests/catalog/catalog.js --port 0 --name "$name" "$@" \
		>"$T/$name.out" 2>"$T/$name.err" &
	pids+=($!)
	for _ in $(seq 100); do
		PORT=$(awk '/^ready /{print $2}' "$T/$name.out" 2>/dev/null)
		[ -n "$PORT" ] && return 0
		sleep 0.05
	done
	echo "catalog $name did not start"; cat "$T/$name.err"; exit 1
}

fail=0
start warehouse --prefix wh --data "$T/data"
WH=$PORT
start lakehouse --token s3cret
LH=$PORT

echo "== warehouse on $WH"
tests/catalog/selftest.sh "http://127.0.0.1:$WH" warehouse wh || fail=1

echo "== lakehouse on $LH (token)"
s=$(curl -s -o "$T/b" -w '%{http_code}' "http://127.0.0.1:$LH/v1/namespaces")
if [ "$s" = 401 ] && jq -e '.error.type == "NotAuthorizedException"' "$T/b" >/dev/null; then
	echo "ok   no token: 401"
else
	echo "FAIL no token: $s"; fail=1
fi
s=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' \
	"http://127.0.0.1:$LH/v1/namespaces")
[ "$s" = 401 ] && echo "ok   wrong token: 401" || { echo "FAIL wrong token: $s"; fail=1; }
# The selftest's curl calls carry the token from a curl config file
# found through CURL_HOME.
mkdir -p "$T/curlhome"
printf 'header = "Authorization: Bearer s3cret"\n' >"$T/curlhome/.curlrc"
CURL_HOME=$T/curlhome tests/catalog/selftest.sh "http://127.0.0.1:$LH" lakehouse || fail=1

# The same table holds different versions on the two sides.
w=$(curl -s "http://127.0.0.1:$WH/v1/wh/namespaces/db/tables/bunnies" | jq -r '.["metadata-location"]')
l=$(curl -s -H 'Authorization: Bearer s3cret' \
	"http://127.0.0.1:$LH/v1/namespaces/db/tables/bunnies" | jq -r '.["metadata-location"]')
if [ -n "$w" ] && [ "$w" != null ] && [ "$w" != "$l" ]; then
	echo "ok   db.bunnies differs: $w vs $l"
else
	echo "FAIL db.bunnies: '$w' vs '$l'"; fail=1
fi
# Written metadata is mirrored under --data.
n=$(find "$T/data" -name '*.metadata.json' 2>/dev/null | wc -l)
[ "$n" -ge 1 ] && echo "ok   $n metadata files under --data" || { echo "FAIL no files under --data"; fail=1; }

# SIGTERM stops a catalog cleanly.
kill -TERM "${pids[0]}"
wait "${pids[0]}"; rc=$?
[ $rc = 0 ] && echo "ok   SIGTERM exit 0" || { echo "FAIL SIGTERM exit $rc"; fail=1; }
pids=("${pids[@]:1}")

exit $fail
