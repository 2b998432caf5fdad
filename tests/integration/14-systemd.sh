#!/bin/bash
# floe under systemd: packaging/floe.service passes `systemd-analyze
# verify` (no warning at all) with its hardening scored by `systemd-analyze
# security`; and floe speaks the sd_notify protocol to a datagram socket
# this test owns, as systemd's would be: READY=1 with its MAINPID once it
# serves, RELOADING=1 then READY=1 around a reload, STOPPING=1 on SIGTERM,
# for a socket path and for an abstract ('@') name alike.
. "$(dirname "$0")/lib.sh"
lib_init 14
case $FLOE in /*) ;; *) FLOE=$PWD/$FLOE ;; esac
UNIT=packaging/floe.service

echo "== the unit"
command -v systemd-analyze >/dev/null || { bad "systemd-analyze is not installed (tests/deps.sh: systemd)"; finish; }
for k in 'Type=notify' 'ExecStartPre=/usr/sbin/floe -t -c /etc/floe/floe.conf' \
	'ExecReload=/bin/kill -HUP $MAINPID' 'User=floe' 'StateDirectory=floe' \
	'RuntimeDirectory=floe' 'LimitNOFILE=' 'ProtectSystem=strict' \
	'NoNewPrivileges=yes' 'PrivateTmp=yes' 'ProtectHome=yes' \
	'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' \
	'SystemCallFilter=@system-service' 'CapabilityBoundingSet='; do
	grep -qF -- "$k" "$UNIT" &&
		ok "unit: $k" || bad "unit lacks $k"
done
# verify runs offline; it checks that the commands exist, so they point
# at this build here.
mkdir -p "$T/unit"
sed "s|/usr/sbin/floe|$FLOE|g" "$UNIT" >"$T/unit/floe.service"
(cd "$T/unit" && systemd-analyze verify --man=no ./floe.service) >"$T/verify" 2>&1
rc=$?
[ $rc = 0 ] && [ ! -s "$T/verify" ] && ok "systemd-analyze verify: clean" ||
	bad "systemd-analyze verify ($rc): $(cat "$T/verify")"
# The same check fails on a unit that is wrong: the assertion can fail.
{ cat "$T/unit/floe.service"; echo "ProtectSystm=strict"; } >"$T/unit/broken.service"
sed -i "s|^ExecStart=.*|ExecStart=$T/no-such-floe|" "$T/unit/broken.service"
(cd "$T/unit" && systemd-analyze verify --man=no ./broken.service) >"$T/verify" 2>&1
[ -s "$T/verify" ] && ok "verify catches a misspelt key and a missing binary" ||
	bad "verify said nothing of a broken unit"
exposure=$(cd "$T/unit" && systemd-analyze security --offline=yes ./floe.service 2>/dev/null |
	awk '/Overall exposure level/ { print $(NF-2) }')
awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 2.0) }' &&
	ok "systemd-analyze security: exposure $exposure (at most 2.0)" ||
	bad "exposure level ${exposure:-unknown}"

echo "== sd_notify"
# A datagram socket of this test's, as systemd's would be; every message
# goes to a file, one "--" after each.
notify_listen() { # ADDRESS FILE
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
a = sys.argv[1]
s.bind("\0" + a[1:] if a.startswith("@") else a)
with open(sys.argv[2], "a") as f:
	print("bound", file=f, flush=True)
	while True:
		d = s.recv(4096)
		f.write(d.decode() + "\n--\n")
		f.flush()' "$1" "$2" &
	pids+=($!)
	for _ in $(seq 100); do grep -q bound "$2" 2>/dev/null && return; sleep 0.05; done
	bad "the notify socket $1 did not bind"
}
# wait_note FILE TEXT: until FILE holds TEXT (5 s at most).
wait_note() {
	for _ in $(seq 100); do grep -q "$2" "$1" && return 0; sleep 0.05; done
	return 1
}
catalog warehouse
catalog lakehouse
write_conf
for addr in "$T/notify" "@floe-test-notify-$$"; do
	notes=$T/notes.${addr##*/}
	notify_listen "$addr" "$notes"
	NOTIFY_SOCKET=$addr start_floe
	wait_note "$notes" '^READY=1$' &&
		grep -q "^MAINPID=$FLOE_PID\$" "$notes" &&
		ok "$addr: READY=1 and MAINPID once floe serves" || bad "$addr: no READY=1: $(cat "$notes")"
	grep -q '^STATUS=serving on 127.0.0.1:' "$notes" && ok "$addr: STATUS says where" ||
		bad "$addr: STATUS: $(cat "$notes")"
	: >"$notes"
	ctl reload
	wait_note "$notes" '^READY=1$'
	awk '/^RELOADING=1$/ { r = NR } /^MONOTONIC_USEC=[0-9]+$/ { m = NR }
		/^READY=1$/ { if (r && m) ok = 1 } END { exit !ok }' "$notes" &&
		ok "$addr: RELOADING=1 (with MONOTONIC_USEC), then READY=1" ||
		bad "$addr: reload notes: $(cat "$notes")"
	: >"$notes"
	kill -TERM "$FLOE_PID"
	wait_note "$notes" '^STOPPING=1$' && ok "$addr: STOPPING=1 on SIGTERM" ||
		bad "$addr: no STOPPING=1: $(cat "$notes")"
	wait "$FLOE_PID"
	FLOE_PID=
done
# A conf path of 700 bytes: the messages that name it are cut, READY=1
# still comes after the reload.
long=$T/$(printf 'x%.0s' $(seq 200))/$(printf 'y%.0s' $(seq 200))/$(printf 'z%.0s' $(seq 200))
mkdir -p "$long"
cp "$T/floe.conf" "$long/floe.conf"
notes=$T/notes.long
notify_listen "$T/notify.long" "$notes"
NOTIFY_SOCKET=$T/notify.long "$FLOE" -c "$long/floe.conf" >>"$T/floe.log" 2>&1 &
FLOE_PID=$!
wait_note "$notes" '^READY=1$' || bad "long path: no READY=1 at start"
: >"$notes"
ctl reload
wait_note "$notes" '^READY=1$' && grep -q '^RELOADING=1$' "$notes" &&
	ok "a 700-byte conf path: READY=1 after the reload all the same" ||
	bad "long path reload: $(head -c 300 "$notes")"
stop_floe

# Without NOTIFY_SOCKET, nothing is sent and nothing is said of it.
env -u NOTIFY_SOCKET true && start_floe
grep -q NOTIFY "$T/floe.log" && bad "a line about NOTIFY_SOCKET without one" ||
	ok "no NOTIFY_SOCKET: floe says nothing of it"
finish
