/*
 * floe: oauth.h -- the OAuth2 grants floe uses to get a catalog's access
 * token: client credentials (RFC 6749 4.4; Polaris, Open Catalog,
 * Lakekeeper, Gravitino, Unity, or any IdP) and a Google service account's
 * JWT-bearer grant (RFC 7523; BigLake). Owns the grant's endpoint, client
 * id and secret or private key. Pure: builds the token request and reads
 * the answer; the caller sends it and passes the time. Never logs; no
 * error message holds the secret, the key, the assertion or a token.
 */
#ifndef FLOE_POLICY_OAUTH_H
#define FLOE_POLICY_OAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Lifetime assumed when a token answer has no expires_in, seconds. */
#define OAUTH_DEFAULT_EXPIRES_S 3600
/* Lifetime of a JWT-bearer assertion, seconds (Google's maximum). */
#define OAUTH_ASSERTION_S 3600
#define OAUTH_GOOGLE_SCOPE "https://www.googleapis.com/auth/cloud-platform"
#define OAUTH_GOOGLE_TOKEN_URI "https://oauth2.googleapis.com/token"

/* How a client id and secret go to the token endpoint (RFC 6749 2.3.1). */
enum oauth_client_auth {
	OAUTH_AUTH_FORM, /* client_id and client_secret form fields */
	OAUTH_AUTH_BASIC, /* Authorization: Basic */
};

struct oauth;

/* One token request: POST BODY to URL with HEADERS. */
struct oauth_req {
	const char *url; /* the grant's token URI; borrowed */
	char *body; /* holds the secret or the assertion */
	size_t body_len;
	char *headers[4]; /* "Name: value", NULL-terminated */
};

/* A token endpoint's answer, once accepted. */
struct oauth_token {
	char *access_token; /* a secret */
	int64_t expires_in; /* seconds */
	bool expires_known; /* false: expires_in is the default */
};

/*
 * The client-credentials grant at TOKEN_URI (http or https) for CLIENT_ID
 * with SECRET (copied; trimmed of surrounding blanks), SCOPE and AUDIENCE
 * (each NULL for none). NULL with ERR.
 */
struct oauth *oauth_client_new(const char *token_uri, const char *client_id,
    const char *secret, size_t secret_len, const char *scope,
    const char *audience, enum oauth_client_auth, char *err, size_t errlen);
/*
 * The same with the secret read from SECRET_FILE, refused if its group or
 * others may read it; ERR names the file.
 */
struct oauth *oauth_client_load(const char *token_uri, const char *client_id,
    const char *secret_file, const char *scope, const char *audience,
    enum oauth_client_auth, char *err, size_t errlen);
/*
 * The JWT-bearer grant of a Google service-account key (its JSON text:
 * client_email, an RSA private_key in PEM, private_key_id, token_uri)
 * for SCOPE (NULL: cloud-platform). NULL with ERR.
 */
struct oauth *oauth_google_new(const char *key_json, size_t len,
    const char *scope, char *err, size_t errlen);
/* The same from KEY_FILE, refused if its group or others may read it. */
struct oauth *oauth_google_load(const char *key_file, const char *scope,
    char *err, size_t errlen);
/* Wipe the secret or key and free. NULL is fine. */
void oauth_free(struct oauth *);

/* The token URI, and "host[:port]/path" of it for messages. */
const char *oauth_uri(const struct oauth *);
const char *oauth_endpoint(const struct oauth *);
/* "client_credentials" or "jwt-bearer", and the client id or email. */
const char *oauth_grant_name(const struct oauth *);
const char *oauth_client(const struct oauth *);

/*
 * The token request at NOW (seconds since the epoch: the assertion's
 * iat). 0, or -1 with ERR if the assertion cannot be signed. Clear it
 * with oauth_req_clear, which wipes the body.
 */
int oauth_request(const struct oauth *, int64_t now, struct oauth_req *,
    char *err, size_t errlen);
void oauth_req_clear(struct oauth_req *);

/*
 * Read the endpoint's answer (HTTP STATUS, BODY). 0 with TOK filled, or
 * -1 with ERR: "HTTP 401: invalid_client: description", "no access_token
 * in the answer", ... (printable, at most about 200 bytes of the
 * endpoint's own words, never the secret).
 */
int oauth_response(const struct oauth *, int status, const char *body,
    size_t len, struct oauth_token *tok, char *err, size_t errlen);
/* Wipe and free the access token. */
void oauth_token_clear(struct oauth_token *);

#endif
