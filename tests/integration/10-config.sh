#!/bin/bash
# floe -t -c FILE on every config fixture: good files (and the shipped
# conf/*.conf) exit 0; bad files exit 1 with every error of their .err
# file on stderr, one a line in line order, and nothing else (but the
# count when there are several); a missing file exits 1 saying it cannot
# be opened. Paths in a fixture are relative to its directory; the
# messages name the fixtures from the top of the checkout, where floe runs.
set -u
cd "${FLOE_TOP:-$(dirname "$0")/../..}" || exit 1
FLOE=${FLOE:-build/floe}
case $FLOE in /*) ;; *) FLOE=$PWD/$FLOE ;; esac
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

for conf in tests/fixtures/conf/bad/*.conf; do
	errfile=${conf%.conf}.err
	if [ ! -f "$errfile" ]; then
		echo "FAIL: $conf has no $errfile"
		fail=1
		continue
	fi
	check "$conf" 1 "$(head -n 1 "$errfile")"
	# Every error, in order, and only those.
	sed 's/^floe: //' "$T/err" | grep -v ' errors in ' >"$T/all"
	if ! cmp -s "$T/all" "$errfile"; then
		echo "FAIL: $conf: the errors differ from $errfile"
		diff "$errfile" "$T/all" | sed 's/^/    /'
		fail=1
	fi
	n=$(wc -l <"$errfile")
	if [ "$n" -gt 1 ] && ! grep -qx "floe: $n errors in $conf" "$T/err"; then
		echo "FAIL: $conf: no \"$n errors in $conf\" line"
		fail=1
	fi
	nbad=$((nbad + 1))
done

# files/: parsed, but a file they name cannot be loaded (floe would stop
# at start, so -t must fail too): the first line of .err is the message.
for conf in tests/fixtures/conf/files/*.conf; do
	check "$conf" 1 "$(head -n 1 "${conf%.conf}.err")"
	nbad=$((nbad + 1))
done

check "$T/no-such.conf" 1 "$T/no-such.conf: cannot open: No such file or directory"

# The command line: --help and --version on stdout, exit 0; an unknown
# option is a usage error (2) with the usage on stderr.
out=$("$FLOE" --help 2>/dev/null) && echo "$out" | grep -q '^usage: floe \[-htv\] \[-c FILE\] \[--help\] \[--version\]$' &&
	echo "ok: floe --help" || { echo "FAIL: floe --help: $out"; fail=1; }
v=$(cat "$(dirname "$FLOE")/version" 2>/dev/null)
[ "$("$FLOE" --version 2>/dev/null)" = "floe $v" ] && echo "ok: floe --version: floe $v" ||
	{ echo "FAIL: floe --version: $("$FLOE" --version 2>&1)"; fail=1; }
"$FLOE" --bogus >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] && [ ! -s "$T/out" ] && grep -q '^usage: floe' "$T/err" && echo "ok: floe --bogus: exit 2, usage on stderr" ||
	{ echo "FAIL: floe --bogus: exit $rc: $(cat "$T/err")"; fail=1; }

# A file with eleven errors: each is reported, lines after a long line
# keep their numbers, and the count says how many.
[ "$(wc -l <tests/fixtures/conf/bad/every-error.err)" -ge 10 ] ||
	{ echo "FAIL: every-error.err lists too few errors"; fail=1; }
timeout 10 "$FLOE" -t -c tests/fixtures/conf/bad/every-error.conf 2>"$T/err"
if grep -q 'every-error.conf:16: \[policy\] error_ratio' "$T/err" &&
	grep -q 'every-error.conf:4: \[floe\] listen' "$T/err" &&
	grep -qx 'floe: 11 errors in tests/fixtures/conf/bad/every-error.conf' "$T/err"; then
	echo "ok: every error of a file, the last one too"
else
	echo "FAIL: every-error.conf:"; sed 's/^/    /' "$T/err"; fail=1
fi

# Relative paths are taken from the conf file's directory, wherever floe
# runs: a token file beside the conf is found from another directory.
mkdir -p "$T/etc" "$T/elsewhere"
echo "tok" >"$T/etc/wh.token"
printf '[warehouse]\nuri = http://127.0.0.1:1\ntoken_file = wh.token\n[lakehouse]\nuri = http://127.0.0.1:2\n' >"$T/etc/rel.conf"
if (cd "$T/elsewhere" && timeout 10 "$FLOE" -t -c ../etc/rel.conf) 2>"$T/err"; then
	echo "ok: a token_file relative to the conf's directory"
else
	echo "FAIL: relative token_file: $(cat "$T/err")"; fail=1
fi
rm "$T/etc/wh.token"
(cd "$T/elsewhere" && timeout 10 "$FLOE" -t -c ../etc/rel.conf) 2>"$T/err"
if grep -qF 'token_file: cannot read "../etc/wh.token"' "$T/err"; then
	echo "ok: the message names the path as taken"
else
	echo "FAIL: missing relative token_file: $(cat "$T/err")"; fail=1
fi

if [ "$ngood" -lt 3 ] || [ "$nbad" -lt 12 ]; then
	echo "FAIL: only $ngood good and $nbad bad fixtures found"
	fail=1
fi
echo "$ngood good, $nbad bad configs checked"
exit $fail
