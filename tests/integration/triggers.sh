# Helpers for the rollback trigger tests (50-54); source after lib.sh.

# webhook_start [ARGS...]: a recording webhook receiver; sets WEBHOOK_URL.
webhook_start() {
	local i p=
	node tests/integration/webhook.js "$@" >"$T/webhook.out" 2>&1 &
	pids+=($!)
	WEBHOOK_PID=$!
	for i in $(seq 100); do
		p=$(awk '/^ready /{print $2}' "$T/webhook.out" 2>/dev/null)
		[ -n "$p" ] && break
		sleep 0.05
	done
	[ -n "$p" ] || { echo "webhook receiver did not start"; exit 1; }
	WEBHOOK_URL=http://127.0.0.1:$p/page
	WEBHOOK_BASE=http://127.0.0.1:$p
}

# webhook_posts: what the receiver got, as JSON {"posts":[...]}.
webhook_posts() {
	curl -s --max-time 5 "$WEBHOOK_BASE/_posts"
}

# admin METHOD PATH [JSON]: the admin API; body in $T/a, status in AS.
admin() {
	local args=(-s -o "$T/a" -w '%{http_code}' --max-time 20
		--unix-socket "$SOCK" -X "$1")
	[ $# -ge 3 ] && args+=(-H 'Content-Type: application/json'
		--data-binary "$3")
	AS=$(curl "${args[@]}" "http://floe$2")
}

# now_ts [OFFSET_MS]: RFC 3339 time in ms, now plus OFFSET_MS.
now_ts() {
	node -e 'console.log(new Date(Date.now() + Number(process.argv[1] || 0)).toISOString())' -- "${1:-0}"
}

# ledger_rec OBJECT BUCKET [TS]: one ledger record line.
ledger_rec() {
	local ok=false ts=${3:-$(now_ts)}
	[ "$2" = clean ] && ok=true
	if [ "$2" = stale ] || [ "$2" = value-drift ]; then
		printf '{"object":"%s","ts":"%s","count_match":true,"aggregate_match":%s,"hash_match":false,"bucket":"%s","source":"test-job"}' \
			"$1" "$ts" "$([ "$2" = stale ] && echo false || echo true)" "$2"
		return
	fi
	printf '{"object":"%s","ts":"%s","count_match":%s,"aggregate_match":%s,"hash_match":%s,"bucket":"%s","source":"test-job"}' \
		"$1" "$ts" "$ok" "$ok" "$ok" "$2"
}

# wave_state N: the state of wave N.
wave_state() {
	admin GET "/waves/$1"
	jq -r '.state' "$T/a"
}

# rlog_lines: the number of lines in the rollback log.
rlog_lines() {
	if [ -f "$T/rollback.log" ]; then wc -l <"$T/rollback.log"; else echo 0; fi
}

# wait_state N STATE [TRIES]: poll wave N until STATE (50 ms apart).
wait_state() {
	local i
	for i in $(seq "${3:-100}"); do
		[ "$(wave_state "$1")" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# stats LABEL < numbers: min / median / p90 / max of one number a line.
stats() {
	sort -n | awk -v l="$1" '{ v[NR] = $1 } END {
		if (NR == 0) { print l ": no samples"; exit }
		m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.9 + 0.999)]
		if (p == "") p = v[NR]
		printf "%s: n=%d min=%s median=%s p90=%s max=%s\n", l, NR, v[1], m, p, v[NR] }'
}
