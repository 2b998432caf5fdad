/*
 * floe: test_auth.c -- client authentication: the token file format,
 * Bearer parsing, constant-time token lookup, JWTs signed here with fresh
 * RSA, EC P-256 and HMAC keys and checked for signature, alg/key type
 * confusion, exp, nbf, aud, iss and sub, and passthrough identities.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "policy/auth.h"

#define NOW 1800000000LL

static EVP_PKEY *rsa_key, *rsa_other, *ec_key;
static const char hmac_secret[] = "0123456789abcdef0123456789abcdef!";

/* base64url without padding. Caller frees. */
static char *
b64url(const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
				  "qrstuvwxyz0123456789-_";
	char *out = xmalloc(n * 4 / 3 + 4);
	size_t i, o = 0;
	unsigned v;

	for (i = 0; i + 2 < n; i += 3) {
		v = p[i] << 16 | p[i + 1] << 8 | p[i + 2];
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (n - i == 1) {
		v = p[i] << 16;
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
	} else if (n - i == 2) {
		v = p[i] << 16 | p[i + 1] << 8;
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
	}
	out[o] = '\0';
	return out;
}

static char *
b64s(const char *s)
{
	return b64url((const unsigned char *)s, strlen(s));
}

/* A BIGNUM parameter of PKEY as base64url. Caller frees. */
static char *
bn_b64(EVP_PKEY *pkey, const char *param)
{
	BIGNUM *bn = NULL;
	unsigned char buf[1024];
	int n;

	assert_int_equal(EVP_PKEY_get_bn_param(pkey, param, &bn), 1);
	n = BN_bn2bin(bn, buf);
	BN_free(bn);
	return b64url(buf, n);
}

/* The JWKS text for the test keys. Caller frees. */
static char *
make_jwks(void)
{
	unsigned char pub[65];
	size_t publen = 0;
	char *n, *e, *x, *y, *k, *out;

	n = bn_b64(rsa_key, OSSL_PKEY_PARAM_RSA_N);
	e = bn_b64(rsa_key, OSSL_PKEY_PARAM_RSA_E);
	assert_int_equal(EVP_PKEY_get_octet_string_param(ec_key,
			     OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub),
			     &publen),
	    1);
	assert_int_equal(publen, 65);
	x = b64url(pub + 1, 32);
	y = b64url(pub + 33, 32);
	k = b64s(hmac_secret);
	out = xasprintf("{\"keys\":["
			"{\"kty\":\"RSA\",\"kid\":\"r1\",\"use\":\"sig\","
			"\"alg\":\"RS256\",\"n\":\"%s\",\"e\":\"%s\"},"
			"{\"kty\":\"EC\",\"kid\":\"e1\",\"crv\":\"P-256\","
			"\"x\":\"%s\",\"y\":\"%s\"},"
			"{\"kty\":\"oct\",\"kid\":\"h1\",\"k\":\"%s\"},"
			"{\"kty\":\"RSA\",\"use\":\"enc\",\"n\":\"AQAB\","
			"\"e\":\"AQAB\"},"
			"{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AA\"}]}",
	    n, e, x, y, k);
	free(n);
	free(e);
	free(x);
	free(y);
	free(k);
	return out;
}

/* Sign HEADER.PAYLOAD (JSON texts) with ALG. Caller frees. */
static char *
make_jwt(const char *alg, EVP_PKEY *key, const char *hdr, const char *payload)
{
	char *h = b64s(hdr), *p = b64s(payload), *input, *s, *out;
	unsigned char sig[1024], *sp = sig;
	size_t slen = sizeof(sig);
	unsigned int mlen = 0;
	EVP_MD_CTX *ctx;

	input = xasprintf("%s.%s", h, p);
	if (strcmp(alg, "HS256") == 0) {
		HMAC(EVP_sha256(), hmac_secret, strlen(hmac_secret),
		    (unsigned char *)input, strlen(input), sig, &mlen);
		slen = mlen;
	} else if (strcmp(alg, "none") == 0) {
		slen = 0;
	} else {
		ctx = EVP_MD_CTX_new();
		assert_int_equal(EVP_DigestSignInit(ctx, NULL, EVP_sha256(),
				     NULL, key),
		    1);
		assert_int_equal(EVP_DigestSign(ctx, sig, &slen,
				     (unsigned char *)input, strlen(input)),
		    1);
		EVP_MD_CTX_free(ctx);
		if (strcmp(alg, "ES256") == 0) {
			const unsigned char *d = sig;
			ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &d, slen);
			static unsigned char rs[64];

			assert_non_null(es);
			memset(rs, 0, sizeof(rs));
			BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, 32);
			BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + 32, 32);
			ECDSA_SIG_free(es);
			sp = rs;
			slen = 64;
		}
	}
	s = b64url(sp, slen);
	out = xasprintf("Bearer %s.%s", input, s);
	free(h);
	free(p);
	free(s);
	free(input);
	return out;
}

