/*
 * floe: fuzz_rest.c -- libFuzzer target for the Iceberg REST path grammar:
 * the first byte picks the method and the namespace separator, the rest is
 * the request-target. Every span it returns must lie inside the target.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/rest.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A span inside a target of LEN bytes. */
static void
check_span(struct rest_span s, size_t len)
{
	if (s.len > 0 && (s.off > len || s.len > len - s.off))
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const seps[] = { NULL, ".", "::", "\x1f" };
	struct rest_req r;
	char *target, buf[256];
	int rc;

	if (size < 1)
		return 0;
	target = malloc(size);
	memcpy(target, data + 1, size - 1);
	target[size - 1] = '\0';
	memset(&r, 0, sizeof(r));
	rc = rest_parse((enum rest_method)(data[0] % 6), target, size - 1,
	    seps[(data[0] >> 3) & 3], &r);
	if (rc == REST_OK) {
		check_span(r.prefix, size - 1);
		check_span(r.rest, size - 1);
		check_span(r.query, size - 1);
		check_span(r.ns_raw, size - 1);
		check_span(r.table_raw, size - 1);
		check_span(r.plan_id, size - 1);
		(void)rest_op_name(r.op);
		(void)rest_op_endpoint(r.op);
		if (r.query.len > 0)
			(void)rest_query_get(target + r.query.off, r.query.len,
			    "pageToken", buf, sizeof(buf));
	}
	free(target);
	return 0;
}
