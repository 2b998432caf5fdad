/*
 * floe: test_conf.c -- proxy/conf.c and conf_keys.c: the good fixtures
 * load with the values they hold, every bad fixture fails with exactly the
 * error of its .err file, relative paths are taken from the conf's
 * directory, and conf/floe.conf loads and documents the true defaults.
 * Runs from the repository root, or from $FLOE_TOP.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "lib/nodename.h"
#include "proxy/conf.h"
#include "routing/route.h"

#define BAD_DIR "tests/fixtures/conf/bad"
#define GOOD_DIR "tests/fixtures/conf/good"

/* A conf written on the fly: its text and the error it must give. */
struct inline_case {
	const char *name;
	const char *text; /* appended after two valid [warehouse]/[lakehouse] */
	const char *err; /* after "PATH:", or NULL if it must load */
};

#define UPSTREAMS                                                              \
	"[warehouse]\nuri = http://127.0.0.1:9001\n"                           \
	"[lakehouse]\nuri = http://127.0.0.1:9002\n"

#define X10 "xxxxxxxxxx"
#define X190                                                                   \
	X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10    \
	    X10 X10

static const struct inline_case inline_cases[] = {
	{ "nothing more", "", NULL },
	{ "a line of 198 bytes and its newline",
	    "; " X190 "xxxxxx\n"
	    "[floe]\ndrain = 1s\n",
	    NULL },
	{ "a line of 199 bytes and its newline", "; " X190 "xxxxxxx\n",
	    "5: line is 200 bytes long; lines must be shorter than 200 bytes" },
	{ "crlf line ends", "[floe]\r\ndrain = 3s\r\n", NULL },
	{ "bad value on a crlf line", "[floe]\r\ndrain = 3x\r\n",
	    "6: [floe] drain: \"3x\" is not a duration" },
	{ "workers = 4", "[floe]\nworkers = 4\n", NULL },
	{ "workers = auto", "[floe]\nworkers = auto\n", NULL },
	{ "workers = 0", "[floe]\nworkers = 0\n",
	    "6: [floe] workers: \"0\" is neither auto nor a number from 1 to "
	    "64" },
	{ "workers = 65", "[floe]\nworkers = 65\n",
	    "6: [floe] workers: \"65\" is neither auto nor a number from 1 to "
	    "64" },
	{ "ipv4 listen, max port", "[floe]\nlisten = 0.0.0.0:65535\n", NULL },
	{ "listen without a port", "[floe]\nlisten = 127.0.0.1\n",
	    "6: [floe] listen: \"127.0.0.1\" is not ADDRESS:PORT (IPv4 or "
	    "[IPv6], port 1-65535)" },
	{ "listen with a bad address", "[floe]\nlisten = 127.0.0.256:80\n",
	    "6: [floe] listen: \"127.0.0.256:80\" is not ADDRESS:PORT (IPv4 "
	    "or [IPv6], port 1-65535)" },
	{ "v6 listen without brackets", "[floe]\nlisten = ::1:80\n",
	    "6: [floe] listen: \"::1:80\" is not ADDRESS:PORT (IPv4 or "
	    "[IPv6], port 1-65535)" },
	{ "listen port with a sign", "[floe]\nlisten = 127.0.0.1:+80\n",
	    "6: [floe] listen: \"127.0.0.1:+80\" is not ADDRESS:PORT (IPv4 or "
	    "[IPv6], port 1-65535)" },
	{ "sixteen uids",
	    "[floe]\nadmin_uids = 0 1 2 3 4 5 6 7 8 9 10 11 12 "
	    "13 14 15\n",
	    NULL },
	{ "uids, only commas", "[floe]\nadmin_uids = , ,\n",
	    "6: [floe] admin_uids: \", ,\" holds no uid" },
	{ "uid -1", "[floe]\nadmin_uids = 4294967295\n",
	    "6: [floe] admin_uids: \"4294967295\" is not a uid" },
	{ "max size", "[floe]\nmax_header = 1G\n", NULL },
	{ "zero size", "[floe]\nmax_body = 0\n",
	    "6: [floe] max_body: \"0\" must be more than zero" },
	{ "count with a sign", "[policy]\ngate_min_clean = +5\n",
	    "6: [policy] gate_min_clean: \"+5\" is not a whole number" },
	{ "count too big", "[policy]\nerror_min_requests = 4294967296\n",
	    "6: [policy] error_min_requests: \"4294967296\" is not a whole "
	    "number" },
	{ "factor zero", "[policy]\nerror_ratio = 0.0\n",
	    "6: [policy] error_ratio: \"0.0\" is not a number above zero" },
	{ "factor with exponent", "[policy]\nerror_ratio = 1e3\n",
	    "6: [policy] error_ratio: \"1e3\" is not a number above zero" },
	{ "uri again in a second [warehouse]",
	    "[warehouse]\nuri = http://127.0.0.1:9003\n",
	    "6: [warehouse] uri: duplicate key (first set on line 2)" },
	{ "grace zero", "[policy]\ngrace = 0\n", NULL },
	{ "gate of zero records", "[policy]\ngate_min_clean = 0\n", NULL },
	{ "key in the wrong section", "[floe]\ntimeout = 1s\n",
	    "6: [floe] timeout: unknown key" },
	{ "section names are case-sensitive", "[Policy]\n",
	    "5: [Policy]: unknown section" },
	{ "empty section header", "[]\n", "5: []: unknown section" },
	{ "keys are case-sensitive", "[floe]\nListen = 127.0.0.1:1\n",
	    "6: [floe] Listen: unknown key" },
	{ "empty key", "[floe]\n= 1\n", "6: [floe] : unknown key" },
	{ "comment on the section line", "[floe] ; the daemon\ndrain = 1s\n",
	    NULL },
	{ "indented key right after a header", "[floe]\n  drain = 1s\n", NULL },
	{ "indented section header after a key",
	    "[floe]\ndrain = 1s\n "
	    "[policy]\n",
	    "7: indented line: inih would append it to the value above; "
	    "remove the indentation" },
	{ "duplicate across repeated sections",
	    "[policy]\ngrace = 1d\n[auth]\nmode = none\n[policy]\ngrace = 2d\n",
	    "10: [policy] grace: duplicate key (first set on line 6)" },
	{ "inline comment needs a blank", "[auth]\nmode = none;x\n",
	    "6: [auth] mode: \"none;x\" is not one of none, token, jwt, "
	    "passthrough" },
	{ "webhook without host", "[policy]\nwebhook = https:///x\n",
	    "6: [policy] webhook: \"https:///x\" has no valid host" },
};

