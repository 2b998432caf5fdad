#!/bin/bash
# The admin API over the Unix socket, with curl --unix-socket and jq: every
# endpoint, its errors, that a bad or refused request changes nothing, that a
# flip moves the data path, and that routes and wave states survive a
# restart. Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
lib_init 30

# seq_now: the store's last sequence number.
seq_now() {
	curl -s --unix-socket "$SOCK" http://floe/status | jq -r .store.last_seq
}

# state_now: routes and waves as one string.
state_now() {
	curl -s --unix-socket "$SOCK" http://floe/routes
	curl -s --unix-socket "$SOCK" http://floe/waves
}

catalog warehouse
catalog lakehouse
write_conf
start_floe

# The socket is the operator's alone.
mode=$(stat -c %a "$SOCK")
[ "$mode" = 600 ] && ok "admin socket mode 0600" || bad "admin socket mode $mode"

echo "== status and metrics"
admin GET /status
expect_jq "GET /status" 200 '(.store.healthy == true) and (.store.last_seq == 0)
	and (.waves | keys_unsorted == ["warehouse","canary","lakehouse","rolled_back","frozen","retired"])
	and ([.waves[]] | add == 0)'
[[ $CT == application/json* ]] && ok "status is JSON" || bad "status content type $CT"
[ "$(head -c 1 "$T/b")" = "{" ] && ! grep -q ': ' "$T/b" && [ "$(wc -l <"$T/b")" -le 1 ] &&
	ok "status is compact" || bad "status is not compact: $(head -c 200 "$T/b")"
admin GET /metrics
[ "$S" = 200 ] && [ "$CT" = "text/plain; version=0.0.4" ] && grep -q '^# TYPE ' "$T/b" &&
	ok "GET /metrics: Prometheus text" || bad "GET /metrics: $S $CT $(head -c 200 "$T/b")"

