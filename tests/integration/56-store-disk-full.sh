#!/bin/bash
# Integration 56: the flag store on a full disk. state_dir lives on a
# 1 MiB tmpfs filled to the last byte after floe opened its store: a
# change is refused, nothing changes, and floe and floectl say "disk
# full" (LMDB itself reports the short write as an I/O error), for a wave
# change and a route change alike. Once space
# is freed the same change goes through. Needs root (mount); a test that
# cannot mount fails, it never skips.
. "$(dirname "$0")/lib.sh"
lib_init 56
FULL=$T/full
mkdir -p "$FULL"
if ! mount -t tmpfs -o size=1m tmpfs "$FULL"; then
	echo "FAIL cannot mount a tmpfs at $FULL (this test needs root)"
	exit 1
fi
trap 'umount "$FULL" 2>/dev/null; lib_cleanup' EXIT
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
sed -i "s|^state_dir .*|state_dir = $FULL/state|" "$T/floe.conf"
start_floe

dd if=/dev/zero of="$FULL/filler" bs=4k 2>/dev/null
ctl wave flip 1 lakehouse
if [ "$RC" != 0 ] && grep -q "disk full" "$T/ctl"; then
	ok "floectl: the flip failed, and says disk full"
else
	bad "floectl exited $RC: $(cat "$T/ctl")"
fi
grep -q "Input/output error" "$T/ctl" && bad "floectl says I/O error: $(cat "$T/ctl")"
ctl route set db.athena 1
if [ "$RC" = 3 ] && grep -q "the route of db.athena is unchanged (.*disk full" "$T/ctl"; then
	ok "floectl route set: exit 3, and says disk full"
else
	bad "floectl route set exited $RC: $(cat "$T/ctl")"
fi
if grep -q "disk full" "$T/floe.log"; then
	ok "floe's log says disk full"
else
	bad "floe's log: $(tail -n 5 "$T/floe.log")"
fi
admin GET /status
expect_jq "/status: the store is not healthy" 200 '.store.healthy == false'

rm -f "$FULL/filler"
ctl_ok "space freed: the flip goes through" wave flip 1 lakehouse
admin GET /waves/1
expect_jq "the wave is on the lakehouse" 200 '.state == "lakehouse"'
finish