/* FLOE_TOP, or ".": where tests/ and conf/ are. */
static void
chdir_top(void)
{
	const char *top = getenv("FLOE_TOP");

	if (top == NULL || *top == '\0')
		top = ".";
	if (chdir(top) == -1)
		fail_msg("chdir %s: %s", top, strerror(errno));
}

/* Read the first line of PATH into BUF, without its newline. */
static void
read_line(const char *path, char *buf, size_t len)
{
	FILE *f = NULL;

	if ((f = fopen(path, "r")) == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	if (fgets(buf, (int)len, f) == NULL)
		fail_msg("%s: empty", path);
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Load PATH, failing the test with the error if it does not load. */
static struct conf *
load_ok(const char *path)
{
	struct conf *c;
	char err[512];

	if ((c = conf_load(path, err, sizeof(err))) == NULL)
		fail_msg("%s: %s", path, err);
	return c;
}

/*
 * Every default value, as conf.h documents them; the default paths are
 * taken from DIR, the conf file's directory.
 */
static void
assert_defaults(const struct conf *c, const char *dir)
{
	char want[256];
	int side;

	assert_string_equal(c->listen, "127.0.0.1:8181");
	snprintf(want, sizeof(want), "%s/var/floe.sock", dir);
	assert_string_equal(c->admin_socket, want);
	snprintf(want, sizeof(want), "%s/var/state", dir);
	assert_string_equal(c->state_dir, want);
	snprintf(want, sizeof(want), "%s/var/log/rollback.log", dir);
	assert_string_equal(c->rollback_log, want);
	assert_null(c->access_log);
	assert_null(c->tls_cert);
	assert_null(c->tls_key);
	assert_null(c->listen_plain);
	assert_int_equal(c->nadmin_uids, 0);
	assert_int_equal(c->config_refresh_ms, 300000);
	assert_int_equal(c->idle_timeout_ms, 60000);
	assert_int_equal(c->header_timeout_ms, 10000);
	assert_int_equal(c->max_body, 8 << 20);
	assert_int_equal(c->max_header, 16 << 10);
	assert_null(c->namespace_separator);
	assert_int_equal(c->drain_ms, 10000);
	assert_int_equal(c->workers, 1);
	assert_int_equal(c->cache_size, 64 << 20);
	assert_int_equal(c->cache_ttl_ms, 5000);
	assert_int_equal(c->check_memo_size, 16 << 20);
	for (side = 0; side < ROUTE_NSIDES; side++) {
		assert_int_equal(c->target[side].timeout_ms, 10000);
		assert_int_equal(c->target[side].connect_timeout_ms, 2000);
		assert_int_equal(c->target[side].pool_idle_ms, 30000);
		assert_int_equal(c->target[side].max_conns, 64);
		assert_null(c->target[side].ca_file);
	}
	assert_int_equal(c->policy.gate_min_clean, 5);
	assert_int_equal(c->policy.gate_window_ms, 7 * 86400000ULL);
	assert_int_equal(c->policy.decommission_min_clean, 10);
	assert_int_equal(c->policy.grace_ms, 14 * 86400000ULL);
	assert_int_equal(c->policy.freshness_max_lag_ms, 900000);
	assert_int_equal(c->policy.freshness_for_ms, 600000);
	assert_int_equal(c->policy.freshness_interval_ms, 60000);
	assert_true(c->policy.error_ratio == 2.0);
	assert_true(c->policy.error_floor == 0.01);
	assert_int_equal(c->policy.error_window_ms, 300000);
	assert_int_equal(c->policy.error_min_requests, 50);
	assert_null(c->policy.webhook);
	assert_string_equal(c->auth.mode, "none");
	assert_null(c->auth.token_file);
	assert_null(c->auth.jwks_file);
	assert_null(c->auth.audience);
	assert_null(c->auth.issuer);
}

/* Only the two uris: every other value is the default. */
static void
test_minimal(void **state __unused)
{
	struct conf *c;
	const struct conf_target *w, *l;

	c = load_ok(GOOD_DIR "/minimal.conf");
	assert_string_equal(c->path, GOOD_DIR "/minimal.conf");
	assert_defaults(c, GOOD_DIR);
	w = &c->target[ROUTE_WAREHOUSE];
	l = &c->target[ROUTE_LAKEHOUSE];
	assert_string_equal(w->uri, "http://127.0.0.1:9001");
	assert_false(w->tls);
	assert_string_equal(w->host, "127.0.0.1");
	assert_string_equal(w->port, "9001");
	assert_string_equal(w->path, "");
	assert_null(w->warehouse);
	assert_null(w->token_file);
	assert_null(w->token);
	assert_string_equal(l->uri, "https://lakehouse.example");
	assert_true(l->tls);
	assert_string_equal(l->host, "lakehouse.example");
	assert_string_equal(l->port, "443");
	assert_string_equal(l->path, "");
	conf_free(c);
}

/* Every key set: every value lands in its field. */
static void
test_full(void **state __unused)
{
	struct conf *c;
	const struct conf_target *w, *l;

	c = load_ok(GOOD_DIR "/full.conf");
	assert_string_equal(c->listen, "[::1]:9181");
	assert_string_equal(c->admin_socket, "/run/floe/admin.sock");
	assert_string_equal(c->state_dir, "/var/lib/floe");
	assert_string_equal(c->rollback_log, "/var/log/floe/rollback.log");
	assert_string_equal(c->access_log, "-");
	assert_string_equal(c->tls_cert, "tests/fixtures/conf/good/tls.crt");
	assert_string_equal(c->tls_key, "tests/fixtures/conf/good/tls.key");
	assert_string_equal(c->listen_plain, "127.0.0.1:9180");
	assert_int_equal(c->nadmin_uids, 4);
	assert_int_equal(c->admin_uids[0], 0);
	assert_int_equal(c->admin_uids[1], 1000);
	assert_int_equal(c->admin_uids[2], 1001);
	assert_int_equal(c->admin_uids[3], 1002);
	assert_int_equal(c->config_refresh_ms, 90000);
	assert_int_equal(c->idle_timeout_ms, 120000);
	assert_int_equal(c->header_timeout_ms, 5000);
	assert_int_equal(c->max_body, 16 << 20);
	assert_int_equal(c->max_header, 32 << 10);
	assert_string_equal(c->namespace_separator, ".");
	assert_int_equal(c->drain_ms, 0);
	assert_int_equal(c->cache_size, 1 << 20);
	assert_int_equal(c->cache_ttl_ms, 5000);
	assert_int_equal(c->check_memo_size, 0);

	w = &c->target[ROUTE_WAREHOUSE];
	assert_string_equal(w->uri, "http://10.0.0.5:9001/catalog");
	assert_false(w->tls);
	assert_string_equal(w->host, "10.0.0.5");
	assert_string_equal(w->port, "9001");
	assert_string_equal(w->path, "/catalog");
	assert_string_equal(w->warehouse, "analytics");
	assert_string_equal(w->token_file, GOOD_DIR "/warehouse.token");
	assert_string_equal(w->token, "s3cr3t-warehouse-token");
	assert_int_equal(w->timeout_ms, 30000);
	assert_int_equal(w->connect_timeout_ms, 500);
	assert_int_equal(w->pool_idle_ms, 5000);
	assert_int_equal(w->max_conns, 128);
	assert_string_equal(w->ca_file, "/etc/floe/ca.pem");

	l = &c->target[ROUTE_LAKEHOUSE];
	assert_string_equal(l->uri, "https://[2001:db8::1]/api/iceberg");
	assert_true(l->tls);
	assert_string_equal(l->host, "2001:db8::1");
	assert_string_equal(l->port, "443");
	assert_string_equal(l->path, "/api/iceberg");
	assert_string_equal(l->warehouse, "lake");
	assert_string_equal(l->token, "lakehouse-token");
	assert_int_equal(l->timeout_ms, 60000);
	assert_int_equal(l->connect_timeout_ms, 3000);
	assert_int_equal(l->pool_idle_ms, 30000);
	assert_int_equal(l->max_conns, 1);
	assert_null(l->ca_file);

	assert_int_equal(c->policy.gate_min_clean, 10);
	assert_int_equal(c->policy.gate_window_ms, 14 * 86400000ULL);
	assert_int_equal(c->policy.decommission_min_clean, 20);
	assert_int_equal(c->policy.grace_ms, 28 * 86400000ULL);
	assert_int_equal(c->policy.freshness_max_lag_ms, 1800000);
	assert_int_equal(c->policy.freshness_for_ms, 300000);
	assert_int_equal(c->policy.freshness_interval_ms, 30000);
	assert_true(c->policy.error_ratio == 3.5);
	assert_true(c->policy.error_floor > 0.005 - 1e-12 &&
	    c->policy.error_floor < 0.005 + 1e-12);
	assert_int_equal(c->policy.error_window_ms, 600000);
	assert_int_equal(c->policy.error_min_requests, 100);
	assert_string_equal(c->policy.webhook,
	    "https://hooks.example/page?team=data");

	assert_string_equal(c->auth.mode, "jwt");
	assert_string_equal(c->auth.token_file, "/etc/floe/clients.tokens");
	assert_string_equal(c->auth.jwks_file,
	    "tests/fixtures/conf/good/jwks.json");
	assert_string_equal(c->auth.audience, "floe");
	assert_string_equal(c->auth.issuer, "https://idp.example");
	conf_free(c);
}

/* Separators and comments are read the way inih reads them. */
static void
test_syntax(void **state __unused)
{
	struct conf *c;

	c = load_ok(GOOD_DIR "/syntax.conf");
	assert_string_equal(c->listen, "127.0.0.1:8282");
	assert_null(c->access_log);
	assert_string_equal(c->namespace_separator, "#");
	assert_string_equal(c->admin_socket, GOOD_DIR "/var/a;b.sock");
	/* Written with a trailing '/': gone, and the length kept. */
	assert_string_equal(c->target[ROUTE_WAREHOUSE].uri,
	    "http://localhost:9001");
	assert_int_equal(c->target[ROUTE_WAREHOUSE].uri_len,
	    strlen("http://localhost:9001"));
	assert_int_equal(c->target[ROUTE_LAKEHOUSE].uri_len,
	    strlen("http://127.0.0.1:9002"));
	assert_string_equal(c->target[ROUTE_WAREHOUSE].host, "localhost");
	assert_string_equal(c->target[ROUTE_WAREHOUSE].port, "9001");
	assert_string_equal(c->target[ROUTE_WAREHOUSE].path, "");
	assert_int_equal(c->target[ROUTE_WAREHOUSE].timeout_ms, 250);
	assert_string_equal(c->target[ROUTE_LAKEHOUSE].port, "9002");
	assert_int_equal(c->target[ROUTE_LAKEHOUSE].connect_timeout_ms, 1000);
	assert_true(c->policy.error_floor == 0.02);
	assert_true(c->policy.error_ratio == 2.0);
	assert_string_equal(c->auth.mode, "passthrough");
	conf_free(c);
}

/*
 * conf/floe.conf loads, and what it shows as each key's value is the
 * default: the reference cannot drift from the code.
 */
static void
test_reference(void **state __unused)
{
	struct conf *c;

	c = load_ok("conf/floe.conf");
	assert_defaults(c, "conf");
	assert_string_equal(c->target[ROUTE_WAREHOUSE].uri,
	    "http://127.0.0.1:9001");
	assert_string_equal(c->target[ROUTE_LAKEHOUSE].uri,
	    "http://127.0.0.1:9002");
	conf_free(c);
}

/* Every .conf under good/ loads. */
static void
test_good_dir(void **state __unused)
{
	struct dirent *de;
	struct conf *c;
	char path[512];
	DIR *d;
	size_t len;
	int n = 0;

	if ((d = opendir(GOOD_DIR)) == NULL)
		fail_msg("%s: %s", GOOD_DIR, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".conf") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", GOOD_DIR, de->d_name);
		c = load_ok(path);
		conf_free(c);
		n++;
	}
	closedir(d);
	assert_true(n >= 3);
}

/*
 * Every .conf under bad/ fails with exactly the errors of its .err file,
 * one a line, in order; conf_load gives the first.
 */
static void
test_bad_dir(void **state __unused)
{
	struct conf_errors errs;
	struct dirent *de;
	char path[512], errpath[512], want[1024], err[1024];
	char *line = NULL;
	size_t len, cap = 0, i;
	ssize_t n;
	FILE *f;
	DIR *d;
	int nfiles = 0, nmulti = 0;

	if ((d = opendir(BAD_DIR)) == NULL)
		fail_msg("%s: %s", BAD_DIR, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".conf") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", BAD_DIR, de->d_name);
		snprintf(errpath, sizeof(errpath), "%s/%.*s.err", BAD_DIR,
		    (int)(len - 5), de->d_name);
		read_line(errpath, want, sizeof(want));
		strcpy(err, "untouched");
		if (conf_load(path, err, sizeof(err)) != NULL)
			fail_msg("%s: loaded, want \"%s\"", path, want);
		if (strcmp(err, want) != 0)
			fail_msg("%s:\n got: %s\nwant: %s", path, err, want);
		if (conf_read(path, &errs) != NULL)
			fail_msg("%s: conf_read loaded it", path);
		if ((f = fopen(errpath, "r")) == NULL)
			fail_msg("%s: %s", errpath, strerror(errno));
		for (i = 0; (n = getline(&line, &cap, f)) != -1; i++) {
			line[strcspn(line, "\n")] = '\0';
			if (i >= errs.n)
				fail_msg("%s: error %zu missing: %s", path,
				    i + 1, line);
			if (strcmp(errs.msg[i], line) != 0)
				fail_msg("%s: error %zu:\n got: %s\nwant: %s",
				    path, i + 1, errs.msg[i], line);
		}
		fclose(f);
		if (i != errs.n)
			fail_msg("%s: %zu errors, want %zu", path, errs.n, i);
		nmulti += errs.n > 1;
		conf_errors_clear(&errs);
		nfiles++;
	}
	free(line);
	closedir(d);
	assert_true(nfiles >= 12);
	assert_true(nmulti >= 2);
}

