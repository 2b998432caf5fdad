#!/bin/bash
# make deb builds floe_VERSION_ARCH.deb; lintian finds no error in it;
# dpkg -i installs it on this machine: the floe user exists, the packaged
# floe.conf is a conffile that floe -t accepts, floectl --version is this
# build's, the unit and man pages are where systemd and man look; dpkg -r
# removes the binaries and keeps the conffile, dpkg -P removes the rest.
# Installing needs root (the CI runs the tests as root): without it this
# test fails, saying so. Every step is time-bounded.
# alone: installs the package with dpkg, which takes one lock per machine
. "$(dirname "$0")/lib.sh"
lib_init 16
case $FLOE in /*) ;; *) FLOE=$PWD/$FLOE ;; esac
B=$(basename "$(dirname "$FLOE")")
user_was=$(getent passwd floe)
cleanup() {
	if dpkg-query -W -f='${Status}' floe 2>/dev/null | grep -q 'ok installed\|config-files'; then
		timeout 120 dpkg -P floe >/dev/null 2>&1
	fi
	# The package leaves its system user, as Debian does; a user this
	# test made is removed.
	[ -z "$user_was" ] && getent passwd floe >/dev/null && userdel floe 2>/dev/null
	lib_cleanup
}

if [ "$(id -u)" != 0 ]; then
	echo "FAIL this test installs a .deb with dpkg -i and must run as root (uid $(id -u))"
	exit 1
fi
for c in dpkg-deb dpkg-shlibdeps lintian; do
	command -v $c >/dev/null || { echo "FAIL $c is not installed (tests/deps.sh)"; exit 1; }
done
if dpkg-query -W -f='${Status}' floe 2>/dev/null | grep -q 'ok installed'; then
	echo "FAIL a floe package is already installed on this machine; remove it first (dpkg -P floe)"
	exit 1
fi
trap cleanup EXIT
MK=(make -s B="$B")
[ "$B" = build-san ] && MK=(make -s SAN=1)

deb=$(timeout 300 "${MK[@]}" deb 2>"$T/err" | tail -n 1)
V=$(cat "$B/version")
if [ -f "$deb" ] && [[ ${deb##*/} =~ ^floe_[0-9][A-Za-z0-9.+~]*-1_$(dpkg --print-architecture)\.deb$ ]]; then
	ok "make deb: ${deb##*/}"
else
	bad "make deb: '$deb' $(cat "$T/err")"
	exit 1
fi
dpkg-deb -f "$deb" Depends | grep -q 'libevent-2.1-7' && dpkg-deb -f "$deb" Depends | grep -q 'adduser' &&
	ok "Depends computed: $(dpkg-deb -f "$deb" Depends | tr -d '\n' | head -c 120)..." ||
	bad "Depends: $(dpkg-deb -f "$deb" Depends)"
timeout 120 lintian --tag-display-limit 0 "$deb" >"$T/lintian" 2>&1
grep -q '^E: ' "$T/lintian" && bad "lintian errors: $(grep '^E: ' "$T/lintian")" ||
	ok "lintian: no error ($(grep -c '^W: ' "$T/lintian") warnings)"

timeout 120 dpkg -i "$deb" >"$T/dpkg" 2>&1 && ok "dpkg -i" || { bad "dpkg -i: $(tail -5 "$T/dpkg")"; exit 1; }
getent passwd floe | grep -q ':/var/lib/floe:' && ok "the floe system user" || bad "no floe user: $(getent passwd floe)"
/usr/sbin/floe -t -c /etc/floe/floe.conf 2>"$T/err" && ok "floe -t on the packaged conf" ||
	bad "floe -t: $(cat "$T/err")"
[ "$(/usr/sbin/floectl --version)" = "floectl $V" ] && ok "floectl --version: floectl $V" ||
	bad "floectl --version: $(/usr/sbin/floectl --version 2>&1)"
