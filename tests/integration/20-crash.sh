#!/bin/bash
# Crash safety of the flag store: floe is killed with SIGKILL in the middle
# of a burst of flips, rollbacks, acks and route changes from several
# floectl loops. Every change floectl saw acknowledged (exit 0) must be
# there after a restart on the same state dir, in order, with at most the
# one change in flight on top; the store opens, routes serve and accept
# new changes. Two rounds.
# alone: kills floe in a burst of changes that must reach a count in time
. "$(dirname "$0")/lib.sh"
lib_init 20
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe

NWAVES=4
ACTIONS=(flip rollback ack)
STATES=(warehouse lakehouse rolled_back)
TYPES=(wave.flip wave.rollback wave.ack)

for w in $(seq $NWAVES); do
	ctl_ok "route db.t$w" route set "db.t$w" "$w"
done

# wave_loop W: cycle flip/rollback/ack on wave W, appending each
# acknowledged action to $T/acked.W; stop at the first failure (at most
# 600 calls).
wave_loop() {
	local w=$1 i a rc
	for i in $(seq 0 599); do
		a=${ACTIONS[$((i % 3))]}
		case $a in
		flip) "$FLOECTL" -s "$SOCK" wave flip "$w" lakehouse >/dev/null 2>&1 ;;
		rollback) "$FLOECTL" -s "$SOCK" wave rollback "$w" --reason crash >/dev/null 2>&1 ;;
		ack) "$FLOECTL" -s "$SOCK" wave ack "$w" >/dev/null 2>&1 ;;
		esac
		rc=$?
		if [ $rc != 0 ]; then
			echo "$a $rc" >"$T/failed.$w"
			return
		fi
		echo "$a" >>"$T/acked.$w"
	done
}

# route_loop ROUND: set db.rROUND_N to wave 10 + N % 4 (waves that stay on the
# warehouse: joining a moved wave is refused), appending each acknowledged
# object to $T/acked.routes.
route_loop() {
	local i
	for i in $(seq 1 2000); do
		"$FLOECTL" -s "$SOCK" route set "db.r$1_$i" $((10 + i % 4)) \
			>/dev/null 2>&1 || return
		echo "db.r$1_$i" >>"$T/acked.routes"
	done
}

# events: every stored event, oldest first (JSON array).
events() {
	curl -s --max-time 5 --unix-socket "$SOCK" \
		"http://floe/events?limit=10000" | jq -c .events
}

# check_round N: after the restart, every acknowledged change is there.
check_round() {
	local r=$1 w a n st want next ev types acked_types
	ev=$(events)
	expect_eq "round $r: events are numbered 1..N without gaps" true \
		"$(echo "$ev" | jq '[.[].seq] == [range(1; length + 1)]')"
	for w in $(seq $NWAVES); do
		n=$(wc -l <"$T/acked.$w" 2>/dev/null || echo 0)
		n=${n// /}
		ctl --json wave show "$w"
		st=$(jq -r .state "$T/ctl")
		want=${STATES[$((n % 3))]}
		next=${STATES[$(((n + 1) % 3))]}
		if [ "$st" = "$want" ] || [ "$st" = "$next" ]; then
			ok "round $r: wave $w after $n acknowledged changes is $st"
		else
			bad "round $r: wave $w after $n acknowledged changes is $st, want $want (or $next if the call in flight landed)"
		fi
		types=$(echo "$ev" | jq -r --argjson w "$w" \
			'[.[] | select(.wave == $w and (.type | startswith("wave."))) | .type] | join(" ")')
		acked_types=$(awk '{ printf "%swave.%s", sep, $1; sep = " " }' \
			"$T/acked.$w" 2>/dev/null)
		case "$types" in
		"$acked_types" | "$acked_types "*)
			ok "round $r: wave $w's events start with its $n acknowledged changes, in order" ;;
		*)
			bad "round $r: wave $w's events do not hold the acknowledged changes: want \"$(echo "$acked_types" | tail -c 200)\", have \"$(echo "$types" | tail -c 200)\"" ;;
		esac
		extra=$(( $(echo "$types" | wc -w) - n ))
		if [ "$extra" -ge 0 ] && [ "$extra" -le 1 ]; then
			ok "round $r: wave $w has $extra change(s) beyond the acknowledged"
		else
			bad "round $r: wave $w has $extra events beyond the $n acknowledged"
		fi
	done
	ctl --json route list
	missing=$(jq -r '.routes[].object' "$T/ctl" | sort |
		comm -13 - <(sort "$T/acked.routes") | wc -l)
	expect_eq "round $r: all $(wc -l <"$T/acked.routes") acknowledged routes are there" 0 "$missing"
	n=$(grep -c "^db.r${r}_" "$T/acked.routes")
	[ "$n" -ge 5 ] && ok "round $r: $n routes were set in the burst" ||
		bad "round $r: only $n routes were set in the burst"
}

for round in 1 2; do
	lp=()
	for w in $(seq $NWAVES); do
		wave_loop "$w" &
		lp+=($!)
	done
	route_loop "$round" &
	lp+=($!)
	# Let the burst run until it holds at least 5 route sets and 20
	# changes in all (10 s at most: a sanitizer build on a busy machine
	# makes about 3 a second), then kill floe without warning, at a
	# random moment up to 0.8 s later.
	for i in $(seq 200); do
		[ "$(cat "$T/acked.routes" 2>/dev/null | grep -c "^db.r${round}_")" -ge 5 ] &&
			[ "$(cat "$T"/acked.* 2>/dev/null | wc -l)" -ge 20 ] && break
		sleep 0.05
	done
	sleep "0.$((RANDOM % 9))"
	kill -9 "$FLOE_PID"
	wait "$FLOE_PID" 2>/dev/null
	FLOE_PID=
	for p in "${lp[@]}"; do
		for i in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	total=$(cat "$T"/acked.* 2>/dev/null | wc -l)
	if [ "$total" -ge 20 ]; then
		ok "round $round: $total changes acknowledged before the kill"
	else
		bad "round $round: only $total changes acknowledged before the kill"
	fi
	start_floe
	ctl_ok "round $round: floectl status after the restart" --json status
	expect_eq "round $round: the store opened healthy" true \
		"$(jq .store.healthy "$T/ctl")"
	check_round "$round"
	# The data path follows the recovered state.
	for w in $(seq $NWAVES); do
		ctl --json wave show "$w"
		st=$(jq -r .state "$T/ctl")
		get "/v1/routed/namespaces/db/tables/t$w"
		want=warehouse
		[ "$st" = lakehouse ] && want=lakehouse
		expect_header "round $round: db.t$w ($st) reads from the $want" \
			X-Floe-Target "$want"
	done
	# Bring every wave to a state the next round's cycle starts from
	# (warehouse) and restart the records from the store's truth.
	for w in $(seq $NWAVES); do
		ctl --json wave show "$w"
		case $(jq -r .state "$T/ctl") in
		lakehouse) ctl_ok "settle $w" wave rollback "$w" && ctl_ok "settle $w" wave ack "$w" ;;
		rolled_back) ctl_ok "settle $w" wave ack "$w" ;;
		esac
		ev=$(events)
		echo "$ev" | jq -r --argjson w "$w" \
			'.[] | select(.wave == $w and (.type | startswith("wave."))) | .type | sub("^wave\\."; "")' \
			>"$T/acked.$w"
		rm -f "$T/failed.$w"
	done
done
ctl_ok "a flip after two crashes" wave flip 1 lakehouse
get /v1/routed/namespaces/db/tables/t1
expect_header "... moves the data path" X-Floe-Target lakehouse
finish