/*
 * Relative paths, the defaults' too, are taken from the conf's directory;
 * absolute ones, and "-" for stderr, are kept.
 */
static void
test_relative(void **state __unused)
{
	struct conf_errors errs;
	struct conf *c;

	c = load_ok(GOOD_DIR "/full.conf");
	assert_string_equal(c->target[ROUTE_LAKEHOUSE].token_file,
	    GOOD_DIR "/lakehouse.token");
	assert_string_equal(c->access_log, "-");
	assert_string_equal(c->auth.jwks_file, GOOD_DIR "/jwks.json");
	conf_free(c);
	c = load_ok("conf/demo.conf");
	assert_string_equal(c->admin_socket, "conf/../var/floe.sock");
	conf_free(c);
	/* A copy read as the file: paths from the file's directory. */
	c = conf_read_source("conf/demo.conf", "elsewhere/floe.conf", 0, &errs);
	assert_non_null(c);
	assert_string_equal(c->admin_socket, "elsewhere/../var/floe.sock");
	conf_free(c);
	conf_errors_clear(&errs);
	/* ... and its errors name the file. */
	assert_null(conf_read_source(BAD_DIR "/bad-duration.conf",
	    "elsewhere/floe.conf", 0, &errs));
	assert_true(errs.n >= 1);
	assert_memory_equal(errs.msg[0], "elsewhere/floe.conf:", 20);
	conf_errors_clear(&errs);
}

