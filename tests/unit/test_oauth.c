/*
 * floe: test_oauth.c -- the OAuth2 grants: client-credentials requests as
 * form fields and with HTTP Basic (RFC 6749 2.3.1's encoding), endpoints
 * shown without credentials, Google service-account keys and their RS256
 * assertions (verified here with the public key), token answers accepted
 * and refused, and secret files refused when their group or others may
 * read them.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "policy/oauth.h"

#define NOW 1800000000LL
#define SECRET "s3cr=t&x y+z/%"

static EVP_PKEY *rsa_key;

/* The PEM of KEY (private). Caller frees. */
static char *
pem_of(EVP_PKEY *key)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p, *out;
	long n;

	assert_int_equal(PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL,
			     NULL),
	    1);
	n = BIO_get_mem_data(b, &p);
	out = xstrndup(p, (size_t)n);
	BIO_free(b);
	return out;
}

/* A service-account key file's JSON for KEY. Caller frees. */
static char *
google_json(EVP_PKEY *key, const char *token_uri)
{
	json_t *j;
	char *pem = pem_of(key), *out;

	j = json_pack("{ss ss ss ss ss ss}", "type", "service_account",
	    "project_id", "p", "private_key_id", "kid-1", "private_key", pem,
	    "client_email", "floe@p.iam.gserviceaccount.com", "client_id",
	    "1234");
	if (token_uri != NULL)
		json_object_set_new(j, "token_uri", json_string(token_uri));
	out = json_dumps(j, 0);
	json_decref(j);
	free(pem);
	return out;
}

static int
setup(void **state __unused)
{
	rsa_key = EVP_RSA_gen(2048);
	return rsa_key != NULL ? 0 : -1;
}

static int
teardown(void **state __unused)
{
	EVP_PKEY_free(rsa_key);
	return 0;
}

/* Form fields: every value form-encoded, scope and audience when set. */
static void
test_client_form(void **state __unused)
{
	struct oauth *o;
	struct oauth_req r;
	char err[256];

	o = oauth_client_new("https://idp.example/oauth/token?tenant=1",
	    "floe client", "  " SECRET "\n", strlen(SECRET) + 3,
	    "PRINCIPAL_ROLE:ALL", "https://polaris", OAUTH_AUTH_FORM, err,
	    sizeof(err));
	assert_non_null(o);
	assert_string_equal(oauth_endpoint(o), "idp.example/oauth/token");
	assert_string_equal(oauth_uri(o),
	    "https://idp.example/oauth/token?tenant=1");
	assert_string_equal(oauth_grant_name(o), "client_credentials");
	assert_string_equal(oauth_client(o), "floe client");
	assert_int_equal(oauth_request(o, NOW, &r, err, sizeof(err)), 0);
	assert_string_equal(r.url, "https://idp.example/oauth/token?tenant=1");
	assert_string_equal(r.body,
	    "grant_type=client_credentials&client_id=floe+client"
	    "&client_secret=s3cr%3Dt%26x+y%2Bz%2F%25"
	    "&scope=PRINCIPAL_ROLE%3AALL&audience=https%3A%2F%2Fpolaris");
	assert_int_equal(r.body_len, strlen(r.body));
	assert_string_equal(r.headers[0],
	    "Content-Type: application/x-www-form-urlencoded");
	assert_string_equal(r.headers[1], "Accept: application/json");
	assert_null(r.headers[2]);
	oauth_req_clear(&r);
	assert_null(r.body);
	oauth_free(o);
	/* Without scope and audience. */
	o = oauth_client_new("http://127.0.0.1:8181/v1/oauth/tokens", "c", "s",
	    1, NULL, "", OAUTH_AUTH_FORM, err, sizeof(err));
	assert_non_null(o);
	assert_string_equal(oauth_endpoint(o),
	    "127.0.0.1:8181/v1/oauth/tokens");
	assert_int_equal(oauth_request(o, NOW, &r, err, sizeof(err)), 0);
	assert_string_equal(r.body,
	    "grant_type=client_credentials&client_id=c&client_secret=s");
	oauth_req_clear(&r);
	oauth_free(o);
}

