#!/bin/bash
# Integration 55: metrics_listen. A read-only plain-HTTP listener serves
# /metrics, the status page and /status.json; other paths are 404, other
# methods 405 with Allow; nothing on it shows a catalog token.
# `promtool check metrics` finds nothing to say about /metrics. A real
# Prometheus (loopback port, temp dir, 1 s scrapes, floe-rules.yml loaded)
# scrapes floe; after a reconcile rollback of wave 3 its HTTP API answers
# floe_rollbacks_total{wave="3",trigger="reconcile"} = 1 and shows the
# FloeWaveRolledBack alert firing, which this test prints. The page of
# that rollback, to a webhook nobody listens on, counts as failing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/triggers.sh"
lib_init 55
command -v promtool >/dev/null && command -v prometheus >/dev/null || {
	echo "promtool and prometheus are needed: make deps"
	exit 1
}
catalog warehouse
catalog lakehouse --prefix lhp
MPORT=$(free_port)
M=http://127.0.0.1:$MPORT
echo "s3cr3t-catalog-token-55" >"$T/wh.token"
WH_EXTRA="token_file = $T/wh.token"
FLOE_EXTRA="metrics_listen = 127.0.0.1:$MPORT"
# A webhook nobody listens on: its pages fail.
POLICY_EXTRA="webhook = http://127.0.0.1:$(free_port)/page"
write_conf
start_floe

# mget PATH [CURL ARGS...]: a request to the metrics listener; status in
# S, body in $T/m, headers in $T/mh.
mget() {
	local p=$1
	shift
	: >"$T/m"
	S=$(curl -s -o "$T/m" -D "$T/mh" -w '%{http_code}' --max-time 10 \
		"$@" "$M$p")
}

ctl_ok "route" route set db.athena 3
ctl_ok "route 9" route set db.java_bunnies 9
ctl_ok "flip 3" wave flip 3 lakehouse
ctl_ok "flip 9 canary" wave flip 9 lakehouse --canary 25
get /v1/routed/namespaces/db/tables/athena
expect_status "a read through floe" 200
get /v1/routed/namespaces/db/tables/nope
get /v1/config

mget /metrics
expect_eq "GET /metrics" 200 "$S"
grep -qi '^content-type: text/plain; version=0.0.4' "$T/mh" &&
	ok "the Prometheus text content type" ||
	bad "content type: $(grep -i content-type "$T/mh")"
cp "$T/m" "$T/metrics.txt"
if promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1 &&
	[ ! -s "$T/promtool.out" ]; then
	ok "promtool check metrics finds nothing to say"
else
	bad "promtool check metrics: $(head -c 600 "$T/promtool.out")"
fi
for fam in floe_requests_total floe_request_duration_seconds \
	floe_upstream_request_duration_seconds floe_wave_state \
	floe_wave_canary_ratio floe_rollbacks_total floe_wave_error_ratio \
	floe_wave_error_threshold_ratio floe_wave_freshness_lag_seconds \
	floe_webhook_failures_total floe_build_info floe_catalog_up \
	floe_cache_hits_total floe_cache_expirations_total; do
	grep -q "^# TYPE $fam " "$T/metrics.txt" ||
		bad "family $fam is missing"
done
ok "every family DESIGN names for a single node is there"
grep -q '^floe_build_info{version="[^"]\+"} 1$' "$T/metrics.txt" &&
	ok "floe_build_info carries the version" ||
	bad "build_info: $(grep build_info "$T/metrics.txt")"
grep -q '^floe_wave_state{wave="9",state="canary"} 1$' "$T/metrics.txt" &&
	grep -q '^floe_wave_canary_ratio{wave="9"} 0.25$' "$T/metrics.txt" &&
	ok "wave state and canary ratio" ||
	bad "wave 9: $(grep 'wave="9"' "$T/metrics.txt" | head)"
grep -q '^floe_rollbacks_total{wave="3",trigger="reconcile"} 0$' \
	"$T/metrics.txt" && ok "an armed wave's rollback counter starts at 0" ||
	bad "rollbacks: $(grep rollbacks_total "$T/metrics.txt")"
grep -q '^floe_request_duration_seconds_bucket{side="lakehouse",le="+Inf"} [1-9]' \
	"$T/metrics.txt" &&
	grep -q '^floe_requests_total{side="lakehouse",code="200"} [1-9]' \
		"$T/metrics.txt" &&
	grep -q '^floe_requests_total{side="floe",code="200"} [1-9]' \
		"$T/metrics.txt" &&
	ok "requests by side and code, latency by side" ||
	bad "requests: $(grep -E '^floe_requests_total|le="\+Inf"' "$T/metrics.txt")"
# Labels: sides, waves, states, triggers, codes, versions, le. Never a
# table or a client.
labels=$(grep -v '^#' "$T/metrics.txt" | grep -o '[a-z_]*="' | sort -u |
	tr -d '="' | tr '\n' ' ')
expect_eq "labels are bounded" "code le side state trigger version wave " \
	"$labels"
grep -q athena "$T/metrics.txt" && bad "a table name is in /metrics" ||
	ok "no table name in /metrics"

mget /status.json
expect_eq "GET /status.json" 200 "$S"
jq -e '.ready == true and (.catalogs | has("warehouse"))' "$T/m" \
	>/dev/null && ok "/status.json is the status" || bad "status: $(head -c 300 "$T/m")"