/* Small confs written on the fly: edges of each key and of the syntax. */
static void
test_inline(void **state __unused)
{
	char path[] = "/tmp/floe-test-conf.XXXXXX";
	char err[1024], want[1024];
	struct conf *c;
	size_t i;
	FILE *f = NULL;
	int fd;

	for (i = 0; i < nitems(inline_cases); i++) {
		strcpy(path, "/tmp/floe-test-conf.XXXXXX");
		if ((fd = mkstemp(path)) == -1 || (f = fdopen(fd, "w")) == NULL)
			fail_msg("mkstemp: %s", strerror(errno));
		fprintf(f, "%s%s", UPSTREAMS, inline_cases[i].text);
		fclose(f);
		c = conf_load(path, err, sizeof(err));
		unlink(path);
		if (inline_cases[i].err == NULL) {
			if (c == NULL)
				fail_msg("%s: %s", inline_cases[i].name, err);
			conf_free(c);
			continue;
		}
		snprintf(want, sizeof(want), "%s:%s", path,
		    inline_cases[i].err);
		if (c != NULL)
			fail_msg("%s: loaded", inline_cases[i].name);
		if (strcmp(err, want) != 0)
			fail_msg("%s:\n got: %s\nwant: %s",
			    inline_cases[i].name, err, want);
	}
}

