#!/bin/bash
# The LoadTable cache: hits, client 304s, TTL and revalidation with the
# catalog's ETag, eviction at the byte budget, invalidation by writes,
# flips and config changes, identity isolation for vended credentials, a
# flip during a burst of reads, and the counters.
. "$(dirname "$0")/lib.sh"
lib_init 48
catalog warehouse
catalog lakehouse
echo "floe-wh-token" >"$T/wh.token"
WH_EXTRA="token_file = $T/wh.token"
CACHE_SIZE=64k
# The TTL holds between requests sent one after the other, on a loaded
# machine too.
FLOE_EXTRA="cache_ttl = 3s
config_refresh = 1s"
write_conf
start_floe
L=/v1/routed/namespaces/db/tables/bunnies
nreq() { # CATALOG PATH-PART: how many requests the catalog saw
	cat_requests "$1" | jq --arg p "$2" '[.requests[] | select(.url | contains($p))] | length'
}

cat_clear warehouse
get $L
expect_header "first load is a miss" X-Floe-Cache miss
etag=$(hdr ETag)
get $L
expect_status "second load" 200
expect_header "second load is a hit" X-Floe-Cache hit
expect_header "a hit still names the side" X-Floe-Target warehouse
expect_eq "the catalog was asked once" 1 "$(nreq warehouse tables/bunnies)"
expect_eq "the hit carries floe's ETag" "$etag" "$(hdr ETag)"
get $L -H "If-None-Match: $etag"
expect_status "the client's own ETag gets 304 from floe" 304
expect_eq "still asked once" 1 "$(nreq warehouse tables/bunnies)"

# TTL: once it passed the entry is revalidated with the catalog's ETag.
sleep 3.1
get $L
expect_header "expired: revalidated with a 304" X-Floe-Cache revalidated
inm=$(cat_requests warehouse | jq -r '[.requests[] | select(.url | contains("tables/bunnies"))] | last | .headers["if-none-match"]')
[ -n "$inm" ] && [ "$inm" != null ] && [[ $inm != *fl1.* ]] &&
	ok "revalidation sent the catalog's own ETag ($inm)" ||
	bad "revalidation If-None-Match: $inm"
get $L
expect_header "renewed" X-Floe-Cache hit

# A commit through floe drops the entry: the next read sees the commit.
post $L '{"requirements":[],"updates":[{"action":"set-properties","updates":{"cache-test":"1"}}]}'
expect_status "commit through floe" 200
get $L
expect_header "after the commit: a miss" X-Floe-Cache miss
expect_jq "and the new metadata" 200 '.metadata.properties["cache-test"] == "1"'

# A flip: the very next read comes from the lakehouse.
get $L
expect_header "cached again" X-Floe-Cache hit
ctl_ok "route" route set db.bunnies 1
ctl_ok "flip" wave flip 1 lakehouse
get $L
expect_header "after the flip: the lakehouse" X-Floe-Target lakehouse
expect_header "after the flip: a miss" X-Floe-Cache miss
ctl_ok "rollback" wave rollback 1
get $L
expect_header "after the rollback: the warehouse" X-Floe-Target warehouse

# A config change of the side: the merged config is new at once.
curl -s -o /dev/null -X POST -d '{"s3.endpoint":"http://s3.changed.floe.test"}' \
	"http://127.0.0.1:${CAT_PORT[warehouse]}/_test/config"
