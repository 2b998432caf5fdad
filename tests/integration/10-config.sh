#!/bin/bash
# floe -t -c FILE on every config fixture: good files (and the shipped
# conf/*.conf) exit 0; bad files exit 1 with the exact message of their
# .err file on stderr (files/ holds configs whose token, key or
# certificate file cannot be loaded); a missing file exits 1 saying it
# cannot be opened.
# Fixture paths inside the files and in the messages are relative to the
# top of the checkout, so floe runs from there.
set -u
cd "${FLOE_TOP:-$(dirname "$0")/../..}" || exit 1
FLOE=${FLOE:-build/floe}
T=$(mktemp -d /tmp/floe-10.XXXXXX)
trap 'rm -rf "$T"' EXIT

if [ ! -x "$FLOE" ]; then
	echo "FAIL: floe binary $FLOE not found or not executable"
	exit 1
fi

fail=0
ngood=0
nbad=0

# check NAME WANT_RC [WANT_LINE] -- floe -t -c NAME.
check() {
	local conf=$1 want_rc=$2 want_line=${3:-} rc
	timeout 10 "$FLOE" -t -c "$conf" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" != "$want_rc" ]; then
		echo "FAIL: $FLOE -t -c $conf: exit $rc, want $want_rc"
		sed 's/^/    stderr: /' "$T/err"
		fail=1
		return
	fi
	if [ -n "$want_line" ] && ! grep -qF -- "$want_line" "$T/err"; then
		echo "FAIL: $FLOE -t -c $conf: stderr lacks the expected message"
		echo "    want: $want_line"
		sed 's/^/    got:  /' "$T/err"
		fail=1
		return
	fi
	echo "ok: $conf (exit $rc)"
}

for conf in tests/fixtures/conf/good/*.conf conf/floe.conf conf/demo.conf; do
	[ -f "$conf" ] || continue
	check "$conf" 0
	ngood=$((ngood + 1))
done

# bad/: refused by the parser; files/: parsed, but a file they name
# cannot be loaded (floe would stop at start, so -t must fail too).
for conf in tests/fixtures/conf/bad/*.conf tests/fixtures/conf/files/*.conf; do
	errfile=${conf%.conf}.err
	if [ ! -f "$errfile" ]; then
		echo "FAIL: $conf has no $errfile"
		fail=1
		continue
	fi
	check "$conf" 1 "$(head -n 1 "$errfile")"
	nbad=$((nbad + 1))
done

check "$T/no-such.conf" 1 "$T/no-such.conf: cannot open: No such file or directory"

if [ "$ngood" -lt 3 ] || [ "$nbad" -lt 12 ]; then
	echo "FAIL: only $ngood good and $nbad bad fixtures found"
	fail=1
fi
echo "$ngood good, $nbad bad configs checked"
exit $fail