/* HTTP Basic: id and secret form-encoded, then base64; not in the body. */
static void
test_client_basic(void **state __unused)
{
	struct oauth *o;
	struct oauth_req r;
	char err[256];
	unsigned char dec[256];
	const char *b64;
	int n;

	o = oauth_client_new("https://idp.example/token", "floe:client", SECRET,
	    strlen(SECRET), "catalog", NULL, OAUTH_AUTH_BASIC, err,
	    sizeof(err));
	assert_non_null(o);
	assert_int_equal(oauth_request(o, NOW, &r, err, sizeof(err)), 0);
	assert_string_equal(r.body,
	    "grant_type=client_credentials&scope=catalog");
	assert_non_null(r.headers[2]);
	assert_memory_equal(r.headers[2], "Authorization: Basic ", 21);
	b64 = r.headers[2] + 21;
	n = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)strlen(b64));
	assert_true(n > 0);
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	while (n > 0 && dec[n - 1] == '\0')
		n--;
	dec[n] = '\0';
	assert_string_equal((char *)dec,
	    "floe%3Aclient:s3cr%3Dt%26x+y%2Bz%2F%25");
	assert_null(r.headers[3]);
	oauth_req_clear(&r);
	oauth_free(o);
}

/* Token URIs and client settings that are refused. */
static void
test_client_errors(void **state __unused)
{
	static const struct {
		const char *uri, *id, *secret, *err;
	} v[] = {
		{ "ftp://idp/token", "c", "s",
		    "token URI \"ftp://idp/token\" is not http(s)://" },
		{ "idp.example/token", "c", "s",
		    "token URI \"idp.example/token\" is not http(s)://" },
		{ "https:///token", "c", "s",
		    "token URI \"https:///token\" has no host" },
		{ "https://idp/to ken", "c", "s",
		    "token URI has blanks or control characters" },
		{ "https://idp/token", "", "s", "no client_id" },
		{ "https://idp/token", "c", " \n ",
		    "the client secret is empty" },
		{ "https://idp/token", "c", "a\nb",
		    "the client secret is more than one line" },
	};
	char err[256];
	size_t i;

	for (i = 0; i < nitems(v); i++) {
		assert_null(oauth_client_new(v[i].uri, v[i].id, v[i].secret,
		    strlen(v[i].secret), NULL, NULL, OAUTH_AUTH_FORM, err,
		    sizeof(err)));
		assert_string_equal(err, v[i].err);
	}
}

/* Endpoints are shown without user info, query or fragment. */
static void
test_endpoint(void **state __unused)
{
	static const struct {
		const char *uri, *endpoint;
	} v[] = {
		{ "https://user:pw@idp.example:8443/a/b?x=1#f",
		    "idp.example:8443/a/b" },
		{ "HTTPS://idp.example", "idp.example/" },
		{ "http://[::1]:9000/t", "[::1]:9000/t" },
		{ "https://idp.example?x", "idp.example/" },
	};
	struct oauth *o;
	char err[256];
	size_t i;

	for (i = 0; i < nitems(v); i++) {
		o = oauth_client_new(v[i].uri, "c", "s", 1, NULL, NULL,
		    OAUTH_AUTH_FORM, err, sizeof(err));
		assert_non_null(o);
		assert_string_equal(oauth_endpoint(o), v[i].endpoint);
		oauth_free(o);
	}
}