/* A file that is not there; a short error buffer; conf_free(NULL). */
static void
test_edges(void **state __unused)
{
	char err[256], small[12];

	assert_null(
	    conf_load("tests/fixtures/conf/nope.conf", err, sizeof(err)));
	assert_string_equal(err,
	    "tests/fixtures/conf/nope.conf: cannot open: No such file or "
	    "directory");
	assert_null(conf_load("tests/fixtures/conf", err, sizeof(err)));
	assert_string_equal(err,
	    "tests/fixtures/conf: cannot open: Is a directory");
	memset(small, 'x', sizeof(small));
	assert_null(conf_load(BAD_DIR "/bad-size.conf", small, sizeof(small)));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, "tests/fixtu", sizeof(small));
	assert_null(conf_load(BAD_DIR "/bad-size.conf", NULL, 0));
	conf_free(NULL);
}

/*
 * Node names, which cluster mode also checks in what etcd holds (the
 * leader key, node keys): bytes, with a NUL inside refused.
 */
static void
test_node_names(void **state __unused)
{
	char longest[NODE_NAME_MAX + 1];

	memset(longest, 'n', sizeof(longest));
	assert_true(node_name_ok("n1", 2));
	assert_true(node_name_ok("db-2.rack_3", 11));
	assert_true(node_name_ok(longest, NODE_NAME_MAX));
	assert_false(node_name_ok(longest, NODE_NAME_MAX + 1));
	assert_false(node_name_ok("", 0));
	assert_false(node_name_ok("n\0x", 3));
	assert_false(node_name_ok("n/1", 3));
	assert_false(node_name_ok("n 1", 3));
	assert_false(node_name_ok("\377", 1));
	/* Only LEN bytes are read: "n1" of "n1/x". */
	assert_true(node_name_ok("n1/x", 2));
}

