/*
 * floe: test_sigv4.c -- the SigV4 signer: AWS's published test-suite
 * vectors (and the IAM ListUsers example), canonical requests for what
 * floe sends (%1F namespaces, commas, '+', empty and repeated parameters,
 * dot segments), the signing key across days, the header lines, the
 * incremental payload hash; and every signature compared with botocore's
 * (the AWS SDK for Python) signing the same request at the same time.
 */
#include <sys/types.h>

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
#include <openssl/sha.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "policy/sigv4.h"

#define SUITE_TIME 1440938160LL /* 2015-08-30T12:36:00Z */
#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define STS_TOKEN                                                              \
	"IQoJb3JpZ2luX2VjEDoaCXVzLWVhc3QtMSJHMEUCIQDexample+token/with="       \
	"chars"

/* A request in plain strings; turned into a sigv4_msg by msg_of. */
struct rq {
	const char *method;
	const char *host;
	const char *path;
	const char *query;
	const char *hdrs[4][2]; /* extra signed headers */
	const char *body; /* or NULL */
};

/* M and HS from R; the payload hash into HASH. */
static void
msg_of(const struct rq *r, struct sigv4_msg *m, struct sigv4_hdr *hs,
    char hash[SIGV4_HEX])
{
	struct sigv4_body *b;
	size_t i;

	memset(m, 0, sizeof(*m));
	m->method = r->method;
	m->path = r->path;
	m->path_len = strlen(r->path);
	m->query = r->query;
	m->query_len = r->query != NULL ? strlen(r->query) : 0;
	m->host = r->host;
	m->host_len = strlen(r->host);
	for (i = 0; i < 4 && r->hdrs[i][0] != NULL; i++) {
		hs[i].name = r->hdrs[i][0];
		hs[i].name_len = strlen(r->hdrs[i][0]);
		hs[i].value = r->hdrs[i][1];
		hs[i].value_len = strlen(r->hdrs[i][1]);
	}
	m->hdrs = hs;
	m->nhdrs = i;
	if (r->body != NULL) {
		b = sigv4_body_new();
		sigv4_body_init(b);
		sigv4_body_update(b, r->body, strlen(r->body));
		assert_int_equal(sigv4_body_final(b, hash), 0);
		sigv4_body_free(b);
		m->payload_hash = hash;
	}
}

/* A signer with the test suite's credentials. */
static struct sigv4 *
suite_signer(const char *region, const char *service, unsigned flags,
    const char *token)
{
	char err[256];
	struct sigv4 *s = sigv4_new(region, service, flags, err, sizeof(err));

	assert_non_null(s);
	assert_int_equal(sigv4_set_creds(s, AKID, SECRET, token, err,
			     sizeof(err)),
	    0);
	return s;
}

/*
 * AWS's SigV4 test suite (docs.aws.amazon.com, "Signature Version 4 test
 * suite"; the same cases ship with the AWS SDK for JavaScript), as floe
 * would send each request: its query percent-encoded on the wire.
 */
