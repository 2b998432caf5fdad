#!/bin/bash
# Reloads say everything: /status shows the conf's generation and load
# time (and the version); `floectl reload` asks for one and prints the
# outcome; a file with errors changes nothing and each error is named;
# a restart-only key (listen) is named, keeps its running value, and the
# rest of the file applies, by floectl and by SIGHUP alike. Paths in a
# conf are taken from its directory, wherever floe and floectl run.
. "$(dirname "$0")/lib.sh"
lib_init 17
case $FLOE in /*) ;; *) FLOE=$PWD/$FLOE ;; esac
case $FLOECTL in /*) ;; *) FLOECTL=$PWD/$FLOECTL ;; esac
catalog warehouse
catalog lakehouse
write_conf
start_floe

echo "== status: version, generation, load time"
admin GET /status
expect_jq "status has the version" 200 '.version | type == "string" and length > 0'
expect_jq "generation 1 at start" 200 '.config.generation == 1'
expect_jq "load time and path" 200 \
	"(.config.loaded_at | test(\"^[0-9]{4}-[0-9]{2}-[0-9]{2}T\")) and .config.path == \"$T/floe.conf\""
v=$(jq -r .version "$T/b")
admin GET /metrics
grep -q "^floe_build_info{version=\"$v\"} 1\$" "$T/b" &&
	ok "metrics: floe_build_info with the version" || bad "no floe_build_info: $(grep build "$T/b")"

curl -s -D "$T/h" -o "$T/b" --max-time 5 --unix-socket "$SOCK" http://floe/reload >/dev/null
grep -qi '^HTTP/1.1 405' "$T/h" && grep -qi '^allow: POST' "$T/h" &&
	jq -e '.error.type == "MethodNotAllowedException"' "$T/b" >/dev/null &&
	ok "GET /reload: 405, Allow: POST" || bad "GET /reload: $(head -1 "$T/h") $(cat "$T/b")"

echo "== floectl reload, nothing changed"
ctl reload
expect_eq "reload of the same file: exit 0" 0 "$RC"
grep -q "^reloaded: configuration $T/floe.conf applied (generation 2)\$" "$T/ctl" &&
	ok "reload prints the outcome" || bad "reload output: $(cat "$T/ctl")"
admin GET /status
expect_jq "generation 2" 200 '.config.generation == 2 and .config.last_reload.applied == true'

echo "== a restart-only key and an applied one"
old_listen=$LISTEN
sed -i "s|^listen .*|listen = 127.0.0.1:$(free_port)|; s|^cache_size .*|cache_size = 1M\ncache_ttl = 7s|" "$T/floe.conf"
ctl reload
expect_eq "a restart-only change: exit 1" 1 "$RC"
grep -q "^floectl: reload: \[floe\] listen changes only on restart" "$T/ctl" &&
	ok "floectl names the key" || bad "restart key: $(cat "$T/ctl")"
grep -q "^reloaded: .*applied (generation 3) but for 1 key that changes only on restart" "$T/ctl" &&
	ok "and says the rest applied" || bad "reload: $(cat "$T/ctl")"
admin GET /status
expect_jq "the rest applied: the cache's new ttl" 200 '.cache.ttl_ms == 7000 and .config.generation == 3'
expect_jq "status keeps the outcome" 200 '.config.last_reload.restart_needed == ["[floe] listen"]'
get /v1/config
expect_status "still serving on the old port $old_listen" 200
grep -q "reload: \[floe\] listen changes only on restart" "$T/floe.log" &&
	ok "the log names the key" || bad "log: $(grep reload "$T/floe.log" | tail -3)"
"$FLOECTL" -s "$SOCK" --json reload >"$T/o" 2>"$T/e"
expect_eq "--json: exit 1 still" 1 "$?"
jq -e '.applied == true and .generation == 4 and .restart_needed == ["[floe] listen"]' "$T/o" >/dev/null 2>&1 &&
	ok "reload --json prints the outcome" || bad "reload --json: $(cat "$T/o")"

echo "== SIGHUP: the same"
sed -i 's|^cache_ttl .*|cache_ttl = 9s|' "$T/floe.conf"
: >"$T/floe.log"
kill -HUP "$FLOE_PID"
for _ in $(seq 100); do grep -q "reload: configuration" "$T/floe.log" && break; sleep 0.05; done
grep -q "reload: \[floe\] listen changes only on restart" "$T/floe.log" &&
	grep -q "reload: configuration .* applied (generation 5) but for 1 key" "$T/floe.log" &&
	ok "SIGHUP names the restart-only key and applies the rest" ||
	bad "SIGHUP: $(grep reload "$T/floe.log")"
admin GET /status
expect_jq "SIGHUP applied the ttl" 200 '.cache.ttl_ms == 9000 and .config.generation == 5'

echo "== a file with errors"
cp "$T/floe.conf" "$T/floe.conf.good"
printf '[policy]\ngrace = soon\nbogus_key = 1\n' >>"$T/floe.conf"
ctl reload
expect_eq "errors: exit 1" 1 "$RC"
grep -q "floe.conf:[0-9]*: \[policy\] grace: \"soon\" is not a duration" "$T/ctl" &&
	grep -q "floe.conf:[0-9]*: \[policy\] bogus_key: unknown key" "$T/ctl" &&
	ok "each error named with its line" || bad "errors: $(cat "$T/ctl")"
grep -q "refused: 2 errors in $T/floe.conf; keeping the running configuration (generation 5)" "$T/ctl" &&
	ok "and nothing changed" || bad "refusal: $(cat "$T/ctl")"
admin GET /status
expect_jq "generation unchanged" 200 '.config.generation == 5 and .config.last_reload.applied == false and (.config.last_reload.errors | length) == 2'
: >"$T/floe.log"
kill -HUP "$FLOE_PID"
for _ in $(seq 100); do grep -q "keeping the running" "$T/floe.log" && break; sleep 0.05; done
[ "$(grep -c 'reload: .*floe.conf:[0-9]*: ' "$T/floe.log")" = 2 ] &&
	grep -q "reload: 2 errors in .*; keeping the running configuration" "$T/floe.log" &&
	ok "SIGHUP logs each error" || bad "SIGHUP errors: $(cat "$T/floe.log")"
cp "$T/floe.conf.good" "$T/floe.conf"
stop_floe

echo "== paths from the conf's directory"
mkdir -p "$T/etc" "$T/d1" "$T/d2"
sed -e "s|^admin_socket .*|admin_socket = ../run/floe.sock|" \
	-e "s|^state_dir .*|state_dir = ../state|" \
	-e "s|^listen .*|listen = 127.0.0.1:$LISTEN|" "$T/floe.conf" >"$T/etc/floe.conf"
(cd "$T/d1" && exec "$FLOE" -c ../etc/floe.conf >>"$T/floe.log" 2>&1) &
FLOE_PID=$!
for _ in $(seq 200); do [ -S "$T/run/floe.sock" ] && break; sleep 0.05; done
[ -S "$T/run/floe.sock" ] && ok "floe run from another directory puts its socket beside the conf's directory" ||
	bad "no socket at $T/run/floe.sock: $(tail -3 "$T/floe.log")"
(cd "$T/d2" && "$FLOECTL" -c ../etc/floe.conf status >"$T/o" 2>&1)
expect_eq "floectl -c from a third directory reaches it" 0 "$?"
stop_floe
(cd "$T/d2" && "$FLOECTL" -c ../etc/floe.conf status >"$T/o" 2>&1)
rc=$?
grep -q "cannot reach floe at ../etc/../run/floe.sock" "$T/o" &&
	grep -q "that path is admin_socket of ../etc/floe.conf, relative paths taken from its directory" "$T/o" &&
	[ $rc = 3 ] && ok "unreachable: the message says where the path came from" ||
	bad "unreachable ($rc): $(cat "$T/o")"
finish
