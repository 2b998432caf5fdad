#!/bin/bash
# floe: bench/jscheck.sh [BUILD_DIR] -- the JSON check alone (bench/jscheck.c)
# over the bench's LoadTable results (bench/loadtable.js: 4 KB and 1 MB,
# grown from the java_bunnies fixture, or BENCH_FIXTURE) and every Iceberg
# metadata fixture as it is stored (pretty-printed). JSCHECK_RUNS runs
# (default 7), the median of each.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
FIXTURES=${FIXTURES:-../shared/fixtures/iceberg}
FIXTURE=${BENCH_FIXTURE:-$FIXTURES/java_bunnies/metadata/v3.metadata.json}
make -s B="$B" "$B/bench-jscheck"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
node bench/loadtable.js "$FIXTURE" 4096 "$T/loadtable-4k.json" >/dev/null
node bench/loadtable.js "$FIXTURE" 1048576 "$T/loadtable-1m.json" >/dev/null
"$B/bench-jscheck" -r "${JSCHECK_RUNS:-7}" "$T/loadtable-4k.json" \
	"$T/loadtable-1m.json" $(find "$FIXTURES" -name '*.metadata.json' | sort)
