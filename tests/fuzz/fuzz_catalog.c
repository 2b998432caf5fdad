/*
 * floe: fuzz_catalog.c -- libFuzzer target for what floe does with catalog
 * answers: a /v1/config answer (catalog_update) and a LoadTable answer
 * rewritten with that catalog's config merged in and its URLs pointed
 * back at floe (catalog_rewrite). The input is CONFIG \0 BODY. A body
 * that is JSON must come out as JSON (an invalid one may pass as it is).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t clen = nul != NULL ? (size_t)(nul - data) : size;
	const char *body = nul != NULL ? (const char *)nul + 1 : "";
	size_t blen = nul != NULL ? size - clen - 1 : 0, outlen = 0;
	struct catalog *c = catalog_new();
	char err[256], *out;
	json_t *j;

	bool valid;

	(void)catalog_update(c, (const char *)data, clen, 1, err, sizeof(err));
	/* Garbage in is passed on as it came; JSON in must stay JSON. */
	j = json_loadb(body, blen, 0, NULL);
	valid = j != NULL;
	json_decref(j);
	out = catalog_rewrite(c, true, body, blen, "http://up:9001/base",
	    "http://floe:8181", "warehouse", &outlen);
	if (out != NULL) {
		j = json_loadb(out, outlen, 0, NULL);
		if (j == NULL && valid)
			__builtin_trap();
		json_decref(j);
		free(out);
	}
	out = catalog_rewrite(c, false, body, blen, "https://up", "http://floe",
	    "lakehouse", &outlen);
	free(out);
	catalog_free(c);
	return 0;
}
