/*
 * floe: auth.c -- client authentication for the REST listener: named token
 * hashes compared in constant time, JWTs verified with OpenSSL against JWKS
 * keys (RS256, ES256, HS256; exp, nbf, aud, iss), and passthrough. A JWT's
 * alg must match its key's type, so a public RSA key can never be used as
 * an HMAC secret; "none" and unknown algorithms are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/sha.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/auth.h"

#define AUTH_NAME_MAX 64
#define AUTH_JWT_MAX 16384
#define AUTH_FILE_MAX (4 << 20)

struct auth_token {
	char name[AUTH_NAME_MAX + 1];
	unsigned char hash[SHA256_DIGEST_LENGTH];
};

enum auth_kty {
	AUTH_KTY_RSA,
	AUTH_KTY_EC,
	AUTH_KTY_OCT,
};

struct auth_key {
	enum auth_kty kty;
	char *kid; /* or NULL */
	char *alg; /* or NULL: any alg of its type */
	EVP_PKEY *pkey; /* RSA and EC */
	unsigned char *secret; /* oct */
	size_t secret_len;
};

struct auth {
	enum auth_mode mode;
	struct auth_token *tokens;
	size_t ntokens;
	struct auth_key *keys;
	size_t nkeys;
	char *audience;
	char *issuer;
};

static const char *const auth_mode_names[] = {
	[AUTH_NONE] = "none",
	[AUTH_TOKEN] = "token",
	[AUTH_JWT] = "jwt",
	[AUTH_PASSTHROUGH] = "passthrough",
};

