/*
 * floe: test_token.c -- the token holder on a real event loop against
 * tests/catauth/tokens.py, a token server of its own (client credentials,
 * and Google's JWT-bearer grant verified with PyJWT): the first token, a
 * refresh before expiry with no gap, a refusing endpoint (the old token
 * kept until it expires, then gone with the endpoint named, one log line
 * per event, not per retry), a slow endpoint, 401-triggered refreshes
 * rate-limited, secret files, and no secret or token in any log line.
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/oauth.h"
#include "proxy/fetch.h"
#include "proxy/token.h"

#define CLIENT "floe-client"
#define SECRET "S3CRET-client-7f1c=&+"
#define EMAIL "floe@test.iam.gserviceaccount.com"
#define MAX_SEEN 64

struct env {
	struct event_base *base;
	struct fetch *fetch;
	pid_t server;
	int port;
	char dir[64];
	char secret_file[128];
	char key_file[128]; /* the Google key, as a service-account JSON */
	char pub_file[128]; /* its public half, for the server */
	char log_file[128];
	int saved_stderr;
	/* What the changed callback saw. */
	int changes;
	int gone_changes; /* changes to no token */
	int64_t change_us[MAX_SEEN];
	char *seen[MAX_SEEN]; /* every token handed out */
	int nseen;
	struct token *live[4]; /* holders of the running test */
	long log_at; /* where the running test's log lines start */
};

static struct env *E;

/* Write TEXT to PATH with MODE. */
static void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* The PEM of KEY, private or public. Caller frees. */
static char *
pem_of(EVP_PKEY *key, bool private)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p, *out;
	long n;

	if (private)
		assert_int_equal(PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0,
				     NULL, NULL),
		    1);
	else
		assert_int_equal(PEM_write_bio_PUBKEY(b, key), 1);
	n = BIO_get_mem_data(b, &p);
	out = xstrndup(p, (size_t)n);
	BIO_free(b);
	return out;
}

/* A service-account key file for KEY whose token_uri is the server's. */
static void
write_google_key(const char *path, EVP_PKEY *key, int port)
{
	char *pem = pem_of(key, true), *text, uri[128];
	json_t *j;

	snprintf(uri, sizeof(uri), "http://127.0.0.1:%d/google/token", port);
	j = json_pack("{ss ss ss ss ss}", "type", "service_account",
	    "private_key_id", "kid-1", "private_key", pem, "client_email",
	    EMAIL, "token_uri", uri);
	text = json_dumps(j, JSON_INDENT(2));
	write_file(path, text, 0600);
	free(text);
	free(pem);
	json_decref(j);
}