echo "== routes"
admin GET /routes
expect_jq "no routes yet" 200 '.routes == []'
admin POST /routes '{"object":"db.bunnies","wave":1}'
expect_jq "POST /routes db.bunnies -> 1" 200 '(.object == "db.bunnies") and (.wave == 1)
	and (.since | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T.*Z$"))'
admin POST /routes '{"object":"db.*","wave":2}'
expect_jq "POST /routes db.* -> 2" 200 '(.object == "db.*") and (.wave == 2)'
admin POST /routes '{"object":"wh_only.*","wave":3}'
expect_jq "POST /routes wh_only.* -> 3" 200 '.wave == 3'
admin POST /routes '{"object":"my.db%1Forders","wave":2147483647}'
expect_jq "POST /routes REST form, highest wave" 200 '(.object == "my.db%1Forders") and (.wave == 2147483647)'
admin GET /routes
expect_jq "GET /routes lists all four in key order" 200 \
	'[.routes[] | [.object, .wave]] == [["db.*",2],["db.bunnies",1],["my.db%1Forders",2147483647],["wh_only.*",3]]'
seq=$(seq_now)
admin POST /routes '{"object":"db.bunnies","wave":1}'
expect_jq "the same route again" 200 '.wave == 1'
[ "$(seq_now)" = "$seq" ] && ok "an unchanged route writes no event" || bad "an unchanged route wrote an event"
admin DELETE /routes/my.db%251Forders
expect_jq "DELETE /routes/{REST form, percent-encoded}" 200 '(.object == "my.db%1Forders") and (.wave == 2147483647)'
admin DELETE /routes/my.db%251Forders
expect_error "DELETE it again" 404 NotFoundException "has no route"

echo "== resolve"
admin GET /resolve/db.bunnies
expect_jq "resolve by object" 200 '(.object == "db.bunnies") and (.target == "warehouse")
	and (.write_target == "warehouse") and (.wave == 1) and (.state == "warehouse")
	and (.why == "object") and (.matched == "db.bunnies") and (.version > 0)
	and (.refuses_warehouse_writes == false)'
admin GET /resolve/db.athena
expect_jq "resolve by rule" 200 '(.why == "rule") and (.matched == "db.*") and (.wave == 2)'
admin GET /resolve/lh_only.new_bunnies
expect_jq "resolve unassigned" 200 '(.why == "unassigned") and (.wave == null)
	and (.matched == null) and (.target == "warehouse") and (.version == 0)'
admin GET '/resolve/db.athena?client=spark%20job'
expect_jq "resolve with a client" 200 '(.client == "spark job") and (.why == "rule")'

echo "== waves"
admin GET /waves
expect_jq "GET /waves: waves known by their routes" 200 \
	'[.waves[] | [.wave, .state, .objects, .rules]] == [[1,"warehouse",1,0],[2,"warehouse",0,1],[3,"warehouse",0,1]]'
admin GET /waves/1
expect_jq "GET /waves/1" 200 '(.wave == 1) and (.state == "warehouse") and (.objects == ["db.bunnies"]) and (.rules == [])'
admin GET /waves/99
expect_error "GET /waves/99" 404 NotFoundException "wave 99 has no routes and no state"

echo "== flip, and the data path follows"
target() {
	curl -s -o /dev/null -D - "http://127.0.0.1:$LISTEN/v1/namespaces/db/tables/bunnies" |
		tr -d '\r' | awk -F': ' 'tolower($1) == "x-floe-target" {print $2}'
}
t=$(target)
[ "$t" = warehouse ] && ok "db.bunnies served by the warehouse" || bad "db.bunnies served by '$t' before the flip"
admin POST /waves/1/flip '{"to":"lakehouse","reason":"clean for a week"}'
expect_jq "POST /waves/1/flip lakehouse" 200 '(.wave == 1) and (.from == "warehouse")
	and (.state == "lakehouse") and (.reason == "clean for a week") and (.actor | test("^uid [0-9]+$"))'
t=$(target)
[ "$t" = lakehouse ] && ok "db.bunnies served by the lakehouse" || bad "db.bunnies served by '$t' after the flip"
admin GET /resolve/db.bunnies
expect_jq "resolve after the flip" 200 '(.target == "lakehouse") and (.write_target == "warehouse") and (.state == "lakehouse")'
admin POST /waves/2/flip '{"to":"canary","pct":30}'
expect_jq "POST /waves/2/flip canary 30" 200 '(.state == "canary") and (.pct == 30) and (.from == "warehouse")'
# The data path hashes a client's identity (its Authorization header, else
# its address) with 64-bit FNV-1a, as /resolve?client= does: for an
# anonymous curl, /resolve with its address predicts the side it gets.
same=1
for tbl in athena java_bunnies wh_bunnies lh_bunnies; do
	admin GET "/resolve/db.$tbl?client=127.0.0.1"
	want=$(jq -r .target "$T/b")
	got=$(curl -s -o /dev/null -D - "http://127.0.0.1:$LISTEN/v1/namespaces/db/tables/$tbl" |
		tr -d '\r' | awk -F': ' 'tolower($1) == "x-floe-target" {print $2}')
	[ "$want" = "$got" ] || { same=0; echo "     db.$tbl: resolve says $want, served by $got"; }
done
[ $same = 1 ] && ok "resolve ?client= predicts the canary side" || bad "resolve ?client= disagrees with the data path"

echo "== refusals change nothing but the event log"
before=$(state_now); seq=$(seq_now)
admin POST /waves/1/flip '{"to":"lakehouse"}'
expect_error "flip an already flipped wave" 409 RefusedException "already on the lakehouse"
admin POST /routes '{"object":"db.java_bunnies","wave":1}'
expect_error "join a lakehouse wave" 409 RefusedException "wave 1 is lakehouse"
[ "$(state_now)" = "$before" ] && ok "routes and waves unchanged" || bad "a refusal changed routes or waves"
admin GET "/events?after=$seq"
expect_jq "each refusal is recorded" 200 '[.events[].type] == ["wave.refused","route.refused"]'
admin POST /routes '{"object":"db.java_bunnies","wave":1,"force":true}'
expect_jq "join it with force" 200 '.wave == 1'

echo "== rollback and ack"
admin POST /waves/1/rollback '{"reason":"dashboards disagree"}'
expect_jq "POST /waves/1/rollback" 200 '(.from == "lakehouse") and (.state == "rolled_back") and (.reason == "dashboards disagree")'
t=$(target)
[ "$t" = warehouse ] && ok "db.bunnies back on the warehouse" || bad "db.bunnies served by '$t' after the rollback"
if [ -s "$T/rollback.log" ] && tail -n 1 "$T/rollback.log" | jq -e '(.wave == 1) and (.trigger == "operator")
	and (.from == "lakehouse") and (.to == "rolled_back") and (.objects == ["db.bunnies","db.java_bunnies"])
	and (.actor | test("^uid [0-9]+$")) and (.reason == "dashboards disagree")' >/dev/null 2>&1; then
	ok "the rollback is in the rollback log"
else
	bad "rollback log: $(cat "$T/rollback.log" 2>/dev/null)"
fi
admin POST /waves/1/flip '{"to":"lakehouse"}'
expect_error "flip before ack" 409 RefusedException "wave ack 1"
lines=$(wc -l <"$T/rollback.log")
admin POST /waves/1/ack
expect_jq "POST /waves/1/ack" 200 '(.from == "rolled_back") and (.state == "warehouse")'
admin POST /waves/2/rollback '{"force_stale":false}'
expect_jq "rollback the canary" 200 '(.from == "canary") and (.state == "rolled_back")'
[ "$(wc -l <"$T/rollback.log")" = $((lines + 1)) ] && ok "one more rollback log line" ||
	bad "rollback log has $(wc -l <"$T/rollback.log") lines, want $((lines + 1))"
admin GET /waves
expect_jq "GET /waves with states" 200 \
	'[.waves[] | [.wave, .state]] == [[1,"warehouse"],[2,"rolled_back"],[3,"warehouse"]]'
admin GET /status
expect_jq "status counts waves per state" 200 '(.waves.warehouse == 2) and (.waves.rolled_back == 1)'

echo "== events"
admin GET '/events?limit=2'
expect_jq "GET /events?limit=2" 200 '([.events[].seq] == [1,2]) and (.events[0].type == "route.set")
	and (.events[0].object == "db.bunnies") and (.events[0].actor | test("^uid ")) and (.events[0].ts | type == "string")'
last=$(jq -r .last_seq "$T/b")
admin GET "/events?after=$((last - 1))"
expect_jq "GET /events?after=last-1" 200 "(.events | length == 1) and (.events[0].seq == $last) and (.last_seq == $last)"
admin GET "/events?after=$last"
expect_jq "nothing after the last" 200 '.events == []'
[ "$last" = "$(seq_now)" ] && ok "last_seq matches /status" || bad "last_seq $last vs status $(seq_now)"

echo "== errors leave the store alone"
before=$(state_now); seq=$(seq_now)
admin GET /nope
expect_error "unknown path" 404 NotFoundException "no such resource: /nope"
admin PUT /routes '{}'
expect_error "wrong method" 405 MethodNotAllowedException "PUT is not allowed on /routes (allowed: GET, POST)"
admin DELETE /status
expect_error "wrong method on /status" 405 MethodNotAllowedException "allowed: GET"
allow=$(curl -s -o /dev/null -D - -X PUT --unix-socket "$SOCK" http://floe/routes |
	tr -d '\r' | awk -F': ' 'tolower($1) == "allow" {print $2}')
expect_eq "a 405 says what is allowed in Allow" "GET, POST" "$allow"
admin POST /routes '{"object":'
expect_error "bad JSON" 400 BadRequestException "body is not JSON: "
admin POST /routes "$(printf '{"object":"db.t",\n"wave":}')"
expect_error "bad JSON, line and column" 400 BadRequestException "at line 2 column"
admin POST /routes '{"wave":1}'
expect_error "missing object" 400 BadRequestException 'field \"object\" is required'
admin POST /routes '{"object":"db.t","wave":"1"}'
expect_error "ill-typed wave" 400 BadRequestException 'field \"wave\" must be an integer 0..2147483647'
admin POST /routes '{"object":"db.t","wave":2147483648}'
expect_error "wave too large" 400 BadRequestException 'field \"wave\" must be an integer'
admin POST /routes '{"object":"orders","wave":1}'
expect_error "malformed object" 400 BadRequestException "an object is a namespace and a table"
admin DELETE /routes/db..t
expect_error "malformed object in the path" 400 BadRequestException "empty namespace level"
admin GET /waves/x
expect_error "bad wave number" 400 BadRequestException "is not a number"
admin POST /waves/3/flip '{"to":"warehouse"}'
expect_error "flip to the warehouse" 400 BadRequestException 'field \"to\" must be'
admin POST /waves/3/flip '{"to":"canary"}'
expect_error "canary without pct" 400 BadRequestException 'field \"pct\" is required'
admin POST /waves/3/rollback '{"force_stale":"yes"}'
expect_error "ill-typed force_stale" 400 BadRequestException 'field \"force_stale\" must be true or false'
admin GET '/events?after=x'
expect_error "bad after" 400 BadRequestException "after must be"
admin GET '/events?limit=0'
expect_error "bad limit" 400 BadRequestException "limit must be"
[ "$(state_now)" = "$before" ] && [ "$(seq_now)" = "$seq" ] &&
	ok "no error changed the store" || bad "an error changed the store"

echo "== restart keeps routes and waves"
admin POST /waves/3/flip '{"to":"lakehouse"}'
expect_jq "flip wave 3" 200 '.state == "lakehouse"'
before=$(state_now); seq=$(seq_now)
stop_floe
start_floe
[ "$(state_now)" = "$before" ] && ok "routes and waves survive a restart" || bad "state differs after a restart"
[ "$(seq_now)" = "$seq" ] && ok "the event sequence survives a restart" || bad "sequence $(seq_now) after restart, was $seq"

finish
