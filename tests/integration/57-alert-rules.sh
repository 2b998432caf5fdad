#!/bin/bash
# Integration 57: conf/prometheus/floe-rules.yml. promtool checks the
# rules, every alert has a summary and a runbook annotation, and
# `promtool test rules` runs the unit tests in floe-rules.test.yml (one
# per alert: when it fires, with which labels and text, and when not).
. "$(dirname "$0")/lib.sh"
lib_init 57
command -v promtool >/dev/null || {
	echo "promtool is needed: make deps"
	exit 1
}
R=conf/prometheus/floe-rules.yml
if promtool check rules "$R" >"$T/check" 2>&1; then
	ok "promtool check rules: $(grep -o '[0-9]* rules found' "$T/check")"
else
	bad "promtool check rules: $(cat "$T/check")"
fi
# Every alert named in the rules has a test, a summary and a runbook.
alerts=$(grep -o 'alert: [A-Za-z]*' "$R" | awk '{print $2}' | sort)
tested=$(grep -o 'alertname: [A-Za-z]*' conf/prometheus/floe-rules.test.yml |
	awk '{print $2}' | sort -u)
expect_eq "every alert has a unit test" "$alerts" "$tested"
n=$(echo "$alerts" | wc -l)
expect_eq "every alert has a summary" "$n" "$(grep -c '  summary: ' "$R")"
expect_eq "every alert has a runbook" "$n" "$(grep -c '  runbook: ' "$R")"
for a in FloeWaveRolledBack FloeSplitBrain FloeCatalogDown \
	FloeFreshnessLagNearThreshold FloeClusterNodeBehind \
	FloeClusterNodesDisagree FloeWebhookFailing; do
	echo "$alerts" | grep -qx "$a" || bad "no alert $a"
done
ok "the alerts the design asks for are there"
if (cd conf/prometheus && promtool test rules floe-rules.test.yml) \
	>"$T/test" 2>&1; then
	ok "promtool test rules: $(grep -c 'alertname:' \
		conf/prometheus/floe-rules.test.yml) expectations hold"
else
	bad "promtool test rules: $(head -c 1500 "$T/test")"
fi
# A rule that is wrong must fail its test: the tests can fail.
sed 's/>= 0.8 \*/>= 0.9 */' "$R" >"$T/floe-rules.yml"
cp conf/prometheus/floe-rules.test.yml "$T/"
if (cd "$T" && promtool test rules floe-rules.test.yml) >/dev/null 2>&1; then
	bad "a freshness alert at 90 % passes the 80 % test"
else
	ok "a rule changed to 90 % fails its unit test"
fi
finish