/* A base64url part of a JWT, decoded. Caller frees. */
static char *
b64url_dec(const char *s, size_t n, size_t *outlen)
{
	char *t = xmalloc(n + 4), *out;
	size_t i, m = n;
	int len;

	for (i = 0; i < n; i++)
		t[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
	while (m % 4 != 0)
		t[m++] = '=';
	out = xmalloc(m);
	len = EVP_DecodeBlock((unsigned char *)out, (unsigned char *)t, (int)m);
	assert_true(len >= 0);
	*outlen = (size_t)len - (m - n);
	out[*outlen] = '\0';
	free(t);
	return out;
}

/* The Google grant: its body and an assertion that verifies. */
static void
test_google(void **state __unused)
{
	struct oauth *o;
	struct oauth_req r;
	char err[256], *key = google_json(rsa_key, "https://t.example/token");
	char *hdr, *claims, *sig, *assertion;
	const char *d1, *d2;
	size_t hl, cl, sl;
	json_t *h, *c;
	EVP_MD_CTX *ctx;

	o = oauth_google_new(key, strlen(key), NULL, err, sizeof(err));
	assert_non_null(o);
	assert_string_equal(oauth_grant_name(o), "jwt-bearer");
	assert_string_equal(oauth_client(o), "floe@p.iam.gserviceaccount.com");
	assert_string_equal(oauth_endpoint(o), "t.example/token");
	assert_int_equal(oauth_request(o, NOW, &r, err, sizeof(err)), 0);
	assert_string_equal(r.url, "https://t.example/token");
	assert_memory_equal(r.body,
	    "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
	    "&assertion=",
	    75);
	assertion = r.body + 75;
	d1 = strchr(assertion, '.');
	assert_non_null(d1);
	d2 = strchr(d1 + 1, '.');
	assert_non_null(d2);
	hdr = b64url_dec(assertion, (size_t)(d1 - assertion), &hl);
	claims = b64url_dec(d1 + 1, (size_t)(d2 - d1 - 1), &cl);
	sig = b64url_dec(d2 + 1, strlen(d2 + 1), &sl);
	h = json_loads(hdr, 0, NULL);
	c = json_loads(claims, 0, NULL);
	assert_non_null(h);
	assert_non_null(c);
	assert_string_equal(json_string_value(json_object_get(h, "alg")),
	    "RS256");
	assert_string_equal(json_string_value(json_object_get(h, "kid")),
	    "kid-1");
	assert_string_equal(json_string_value(json_object_get(c, "iss")),
	    "floe@p.iam.gserviceaccount.com");
	assert_string_equal(json_string_value(json_object_get(c, "aud")),
	    "https://t.example/token");
	assert_string_equal(json_string_value(json_object_get(c, "scope")),
	    OAUTH_GOOGLE_SCOPE);
	assert_int_equal(json_integer_value(json_object_get(c, "iat")), NOW);
	assert_int_equal(json_integer_value(json_object_get(c, "exp")),
	    NOW + 3600);
	ctx = EVP_MD_CTX_new();
	assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL,
			     rsa_key),
	    1);
	assert_int_equal(EVP_DigestVerify(ctx, (unsigned char *)sig, sl,
			     (unsigned char *)assertion,
			     (size_t)(d2 - assertion)),
	    1);
	/* One bit flipped in the claims: no longer verifies. */
	((char *)(uintptr_t)d1)[1] ^= 1;
	assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL,
			     rsa_key),
	    1);
	assert_int_not_equal(EVP_DigestVerify(ctx, (unsigned char *)sig, sl,
				 (unsigned char *)assertion,
				 (size_t)(d2 - assertion)),
	    1);
	EVP_MD_CTX_free(ctx);
	json_decref(h);
	json_decref(c);
	free(hdr);
	free(claims);
	free(sig);
	oauth_req_clear(&r);
	oauth_free(o);
	free(key);
	/* No token_uri: Google's; a scope of the caller's. */
	key = google_json(rsa_key, NULL);
	o = oauth_google_new(key, strlen(key), "https://x/bigquery", err,
	    sizeof(err));
	assert_non_null(o);
	assert_string_equal(oauth_uri(o), OAUTH_GOOGLE_TOKEN_URI);
	oauth_free(o);
	free(key);
}

