/*
 * floe: fuzz_object.c -- libFuzzer target for the object grammar that
 * floectl and the admin API take ("db.orders", "db.*", "my.db%1Forders"):
 * the input is the text. Every text that parses must format back to a
 * text that parses to the same key, and every stored key must too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "routing/route.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Format OBJ and parse it again: the same key, or a trap. */
static void
roundtrip(const struct route_obj *obj)
{
	char text[STORE_KEY_MAX * 3 + 8], err[256];
	struct route_obj back;

	route_obj_format(obj, text, sizeof(text));
	if (route_obj_parse(text, &back, err, sizeof(err)) == -1)
		__builtin_trap();
	if (back.len != obj->len || back.rule != obj->rule ||
	    memcmp(back.key, obj->key, obj->len) != 0)
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct route_obj obj;
	char *text, err[256];

	text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	if (route_obj_parse(text, &obj, err, sizeof(err)) == 0)
		roundtrip(&obj);
	else if (strnlen(err, sizeof(err)) == 0)
		__builtin_trap();
	free(text);
	if (route_obj_from_key(data, size, &obj) == 0)
		roundtrip(&obj);
	return 0;
}
