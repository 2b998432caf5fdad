# bench/lib.sh -- what bench/run.sh and bench/callgrind.sh share, sourced
# by both from the top of the checkout: building the bench's programs, the
# processes started (in pids, stopped by the EXIT trap) and the scratch
# directories (in scratch, removed by it), free ports and waiting for an
# HTTP answer. The sourcing script defines die.

pids=()
scratch=()

# bench_cc OUT SRC [PKG...]: build the C program SRC (with the pkg-config
# packages PKG) into OUT unless OUT is newer.
bench_cc() {
	local out=$1 src=$2
	shift 2
	[ -x "$out" ] && [ ! "$src" -nt "$out" ] && return 0
	cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
		$([ $# -gt 0 ] && pkg-config --cflags "$@") -o "$out" "$src" \
		$([ $# -gt 0 ] && pkg-config --libs "$@") ||
		die "building $(basename "$out") failed"
}

# Stop every process in pids (each by its pid), remove the scratch.
bench_cleanup() {
	local p
	trap - EXIT INT TERM
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for p in "${scratch[@]}"; do rm -rf "$p"; done
}

# forget_pid PID: take PID, waited for, out of pids, so that the cleanup
# does not signal whatever process has its number by then.
forget_pid() {
	local p keep=()
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# A free TCP port on 127.0.0.1 (the kernel picks it).
free_port() {
	node -e 'const s=require("net").createServer();
		s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# wait_http URL [TRIES]: any HTTP answer (https unverified), polled every
# 0.05 s, TRIES times
# (200: 10 s).
wait_http() {
	local i
	for i in $(seq "${2:-200}"); do
		curl -sk -o /dev/null --max-time 1 "$1" && return 0
		sleep 0.05
	done
	return 1
}