for i in $(seq 40); do
	get $L
	[ "$(jq -r '.config["s3.endpoint"]' "$T/b")" = http://s3.changed.floe.test ] && break
	sleep 0.1
done
expect_jq "a changed catalog config reaches the next answer" 200 '.config["s3.endpoint"] == "http://s3.changed.floe.test"'

# Identity: answers without credentials are shared (the catalog sees
# floe's token); vended credentials are cached per client only.
V=/v1/routed/namespaces/db/tables/java_bunnies
get $V -H 'Authorization: Bearer alice'
get $V -H 'Authorization: Bearer bob'
expect_header "without credentials bob shares alice's answer" X-Floe-Cache hit
D=(-H 'X-Iceberg-Access-Delegation: vended-credentials')
get $V -H 'Authorization: Bearer alice' "${D[@]}"
expect_jq "alice gets vended credentials" 200 '.["storage-credentials"][0].config["s3.secret-access-key"] == "fake-secret-warehouse"'
expect_header "alice: a miss" X-Floe-Cache miss
get $V -H 'Authorization: Bearer alice' "${D[@]}"
expect_header "alice again: a hit" X-Floe-Cache hit
get $V -H 'Authorization: Bearer bob' "${D[@]}"
expect_header "bob never gets alice's credentials from the cache" X-Floe-Cache miss
grep -rq "fake-secret" "$T/access.log" "$T/floe.log" &&
	bad "a vended secret reached a log" || ok "no vended secret in any log"

# Eviction at the budget (64k; each answer is a few k).
for i in $(seq 1 30); do
	post /v1/routed/namespaces/db/tables "{\"name\":\"evict_$i\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":\"long\",\"required\":false}]},\"properties\":{\"pad\":\"$(head -c 1500 /dev/zero | tr '\0' p)\"}}" >/dev/null
	get /v1/routed/namespaces/db/tables/evict_$i
done
st=$(curl -s --unix-socket "$SOCK" http://floe/status)
jq -e '.cache.evictions > 0 and .cache.bytes <= 65536 and .cache.hits > 0 and .cache.misses > 0 and .cache.revalidations >= 1 and .cache.invalidations >= 1' <<<"$st" >/dev/null &&
	ok "status: evictions at the budget, hits, misses, revalidations, invalidations" ||
	bad "status cache: $(jq -c .cache <<<"$st")"
# floectl status says the same, the budget in binary units.
want=$(jq -r '.cache | "cache [0-9.]+ (B|KiB) of 64.0 KiB, \(.entries) entries, \(.hits) hits, \(.misses) misses;"' <<<"$st")
"${FLOECTL:-build/floectl}" -s "$SOCK" status >"$T/ctl" 2>&1
grep -Eq "^memory +$want " "$T/ctl" &&
	ok "floectl status: the cache's bytes, budget, entries, hits and misses" ||
	bad "floectl status, memory (want $want): $(cat "$T/ctl")"
m=$(curl -s --unix-socket "$SOCK" http://floe/metrics)
for k in hits_total misses_total revalidations_total evictions_total bytes entries; do
	grep -q "^floe_cache_$k [0-9]" <<<"$m" || bad "metrics: no floe_cache_$k"
done
ok "metrics carry the cache counters"

# A flip during a burst of concurrent reads: no answer from the old side
# to a request sent after the flip was acknowledged.
ctl_ok "ack" wave ack 1
get $L
burst() {
	local i
	for i in $(seq 1 150); do
		s=$(date +%s%N)
		t=$(curl -s -o /dev/null -D - --max-time 5 "$BASE$L" | tr -d '\r' |
			awk -F': ' 'tolower($1)=="x-floe-target"{print $2}')
		echo "$s $t"
	done
}
bursts=()
for k in 1 2 3 4; do
	burst >"$T/burst.$k" &
	bursts+=($!)
done
sleep 0.3
ctl_ok "flip under load" wave flip 1 lakehouse
acked=$(date +%s%N)
wait "${bursts[@]}"
after=$(cat "$T"/burst.* | awk -v a="$acked" '$1 > a')
n_after=$(grep -c . <<<"$after")
n_old=$(grep -c ' warehouse$' <<<"$after")
[ "$n_after" -gt 50 ] && ok "$n_after reads were sent after the flip was acknowledged" ||
	bad "only $n_after reads after the flip"
expect_eq "none of them was answered by the warehouse" 0 "$n_old"
finish