/* Service-account keys that are refused, and why. */
static void
test_google_errors(void **state __unused)
{
	EVP_PKEY *ec = EVP_EC_gen("P-256");
	char err[256], *key, *pem;
	json_t *j;

	assert_null(oauth_google_new("{\"a\":", 5, NULL, err, sizeof(err)));
	assert_string_equal(err, "not a service-account key (JSON): line 1");
	assert_null(oauth_google_new("{\"type\":\"authorized_user\"}", 26, NULL,
	    err, sizeof(err)));
	assert_string_equal(err,
	    "type is \"authorized_user\", not \"service_account\"");
	assert_null(oauth_google_new("{\"private_key\":\"x\"}", 19, NULL, err,
	    sizeof(err)));
	assert_string_equal(err, "no client_email");
	assert_null(oauth_google_new("{\"client_email\":\"a@b\"}", 22, NULL,
	    err, sizeof(err)));
	assert_string_equal(err, "no private_key");
	{
		static const char junk[] =
		    "{\"client_email\":\"a@b\","
		    "\"private_key\":\"-----BEGIN junk\"}";

		assert_null(oauth_google_new(junk, strlen(junk), NULL, err,
		    sizeof(err)));
	}
	assert_string_equal(err, "private_key is not an RSA key in PEM");
	assert_non_null(ec);
	pem = pem_of(ec);
	j = json_pack("{ss ss}", "client_email", "a@b", "private_key", pem);
	key = json_dumps(j, 0);
	assert_null(oauth_google_new(key, strlen(key), NULL, err, sizeof(err)));
	assert_string_equal(err, "private_key is not an RSA key in PEM");
	free(key);
	json_decref(j);
	free(pem);
	key = google_json(rsa_key, "file:///etc/passwd");
	assert_null(oauth_google_new(key, strlen(key), NULL, err, sizeof(err)));
	assert_string_equal(err,
	    "token URI \"file:///etc/passwd\" is not http(s)://");
	free(key);
	EVP_PKEY_free(ec);
}

/* Token answers: accepted, and refused with what the endpoint said. */
static void
test_response(void **state __unused)
{
	static const struct {
		int status;
		const char *body;
		int64_t expires_in;
		bool known;
		const char *err; /* NULL: accepted */
	} v[] = {
		{ 200,
		    "{\"access_token\":\"eyJ.a-b_c~d+e/f=\",\"token_type\":"
		    "\"bearer\",\"expires_in\":3599}",
		    3599, true, NULL },
		{ 200,
		    "{\"access_token\":\"ya29.x\",\"token_type\":\"Bearer\","
		    "\"expires_in\":\"120\"}",
		    120, true, NULL },
		{ 200, "{\"access_token\":\"t\"}", 3600, false, NULL },
		{ 200, "{\"access_token\":\"t\",\"expires_in\":null}", 3600,
		    false, NULL },
		{ 200, "{\"access_token\":\"t\",\"token_type\":\"mac\"}", 0,
		    false, "token_type \"mac\" is not bearer" },
		{ 200, "{\"token_type\":\"bearer\"}", 0, false,
		    "no access_token in the answer" },
		{ 200, "{\"access_token\":\"a b\"}", 0, false,
		    "a malformed access_token in the answer" },
		{ 200, "{\"access_token\":\"a\\r\\nX-Evil: 1\"}", 0, false,
		    "a malformed access_token in the answer" },
		{ 200, "{\"access_token\":\"\"}", 0, false,
		    "a malformed access_token in the answer" },
		{ 200, "{\"access_token\":\"t\",\"expires_in\":0}", 0, false,
		    "expires_in is not a positive number" },
		{ 200, "{\"access_token\":\"t\",\"expires_in\":-5}", 0, false,
		    "expires_in is not a positive number" },
		{ 200, "{\"access_token\":\"t\",\"expires_in\":\"1h\"}", 0,
		    false, "expires_in is not a positive number" },
		{ 200, "<html>ok</html>", 0, false,
		    "the answer is not a JSON object" },
		{ 200, "[1]", 0, false, "the answer is not a JSON object" },
		{ 401,
		    "{\"error\":\"invalid_client\",\"error_description\":"
		    "\"bad secret\"}",
		    0, false, "HTTP 401: invalid_client: bad secret" },
		{ 400, "{\"error\":\"invalid_scope\"}", 0, false,
		    "HTTP 400: invalid_scope" },
		{ 401,
		    "{\"error\":\"invalid_client\",\"error_description\":"
		    "\"secret s3cr=t&x y+z/% is wrong\\n\"}",
		    0, false, "HTTP 401: invalid_client: secret * is wrong?" },
		{ 503, "<html>down</html>", 0, false, "HTTP 503" },
		{ 500, "", 0, false, "HTTP 500" },
	};
	struct oauth *o;
	struct oauth_token t;
	char err[256];
	size_t i;

	o = oauth_client_new("https://idp/token", "c", SECRET, strlen(SECRET),
	    NULL, NULL, OAUTH_AUTH_FORM, err, sizeof(err));
	assert_non_null(o);
	for (i = 0; i < nitems(v); i++) {
		int rc = oauth_response(o, v[i].status, v[i].body,
		    strlen(v[i].body), &t, err, sizeof(err));

		if (v[i].err == NULL) {
			if (rc != 0)
				fail_msg("%zu: refused: %s", i, err);
			assert_non_null(t.access_token);
			assert_int_equal(t.expires_in, v[i].expires_in);
			assert_int_equal(t.expires_known, v[i].known);
		} else {
			assert_int_equal(rc, -1);
			assert_null(t.access_token);
			if (strcmp(err, v[i].err) != 0)
				fail_msg("%zu: got \"%s\", want \"%s\"", i, err,
				    v[i].err);
		}
		oauth_token_clear(&t);
	}
	/* A long description is cut. */
	{
		char body[1200];

		snprintf(body, sizeof(body),
		    "{\"error\":\"e\",\"error_description\":\"%0*d\"}", 1000,
		    0);
		assert_int_equal(oauth_response(o, 400, body, strlen(body), &t,
				     err, sizeof(err)),
		    -1);
		assert_int_equal(strlen(err), strlen("HTTP 400: e: ") + 200);
	}
	oauth_free(o);
}