int
auth_mode_parse(const char *s)
{
	size_t i;

	for (i = 0; i < nitems(auth_mode_names); i++)
		if (strcmp(s, auth_mode_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *
auth_mode_name(enum auth_mode m)
{
	return (size_t)m < nitems(auth_mode_names) ? auth_mode_names[m] : "?";
}

void
auth_sha256_hex(const void *buf, size_t len, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	size_t i;

	SHA256(buf, len, md);
	for (i = 0; i < sizeof(md); i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	OPENSSL_cleanse(md, sizeof(md));
}

static struct auth *
auth_new(enum auth_mode mode)
{
	struct auth *a;

	a = xcalloc(1, sizeof(*a));
	a->mode = mode;
	return a;
}

struct auth *
auth_passthrough_new(void)
{
	return auth_new(AUTH_PASSTHROUGH);
}

/* A token name: letters, digits and ._@- (it goes in the access log). */
static bool
auth_name_is_valid(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > AUTH_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
			(s[i] >= 'A' && s[i] <= 'Z') ||
			(s[i] >= '0' && s[i] <= '9') ||
			strchr("._@-", s[i]) != NULL) ||
		    s[i] == '\0')
			return false;
	return true;
}

/* Parse one "NAME HEX" line (no newline) into T. */
static int
auth_token_line(const char *s, size_t n, struct auth_token *t, const char **why)
{
	size_t i = 0, ns, ne, hs;
	int hi, lo, k;

	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	ns = i;
	while (i < n && s[i] != ' ' && s[i] != '\t')
		i++;
	ne = i;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	hs = i;
	while (
	    n > hs && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	if (!auth_name_is_valid(s + ns, ne - ns)) {
		*why = "the name must be 1-64 letters, digits or ._@-";
		return -1;
	}
	if (n - hs != 2 * SHA256_DIGEST_LENGTH) {
		*why = "the hash must be 64 hex digits (SHA-256 of the token)";
		return -1;
	}
	for (k = 0; k < SHA256_DIGEST_LENGTH; k++) {
		hi = units_hexval(s[hs + 2 * k]);
		lo = units_hexval(s[hs + 2 * k + 1]);
		if (hi < 0 || lo < 0) {
			*why = "the hash must be 64 hex digits (SHA-256 of "
			       "the token)";
			return -1;
		}
		t->hash[k] = (unsigned char)(hi << 4 | lo);
	}
	memcpy(t->name, s + ns, ne - ns);
	t->name[ne - ns] = '\0';
	return 0;
}

struct auth *
auth_tokens_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct auth *a = auth_new(AUTH_TOKEN);
	const char *p = text, *end = text + len, *nl, *why;
	struct auth_token t;
	size_t i, cap = 0, lineno = 0, j;

	while (p < end) {
		lineno++;
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		for (j = 0; p + j < nl &&
		     (p[j] == ' ' || p[j] == '\t' || p[j] == '\r');
		     j++)
			;
		if (p + j == nl || p[j] == '#') {
			p = nl + 1;
			continue;
		}
		if (auth_token_line(p, nl - p, &t, &why) == -1) {
			snprintf(err, errlen, "line %zu: %s", lineno, why);
			goto fail;
		}
		for (i = 0; i < a->ntokens; i++)
			if (strcmp(a->tokens[i].name, t.name) == 0) {
				snprintf(err, errlen,
				    "line %zu: the name %s is used twice",
				    lineno, t.name);
				goto fail;
			}
		if (a->ntokens == cap) {
			cap = cap == 0 ? 8 : cap * 2;
			a->tokens =
			    xreallocarray(a->tokens, cap, sizeof(*a->tokens));
		}
		a->tokens[a->ntokens++] = t;
		p = nl + 1;
	}
	if (a->ntokens == 0) {
		snprintf(err, errlen, "no tokens");
		goto fail;
	}
	return a;
fail:
	auth_free(a);
	return NULL;
}

/*
 * Decode base64url (RFC 4648 5, no padding; '=' padding tolerated at the
 * end) into a new buffer. NULL if malformed. Caller frees.
 */
static unsigned char *
auth_b64url(const char *s, size_t n, size_t *outlen)
{
	unsigned char *out;
	unsigned v = 0;
	size_t i, o = 0;
	int bits = 0, d;
	char c;

	while (n > 0 && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return NULL;
	out = xmalloc(n * 3 / 4 + 1);
	for (i = 0; i < n; i++) {
		c = s[i];
		if (c >= 'A' && c <= 'Z')
			d = c - 'A';
		else if (c >= 'a' && c <= 'z')
			d = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			d = c - '0' + 52;
		else if (c == '-')
			d = 62;
		else if (c == '_')
			d = 63;
		else {
			free(out);
			return NULL;
		}
		v = (v << 6) | (unsigned)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(v >> bits);
			v &= (1u << bits) - 1;
		}
	}
	*outlen = o;
	return out;
}

/* The base64url string member NAME of J, decoded. Caller frees. */
static unsigned char *
auth_b64_member(json_t *j, const char *name, size_t *len)
{
	json_t *v = json_object_get(j, name);

	if (!json_is_string(v) || json_string_length(v) == 0)
		return NULL;
	return auth_b64url(json_string_value(v), json_string_length(v), len);
}

/* An EVP_PKEY from OSSL parameters built by BLD. NULL on failure. */
static EVP_PKEY *
auth_pkey_from(const char *type, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *pkey = NULL;

	if ((params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    (ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		pkey = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return pkey;
}

/* An RSA public key from a JWK's n and e. */
static EVP_PKEY *
auth_rsa_key(json_t *jwk, const char **why)
{
	unsigned char *n = NULL, *e = NULL;
	size_t nlen = 0, elen = 0;
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pkey = NULL;

	*why = "an RSA key needs base64url \"n\" and \"e\"";
	if ((n = auth_b64_member(jwk, "n", &nlen)) == NULL ||
	    (e = auth_b64_member(jwk, "e", &elen)) == NULL || nlen == 0 ||
	    elen == 0 || elen > 8)
		goto out;
	*why = "an RSA key must have at least 2048 bits";
	if (nlen < 256)
		goto out;
	*why = "the RSA key is not valid";
	if ((bn = BN_bin2bn(n, (int)nlen, NULL)) == NULL ||
	    (be = BN_bin2bn(e, (int)elen, NULL)) == NULL ||
	    (bld = OSSL_PARAM_BLD_new()) == NULL ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
		goto out;
	pkey = auth_pkey_from("RSA", bld);
out:
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	free(n);
	free(e);
	return pkey;
}

/* An EC P-256 public key from a JWK's crv, x and y. */
static EVP_PKEY *
auth_ec_key(json_t *jwk, const char **why)
{
	unsigned char *x = NULL, *y = NULL, pub[65];
	size_t xlen = 0, ylen = 0;
	json_t *crv = json_object_get(jwk, "crv");
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pkey = NULL;

	*why = "only EC keys on the P-256 curve are supported";
	if (!json_is_string(crv) ||
	    strcmp(json_string_value(crv), "P-256") != 0)
		return NULL;
	*why = "an EC key needs 32-byte base64url \"x\" and \"y\"";
	if ((x = auth_b64_member(jwk, "x", &xlen)) == NULL ||
	    (y = auth_b64_member(jwk, "y", &ylen)) == NULL || xlen != 32 ||
	    ylen != 32)
		goto out;
	pub[0] = 0x04;
	memcpy(pub + 1, x, 32);
	memcpy(pub + 33, y, 32);
	*why = "the EC key is not a point on P-256";
	if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
		"prime256v1", 0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub,
		sizeof(pub)))
		goto out;
	pkey = auth_pkey_from("EC", bld);
out:
	OSSL_PARAM_BLD_free(bld);
	free(x);
	free(y);
	return pkey;
}

/* Fill K from one JWK. 0, 1 to skip it (not a signing key), or -1. */
static int
auth_jwk(json_t *jwk, struct auth_key *k, const char **why)
{
	json_t *kty = json_object_get(jwk, "kty");
	json_t *kid = json_object_get(jwk, "kid");
	json_t *alg = json_object_get(jwk, "alg");
	json_t *use = json_object_get(jwk, "use");
	const char *t;

	memset(k, 0, sizeof(*k));
	if (!json_is_object(jwk) || !json_is_string(kty)) {
		*why = "a key must be an object with a \"kty\"";
		return -1;
	}
	if (use != NULL &&
	    (!json_is_string(use) || strcmp(json_string_value(use), "sig")))
		return 1;
	if (alg != NULL &&
	    (!json_is_string(alg) ||
		(strcmp(json_string_value(alg), "RS256") &&
		    strcmp(json_string_value(alg), "ES256") &&
		    strcmp(json_string_value(alg), "HS256"))))
		return 1;
	t = json_string_value(kty);
	if (strcmp(t, "RSA") == 0) {
		k->kty = AUTH_KTY_RSA;
		if ((k->pkey = auth_rsa_key(jwk, why)) == NULL)
			return -1;
	} else if (strcmp(t, "EC") == 0) {
		k->kty = AUTH_KTY_EC;
		if ((k->pkey = auth_ec_key(jwk, why)) == NULL)
			return -1;
	} else if (strcmp(t, "oct") == 0) {
		k->kty = AUTH_KTY_OCT;
		if ((k->secret = auth_b64_member(jwk, "k", &k->secret_len)) ==
			NULL ||
		    k->secret_len < 32) {
			free(k->secret);
			k->secret = NULL;
			*why = "an oct key needs a base64url \"k\" of at least "
			       "32 bytes";
			return -1;
		}
	} else
		return 1;
	if (json_is_string(kid))
		k->kid = xstrdup(json_string_value(kid));
	if (json_is_string(alg))
		k->alg = xstrdup(json_string_value(alg));
	return 0;
}

struct auth *
auth_jwks_parse(const char *text, size_t len, const char *audience,
    const char *issuer, char *err, size_t errlen)
{
	struct auth *a = auth_new(AUTH_JWT);
	json_error_t jerr;
	json_t *j, *keys, *jwk;
	const char *why = "";
	size_t i;
	int rc;

	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (j == NULL) {
		/* jerr.text may quote the file, and so a key: the place only.
		 */
		snprintf(err, errlen, "not JSON (line %d, column %d)",
		    jerr.line, jerr.column);
		goto fail;
	}
	keys = json_object_get(j, "keys");
	if (!json_is_array(keys)) {
		snprintf(err, errlen, "not a JWKS: no \"keys\" array");
		goto fail;
	}
	a->keys = xcalloc(json_array_size(keys) + 1, sizeof(*a->keys));
	json_array_foreach(keys, i, jwk) {
		rc = auth_jwk(jwk, &a->keys[a->nkeys], &why);
		if (rc == -1) {
			snprintf(err, errlen, "keys[%zu]: %s", i, why);
			goto fail;
		}
		if (rc == 0)
			a->nkeys++;
	}
	if (a->nkeys == 0) {
		snprintf(err, errlen, "no RSA, EC P-256 or oct signing keys");
		goto fail;
	}
	json_decref(j);
	a->audience = audience != NULL ? xstrdup(audience) : NULL;
	a->issuer = issuer != NULL ? xstrdup(issuer) : NULL;
	return a;
fail:
	json_decref(j);
	auth_free(a);
	return NULL;
}

/* Read all of PATH (at most AUTH_FILE_MAX bytes). Caller frees. */
static char *
auth_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *fp;
	char *buf;
	size_t n;

	if ((fp = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	buf = xmalloc(AUTH_FILE_MAX + 1);
	n = fread(buf, 1, AUTH_FILE_MAX + 1, fp);
	if (ferror(fp) || n > AUTH_FILE_MAX) {
		snprintf(err, errlen, "%s: %s", path,
		    ferror(fp) ? strerror(errno) : "larger than 4M");
		fclose(fp);
		free(buf);
		return NULL;
	}
	fclose(fp);
	buf[n] = '\0';
	*len = n;
	return buf;
}

struct auth *
auth_load(enum auth_mode mode, const char *token_file, const char *jwks_file,
    const char *audience, const char *issuer, char *err, size_t errlen)
{
	struct auth *a = NULL;
	char *text, why[256];
	const char *path;
	size_t len;

	err[0] = '\0';
	switch (mode) {
	case AUTH_NONE:
		return NULL;
	case AUTH_PASSTHROUGH:
		return auth_passthrough_new();
	case AUTH_TOKEN:
	case AUTH_JWT:
		break;
	}
	path = mode == AUTH_TOKEN ? token_file : jwks_file;
	if (path == NULL) {
		snprintf(err, errlen, "[auth] mode %s needs %s",
		    auth_mode_name(mode),
		    mode == AUTH_TOKEN ? "token_file" : "jwks_file");
		return NULL;
	}
	if ((text = auth_read_file(path, &len, err, errlen)) == NULL)
		return NULL;
	if (mode == AUTH_TOKEN)
		a = auth_tokens_parse(text, len, why, sizeof(why));
	else
		a = auth_jwks_parse(text, len, audience, issuer, why,
		    sizeof(why));
	OPENSSL_cleanse(text, len);
	free(text);
	if (a == NULL)
		snprintf(err, errlen, "%s: %s", path, why);
	return a;
}

void
auth_free(struct auth *a)
{
	size_t i;

	if (a == NULL)
		return;
	for (i = 0; i < a->nkeys; i++) {
		EVP_PKEY_free(a->keys[i].pkey);
		if (a->keys[i].secret != NULL)
			OPENSSL_cleanse(a->keys[i].secret,
			    a->keys[i].secret_len);
		free(a->keys[i].secret);
		free(a->keys[i].kid);
		free(a->keys[i].alg);
	}
	free(a->keys);
	free(a->tokens);
	free(a->audience);
	free(a->issuer);
	free(a);
}

enum auth_mode
auth_mode(const struct auth *a)
{
	return a != NULL ? a->mode : AUTH_NONE;
}

size_t
auth_count(const struct auth *a)
{
	if (a == NULL)
		return 0;
	return a->mode == AUTH_TOKEN ? a->ntokens : a->nkeys;
}

/*
 * The credential of "Bearer CREDENTIAL": the scheme is case-insensitive
 * (RFC 9110 11.1), the credential one token68 with no spaces inside.
 */
static int
auth_bearer(const char *h, size_t n, const char **tok, size_t *toklen)
{
	size_t i;

	while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	if (n < 7 || strncasecmp(h, "Bearer", 6) != 0 ||
	    (h[6] != ' ' && h[6] != '\t'))
		return -1;
	for (i = 6; i < n && (h[i] == ' ' || h[i] == '\t'); i++)
		;
	*tok = h + i;
	*toklen = n - i;
	if (*toklen == 0)
		return -1;
	for (i = 0; i < *toklen; i++)
		if ((unsigned char)(*tok)[i] <= ' ' ||
		    (unsigned char)(*tok)[i] >= 0x7f)
			return -1;
	return 0;
}

/* Copy S into IDENT as printable non-space ASCII (%XX for the rest). */
static void
auth_ident(const char *s, size_t n, char *ident, size_t identlen)
{
	size_t i, o = 0;
	unsigned char c;

	if (identlen == 0)
		return;
	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c > ' ' && c < 0x7f && c != '%' && c != '"' && c != '\\') {
			if (o + 1 >= identlen)
				break;
			ident[o++] = (char)c;
		} else {
			if (o + 3 >= identlen)
				break;
			snprintf(ident + o, 4, "%%%02X", c);
			o += 3;
		}
	}
	ident[o] = '\0';
}

/* Token mode: the hash of TOK against every entry, in constant time. */
static int
auth_check_token(const struct auth *a, const char *tok, size_t len, char *ident,
    size_t identlen, const char **why)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	const struct auth_token *hit = NULL;
	size_t i;

	SHA256((const unsigned char *)tok, len, md);
	/* No early exit: every entry is compared, hit or not. */
	for (i = 0; i < a->ntokens; i++)
		if (CRYPTO_memcmp(md, a->tokens[i].hash, sizeof(md)) == 0)
			hit = &a->tokens[i];
	OPENSSL_cleanse(md, sizeof(md));
	if (hit == NULL) {
		*why = "unknown token";
		return -1;
	}
	auth_ident(hit->name, strlen(hit->name), ident, identlen);
	return 0;
}

/* Verify SIG over DATA with K for ALG ("RS256", "ES256", "HS256"). */
static bool
auth_sig_ok(const struct auth_key *k, const char *alg,
    const unsigned char *data, size_t dlen, const unsigned char *sig,
    size_t slen)
{
	unsigned char mac[EVP_MAX_MD_SIZE], *der = NULL;
	unsigned int maclen = 0;
	EVP_MD_CTX *ctx;
	ECDSA_SIG *es;
	BIGNUM *r, *s;
	int derlen;
	bool ok = false;

	if (strcmp(alg, "HS256") == 0) {
		if (k->kty != AUTH_KTY_OCT ||
		    HMAC(EVP_sha256(), k->secret, (int)k->secret_len, data,
			dlen, mac, &maclen) == NULL)
			return false;
		return slen == maclen && CRYPTO_memcmp(mac, sig, slen) == 0;
	}
	if (strcmp(alg, "ES256") == 0) {
		/* JWS carries r||s (RFC 7518 3.4); OpenSSL wants DER. */
		if (k->kty != AUTH_KTY_EC || slen != 64)
			return false;
		if ((es = ECDSA_SIG_new()) == NULL)
			return false;
		r = BN_bin2bn(sig, 32, NULL);
		s = BN_bin2bn(sig + 32, 32, NULL);
		if (r == NULL || s == NULL || !ECDSA_SIG_set0(es, r, s)) {
			BN_free(r);
			BN_free(s);
			ECDSA_SIG_free(es);
			return false;
		}
		derlen = i2d_ECDSA_SIG(es, &der);
		ECDSA_SIG_free(es);
		if (derlen <= 0)
			return false;
		sig = der;
		slen = (size_t)derlen;
	} else if (k->kty != AUTH_KTY_RSA)
		return false;
	if ((ctx = EVP_MD_CTX_new()) != NULL &&
	    EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, k->pkey) == 1 &&
	    EVP_DigestVerify(ctx, sig, slen, data, dlen) == 1)
		ok = true;
	EVP_MD_CTX_free(ctx);
	OPENSSL_free(der);
	return ok;
}

/* A NumericDate claim: -1 absent, 0 present in *V, -2 malformed. */
static int
auth_numeric(json_t *claims, const char *name, int64_t *v)
{
	json_t *j = json_object_get(claims, name);

	if (j == NULL)
		return -1;
	if (json_is_integer(j))
		*v = json_integer_value(j);
	else if (json_is_real(j) && json_real_value(j) > -9e15 &&
	    json_real_value(j) < 9e15)
		*v = (int64_t)json_real_value(j);
	else
		return -2;
	return 0;
}

/* Does the aud claim (a string or an array of them) hold AUD? */
static bool
auth_aud_ok(json_t *claims, const char *aud)
{
	json_t *j = json_object_get(claims, "aud"), *v;
	size_t i;

	if (json_is_string(j))
		return strcmp(json_string_value(j), aud) == 0;
	if (json_is_array(j))
		json_array_foreach(j, i, v)
			if (json_is_string(v) &&
			    strcmp(json_string_value(v), aud) == 0)
				return true;
	return false;
}

/* The claims of a JWT whose signature is good, for the checks. */
static int
auth_claims_ok(const struct auth *a, json_t *claims, int64_t now,
    const char **why)
{
	json_t *iss;
	int64_t t;
	int rc;

	rc = auth_numeric(claims, "exp", &t);
	if (rc != 0) {
		*why = rc == -1 ? "token has no exp" :
				  "token exp is not a "
				  "number";
		return -1;
	}
	if (now > t + AUTH_SKEW_S) {
		*why = "token expired";
		return -1;
	}
	rc = auth_numeric(claims, "nbf", &t);
	if (rc == -2 || (rc == 0 && now + AUTH_SKEW_S < t)) {
		*why = "token not valid yet (nbf)";
		return -1;
	}
	if (a->issuer != NULL) {
		iss = json_object_get(claims, "iss");
		if (!json_is_string(iss) ||
		    strcmp(json_string_value(iss), a->issuer) != 0) {
			*why = "token issuer (iss) is not the configured one";
			return -1;
		}
	}
	if (a->audience != NULL && !auth_aud_ok(claims, a->audience)) {
		*why = "token audience (aud) does not include this floe";
		return -1;
	}
	return 0;
}

/* JWT mode: header.payload.signature, verified, then its claims. */
static int
auth_check_jwt(const struct auth *a, const char *tok, size_t len, int64_t now,
    char *ident, size_t identlen, const char **why)
{
	const char *d1, *d2;
	unsigned char *hb = NULL, *pb = NULL, *sig = NULL;
	size_t hlen, plen, slen, i;
	json_t *hdr = NULL, *claims = NULL, *alg, *kid, *sub;
	const char *algs;
	enum auth_kty want;
	bool verified = false;
	int rc = -1;

	*why = "malformed JWT";
	if (len > AUTH_JWT_MAX || (d1 = memchr(tok, '.', len)) == NULL ||
	    (d2 = memchr(d1 + 1, '.', tok + len - d1 - 1)) == NULL ||
	    memchr(d2 + 1, '.', tok + len - d2 - 1) != NULL)
		goto out;
	if ((hb = auth_b64url(tok, d1 - tok, &hlen)) == NULL ||
	    (pb = auth_b64url(d1 + 1, d2 - d1 - 1, &plen)) == NULL ||
	    (sig = auth_b64url(d2 + 1, tok + len - d2 - 1, &slen)) == NULL ||
	    (hdr = json_loadb((char *)hb, hlen, JSON_REJECT_DUPLICATES,
		 NULL)) == NULL ||
	    (claims = json_loadb((char *)pb, plen, JSON_REJECT_DUPLICATES,
		 NULL)) == NULL ||
	    !json_is_object(hdr) || !json_is_object(claims))
		goto out;
	alg = json_object_get(hdr, "alg");
	kid = json_object_get(hdr, "kid");
	*why = "JWT alg must be RS256, ES256 or HS256";
	if (!json_is_string(alg))
		goto out;
	algs = json_string_value(alg);
	if (strcmp(algs, "RS256") == 0)
		want = AUTH_KTY_RSA;
	else if (strcmp(algs, "ES256") == 0)
		want = AUTH_KTY_EC;
	else if (strcmp(algs, "HS256") == 0)
		want = AUTH_KTY_OCT;
	else
		goto out;
	*why = "JWT has critical header parameters floe does not know";
	if (json_object_get(hdr, "crit") != NULL)
		goto out;
	for (i = 0; i < a->nkeys && !verified; i++) {
		const struct auth_key *k = &a->keys[i];

		if (k->kty != want || (k->alg != NULL && strcmp(k->alg, algs)))
			continue;
		if (json_is_string(kid) &&
		    (k->kid == NULL ||
			strcmp(k->kid, json_string_value(kid)) != 0))
			continue;
		verified = auth_sig_ok(k, algs, (const unsigned char *)tok,
		    d2 - tok, sig, slen);
	}
	*why = "JWT signature does not verify with any configured key";
	if (!verified)
		goto out;
	if (auth_claims_ok(a, claims, now, why) == -1)
		goto out;
	sub = json_object_get(claims, "sub");
	*why = "JWT has no sub";
	if (!json_is_string(sub) || json_string_length(sub) == 0)
		goto out;
	auth_ident(json_string_value(sub), json_string_length(sub), ident,
	    identlen);
	rc = 0;
out:
	json_decref(hdr);
	json_decref(claims);
	free(hb);
	free(pb);
	free(sig);
	return rc;
}

int
auth_check(const struct auth *a, const char *hdr, size_t len, int64_t now,
    char *ident, size_t identlen, const char **why)
{
	const char *tok;
	size_t toklen;
	char hex[65];

	if (identlen > 0)
		ident[0] = '\0';
	if (a == NULL || a->mode == AUTH_NONE)
		return 0;
	if (hdr == NULL) {
		*why = "no Authorization header";
		return -1;
	}
	if (auth_bearer(hdr, len, &tok, &toklen) == -1) {
		*why = "Authorization is not \"Bearer TOKEN\"";
		return -1;
	}
	switch (a->mode) {
	case AUTH_TOKEN:
		return auth_check_token(a, tok, toklen, ident, identlen, why);
	case AUTH_JWT:
		return auth_check_jwt(a, tok, toklen, now, ident, identlen,
		    why);
	case AUTH_PASSTHROUGH:
		auth_sha256_hex(tok, toklen, hex);
		snprintf(ident, identlen, "tok-%.16s", hex);
		return 0;
	case AUTH_NONE:
		break;
	}
	return 0;
}
