#!/bin/bash
# make install into a temporary DESTDIR, then the installed floe and
# floectl run: --version, floe -t on the installed floe.conf (whose paths
# are the unit's), the installed man pages render, the installed unit
# passes systemd-analyze verify with them, and the completion loads.
# An edited floe.conf survives a second install and uninstall; make
# uninstall removes everything else. PREFIX and sysconfdir are honoured.
# alone: runs make in the build tree
. "$(dirname "$0")/lib.sh"
lib_init 11
case $FLOE in /*) ;; *) FLOE=$PWD/$FLOE ;; esac
B=$(basename "$(dirname "$FLOE")")
D=$T/root
# The same build the tests run: a sanitizer build is made with SAN=1.
MK=(make -s B="$B")
[ "$B" = build-san ] && MK=(make -s SAN=1)

timeout 120 "${MK[@]}" install DESTDIR="$D" >"$T/out" 2>&1 ||
	{ bad "make install: $(tail -5 "$T/out")"; }
P=$D/usr/local
V=$(cat "$B/version") # as install built it
for f in sbin/floe sbin/floectl share/man/man8/floe.8 share/man/man8/floectl.8 \
	share/man/man5/floe.conf.5 etc/floe/floe.conf share/doc/floe/floe.conf.example \
	lib/systemd/system/floe.service share/bash-completion/completions/floectl; do
	[ -f "$P/$f" ] || bad "not installed: /usr/local/$f"
done
[ $fail = 0 ] && ok "installed under PREFIX=/usr/local: binaries, man pages, conf, unit, completion"
for r in conf/prometheus/*.yml; do
	[ -f "$r" ] || continue
	[ -f "$P/share/floe/prometheus/${r##*/}" ] && ok "rules: ${r##*/}" || bad "rules not installed: $r"
done

[ "$("$P/sbin/floe" --version)" = "floe $V" ] && ok "installed floe --version: floe $V" ||
	bad "floe --version: $("$P/sbin/floe" --version 2>&1)"
[ "$("$P/sbin/floectl" --version)" = "floectl $V" ] && ok "installed floectl --version" ||
	bad "floectl --version: $("$P/sbin/floectl" --version 2>&1)"
"$P/sbin/floe" -t -c "$P/etc/floe/floe.conf" 2>"$T/err" &&
	grep -qx "floe: configuration $P/etc/floe/floe.conf ok" "$T/err" &&
	ok "installed floe -t on the installed floe.conf" || bad "floe -t: $(cat "$T/err")"
"$P/sbin/floe" -t -c "$P/share/doc/floe/floe.conf.example" 2>"$T/err" &&
	ok "and on the installed example" || bad "floe -t example: $(cat "$T/err")"
grep -qx 'admin_socket = /run/floe/floe.sock' "$P/etc/floe/floe.conf" &&
	grep -qx 'state_dir = /var/lib/floe' "$P/etc/floe/floe.conf" &&
	grep -qx 'rollback_log = /var/log/floe/rollback.log' "$P/etc/floe/floe.conf" &&
	ok "the installed conf names the unit's directories" || bad "installed conf paths: $(grep -E '^(admin_socket|state_dir|rollback_log)' "$P/etc/floe/floe.conf")"
"$P/sbin/floectl" -c "$P/etc/floe/floe.conf" status >/dev/null 2>"$T/err"
[ $? = 3 ] && grep -q "cannot reach floe at /run/floe/floe.sock" "$T/err" &&
	ok "installed floectl -c finds the socket in the installed conf" || bad "floectl -c: $(cat "$T/err")"
grep -q "^ExecStart=/usr/local/sbin/floe -c /usr/local/etc/floe/floe.conf\$" "$P/lib/systemd/system/floe.service" &&
	grep -q "^ExecStartPre=/usr/local/sbin/floe -t -c /usr/local/etc/floe/floe.conf\$" "$P/lib/systemd/system/floe.service" &&
	ok "the installed unit runs the installed floe on the installed conf" || bad "unit paths: $(grep Exec "$P/lib/systemd/system/floe.service")"
MANWIDTH=80 man -l "$P/share/man/man8/floectl.8" 2>/dev/null | grep -q 'wave flip' &&
	ok "man -l floectl.8 renders" || bad "floectl.8 does not render"
# The unit as installed, but with its commands in DESTDIR; man finds the
# pages it documents in DESTDIR too.
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$T/unit"
	sed "s|/usr/local/sbin/floe|$P/sbin/floe|g" "$P/lib/systemd/system/floe.service" >"$T/unit/floe.service"
	(cd "$T/unit" && MANPATH=$P/share/man systemd-analyze verify ./floe.service) >"$T/verify" 2>&1
	[ $? = 0 ] && [ ! -s "$T/verify" ] && ok "systemd-analyze verify of the installed unit, man pages included" ||
		bad "verify: $(cat "$T/verify")"
else
	bad "systemd-analyze is missing (tests/deps.sh)"
fi
bash -c ". '$P/share/bash-completion/completions/floectl' && complete -p floectl" >/dev/null 2>&1 &&
	ok "the completion loads" || bad "completion does not load"

echo "# edited" >>"$P/etc/floe/floe.conf"
timeout 120 "${MK[@]}" install DESTDIR="$D" >"$T/out" 2>&1
tail -1 "$P/etc/floe/floe.conf" | grep -qx "# edited" && ok "a second install keeps an edited floe.conf" ||
	bad "install overwrote floe.conf"
timeout 60 "${MK[@]}" uninstall DESTDIR="$D" >"$T/out" 2>&1 || bad "make uninstall: $(cat "$T/out")"
left=$(find "$D" -type f | sed "s|^$D||")
[ "$left" = /usr/local/etc/floe/floe.conf ] && ok "uninstall removes all but the edited floe.conf" ||
	bad "after uninstall: $left"
grep -q "floe.conf was edited; it stays" "$T/out" && ok "uninstall says it kept it" || bad "uninstall output: $(cat "$T/out")"
rm -f "$P/etc/floe/floe.conf"

# Another prefix and sysconfdir: /usr puts floe.conf in /etc.
timeout 120 "${MK[@]}" install DESTDIR="$T/r2" PREFIX=/usr >"$T/out" 2>&1
[ -x "$T/r2/usr/sbin/floe" ] && [ -f "$T/r2/etc/floe/floe.conf" ] &&
	grep -q "^ExecStart=/usr/sbin/floe -c /etc/floe/floe.conf\$" "$T/r2/usr/lib/systemd/system/floe.service" &&
	ok "PREFIX=/usr: /usr/sbin and /etc/floe" || bad "PREFIX=/usr: $(cd "$T/r2" && find . -type f)"
timeout 120 "${MK[@]}" install DESTDIR="$T/r3" sysconfdir=/opt/etc >"$T/out" 2>&1
[ -f "$T/r3/opt/etc/floe/floe.conf" ] && ok "sysconfdir=/opt/etc" || bad "sysconfdir: $(cd "$T/r3" && find . -name floe.conf)"
timeout 60 "${MK[@]}" uninstall DESTDIR="$T/r2" PREFIX=/usr >/dev/null 2>&1
[ -z "$(find "$T/r2" -type f)" ] && ok "uninstall PREFIX=/usr leaves nothing" || bad "left: $(find "$T/r2" -type f)"

finish
