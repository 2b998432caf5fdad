#!/bin/bash
# Run floe's tests: unit (cmocka), integration (bash), end-to-end (node).
# Usage: tests/run.sh [--valgrind] [BUILD_DIR] [FILTER]
# Prints PASS/FAIL per test as each ends and ends with "N passed, N failed".
#
# Tests run FLOE_TEST_JOBS at a time (default 3: most of a test's time is
# waiting on its own floe, catalogs and etcd, each on ports of its own).
# A test whose figures a neighbour's load could move, or that uses what
# the machine has one of (dpkg, the build tree), says so with a line
# "# alone: WHY" near its top; those run one by one once the others are
# done. FLOE_TEST_JOBS=1 runs everything one by one (those last).
set -u
cd "$(dirname "$0")/.."
VALGRIND=0
if [ "${1:-}" = "--valgrind" ]; then VALGRIND=1; shift; fi
B=${1:-build}
FILTER=${2:-}
JOBS=${FLOE_TEST_JOBS:-3}
export FLOE_TOP=$PWD
export FLOE=$PWD/$B/floe FLOECTL=$PWD/$B/floectl
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/floe-tests.XXXXXX")
# Tests keep what people look at afterwards (screenshots) under it.
export FLOE_TEST_LOGDIR=$LOGDIR
RES=$LOGDIR/.results
mkdir -p "$RES"
pass=0 fail=0 failed=() running=0

# report NAME: print the result of a test that ended, and count it.
report() {
	local name=$1 f=$RES/${1//\//_} rc secs log
	read -r rc secs <"$f"
	rm -f "$f"
	log=$LOGDIR/${name//\//_}.log
	if [ "$rc" = 0 ]; then
		pass=$((pass + 1)); echo "PASS $name (${secs}s)"
	else
		fail=$((fail + 1)); failed+=("$name")
		echo "FAIL $name (${secs}s)"
		tail -n 40 "$log" | sed 's/^/    /'
	fi
}

# reap: wait for one test to end; report every test that ended.
declare -A started=()
reap() {
	local n
	wait -n 2>/dev/null
	if [ $? = 127 ]; then
		# No child left: a test that ended without its result.
		for n in "${!started[@]}"; do
			[ -f "$RES/${n//\//_}" ] || echo "1 ?" >"$RES/${n//\//_}"
		done
	fi
	for n in "${!started[@]}"; do
		[ -f "$RES/${n//\//_}" ] || continue
		unset 'started[$n]'
		running=$((running - 1))
		report "$n"
	done
}

# run NAME CMD...: run a test in the background, at most JOBS at once.
run() {
	local name=$1; shift
	if [ -n "$FILTER" ] && [[ $name != *$FILTER* ]]; then return; fi
	while [ $running -ge "$JOBS" ]; do reap; done
	local log=$LOGDIR/${name//\//_}.log res=$RES/${name//\//_}
	mkdir -p "$LOGDIR" "$RES" # a cleaner of /tmp may have taken them
	(
		start=$SECONDS
		"$@" >"$log" 2>&1
		rc=$?
		echo "$rc $((SECONDS - start))" >"$res.tmp" && mv "$res.tmp" "$res"
	) &
	started[$name]=1
	running=$((running + 1))
}

# drain: wait until every test started has ended.
drain() {
	while [ $running -gt 0 ]; do reap; done
}

# alone FILE: whether an integration test must run by itself.
alone() {
	head -n 30 "$1" | grep -q '^# alone:'
}

late=()
e2e=0
if [ $VALGRIND = 1 ]; then
	JOBS=${FLOE_TEST_JOBS:-1} # valgrind takes a CPU per test
elif [ -z "$FILTER" ] || [[ e2e == *$FILTER* ]]; then
	e2e=1
	run e2e/npm-ci bash -c 'cd tests/e2e && npm ci --no-audit --no-fund'
	drain
fi
# Every fuzz corpus input once, under ASan+UBSan (needs clang). First: its
# build is the longest step; niced, it takes the CPU the tests leave.
if [ $VALGRIND = 0 ] && command -v clang >/dev/null; then
	run fuzz/regress nice -n 10 tests/fuzz/run.sh --regress "$B"
fi
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
	# Last number first: the cluster tests, the longest, start early.
	for t in $(printf '%s\n' tests/integration/[0-9]*.sh | sort -r); do
		[ -f "$t" ] || continue
		if alone "$t"; then
			late+=("integration/${t##*/}")
			continue
		fi
		run "integration/${t##*/}" timeout 300 bash "$t"
	done
	if [ $e2e = 1 ]; then
		for t in tests/e2e/*.test.mjs; do
			[ -f "$t" ] || continue
			run "e2e/${t##*/}" timeout 300 node --test "$t"
		done
	fi
fi
drain
# One by one: what a neighbour could disturb.
JOBS=1
for name in "${late[@]}"; do
	run "$name" timeout 300 bash "tests/$name"
done
drain
echo "logs: $LOGDIR"
[ ${#failed[@]} -eq 0 ] || printf 'failed: %s\n' "${failed[*]}"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
