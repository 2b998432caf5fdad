#!/bin/bash
# Integration 79: the reader inventory's flushes are the job helper's, a
# process floe starts once and keeps: loads noted over several flushes
# start no other process (/status admin.forks), the helper holds none of
# floe's descriptors, a helper killed -9 is replaced at the next flush
# and no sighting is lost, it counts the stale readers /metrics shows,
# and it ends with floe.
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
helper() { pgrep -P "$FLOE_PID" -f -- --job-helper; }

ctl_ok "route" route set db.bunnies 1
expect_eq "a load" 200 "$(load token-one-0123456789)"
flushed 1 && ok "the flush stored it" || bad "not flushed: $(status .readers)"
HP=$(helper)
[ -n "$HP" ] && ok "a job helper runs (pid $HP)" || bad "no job helper: $(ps -ef --forest | grep -v grep | grep -A2 floe)"
expect_eq "started once" 1 "$(status .admin.helper_starts)"
FORKS=$(status .admin.forks)
expect_eq "its descriptors: stdio and its socket" "0 1 2 3" \
	"$(ls /proc/"$HP"/fd 2>/dev/null | sort -n | xargs)"
grep -q "job helper started (pid $HP)" "$T/floe.log" &&
	ok "its start is logged" || bad "no start logged: $(tail -5 "$T/floe.log")"

expect_eq "another load" 200 "$(load token-two-0123456789)"
flushed 2 && ok "the next flush stored it" || bad "not flushed: $(status .readers)"
expect_eq "the same helper" "$HP" "$(helper)"
expect_eq "no process started for the second flush" "$FORKS" "$(status .admin.forks)"

echo "== a helper killed -9 is replaced at the next flush"
kill -9 "$HP"
expect_eq "a load meanwhile" 200 "$(load token-three-0123456789)"
flushed 3 && ok "stored by another helper" || bad "not flushed: $(status .readers)"
HP2=$(helper)
[ -n "$HP2" ] && [ "$HP2" != "$HP" ] && ok "another helper (pid $HP2)" ||
	bad "helper after the kill: '$HP2'"
expect_eq "started twice" 2 "$(status .admin.helper_starts)"
grep -q "job helper $HP killed by signal 9 since its last job" "$T/floe.log" &&
	ok "the death is logged" || bad "death not logged: $(tail -5 "$T/floe.log")"
admin GET '/readers?object=db.bunnies'
expect_jq "all three readers are stored" 200 '.total == 3'
expect_eq "no flush failed" 0 "$(status .readers.flush_failures)"

echo "== /metrics: the helper counts the stale readers"
ctl_ok "flip" wave flip 1 lakehouse
FORKS=$(status .admin.forks)
for _ in $(seq 50); do
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/metrics >"$T/m"
	grep -q '^floe_stale_readers{' "$T/m" && break
	sleep 0.1
done
grep -qx 'floe_stale_readers{wave="1"} 3' "$T/m" &&
	ok "floe_stale_readers{wave=\"1\"} 3" ||
	bad "metrics: $(grep stale_readers "$T/m")"
expect_eq "counted by the same helper" "$HP2" "$(helper)"
expect_eq "no process started to count" "$FORKS" "$(status .admin.forks)"

stop_floe
for _ in $(seq 50); do kill -0 "$HP2" 2>/dev/null || break; sleep 0.1; done
kill -0 "$HP2" 2>/dev/null && bad "the helper outlived floe" ||
	ok "the helper ended with floe"
finish
