#!/bin/bash
# floe's libFuzzer targets (tests/fuzz/fuzz_*.c, corpora in corpus/NAME).
#   run.sh --regress [BUILD_DIR]        build, replay every corpus input once
#   run.sh --fuzz [BUILD_DIR] [SECONDS] build, fuzz each target SECONDS
#                                       (default 60); print executions and
#                                       coverage per target
# A crash found while fuzzing is kept in BUILD_DIR/fuzz/crashes/; add it to
# the target's corpus once fixed, so the regression run keeps it fixed.
set -u
cd "$(dirname "$0")/../.."
MODE=${1:---regress}
B=${2:-build}
SECS=${3:-60}
command -v clang >/dev/null || { echo "fuzz: clang is not installed"; exit 1; }
make -s -j"$(nproc)" B="$B" fuzz-build >"$B.fuzz-build.log" 2>&1 || {
	tail -n 30 "$B.fuzz-build.log"; echo "fuzz: build failed"; exit 1; }
rm -f "$B.fuzz-build.log"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fail=0
for src in tests/fuzz/fuzz_*.c; do
	name=${src##*/fuzz_}
	name=${name%.c}
	bin=$B/fuzz/fuzz_$name
	corpus=tests/fuzz/corpus/$name
	log=$B/fuzz/$name.log
	if [ ! -d "$corpus" ]; then
		echo "FAIL fuzz_$name: no corpus in $corpus"; fail=1; continue
	fi
	if [ "$MODE" = --regress ]; then
		if "$bin" -runs=0 "$corpus"/* </dev/null >"$log" 2>&1; then
			echo "ok   fuzz_$name: $(ls "$corpus" | wc -l) inputs"
		else
			echo "FAIL fuzz_$name"; tail -n 40 "$log"; fail=1
		fi
		continue
	fi
	work=$B/fuzz/work/$name
	mkdir -p "$work" "$B/fuzz/crashes"
	"$bin" -max_total_time="$SECS" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=4096 -artifact_prefix="$B/fuzz/crashes/$name-" \
		"$work" "$corpus" </dev/null >"$log" 2>&1
	rc=$?
	execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
	cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1)
	printf '%-18s rc=%d execs=%s %s\n' "fuzz_$name" "$rc" "${execs:-?}" \
		"${cov:-?}"
	[ $rc = 0 ] || { tail -n 40 "$log"; fail=1; }
done
exit $fail
