#!/bin/bash
# Integration 78: what floe writes to its store on its own -- the reader
# inventory's flush, the tick's retry of a rollback log line that waits
# in the store -- never holds engine requests while another process
# holds the store's writer lock (a wedged tool here: mdb_load reading a
# pipe that stays open). Those writes are the worker's child's, which
# waits for the lock instead of the loop; once the lock is free they land.
# alone: reads a held store lock as a write that waits 0.3 s
. "$(dirname "$0")/lib.sh"
lib_init 78
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
# The log's directory is a file: every append fails, the line waits.
: >"$T/nodir"
sed -i "s|^rollback_log = .*|rollback_log = $T/nodir/rollback.log|" "$T/floe.conf"
start_floe
TBL=/v1/routed/namespaces/db/tables/bunnies
pending() {
	curl -s --max-time 5 --unix-socket "$SOCK" http://floe/status |
		jq -r '.rollback_log.pending'
}

ctl_ok "route" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse
"$FLOECTL" -s "$SOCK" wave rollback 1 --reason lock >"$T/rb" 2>&1
expect_eq "the rollback is done, its log line waits (exit 4)" 4 $?
expect_eq "one line pending" 1 "$(pending)"
for _ in 1 2 3; do get "$TBL"; done
expect_status "loads to note in the reader inventory" 200

echo "== another process holds the store's writer lock"
HDR='VERSION=3\nformat=bytevalue\ndatabase=waves\ntype=btree\nHEADER=END\n'
held() { # 0 when a write to the store cannot start within 0.3 s
	printf "${HDR}DATA=END\n" | timeout 0.3 mdb_load -s waves "$T/state"
	[ $? = 124 ]
}
mkfifo "$T/hold"
mdb_load -s waves "$T/state" <"$T/hold" &
HOLD=$!
exec 7>"$T/hold"
printf "$HDR" >&7
for _ in $(seq 50); do held && break; done
held && ok "the writer lock is held" || bad "the writer lock is not held"
# The log can take the line now: the tick retries it every second, and
# the inventory flushes every 5 s; both need the lock.
rm "$T/nodir"
mkdir "$T/nodir"
answered=0 slowest=0
end=$((SECONDS + 7))
while [ $SECONDS -lt $end ]; do
	s=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 3 "$BASE$TBL")
	[ "${s% *}" = 200 ] && answered=$((answered + 1))
	slowest=$(awk -v a="$slowest" -v b="${s#* }" 'BEGIN { print (b > a ? b : a) }')
	sleep 0.1
done
[ "$answered" -ge 20 ] && ok "$answered engine reads answered over 7 s" ||
	bad "only $answered engine reads answered over 7 s"
awk -v s="$slowest" 'BEGIN { exit !(s < 0.5) }' &&
	ok "the slowest of them took ${slowest}s" ||
	bad "an engine read took ${slowest}s while the lock was held"
expect_eq "the line still waits for the lock" 1 "$(pending)"
[ ! -s "$T/nodir/rollback.log" ] && ok "nothing written to the log yet" ||
	bad "the log was written while the store's lock was held"

printf 'DATA=END\n' >&7
exec 7>&-
wait "$HOLD" || bad "the lock holder failed"
for _ in $(seq 50); do [ "$(pending)" = 0 ] && break; sleep 0.1; done
expect_eq "the lock free, the line lands" 0 "$(pending)"
expect_eq "the log holds it, once" 1 "$(grep -c '"trigger":"operator"' "$T/nodir/rollback.log")"
for _ in $(seq 80); do
	admin GET '/readers?object=db.bunnies'
	[ "$(jq '.readers | length' "$T/b" 2>/dev/null)" -ge 1 ] 2>/dev/null && break
	sleep 0.1
done
expect_jq "the loads noted meanwhile are stored" 200 '.readers | length >= 1'
finish