mget /
expect_eq "GET / (the status page)" 200 "$S"
grep -qi '^content-type: text/html' "$T/mh" && ok "the page is HTML" ||
	bad "page type: $(grep -i content-type "$T/mh")"
for p in / /metrics /status.json; do
	mget "$p"
	if grep -q "s3cr3t-catalog-token-55" "$T/m" "$T/mh"; then
		bad "$p shows the catalog token"
	fi
done
ok "no page shows the catalog token"

mget /waves
expect_eq "another path: 404" 404 "$S"
mget /waves/3/rollback -X POST
expect_eq "a change is not served here: 404" 404 "$S"
mget /metrics -X POST -d x
expect_eq "POST /metrics: 405" 405 "$S"
grep -qi '^allow: GET, HEAD' "$T/mh" && ok "405 says Allow: GET, HEAD" ||
	bad "allow: $(cat "$T/mh")"
mget / -X DELETE
expect_eq "DELETE /: 405" 405 "$S"
mget /metrics -I
expect_eq "HEAD /metrics" 200 "$S"
expect_eq "wave 3 untouched by all that" lakehouse "$(wave_state 3)"

# A real Prometheus, scraping every second, with floe's alerting rules.
PPORT=$(free_port)
mkdir -p "$T/prom"
cp conf/prometheus/floe-rules.yml "$T/prom/"
cat >"$T/prom/prometheus.yml" <<EOF2
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - floe-rules.yml
scrape_configs:
  - job_name: floe
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
EOF2
prometheus --config.file="$T/prom/prometheus.yml" \
	--storage.tsdb.path="$T/prom/data" \
	--web.listen-address="127.0.0.1:$PPORT" >"$T/prom.log" 2>&1 &
PROM_PID=$!
pids+=($PROM_PID)
P=http://127.0.0.1:$PPORT

# promq QUERY: the instant query's result, as JSON, in $T/q.
promq() {
	curl -s --max-time 5 -o "$T/q" -G "$P/api/v1/query" \
		--data-urlencode "query=$1"
}

# prom_wait DESC QUERY JQ [TRIES]: poll (0.25 s apart) until JQ holds.
prom_wait() {
	local i
	for i in $(seq "${4:-120}"); do
		promq "$2"
		jq -e "$3" "$T/q" >/dev/null 2>&1 && { ok "$1"; return 0; }
		sleep 0.25
	done
	bad "$1: $(head -c 400 "$T/q")"
	return 1
}

for i in $(seq 120); do
	curl -s --max-time 1 -o /dev/null "$P/-/ready" && break
	sleep 0.25
done
prom_wait "Prometheus scrapes floe: up == 1" 'up{job="floe"}' \
	'.data.result[0].value[1] == "1"' ||
	{ tail -20 "$T/prom.log"; finish; }
prom_wait "it has seen the counter at 0" \
	'floe_rollbacks_total{wave="3",trigger="reconcile"}' \
	'.data.result[0].value[1] == "0"'

admin POST /ledger "$(ledger_rec db.athena gap)"
expect_eq "a gap record is taken" 200 "$AS"
expect_eq "and rolls wave 3 back" rolled_back "$(wave_state 3)"
prom_wait "Prometheus: floe_rollbacks_total{wave=\"3\",trigger=\"reconcile\"} = 1" \
	'floe_rollbacks_total{wave="3",trigger="reconcile"}' \
	'.data.result[0].value[1] == "1"'
prom_wait "Prometheus: floe_wave_state rolled_back = 1" \
	'floe_wave_state{wave="3",state="rolled_back"}' \
	'.data.result[0].value[1] == "1"'
for i in $(seq 120); do
	curl -s --max-time 5 -o "$T/alerts" "$P/api/v1/alerts"
	jq -e '.data.alerts[] | select(.labels.alertname == "FloeWaveRolledBack"
		and .state == "firing")' "$T/alerts" >/dev/null 2>&1 && break
	sleep 0.25
done
if jq -e '.data.alerts[] | select(.labels.alertname == "FloeWaveRolledBack"
	and .state == "firing" and .labels.wave == "3"
	and .labels.trigger == "reconcile" and .labels.severity == "page"
	and (.annotations.summary | contains("wave 3"))
	and (.annotations.runbook | contains("floectl wave ack 3")))' \
	"$T/alerts" >/dev/null 2>&1; then
	ok "the FloeWaveRolledBack alert fires for wave 3, trigger reconcile"
	echo "--- the alert as Prometheus shows it (GET /api/v1/alerts):"
	jq '.data.alerts[] | select(.labels.alertname == "FloeWaveRolledBack")' \
		"$T/alerts"
else
	bad "alerts: $(head -c 800 "$T/alerts")"
fi
kill "$PROM_PID"
wait "$PROM_PID" 2>/dev/null

# The rollback's page went to a webhook nobody listens on.
for i in $(seq 100); do
	mget /metrics
	grep -q '^floe_webhook_attempt_failures_total [1-9]' "$T/m" && break
	sleep 0.05
done
grep -q '^floe_webhook_pages_total 1$' "$T/m" &&
	grep -q '^floe_webhook_attempt_failures_total [1-9]' "$T/m" &&
	ok "a page that fails shows in the webhook's counters" ||
	bad "webhook: $(grep webhook "$T/m" | grep -v '^#')"
finish
