#!/bin/bash
# A store that cannot be read routes to the warehouse, the safe side, and
# /readyz says so; once the damage is repaired floe serves the routes again.
. "$(dirname "$0")/lib.sh"
lib_init 21
catalog warehouse
catalog lakehouse
write_conf
start_floe
ctl_ok "route" route set db.bunnies 7
ctl_ok "flip" wave flip 7 lakehouse
get /v1/routed/namespaces/db/tables/bunnies
expect_header "wave 7 reads from the lakehouse" X-Floe-Target lakehouse

# Damage wave 7's record behind floe's back (a second LMDB writer, as a bad
# disk or a buggy tool would): one byte where a whole record belongs.
dump() { # VALUE-HEX
	printf 'VERSION=3\nformat=bytevalue\ndatabase=waves\ntype=btree\n'
	printf 'HEADER=END\n 00000007\n %s\nDATA=END\n' "$1"
}
mdb_dump -s waves "$T/state" >"$T/waves.dump" || bad "mdb_dump"
dump 00 | mdb_load -s waves "$T/state" || bad "mdb_load"
get /v1/routed/namespaces/db/tables/bunnies
get /v1/routed/namespaces/db/tables/bunnies
expect_status "a damaged route still answers" 200
expect_header "from the warehouse, the safe side" X-Floe-Target warehouse
get /readyz
expect_jq "not ready while the store cannot be read" 503 '.store == false'
grep -q "flag store: store_wave_get: wave 7: damaged record" "$T/floe.log" && ok "the store error is logged" ||
	bad "no log line names the store error"

# Repair: put the original record back.
sed -n '/^HEADER=END/,$p' "$T/waves.dump" | cat <(printf 'VERSION=3\nformat=bytevalue\ndatabase=waves\ntype=btree\n') - |
	mdb_load -s waves "$T/state" || bad "mdb_load repair"
get /v1/routed/namespaces/db/tables/bunnies
expect_header "repaired: the lakehouse again" X-Floe-Target lakehouse
get /readyz
expect_status "ready again" 200
n=$(grep -c "damaged record" "$T/floe.log")
expect_eq "one warning for the outage, not one per request" 1 "$n"
grep -q "flag store: reads and writes succeed again" "$T/floe.log" &&
	ok "the recovery is logged" || bad "no log line for the recovery"
finish