[ "$(/usr/sbin/floe --version)" = "floe $V" ] && ok "floe --version" || bad "floe --version"
dpkg-query -W -f='${Conffiles}' floe | grep -q '^ /etc/floe/floe.conf ' &&
	ok "/etc/floe/floe.conf is a conffile" || bad "conffiles: $(dpkg-query -W -f='${Conffiles}' floe)"
[ "$(stat -c '%U:%G %a' /etc/floe/floe.conf)" = "root:floe 640" ] &&
	ok "floe.conf readable by the floe group only" || bad "floe.conf: $(stat -c '%U:%G %a' /etc/floe/floe.conf)"
[ -f /lib/systemd/system/floe.service ] && grep -q '^ExecStart=/usr/sbin/floe -c /etc/floe/floe.conf$' /lib/systemd/system/floe.service &&
	ok "the unit, for /usr/sbin/floe" || bad "unit missing or wrong"
if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify /lib/systemd/system/floe.service >"$T/verify" 2>&1 && [ ! -s "$T/verify" ] &&
		ok "systemd-analyze verify of the installed unit, with its man pages" ||
		bad "verify: $(cat "$T/verify")"
fi
MANWIDTH=80 man floectl 2>/dev/null | grep -q 'wave flip' && ok "man floectl" || bad "man floectl finds nothing"
# The installed floe runs as the floe user from the packaged conf's
# directories (as the unit would make them), and floectl reaches it.
install -d -o floe -g floe -m 750 /run/floe /var/lib/floe /var/log/floe
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -i "s|^listen = .*|listen = 127.0.0.1:$port|" /etc/floe/floe.conf
setpriv --reuid=floe --regid=floe --init-groups /usr/sbin/floe -c /etc/floe/floe.conf >"$T/floe.log" 2>&1 &
fpid=$!
pids+=("$fpid")
for _ in $(seq 100); do [ -S /run/floe/floe.sock ] && break; sleep 0.05; done
timeout 10 /usr/sbin/floectl -c /etc/floe/floe.conf status --all >"$T/status" 2>&1 &&
	grep -q "^version  *$V\$" "$T/status" && ok "the packaged floe runs as floe; floectl -c /etc/floe/floe.conf status" ||
	bad "running the package: $(cat "$T/status") $(tail -3 "$T/floe.log")"
(cd "$T" && env -u FLOE_SOCKET timeout 10 /usr/sbin/floectl status --all >"$T/status" 2>&1) &&
	grep -q "^version  *$V\$" "$T/status" && ok "floectl with no socket named finds the service's /run/floe/floe.sock" ||
	bad "floectl without -c: $(cat "$T/status")"
kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null

# floe.conf was edited above (listen): a reinstall keeps it.
timeout 120 dpkg -i "$deb" >"$T/dpkg" 2>&1 && grep -q "^listen = 127.0.0.1:$port\$" /etc/floe/floe.conf &&
	ok "dpkg -i again: the edited conffile is kept" || bad "reinstall: $(tail -3 "$T/dpkg"); $(grep ^listen /etc/floe/floe.conf)"

timeout 120 dpkg -r floe >"$T/dpkg" 2>&1 && ok "dpkg -r" || bad "dpkg -r: $(tail -5 "$T/dpkg")"
[ ! -e /usr/sbin/floe ] && [ ! -e /usr/sbin/floectl ] && [ -f /etc/floe/floe.conf ] &&
	ok "removed: binaries gone, the conffile kept" || bad "after dpkg -r: $(ls /usr/sbin/floe* /etc/floe 2>&1)"
timeout 120 dpkg -P floe >"$T/dpkg" 2>&1 && ok "dpkg -P" || bad "dpkg -P: $(tail -5 "$T/dpkg")"
[ ! -e /etc/floe/floe.conf ] && [ ! -e /var/lib/floe ] && [ ! -e /var/log/floe ] &&
	! dpkg-query -W floe >/dev/null 2>&1 && ok "purged: conf, state and logs gone" ||
	bad "after purge: $(ls -d /etc/floe /var/lib/floe /var/log/floe 2>&1)"

finish
