#!/bin/bash
# The man pages are the reference, so they must be whole and well formed:
# `mandoc -Tlint` says nothing of man/floe.8, man/floectl.8 and
# man/floe.conf.5; floectl.8 has every command of `floectl help` and every
# option of their usage lines; floe.conf.5 every key of proxy/conf_keys.c;
# floe.8 every option of `floe --help` and every signal floe handles; and
# each page has its exit statuses.
. "$(dirname "$0")/lib.sh"
lib_init 13

command -v mandoc >/dev/null || { echo "FAIL mandoc is not installed (tests/deps.sh)"; exit 1; }
# From man/, where mandoc finds the pages they refer to.
out=$(cd man && MANPATH=$PWD mandoc -Tlint floe.8 floectl.8 floe.conf.5 2>&1)
[ $? = 0 ] && [ -z "$out" ] && ok "mandoc -Tlint: clean" || bad "mandoc -Tlint: $out"
# The lint can fail: a page with a broken macro is reported.
sed 's/^\.Sh EXIT STATUS$/.Sh EXIT STATUS\n.Bl -tag/' man/floe.8 >"$T/broken.8"
[ -n "$(mandoc -Tlint "$T/broken.8" 2>&1)" ] && ok "mandoc -Tlint reports a broken page" ||
	bad "mandoc -Tlint said nothing of an unclosed list"

# floectl.8: every command, as ".It Cm WORD [WORD]".
"$FLOECTL" help | sed -n '/^commands:$/,/^$/p' | grep -E '^  [a-z]' |
	awk '{ w = $1; if ($1 ~ /^(route|wave|ledger)$/) w = w " " $2; print w }' >"$T/cmds"
[ "$(wc -l <"$T/cmds")" -ge 20 ] || bad "floectl help lists only $(wc -l <"$T/cmds") commands"
missing=""
while read -r c; do
	grep -q "^\.It Cm $c\( \|$\)" man/floectl.8 || missing="$missing, $c"
done <"$T/cmds"
[ -z "$missing" ] && ok "floectl.8 has all $(wc -l <"$T/cmds") commands" || bad "floectl.8 lacks${missing#,}"

# Every --option of every command's usage, and the global ones.
opts=$(while read -r c; do "$FLOECTL" help $c; done <"$T/cmds" |
	grep -Eo -- '--[a-z-]+' | sort -u)
missing=""
for o in $opts --json --help --version; do
	grep -q "Fl -${o#--}\b" man/floectl.8 || missing="$missing $o"
done
for o in s c h; do grep -q "^\.It Fl $o\b" man/floectl.8 || missing="$missing -$o"; done
[ -z "$missing" ] && ok "floectl.8 has every option ($(echo $opts | wc -w) of commands)" ||
	bad "floectl.8 lacks options:$missing"
grep -q 'Ev FLOE_SOCKET' man/floectl.8 && ok "floectl.8: FLOE_SOCKET" || bad "floectl.8 lacks FLOE_SOCKET"
# Every exit status of ctl.h's enum ctl_exit.
codes=$(sed -n '/^enum ctl_exit {/,/^};/p' ctl/ctl.h | grep -Eo '= [0-9]+' | tr -d '= ')
[ "$(echo $codes | wc -w)" -ge 4 ] || bad "no exit codes read from ctl/ctl.h"
missing=""
for s in $codes; do
	sed -n '/^\.Sh EXIT STATUS/,/^\.Sh/p' man/floectl.8 | grep -qx "\.It $s" || missing="$missing $s"
done
[ -z "$missing" ] && ok "floectl.8: exit statuses $(echo $codes)" || bad "floectl.8 lacks exit statuses:$missing"

# floe.conf.5: every key of the table, as "Cm KEY" on an .It line.
awk -F'"' '/^\t\{ "[a-z0-9_]+", "[a-z0-9_]+",/ { print $2, $4 }' proxy/conf_keys.c | sort -u >"$T/keys"
[ "$(wc -l <"$T/keys")" -ge 40 ] || bad "only $(wc -l <"$T/keys") keys read from conf_keys.c"
missing=""
while read -r sec key; do
	grep -q "^\.It .*Cm $key\b" man/floe.conf.5 || missing="$missing [$sec] $key"
	grep -q "^\.Ss .*\[$sec\]" man/floe.conf.5 || missing="$missing [$sec]"
done <"$T/keys"
[ -z "$missing" ] && ok "floe.conf.5 has all $(wc -l <"$T/keys") keys and their sections" ||
	bad "floe.conf.5 lacks:$missing"

# floe.8: every option of floe --help, every signal of main.c.
missing=""
for o in $("$FLOE" --help | grep -Eo -- '(^| )--?[a-z-]+' | sort -u); do
	case $o in
	--*) grep -q "Fl -${o#--}\b" man/floe.8 || missing="$missing $o" ;;
	-*) grep -q "Fl ${o#-}\b" man/floe.8 || missing="$missing $o" ;;
	esac
done
for s in $(grep -Eo 'sigs\[\] = \{[^}]*\}' proxy/main.c | grep -Eo 'SIG[A-Z]+'); do
	grep -q "Dv .*$s" man/floe.8 || missing="$missing $s"
done
grep -q 'Ev NOTIFY_SOCKET' man/floe.8 || missing="$missing NOTIFY_SOCKET"
[ -z "$missing" ] && ok "floe.8 has every option and signal" || bad "floe.8 lacks:$missing"
for s in 0 1 2; do
	sed -n '/^\.Sh EXIT STATUS/,/^\.Sh/p' man/floe.8 | grep -qx "\.It $s" || bad "floe.8: no exit status $s"
done && ok "floe.8: exit statuses"

# docs/ and the README point at the pages.
grep -q 'man/floectl.8' README.md && grep -q 'man/floe.conf.5' docs/configuration.md &&
	ok "README and docs link the man pages" || bad "README.md or docs/configuration.md do not link the man pages"

finish