static int
setup(void **state __unused)
{
	rsa_key = EVP_RSA_gen(2048);
	rsa_other = EVP_RSA_gen(2048);
	ec_key = EVP_EC_gen("P-256");
	assert_non_null(rsa_key);
	assert_non_null(rsa_other);
	assert_non_null(ec_key);
	return 0;
}

static int
teardown(void **state __unused)
{
	EVP_PKEY_free(rsa_key);
	EVP_PKEY_free(rsa_other);
	EVP_PKEY_free(ec_key);
	return 0;
}

/* Token files: good and bad lines. */
static void
test_token_file(void **state __unused)
{
	static const struct {
		const char *text;
		const char *err; /* NULL: parses */
		size_t n;
	} cases[] = {
		{ "# clients\n\nspark a665a45920422f9d417e4867efdc4fb8a04a1f3"
		  "fff1fa07e998e86f7f7a27ae3\n  trino\t"
		  "B3A8E0E1F9AB1BFE3A36F231F676F78BB30A519D2B21E6C530C0EEE8EB"
		  "B4A5D0  \r\n",
		    NULL, 2 },
		{ "", "no tokens", 0 },
		{ "# only a comment\n", "no tokens", 0 },
		{ "spark abc\n", "line 1: the hash must be 64 hex", 0 },
		{ "\nsp ark a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e9"
		  "98e86f7f7a27ae3\n",
		    "line 2: the hash", 0 },
		{ "spark a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e8"
		  "6f7f7a27aeg\n",
		    "line 1: the hash", 0 },
		{ "a a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f"
		  "7a27ae3\na a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e"
		  "998e86f7f7a27ae3\n",
		    "line 2: the name a is used twice", 0 },
		{ "x\"y a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86"
		  "f7f7a27ae3\n",
		    "line 1: the name", 0 },
	};
	char err[256];
	struct auth *a;
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		err[0] = '\0';
		a = auth_tokens_parse(cases[i].text, strlen(cases[i].text), err,
		    sizeof(err));
		if (cases[i].err == NULL) {
			assert_non_null(a);
			assert_int_equal(auth_count(a), cases[i].n);
			assert_int_equal(auth_mode(a), AUTH_TOKEN);
		} else {
			assert_null(a);
			assert_non_null(strstr(err, cases[i].err));
		}
		auth_free(a);
	}
}

/* Token mode: Bearer parsing and the lookup. */
static void
test_token_check(void **state __unused)
{
	char text[512], h1[65], h2[65], ident[AUTH_IDENT_MAX], err[128];
	const char *why;
	struct auth *a;
	static const struct {
		const char *hdr; /* NULL: no header */
		const char *ident; /* NULL: refused */
		const char *why;
	} cases[] = {
		{ "Bearer s3cret-spark", "spark", NULL },
		{ "bearer s3cret-spark", "spark", NULL },
		{ "BEARER   s3cret-trino  ", "trino", NULL },
		{ "Bearer s3cret-sparkx", NULL, "unknown token" },
		{ "Bearer s3cret-spar", NULL, "unknown token" },
		{ "Bearer ", NULL, "Bearer TOKEN" },
		{ "Bearer", NULL, "Bearer TOKEN" },
		{ "Basic czNjcmV0", NULL, "Bearer TOKEN" },
		{ "Bearers3cret-spark", NULL, "Bearer TOKEN" },
		{ "Bearer s3cret spark", NULL, "Bearer TOKEN" },
		{ "s3cret-spark", NULL, "Bearer TOKEN" },
		{ NULL, NULL, "no Authorization" },
	};
	size_t i;
	int rc;

	auth_sha256_hex("s3cret-spark", 12, h1);
	auth_sha256_hex("s3cret-trino", 12, h2);
	snprintf(text, sizeof(text), "spark %s\ntrino %s\n", h1, h2);
	a = auth_tokens_parse(text, strlen(text), err, sizeof(err));
	assert_non_null(a);
	for (i = 0; i < nitems(cases); i++) {
		why = NULL;
		rc = auth_check(a, cases[i].hdr,
		    cases[i].hdr != NULL ? strlen(cases[i].hdr) : 0, NOW, ident,
		    sizeof(ident), &why);
		if (cases[i].ident != NULL) {
			assert_int_equal(rc, 0);
			assert_string_equal(ident, cases[i].ident);
		} else {
			assert_int_equal(rc, -1);
			assert_non_null(why);
			assert_non_null(strstr(why, cases[i].why));
			/* The reason never carries the credential. */
			assert_null(strstr(why, "s3cret"));
		}
	}
	auth_free(a);
	/* The known SHA-256 of "abc". */
	auth_sha256_hex("abc", 3, h1);
	assert_string_equal(h1,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396"
	    "177a9cb410ff61f20015ad");
}