static void
test_suite_vectors(void **state __unused)
{
	static const struct {
		const char *name;
		struct rq r;
		const char *signed_headers;
		const char *sig;
	} v[] = {
		{ "get-vanilla",
		    { "GET", "example.amazonaws.com", "/", NULL, { { 0 } },
			NULL },
		    "host;x-amz-date",
		    "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
		{ "get-vanilla-empty-query-key",
		    { "GET", "example.amazonaws.com", "/", "Param1=value1",
			{ { 0 } }, NULL },
		    "host;x-amz-date",
		    "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb" },
		{ "get-vanilla-query-order-key-case",
		    { "GET", "example.amazonaws.com", "/",
			"Param2=value2&Param1=value1", { { 0 } }, NULL },
		    "host;x-amz-date",
		    "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
		{ "get-vanilla-query-unreserved",
		    { "GET", "example.amazonaws.com", "/",
			"-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
			"opqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			"abcdefghijklmnopqrstuvwxyz",
			{ { 0 } }, NULL },
		    "host;x-amz-date",
		    "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197" },
		{ "get-vanilla-utf8-query",
		    { "GET", "example.amazonaws.com", "/", "%E1%88%B4=bar",
			{ { 0 } }, NULL },
		    "host;x-amz-date",
		    "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04" },
		{ "get-unreserved",
		    { "GET", "example.amazonaws.com",
			"/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
			"nopqrstuvwxyz",
			NULL, { { 0 } }, NULL },
		    "host;x-amz-date",
		    "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f" },
		{ "get-utf8",
		    { "GET", "example.amazonaws.com", "/\xe1\x88\xb4", NULL,
			{ { 0 } }, NULL },
		    "host;x-amz-date",
		    "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85" },
		{ "get-header-key-duplicate",
		    { "GET", "example.amazonaws.com", "/", NULL,
			{ { "My-Header1", "value2" },
			    { "My-Header1", "value2" },
			    { "My-Header1", "value1" } },
			NULL },
		    "host;my-header1;x-amz-date",
		    "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea" },
		{ "get-header-value-order",
		    { "GET", "example.amazonaws.com", "/", NULL,
			{ { "My-Header1", "value4" },
			    { "My-Header1", "value1" },
			    { "My-Header1", "value3" },
			    { "My-Header1", "value2" } },
			NULL },
		    "host;my-header1;x-amz-date",
		    "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01" },
		{ "get-header-value-trim",
		    { "GET", "example.amazonaws.com", "/", NULL,
			{ { "My-Header1", " value1" },
			    { "My-Header2", " \"a   b   c\"" } },
			NULL },
		    "host;my-header1;my-header2;x-amz-date",
		    "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736" },
		{ "post-vanilla",
		    { "POST", "example.amazonaws.com", "/", NULL, { { 0 } },
			NULL },
		    "host;x-amz-date",
		    "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b" },
		{ "post-header-key-sort",
		    { "POST", "example.amazonaws.com", "/", NULL,
			{ { "My-Header1", "value1" } }, NULL },
		    "host;my-header1;x-amz-date",
		    "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c" },
		{ "post-header-value-case",
		    { "POST", "example.amazonaws.com", "/", NULL,
			{ { "My-Header1", "VALUE1" } }, NULL },
		    "host;my-header1;x-amz-date",
		    "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d" },
		{ "post-vanilla-query",
		    { "POST", "example.amazonaws.com", "/", "Param1=value1",
			{ { 0 } }, NULL },
		    "host;x-amz-date",
		    "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11" },
		{ "post-vanilla-query-nonunreserved",
		    { "POST", "example.amazonaws.com", "/",
			"%40%23%24%25%5E=&%2B=%2F%2C%3F%3E%3C%60%22%3B%3A%5C%7C"
			"%5D%5B%7B%7D",
			{ { 0 } }, NULL },
		    "host;x-amz-date",
		    "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e" },
		{ "post-vanilla-query-space",
		    { "POST", "example.amazonaws.com", "/", "p=", { { 0 } },
			NULL },
		    "host;x-amz-date",
		    "e71688addb58a26418614085fb730ba3faa623b461c17f48f2fbdb9361b94a9b" },
		{ "post-x-www-form-urlencoded",
		    { "POST", "example.amazonaws.com", "/", NULL,
			{ { "Content-Type",
			    "application/x-www-form-urlencoded" } },
			"Param1=value1" },
		    "content-type;host;x-amz-date",
		    "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a" },
		{ "post-x-www-form-urlencoded-parameters",
		    { "POST", "example.amazonaws.com", "/", NULL,
			{ { "Content-Type",
			    "application/x-www-form-urlencoded; "
			    "charset=utf8" } },
			"Param1=value1" },
		    "content-type;host;x-amz-date",
		    "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe" },
	};
	struct sigv4 *s = suite_signer("us-east-1", "service", 0, NULL);
	struct sigv4_msg m;
	struct sigv4_hdr hs[4];
	struct sigv4_sig sig;
	char hash[SIGV4_HEX], want[SIGV4_AUTH_MAX];
	size_t i;

	for (i = 0; i < nitems(v); i++) {
		msg_of(&v[i].r, &m, hs, hash);
		assert_int_equal(sigv4_sign(s, &m, SUITE_TIME, &sig), 0);
		snprintf(want, sizeof(want),
		    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/"
		    "us-east-1/service/aws4_request, SignedHeaders=%s, "
		    "Signature=%s",
		    v[i].signed_headers, v[i].sig);
		if (strcmp(sig.auth, want) != 0)
			fail_msg("%s:\n got %s\nwant %s", v[i].name, sig.auth,
			    want);
		assert_int_equal(sig.auth_len, strlen(want));
		assert_string_equal(sig.date, "20150830T123600Z");
	}
	sigv4_free(s);
}

/*
 * AWS's worked example (IAM ListUsers, "Create a signed AWS API
 * request"), with its canonical request written out in full.
 */
static void
test_iam_example(void **state __unused)
{
	static const struct rq r = { "GET", "iam.amazonaws.com", "/",
		"Action=ListUsers&Version=2010-05-08",
		{ { "Content-Type",
		    "application/x-www-form-urlencoded; charset=utf-8" } },
		NULL };
	struct sigv4 *s = suite_signer("us-east-1", "iam", 0, NULL);
	struct sigv4_msg m;
	struct sigv4_hdr hs[4];
	struct sigv4_sig sig;
	char hash[SIGV4_HEX], canon[1024];

	msg_of(&r, &m, hs, hash);
	assert_int_equal(sigv4_canonical(s, &m, SUITE_TIME, canon,
			     sizeof(canon)),
	    0);
	assert_string_equal(canon,
	    "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
	    "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
	    "host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
	    "content-type;host;x-amz-date\n" SIGV4_EMPTY_HASH);
	assert_int_equal(sigv4_sign(s, &m, SUITE_TIME, &sig), 0);
	assert_string_equal(sig.auth,
	    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/"
	    "aws4_request, SignedHeaders=content-type;host;x-amz-date, "
	    "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a"
	    "6f2b5d7");
	sigv4_free(s);
}

/* The canonical URI and query lines of what floe sends. */
static void
test_canonical(void **state __unused)
{
	static const struct {
		const char *path, *query, *uri, *cquery;
	} v[] = {
		/* A namespace separator is encoded once more. */
		{ "/iceberg/v1/catalogs/123/namespaces/db%1Fsub/tables/t", NULL,
		    "/iceberg/v1/catalogs/123/namespaces/db%251Fsub/tables/t",
		    "" },
		{ "/v1/namespaces/db%1fsub", NULL, "/v1/namespaces/db%251fsub",
		    "" },
		{ "/v1/namespaces/a%20b/tables/c+d", NULL,
		    "/v1/namespaces/a%2520b/tables/c%2Bd", "" },
		{ "/v1//namespaces/./db/../db2/", NULL, "/v1/namespaces/db2/",
		    "" },
		{ "//", NULL, "/", "" },
		{ "/..", NULL, "/", "" },
		{ "", NULL, "/", "" },
		{ "/a:b@c!d$e'f(g)h*i,j;k=l", NULL,
		    "/a%3Ab%40c%21d%24e%27f%28g%29h%2Ai%2Cj%3Bk%3Dl", "" },
		/* A literal comma is signed as %2C, '+' as a space. */
		{ "/v1/x", "a=1,2,3&b=x", "/v1/x", "a=1%2C2%2C3&b=x" },
		{ "/v1/x", "a=1%2c2", "/v1/x", "a=1%2C2" },
		{ "/v1/x", "q=a+b&r=a%2Bb&s=a%20b", "/v1/x",
		    "q=a%20b&r=a%2Bb&s=a%20b" },
		/* Empty values, keys alone, empty pieces. */
		{ "/v1/x", "flag&empty=&x=1", "/v1/x", "empty=&flag=&x=1" },
		{ "/v1/x", "&a=1&&b=2&", "/v1/x", "a=1&b=2" },
		/* Repeated keys are sorted by value. */
		{ "/v1/x", "k=b&k=a&k=c&j=z", "/v1/x", "j=z&k=a&k=b&k=c" },
		/* Sorted by byte, after encoding: "A" < "_" < "a". */
		{ "/v1/x", "a=1&_=2&A=3&%41=0", "/v1/x", "A=0&A=3&_=2&a=1" },
		{ "/v1/x", "a=b=c", "/v1/x", "a=b%3Dc" },
		{ "/v1/x", "x=%zz&y=%4", "/v1/x", "x=%25zz&y=%254" },
		{ "/v1/x", "v=a/b:c@d!e*f'g(h)~", "/v1/x",
		    "v=a%2Fb%3Ac%40d%21e%2Af%27g%28h%29~" },
		{ "/v1/x", "name=%E2%82%AC", "/v1/x", "name=%E2%82%AC" },
	};
	struct sigv4 *s = suite_signer("us-east-1", "glue", 0, NULL);
	struct sigv4_msg m;
	struct sigv4_hdr hs[4];
	char hash[SIGV4_HEX], canon[2048], want[2048];
	size_t i;

	for (i = 0; i < nitems(v); i++) {
		struct rq r = { "GET", "glue.us-east-1.amazonaws.com",
			v[i].path, v[i].query, { { 0 } }, NULL };

		msg_of(&r, &m, hs, hash);
		assert_int_equal(sigv4_canonical(s, &m, SUITE_TIME, canon,
				     sizeof(canon)),
		    0);
		snprintf(want, sizeof(want),
		    "GET\n%s\n%s\nhost:glue.us-east-1.amazonaws.com\n"
		    "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n%s",
		    v[i].uri, v[i].cquery, SIGV4_EMPTY_HASH);
		if (strcmp(canon, want) != 0)
			fail_msg("%s?%s:\n got %s\nwant %s", v[i].path,
			    v[i].query != NULL ? v[i].query : "", canon, want);
	}
	/* Too small a buffer is an error, not a truncated request. */
	{
		struct rq r = { "GET", "h", "/v1/x", NULL, { { 0 } }, NULL };

		msg_of(&r, &m, hs, hash);
		assert_int_equal(sigv4_canonical(s, &m, SUITE_TIME, canon, 20),
		    -1);
	}
	sigv4_free(s);
}

/*
 * A path of many segments and a long query leave the stack buffers:
 * the result must be the same as for the short forms.
 */
static void
test_long_inputs(void **state __unused)
{
	struct sigv4 *s = suite_signer("us-east-1", "glue", 0, NULL);
	struct sigv4_msg m = { 0 };
	char *path, *query, *canon, *o;
	size_t i;
	const size_t cap = 64 * 1024;

	path = xcalloc(1, 200 * 3 + 1);
	for (i = 0, o = path; i < 200; i++)
		o += sprintf(o, "/%c", 'a' + (int)(i % 26));
	query = xcalloc(1, 100 * 12 + 1);
	for (i = 0, o = query; i < 100; i++)
		o += sprintf(o, "%sk%03zu=v,%zu", i > 0 ? "&" : "", 99 - i, i);
	m.method = "GET";
	m.path = path;
	m.path_len = strlen(path);
	m.query = query;
	m.query_len = strlen(query);
	m.host = "h";
	m.host_len = 1;
	canon = xmalloc(cap);
	assert_int_equal(sigv4_canonical(s, &m, SUITE_TIME, canon, cap), 0);
	/* The path unchanged; the query sorted, commas encoded. */
	assert_memory_equal(canon, "GET\n", 4);
	assert_memory_equal(canon + 4, path, strlen(path));
	assert_non_null(strstr(canon, "\nk000=v%2C99&k001=v%2C98&"));
	assert_non_null(strstr(canon, "&k099=v%2C0\n"));
	free(canon);
	free(path);
	free(query);
	sigv4_free(s);
}

/* One signer across days re-derives its key, and comes back to it. */
static void
test_key_per_day(void **state __unused)
{
	static const struct rq r = { "GET", "example.amazonaws.com", "/", NULL,
		{ { 0 } }, NULL };
	static const int64_t times[] = { SUITE_TIME, SUITE_TIME + 86400,
		SUITE_TIME + 3600, SUITE_TIME, SUITE_TIME + 86400 * 365 };
	struct sigv4 *s = suite_signer("us-east-1", "service", 0, NULL);
	struct sigv4 *fresh;
	struct sigv4_msg m;
	struct sigv4_hdr hs[4];
	struct sigv4_sig a, b;
	char hash[SIGV4_HEX];
	size_t i;

	msg_of(&r, &m, hs, hash);
	for (i = 0; i < nitems(times); i++) {
		fresh = suite_signer("us-east-1", "service", 0, NULL);
		assert_int_equal(sigv4_sign(s, &m, times[i], &a), 0);
		assert_int_equal(sigv4_sign(fresh, &m, times[i], &b), 0);
		assert_string_equal(a.auth, b.auth);
		sigv4_free(fresh);
	}
	/* The day of SUITE_TIME again: the suite's signature. */
	assert_int_equal(sigv4_sign(s, &m, SUITE_TIME, &a), 0);
	assert_non_null(strstr(a.auth, "Signature=5fa00fa31553b73ebf194267"));
	/* New credentials drop the cached key. */
	assert_int_equal(sigv4_set_creds(s, AKID, "another-secret", NULL,
			     a.auth, sizeof(a.auth)),
	    0);
	assert_int_equal(sigv4_sign(s, &m, SUITE_TIME, &a), 0);
	assert_null(strstr(a.auth, "Signature=5fa00fa31553b73ebf194267"));
	sigv4_free(s);
}

/* The header lines: date, token, content hash, Authorization. */
static void
test_head(void **state __unused)
{
	static const struct rq r = { "POST", "glue.eu-west-1.amazonaws.com",
		"/iceberg/v1/namespaces", NULL,
		{ { "Content-Type", "application/json" } }, "{\"a\":1}" };
	struct sigv4 *s =
	    suite_signer("eu-west-1", "glue", SIGV4_CONTENT_SHA256, STS_TOKEN);
	struct sigv4_msg m;
	struct sigv4_hdr hs[4];
	struct sigv4_sig sig;
	char hash[SIGV4_HEX], head[2048], want[2048], small[64];
	ssize_t n;

	msg_of(&r, &m, hs, hash);
	assert_int_equal(sigv4_sign(s, &m, SUITE_TIME, &sig), 0);
	assert_string_equal(sig.token, STS_TOKEN);
	assert_non_null(strstr(sig.auth,
	    "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;"
	    "x-amz-security-token, Signature="));
	n = sigv4_head(&sig, head, sizeof(head));
	assert_true(n > 0);
	assert_int_equal((size_t)n, sigv4_head_len(&sig));
	snprintf(want, sizeof(want),
	    "X-Amz-Date: 20150830T123600Z\r\n"
	    "X-Amz-Security-Token: %s\r\n"
	    "X-Amz-Content-Sha256: %s\r\n"
	    "Authorization: %s\r\n",
	    STS_TOKEN, hash, sig.auth);
	assert_int_equal((size_t)n, strlen(want));
	assert_memory_equal(head, want, (size_t)n);
	assert_int_equal(sigv4_head(&sig, small, sizeof(small)), -1);
	assert_int_equal(sigv4_head(&sig, head, (size_t)n - 1), -1);
	sigv4_free(s);
}

/* The payload hash fed in pieces equals SHA-256 of the whole. */
static void
test_body(void **state __unused)
{
	struct sigv4_body *b = sigv4_body_new();
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[SIGV4_HEX], want[SIGV4_HEX];
	char *body = xmalloc(10000);
	size_t i, off;

	for (i = 0; i < 10000; i++)
		body[i] = (char)('a' + i % 23);
	SHA256((unsigned char *)body, 10000, md);
	for (i = 0; i < sizeof(md); i++)
		snprintf(want + 2 * i, 3, "%02x", md[i]);
	/* Twice with the same context: init starts over. */
	for (int round = 0; round < 2; round++) {
		sigv4_body_init(b);
		for (off = 0; off < 10000; off += 777)
			sigv4_body_update(b, body + off,
			    off + 777 > 10000 ? 10000 - off : 777);
		assert_int_equal(sigv4_body_final(b, hex), 0);
		assert_string_equal(hex, want);
	}
	sigv4_body_init(b);
	assert_int_equal(sigv4_body_final(b, hex), 0);
	assert_string_equal(hex, SIGV4_EMPTY_HASH);
	sigv4_body_free(b);
	sigv4_body_free(NULL);
	free(body);
}

/* What cannot be signed says so. */
static void
test_errors(void **state __unused)
{
	static const struct rq r = { "GET", "h", "/", NULL, { { 0 } }, NULL };
	struct sigv4_hdr many[SIGV4_MAX_HDRS + 1];
	struct sigv4 *s;
	struct sigv4_msg m;
	struct sigv4_hdr hs[4];
	struct sigv4_sig sig;
	char err[256], hash[SIGV4_HEX], head[256];
	size_t i;

	assert_null(sigv4_new("US-EAST-1", "glue", 0, err, sizeof(err)));
	assert_string_equal(err, "region \"US-EAST-1\" is not [a-z0-9-]");
	assert_null(sigv4_new("us-east-1", "", 0, err, sizeof(err)));
	assert_string_equal(err, "service \"\" is not [a-z0-9-]");
	s = sigv4_new("us-east-1", "glue", 0, err, sizeof(err));
	assert_non_null(s);
	assert_false(sigv4_has_creds(s));
	msg_of(&r, &m, hs, hash);
	/* No credentials: no signature, and no header lines. */
	assert_int_equal(sigv4_sign(s, &m, SUITE_TIME, &sig), -1);
	assert_int_equal(sigv4_head(&sig, head, sizeof(head)), -1);
	assert_int_equal(sigv4_set_creds(s, "", SECRET, NULL, err, sizeof(err)),
	    -1);
	assert_string_equal(err, "the access key id is empty or not printable");
	assert_int_equal(sigv4_set_creds(s, AKID, "a b", NULL, err,
			     sizeof(err)),
	    -1);
	assert_null(strstr(err, "a b"));
	assert_int_equal(sigv4_set_creds(s, AKID, SECRET, "tok\r\nX-Evil: 1",
			     err, sizeof(err)),
	    -1);
	assert_string_equal(err, "the session token is empty or not printable");
	assert_false(sigv4_has_creds(s));
	assert_int_equal(sigv4_set_creds(s, AKID, SECRET, NULL, err,
			     sizeof(err)),
	    0);
	assert_string_equal(sigv4_access_key_id(s), AKID);
	/* Too many headers to sign. */
	for (i = 0; i < nitems(many); i++) {
		many[i].name = "x-h";
		many[i].name_len = 3;
		many[i].value = "v";
		many[i].value_len = 1;
	}
	m.hdrs = many;
	m.nhdrs = nitems(many);
	assert_int_equal(sigv4_sign(s, &m, SUITE_TIME, &sig), -1);
	m.nhdrs = SIGV4_MAX_HDRS;
	assert_int_equal(sigv4_sign(s, &m, SUITE_TIME, &sig), 0);
	sigv4_free(s);
	sigv4_free(NULL);
}

/* One request for botocore and for floe. */
struct boto_case {
	const char *region, *service, *token;
	int64_t time;
	bool content_sha256;
	struct rq r;
};

/* The requests both sign: what floe sends to Glue and S3 Tables. */
static const struct boto_case boto_cases[] = {
	{ "us-east-1", "glue", NULL, 1767225600, false,
	    { "GET", "glue.us-east-1.amazonaws.com",
		"/iceberg/v1/catalogs/123456789012/namespaces/db%1Fsub/tables/"
		"orders",
		"snapshots=refs", { { 0 } }, NULL } },
	{ "us-east-1", "glue", STS_TOKEN, 1767225600, false,
	    { "GET", "glue.us-east-1.amazonaws.com",
		"/iceberg/v1/catalogs/123456789012/namespaces/db%1Fsub/tables/"
		"orders",
		"snapshots=refs", { { 0 } }, NULL } },
	{ "us-east-1", "glue", STS_TOKEN, 1767225600, true,
	    { "GET", "glue.us-east-1.amazonaws.com", "/iceberg/v1/config",
		"warehouse=123456789012%3As3tablescatalog%2Fbucket", { { 0 } },
		NULL } },
	{ "eu-west-1", "glue", NULL, 1767311999, false,
	    { "GET", "glue.eu-west-1.amazonaws.com",
		"/iceberg/v1/namespaces/a%20b/tables/c+d%2Be", NULL, { { 0 } },
		NULL } },
	{ "eu-west-1", "glue", NULL, 1767312000, false,
	    { "GET", "glue.eu-west-1.amazonaws.com", "/iceberg/v1/namespaces",
		"parent=a%1Fb&pageToken=x,y,z&pageSize=100", { { 0 } },
		NULL } },
	{ "us-west-2", "glue", NULL, 1767225600, false,
	    { "GET", "glue.us-west-2.amazonaws.com", "/iceberg/v1/x",
		"flag&empty=&k=b&k=a&k=c&q=a+b&r=a%2Bb&s=%2c", { { 0 } },
		NULL } },
	{ "us-west-2", "glue", NULL, 1767225600, false,
	    { "GET", "glue.us-west-2.amazonaws.com", "/iceberg/v1/x",
		"v=a/b:c@d!e*f'g(h)~&name=%E2%82%AC&a=b=c&x=%zz&&", { { 0 } },
		NULL } },
	{ "us-west-2", "glue", NULL, 1767225600, false,
	    { "GET", "glue.us-west-2.amazonaws.com",
		"/iceberg/v1//namespaces/./db/../db2/tables/t%2Fu/", NULL,
		{ { 0 } }, NULL } },
	{ "us-east-1", "glue", STS_TOKEN, 1767225600, false,
	    { "POST", "glue.us-east-1.amazonaws.com",
		"/iceberg/v1/catalogs/123456789012/namespaces/db/tables/t",
		NULL, { { "Content-Type", "application/json" } },
		"{\"requirements\":[],\"updates\":[]}" } },
	{ "us-east-1", "glue", NULL, 1767225600, true,
	    { "POST", "glue.us-east-1.amazonaws.com",
		"/iceberg/v1/namespaces/db/tables", NULL,
		{ { "Content-Type", "  application/json;   charset=utf-8 " } },
		"{\"name\":\"t\"}" } },
	{ "us-east-1", "glue", NULL, 1767225600, false,
	    { "DELETE", "glue.us-east-1.amazonaws.com",
		"/iceberg/v1/namespaces/db/tables/t", "purgeRequested=true",
		{ { 0 } }, NULL } },
	{ "eu-central-1", "s3tables", STS_TOKEN, 1767225600, true,
	    { "GET", "s3tables.eu-central-1.amazonaws.com",
		"/iceberg/v1/arn%3Aaws%3As3tables%3Aeu-central-1%3A1%3Abucket%"
		"2Fb/namespaces/n/tables/t",
		NULL, { { 0 } }, NULL } },
	{ "us-east-1", "glue", NULL, 1767225600, false,
	    { "HEAD", "localhost:9001", "/v1/namespaces/db", NULL, { { 0 } },
		NULL } },
};

/* Every boto_cases request as JSON for botosign.py. Caller frees. */
static char *
boto_json(const char *body4k)
{
	json_t *a = json_array(), *c, *h;
	char *out;
	size_t i, j;

	for (i = 0; i < nitems(boto_cases); i++) {
		const struct boto_case *b = &boto_cases[i];
		const char *body = b->r.body;

		if (i == nitems(boto_cases) - 1)
			body = body4k;
		h = json_array();
		for (j = 0; j < 4 && b->r.hdrs[j][0] != NULL; j++)
			json_array_append_new(h,
			    json_pack("[ss]", b->r.hdrs[j][0],
				b->r.hdrs[j][1]));
		c = json_pack("{ss ss ss? ss ss sI ss ss ss ss so ss sb}",
		    "akid", AKID, "secret", SECRET, "token", b->token, "region",
		    b->region, "service", b->service, "time",
		    (json_int_t)b->time, "method", b->r.method, "host",
		    b->r.host, "path", b->r.path, "query",
		    b->r.query != NULL ? b->r.query : "", "headers", h, "body",
		    body != NULL ? body : "", "content_sha256",
		    b->content_sha256);
		assert_non_null(c);
		json_array_append_new(a, c);
	}
	out = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return out;
}

/* Run botosign.py on CASES; its answer. */
static json_t *
boto_run(const char *cases)
{
	char path[] = "/tmp/floe-sigv4.XXXXXX", cmd[1024];
	const char *top = getenv("FLOE_TOP");
	json_error_t jerr;
	json_t *out;
	FILE *p;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, cases, strlen(cases)),
	    (ssize_t)strlen(cases));
	close(fd);
	snprintf(cmd, sizeof(cmd),
	    "/usr/bin/python3 %s/tests/catauth/"
	    "botosign.py %s",
	    top != NULL ? top : ".", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	out = json_loadf(p, 0, &jerr);
	if (out == NULL)
		fail_msg("botosign.py: %s (is python3-botocore installed? "
			 "tests/deps.sh installs it)",
		    jerr.text);
	assert_int_equal(pclose(p), 0);
	unlink(path);
	return out;
}

/*
 * The independent verifier: botocore signs each request of boto_cases at
 * the same time with the same credentials; floe's canonical request,
 * Authorization and header lines must be the same. One signer per case
 * set is reused across cases, so its key cache is crossed too.
 */
static void
test_botocore(void **state __unused)
{
	static const char piece[] = "{\"a\":[1,2,3],\"b\":\"x\"} ";
	struct sigv4 *s = NULL;
	struct sigv4_msg m;
	struct sigv4_hdr hs[4];
	struct sigv4_sig sig;
	char *cases, *body4k, hash[SIGV4_HEX], canon[8192], head[4096];
	const char *prev_region = "", *prev_service = "", *prev_token = "";
	unsigned prev_flags = 99;
	json_t *out, *o;
	size_t i;
	ssize_t n;

	body4k = xmalloc(4097);
	for (i = 0; i < 4096; i++)
		body4k[i] = piece[i % (sizeof(piece) - 1)];
	body4k[4096] = '\0';
	assert_int_equal(strlen(body4k), 4096);
	cases = boto_json(body4k);
	out = boto_run(cases);
	assert_int_equal(json_array_size(out), nitems(boto_cases));
	for (i = 0; i < nitems(boto_cases); i++) {
		const struct boto_case *b = &boto_cases[i];
		unsigned flags = b->content_sha256 ? SIGV4_CONTENT_SHA256 : 0;
		const char *token = b->token != NULL ? b->token : "";
		struct rq r = b->r;
		const char *want;

		if (i == nitems(boto_cases) - 1)
			r.body = body4k;
		if (strcmp(prev_region, b->region) != 0 ||
		    strcmp(prev_service, b->service) != 0 ||
		    strcmp(prev_token, token) != 0 || prev_flags != flags) {
			sigv4_free(s);
			s = suite_signer(b->region, b->service, flags,
			    b->token);
			prev_region = b->region;
			prev_service = b->service;
			prev_token = token;
			prev_flags = flags;
		}
		msg_of(&r, &m, hs, hash);
		o = json_array_get(out, i);
		assert_int_equal(sigv4_canonical(s, &m, b->time, canon,
				     sizeof(canon)),
		    0);
		want = json_string_value(json_object_get(o, "canonical"));
		if (strcmp(canon, want) != 0)
			fail_msg(
			    "case %zu: canonical request\n got %s\nwant %s", i,
			    canon, want);
		assert_int_equal(sigv4_sign(s, &m, b->time, &sig), 0);
		want = json_string_value(json_object_get(o, "authorization"));
		if (strcmp(sig.auth, want) != 0)
			fail_msg("case %zu:\n got %s\nwant %s", i, sig.auth,
			    want);
		/* Each header line floe adds is one botocore sent. */
		n = sigv4_head(&sig, head, sizeof(head));
		assert_true(n > 0);
		head[n] = '\0';
		{
			json_t *hv;
			size_t k, found = 0;
			char line[4096];

			json_array_foreach(json_object_get(o, "headers"), k,
			    hv) {
				const char *name =
				    json_string_value(json_array_get(hv, 0));
				const char *val =
				    json_string_value(json_array_get(hv, 1));

				if (strncmp(name, "x-amz-", 6) != 0 &&
				    strcmp(name, "authorization") != 0)
					continue;
				snprintf(line, sizeof(line), ": %s\r\n", val);
				assert_non_null(strcasestr(head, name));
				assert_non_null(strstr(head, line));
				found++;
			}
			/* Date and Authorization, token and hash if sent. */
			assert_int_equal(found,
			    2 + (b->token != NULL) + b->content_sha256);
		}
	}
	sigv4_free(s);
	json_decref(out);
	free(cases);
	free(body4k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suite_vectors),
		cmocka_unit_test(test_iam_example),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_long_inputs),
		cmocka_unit_test(test_key_per_day),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_botocore),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
