#!/bin/bash
# Integration 92: workers = 2. The error trigger counts the reads of both
# workers: 4 failures in 10 reads spread over them (neither alone reaches
# error_min_requests) roll the wave back, within the master's collection
# period. And the LoadTable cache stays coherent across workers: with
# both workers' caches warm, a commit through one of them is seen by the
# next read on every worker (no stale hit), and a flip through the admin
# socket by every worker's next read. Both workers' reader sightings
# reach the inventory the master stores.
# alone: load across workers
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 92
catalog warehouse
catalog lakehouse --prefix lhp
CACHE_SIZE=1M
FLOE_EXTRA="workers = 2
cache_ttl = 60s"
POLICY_EXTRA="error_window = 60s
error_min_requests = 10
error_ratio = 2
error_floor = 1%"
write_conf
start_floe

A=/v1/routed/namespaces/db/tables/athena
B=/v1/routed/namespaces/db/tables/bunnies
# Ten reads on fresh connections; the first four fail at the lakehouse.
# Each asks a different query: a cache hit is not a read the trigger counts.
# The kernel gives each connection a worker at random, and one run in 512
# all ten land on one worker, which would not show the master adding up
# both: then the same is done again on a fresh wave (three tries at most).
for wave in 1 3 4; do
	ctl_ok "route athena to wave $wave" route set db.athena "$wave"
	ctl_ok "flip $wave" wave flip "$wave" lakehouse
	fault lakehouse '{"match":"athena","status":503,"count":4}'
	: >"$T/reads"
	for i in $(seq 10); do
		get "$A?read=$wave.$i"
		echo "$S $(hdr X-Floe-Worker) $(hdr X-Floe-Target)" >>"$T/reads"
	done
	w0=$(awk '$2 == "0"' "$T/reads" | wc -l)
	w1=$(awk '$2 == "1"' "$T/reads" | wc -l)
	[ "$w0" -ge 1 ] && [ "$w1" -ge 1 ] && break
	echo "# wave $wave: all ten reads on one worker ($w0 / $w1); again"
done
expect_eq "4 reads answered 503" 4 "$(grep -c '^503 ' "$T/reads")"
expect_eq "10 reads from the lakehouse" 10 "$(grep -c ' lakehouse$' "$T/reads")"
[ "$w0" -ge 1 ] && [ "$w1" -ge 1 ] &&
	ok "the reads were split: worker 0 $w0, worker 1 $w1 (each < 10)" ||
	bad "the reads were not split over both workers: $w0 / $w1"
for i in $(seq 40); do
	[ "$(wave_state "$wave")" = rolled_back ] && break
	sleep 0.05
done
expect_eq "4 of 10 over both workers: rolled back" rolled_back "$(wave_state "$wave")"
line=$(tail -n 1 "$T/rollback.log" 2>/dev/null)
[ -n "$line" ] && echo "$line" | jq -e --argjson w "$wave" '.trigger == "errors" and .wave == $w and .actor == "floe"
	and (.reason | contains("4 of 10 reads"))' >/dev/null &&
	ok "the rollback log line: 4 of 10 reads" || bad "log line: $line"
get "$A?read=next"
expect_header "the next read: the warehouse" X-Floe-Target warehouse

# The cache. loads N: N reads of B; "status worker cache target prop" each.
loads() {
	local i
	: >"$T/loads"
	for i in $(seq "$1"); do
		get $B
		echo "$S $(hdr X-Floe-Worker) $(hdr X-Floe-Cache) $(hdr X-Floe-Target) $(jq -r '.metadata.properties["cache-test"] // "none"' "$T/b")" >>"$T/loads"
	done
	cat "$T/loads" >>"$T/all"
}
# Warm both workers' caches: each must serve a hit.
for round in $(seq 10); do
	loads 8
	h0=$(awk '$2 == "0" && $3 == "hit"' "$T/loads" | wc -l)
	h1=$(awk '$2 == "1" && $3 == "hit"' "$T/loads" | wc -l)
	[ "$h0" -ge 1 ] && [ "$h1" -ge 1 ] && break
done
[ "$h0" -ge 1 ] && [ "$h1" -ge 1 ] && ok "both workers' caches hold the table" ||
	bad "the caches were not both warm: hits $h0 / $h1"
post $B '{"requirements":[],"updates":[{"action":"set-properties","updates":{"cache-test":"1"}}]}'
expect_status "commit through floe" 200
wrote=$(hdr X-Floe-Worker)
loads 16
stale=$(awk '$5 != "1"' "$T/loads" | wc -l)
expect_eq "no read after the commit (through worker $wrote) saw the old table" 0 "$stale"
expect_eq "both workers answered after it" 2 "$(awk '{print $2}' "$T/loads" | sort -u | wc -l)"
# Warm again, then flip through the admin socket.
for round in $(seq 10); do
	loads 8
	h0=$(awk '$2 == "0" && $3 == "hit"' "$T/loads" | wc -l)
	h1=$(awk '$2 == "1" && $3 == "hit"' "$T/loads" | wc -l)
	[ "$h0" -ge 1 ] && [ "$h1" -ge 1 ] && break
done
ctl_ok "route bunnies" route set db.bunnies 2
ctl_ok "flip 2" wave flip 2 lakehouse
loads 16
expect_eq "every read after the flip: the lakehouse" 0 "$(awk '$4 != "lakehouse"' "$T/loads" | wc -l)"
expect_eq "on both workers" 2 "$(awk '{print $2}' "$T/loads" | sort -u | wc -l)"

# Reader sightings: every load either worker answered, in the master's
# inventory (a worker hands them over each second).
wh=$(awk '$1 == 200 && $4 == "warehouse"' "$T/all" | wc -l)
lh=$(awk '$1 == 200 && $4 == "lakehouse"' "$T/all" | wc -l)
for i in $(seq 60); do
	admin GET '/readers?object=db.bunnies'
	got=$(jq -c '[.readers[] | {side, count}] | sort_by(.side)' "$T/a")
	[ "$got" = "[{\"side\":\"lakehouse\",\"count\":$lh},{\"side\":\"warehouse\",\"count\":$wh}]" ] && break
	sleep 0.1
done
expect_eq "the inventory counts both workers' loads ($wh warehouse, $lh lakehouse)" \
	"[{\"side\":\"lakehouse\",\"count\":$lh},{\"side\":\"warehouse\",\"count\":$wh}]" "$got"
finish
