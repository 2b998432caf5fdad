#!/bin/bash
# Self-check of a running test catalog with curl and jq.
# Usage: tests/catalog/selftest.sh BASE_URL NAME [PREFIX]
#   BASE_URL  e.g. http://127.0.0.1:9001 (started with --name NAME [--prefix PREFIX])
# Checks config, listing, load with ETag/304, create/commit/drop, rename,
# errors, pagination, the request log and each fault kind. Exit 0 or 1.
set -u
BASE=${1:?usage: selftest.sh BASE_URL NAME [PREFIX]}
NAME=${2:?usage: selftest.sh BASE_URL NAME [PREFIX]}
PFX=${3:-}
V1=$BASE/v1${PFX:+/$PFX}
T=$(mktemp -d /tmp/catalog-selftest.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0 checks=0

ok() { checks=$((checks + 1)); echo "ok   $1"; }
no() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
# check NAME COMMAND...: the command must succeed.
check() { local n=$1; shift; if "$@"; then ok "$n"; else no "$n"; fi; }
# req METHOD URL [BODY] [extra curl args]: body to $T/body, headers to $T/hdr, status to stdout.
req() {
	local m=$1 u=$2 b=${3:-}; shift 3 2>/dev/null || shift $#
	if [ -n "$b" ]; then
		curl -s -o "$T/body" -D "$T/hdr" -w '%{http_code}' -X "$m" \
			-H 'Content-Type: application/json' --data "$b" "$@" "$u"
	else
		curl -s -o "$T/body" -D "$T/hdr" -w '%{http_code}' -X "$m" "$@" "$u"
	fi
}
# An empty body fails (jq 1.6's -e passes on no input at all).
jqb() { [ -s "$T/body" ] && jq -e "$@" "$T/body" >/dev/null 2>&1; }
hdr() { grep -i "^$1:" "$T/hdr" | head -1 | cut -d' ' -f2- | tr -d '\r'; }

curl -s -X DELETE "$BASE/_test/fault" >/dev/null
curl -s -X DELETE "$BASE/_test/requests" >/dev/null

# --- config
s=$(req GET "$BASE/v1/config?warehouse=wh-$NAME")
check "config 200" [ "$s" = 200 ]
check "config echoes warehouse" jqb --arg w "wh-$NAME" '.defaults.warehouse == $w'
check "config names the catalog" jqb --arg n "$NAME" '.defaults["floe-test.catalog"] == $n'
check "config has s3.endpoint" jqb '.defaults["s3.endpoint"] | test("'"$NAME"'")'
check "config lists endpoints" jqb '.endpoints | length > 10'
if [ -n "$PFX" ]; then
	check "config overrides.prefix" jqb --arg p "$PFX" '.overrides.prefix == $p'
	s=$(req GET "$BASE/v1/namespaces")
	check "missing prefix is 404" [ "$s" = 404 ]
fi

# --- namespaces
s=$(req GET "$V1/namespaces")
check "list namespaces 200" [ "$s" = 200 ]
check "namespace db listed" jqb 'any(.namespaces[]; . == ["db"])'
if [ "$NAME" = warehouse ]; then only=wh_only; else only=lh_only; fi
check "namespace $only listed" jqb --arg o "$only" 'any(.namespaces[]; . == [$o])'
s=$(req GET "$V1/namespaces?pageToken=&pageSize=1")
check "namespaces page 1 has one" jqb '(.namespaces | length) == 1 and (.["next-page-token"] | type) == "string"'
tok=$(jq -r '.["next-page-token"]' "$T/body")
s=$(req GET "$V1/namespaces?pageToken=$tok&pageSize=1")
check "namespaces page 2 is last" jqb '(.namespaces | length) == 1 and .["next-page-token"] == null'
s=$(req POST "$V1/namespaces" '{"namespace":["selftest"],"properties":{"a":"1"}}')
check "create namespace 200" [ "$s" = 200 ]
s=$(req POST "$V1/namespaces" '{"namespace":["selftest"]}')
check "create namespace again 409" [ "$s" = 409 ]
check "409 is AlreadyExistsException" jqb '.error.type == "AlreadyExistsException" and .error.code == 409'
s=$(req HEAD "$V1/namespaces/selftest" "" -I)
check "HEAD namespace 204" [ "$s" = 204 ]
s=$(req POST "$V1/namespaces/selftest/properties" '{"updates":{"b":"2"},"removals":["a","zz"]}')
check "namespace properties" jqb '.updated == ["b"] and .removed == ["a"] and .missing == ["zz"]'
s=$(req GET "$V1/namespaces/selftest")
check "load namespace properties" jqb '.properties == {"b":"2"}'
s=$(req GET "$V1/namespaces/nope")
check "unknown namespace 404 NoSuchNamespaceException" \
	jqb '.error.type == "NoSuchNamespaceException" and .error.code == 404'

# --- tables
s=$(req GET "$V1/namespaces/db/tables")
check "list tables" jqb '[.identifiers[].name] | index("bunnies") != null and index("athena") != null'
s=$(req GET "$V1/namespaces/db/tables?pageToken=&pageSize=2")
check "tables paginated" jqb '(.identifiers | length) == 2 and .["next-page-token"] != null'
s=$(req GET "$V1/namespaces/db/tables/bunnies")
check "load table 200" [ "$s" = 200 ]
check "load table metadata" jqb '.metadata["format-version"] == 2 and (.["metadata-location"] | startswith("s3a://hyperparam-iceberg/spark/bunnies/metadata/"))'
# The 64-bit snapshot ids must come back exactly as in the fixture file.
mloc=$(jq -r '.["metadata-location"]' "$T/body")
fx=${mloc#s3a://hyperparam-iceberg/spark/bunnies/}
raw=$(curl -s "$BASE/files/spark_bunnies/$fx")
want=$(grep -o '"current-snapshot-id" *: *[0-9-]*' <<<"$raw" | grep -o '[0-9-]*$')
check "snapshot id kept exactly ($want)" grep -q "\"current-snapshot-id\":$want[,}]" "$T/body"
etag=$(hdr ETag)
check "load table has ETag" [ -n "$etag" ]
s=$(req GET "$V1/namespaces/db/tables/bunnies" "" -H "If-None-Match: $etag")
check "If-None-Match gives 304" [ "$s" = 304 ]
s=$(req GET "$V1/namespaces/db/tables/bunnies?snapshots=refs" "" -H "If-None-Match: $etag")
check "snapshots=refs has another ETag" [ "$s" = 200 ] && [ "$(hdr ETag)" != "$etag" ]
s=$(req HEAD "$V1/namespaces/db/tables/bunnies" "" -I)
check "HEAD table 204" [ "$s" = 204 ]
s=$(req HEAD "$V1/namespaces/db/tables/nope" "" -I)
check "HEAD missing table 404" [ "$s" = 404 ]
s=$(req GET "$V1/namespaces/db/tables/nope")
check "missing table NoSuchTableException" jqb '.error.type == "NoSuchTableException"'

schema='{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"v","type":"string","required":false}]}'
s=$(req POST "$V1/namespaces/selftest/tables" "{\"name\":\"t1\",\"schema\":$schema}")
check "create table 200" [ "$s" = 200 ]
check "created metadata" jqb '.metadata["current-snapshot-id"] == -1 and .metadata["format-version"] == 2 and (.metadata.location | startswith("s3a://")) and .metadata["last-column-id"] == 2'
uuid=$(jq -r '.metadata["table-uuid"]' "$T/body")
e1=$(hdr ETag)
s=$(req POST "$V1/namespaces/selftest/tables" "{\"name\":\"t1\",\"schema\":$schema}")
check "create table again 409" [ "$s" = 409 ] && jqb '.error.type == "AlreadyExistsException"'
s=$(req POST "$V1/namespaces/selftest/tables/t1" \
	"{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"$uuid\"}],\"updates\":[{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]}")
check "commit 200" [ "$s" = 200 ] && jqb '.metadata.properties.k == "v" and (.["metadata-location"] | endswith(".metadata.json"))'
check "commit has a new ETag" [ -n "$(hdr ETag)" ] && [ "$(hdr ETag)" != "$e1" ]
s=$(req POST "$V1/namespaces/selftest/tables/t1" \
	'{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000000"}],"updates":[]}')
check "wrong uuid 409 CommitFailedException" [ "$s" = 409 ] && jqb '.error.type == "CommitFailedException"'
s=$(req POST "$V1/namespaces/selftest/tables/t1" \
	'{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":9158179788527662767,"sequence-number":1,"timestamp-ms":1,"manifest-list":"s3a://x/m.avro","summary":{"operation":"append"},"schema-id":0}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":9158179788527662767}]}')
check "add-snapshot + set-snapshot-ref" [ "$s" = 200 ] && grep -q '"current-snapshot-id":9158179788527662767' "$T/body"
s=$(req POST "$V1/namespaces/selftest/tables/t1" \
	'{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":1}],"updates":[]}')
check "stale ref 409" [ "$s" = 409 ] && jqb '.error.type == "CommitFailedException"'
s=$(req POST "$V1/namespaces/selftest/tables/t1" '{"requirements":[],"updates":[{"action":"frobnicate"}]}')
check "unknown update 400 BadRequestException" [ "$s" = 400 ] && jqb '.error.type == "BadRequestException"'
s=$(req POST "$V1/namespaces/selftest/tables/t1" '{not json')
check "bad JSON 400" [ "$s" = 400 ] && jqb '.error.code == 400'
s=$(req POST "$V1/tables/rename" '{"source":{"namespace":["selftest"],"name":"t1"},"destination":{"namespace":["selftest"],"name":"t2"}}')
check "rename 204" [ "$s" = 204 ]
s=$(req POST "$V1/transactions/commit" '{"table-changes":[{"identifier":{"namespace":["selftest"],"name":"t2"},"requirements":[],"updates":[{"action":"remove-properties","removals":["k"]}]}]}')
check "transactions/commit 204" [ "$s" = 204 ]
s=$(req GET "$V1/namespaces/selftest/tables/t2")
check "transaction applied" jqb '.metadata.properties == {}'
s=$(req GET "$V1/namespaces/selftest/tables/t2/credentials")
check "credentials" jqb '.["storage-credentials"][0].config["s3.secret-access-key"] | startswith("fake-secret")'
s=$(req POST "$V1/namespaces/selftest/tables/t2/plan" '{}')
check "plan completed" jqb '.status == "completed" and .["file-scan-tasks"] == []'
s=$(req POST "$V1/namespaces/selftest/tables/t2/metrics" '{"report-type":"scan-report"}')
check "metrics 204" [ "$s" = 204 ]
s=$(req DELETE "$V1/namespaces/selftest")
check "drop non-empty namespace 409" [ "$s" = 409 ] && jqb '.error.type == "NamespaceNotEmptyException"'
s=$(req DELETE "$V1/namespaces/selftest/tables/t2")
check "drop table 204" [ "$s" = 204 ]
s=$(req GET "$V1/namespaces/selftest/tables/t2")
check "dropped table 404" [ "$s" = 404 ]
s=$(req POST "$V1/namespaces/selftest/register" \
	'{"name":"reg","metadata-location":"s3a://hyperparam-iceberg/java/bunnies/metadata/v4.metadata.json"}')
check "register table" [ "$s" = 200 ] && jqb '.metadata["table-uuid"] != null'
s=$(req DELETE "$V1/namespaces/selftest/tables/reg")
s=$(req POST "$V1/namespaces/selftest/tables" "{\"name\":\"staged\",\"stage-create\":true,\"schema\":$schema}")
check "stage-create has no metadata-location" [ "$s" = 200 ] && jqb '.["metadata-location"] == null'
s=$(req HEAD "$V1/namespaces/selftest/tables/staged" "" -I)
check "a staged table does not exist yet" [ "$s" = 404 ]
s=$(req POST "$V1/namespaces/selftest/tables/staged" \
	"{\"requirements\":[{\"type\":\"assert-create\"}],\"updates\":[{\"action\":\"add-schema\",\"schema\":$schema,\"last-column-id\":2},{\"action\":\"set-current-schema\",\"schema-id\":-1},{\"action\":\"add-spec\",\"spec\":{\"spec-id\":0,\"fields\":[]}},{\"action\":\"set-default-spec\",\"spec-id\":-1}]}")
check "assert-create commit creates it" [ "$s" = 200 ] && jqb '.metadata["current-schema-id"] == 0'
s=$(req POST "$V1/namespaces/selftest/tables/staged" '{"requirements":[{"type":"assert-create"}],"updates":[]}')
check "assert-create on an existing table 409" [ "$s" = 409 ] && jqb '.error.type == "CommitFailedException"'
s=$(req DELETE "$V1/namespaces/selftest/tables/staged")
s=$(req DELETE "$V1/namespaces/selftest")
check "drop namespace 204" [ "$s" = 204 ]

# --- views
s=$(req POST "$V1/namespaces/db/views" '{"name":"v_self","schema":{"type":"struct","schema-id":0,"fields":[]},"view-version":{"version-id":1,"timestamp-ms":1,"schema-id":0,"summary":{},"representations":[{"type":"sql","sql":"select 1","dialect":"spark"}],"default-namespace":["db"]},"properties":{}}')
check "create view" [ "$s" = 200 ]
s=$(req GET "$V1/namespaces/db/views")
check "list views" jqb '[.identifiers[].name] | index("v_self") != null'
s=$(req GET "$V1/namespaces/db/views/v_self")
check "load view" [ "$s" = 200 ] && jqb '.metadata["view-uuid"] != null'
s=$(req DELETE "$V1/namespaces/db/views/v_self")
check "drop view" [ "$s" = 204 ]

# --- files
s=$(req GET "$BASE/files/spark_bunnies/metadata/version-hint.text")
check "fixture file served" [ "$s" = 200 ] && [ "$(cat "$T/body")" = 5 ]
s=$(req GET "$BASE/files/s3/hyperparam-iceberg/spark/bunnies/metadata/version-hint.text" "" -H 'Range: bytes=0-0')
check "s3 path with Range 206" [ "$s" = 206 ]

# --- request log
curl -s "$BASE/_test/requests" >"$T/body"
check "request log records requests" jqb '[.requests[] | select(.method == "DELETE" and (.url | contains("/tables/t2")))] | length == 1'
check "request log has headers" jqb '.requests[0].headers.host != null'
check "request log has bodies" jqb '[.requests[] | select(.method == "POST" and (.url | endswith("/tables/rename")))][0].body | fromjson | .destination.name == "t2"'
check "request log has connection ids" jqb '[.requests[].conn] | all(type == "number")'
curl -s -X DELETE "$BASE/_test/requests" >/dev/null
curl -s "$BASE/_test/requests" >"$T/body"
check "request log cleared" jqb '.requests == []'

# --- faults
fault() { curl -s -X POST -H 'Content-Type: application/json' --data "$1" "$BASE/_test/fault" >/dev/null; }
fault '{"match":"/tables/bunnies","status":503,"count":1}'
s=$(req GET "$V1/namespaces/db/tables/bunnies")
check "fault status 503 with ErrorModel" [ "$s" = 503 ] && jqb '.error.code == 503 and .error.type == "SlowDownException"'
s=$(req GET "$V1/namespaces/db/tables/bunnies")
check "fault count used up" [ "$s" = 200 ]
fault '{"match":"/tables/athena","delay_ms":400,"count":1}'
t0=$(date +%s%N)
s=$(req GET "$V1/namespaces/db/tables/athena")
ms=$((($(date +%s%N) - t0) / 1000000))
check "fault delay ($ms ms)" [ "$s" = 200 ] && [ "$ms" -ge 380 ]
fault '{"match":"/tables/athena","reset":true,"count":1}'
s=$(req GET "$V1/namespaces/db/tables/athena")
check "fault reset: no answer" [ "$s" = 000 ]
fault '{"match":"/tables/athena","garbage":true,"count":1}'
curl -s -o "$T/body" "$V1/namespaces/db/tables/athena" 2>/dev/null
rc=$?
check "fault garbage: not HTTP (curl rc $rc)" [ $rc -ne 0 ]
fault '{"match":"","status":500}'
s=$(req GET "$V1/namespaces")
check "unlimited fault applies to everything" [ "$s" = 500 ] && jqb '.error.type == "InternalServerError"'
curl -s -X DELETE "$BASE/_test/fault" >/dev/null
s=$(req GET "$V1/namespaces")
check "faults cleared" [ "$s" = 200 ]

# --- keep-alive: two requests on one connection
n=$(curl -sv "$V1/namespaces" "$V1/namespaces" -o /dev/null -o /dev/null 2>&1 | grep -c 'Re-using existing connection')
check "keep-alive reuses the connection" [ "$n" -ge 1 ]

echo "$((checks - fails))/$checks checks passed"
[ $fails -eq 0 ]
