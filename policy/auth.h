/*
 * floe: auth.h -- client authentication: who is asking. Owns the loaded
 * verifier of one [auth] mode: the table of named token hashes (token),
 * the JWKS keys with the audience and issuer to expect (jwt), or nothing
 * (passthrough). Pure: callers read the files and pass the time; checking
 * a header never logs and never copies the secret anywhere but the hash.
 */
#ifndef FLOE_POLICY_AUTH_H
#define FLOE_POLICY_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum auth_mode {
	AUTH_NONE,
	AUTH_TOKEN, /* Bearer token, SHA-256 in a file of NAME HASH */
	AUTH_JWT, /* Bearer JWT (RS256, ES256, HS256), JWKS keys */
	AUTH_PASSTHROUGH, /* the client's token goes to the catalog */
};

/* Longest identity auth_check writes, with its NUL. */
#define AUTH_IDENT_MAX 129
/* Allowed clock skew for exp and nbf, seconds. */
#define AUTH_SKEW_S 60

struct auth;

/* "none", "token", "jwt", "passthrough" to a mode; -1 if unknown. */
int auth_mode_parse(const char *);
const char *auth_mode_name(enum auth_mode);

/*
 * Token table from the text of a token file: one "NAME SHA256-HEX" a line,
 * '#' comments and blank lines allowed. NULL with "line N: why" in ERR.
 */
struct auth *auth_tokens_parse(const char *text, size_t len, char *err,
    size_t errlen);
/*
 * JWT verifier from the text of a JWKS ({"keys":[...]}: RSA n/e, EC P-256
 * x/y, oct k). AUDIENCE and ISSUER may be NULL (not checked). NULL with
 * ERR.
 */
struct auth *auth_jwks_parse(const char *text, size_t len, const char *audience,
    const char *issuer, char *err, size_t errlen);
/* Passthrough: any Bearer token; the identity is a hash of it. */
struct auth *auth_passthrough_new(void);
/*
 * Load the verifier [auth] asks for: MODE with its TOKEN_FILE or
 * JWKS_FILE. NULL for AUTH_NONE (no error) or with ERR naming the file.
 */
struct auth *auth_load(enum auth_mode, const char *token_file,
    const char *jwks_file, const char *audience, const char *issuer, char *err,
    size_t errlen);
void auth_free(struct auth *);
enum auth_mode auth_mode(const struct auth *);
/* Number of tokens or keys loaded (for the start-up line). */
size_t auth_count(const struct auth *);

/*
 * Check the value of an Authorization header (HDR, LEN; NULL if absent)
 * at NOW (seconds since the epoch). 0 with the client's identity in IDENT
 * (printable, no spaces: the token's name, the JWT's sub, or "tok-" and 16
 * hex digits of the token's hash); -1 with a short reason in *WHY (a
 * static string that never holds any part of the credential).
 */
int auth_check(const struct auth *, const char *hdr, size_t len, int64_t now,
    char *ident, size_t identlen, const char **why);

/* SHA-256 of BUF as 64 lowercase hex digits into OUT[65]. */
void auth_sha256_hex(const void *buf, size_t len, char out[65]);

#endif
