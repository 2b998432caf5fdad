#!/bin/bash
# The admin socket: mode 0600, and every connection's peer uid (SO_PEERCRED)
# checked against admin_uids (default: floe's own uid and root) before any
# admin action; a refused peer gets a 403 JSON error and a log line, and
# every change records the peer's uid as its actor.
. "$(dirname "$0")/lib.sh"
lib_init 62
catalog warehouse
catalog lakehouse --prefix lhp
write_conf
start_floe
ME=$(id -u)

# admin METHOD PATH [BODY]: a request on the admin socket; S, $T/b.
admin() {
	local args=(-s -o "$T/b" -w '%{http_code}' --max-time 5 --unix-socket
		"$SOCK" -X "$1")
	[ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	: >"$T/b"
	S=$(curl "${args[@]}" "http://floe$2")
}

expect_eq "the socket is mode 0600" 600 "$(stat -c %a "$SOCK")"
expect_eq "... owned by floe's uid" "$ME" "$(stat -c %u "$SOCK")"
admin POST /routes '{"object":"db.bunnies","wave":1}'
expect_status "default admin_uids: floe's own uid may change routes" 200
admin GET '/events?after=0'
expect_jq "... and the event records the peer uid as its actor" 200 \
	"[.events[] | select(.type == \"route_set\" or (.object? == \"db.bunnies\"))] | length > 0 and all(.actor == \"uid $ME\")"
admin POST /waves/1/flip '{"to":"lakehouse"}'
admin GET /waves/1
expect_jq "a flip records the peer uid too" 200 ".actor == \"uid $ME\""

# admin_uids without this uid: every request is refused, nothing changes.
OTHER=$((ME == 4242 ? 4243 : 4242))
sed -i "s|^\[floe\]|[floe]\nadmin_uids = $OTHER|" "$T/floe.conf"
kill -HUP "$FLOE_PID"
for i in $(seq 100); do grep -q "reload: configuration" "$T/floe.log" && break; sleep 0.05; done
admin GET /status
expect_jq "a uid not in admin_uids: 403 on /status" 403 \
	".error.code == 403 and .error.type == \"ForbiddenException\" and (.error.message | contains(\"uid $ME\"))"
admin POST /waves/1/rollback '{"reason":"should not happen"}'
expect_status "... and on a rollback" 403
grep -q "admin_sock_serve: uid $ME refused" "$T/floe.log" && ok "the refusal is logged with the uid" ||
	bad "no refusal in the log"
if ctl status; then bad "floectl status succeeded for a refused uid"; else ok "floectl fails for a refused uid (exit $RC)"; fi
get /v1/routed/namespaces/db/tables/bunnies
expect_header "the refused rollback changed nothing: still on the lakehouse" X-Floe-Target lakehouse

if [ "$ME" = 0 ] && command -v setpriv >/dev/null; then
	# As another user: the socket's mode keeps it out first.
	nob() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	# nob_admin METHOD PATH [BODY]: admin() as uid 65534 (who cannot
	# write in $T: the body comes back on stdout).
	nob_admin() {
		local out args=(-s -w '\n%{http_code}' --max-time 5
			--unix-socket "$SOCK" -X "$1")
		[ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
		out=$(nob curl "${args[@]}" "http://floe$2")
		S=${out##*$'\n'}
		printf '%s' "${out%$'\n'*}" >"$T/b"
	}
	sed -i "s|^admin_uids = .*|admin_uids = 0|" "$T/floe.conf"
	kill -HUP "$FLOE_PID"
	sleep 0.3
	chmod 711 "$T"
	nob_admin GET /status
	expect_eq "uid 65534 cannot even connect to the 0600 socket" 000 "$S"
	# With the mode opened by mistake, the peer check still holds.
	chmod 666 "$SOCK"
	nob_admin GET /status
	expect_jq "a socket opened to all by mistake: uid 65534 still gets 403" 403 \
		'.error.message | contains("uid 65534")'
	sed -i "s|^admin_uids = .*|admin_uids = 0, 65534|" "$T/floe.conf"
	kill -HUP "$FLOE_PID"
	sleep 0.3
	nob_admin POST /waves/1/rollback '{"reason":"by nobody"}'
	expect_jq "listed in admin_uids, uid 65534 may roll back" 200 \
		'.actor == "uid 65534" and .state == "rolled_back"'
	grep -q '"actor":"uid 65534"' "$T/rollback.log" &&
		ok "... and the rollback log line names uid 65534" ||
		bad "rollback log: $(cat "$T/rollback.log")"
fi
finish
