/*
 * floe: cred.h -- the credential floe presents to one catalog, as its
 * auth key says: nothing, token_file's bearer token, an access token an
 * OAuth2 or Google grant gives (kept fresh by a token holder, token.h),
 * or an AWS Signature Version 4. Owns the token holder or the signer and
 * its own copies of the secrets, wiped when it is freed. The data path
 * reads the token or signs from memory (no I/O); the control plane asks
 * for the headers of its own requests. main.c builds one per catalog.
 * Loop thread only.
 */
#ifndef FLOE_PROXY_CRED_H
#define FLOE_PROXY_CRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/conf.h"

struct event_base;
struct evbuffer;
struct fetch;
struct cred;
struct sigv4;
struct token;
typedef struct json_t json_t;

/* What a request to the catalog carries. */
enum cred_kind {
	CRED_NONE, /* nothing of floe's */
	CRED_BEARER, /* Authorization: Bearer, static or fetched */
	CRED_SIGV4, /* an AWS SigV4 signature */
};

/* Control-plane headers a credential adds at most. */
#define CRED_MAX_HDRS 4

/*
 * The credential of catalog T (its conf must be loaded), named NAME
 * ("warehouse") in messages; token holders fetch through F on BASE.
 * Secrets are read now. NULL with ERR. Nothing is fetched before
 * cred_start.
 */
struct cred *cred_new(struct event_base *, struct fetch *f,
    const struct conf_target *t, const char *name, char *err, size_t errlen);
/* Cancel its token fetch, wipe the secrets, free. NULL is fine. */
void cred_free(struct cred *);
/* A token came, or the token expired (oauth2, google). */
typedef void (*cred_changed_cb)(struct cred *, void *arg);
/* Call CB (or nothing, for NULL) with ARG when the token changes. */
void cred_on_changed(struct cred *, cred_changed_cb cb, void *arg);
/* Fetch the first token (oauth2, google); nothing for the other modes. */
void cred_start(struct cred *);
/*
 * Take OLD's token over (both oauth2 or google: token_adopt), so that a
 * reload that reads the secrets again keeps the token. Before cred_start.
 */
void cred_adopt(struct cred *, struct cred *old);

enum cred_kind cred_kind(const struct cred *);
enum conf_cred cred_mode(const struct cred *);
/*
 * Whether forwarded requests carry floe's credential rather than the
 * client's Authorization. A bearer token of floe's does not in [auth]
 * mode passthrough (the catalog judges each client; floe's token is for
 * its own calls); a SigV4 signature always does.
 */
bool cred_on_data(const struct cred *);
/* Say whether [auth] mode is passthrough (set at start and on reload). */
void cred_set_passthrough(struct cred *, bool);

/*
 * The bearer token now, NUL-terminated, or NULL when there is none (not
 * fetched yet, or expired). *GEN is its generation, for
 * cred_unauthorized. Borrowed until control returns to the loop.
 */
const char *cred_bearer(const struct cred *, uint64_t *gen);
/* Whether requests can carry the credential now (false: they get 503). */
bool cred_is_ready(const struct cred *);
/* No token yet, and the first token request is still on its way. */
bool cred_is_pending(const struct cred *);
/*
 * Why they cannot, for a 503: "the warehouse catalog's token endpoint
 * idp.example/oauth/token: HTTP 401: invalid_client". No secret.
 */
void cred_why(const struct cred *, char *buf, size_t len);
/* The catalog answered 401 to a request carrying token GEN. */
void cred_unauthorized(struct cred *, uint64_t gen);
/*
 * The bearer token's header line, "Authorization: Bearer ...\r\n" (its
 * length in *LEN, the token's generation in *GEN), made once per token;
 * NULL when there is none now. Borrowed until control returns to the loop.
 */
const char *cred_authz(struct cred *, size_t *len, uint64_t *gen);
/*
 * Sign the request whose request line and headers so far (Host
 * included, as cred_new's target says it) are in HEAD, with BODY (or
 * NULL), as it is sent: the method, path and query of the request line
 * after every rewrite, the host, the body's hash. The signature's header
 * lines are added to HEAD. 0, or -1 if it cannot be signed.
 */
int cred_sign(struct cred *, struct evbuffer *head, struct evbuffer *body);
/* The signer (sigv4), or NULL. */
struct sigv4 *cred_signer(const struct cred *);
/* The token holder (oauth2, google), or NULL. */
const struct token *cred_token(const struct cred *);

/*
 * The headers that carry the credential on a control-plane request:
 * METHOD URL (a URL into the catalog, as fetch sends it) with BODY of LEN
 * bytes (or NULL). Up to CRED_MAX_HDRS "Name: value" strings go into HDRS
 * (allocated: free them with cred_headers_clear, which wipes them); the
 * number, or -1 with WHY when there is no credential now.
 */
int cred_headers(struct cred *, const char *method, const char *url,
    const char *body, size_t len, char **hdrs, char *why, size_t whylen);
void cred_headers_clear(char **hdrs, int n);

/* For /status: {"mode", and the token's or the signer's state}. */
json_t *cred_status_json(const struct cred *);

#endif
