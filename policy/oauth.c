/*
 * floe: oauth.c -- token requests and answers for the OAuth2 grants floe
 * uses. Client credentials go as form fields by default: Iceberg's own
 * REST clients send them that way, so every Iceberg catalog's token
 * endpoint takes them; HTTP Basic (which RFC 6749 2.3.1 says servers must
 * take) is there for identity providers set up for it. A Google service
 * account signs an RS256 assertion (iss = its email, aud = the token URI,
 * scope, iat, exp = iat + 1 h) with its key, through OpenSSL.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "lib/compat.h"
#include "lib/secret.h"
#include "lib/xmalloc.h"
#include "policy/oauth.h"

#define OAUTH_ERR_WORDS 200 /* bytes of an endpoint's error text kept */

enum oauth_grant {
	OAUTH_CLIENT_CREDENTIALS,
	OAUTH_JWT_BEARER,
};

struct oauth {
	enum oauth_grant grant;
	char *uri;
	char *endpoint; /* host[:port]/path */
	char *client; /* client id, or the service account's email */
	char *secret; /* client credentials */
	char *scope; /* or NULL */
	char *audience; /* or NULL */
	enum oauth_client_auth auth;
	EVP_PKEY *key; /* JWT bearer */
	char *kid; /* or NULL */
};

/* A growing string. */
struct oauth_buf {
	char *p;
	size_t len, cap;
};

static void oauth_put(struct oauth_buf *, const char *, size_t);
static void oauth_put_form(struct oauth_buf *, const char *);
static char *oauth_b64(const unsigned char *, size_t, bool);
static int oauth_endpoint_of(const char *, char **, char *, size_t);

