#!/bin/bash
# Stop what tests/etcd/start.sh started in DIR, by pid: every member, or
# only member K. A stopped (SIGSTOP) member is continued first. Waits at
# most 5 s for each, then kills it.
#
#   tests/etcd/stop.sh DIR [K]
set -u
DIR=${1:?usage: $0 DIR [K]}
K=${2:-}

# Whether PID is gone (a zombie counts as gone).
gone() {
	[ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -CONT "$pid" 2>/dev/null
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 50); do
		gone "$pid" && return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
}

if [ -n "$K" ]; then
	stop_pid "$(cat "$DIR/$K/pid" 2>/dev/null)"
	exit 0
fi
for f in "$DIR"/[0-9]*/pid; do
	[ -f "$f" ] && stop_pid "$(cat "$f")"
done
[ -f "$DIR/guard.pid" ] && kill "$(cat "$DIR/guard.pid")" 2>/dev/null
exit 0
