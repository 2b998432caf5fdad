/*
 * floe: fuzz_auth.c -- libFuzzer target for client authentication input:
 * the Authorization header against a JWKS verifier, a token table and
 * passthrough, and the token file and JWKS parsers themselves. The input
 * is HEADER \0 FILE-TEXT; a seed holds a JWT signed with the test key.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "policy/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct auth *jwks, *tokens, *pass;

/* Verifiers built once: an HMAC key and one named token. */
static void
fuzz_init(void)
{
	static const char jw[] =
	    "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"h1\",\"k\":"
	    "\"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYh\"}]}";
	static const char tk[] = "spark ba7816bf8f01cfea414140de5dae2223b0036"
				 "1a396177a9cb410ff61f20015ad\n";
	char err[256];

	jwks = auth_jwks_parse(jw, sizeof(jw) - 1, "floe", "https://idp", err,
	    sizeof(err));
	tokens = auth_tokens_parse(tk, sizeof(tk) - 1, err, sizeof(err));
	pass = auth_passthrough_new();
	if (jwks == NULL || tokens == NULL)
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t hlen = nul != NULL ? (size_t)(nul - data) : size;
	char ident[AUTH_IDENT_MAX], err[256];
	const char *why;
	struct auth *a;
	size_t i;

	if (jwks == NULL)
		fuzz_init();
	if (auth_check(jwks, (const char *)data, hlen, 1800000000, ident,
		sizeof(ident), &why) == 0 &&
	    ident[0] == '\0')
		__builtin_trap();
	(void)auth_check(tokens, (const char *)data, hlen, 0, ident,
	    sizeof(ident), &why);
	if (auth_check(pass, (const char *)data, hlen, 0, ident, sizeof(ident),
		&why) == 0)
		for (i = 0; ident[i] != '\0'; i++)
			if (ident[i] <= ' ')
				__builtin_trap();
	if (nul != NULL) {
		a = auth_jwks_parse((const char *)nul + 1, size - hlen - 1,
		    "floe", NULL, err, sizeof(err));
		auth_free(a);
		a = auth_tokens_parse((const char *)nul + 1, size - hlen - 1,
		    err, sizeof(err));
		auth_free(a);
	}
	return 0;
}