/* Loading twice gives two independent confs (a reload builds a new one). */
static void
test_reload(void **state __unused)
{
	struct conf *a, *b;

	a = load_ok(GOOD_DIR "/full.conf");
	b = load_ok(GOOD_DIR "/full.conf");
	assert_ptr_not_equal(a->listen, b->listen);
	assert_string_equal(a->listen, b->listen);
	conf_free(a);
	assert_string_equal(b->target[ROUTE_WAREHOUSE].token,
	    "s3cr3t-warehouse-token");
	conf_free(b);
}

/*
 * conf_keep_restart: the keys read only at start that changed are named
 * and put back to their running value; the others keep the new one.
 */
static void
test_keep_restart(void **state __unused)
{
	struct conf *oc, *nc;
	const char *names[4];

	oc = load_ok(GOOD_DIR "/full.conf");
	nc = load_ok(GOOD_DIR "/full.conf");
	assert_int_equal(conf_keep_restart(nc, oc, names, 4), 0);
	free(nc->listen);
	nc->listen = strdup("127.0.0.1:1");
	free(nc->target[ROUTE_LAKEHOUSE].uri);
	nc->target[ROUTE_LAKEHOUSE].uri = strdup("http://elsewhere:1");
	free(nc->target[ROUTE_LAKEHOUSE].host);
	nc->target[ROUTE_LAKEHOUSE].host = strdup("elsewhere");
	nc->max_body = 1;
	nc->cache_ttl_ms = 1234;
	free(nc->target[ROUTE_WAREHOUSE].ca_file);
	nc->target[ROUTE_WAREHOUSE].ca_file = NULL;
	free(nc->tls_cert);
	nc->tls_cert = NULL;
	/* Five changed (and cache_ttl); four names fit, five are counted. */
	assert_int_equal(conf_keep_restart(nc, oc, names, 4), 5);
	assert_string_equal(names[0], "[floe] listen");
	assert_string_equal(names[1], "[floe] tls_cert");
	assert_string_equal(names[2], "[floe] max_body");
	assert_string_equal(names[3], "[warehouse] ca_file");
	assert_string_equal(nc->listen, oc->listen);
	assert_string_equal(nc->tls_cert, oc->tls_cert);
	assert_string_equal(nc->target[ROUTE_LAKEHOUSE].uri,
	    oc->target[ROUTE_LAKEHOUSE].uri);
	assert_string_equal(nc->target[ROUTE_LAKEHOUSE].host, "2001:db8::1");
	assert_string_equal(nc->target[ROUTE_WAREHOUSE].ca_file,
	    "/etc/floe/ca.pem");
	assert_int_equal(nc->max_body, oc->max_body);
	assert_int_equal(nc->cache_ttl_ms, 1234);
	/* Now the same: nothing more to say. */
	assert_int_equal(conf_keep_restart(nc, oc, names, 4), 0);
	conf_free(nc);
	conf_free(oc);
}

/* Move to the repository root before any test. */
static int
setup(void **state __unused)
{
	chdir_top();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_reference),
		cmocka_unit_test(test_good_dir),
		cmocka_unit_test(test_bad_dir),
		cmocka_unit_test(test_relative),
		cmocka_unit_test(test_inline),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_node_names),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_keep_restart),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
