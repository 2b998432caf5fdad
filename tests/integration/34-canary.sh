#!/bin/bash
# The canary: 1,000 client identities (bearer tokens) read two tables of a
# wave at 30 %, then at 60 %. The lakehouse share stays within 5 points of
# the percentage, no identity is ever served by both sides for one table,
# raising the share never sends a lakehouse reader back, a client without a
# token is sticky by its address, /resolve predicts the side, and 100 %
# is the lakehouse. Every share change says old -> new; the same share
# again is refused; a step down from the lakehouse to a canary share is a
# flip (not a rollback) that needs no gate, while raising it again does.
# Exits 0 or 1.
. "$(dirname "$0")/lib.sh"
lib_init 34
catalog warehouse
catalog lakehouse
write_conf
start_floe

# sweep PCT OUT: every identity reads both tables three times, 32 at a
# time; OUT gets {"table|identity": [sides...]}.
sweep() {
	node -e '
		const http = require("http");
		const [base, out] = process.argv.slice(1);
		const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
		const tables = ["bunnies", "nosuch"];
		const jobs = [];
		for (let round = 0; round < 3; round++)
			for (let i = 0; i < 1000; i++)
				for (const t of tables) jobs.push([i, t]);
		const seen = {};
		let next = 0, failed = 0;
		function one() {
			if (next >= jobs.length) return Promise.resolve();
			const [i, t] = jobs[next++];
			return new Promise((resolve) => {
				const req = http.get(base + "/v1/routed/namespaces/db/tables/" + t,
				    { agent, headers: { Authorization: "Bearer client-" + i } },
				    (res) => {
					res.resume();
					res.on("end", () => {
						const k = t + "|" + i;
						(seen[k] = seen[k] || []).push(res.headers["x-floe-target"]);
						resolve();
					});
				    });
				req.on("error", () => { failed++; resolve(); });
			}).then(one);
		}
		Promise.all(Array.from({ length: 32 }, one)).then(() => {
			require("fs").writeFileSync(out, JSON.stringify(seen));
			if (failed) { console.error(failed + " requests failed"); process.exit(1); }
			agent.destroy();
		});' "$BASE" "$2" || bad "sweep at $1%"
}

