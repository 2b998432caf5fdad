# Helpers for the cluster-mode tests (source after lib.sh): a real etcd
# started by the test (tests/etcd/start.sh, stopped by pid, with a guard
# that stops it if the test dies), and several floe nodes on loopback,
# each with its own directory $T/nK (floe.conf, socket, store, log) and
# pid in NODE_PID[K].
#
#   . tests/integration/lib.sh; . tests/integration/cluster.sh
#   lib_init 80; catalog warehouse; catalog lakehouse --prefix lhp
#   cluster_etcd; node_start 1; node_start 2
#   nctl 1 route set db.t 1; node_side 2 db t
declare -A NODE_PID=() NODE_PORT=()
ETCD_DIR= ETCD=

# cluster_etcd [ETCD_ARGS...]: one etcd member for this test (ETCD_MEMBERS
# of them if set), with progress notifications every 300 ms.
cluster_etcd() {
	ETCD_DIR=$T/etcd
	mkdir -p "$ETCD_DIR"
	ETCD=$(tests/etcd/start.sh -n "${ETCD_MEMBERS:-1}" -o $$ "$ETCD_DIR" -- \
		--experimental-watch-progress-notify-interval=300ms "$@") || {
		echo "etcd did not start"
		exit 1
	}
	trap cluster_cleanup EXIT
}

# Stop the nodes and etcd (by pid), then what lib.sh started.
cluster_cleanup() {
	local k
	for k in "${!NODE_PID[@]}"; do
		[ -n "${NODE_PID[$k]}" ] && kill -9 "${NODE_PID[$k]}" 2>/dev/null
	done
	for k in "${!NODE_PID[@]}"; do
		[ -n "${NODE_PID[$k]}" ] && wait "${NODE_PID[$k]}" 2>/dev/null
	done
	if [ "$fail" != 0 ]; then
		for k in "${!NODE_PID[@]}"; do
			echo "--- node $k log (last 20 lines)"
			tail -n 20 "$T/n$k/floe.log" 2>/dev/null
		done
	fi
	[ -n "$ETCD_DIR" ] && tests/etcd/stop.sh "$ETCD_DIR"
	lib_cleanup
}

# etcdctl on the test's etcd.
ectl() {
	ETCDCTL_API=3 etcdctl --endpoints="$ETCD" "$@"
}

# node_conf K: $T/nK/floe.conf for node K (name nK); EXTRA_CLUSTER adds
# lines to [cluster].
node_conf() {
	local d=$T/n$1
	mkdir -p "$d"
	[ -n "${NODE_PORT[$1]:-}" ] || NODE_PORT[$1]=$(free_port)
	cat >"$d/floe.conf" <<EOC
[floe]
listen       = 127.0.0.1:${NODE_PORT[$1]}
admin_socket = $d/floe.sock
state_dir    = $d/state
rollback_log = $d/rollback.log
access_log   = off
cache_size   = 0

[warehouse]
uri = http://127.0.0.1:${CAT_PORT[warehouse]}
warehouse = analytics

[lakehouse]
uri = http://127.0.0.1:${CAT_PORT[lakehouse]}
warehouse = lake

[policy]
gate_min_clean = 0
${EXTRA_POLICY:-}

[cluster]
etcd = $ETCD
name = n$1
lease = 3s
${EXTRA_CLUSTER:-}
EOC
}

# node_start K: start node K and wait (10 s at most) until its mirror is
# loaded and watching etcd.
node_start() {
	local d=$T/n$1 i
	[ -f "$d/floe.conf" ] || node_conf "$1"
	"$FLOE" ${NODE_ARGS:-} -c "$d/floe.conf" >>"$d/floe.log" 2>&1 &
	NODE_PID[$1]=$!
	for i in $(seq 200); do
		curl -s --max-time 1 --unix-socket "$d/floe.sock" \
			http://floe/cluster 2>/dev/null |
			jq -e '.connected and .loaded' >/dev/null 2>&1 && return 0
		kill -0 "${NODE_PID[$1]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "node $1 did not connect"
	tail -n 20 "$d/floe.log"
	exit 1
}

# node_stop K [SIGNAL]: stop node K (TERM by default) and wait for it.
node_stop() {
	kill -"${2:-TERM}" "${NODE_PID[$1]}" 2>/dev/null
	wait "${NODE_PID[$1]}" 2>/dev/null
	NODE_PID[$1]=
}

# nctl K ARGS...: floectl on node K; output in $T/ctl, status in RC.
nctl() {
	local k=$1
	shift
	"$FLOECTL" -s "$T/n$k/floe.sock" "$@" >"$T/ctl" 2>&1
	RC=$?
	return $RC
}

# nadmin K METHOD PATH: the admin API of node K; status in S, body $T/b.
nadmin() {
	local k=$1
	shift
	SOCK=$T/n$k/floe.sock admin "$@"
}

# until_node K PATH JQ: poll node K's admin PATH every 20 ms (10 s at
# most) until JQ holds of its answer ($T/b); 0 once it does.
until_node() {
	local i
	for i in $(seq 500); do
		nadmin "$1" GET "$2"
		jq -e "$3" "$T/b" >/dev/null 2>&1 && return 0
		sleep 0.02
	done
	return 1
}

# race_wait K...: with etcd held (SIGSTOP), wait (10 s at most) until
# each node K has a change waiting on etcd (GET /cluster's "writes"): it
# was decided on that node's copy as it was. 0 once all have.
race_wait() {
	local k
	for k in "$@"; do
		until_node "$k" /cluster '.writes >= 1' || return 1
	done
}

# node_side K TABLE: the side node K's data path answers a LoadTable of
# db.TABLE from ("warehouse" or "lakehouse"), or "error".
node_side() {
	curl -s -o /dev/null -D - --max-time 5 \
		"http://127.0.0.1:${NODE_PORT[$1]}/v1/routed/namespaces/db/tables/$2" |
		tr -d '\r' | awk -F': ' 'tolower($1) == "x-floe-target" {
			print $2; f = 1 } END { if (!f) print "error" }'
}

# wait_side K TABLE SIDE [TRIES]: poll (every 10 ms) until node K answers
# TABLE from SIDE; 0 once it does.
wait_side() {
	local i
	for i in $(seq "${4:-500}"); do
		[ "$(node_side "$1" "$2")" = "$3" ] && return 0
		sleep 0.01
	done
	return 1
}

# cluster_finish: stop every node with TERM (a SAN=1 build reports leaks
# at exit), check their logs for sanitizer reports, then finish.
cluster_finish() {
	local k
	for k in "${!NODE_PID[@]}"; do
		[ -n "${NODE_PID[$k]}" ] && node_stop "$k"
	done
	for k in "${!NODE_PID[@]}"; do
		if grep -qE 'Sanitizer|runtime error:' "$T/n$k/floe.log" 2>/dev/null; then
			bad "node $k's log has sanitizer reports:"
			grep -E -A 12 'Sanitizer|runtime error:' "$T/n$k/floe.log" | head -40
		fi
	done
	finish
}