/* Secret and key files are read only when their owner alone may. */
static void
test_files(void **state __unused)
{
	char dir[] = "/tmp/floe-oauth.XXXXXX", path[128], kpath[128];
	char err[512], want[512], *key;
	struct oauth *o;
	struct oauth_req r;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/client.secret", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(SECRET "\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0640), 0);
	assert_null(oauth_client_load("https://idp/token", "c", path, NULL,
	    NULL, OAUTH_AUTH_FORM, err, sizeof(err)));
	snprintf(want, sizeof(want),
	    "%s: mode 0640 lets its group or others at a secret; chmod 600 it",
	    path);
	assert_string_equal(err, want);
	assert_int_equal(chmod(path, 0600), 0);
	o = oauth_client_load("https://idp/token", "c", path, NULL, NULL,
	    OAUTH_AUTH_FORM, err, sizeof(err));
	assert_non_null(o);
	assert_int_equal(oauth_request(o, NOW, &r, err, sizeof(err)), 0);
	assert_non_null(
	    strstr(r.body, "&client_secret=s3cr%3Dt%26x+y%2Bz%2F%25"));
	oauth_req_clear(&r);
	oauth_free(o);
	f = fopen(path, "w");
	fclose(f);
	assert_null(oauth_client_load("https://idp/token", "c", path, NULL,
	    NULL, OAUTH_AUTH_FORM, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: the client secret is empty", path);
	assert_string_equal(err, want);
	unlink(path);

	snprintf(kpath, sizeof(kpath), "%s/sa.json", dir);
	key = google_json(rsa_key, NULL);
	f = fopen(kpath, "w");
	assert_non_null(f);
	fputs(key, f);
	fclose(f);
	free(key);
	assert_int_equal(chmod(kpath, 0604), 0);
	assert_null(oauth_google_load(kpath, NULL, err, sizeof(err)));
	snprintf(want, sizeof(want),
	    "%s: mode 0604 lets its group or others at a secret; chmod 600 it",
	    kpath);
	assert_string_equal(err, want);
	assert_int_equal(chmod(kpath, 0400), 0);
	o = oauth_google_load(kpath, NULL, err, sizeof(err));
	assert_non_null(o);
	oauth_free(o);
	f = fopen(kpath, "w");
	fputs("{\"client_email\":\"a@b\"}", f);
	fclose(f);
	assert_null(oauth_google_load(kpath, NULL, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: no private_key", kpath);
	assert_string_equal(err, want);
	unlink(kpath);
	rmdir(dir);
	oauth_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_form),
		cmocka_unit_test(test_client_basic),
		cmocka_unit_test(test_client_errors),
		cmocka_unit_test(test_endpoint),
		cmocka_unit_test(test_google),
		cmocka_unit_test(test_google_errors),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