/* JWKS files: what is refused and what is skipped. */
static void
test_jwks_parse(void **state __unused)
{
	static const struct {
		const char *text;
		const char *err;
	} cases[] = {
		{ "", "not JSON (line" },
		{ "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"x}]}",
		    "column" },
		{ "{}", "no \"keys\" array" },
		{ "{\"keys\":[]}", "no RSA" },
		{ "{\"keys\":[{\"kty\":\"OKP\"}]}", "no RSA" },
		{ "{\"keys\":[1]}", "keys[0]: a key must be an object" },
		{ "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2hvcnQ\"}]}",
		    "keys[0]: an oct key needs" },
		{ "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\","
		  "\"y\":\"AA\"}]}",
		    "P-256" },
		{ "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AAAA"
		  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"y\":\"AAAAAAAA"
		  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}",
		    "not a point on P-256" },
		{ "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}",
		    "at least 2048 bits" },
		{ "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"!!\",\"e\":\"AQAB\"}]}",
		    "needs base64url" },
	};
	char err[256], *jwks;
	struct auth *a;
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		err[0] = '\0';
		a = auth_jwks_parse(cases[i].text, strlen(cases[i].text), NULL,
		    NULL, err, sizeof(err));
		assert_null(a);
		if (strstr(err, cases[i].err) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err,
			    cases[i].err);
		/* A key's bytes never show in the error. */
		assert_null(strstr(err, "c2VjcmV0"));
	}
	jwks = make_jwks();
	a = auth_jwks_parse(jwks, strlen(jwks), "floe", "https://idp", err,
	    sizeof(err));
	if (a == NULL)
		fail_msg("%s", err);
	/* RSA, EC and oct; the "enc" key and the OKP key are skipped. */
	assert_int_equal(auth_count(a), 3);
	auth_free(a);
	free(jwks);
}

