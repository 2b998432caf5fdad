#!/bin/bash
# Integration 58: the lakehouse cannot be reached at all. The warehouse's
# tables are served; what needs both catalogs (a merged listing: a
# partial one could make a job create a table that exists; a namespace
# the warehouse lacks) is refused with a 503 ServiceUnavailableException
# that names the side and says when to try again (Retry-After), until
# the lakehouse answers.
. "$(dirname "$0")/lib.sh"
lib_init 58
catalog warehouse
LH_URI=http://127.0.0.1:$(free_port) # nothing listens there
write_conf
start_floe noready

get /v1/routed/namespaces/db/tables/bunnies
expect_status "a warehouse table loads" 200
expect_header "... from the warehouse" X-Floe-Target warehouse
for p in /v1/routed/namespaces /v1/routed/namespaces/db/tables \
	/v1/routed/namespaces/db/views; do
	get "$p"
	expect_error "GET $p: 503" 503 ServiceUnavailableException \
		"lakehouse catalog"
	ra=$(hdr Retry-After)
	if [[ $ra =~ ^[0-9]+$ ]] && [ "$ra" -ge 1 ] && [ "$ra" -le 300 ]; then
		ok "GET $p: Retry-After $ra"
	else
		bad "GET $p: Retry-After \"$ra\""
	fi
done
# A namespace the warehouse has is served; one it lacks may be the
# lakehouse's: floe cannot say it does not exist.
get /v1/routed/namespaces/db
expect_status "a namespace the warehouse has: 200" 200
get /v1/routed/namespaces/lh_only
expect_error "a namespace the warehouse lacks: 503" 503 \
	ServiceUnavailableException "lakehouse catalog"
[[ $(hdr Retry-After) =~ ^[0-9]+$ ]] && ok "... with Retry-After" ||
	bad "no Retry-After: $(cat "$T/h")"
get /v1/warehouse/namespaces
expect_status "the pinned warehouse prefix still lists" 200
finish
