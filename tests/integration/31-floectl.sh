#!/bin/bash
# floectl against a real floe: every command, its human output and its
# --json output, the socket lookup (-s, -c CONF, FLOE_SOCKET, var/floe.sock),
# events --follow, and the exit codes (0 done, 1 refused, 2 usage, 3
# unreachable); help for every command, usage errors that name what is
# wrong, --version, eligible's exit status, ledger add's errors, and the
# bash completion. Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
lib_init 31
# Absolute: one check runs floectl from another directory.
case $FLOE in /*) ;; *) FLOE=$PWD/$FLOE ;; esac
case $FLOECTL in /*) ;; *) FLOECTL=$PWD/$FLOECTL ;; esac

# run ARGS...: floectl -s SOCK ARGS; exit status in RC, stdout in $T/o,
# stderr in $T/e.
run() {
	"$FLOECTL" -s "$SOCK" "$@" >"$T/o" 2>"$T/e"
	RC=$?
}

# runx ARGS...: floectl with exactly ARGS (no -s).
runx() {
	"$FLOECTL" "$@" >"$T/o" 2>"$T/e"
	RC=$?
}

# want DESC RC [GREP-ERE-ON-STDOUT]: the last run exited RC (and printed it).
want() {
	if [ "$RC" != "$2" ]; then
		bad "$1: exit $RC (want $2); out: $(head -c 300 "$T/o"); err: $(head -c 300 "$T/e")"
	elif [ $# -ge 3 ] && ! grep -Eq -- "$3" "$T/o"; then
		bad "$1: stdout lacks /$3/: $(head -c 400 "$T/o")"
	else
		ok "$1"
	fi
}

# want_err DESC RC GREP-ERE-ON-STDERR: exit RC, one message on stderr.
want_err() {
	if [ "$RC" != "$2" ]; then
		bad "$1: exit $RC (want $2); err: $(head -c 300 "$T/e")"
	elif ! grep -Eq -- "$3" "$T/e"; then
		bad "$1: stderr lacks /$3/: $(head -c 300 "$T/e")"
	else
		ok "$1"
	fi
}

# want_json DESC JQ-FILTER: the last run exited 0 and printed JSON that
# satisfies FILTER.
want_json() {
	if [ "$RC" = 0 ] && jq -e "$2" "$T/o" >/dev/null 2>&1; then
		ok "$1"
	else
		bad "$1: exit $RC, filter $2 on: $(head -c 400 "$T/o") $(head -c 200 "$T/e")"
	fi
}

# The usage errors and help need no floe at all.
echo "== usage"
runx --help
want "--help" 0 '^usage: floectl'
grep -q 'wave flip N lakehouse' "$T/o" && ok "--help lists the commands" || bad "--help lacks wave flip"
runx help
want "help" 0 '^usage: floectl'
runx -s "$SOCK" bogus
want_err "unknown command" 2 'unknown command "bogus"'
grep -q '^usage: ' "$T/e" && ok "the usage hint follows" || bad "no usage hint: $(cat "$T/e")"
[ ! -s "$T/o" ] && ok "usage errors print nothing on stdout" || bad "stdout: $(cat "$T/o")"
runx
want_err "no command" 2 'no command given'
runx -s "$SOCK" route
want_err "route without a subcommand" 2 'route: missing subcommand; one of set, rm, list, import$'
runx -s "$SOCK" route set db.t
want_err "missing argument" 2 'route set: missing argument WAVE$'
runx -s "$SOCK" route set db.t 1 2
want_err "extra argument" 2 'unexpected argument "2"'
runx -s "$SOCK" route set db.t x
want_err "bad wave number" 2 'route set: the wave must be a number from 0 to 2147483647, not "x"'
runx -s "$SOCK" wave show 2147483648
want_err "wave number too large" 2 'wave show: the wave must be a number from 0 to 2147483647, not "2147483648"'
runx -s "$SOCK" wave flip 1 warehouse
want_err "flip to something else" 2 'the target is "lakehouse"'
runx -s "$SOCK" wave flip 1 lakehouse --canary 0
want_err "bad canary share" 2 '--canary takes a share 1..100'
runx -s "$SOCK" wave flip 1 lakehouse --canary
want_err "option without its value" 2 '--canary needs a value'
runx -s "$SOCK" status --verbose
want_err "unknown option" 2 'unknown option --verbose'
runx -s "$SOCK" -c "$T/floe.conf" status
want_err "-s with -c" 2 'cannot be used together'
runx -s "$SOCK" events --after -1
want_err "bad --after" 2 '--after takes a sequence number'

echo "== usage errors name what is wrong and show the usage line"
runx -s "$SOCK" wave flip 1
want_err "wave flip N: names the missing lakehouse" 2 '^floectl: wave flip: missing argument lakehouse$'
[ "$(sed -n 2p "$T/e")" = "usage: floectl wave flip N lakehouse [--canary PCT] [--reason TEXT] [--dry-run]" ] &&
	ok "wave flip: the usage line follows" || bad "wave flip usage: $(cat "$T/e")"
runx -s "$SOCK" route set
want_err "route set alone: both arguments named" 2 'route set: missing arguments OBJECT\|NS\.\* WAVE$'
runx -s "$SOCK" route set db.x -1
want_err "route set db.x -1: the wave's range" 2 \
	'^floectl: route set: the wave must be a number from 0 to 2147483647, not "-1"$'
grep -q 'unknown option' "$T/e" && bad "-1 taken for an option: $(cat "$T/e")" || ok "-1 is not an option"
runx -s "$SOCK" eligible -5
want_err "eligible -5: the wave's range" 2 'eligible: the wave must be a number from 0 to 2147483647, not "-5"'
runx -s "$SOCK" wave
want_err "wave alone lists the subcommands" 2 \
	'^floectl: wave: missing subcommand; one of list, show, watch, flip, rollback, ack, signoff, freeze, retire, ack-alarm, set, report-errors$'
[ "$(grep -Ec '^(usage: |       )floectl wave [a-z-]+' "$T/e")" = 12 ] &&
	ok "wave alone: a usage line per subcommand" || bad "wave usage lines: $(cat "$T/e")"
runx -s "$SOCK" wave bogus
want_err "wave bogus" 2 'wave: unknown subcommand "bogus"; one of list, show'
runx -s "$SOCK" ledger add db.x --count ok
want_err "ledger add: names the missing option" 2 'ledger add: --aggregate ok\|fail is required'
grep -q '^               --hash ok|fail \[--bucket B\] \[--at TIME\] \[--source S\]$' "$T/e" &&
	ok "a long usage line is wrapped" || bad "ledger add usage: $(cat "$T/e")"
runx -s "$SOCK" status --verbose
want_err "status --verbose" 2 '^floectl: status: unknown option --verbose$'
# Every usage error: exit 2, nothing on stdout, the message, then usage.
while read -r line; do
	# shellcheck disable=SC2086
	runx -s "$SOCK" $line
	if [ "$RC" = 2 ] && [ ! -s "$T/o" ] && head -n 1 "$T/e" | grep -q '^floectl: ' &&
		sed -n 2p "$T/e" | grep -q '^usage: floectl '; then
		ok "usage error: floectl $line"
	else
		bad "usage error: floectl $line: exit $RC, out $(head -c 200 "$T/o"), err $(cat "$T/e")"
	fi
done <<'EOF2'
route set db.t
route rm
route import
resolve
wave show
wave flip 1 lakehouse --canary 101
wave rollback
wave ack 1 2
wave signoff 1
wave set 1
wave set 1 --window 7x
wave report-errors 1 --errors 3
ledger add db.t --count maybe --aggregate ok --hash ok
ledger show db.t --limit 0
ledger import
eligible x
events --after x
events extra
rollbacks --verbose
metrics extra
help bogus
help wave bogus
EOF2

echo "== help"
runx help wave flip
want "help wave flip" 0 '^usage: floectl wave flip N lakehouse \[--canary PCT\] \[--reason TEXT\] \[--dry-run\]$'
grep -q '^example:$' "$T/o" && grep -q '^  floectl wave flip 3 lakehouse' "$T/o" &&
	grep -q 'cutover gate' "$T/o" && ok "help wave flip: what it does and an example" ||
	bad "help wave flip: $(cat "$T/o")"
cp "$T/o" "$T/help-flip"
runx wave flip --help
want "wave flip --help" 0 '^usage: floectl wave flip'
cmp -s "$T/o" "$T/help-flip" && ok "wave flip --help is help wave flip" || bad "wave flip --help: $(cat "$T/o")"
runx -s "$SOCK" wave flip 1 lakehouse -h
want "-h among the arguments" 0 '^usage: floectl wave flip'
runx status --help
want "status --help" 0 '^usage: floectl status \[--all\]$'
runx help wave
want "help wave" 0 '^wave subcommands:$'
[ "$(grep -Ec '^  wave [a-z-]+' "$T/o")" = 12 ] && ok "help wave lists the twelve" || bad "help wave: $(cat "$T/o")"
cp "$T/o" "$T/help-wave"
runx wave --help
cmp -s "$T/o" "$T/help-wave" && [ "$RC" = 0 ] && ok "wave --help is help wave" || bad "wave --help: $RC $(cat "$T/o")"
runx help
want "help: the list points to help COMMAND" 0 'floectl help COMMAND, or floectl COMMAND --help'
# Every command of the list has its help: usage, a sentence, an example.
"$FLOECTL" help | sed -n '/^commands:$/,/^$/p' | grep -E '^  [a-z]' | awk '{
	print $1, ($2 ~ /^[a-z-]+$/ && $1 ~ /^(route|wave|ledger|readers)$/) ? $2 : "" }' >"$T/cmds"
[ "$(wc -l <"$T/cmds")" = 30 ] && ok "the list has 30 commands" || bad "commands: $(cat "$T/cmds")"
while read -r w1 w2; do
	# shellcheck disable=SC2086
	runx help $w1 $w2
	if [ "$RC" = 0 ] && head -n 1 "$T/o" | grep -q "^usage: floectl $w1${w2:+ $w2}\b" &&
		[ "$(sed -n '/^$/,/^example:$/p' "$T/o" | grep -c '[a-z]')" -ge 2 ] &&
		grep -A1 '^example:$' "$T/o" | grep -q "^  floectl .*$w1${w2:+ $w2}"; then
		ok "help $w1 $w2"
	else
		bad "help $w1 $w2: exit $RC: $(cat "$T/o")"
	fi
done <"$T/cmds"

echo "== version"
runx --version
BDIR=$(dirname "$FLOECTL")
want "--version" 0 "^floectl $(cat "$BDIR/version" 2>/dev/null)\$"
[ "$(wc -l <"$T/o")" = 1 ] && ok "--version: one line" || bad "--version: $(cat "$T/o")"
v=$(cat "$BDIR/version")
if [ -e .git ] && command -v git >/dev/null; then
	git rev-parse -q --verify "${v%-dirty}^{commit}" >/dev/null &&
		ok "the version names a commit of this checkout ($v)" || bad "version $v is not a commit"
else
	[ -n "$v" ] && ok "a version without git: $v" || bad "no version"
fi
mkdir "$T/tarball" && cp Makefile "$T/tarball/"
[ "$(make -s -C "$T/tarball" version)" = unknown ] && ok "no git, no VERSION file: unknown" ||
	bad "version without git: $(make -s -C "$T/tarball" version)"
echo 1.4.2 >"$T/tarball/VERSION"
[ "$(make -s -C "$T/tarball" version)" = 1.4.2 ] && ok "no git: the VERSION file" ||
	bad "version from VERSION: $(make -s -C "$T/tarball" version)"

echo "== unreachable"
runx -s "$T/nothing.sock" status
want_err "no socket: exit 3 naming it" 3 "cannot reach floe at $T/nothing.sock: No such file or directory"
touch "$T/plain-file"
runx -s "$T/plain-file" status
want_err "not a socket: exit 3" 3 "cannot reach floe at $T/plain-file: Connection refused"

catalog warehouse
catalog lakehouse
POLICY_EXTRA="decommission_min_clean = 1
grace = 2s"
write_conf
start_floe

echo "== status and the socket lookup"
run status
want "status" 0 '^store +healthy, last event [0-9]'
grep -Eq '^waves +none$' "$T/o" && ok "status shows the wave counts" || bad "status: $(cat "$T/o")"
grep -Eq '^output +0 B held of 256\.0 MiB, 0 requests refused$' "$T/o" &&
	ok "status shows the answers held against output_budget" ||
	bad "status, output: $(cat "$T/o")"
grep -Eq '^memory +cache off; memo 0 B of 16\.0 MiB, 0 entries$' "$T/o" &&
	ok "status shows the cache (off here) and the memo against its size" ||
	bad "status, memory: $(cat "$T/o")"
run status --all
grep -Eq '^waves\.warehouse +0$' "$T/o" && ok "status --all shows every member" || bad "status --all: $(cat "$T/o")"
run --json status
want_json "status --json" '.store.healthy == true'
runx -c "$T/floe.conf" status
want "-c CONF reads admin_socket" 0 '^store +healthy'
printf '[floe]\nlisten = nonsense\n' >"$T/bad.conf"
runx -c "$T/bad.conf" status
want_err "-c with a broken conf: usage error" 2 "bad.conf:2"
FLOE_SOCKET=$SOCK "$FLOECTL" status >"$T/o" 2>"$T/e"; RC=$?
want "FLOE_SOCKET" 0 '^store +healthy'
mkdir -p "$T/cwd/var" && ln -s "$SOCK" "$T/cwd/var/floe.sock"
(cd "$T/cwd" && env -u FLOE_SOCKET "$FLOECTL" status >"$T/o" 2>"$T/e"); RC=$?
want "default var/floe.sock" 0 '^store +healthy'

echo "== routes"
run route list
want "route list, empty" 0 '^no routes'
run route set db.bunnies 1
want "route set" 0 '^db\.bunnies -> wave 1$'
run route set 'db.*' 2
want "route set a rule" 0 '^db\.\* -> wave 2$'
run route set 'my.db%1Forders' 2
want "route set the REST form" 0 '^my\.db%1Forders -> wave 2$'
run --json route set wh_only.legacy_bunnies 3
want_json "route set --json" '(.object == "wh_only.legacy_bunnies") and (.wave == 3)'
run route list
want "route list" 0 '^OBJECT +WAVE +SINCE$'
[ "$(awk 'NR > 1 {print $1 ":" $2}' "$T/o" | tr '\n' ' ')" = "db.*:2 db.bunnies:1 my.db%1Forders:2 wh_only.legacy_bunnies:3 " ] &&
	ok "route list rows" || bad "route list rows: $(cat "$T/o")"
# Aligned: the SINCE column starts at the same offset on every line.
[ "$(awk '{print index($0, $3)}' "$T/o" | sort -u | wc -l)" = 1 ] &&
	ok "route list is aligned" || bad "route list not aligned: $(cat "$T/o")"
run route list --json
want_json "route list --json (after the command)" '.routes | length == 4'
run route rm 'my.db%1Forders'
want "route rm the REST form" 0 '^my\.db%1Forders: route removed \(was wave 2\)$'
run route rm 'my.db%1Forders'
want_err "route rm again: exit 2" 2 'has no route'
run route set orders 1
want_err "malformed object: exit 2 with the parser's message" 2 'an object is a namespace and a table'

echo "== resolve"
run resolve db.bunnies
want "resolve by object" 0 '^why +object$'
grep -Eq '^target +warehouse$' "$T/o" && grep -Eq '^matched +db\.bunnies$' "$T/o" &&
	ok "resolve shows target and matched" || bad "resolve: $(cat "$T/o")"
run resolve db.athena --client 'spark job'
want "resolve by rule with a client" 0 '^matched +db\.\*$'
grep -Eq '^client +spark job$' "$T/o" && ok "resolve echoes the client" || bad "resolve client: $(cat "$T/o")"
run --json resolve lh_only.new_bunnies
want_json "resolve --json, unassigned" '(.why == "unassigned") and (.target == "warehouse") and (.wave == null)'

echo "== waves"
run wave list
want "wave list" 0 '^WAVE +STATE +PCT +OBJECTS +RULES +SINCE +ACTOR +REASON$'
[ "$(awk 'NR > 1 {print $1 ":" $2 ":" $4 ":" $5}' "$T/o" | tr '\n' ' ')" = "1:warehouse:1:0 2:warehouse:0:1 3:warehouse:1:0 " ] &&
	ok "wave list rows" || bad "wave list rows: $(cat "$T/o")"
run wave show 1
want "wave show" 0 '^state +warehouse$'
grep -Eq '^  db\.bunnies$' "$T/o" && ok "wave show lists the objects" || bad "wave show: $(cat "$T/o")"
run wave show 99
want_err "wave show of an unknown wave: exit 2" 2 'wave 99 has no routes and no state'
run --json wave show 2
want_json "wave show --json" '(.rules == ["db.*"]) and (.objects == [])'

echo "== flip, rollback, ack"
run wave flip 1 lakehouse --reason 'clean for a week'
want "wave flip" 0 '^wave 1: warehouse -> lakehouse$'
run wave flip 1 lakehouse
want_err "flip again: refused, exit 1" 1 'refused: wave 1 is already on the lakehouse'
run --json wave flip 1 lakehouse
if [ "$RC" = 1 ] && jq -e '.error.code == 409' "$T/o" >/dev/null 2>&1; then
	ok "refused with --json prints the error object"
else
	bad "refused --json: exit $RC, $(cat "$T/o")"
fi
run wave flip 2 lakehouse --canary 25
want "wave flip --canary" 0 '^wave 2: warehouse -> canary \(0 % → 25 %\)$'
run route set db.java_bunnies 1
want_err "route into a flipped wave: refused" 1 'wave 1 is lakehouse'
run route set db.java_bunnies 1 --force
want "route set --force" 0 '^db\.java_bunnies -> wave 1$'
run wave rollback 1 --reason 'dashboards disagree'
want "wave rollback" 0 '^wave 1: lakehouse -> rolled_back$'
run wave flip 1 lakehouse
want_err "flip before ack: refused" 1 'wave ack 1'
run wave ack 1
want "wave ack" 0 '^wave 1: rolled_back -> warehouse$'
run wave ack 1
want_err "ack again: refused" 1 'not rolled_back'
run --json wave rollback 2 --force-stale
want_json "wave rollback --force-stale --json" '(.from == "canary") and (.state == "rolled_back")'

echo "== events"
run events
want "events" 0 '^1  [0-9T:.-]+Z  route\.set  .*object=db\.bunnies'
grep -A1 'wave\.refused' "$T/o" | grep -q 'message="wave 1 is already on the lakehouse"' &&
	ok "events show refusals with their message" || bad "events: $(cat "$T/o")"
last=$(jq -r .store.last_seq < <("$FLOECTL" -s "$SOCK" --json status))
[ "$(grep -Ec '^[0-9]+  ' "$T/o")" = "$last" ] && ok "events prints every event" || bad "events printed $(grep -Ec '^[0-9]+  ' "$T/o") of $last"
run events --after $((last - 2))
[ "$RC" = 0 ] && [ "$(grep -Ec '^[0-9]+  ' "$T/o")" = 2 ] && ok "events --after" || bad "events --after: $(cat "$T/o")"
run --json events
want_json "events --json" "(.events | length == $last) and (.last_seq == $last)"

"$FLOECTL" -s "$SOCK" events --follow --after "$last" >"$T/follow" 2>"$T/follow.err" &
FOLLOW_PID=$!
pids+=("$FOLLOW_PID")
sleep 0.3
run route set db.wh_bunnies 4
seen=0
for _ in $(seq 60); do
	grep -q 'object=db\.wh_bunnies' "$T/follow" && { seen=1; break; }
	sleep 0.1
done
[ $seen = 1 ] && ok "events --follow prints a new event" || bad "events --follow: $(cat "$T/follow" "$T/follow.err")"
kill -INT "$FOLLOW_PID"
wait "$FOLLOW_PID"; frc=$?
keep=()
for p in "${pids[@]}"; do [ "$p" = "$FOLLOW_PID" ] || keep+=("$p"); done
pids=("${keep[@]}")
[ "$frc" = 0 ] && ok "events --follow ends with exit 0 on SIGINT" || bad "events --follow exit $frc"
[ "$(wc -l <"$T/follow")" = 1 ] && ok "events --follow --after prints only newer events" ||
	bad "follow printed: $(cat "$T/follow")"

echo "== ledger add: one record's errors"
run ledger add other.t --count fail --aggregate ok --hash ok
want_err "a failed tier without a bucket" 2 \
	'^floectl: ledger add: a record that is not clean needs a bucket \(stale, gap or value-drift\)$'
run ledger add 'other.*' --count ok --aggregate ok --hash ok
want_err "a rule" 2 '^floectl: ledger add: object "other\.\*" is a rule: the ledger holds tables$'
run ledger add other.t --count ok --aggregate ok --hash ok --at 2099-01-01T00:00:00Z
want_err "a time in the future" 2 '^floectl: ledger add: ts "2099-01-01T00:00:00.000Z" is in the future'
run ledger add other.t --count ok --aggregate ok --hash ok --at 2026-01-01T00:00:00Z
want "a record" 0 '^other\.t at 2026-01-01T00:00:00\.000Z: recorded$'
run ledger add other.t --count ok --aggregate fail --hash fail --bucket gap --at 2026-01-01T00:00:00Z
want_err "a different record for the same time: refused" 1 \
	'^floectl: refused: ledger add: other\.t at 2026-01-01T00:00:00\.000Z already has a different record; the ledger is append-only$'
grep -Eq 'line 1|nothing was imported' "$T/e" && bad "ledger add speaks of an import: $(cat "$T/e")" ||
	ok "ledger add's errors are the record's, not an import's"
run --json ledger add other.t --count fail --aggregate ok --hash ok
if [ "$RC" = 2 ] && jq -e '.error.code == 400' "$T/o" >/dev/null 2>&1; then
	ok "ledger add --json: floe's error object as sent"
else
	bad "ledger add --json: exit $RC, $(cat "$T/o")"
fi
printf '{"object":"other.t"}\n' >"$T/one.jsonl"
run ledger import "$T/one.jsonl"
want_err "an import still names its line" 2 '^floectl: line 1: field "ts" is required .*; nothing was imported$'

echo "== eligible: the gate of the next step, exit 1 when blocked"
run eligible 3
want "a wave on the warehouse, gate off: exit 0" 0 '^  cutover gate: holds$'
grep -q decommission "$T/o" && bad "a wave never flipped shows the decommission gate: $(cat "$T/o")" ||
	ok "no decommission gate for a wave never flipped"
run eligible 2
want "a rolled-back wave: exit 0" 0 '^  wave ack 2 first'
grep -q '^  cutover gate: holds$' "$T/o" && ok "a rolled-back wave: the cutover gate" || bad "eligible 2: $(cat "$T/o")"
run wave set 3 --min-clean 2
want "wave set 3 --min-clean 2" 0
run eligible 3
want "a blocked wave: exit 1" 1 '^  cutover gate: BLOCKED$'
grep -q 'need at least 2 clean records' "$T/o" && ok "eligible says what the gate needs" || bad "eligible 3: $(cat "$T/o")"
run eligible 2 3
want "two waves, one blocked: exit 1" 1 '^wave 2  rolled_back$'
grep -q '^wave 3  warehouse$' "$T/o" && ok "eligible 2 3 shows both" || bad "eligible 2 3: $(cat "$T/o")"
run --json eligible 2 3
[ "$RC" = 1 ] && jq -e '(.waves | map(.wave)) == [2,3] and .waves[1].cutover.pass == false' "$T/o" >/dev/null 2>&1 &&
	ok "eligible --json 2 3: one list, exit 1" || bad "eligible --json 2 3: exit $RC: $(cat "$T/o")"
run --json eligible 2
want_json "eligible --json 2: exit 0, the retire verdict too" \
	'.waves[0].retire.pass == false and .waves[0].retire.grace == "2s" and .waves[0].retire.grace_ends == null'
run eligible
want "every wave, one blocked: exit 1" 1 '^wave 1  warehouse$'
run wave flip 1 lakehouse
want "flip wave 1" 0
run eligible 1
want "on the lakehouse: the decommission gate, blocked" 1 '^  decommission gate: BLOCKED$'
grep -q 'cutover gate' "$T/o" && bad "a lakehouse wave shows the cutover gate: $(cat "$T/o")" ||
	ok "a lakehouse wave: only the decommission gate"
run wave signoff 1 --by alice
want "sign off wave 1" 0
run ledger add db.bunnies --count ok --aggregate ok --hash ok
want "a clean record for db.bunnies" 0
run ledger add db.java_bunnies --count ok --aggregate ok --hash ok
want "a clean record for db.java_bunnies" 0
run eligible 1
want "the decommission gate holds: exit 0" 0 '^  decommission gate: holds$'
run wave freeze 1
want "freeze wave 1" 0
run eligible 1
want "frozen, in its grace period: exit 1" 1 '^  retire \(grace period\): BLOCKED$'
grep -q 'is in its grace period (2s) until' "$T/o" && ok "eligible says until when" || bad "eligible 1: $(cat "$T/o")"
grep -Eq 'cutover|decommission' "$T/o" && bad "a frozen wave shows another gate: $(cat "$T/o")" ||
	ok "a frozen wave: only the grace period"
for _ in $(seq 50); do
	run eligible 1
	[ "$RC" = 0 ] && break
	sleep 0.1
done
want "the grace period over: exit 0" 0 'it can retire$'
run wave retire 1
want "retire wave 1" 0 '^wave 1: frozen -> retired$'
run eligible 1
want "retired: nothing left, exit 1" 1 '^  retired: final, no gate left to pass$'

echo "== bash completion"
# comp WORDS...: what the completion offers for the last of WORDS (the
# first is the floectl to run), sorted, on one line.
comp() {
	bash -c '. packaging/floectl.bash-completion || exit 1
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_floectl "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		[ ${#COMPREPLY[@]} -gt 0 ] && printf "%s\n" "${COMPREPLY[@]}"' comp "$@" |
		sort | paste -sd ' '
}
# expect_comp DESC WANT WORDS...
expect_comp() {
	local d=$1 w=$2
	shift 2
	expect_eq "completion: $d" "$w" "$(comp "$@")"
}
bash -c '. packaging/floectl.bash-completion && complete -p floectl' | grep -q -- '-F _floectl floectl$' &&
	ok "completion: registered for floectl" || bad "completion: not registered"
expect_comp "the commands, as help lists them" "$(cut -d' ' -f1 "$T/cmds" | sort -u | paste -sd ' ')" \
	"$FLOECTL" ""
expect_comp "a prefix" "wave" "$FLOECTL" wa
expect_comp "global options" "--help --json --version" "$FLOECTL" --
for f in route wave ledger; do
	expect_comp "$f's subcommands, as help lists them" \
		"$(awk -v f="$f" '$1 == f {print $2}' "$T/cmds" | sort | paste -sd ' ')" "$FLOECTL" "$f" ""
done
# Each command's options, as its usage line has them.
while read -r w1 w2; do
	want_opts=$( ("$FLOECTL" help $w1 $w2 | sed '/^$/q' | grep -o -- '--[a-z-]*'; echo --json; echo --help) |
		sort -u | paste -sd ' ')
	# shellcheck disable=SC2086
	expect_comp "options of $w1 $w2" "$want_opts" "$FLOECTL" $w1 $w2 --
done <"$T/cmds"
waves=$("$FLOECTL" -s "$SOCK" --json wave list | jq -r '.waves[].wave' | sort | paste -sd ' ')
objects=$("$FLOECTL" -s "$SOCK" --json route list | jq -r '.routes[].object' | sort | paste -sd ' ')
[ -n "$waves" ] && [ -n "$objects" ] || bad "no waves or objects to complete: $waves / $objects"
expect_comp "wave numbers from floe" "$waves" "$FLOECTL" -s "$SOCK" wave show ""
expect_comp "wave numbers for eligible, again after one" "$waves" "$FLOECTL" -s "$SOCK" eligible 1 ""
FLOE_SOCKET=$SOCK expect_comp "wave numbers through FLOE_SOCKET" "$waves" "$FLOECTL" wave flip ""
expect_comp "wave numbers with -c CONF" "$waves" "$FLOECTL" -c "$T/floe.conf" wave ack ""
expect_comp "wave flip N: lakehouse" "lakehouse" "$FLOECTL" -s "$SOCK" wave flip 3 ""
expect_comp "wave flip's options after the target" "--canary" "$FLOECTL" -s "$SOCK" wave flip 3 lakehouse \
	--reason "a b" --ca
expect_comp "objects from floe" "$objects" "$FLOECTL" -s "$SOCK" route rm ""
expect_comp "objects by prefix" "$(printf '%s\n' $objects | grep '^db\.' | sort | paste -sd ' ')" \
	"$FLOECTL" -s "$SOCK" resolve db.
expect_comp "route set OBJECT: wave numbers" "$waves" "$FLOECTL" -s "$SOCK" route set db.x ""
expect_comp "an option's values" "fail ok" "$FLOECTL" -s "$SOCK" ledger add db.x --count ""
expect_comp "a bucket" "gap" "$FLOECTL" ledger add db.x --count fail --bucket g
expect_comp "help's words" "flip freeze" "$FLOECTL" help wave f
expect_comp "floe unreachable: no waves" "" "$FLOECTL" -s "$T/nothing.sock" wave show ""

echo "== metrics"
run metrics
want "metrics" 0 '^# TYPE '

echo "== floe gone"
stop_floe
run status
want_err "floe stopped: exit 3" 3 "cannot reach floe at $SOCK"

finish