/* JWTs: signatures, alg confusion and claims. */
static void
test_jwt(void **state __unused)
{
	static const struct {
		const char *alg; /* what signs */
		int key; /* 0 rsa, 1 other rsa, 2 ec, 3 hmac */
		const char *hdr;
		const char *payload;
		const char *ident; /* NULL: refused */
		const char *why;
	} cases[] = {
		{ "RS256", 0, "{\"alg\":\"RS256\",\"kid\":\"r1\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    "alice", NULL },
		{ "RS256", 0, "{\"alg\":\"RS256\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":[\"x\","
		    "\"floe\"],\"iss\":\"https://idp\",\"nbf\":1799999990}",
		    "alice", NULL },
		{ "ES256", 2, "{\"alg\":\"ES256\",\"kid\":\"e1\"}",
		    "{\"sub\":\"svc:bob\",\"exp\":1800000100.5,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    "svc:bob", NULL },
		{ "HS256", 3, "{\"alg\":\"HS256\",\"typ\":\"JWT\"}",
		    "{\"sub\":\"a b\\\"c\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    "a%20b%22c", NULL },
		/* Within the skew either way. */
		{ "RS256", 0, "{\"alg\":\"RS256\"}",
		    "{\"sub\":\"s\",\"exp\":1799999950,\"nbf\":1800000050,"
		    "\"aud\":\"floe\",\"iss\":\"https://idp\"}",
		    "s", NULL },
		{ "RS256", 1, "{\"alg\":\"RS256\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "signature" },
		{ "RS256", 0, "{\"alg\":\"RS256\",\"kid\":\"e1\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "signature" },
		{ "RS256", 0, "{\"alg\":\"RS256\",\"kid\":\"nope\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "signature" },
		/* An RS256 signature presented as ES256 and HS256. */
		{ "RS256", 0, "{\"alg\":\"ES256\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "signature" },
		{ "RS256", 0, "{\"alg\":\"HS256\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "signature" },
		{ "none", 0, "{\"alg\":\"none\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "alg must be" },
		{ "RS256", 0, "{\"alg\":\"RS512\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100}", NULL,
		    "alg must be" },
		{ "RS256", 0, "{\"alg\":\"RS256\",\"crit\":[\"b64\"]}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "critical" },
		{ "RS256", 0, "{\"alg\":\"RS256\"}",
		    "{\"sub\":\"alice\",\"exp\":1799999900,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "expired" },
		{ "RS256", 0, "{\"alg\":\"RS256\"}",
		    "{\"sub\":\"alice\",\"aud\":\"floe\",\"iss\":\"https://idp\"}",
		    NULL, "no exp" },
		{ "RS256", 0, "{\"alg\":\"RS256\"}",
		    "{\"sub\":\"alice\",\"exp\":\"soon\",\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "not a number" },
		{ "RS256", 0, "{\"alg\":\"RS256\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"nbf\":1800000100,"
		    "\"aud\":\"floe\",\"iss\":\"https://idp\"}",
		    NULL, "nbf" },
		{ "ES256", 2, "{\"alg\":\"ES256\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"other\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "audience" },
		{ "ES256", 2, "{\"alg\":\"ES256\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"iss\":\"https://idp\"}",
		    NULL, "audience" },
		{ "HS256", 3, "{\"alg\":\"HS256\"}",
		    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://evil\"}",
		    NULL, "issuer" },
		{ "HS256", 3, "{\"alg\":\"HS256\"}",
		    "{\"exp\":1800000100,\"aud\":\"floe\",\"iss\":\"https://idp\"}",
		    NULL, "no sub" },
		{ "HS256", 3, "{\"alg\":\"HS256\"}",
		    "{\"sub\":\"\",\"exp\":1800000100,\"aud\":\"floe\","
		    "\"iss\":\"https://idp\"}",
		    NULL, "no sub" },
		{ "HS256", 3, "[1]", "{\"sub\":\"a\",\"exp\":1800000100}", NULL,
		    "malformed" },
		{ "HS256", 3, "{\"alg\":\"HS256\",\"alg\":\"none\"}",
		    "{\"sub\":\"a\",\"exp\":1800000100}", NULL, "malformed" },
	};
	EVP_PKEY *keys[] = { rsa_key, rsa_other, ec_key, NULL };
	char err[256], *jwks, *tok, ident[AUTH_IDENT_MAX];
	const char *why;
	struct auth *a;
	size_t i;
	int rc;

	jwks = make_jwks();
	a = auth_jwks_parse(jwks, strlen(jwks), "floe", "https://idp", err,
	    sizeof(err));
	assert_non_null(a);
	for (i = 0; i < nitems(cases); i++) {
		tok = make_jwt(cases[i].alg, keys[cases[i].key], cases[i].hdr,
		    cases[i].payload);
		why = "";
		rc = auth_check(a, tok, strlen(tok), NOW, ident, sizeof(ident),
		    &why);
		if (cases[i].ident != NULL) {
			if (rc != 0)
				fail_msg("case %zu refused: %s", i, why);
			assert_string_equal(ident, cases[i].ident);
		} else {
			if (rc != -1)
				fail_msg("case %zu accepted as %s", i, ident);
			if (strstr(why, cases[i].why) == NULL)
				fail_msg("case %zu: \"%s\" lacks \"%s\"", i,
				    why, cases[i].why);
		}
		free(tok);
	}
	/* Structurally broken tokens. */
	{
		static const char *const broken[] = {
			"Bearer a.b",
			"Bearer a.b.c.d",
			"Bearer !!.e30.AA",
			"Bearer e30.e30.A",
			"Bearer ..",
		};

		for (i = 0; i < nitems(broken); i++) {
			why = "";
			assert_int_equal(auth_check(a, broken[i],
					     strlen(broken[i]), NOW, ident,
					     sizeof(ident), &why),
			    -1);
			assert_non_null(strstr(why, "JWT"));
		}
	}
	/* A tampered payload fails the signature. */
	tok = make_jwt("RS256", rsa_key, "{\"alg\":\"RS256\"}",
	    "{\"sub\":\"alice\",\"exp\":1800000100,\"aud\":\"floe\","
	    "\"iss\":\"https://idp\"}");
	{
		char *dot = strchr(tok, '.');

		dot[3] = dot[3] == 'A' ? 'B' : 'A';
		assert_int_equal(auth_check(a, tok, strlen(tok), NOW, ident,
				     sizeof(ident), &why),
		    -1);
	}
	free(tok);
	auth_free(a);
	/* Without audience and issuer configured, those claims are free. */
	a = auth_jwks_parse(jwks, strlen(jwks), NULL, NULL, err, sizeof(err));
	tok = make_jwt("HS256", NULL, "{\"alg\":\"HS256\"}",
	    "{\"sub\":\"carol\",\"exp\":1800000100}");
	assert_int_equal(auth_check(a, tok, strlen(tok), NOW, ident,
			     sizeof(ident), &why),
	    0);
	assert_string_equal(ident, "carol");
	free(tok);
	auth_free(a);
	free(jwks);
}

/* Passthrough: any Bearer token, identity a hash prefix; none: all pass. */
static void
test_passthrough(void **state __unused)
{
	struct auth *a = auth_passthrough_new();
	char ident[AUTH_IDENT_MAX], hex[65], want[40];
	const char *why;

	assert_int_equal(auth_check(a, "Bearer tok123", 13, NOW, ident,
			     sizeof(ident), &why),
	    0);
	auth_sha256_hex("tok123", 6, hex);
	snprintf(want, sizeof(want), "tok-%.16s", hex);
	assert_string_equal(ident, want);
	assert_int_equal(auth_check(a, NULL, 0, NOW, ident, sizeof(ident),
			     &why),
	    -1);
	assert_int_equal(auth_check(a, "Basic x", 7, NOW, ident, sizeof(ident),
			     &why),
	    -1);
	auth_free(a);
	assert_int_equal(auth_check(NULL, NULL, 0, NOW, ident, sizeof(ident),
			     &why),
	    0);
	assert_int_equal(auth_mode_parse("jwt"), AUTH_JWT);
	assert_int_equal(auth_mode_parse("passthrough"), AUTH_PASSTHROUGH);
	assert_int_equal(auth_mode_parse("basic"), -1);
	assert_string_equal(auth_mode_name(AUTH_TOKEN), "token");
}

/* auth_load: files and the errors that name them. */
static void
test_load(void **state __unused)
{
	char path[] = "/tmp/floe-test-auth.XXXXXX", err[512], hex[65];
	struct auth *a;
	FILE *fp;
	int fd;

	assert_null(
	    auth_load(AUTH_NONE, NULL, NULL, NULL, NULL, err, sizeof(err)));
	assert_string_equal(err, "");
	a = auth_load(AUTH_PASSTHROUGH, NULL, NULL, NULL, NULL, err,
	    sizeof(err));
	assert_int_equal(auth_mode(a), AUTH_PASSTHROUGH);
	auth_free(a);
	assert_null(auth_load(AUTH_TOKEN, "/nonexistent/tokens", NULL, NULL,
	    NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/tokens: No such file"));
	assert_null(
	    auth_load(AUTH_JWT, NULL, NULL, NULL, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "jwks_file"));
	fd = mkstemp(path);
	assert_true(fd != -1);
	fp = fdopen(fd, "w");
	auth_sha256_hex("t", 1, hex);
	fprintf(fp, "one %s\nbad line\n", hex);
	fclose(fp);
	assert_null(
	    auth_load(AUTH_TOKEN, path, NULL, NULL, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, ": line 2: "));
	assert_non_null(strstr(err, path));
	fp = fopen(path, "w");
	fprintf(fp, "one %s\n", hex);
	fclose(fp);
	a = auth_load(AUTH_TOKEN, path, NULL, NULL, NULL, err, sizeof(err));
	assert_non_null(a);
	assert_int_equal(auth_count(a), 1);
	auth_free(a);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_token_check),
		cmocka_unit_test(test_jwks_parse),
		cmocka_unit_test(test_jwt),
		cmocka_unit_test(test_passthrough),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