/* Append N bytes of S. */
static void
oauth_put(struct oauth_buf *b, const char *s, size_t n)
{
	size_t cap;
	char *p;

	if (b->len + n + 1 > b->cap) {
		cap = b->cap != 0 ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		/* Not realloc: the old buffer may hold a secret. */
		p = xmalloc(cap);
		if (b->p != NULL) {
			memcpy(p, b->p, b->len);
			explicit_bzero(b->p, b->cap);
			free(b->p);
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* RFC 3986's unreserved characters, in ASCII whatever the locale. */
static bool
oauth_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/*
 * Append S form-urlencoded (application/x-www-form-urlencoded): letters,
 * digits and "-._~" as they are, a space as '+', any other byte as %XX.
 */
static void
oauth_put_form(struct oauth_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char pct[3] = { '%', 0, 0 };
	unsigned char c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if (oauth_unreserved(c))
			oauth_put(b, s, 1);
		else if (c == ' ')
			oauth_put(b, "+", 1);
		else {
			pct[1] = hex[c >> 4];
			pct[2] = hex[c & 15];
			oauth_put(b, pct, 3);
		}
	}
}

/* Base64 of P (URL-safe without padding if URL). Caller frees. */
static char *
oauth_b64(const unsigned char *p, size_t n, bool url)
{
	char *out = xmalloc(4 * ((n + 2) / 3) + 1), *c;
	int len = EVP_EncodeBlock((unsigned char *)out, p, (int)n);

	out[len] = '\0';
	if (url) {
		for (c = out; *c != '\0'; c++) {
			if (*c == '+')
				*c = '-';
			else if (*c == '/')
				*c = '_';
			else if (*c == '=') {
				*c = '\0';
				break;
			}
		}
	}
	return out;
}

/*
 * "host[:port]/path" of an http(s) URI into *OUT (no scheme, user info,
 * query or fragment: what messages may show). -1 with ERR otherwise.
 */
static int
oauth_endpoint_of(const char *uri, char **out, char *err, size_t errlen)
{
	const char *h, *e, *at, *q;
	size_t hl;

	if (strncasecmp(uri, "https://", 8) == 0)
		h = uri + 8;
	else if (strncasecmp(uri, "http://", 7) == 0)
		h = uri + 7;
	else {
		snprintf(err, errlen, "token URI \"%.200s\" is not http(s)://",
		    uri);
		return -1;
	}
	for (e = uri; *e != '\0'; e++)
		if ((unsigned char)*e <= ' ' || (unsigned char)*e >= 0x7f) {
			snprintf(err, errlen,
			    "token URI has blanks or control characters");
			return -1;
		}
	hl = strcspn(h, "/?#");
	/* user:password@ is never shown. */
	if ((at = memchr(h, '@', hl)) != NULL) {
		hl -= (size_t)(at + 1 - h);
		h = at + 1;
	}
	if (hl == 0) {
		snprintf(err, errlen, "token URI \"%.200s\" has no host", uri);
		return -1;
	}
	q = h + hl + strcspn(h + hl, "?#");
	if (h[hl] == '/')
		*out = xasprintf("%.*s%.*s", (int)hl, h, (int)(q - h - hl),
		    h + hl);
	else
		*out = xasprintf("%.*s/", (int)hl, h);
	return 0;
}

/* A grant with URI's endpoint, or NULL with ERR. */
static struct oauth *
oauth_new(enum oauth_grant grant, const char *uri, char *err, size_t errlen)
{
	struct oauth *o;
	char *endpoint;

	if (oauth_endpoint_of(uri, &endpoint, err, errlen) == -1)
		return NULL;
	o = xcalloc(1, sizeof(*o));
	o->grant = grant;
	o->uri = xstrdup(uri);
	o->endpoint = endpoint;
	return o;
}

struct oauth *
oauth_client_new(const char *token_uri, const char *client_id,
    const char *secret, size_t secret_len, const char *scope,
    const char *audience, enum oauth_client_auth auth, char *err, size_t errlen)
{
	struct oauth *o;

	if (client_id == NULL || *client_id == '\0') {
		snprintf(err, errlen, "no client_id");
		return NULL;
	}
	while (secret_len > 0 && isspace((unsigned char)*secret)) {
		secret++;
		secret_len--;
	}
	while (secret_len > 0 && isspace((unsigned char)secret[secret_len - 1]))
		secret_len--;
	if (secret_len == 0 || memchr(secret, '\0', secret_len) != NULL ||
	    memchr(secret, '\n', secret_len) != NULL) {
		snprintf(err, errlen, "the client secret is %s",
		    secret_len == 0 ? "empty" : "more than one line");
		return NULL;
	}
	if ((o = oauth_new(OAUTH_CLIENT_CREDENTIALS, token_uri, err, errlen)) ==
	    NULL)
		return NULL;
	o->client = xstrdup(client_id);
	o->secret = xstrndup(secret, secret_len);
	o->scope = scope != NULL && *scope != '\0' ? xstrdup(scope) : NULL;
	o->audience =
	    audience != NULL && *audience != '\0' ? xstrdup(audience) : NULL;
	o->auth = auth;
	return o;
}

struct oauth *
oauth_client_load(const char *token_uri, const char *client_id,
    const char *secret_file, const char *scope, const char *audience,
    enum oauth_client_auth auth, char *err, size_t errlen)
{
	struct oauth *o;
	char *text, why[256];
	size_t len;

	if ((text = secret_read(secret_file, &len, err, errlen)) == NULL)
		return NULL;
	o = oauth_client_new(token_uri, client_id, text, len, scope, audience,
	    auth, why, sizeof(why));
	secret_free(text, len);
	if (o == NULL)
		snprintf(err, errlen, "%s: %s", secret_file, why);
	return o;
}

/* The string member NAME of J, or NULL. */
static const char *
oauth_str(json_t *j, const char *name)
{
	return json_string_value(json_object_get(j, name));
}

struct oauth *
oauth_google_new(const char *key_json, size_t len, const char *scope, char *err,
    size_t errlen)
{
	struct oauth *o = NULL;
	json_error_t jerr;
	const char *type, *email, *pem, *uri, *kid;
	EVP_PKEY *key = NULL;
	json_t *j;
	BIO *bio;

	if ((j = json_loadb(key_json, len, 0, &jerr)) == NULL ||
	    !json_is_object(j)) {
		/* jansson's text may quote the key: say only where. */
		snprintf(err, errlen,
		    "not a service-account key (JSON): line %d", jerr.line);
		json_decref(j);
		return NULL;
	}
	type = oauth_str(j, "type");
	email = oauth_str(j, "client_email");
	pem = oauth_str(j, "private_key");
	uri = oauth_str(j, "token_uri");
	kid = oauth_str(j, "private_key_id");
	if (type != NULL && strcmp(type, "service_account") != 0) {
		snprintf(err, errlen,
		    "type is \"%.60s\", not \"service_account\"", type);
		goto fail;
	}
	if (email == NULL || *email == '\0' || pem == NULL) {
		snprintf(err, errlen, "no %s",
		    email == NULL || *email == '\0' ? "client_email" :
						      "private_key");
		goto fail;
	}
	if ((bio = BIO_new_mem_buf(pem, -1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (key == NULL || !EVP_PKEY_is_a(key, "RSA")) {
		snprintf(err, errlen, "private_key is not an RSA key in PEM");
		goto fail;
	}
	if ((o = oauth_new(OAUTH_JWT_BEARER,
		 uri != NULL ? uri : OAUTH_GOOGLE_TOKEN_URI, err, errlen)) ==
	    NULL)
		goto fail;
	o->client = xstrdup(email);
	o->key = key;
	key = NULL;
	o->kid = kid != NULL && *kid != '\0' ? xstrdup(kid) : NULL;
	o->scope = xstrdup(
	    scope != NULL && *scope != '\0' ? scope : OAUTH_GOOGLE_SCOPE);
fail:
	EVP_PKEY_free(key);
	/* The key's PEM lives in J: wipe it before jansson frees it. */
	if (pem != NULL)
		OPENSSL_cleanse((char *)(uintptr_t)pem, strlen(pem));
	json_decref(j);
	return o;
}

struct oauth *
oauth_google_load(const char *key_file, const char *scope, char *err,
    size_t errlen)
{
	struct oauth *o;
	char *text, why[256];
	size_t len;

	if ((text = secret_read(key_file, &len, err, errlen)) == NULL)
		return NULL;
	o = oauth_google_new(text, len, scope, why, sizeof(why));
	secret_free(text, len);
	if (o == NULL)
		snprintf(err, errlen, "%s: %s", key_file, why);
	return o;
}

void
oauth_free(struct oauth *o)
{
	if (o == NULL)
		return;
	secret_free_str(o->secret);
	EVP_PKEY_free(o->key);
	free(o->uri);
	free(o->endpoint);
	free(o->client);
	free(o->scope);
	free(o->audience);
	free(o->kid);
	free(o);
}

const char *
oauth_uri(const struct oauth *o)
{
	return o->uri;
}

const char *
oauth_endpoint(const struct oauth *o)
{
	return o->endpoint;
}

const char *
oauth_grant_name(const struct oauth *o)
{
	return o->grant == OAUTH_JWT_BEARER ? "jwt-bearer" :
					      "client_credentials";
}

const char *
oauth_client(const struct oauth *o)
{
	return o->client;
}

/* The signed RS256 assertion of O at NOW. Caller frees. NULL on failure. */
static char *
oauth_assertion(const struct oauth *o, int64_t now)
{
	json_t *hdr, *claims;
	char *h = NULL, *c = NULL, *hb, *cb, *input, *out = NULL;
	unsigned char *sig = NULL;
	size_t slen = 0;
	EVP_MD_CTX *ctx;

	hdr = json_pack("{ss ss}", "alg", "RS256", "typ", "JWT");
	if (o->kid != NULL)
		json_object_set_new(hdr, "kid", json_string(o->kid));
	claims = json_pack("{ss ss ss sI sI}", "iss", o->client, "scope",
	    o->scope, "aud", o->uri, "iat", (json_int_t)now, "exp",
	    (json_int_t)(now + OAUTH_ASSERTION_S));
	if (hdr == NULL || claims == NULL ||
	    (h = json_dumps(hdr, JSON_COMPACT)) == NULL ||
	    (c = json_dumps(claims, JSON_COMPACT)) == NULL) {
		json_decref(hdr);
		json_decref(claims);
		free(h);
		return NULL;
	}
	json_decref(hdr);
	json_decref(claims);
	hb = oauth_b64((unsigned char *)h, strlen(h), true);
	cb = oauth_b64((unsigned char *)c, strlen(c), true);
	free(h);
	free(c);
	input = xasprintf("%s.%s", hb, cb);
	free(hb);
	free(cb);
	if ((ctx = EVP_MD_CTX_new()) != NULL &&
	    EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, o->key) == 1 &&
	    EVP_DigestSign(ctx, NULL, &slen, (unsigned char *)input,
		strlen(input)) == 1) {
		sig = xmalloc(slen);
		if (EVP_DigestSign(ctx, sig, &slen, (unsigned char *)input,
			strlen(input)) == 1) {
			cb = oauth_b64(sig, slen, true);
			out = xasprintf("%s.%s", input, cb);
			free(cb);
		}
		free(sig);
	}
	EVP_MD_CTX_free(ctx);
	free(input);
	return out;
}

int
oauth_request(const struct oauth *o, int64_t now, struct oauth_req *r,
    char *err, size_t errlen)
{
	struct oauth_buf b = { 0 }, cred = { 0 };
	char *assertion, *b64;
	int h = 0;

	memset(r, 0, sizeof(*r));
	r->url = o->uri;
	r->headers[h++] =
	    xstrdup("Content-Type: application/x-www-form-urlencoded");
	r->headers[h++] = xstrdup("Accept: application/json");
	if (o->grant == OAUTH_JWT_BEARER) {
		if ((assertion = oauth_assertion(o, now)) == NULL) {
			snprintf(err, errlen, "cannot sign the assertion");
			oauth_req_clear(r);
			return -1;
		}
		oauth_put(&b, "grant_type=", 11);
		oauth_put_form(&b,
		    "urn:ietf:params:oauth:grant-type:jwt-bearer");
		oauth_put(&b, "&assertion=", 11);
		oauth_put(&b, assertion, strlen(assertion));
		explicit_bzero(assertion, strlen(assertion));
		free(assertion);
	} else {
		oauth_put(&b, "grant_type=client_credentials", 29);
		if (o->auth == OAUTH_AUTH_BASIC) {
			/* RFC 6749 2.3.1: each part form-encoded first. */
			oauth_put_form(&cred, o->client);
			oauth_put(&cred, ":", 1);
			oauth_put_form(&cred, o->secret);
			b64 =
			    oauth_b64((unsigned char *)cred.p, cred.len, false);
			r->headers[h++] =
			    xasprintf("Authorization: Basic %s", b64);
			explicit_bzero(b64, strlen(b64));
			free(b64);
			explicit_bzero(cred.p, cred.cap);
			free(cred.p);
		} else {
			oauth_put(&b, "&client_id=", 11);
			oauth_put_form(&b, o->client);
			oauth_put(&b, "&client_secret=", 15);
			oauth_put_form(&b, o->secret);
		}
		if (o->scope != NULL) {
			oauth_put(&b, "&scope=", 7);
			oauth_put_form(&b, o->scope);
		}
		if (o->audience != NULL) {
			oauth_put(&b, "&audience=", 10);
			oauth_put_form(&b, o->audience);
		}
	}
	r->headers[h] = NULL;
	r->body = b.p;
	r->body_len = b.len;
	return 0;
}

void
oauth_req_clear(struct oauth_req *r)
{
	size_t i;

	if (r->body != NULL)
		explicit_bzero(r->body, r->body_len);
	free(r->body);
	for (i = 0; i < nitems(r->headers) && r->headers[i] != NULL; i++) {
		explicit_bzero(r->headers[i], strlen(r->headers[i]));
		free(r->headers[i]);
	}
	memset(r, 0, sizeof(*r));
}

void
oauth_token_clear(struct oauth_token *t)
{
	secret_free_str(t->access_token);
	memset(t, 0, sizeof(*t));
}

/*
 * Copy S into OUT as printable ASCII, at most OAUTH_ERR_WORDS bytes, with
 * the client secret (were an endpoint to echo it) blanked out.
 */
static void
oauth_words(const struct oauth *o, const char *s, char *out, size_t len)
{
	size_t n = 0, sl = o->secret != NULL ? strlen(o->secret) : 0;

	while (*s != '\0' && n + 1 < len && n < OAUTH_ERR_WORDS) {
		if (sl > 0 && strncmp(s, o->secret, sl) == 0) {
			s += sl;
			out[n++] = '*';
			continue;
		}
		out[n++] =
		    (unsigned char)*s >= ' ' && (unsigned char)*s < 0x7f ? *s :
									   '?';
		s++;
	}
	out[n] = '\0';
}

/* A token usable in a header: RFC 6750's b64token characters. */
static bool
oauth_token_ok(const char *t)
{
	const char *p;

	if (*t == '\0')
		return false;
	for (p = t; *p != '\0'; p++)
		if (!oauth_unreserved((unsigned char)*p) &&
		    strchr("+/=", *p) == NULL)
			return false;
	return true;
}

int
oauth_response(const struct oauth *o, int status, const char *body, size_t len,
    struct oauth_token *tok, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *j, *v;
	const char *e, *d, *type, *at;
	char ew[OAUTH_ERR_WORDS + 1], dw[OAUTH_ERR_WORDS + 1];
	int64_t exp = 0;
	int rc = -1;

	memset(tok, 0, sizeof(*tok));
	j = json_loadb(body, len, 0, &jerr);
	if (status != 200) {
		e = j != NULL ? oauth_str(j, "error") : NULL;
		d = j != NULL ? oauth_str(j, "error_description") : NULL;
		if (e != NULL) {
			oauth_words(o, e, ew, sizeof(ew));
			oauth_words(o, d != NULL ? d : "", dw, sizeof(dw));
			snprintf(err, errlen, "HTTP %d: %s%s%s", status, ew,
			    d != NULL ? ": " : "", dw);
		} else
			snprintf(err, errlen, "HTTP %d", status);
		goto out;
	}
	if (j == NULL || !json_is_object(j)) {
		snprintf(err, errlen, "the answer is not a JSON object");
		goto out;
	}
	if ((at = oauth_str(j, "access_token")) == NULL ||
	    !oauth_token_ok(at)) {
		snprintf(err, errlen, "%s access_token in the answer",
		    at == NULL ? "no" : "a malformed");
		goto out;
	}
	if ((type = oauth_str(j, "token_type")) != NULL &&
	    strcasecmp(type, "bearer") != 0) {
		oauth_words(o, type, ew, sizeof(ew));
		snprintf(err, errlen, "token_type \"%s\" is not bearer", ew);
		goto out;
	}
	v = json_object_get(j, "expires_in");
	if (json_is_integer(v))
		exp = json_integer_value(v);
	else if (json_is_string(v) && *json_string_value(v) != '\0') {
		/* Some endpoints send it as a string. */
		char *end;

		exp = strtoll(json_string_value(v), &end, 10);
		if (*end != '\0')
			exp = -1;
	} else if (v != NULL && !json_is_null(v))
		exp = -1;
	if (exp < 0 || (v != NULL && !json_is_null(v) && exp == 0)) {
		snprintf(err, errlen, "expires_in is not a positive number");
		goto out;
	}
	tok->expires_known = exp > 0;
	tok->expires_in = exp > 0 ? exp : OAUTH_DEFAULT_EXPIRES_S;
	tok->access_token = xstrdup(at);
	rc = 0;
out:
	if (j != NULL) {
		/* Wipe the token in jansson's copy before it is freed. */
		if ((at = oauth_str(j, "access_token")) != NULL)
			OPENSSL_cleanse((char *)(uintptr_t)at, strlen(at));
		json_decref(j);
	}
	return rc;
}
