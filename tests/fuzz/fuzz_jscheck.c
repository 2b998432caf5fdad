/*
 * floe: fuzz_jscheck.c -- libFuzzer target for lib/jscheck.c: its
 * verdict on any bytes must be jansson's (except for numbers jansson
 * cannot hold, which are well-formed JSON all the same, and text with a
 * NUL byte: jansson ends its input there, floe does not).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "lib/jscheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *j;
	bool want, got;

	got = jscheck_valid((const char *)data, size, NULL);
	if (memchr(data, '\0', size) != NULL)
		return 0;
	j = json_loadb((const char *)data, size,
	    JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	want = j != NULL;
	json_decref(j);
	if (!want && (strstr(jerr.text, "too big") != NULL ||
			 strstr(jerr.text, "overflow") != NULL ||
			 strstr(jerr.text, "maximum parsing depth") != NULL))
		return 0;
	if (got != want)
		__builtin_trap();
	return 0;
}
