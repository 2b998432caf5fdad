/*
 * floe: test_cred.c -- a catalog's credential as floe.conf builds it: none,
 * token_file's token, a SigV4 signer (its control-plane headers signed
 * over the URL as libcurl sends it, the host with its port, S3 Tables'
 * payload hash) and an OAuth2 holder before its first token; which of
 * them forwarded requests carry in passthrough mode; a secret file others
 * may read refused by name. Token fetching itself is test_token's.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "policy/sigv4.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/fetch.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define TOKEN "FwoGZXIvYXdzEXAMPLE"

struct env {
	struct event_base *base;
	struct fetch *f;
	char dir[64];
	char host[16], port[8];
	struct conf_target t;
};

/* Write TEXT to DIR/NAME with MODE; the path (static). */
static const char *
write_file(struct env *env, const char *name, const char *text, mode_t mode)
{
	static char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", env->dir, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static int
setup(void **state)
{
	struct env *env = xcalloc(1, sizeof(*env));

	strlcpy(env->dir, "/tmp/floe-test-cred.XXXXXX", sizeof(env->dir));
	assert_non_null(mkdtemp(env->dir));
	env->base = event_base_new();
	env->f = fetch_new(env->base);
	strlcpy(env->host, "127.0.0.1", sizeof(env->host));
	strlcpy(env->port, "8181", sizeof(env->port));
	env->t.host = env->host;
	env->t.port = env->port;
	env->t.timeout_ms = 1000;
	env->t.connect_timeout_ms = 1000;
	*state = env;
	return 0;
}

static int
teardown(void **state)
{
	struct env *env = *state;
	char cmd[128];

	fetch_free(env->f);
	event_base_free(env->base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", env->dir);
	assert_int_equal(system(cmd), 0);
	free(env);
	return 0;
}

/* No credential: nothing on either path. */
static void
test_none(void **state)
{
	struct env *env = *state;
	char *h[CRED_MAX_HDRS], why[256];
	struct cred *c;

	env->t.auth = CONF_CRED_NONE;
	c = cred_new(env->base, env->f, &env->t, "warehouse", why, sizeof(why));
	assert_non_null(c);
	assert_int_equal(cred_kind(c), CRED_NONE);
	assert_false(cred_on_data(c));
	assert_true(cred_is_ready(c));
	assert_int_equal(cred_headers(c, "GET",
			     "http://127.0.0.1:8181/v1/config", NULL, 0, h, why,
			     sizeof(why)),
	    0);
	cred_free(c);
}

/* token_file's token: on floe's calls always, on requests but in passthrough.
 */
static void
test_token(void **state)
{
	struct env *env = *state;
	char *h[CRED_MAX_HDRS], why[256], tok[] = "static-token";
	struct cred *c;

	env->t.auth = CONF_CRED_TOKEN;
	env->t.token = tok;
	c = cred_new(env->base, env->f, &env->t, "lakehouse", why, sizeof(why));
	assert_non_null(c);
	assert_int_equal(cred_kind(c), CRED_BEARER);
	assert_true(cred_on_data(c));
	assert_string_equal(cred_bearer(c, NULL), "static-token");
	assert_int_equal(cred_headers(c, "GET",
			     "http://127.0.0.1:8181/v1/config", NULL, 0, h, why,
			     sizeof(why)),
	    1);
	assert_string_equal(h[0], "Authorization: Bearer static-token");
	cred_headers_clear(h, 1);
	assert_null(h[0]);
	cred_set_passthrough(c, true);
	assert_false(cred_on_data(c));
	assert_int_equal(cred_headers(c, "GET",
			     "http://127.0.0.1:8181/v1/config", NULL, 0, h, why,
			     sizeof(why)),
	    1);
	cred_headers_clear(h, 1);
	cred_free(c);
}

/* The value of header NAME among the N of H, or NULL. */
static const char *
header(char **h, int n, const char *name)
{
	size_t len = strlen(name);
	int i;

	for (i = 0; i < n; i++)
		if (strncmp(h[i], name, len) == 0 && h[i][len] == ':')
			return h[i] + len + 2;
	return NULL;
}

/* Seconds since the epoch of an X-Amz-Date. */
static int64_t
amz_time(const char *d)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	assert_non_null(strptime(d, "%Y%m%dT%H%M%SZ", &tm));
	return (int64_t)timegm(&tm);
}

/*
 * SigV4 on floe's own calls: signed over the path and query of the URL and
 * the host with its port, as a signer of its own signs the same request at
 * the same second; always on requests, passthrough or not.
 */
static void
test_sigv4(void **state)
{
	struct env *env = *state;
	char *h[CRED_MAX_HDRS], why[256],
	    region[] = "eu-west-1", service[] = "glue", s3t[] = "s3tables";
	static const char path[] = "/cat/v1/namespaces/a%1Fb";
	static const char query[] = "warehouse=my%20wh&x=a,b";
	struct sigv4_msg m;
	struct sigv4_sig sig;
	struct sigv4 *s;
	struct cred *c;
	char url[256], creds[512];
	int n;

	snprintf(creds, sizeof(creds),
	    "[floe]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
	    "aws_session_token = %s\n",
	    AKID, SECRET, TOKEN);
	env->t.auth = CONF_CRED_SIGV4;
	env->t.sigv4_region = region;
	env->t.sigv4_service = service;
	env->t.aws_credentials_file =
	    xstrdup(write_file(env, "aws", creds, 0600));
	env->t.aws_profile = xstrdup("floe");
	c = cred_new(env->base, env->f, &env->t, "warehouse", why, sizeof(why));
	assert_non_null(c);
	assert_int_equal(cred_kind(c), CRED_SIGV4);
	cred_set_passthrough(c, true);
	assert_true(cred_on_data(c));
	snprintf(url, sizeof(url), "http://127.0.0.1:8181%s?%s", path, query);
	n = cred_headers(c, "GET", url, NULL, 0, h, why, sizeof(why));
	assert_int_equal(n, 3);
	assert_string_equal(header(h, n, "X-Amz-Security-Token"), TOKEN);
	assert_null(header(h, n, "X-Amz-Content-Sha256"));

	s = sigv4_new(region, service, 0, why, sizeof(why));
	assert_non_null(s);
	assert_int_equal(sigv4_set_creds(s, AKID, SECRET, TOKEN, why,
			     sizeof(why)),
	    0);
	memset(&m, 0, sizeof(m));
	m.method = "GET";
	m.path = path;
	m.path_len = strlen(path);
	m.query = query;
	m.query_len = strlen(query);
	m.host = "127.0.0.1:8181";
	m.host_len = strlen(m.host);
	assert_int_equal(sigv4_sign(s, &m, amz_time(header(h, n, "X-Amz-Date")),
			     &sig),
	    0);
	assert_string_equal(header(h, n, "Authorization"), sig.auth);
	cred_headers_clear(h, n);
	sigv4_free(s);
	cred_free(c);

	/* S3 Tables: the payload hash is sent, of the body given. */
	env->t.sigv4_service = s3t;
	c = cred_new(env->base, env->f, &env->t, "lakehouse", why, sizeof(why));
	assert_non_null(c);
	n = cred_headers(c, "POST", url, "{}", 2, h, why, sizeof(why));
	assert_int_equal(n, 4);
	assert_string_equal(header(h, n, "X-Amz-Content-Sha256"),
	    "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
	cred_headers_clear(h, n);
	cred_free(c);
	free(env->t.aws_credentials_file);
	free(env->t.aws_profile);
}

/*
 * OAuth2 before its first token: not ready, pending, floe's calls wait;
 * a secret file others may read is refused by name.
 */
static void
test_oauth2(void **state)
{
	struct env *env = *state;
	char *h[CRED_MAX_HDRS], why[256], want[256],
	    id[] = "floe", uri[] = "http://127.0.0.1:1/oauth/tokens";
	struct cred *c;

	env->t.auth = CONF_CRED_OAUTH2;
	env->t.oauth_token_uri = uri;
	env->t.client_id = id;
	env->t.client_secret_file =
	    xstrdup(write_file(env, "secret", "s3cret\n", 0640));
	assert_null(cred_new(env->base, env->f, &env->t, "warehouse", why,
	    sizeof(why)));
	snprintf(want, sizeof(want),
	    "%s: mode 0640 lets its group or others at a secret; chmod 600 "
	    "it",
	    env->t.client_secret_file);
	assert_string_equal(why, want);
	assert_int_equal(chmod(env->t.client_secret_file, 0600), 0);
	c = cred_new(env->base, env->f, &env->t, "warehouse", why, sizeof(why));
	assert_non_null(c);
	assert_int_equal(cred_kind(c), CRED_BEARER);
	assert_true(cred_is_pending(c));
	assert_false(cred_is_ready(c));
	assert_null(cred_bearer(c, NULL));
	assert_int_equal(cred_headers(c, "GET",
			     "http://127.0.0.1:8181/v1/config", NULL, 0, h, why,
			     sizeof(why)),
	    -1);
	assert_string_equal(why,
	    "the warehouse catalog's token endpoint 127.0.0.1:1/oauth/tokens "
	    "has not answered yet");
	cred_free(c);
	free(env->t.client_secret_file);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sigv4, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oauth2, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