# check PCT FILE: the share per table and the stickiness.
check() {
	local t share
	jq -e 'all(.[]; length == 3)' "$2" >/dev/null &&
		ok "$1%: every identity got all its answers" || bad "$1%: answers missing"
	jq -e '[.[] | unique | length] | all(. == 1)' "$2" >/dev/null &&
		ok "$1%: no identity was served by both sides for one table" ||
		bad "$1%: flapping: $(jq -c '[to_entries[] | select(.value | unique | length > 1)] | .[0:3]' "$2")"
	for t in bunnies nosuch; do
		share=$(jq --arg t "$t" '[to_entries[] | select(.key | startswith($t + "|")) | .value[0]]
			| (map(select(. == "lakehouse")) | length) / 10' "$2")
		if jq -en --argjson s "$share" --argjson p "$1" '($s - $p) | fabs <= 5' >/dev/null; then
			ok "$1%: db.$t lakehouse share $share% (within 5 points)"
		else
			bad "$1%: db.$t lakehouse share $share%, want $1 +- 5"
		fi
	done
	jq -e 'all(.[]; .[0] == "warehouse" or .[0] == "lakehouse")' "$2" >/dev/null &&
		ok "$1%: every answer came from a catalog" || bad "$1%: targets: $(jq -c '[.[][0]] | unique' "$2")"
}

ctl_ok "route" route set db.bunnies 1
ctl_ok "route" route set db.nosuch 1
ctl_ok "canary 30" wave flip 1 lakehouse --canary 30 &&
	grep -qx 'wave 1: warehouse -> canary (0 % → 30 %)' "$T/ctl" &&
	ok "wave 1 is a canary at 30%, and says it was at 0 %" ||
	bad "canary 30: $(cat "$T/ctl")"

echo "== 1,000 identities at 30%"
sweep 30 "$T/s30.json"
check 30 "$T/s30.json"

echo "== /resolve predicts the side"
agree=0
for i in 3 14 159 265 358 979; do
	want=$(jq -r --arg k "bunnies|$i" '.[$k][0]' "$T/s30.json")
	got=$(curl -s --unix-socket "$SOCK" -G --data-urlencode "client=Bearer client-$i" \
		http://floe/resolve/db.bunnies | jq -r .target)
	[ "$want" = "$got" ] && agree=$((agree + 1))
done
expect_eq "floectl resolve --client agrees with the data path" 6 "$agree"

echo "== raising the share to 60%"
ctl_ok "canary 60" wave flip 1 lakehouse --canary 60 &&
	grep -qx 'wave 1: canary -> canary (30 % → 60 %)' "$T/ctl" &&
	ok "the raise shows old -> new share" || bad "canary 60: $(cat "$T/ctl")"
ctl wave flip 1 lakehouse --canary 60
expect_eq "the same share again: exit 1" 1 "$RC"
grep -q 'wave 1 is already at 60 %' "$T/ctl" &&
	ok "the same share again: \"already at 60 %\"" || bad "no-op canary: $(cat "$T/ctl")"
admin POST /waves/1/flip '{"to":"canary","pct":60}'
expect_error "the same share again: 409 from the API" 409 RefusedException \
	"wave 1 is already at 60 %"
sweep 60 "$T/s60.json"
check 60 "$T/s60.json"
jq -e --slurpfile a "$T/s30.json" '. as $b | $a[0] | to_entries
	| all(.[]; .value[0] != "lakehouse" or $b[.key][0] == "lakehouse")' "$T/s60.json" >/dev/null &&
	ok "no lakehouse reader at 30% went back to the warehouse at 60%" ||
	bad "raising the share moved readers back"

echo "== without a token: the peer address"
sides=""
for i in $(seq 10); do
	get /v1/routed/namespaces/db/tables/bunnies
	sides="$sides $(hdr X-Floe-Target)"
done
expect_eq "one client address, one side" 1 "$(echo $sides | tr ' ' '\n' | sort -u | wc -l)"
want=$(curl -s --unix-socket "$SOCK" 'http://floe/resolve/db.bunnies?client=127.0.0.1' | jq -r .target)
expect_eq "/resolve?client=ADDRESS predicts it" "$want" "$(echo $sides | awk '{print $1}')"

echo "== lowering, 100% and the events"
ctl_ok "canary 20" wave flip 1 lakehouse --canary 20 &&
	grep -qx 'wave 1: canary -> canary (60 % → 20 %)' "$T/ctl" &&
	ok "lowering shows old -> new share" || bad "canary 20: $(cat "$T/ctl")"
ctl_ok "canary 100" wave flip 1 lakehouse --canary 100 &&
	grep -qx 'wave 1: canary -> lakehouse (20 % → 100 %)' "$T/ctl" &&
	ok "--canary 100 is the lakehouse" || bad "canary 100: $(cat "$T/ctl")"
get /v1/routed/namespaces/db/tables/bunnies -H 'Authorization: Bearer client-1'
expect_header "every reader on the lakehouse" X-Floe-Target lakehouse

echo "== a step down from the lakehouse to a canary share"
# The wave's own gate now blocks (no ledger records): a step down is the
# safe direction and needs none, a raise afterwards does.
ctl_ok "wave set --min-clean" wave set 1 --min-clean 5
ctl_ok "step down to 50" wave flip 1 lakehouse --canary 50 &&
	grep -qx 'wave 1: lakehouse -> canary (100 % → 50 %)' "$T/ctl" &&
	ok "a lakehouse wave steps down to a canary, ungated, old -> new share" ||
	bad "step down: $(cat "$T/ctl")"
admin GET /waves/1
expect_jq "wave 1 is a canary at 50% again" 200 '.state == "canary" and .pct == 50'
ctl wave flip 1 lakehouse --canary 70
expect_eq "raising it again passes the gate: refused" 1 "$RC"
admin GET /rollbacks
expect_jq "the step down is no rollback" 200 '.rollbacks | length == 0'
curl -s --unix-socket "$SOCK" 'http://floe/events?limit=10000' >"$T/ev"
jq -e '[.events[] | select(.type == "wave.flip") | .pct] == [30, 60, 20, 100, 50]' "$T/ev" >/dev/null &&
	ok "each share change is a wave.flip event with its pct" ||
	bad "events: $(jq -c '[.events[] | select(.type == "wave.flip")]' "$T/ev")"
jq -e '[.events[] | select(.type == "wave.flip")] | last
	| .from == "lakehouse" and .to == "canary" and .from_pct == 100 and .pct == 50' "$T/ev" >/dev/null &&
	ok "the step down's event: lakehouse 100 -> canary 50" ||
	bad "step down event: $(jq -c '[.events[] | select(.type == "wave.flip")] | last' "$T/ev")"
jq -e '[.events[] | select(.type == "wave.rollback")] | length == 0' "$T/ev" >/dev/null &&
	ok "no rollback event" || bad "a rollback event was recorded"

echo "== a refusal that can be overridden names --force"
ctl route set db.other 1
expect_eq "joining a canary wave: refused" 1 "$RC"
grep -q 'override with --force' "$T/ctl" && ok "the refusal names --force" ||
	bad "refusal: $(cat "$T/ctl")"
finish