/* Start tokens.py and read the port it prints. */
static void
server_start(struct env *env)
{
	const char *top = getenv("FLOE_TOP");
	char script[512], line[64];
	struct pollfd pfd;
	int fds[2];
	ssize_t n;
	size_t got = 0;

	snprintf(script, sizeof(script), "%s/tests/catauth/tokens.py",
	    top != NULL ? top : ".");
	assert_int_equal(pipe(fds), 0);
	env->server = fork();
	assert_true(env->server >= 0);
	if (env->server == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl("/usr/bin/python3", "python3", script, "--client-id",
		    CLIENT, "--secret-file", env->secret_file, "--google-pub",
		    env->pub_file, "--google-email", EMAIL, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	/* Up to 10 s for python to start; one line. */
	while (got < sizeof(line) - 1 && memchr(line, '\n', got) == NULL) {
		if (poll(&pfd, 1, 10000) != 1)
			fail_msg("tokens.py did not start (python3-jwt?)");
		n = read(fds[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			fail_msg("tokens.py exited (python3-jwt installed?)");
		got += (size_t)n;
		line[got] = '\0';
	}
	close(fds[0]);
	assert_int_equal(sscanf(line, "ready %d", &env->port), 1);
}

/* Loop-stopping helpers: a watchdog, and a check every 10 ms. */
struct waiter {
	struct env *env;
	bool (*pred)(void *);
	void *arg;
	bool met;
};

static void
waiter_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct waiter *w = arg;

	if (w->pred != NULL && w->pred(w->arg)) {
		w->met = true;
		event_base_loopbreak(w->env->base);
	}
}

static void
watchdog_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	event_base_loopbreak(arg);
}

/* Run the loop until PRED(ARG) holds (checked every 10 ms) or MS pass. */
static bool
run_until(struct env *env, bool (*pred)(void *), void *arg, int ms)
{
	struct waiter w = { env, pred, arg, false };
	struct event *tick, *wd;
	struct timeval t10 = { 0, 10000 }, tv = units_ms_tv((uint64_t)ms);

	if (pred != NULL && pred(arg))
		return true;
	tick = event_new(env->base, -1, EV_PERSIST, waiter_cb, &w);
	wd = evtimer_new(env->base, watchdog_cb, env->base);
	event_add(tick, &t10);
	evtimer_add(wd, &tv);
	event_base_dispatch(env->base);
	event_free(tick);
	event_free(wd);
	return w.met;
}

/* One HTTP exchange with the server through fetch, on the loop. */
struct http {
	bool done;
	int status;
	char body[1024];
};

static void
http_cb(int status, const char *body, size_t len, const char *error __unused,
    void *arg)
{
	struct http *h = arg;

	h->done = true;
	h->status = status;
	snprintf(h->body, sizeof(h->body), "%.*s", (int)len, body);
}

static bool
http_done(void *arg)
{
	return ((struct http *)arg)->done;
}

/* METHOD PATH with BODY (or NULL) and a bearer TOKEN (or NULL). */
static json_t *
http(struct env *env, const char *path, const char *body, const char *token,
    int *status)
{
	struct fetch_opts o = { 0 };
	struct http h = { 0 };
	const char *hdrs[2] = { NULL, NULL };
	char url[256], *auth = NULL;
	json_t *j;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", env->port, path);
	if (body != NULL) {
		o.method = "POST";
		o.body = body;
		o.body_len = strlen(body);
	}
	if (token != NULL) {
		auth = xasprintf("Authorization: Bearer %s", token);
		hdrs[0] = auth;
		o.headers = hdrs;
	}
	fetch_start(env->fetch, url, &o, http_cb, &h);
	free(auth);
	assert_true(run_until(env, http_done, &h, 5000));
	if (status != NULL)
		*status = h.status;
	j = json_loads(h.body, 0, NULL);
	assert_non_null(j);
	return j;
}

/* Set the server's behaviour. */
static void
control(struct env *env, const char *json)
{
	int status;

	json_decref(http(env, "/control", json, NULL, &status));
	assert_int_equal(status, 200);
}

/* A number from /stats. */
static json_int_t
stat_int(struct env *env, const char *name)
{
	json_t *j = http(env, "/stats", NULL, NULL, NULL);
	json_int_t v = json_integer_value(json_object_get(j, name));

	json_decref(j);
	return v;
}

/* A string from /stats, into BUF. */
static void
stat_str(struct env *env, const char *name, char *buf, size_t len)
{
	json_t *j = http(env, "/stats", NULL, NULL, NULL);

	snprintf(buf, len, "%s",
	    json_string_value(json_object_get(j, name)) != NULL ?
		json_string_value(json_object_get(j, name)) :
		"");
	json_decref(j);
}

/* Does the server take TOK as a live token of its own? */
static bool
token_live(struct env *env, const char *tok)
{
	int status;
	json_t *j = http(env, "/introspect", NULL, tok, &status);
	bool live = status == 200 && json_is_true(json_object_get(j, "active"));

	json_decref(j);
	return live;
}

static void
changed_cb(struct token *t, void *arg)
{
	struct env *env = arg;
	const char *tok = token_get(t, NULL);

	if (env->changes < MAX_SEEN)
		env->change_us[env->changes] = units_mono_us();
	env->changes++;
	if (tok == NULL)
		env->gone_changes++;
	else if (env->nseen < MAX_SEEN)
		env->seen[env->nseen++] = xstrdup(tok);
}

/* Note T as the running test's: freed after it even if it fails. */
static struct token *
keep(struct env *env, struct token *t)
{
	size_t i;

	for (i = 0; i < nitems(env->live); i++)
		if (env->live[i] == NULL) {
			env->live[i] = t;
			return t;
		}
	fail_msg("too many holders");
	return NULL;
}

/* Free T and forget it. */
static void
drop(struct env *env, struct token *t)
{
	size_t i;

	for (i = 0; i < nitems(env->live); i++)
		if (env->live[i] == t)
			env->live[i] = NULL;
	token_free(t);
}

/* A client-credentials holder against the server. */
static struct token *
holder(struct env *env, const char *path, enum oauth_client_auth auth,
    const struct token_opts *extra)
{
	struct token_opts o = { 0 };
	struct oauth *g;
	char uri[128], err[256];

	if (extra != NULL)
		o = *extra;
	o.name = "warehouse";
	o.changed = changed_cb;
	o.arg = env;
	if (o.retry_min_ms == 0)
		o.retry_min_ms = 100;
	if (o.retry_max_ms == 0)
		o.retry_max_ms = 400;
	snprintf(uri, sizeof(uri), "http://127.0.0.1:%d%s", env->port, path);
	g = oauth_client_load(uri, CLIENT, env->secret_file,
	    "PRINCIPAL_ROLE:ALL", NULL, auth, err, sizeof(err));
	if (g == NULL)
		fail_msg("%s", err);
	return keep(env, token_new(env->base, env->fetch, g, &o));
}

struct state_is {
	struct token *t;
	enum token_state s;
};

static bool
state_is(void *arg)
{
	struct token_info i;
	struct state_is *w = arg;

	token_info(w->t, &i);
	return i.state == w->s;
}

/* Run until T is in state S, at most MS. */
static bool
wait_state(struct env *env, struct token *t, enum token_state s, int ms)
{
	struct state_is w = { t, s };

	return run_until(env, state_is, &w, ms);
}

struct gen_is {
	struct token *t;
	uint64_t gen;
};

static bool
gen_at_least(void *arg)
{
	struct gen_is *w = arg;
	uint64_t gen;

	return token_get(w->t, &gen) != NULL && gen >= w->gen;
}

static bool
wait_gen(struct env *env, struct token *t, uint64_t gen, int ms)
{
	struct gen_is w = { t, gen };

	return run_until(env, gen_at_least, &w, ms);
}

/*
 * Lines of the captured log that hold A (and B if not NULL): the running
 * test's lines, or the whole log if ALL.
 */
static int
log_lines(struct env *env, const char *a, const char *b, bool all)
{
	char line[2048];
	int n = 0;
	FILE *f = fopen(env->log_file, "r");

	assert_non_null(f);
	if (!all)
		fseek(f, env->log_at, SEEK_SET);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, a) != NULL && (b == NULL || strstr(line, b)))
			n++;
	fclose(f);
	return n;
}

