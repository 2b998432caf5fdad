#!/bin/bash
# Run floe's tests: unit (cmocka), integration (bash), end-to-end (node).
# Usage: tests/run.sh [--valgrind] [BUILD_DIR] [FILTER]
# Prints PASS/FAIL per test and ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
VALGRIND=0
if [ "${1:-}" = "--valgrind" ]; then VALGRIND=1; shift; fi
B=${1:-build}
FILTER=${2:-}
export FLOE_TOP=$PWD
export FLOE=$PWD/$B/floe FLOECTL=$PWD/$B/floectl
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/floe-tests.XXXXXX")
# Tests keep what people look at afterwards (screenshots) under it.
export FLOE_TEST_LOGDIR=$LOGDIR
pass=0 fail=0 failed=()

run() { # NAME CMD...
	local name=$1; shift
	if [ -n "$FILTER" ] && [[ $name != *$FILTER* ]]; then return; fi
	local log=$LOGDIR/${name//\//_}.log start=$SECONDS
	mkdir -p "$LOGDIR" # a cleaner of /tmp may have taken it
	if "$@" >"$log" 2>&1; then
		pass=$((pass + 1)); echo "PASS $name ($((SECONDS - start))s)"
	else
		fail=$((fail + 1)); failed+=("$name")
		echo "FAIL $name ($((SECONDS - start))s)"
		tail -n 40 "$log" | sed 's/^/    /'
	fi
}

for t in "$B"/tests/test_*; do
	[ -x "$t" ] || continue
	if [ $VALGRIND = 1 ]; then
		run "unit/${t##*/}" valgrind -q --leak-check=full \
			--errors-for-leak-kinds=definite --error-exitcode=1 "$t"
	else
		run "unit/${t##*/}" "$t"
	fi
done
if [ $VALGRIND = 0 ]; then
	# Every fuzz corpus input once, under ASan+UBSan (needs clang).
	if command -v clang >/dev/null; then
		run fuzz/regress tests/fuzz/run.sh --regress "$B"
	fi
	for t in tests/integration/[0-9]*.sh; do
		[ -f "$t" ] || continue
		run "integration/${t##*/}" timeout 300 bash "$t"
	done
	if [ -z "$FILTER" ] || [[ e2e == *$FILTER* ]]; then
		run e2e/npm-ci bash -c 'cd tests/e2e && npm ci --no-audit --no-fund'
		for t in tests/e2e/*.test.mjs; do
			[ -f "$t" ] || continue
			run "e2e/${t##*/}" timeout 300 node --test "$t"
		done
	fi
fi
echo "logs: $LOGDIR"
[ ${#failed[@]} -eq 0 ] || printf 'failed: %s\n' "${failed[*]}"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
