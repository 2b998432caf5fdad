#!/bin/bash
# make demo: two local Iceberg REST catalogs (warehouse on 9001, lakehouse on
# 9002) and floe in front of them on 8181, with conf/demo.conf. Ctrl-C stops
# all three. Everything runs from this checkout; state goes under var/,
# which each run starts without: the routes, waves, ledger and logs of the
# last demo are gone (DEMO_KEEP=1 keeps them).
#   conf/demo.sh [BUILD_DIR]   run the demo
#   conf/demo.sh --reset       only remove var/ (make demo-reset)
set -u
cd "$(dirname "$0")/.."

# Remove the demo's state, logs and socket. A floe still running on them
# is left alone: its socket answering means a demo is up.
demo_reset() {
	if [ -S var/floe.sock ] && curl -s -o /dev/null --max-time 1 \
		--unix-socket var/floe.sock http://floe/status; then
		echo "demo: a floe is running on var/floe.sock; stop it first" >&2
		return 1
	fi
	rm -rf var
	echo "demo: var/ removed: no routes, waves, ledger or logs of an earlier demo"
}
if [ "${1:-}" = --reset ]; then
	demo_reset
	exit
fi
B=${1:-build}
FLOE=$B/floe FLOECTL=$B/floectl
pids=()
stop() {
	trap - INT TERM EXIT
	echo; echo "demo: stopping floe and the catalogs"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	exit 0
}
if [ "${DEMO_KEEP:-0}" != 1 ]; then
	demo_reset || exit 1
fi
trap stop INT TERM EXIT
mkdir -p var/log
for port in 8181 9001 9002; do
	if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
		echo "demo: port $port is already in use; stop what holds it" >&2
		exit 1
	fi
done
node tests/catalog/catalog.js --port 9001 --name warehouse \
	>var/log/warehouse-catalog.log 2>&1 &
pids+=($!)
node tests/catalog/catalog.js --port 9002 --name lakehouse --prefix lake \
	>var/log/lakehouse-catalog.log 2>&1 &
pids+=($!)
"$FLOE" -c conf/demo.conf &
pids+=($!)
for i in $(seq 1 100); do
	curl -sf http://127.0.0.1:8181/readyz >/dev/null && break
	sleep 0.1
done
if ! curl -sf http://127.0.0.1:8181/readyz >/dev/null; then
	echo "demo: floe did not become ready; see the lines above" >&2
	exit 1
fi
cat <<EOT

floe is running on http://127.0.0.1:8181 in front of two Iceberg REST catalogs:
  warehouse  http://127.0.0.1:9001   lakehouse  http://127.0.0.1:9002
Both hold db.bunnies, with different rows. Try:

  curl -s localhost:8181/v1/config | jq .overrides
  curl -s localhost:8181/v1/routed/namespaces | jq              # both sides merged
  curl -si localhost:8181/v1/routed/namespaces/db/tables/bunnies | grep X-Floe
  $FLOECTL -c conf/demo.conf route set db.bunnies 1
  $FLOECTL -c conf/demo.conf wave flip 1 lakehouse
  curl -si localhost:8181/v1/routed/namespaces/db/tables/bunnies | grep X-Floe
  $FLOECTL -c conf/demo.conf wave rollback 1 --reason "trying it out"
  $FLOECTL -c conf/demo.conf wave ack 1
  $FLOECTL -c conf/demo.conf events

Point an engine at floe (catalog uri http://127.0.0.1:8181):
  Spark:     spark.sql.catalog.lake=org.apache.iceberg.spark.SparkCatalog
             spark.sql.catalog.lake.type=rest
             spark.sql.catalog.lake.uri=http://127.0.0.1:8181
  Trino:     connector.name=iceberg
             iceberg.catalog.type=rest
             iceberg.rest-catalog.uri=http://127.0.0.1:8181
  PyIceberg: load_catalog("lake", **{"type": "rest",
                                     "uri": "http://127.0.0.1:8181"})
  (warehouse=warehouse or warehouse=lakehouse pins every request to one side)

Logs: var/log/. Ctrl-C stops floe and both catalogs; the next make demo
starts from nothing again (make demo-reset only clears var/).
EOT
wait
