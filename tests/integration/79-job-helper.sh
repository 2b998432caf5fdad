#!/bin/bash
# Integration 79: the reader inventory's flushes and the stale-reader
# counts of /metrics are jobs of a job helper, floe's own program started
# for the job, never a fork of floe: no fork is counted for them
# (/status admin.forks less admin.helper_starts), the helper's command
# line is its own and it holds none of floe's descriptors. A helper
# killed -9 while it waits for the store's writer lock fails its flush
# only: the sightings are stored by the next one.
. "$(dirname "$0")/lib.sh"
lib_init 79
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe

# load TOKEN: a LoadTable of db.bunnies with that bearer token.
load() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
		-H "Authorization: Bearer $1" \
		"$BASE/v1/routed/namespaces/db/tables/bunnies"
}
# status FILTER: a jq filter on /status.
status() {
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
		jq -r "$1"
}
# flushed N: wait (8 s at most) until N sightings were stored, none left.
flushed() {
	local i
	for i in $(seq 80); do
		[ "$(status ".readers.flushed >= $1 and .readers.unflushed == 0")" = true ] &&
			return 0
		sleep 0.1
	done
	return 1
}
forks() { status '.admin.forks - .admin.helper_starts'; }

ctl_ok "route" route set db.bunnies 1
FORKS=$(forks)
expect_eq "a load" 200 "$(load token-one-0123456789)"
flushed 1 && ok "the flush stored it" || bad "not flushed: $(status .readers)"
expect_eq "another load" 200 "$(load token-two-0123456789)"
flushed 2 && ok "the next flush stored it" || bad "not flushed: $(status .readers)"
HS=$(status .admin.helper_starts)
[ "$HS" -ge 2 ] 2>/dev/null && ok "two flushes, $HS helpers" ||
	bad "helpers started: $HS"
expect_eq "no fork for them" "$FORKS" "$(forks)"

echo "== a helper waiting for the store's writer lock, killed -9"
HDR='VERSION=3\nformat=bytevalue\ndatabase=waves\ntype=btree\nHEADER=END\n'
mkfifo "$T/hold"
mdb_load -s waves "$T/state" <"$T/hold" &
HOLD=$!
exec 7>"$T/hold"
printf "$HDR" >&7
expect_eq "a load while the lock is held" 200 "$(load token-three-0123456789)"
HP=
for _ in $(seq 80); do
	HP=$(pgrep -P "$FLOE_PID" -f -- --job-helper) && break
	sleep 0.1
done
[ -n "$HP" ] && ok "a helper waits (pid $HP)" || bad "no helper seen"
expect_eq "its command line is its own" "floe-helper --job-helper" \
	"$(tr '\0' ' ' <"/proc/$HP/cmdline" 2>/dev/null | sed 's/ $//')"
# Its descriptors: stdio, its socket, and the store's files it opened.
fds=$(for f in "/proc/$HP/fd"/*; do
	n=${f##*/}
	l=$(readlink "$f")
	if [ "$n" = 3 ]; then echo "3 ${l%%:*}"; elif [ "$n" -gt 3 ]; then echo "$n $l"; fi
done)
[ "$(echo "$fds" | head -1)" = "3 socket" ] &&
	! echo "$fds" | tail -n +2 | grep -qv " $T/state/" &&
	ok "it holds its socket and the store's files, nothing of floe's" ||
	bad "its descriptors: $fds"
kill -9 "$HP"
for _ in $(seq 50); do
	grep -q "job helper $HP killed by signal 9" "$T/floe.log" && break
	sleep 0.1
done
grep -q "job helper $HP killed by signal 9" "$T/floe.log" &&
	ok "its death is logged" || bad "not logged: $(tail -3 "$T/floe.log")"
expect_eq "the flush failed" 1 "$(status .readers.flush_failures)"
printf 'DATA=END\n' >&7
exec 7>&-
wait "$HOLD" || bad "the lock holder failed"
flushed 3 && ok "the lock free, the next flush stored the sighting" ||
	bad "not flushed: $(status .readers)"
admin GET '/readers?object=db.bunnies'
expect_jq "all three readers are stored" 200 '.total == 3'

echo "== /metrics: a helper counts the stale readers"
ctl_ok "flip" wave flip 1 lakehouse
FORKS=$(forks)
for _ in $(seq 50); do
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/metrics >"$T/m"
	grep -q '^floe_stale_readers{' "$T/m" && break
	sleep 0.1
done
grep -qx 'floe_stale_readers{wave="1"} 3' "$T/m" &&
	ok "floe_stale_readers{wave=\"1\"} 3" ||
	bad "metrics: $(grep stale_readers "$T/m")"
expect_eq "no fork to count them" "$FORKS" "$(forks)"
finish