static int
log_count(struct env *env, const char *a, const char *b)
{
	return log_lines(env, a, b, false);
}

/* The log never holds the secret, the key or any token handed out. */
static void
log_clean(struct env *env)
{
	int i;

	assert_int_equal(log_lines(env, SECRET, NULL, true), 0);
	assert_int_equal(log_lines(env, "S3CRET", NULL, true), 0);
	assert_int_equal(log_lines(env, "PRIVATE KEY", NULL, true), 0);
	assert_int_equal(log_lines(env, "tok-", NULL, true), 0);
	for (i = 0; i < env->nseen; i++)
		assert_int_equal(log_lines(env, env->seen[i], NULL, true), 0);
}

static int
setup(void **state)
{
	struct env *env = xcalloc(1, sizeof(*env));
	EVP_PKEY *key;
	char *pub;
	int fd;

	snprintf(env->dir, sizeof(env->dir), "/tmp/floe-token.XXXXXX");
	assert_non_null(mkdtemp(env->dir));
	snprintf(env->secret_file, sizeof(env->secret_file), "%s/secret",
	    env->dir);
	snprintf(env->key_file, sizeof(env->key_file), "%s/sa.json", env->dir);
	snprintf(env->pub_file, sizeof(env->pub_file), "%s/sa.pub", env->dir);
	snprintf(env->log_file, sizeof(env->log_file), "%s/log", env->dir);
	write_file(env->secret_file, SECRET "\n", 0600);
	key = EVP_RSA_gen(2048);
	assert_non_null(key);
	pub = pem_of(key, false);
	write_file(env->pub_file, pub, 0644);
	free(pub);
	server_start(env);
	write_google_key(env->key_file, key, env->port);
	EVP_PKEY_free(key);
	env->base = event_base_new();
	env->fetch = fetch_new(env->base);
	assert_non_null(env->fetch);
	/* Every log line goes to a file the tests read. */
	log_init(1);
	fprintf(stderr, "test_token: stderr goes to %s\n", env->log_file);
	env->saved_stderr = dup(2);
	fd = open(env->log_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	dup2(fd, 2);
	close(fd);
	E = env;
	*state = env;
	return 0;
}

static int
teardown(void **state)
{
	struct env *env = *state;
	char cmd[256];
	int i, status;

	dup2(env->saved_stderr, 2);
	close(env->saved_stderr);
	fetch_free(env->fetch);
	event_base_free(env->base);
	kill(env->server, SIGTERM);
	waitpid(env->server, &status, 0);
	for (i = 0; i < env->nseen; i++)
		free(env->seen[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", env->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", env->dir);
	free(env);
	return 0;
}

/* Reset the server and the counters between tests. */
static int
reset(void **state)
{
	struct env *env = *state;

	control(env, "{\"reset\":true,\"lifetime\":3600}");
	env->changes = env->gone_changes = 0;
	return 0;
}

/*
 * After each test: free what a failed test left, and show the failure
 * messages cmocka wrote into the captured log.
 */
static int
after(void **state)
{
	struct env *env = *state;
	char line[2048];
	size_t i;
	FILE *f;

	for (i = 0; i < nitems(env->live); i++)
		if (env->live[i] != NULL)
			drop(env, env->live[i]);
	if ((f = fopen(env->log_file, "r")) == NULL)
		return 0;
	fseek(f, env->log_at, SEEK_SET);
	while (fgets(line, sizeof(line), f) != NULL)
		if (line[0] == '[' || strncmp(line, "==", 2) == 0)
			(void)write(env->saved_stderr, line, strlen(line));
	env->log_at = ftell(f);
	fclose(f);
	return 0;
}

/* The first token, with the client as form fields and with HTTP Basic. */
static void
test_first(void **state)
{
	struct env *env = *state;
	struct token_info i;
	struct token *t;
	char buf[256], want[128];
	const char *tok;
	uint64_t gen;
	json_t *j;

	t = holder(env, "/oauth/tokens", OAUTH_AUTH_FORM, NULL);
	assert_null(token_get(t, &gen));
	token_info(t, &i);
	assert_int_equal(i.state, TOKEN_PENDING);
	token_why(t, buf, sizeof(buf));
	snprintf(want, sizeof(want),
	    "the warehouse catalog's token endpoint 127.0.0.1:%d/oauth/tokens "
	    "has not answered yet",
	    env->port);
	assert_string_equal(buf, want);
	token_start(t);
	assert_true(wait_state(env, t, TOKEN_OK, 5000));
	tok = token_get(t, &gen);
	assert_non_null(tok);
	assert_int_equal(gen, 1);
	assert_int_equal(env->changes, 1);
	assert_true(token_live(env, tok));
	stat_str(env, "last_auth", buf, sizeof(buf));
	assert_string_equal(buf, "form");
	stat_str(env, "last_scope", buf, sizeof(buf));
	assert_string_equal(buf, "PRINCIPAL_ROLE:ALL");
	token_info(t, &i);
	assert_int_equal(i.fetches, 1);
	assert_int_equal(i.failures, 0);
	assert_null(i.last_error);
	snprintf(want, sizeof(want), "127.0.0.1:%d/oauth/tokens", env->port);
	assert_string_equal(i.endpoint, want);
	assert_string_equal(i.grant, "client_credentials");
	/* Expires an hour from now (give or take the test's pace). */
	assert_true(i.expires_ms > units_now_ms() + 3590 * 1000);
	assert_true(i.expires_ms <= units_now_ms() + 3600 * 1000);
	j = token_status_json(t);
	assert_string_equal(json_string_value(json_object_get(j, "state")),
	    "ok");
	assert_true(json_is_string(json_object_get(j, "expires")));
	assert_true(json_is_null(json_object_get(j, "last_error")));
	json_decref(j);
	drop(env, t);

	t = holder(env, "/oauth/tokens", OAUTH_AUTH_BASIC, NULL);
	token_start(t);
	assert_true(wait_state(env, t, TOKEN_OK, 5000));
	assert_true(token_live(env, token_get(t, NULL)));
	stat_str(env, "last_auth", buf, sizeof(buf));
	assert_string_equal(buf, "basic");
	drop(env, t);
	log_clean(env);
}

/* A 3 s token is refreshed at 80 %, before it expires: no gap. */
static void
test_refresh(void **state)
{
	struct env *env = *state;
	struct token *t;
	const char *tok;
	int64_t gap;

	control(env, "{\"lifetime\":3,\"expires_in\":\"string\"}");
	t = holder(env, "/oauth/tokens", OAUTH_AUTH_FORM, NULL);
	token_start(t);
	assert_true(wait_gen(env, t, 1, 5000));
	assert_true(wait_gen(env, t, 3, 8000));
	assert_int_equal(env->changes, 3);
	assert_int_equal(env->gone_changes, 0);
	/* 2.4 s apart, give or take the loop; never after the expiry. */
	gap = env->change_us[1] - env->change_us[0];
	if (gap < 2200000 || gap >= 3000000)
		fail_msg("refreshed %lld us after the first token",
		    (long long)gap);
	gap = env->change_us[2] - env->change_us[1];
	assert_true(gap >= 2200000 && gap < 3000000);
	tok = token_get(t, NULL);
	assert_true(token_live(env, tok));
	assert_int_equal(stat_int(env, "issued"), 3);
	drop(env, t);
	log_clean(env);
}

/*
 * A reload's new holder takes the running token over: the same token and
 * generation at once, no token request, and its own refresh on the old
 * schedule (at 80 % of the 3 s life).
 */
static void
test_adopt(void **state)
{
	struct env *env = *state;
	struct token *a, *b;
	struct token_info i;
	const char *tok;
	uint64_t gen, gen_b;
	char *copy;

	control(env, "{\"lifetime\":3}");
	a = holder(env, "/oauth/tokens", OAUTH_AUTH_FORM, NULL);
	token_start(a);
	assert_true(wait_gen(env, a, 1, 5000));
	copy = xstrdup(token_get(a, &gen));
	b = holder(env, "/oauth/tokens", OAUTH_AUTH_FORM, NULL);
	token_adopt(b, a);
	token_start(b);
	drop(env, a);
	tok = token_get(b, &gen_b);
	assert_non_null(tok);
	assert_string_equal(tok, copy);
	assert_int_equal(gen_b, gen);
	token_info(b, &i);
	assert_int_equal(i.state, TOKEN_OK);
	assert_int_equal(i.fetches, 1);
	assert_int_equal(stat_int(env, "issued"), 1);
	/* Its own refresh, before the adopted token expires. */
	assert_true(wait_gen(env, b, gen + 1, 4000));
	assert_string_not_equal(token_get(b, NULL), copy);
	assert_int_equal(stat_int(env, "issued"), 2);
	free(copy);
	drop(env, b);
	log_clean(env);
}

/*
 * A refusing endpoint: the token is kept until it expires, then gone with
 * the endpoint and its words named; one log line when the outage starts,
 * one when the token goes, one when the endpoint answers again, whatever
 * the number of retries.
 */
static void
test_refusal(void **state)
{
	struct env *env = *state;
	struct token_info i;
	struct token *t;
	char why[512], want[512];
	const char *tok;
	uint64_t gen, gen1;
	int64_t t0;
	json_t *j;

	control(env, "{\"lifetime\":3}");
	t = holder(env, "/oauth/tokens", OAUTH_AUTH_FORM, NULL);
	token_start(t);
	assert_true(wait_gen(env, t, 1, 5000));
	t0 = units_mono_us();
	tok = token_get(t, &gen1);
	control(env, "{\"refuse\":401}");
	/* The refresh at 2.4 s fails: the token stays. */
	assert_true(wait_state(env, t, TOKEN_FAILING, 5000));
	assert_true(units_mono_us() - t0 < 3000000);
	assert_ptr_equal(token_get(t, &gen), tok);
	assert_int_equal(gen, gen1);
	assert_true(token_live(env, tok));
	j = token_status_json(t);
	assert_string_equal(json_string_value(json_object_get(j, "state")),
	    "failing");
	assert_string_equal(json_string_value(json_object_get(j, "last_error")),
	    "HTTP 401: invalid_client: refused for the test");
	assert_true(json_is_string(json_object_get(j, "expires")));
	json_decref(j);
	/* At 3 s it is gone, and the 503 can say why. */
	assert_true(wait_state(env, t, TOKEN_GONE, 3000));
	assert_null(token_get(t, NULL));
	assert_int_equal(env->gone_changes, 1);
	token_why(t, why, sizeof(why));
	snprintf(want, sizeof(want),
	    "the warehouse catalog's token endpoint 127.0.0.1:%d/oauth/tokens: "
	    "HTTP 401: invalid_client: refused for the test",
	    env->port);
	assert_string_equal(why, want);
	/* Retries went on meanwhile, more than once... */
	run_until(env, NULL, NULL, 600);
	token_info(t, &i);
	assert_true(i.failures >= 3);
	assert_int_equal(i.expires_ms, 0);
	assert_true(stat_int(env, "refused") >= 3);
	/*
	 * ... and were logged once, as was the loss of the token (each
	 * retry has a debug line only; this log is at debug level).
	 */
	assert_int_equal(log_count(env, "token endpoint",
			     "retrying, the "
			     "current token is "
			     "valid for"),
	    1);
	assert_int_equal(log_count(env, "invalid_client",
			     "the warehouse "
			     "catalog's"),
	    2);
	assert_true(log_count(env, "invalid_client",
			"token_failed: "
			"warehouse catalog: ") >= 2);
	assert_int_equal(log_count(env, "token expired",
			     "requests to it get "
			     "503"),
	    1);
	/* The endpoint is back: a new token, logged once. */
	control(env, "{\"refuse\":0,\"lifetime\":3600}");
	assert_true(wait_state(env, t, TOKEN_OK, 3000));
	tok = token_get(t, &gen);
	assert_non_null(tok);
	assert_int_equal(gen, gen1 + 1);
	assert_true(token_live(env, tok));
	assert_int_equal(log_count(env, "answers again", NULL), 1);
	token_info(t, &i);
	assert_null(i.last_error);
	drop(env, t);
	log_clean(env);
}

/*
 * A slow endpoint: past the timeout, the first fetch fails and says so;
 * under it, a refresh in flight leaves the old token in use.
 */
static void
test_slow(void **state)
{
	struct env *env = *state;
	struct token_opts o = { .timeout_ms = 700 };
	struct token *t;
	char why[512];
	const char *tok;
	uint64_t gen;

	control(env, "{\"delay_ms\":1500}");
	t = holder(env, "/oauth/tokens", OAUTH_AUTH_FORM, &o);
	token_start(t);
	assert_true(wait_state(env, t, TOKEN_GONE, 3000));
	token_why(t, why, sizeof(why));
	assert_non_null(strstr(why, "/oauth/tokens: timed out after 700 ms"));
	control(env, "{\"delay_ms\":300,\"lifetime\":3}");
	assert_true(wait_state(env, t, TOKEN_OK, 5000));
	tok = token_get(t, &gen);
	assert_int_equal(gen, 1);
	/* The refresh at 2.4 s takes 0.3 s: gen 1 is served meanwhile. */
	assert_true(wait_gen(env, t, 2, 5000));
	assert_int_equal(env->gone_changes, 0);
	assert_true(token_live(env, token_get(t, NULL)));
	(void)tok;
	drop(env, t);
	log_clean(env);
}

/* A catalog's 401 refreshes early, once, and not again within 1 s. */
static void
test_unauthorized(void **state)
{
	struct env *env = *state;
	struct token_opts o = { .early_min_ms = 1000 };
	struct token_info i;
	struct token *t;
	uint64_t gen;
	int k;

	t = holder(env, "/oauth/tokens", OAUTH_AUTH_FORM, &o);
	token_start(t);
	assert_true(wait_gen(env, t, 1, 5000));
	assert_int_equal(stat_int(env, "requests"), 1);
	assert_true(token_unauthorized(t, 1));
	/* While that refresh is on its way, no other. */
	assert_false(token_unauthorized(t, 1));
	assert_true(wait_gen(env, t, 2, 5000));
	/* A 401 for the replaced token: nothing to do. */
	assert_false(token_unauthorized(t, 1));
	/* A storm of 401s for the new one: rate-limited. */
	for (k = 0; k < 100; k++)
		assert_false(token_unauthorized(t, 2));
	run_until(env, NULL, NULL, 200);
	assert_int_equal(stat_int(env, "requests"), 2);
	token_get(t, &gen);
	assert_int_equal(gen, 2);
	/* A second later, one more is allowed. */
	run_until(env, NULL, NULL, 1000);
	assert_true(token_unauthorized(t, 2));
	assert_true(wait_gen(env, t, 3, 5000));
	assert_int_equal(stat_int(env, "requests"), 3);
	token_info(t, &i);
	assert_int_equal(i.early, 2);
	assert_int_equal(i.state, TOKEN_OK);
	assert_int_equal(log_count(env, "refused floe's token (401)", NULL), 2);
	drop(env, t);
	log_clean(env);
}

/* Google's grant: an assertion PyJWT verifies; a wrong key refused. */
static void
test_google(void **state)
{
	struct env *env = *state;
	struct token_opts o = { .name = "lakehouse",
		.retry_min_ms = 100,
		.retry_max_ms = 400 };
	struct token_info i;
	struct oauth *g;
	struct token *t;
	EVP_PKEY *other;
	char err[256], buf[512], want[256];

	o.changed = changed_cb;
	o.arg = env;
	g = oauth_google_load(env->key_file, NULL, err, sizeof(err));
	if (g == NULL)
		fail_msg("%s", err);
	t = keep(env, token_new(env->base, env->fetch, g, &o));
	token_start(t);
	assert_true(wait_state(env, t, TOKEN_OK, 5000));
	assert_true(token_live(env, token_get(t, NULL)));
	stat_str(env, "last_auth", buf, sizeof(buf));
	assert_string_equal(buf, "jwt");
	token_info(t, &i);
	assert_string_equal(i.grant, "jwt-bearer");
	snprintf(want, sizeof(want), "127.0.0.1:%d/google/token", env->port);
	assert_string_equal(i.endpoint, want);
	drop(env, t);

	/* The same account signed with another key. */
	other = EVP_RSA_gen(2048);
	write_google_key(env->key_file, other, env->port);
	EVP_PKEY_free(other);
	g = oauth_google_load(env->key_file, NULL, err, sizeof(err));
	assert_non_null(g);
	t = keep(env, token_new(env->base, env->fetch, g, &o));
	token_start(t);
	assert_true(wait_state(env, t, TOKEN_GONE, 5000));
	token_why(t, buf, sizeof(buf));
	assert_non_null(strstr(buf,
	    "/google/token: HTTP 400: invalid_grant: "
	    "Invalid JWT: Signature verification "
	    "failed"));
	drop(env, t);
	log_clean(env);
}

/* A secret file its group may read is refused, naming it. */
static void
test_secret_file(void **state)
{
	struct env *env = *state;
	char err[512], want[512];

	assert_int_equal(chmod(env->secret_file, 0640), 0);
	assert_null(oauth_client_load("http://127.0.0.1/t", CLIENT,
	    env->secret_file, NULL, NULL, OAUTH_AUTH_FORM, err, sizeof(err)));
	snprintf(want, sizeof(want),
	    "%s: mode 0640 lets its group or others at a secret; chmod 600 it",
	    env->secret_file);
	assert_string_equal(err, want);
	assert_int_equal(chmod(env->key_file, 0644), 0);
	assert_null(oauth_google_load(env->key_file, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "mode 0644 lets its group or others"));
	assert_int_equal(chmod(env->secret_file, 0600), 0);
	assert_int_equal(chmod(env->key_file, 0600), 0);
	/* A wrong secret: the endpoint's refusal, not the secret, is shown. */
	write_file(env->secret_file, "wrong-S3CRET\n", 0600);
	{
		struct token *t =
		    holder(env, "/oauth/tokens", OAUTH_AUTH_FORM, NULL);

		write_file(env->secret_file, SECRET "\n", 0600);
		token_start(t);
		assert_true(wait_state(env, t, TOKEN_GONE, 5000));
		token_why(t, err, sizeof(err));
		assert_non_null(strstr(err,
		    "HTTP 401: invalid_client: unknown "
		    "client or wrong secret"));
		drop(env, t);
	}
	log_clean(env);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first, reset, after),
		cmocka_unit_test_setup_teardown(test_refresh, reset, after),
		cmocka_unit_test_setup_teardown(test_adopt, reset, after),
		cmocka_unit_test_setup_teardown(test_refusal, reset, after),
		cmocka_unit_test_setup_teardown(test_slow, reset, after),
		cmocka_unit_test_setup_teardown(test_unauthorized, reset,
		    after),
		cmocka_unit_test_setup_teardown(test_google, reset, after),
		cmocka_unit_test_setup_teardown(test_secret_file, reset, after),
	};

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	{
		int rc = cmocka_run_group_tests(tests, setup, teardown);

		curl_global_cleanup();
		return rc;
	}
}
