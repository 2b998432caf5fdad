#!/bin/bash
# make demo starts clean: conf/demo.sh --reset (make demo-reset) removes
# var/ with the last demo's state and logs, and refuses while a floe still
# answers on var/floe.sock; a demo run resets first unless DEMO_KEEP=1.
# The demo itself binds fixed ports, so this runs the script's reset on a
# copy of conf/ in a scratch directory, with a floe of its own.
. "$(dirname "$0")/lib.sh"
lib_init 18
TOP=$T/top
mkdir -p "$TOP/conf" "$TOP/var/state" "$TOP/var/log"
cp conf/demo.sh conf/demo.conf "$TOP/conf/"
echo junk >"$TOP/var/state/data.mdb"
echo old >"$TOP/var/log/access.log"

bash "$TOP/conf/demo.sh" --reset >"$T/out" 2>&1
[ $? = 0 ] && [ ! -e "$TOP/var" ] && ok "demo.sh --reset removes var/" ||
	bad "reset: $(cat "$T/out"); $(ls -R "$TOP/var" 2>&1 | head -5)"
grep -q "var/ removed" "$T/out" && ok "and says so" || bad "reset said: $(cat "$T/out")"

# A floe answering on var/floe.sock: the reset refuses and keeps var/.
mkdir -p "$TOP/var/log"
echo keep >"$TOP/var/log/access.log"
catalog warehouse
catalog lakehouse
SOCK=$TOP/var/floe.sock
write_conf
start_floe
bash "$TOP/conf/demo.sh" --reset >"$T/out" 2>&1
rc=$?
[ $rc != 0 ] && [ -f "$TOP/var/log/access.log" ] && grep -q "a floe is running on var/floe.sock" "$T/out" &&
	ok "a running floe: the reset refuses (exit $rc) and keeps var/" || bad "reset with floe up ($rc): $(cat "$T/out")"
stop_floe
bash "$TOP/conf/demo.sh" --reset >"$T/out" 2>&1 && [ ! -e "$TOP/var" ] &&
	ok "floe stopped: the reset goes ahead" || bad "reset after stop: $(cat "$T/out")"

# make demo runs demo.sh, which resets before it starts anything.
make -n demo 2>/dev/null | grep -q '^conf/demo.sh ' && ok "make demo runs conf/demo.sh" || bad "make -n demo: $(make -n demo 2>&1 | tail -2)"
make -n demo-reset 2>/dev/null | grep -qx 'conf/demo.sh --reset' && ok "make demo-reset" || bad "make -n demo-reset"
awk '/^\tdemo_reset \|\| exit 1/ { r = NR } /^node tests\/catalog\/catalog.js/ && !n { n = NR }
	END { exit !(r && n && r < n) }' conf/demo.sh &&
	grep -q 'DEMO_KEEP:-0}" != 1' conf/demo.sh &&
	ok "demo.sh resets before starting the catalogs (unless DEMO_KEEP=1)" || bad "demo.sh does not reset first"
finish
