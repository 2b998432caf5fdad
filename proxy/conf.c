/*
 * floe: conf.c -- read floe.conf into a new struct conf. inih splits the
 * lines; one handler finds each key in conf_keys[] (conf_keys.c) and hands
 * the value to the key's parser; relative paths are made relative to the
 * file's directory; the whole conf is then validated. Every error is kept,
 * in line order, each as "PATH:LINE: [section] key: what is wrong".
 */
#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/xmalloc.h"
#include "policy/awscred.h"
#include "policy/oauth.h"
#include "policy/sigv4.h"
#include "proxy/conf.h"
#include "proxy/conf_impl.h"
#include "routing/route.h"

/*
 * r55 reads at most 199 bytes of a line (INI_MAX_LINE 200 with the NUL)
 * and then treats the rest as a new line, which shifts every later line
 * number; so lines of 200 bytes or more, newline included, are refused.
 */
#define CONF_MAX_LINE 200

/* One handler call inih is going to make: its line, and whether to skip it. */
struct conf_event {
	int line;
	bool skip; /* a line already found wrong: not looked at again */
};

/* One error: its line (0: none) and what is wrong. */
struct conf_err {
	int line;
	size_t seq; /* order found, for a stable sort */
	char *msg;
};

/* State of one conf_read: the conf being built and its errors. */
struct conf_ctx {
	struct conf *c;
	struct conf_event *events; /* each handler call inih will make */
	size_t nevents;
	size_t ncalls;
	int lines[CONF_NKEYS_MAX]; /* line each key was set on, by row */
	struct conf_err *errs;
	size_t nerrs;
	bool no_secrets; /* CONF_NO_SECRETS: leave secret files unread */
};

static char *conf_find_sep(char *, const char *);
static void conf_fail(struct conf_ctx *, int, const char *, ...)
    __attribute__((__format__(__printf__, 3, 4)));
static void conf_event_add(struct conf_ctx *, int, bool);
static void conf_scan_line(struct conf_ctx *, char *, char *, int, bool,
    bool *);
static int conf_scan(struct conf_ctx *, const char *);
static int conf_err_cmp(const void *, const void *);
static int conf_handler(void *, const char *, const char *, const char *);
static int conf_key_line(struct conf_ctx *, const char *, const char *);
static int conf_read_token(struct conf_ctx *, int);
static void conf_resolve_one(char **, const char *);
static void conf_resolve(struct conf *, const char *);
static void conf_check_cred(struct conf_ctx *, int);
static bool conf_str_same(const char *, const char *);
static void conf_validate(struct conf_ctx *);
static void conf_validate_cluster(struct conf_ctx *);
static struct conf *conf_new(const char *);

static const char *conf_side_names[ROUTE_NSIDES] = {
	[ROUTE_WAREHOUSE] = "warehouse",
	[ROUTE_LAKEHOUSE] = "lakehouse",
};

/*
 * The first of CHARS in S, or the start of an inline comment (';' after
 * a blank), or the end of S: what inih r55 looks for.
 */
static char *
conf_find_sep(char *s, const char *chars)
{
	bool was_space = false;

	while (*s != '\0' && (chars == NULL || strchr(chars, *s) == NULL) &&
	    !(was_space && *s == ';')) {
		was_space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

/* Record an error; LINE 0 means the error has no line. */
static void
conf_fail(struct conf_ctx *ctx, int line, const char *fmt, ...)
{
	struct conf_err *e;
	va_list ap;

	ctx->errs =
	    xreallocarray(ctx->errs, ctx->nerrs + 1, sizeof(*ctx->errs));
	e = &ctx->errs[ctx->nerrs];
	e->line = line;
	e->seq = ctx->nerrs++;
	va_start(ap, fmt);
	if (vasprintf(&e->msg, fmt, ap) == -1)
		fatalx("conf: out of memory");
	va_end(ap);
}

/* Note a handler call inih will make for LINE. */
static void
conf_event_add(struct conf_ctx *ctx, int line, bool skip)
{
	ctx->events =
	    xreallocarray(ctx->events, ctx->nevents + 1, sizeof(*ctx->events));
	ctx->events[ctx->nevents].line = line;
	ctx->events[ctx->nevents].skip = skip;
	ctx->nevents++;
}

/*
 * Look at one line as inih r55 will: BUF holds what inih reads as a line
 * (START is where to begin, past a BOM), LINENO the file's line. Refuse
 * what r55 would get wrong or accept silently (indented continuation
 * lines, unknown or broken section headers, lines that are not key =
 * value), and note every handler call inih is going to make, so that the
 * handler knows its line. With QUIET the line is already known to be
 * wrong: its calls are noted as skipped and nothing more is said. *IN_KEY
 * follows inih's "previous name" (an indented line continues its value).
 */
static void
conf_scan_line(struct conf_ctx *ctx, char *buf, char *start, int lineno,
    bool quiet, bool *in_key)
{
	char *end, *sep;

	end = start + strlen(start);
	while (end > start && isspace((unsigned char)end[-1]))
		*--end = '\0';
	while (isspace((unsigned char)*start))
		start++;
	if (*start == '\0' || *start == ';' || *start == '#')
		return;
	if (*in_key && start > buf) {
		/* inih appends it to the value above: a handler call. */
		if (!quiet)
			conf_fail(ctx, lineno,
			    "indented line: inih would append it to the value "
			    "above; remove the indentation");
		conf_event_add(ctx, lineno, true);
		return;
	}
	if (*start == '[') {
		sep = conf_find_sep(start + 1, "]");
		if (*sep != ']') {
			if (!quiet)
				conf_fail(ctx, lineno,
				    "section header without ']'");
			return;
		}
		*sep++ = '\0';
		*in_key = false;
		while (isspace((unsigned char)*sep))
			sep++;
		if (quiet)
			return;
		if (*sep != '\0' && *sep != ';' && *sep != '#')
			conf_fail(ctx, lineno, "[%s]: text after ']'",
			    start + 1);
		else if (!conf_is_section(start + 1))
			conf_fail(ctx, lineno, "[%s]: unknown section",
			    start + 1);
		return;
	}
	sep = conf_find_sep(start, "=:");
	if (*sep != '=' && *sep != ':') {
		if (!quiet)
			conf_fail(ctx, lineno,
			    "\"%s\" is not key = value, a [section] or a "
			    "comment",
			    start);
		return;
	}
	*in_key = sep > start;
	conf_event_add(ctx, lineno, quiet);
}

/*
 * Read PATH once before inih does, as inih will, and find what is wrong
 * with its lines (conf_scan_line). r55 reads a line in pieces of at most
 * CONF_MAX_LINE - 1 bytes, each piece a line of its own; a longer line is
 * refused, and its pieces are followed only to keep the count of handler
 * calls, so that every later line is still checked. Returns -1 if the
 * file cannot be read.
 */
static int
conf_scan(struct conf_ctx *ctx, const char *path)
{
	FILE *f;
	char *line = NULL, piece[CONF_MAX_LINE], *start;
	size_t cap = 0, off, n;
	ssize_t len;
	int lineno = 0, saved;
	bool in_key = false, quiet;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while ((len = getline(&line, &cap, f)) != -1) {
		lineno++;
		quiet = len >= CONF_MAX_LINE;
		if (quiet)
			conf_fail(ctx, lineno,
			    "line is %zd bytes long; lines must be shorter than "
			    "%d bytes",
			    len, CONF_MAX_LINE);
		for (off = 0; off < (size_t)len; off += n) {
			n = (size_t)len - off;
			if (n > sizeof(piece) - 1)
				n = sizeof(piece) - 1;
			memcpy(piece, line + off, n);
			piece[n] = '\0';
			start = piece;
			if (lineno == 1 && off == 0 &&
			    strncmp(start, "\xEF\xBB\xBF", 3) == 0)
				start += 3;
			conf_scan_line(ctx, piece, start, lineno, quiet,
			    &in_key);
		}
	}
	free(line);
	if (ferror(f)) {
		saved = errno;
		fclose(f);
		errno = saved;
		return -1;
	}
	fclose(f);
	return 0;
}

/* qsort: errors by line, those without a line last, else as found. */
static int
conf_err_cmp(const void *a, const void *b)
{
	const struct conf_err *x = a, *y = b;
	unsigned lx = x->line == 0 ? UINT_MAX : (unsigned)x->line;
	unsigned ly = y->line == 0 ? UINT_MAX : (unsigned)y->line;

	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The inih handler: look KEY up, refuse duplicates, parse the value. */
static int
conf_handler(void *user, const char *section, const char *key,
    const char *value)
{
	struct conf_ctx *ctx = user;
	const struct conf_event *ev;
	char why[CONF_WHY];
	int i, line;

	/* A call conf_scan did not foresee: not numbered, not looked at. */
	if (ctx->ncalls >= ctx->nevents)
		return 1;
	ev = &ctx->events[ctx->ncalls++];
	if (ev->skip)
		return 1;
	line = ev->line;
	if (*section == '\0') {
		conf_fail(ctx, line, "%s: outside any [section]", key);
		return 0;
	}
	/* conf_scan said the section is unknown; its keys are not looked at. */
	if (!conf_is_section(section))
		return 1;
	if ((i = conf_key_find(section, key)) == -1) {
		conf_fail(ctx, line, "[%s] %s: unknown key", section, key);
		return 0;
	}
	if (ctx->lines[i] != 0) {
		conf_fail(ctx, line,
		    "[%s] %s: duplicate key (first set on line %d)", section,
		    key, ctx->lines[i]);
		return 0;
	}
	ctx->lines[i] = line;
	if (*value == '\0') {
		conf_fail(ctx, line, "[%s] %s: no value", section, key);
		return 0;
	}
	if (conf_keys[i].parse(ctx->c, (char *)ctx->c + conf_keys[i].offset,
		value, why, sizeof(why)) == -1) {
		conf_fail(ctx, line, "[%s] %s: %s", section, key, why);
		return 0;
	}
	return 1;
}

/* The line SECTION KEY was set on, or 0. */
static int
conf_key_line(struct conf_ctx *ctx, const char *section, const char *key)
{
	int i = conf_key_find(section, key);

	return i != -1 ? ctx->lines[i] : 0;
}

/*
 * Read the bearer token of target SIDE: the first line of its token_file,
 * trimmed. The buffer is wiped, as the token is a secret.
 */
static int
conf_read_token(struct conf_ctx *ctx, int side)
{
	struct conf_target *t = &ctx->c->target[side];
	const char *name = conf_side_names[side];
	int line = conf_key_line(ctx, name, "token_file");
	char *buf = NULL;
	const char *start, *end;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int rc = -1;

	if ((f = fopen(t->token_file, "r")) == NULL) {
		conf_fail(ctx, line, "[%s] token_file: cannot read \"%s\": %s",
		    name, t->token_file, strerror(errno));
		return -1;
	}
	errno = 0;
	len = getline(&buf, &cap, f);
	if (len == -1 && ferror(f)) {
		conf_fail(ctx, line, "[%s] token_file: cannot read \"%s\": %s",
		    name, t->token_file, strerror(errno));
		goto fail;
	}
	start = len == -1 ? "" : buf;
	while (isspace((unsigned char)*start))
		start++;
	end = start + strlen(start);
	while (end > start && isspace((unsigned char)end[-1]))
		end--;
	if (end == start) {
		conf_fail(ctx, line, "[%s] token_file: \"%s\" has no token",
		    name, t->token_file);
		goto fail;
	}
	t->token = xstrndup(start, (size_t)(end - start));
	rc = 0;
fail:
	if (buf != NULL)
		explicit_bzero(buf, cap);
	free(buf);
	fclose(f);
	return rc;
}

/* The keys of a catalog's credential, and the auth modes they go with. */
static const struct {
	const char *key;
	unsigned modes; /* a bit per enum conf_cred */
} conf_cred_keys[] = {
	{ "token_file", 1u << CONF_CRED_TOKEN },
	{ "oauth_token_uri", 1u << CONF_CRED_OAUTH2 },
	{ "client_id", 1u << CONF_CRED_OAUTH2 },
	{ "client_secret_file", 1u << CONF_CRED_OAUTH2 },
	{ "scope", 1u << CONF_CRED_OAUTH2 | 1u << CONF_CRED_GOOGLE },
	{ "oauth_audience", 1u << CONF_CRED_OAUTH2 },
	{ "sigv4_region", 1u << CONF_CRED_SIGV4 },
	{ "sigv4_service", 1u << CONF_CRED_SIGV4 },
	{ "aws_credentials_file", 1u << CONF_CRED_SIGV4 },
	{ "aws_profile", 1u << CONF_CRED_SIGV4 },
	{ "google_key_file", 1u << CONF_CRED_GOOGLE },
};

/*
 * Check how floe authenticates to catalog SIDE: the auth mode's default,
 * the keys it needs and no key of another mode, and its secrets, read as
 * floe will read them at start (a secret file its group or others may
 * read is refused, naming it), unless CONF_NO_SECRETS.
 */
static void
conf_check_cred(struct conf_ctx *ctx, int side)
{
	struct conf_target *t = &ctx->c->target[side];
	const char *name = conf_side_names[side];
	int aline = conf_key_line(ctx, name, "auth"), line;
	const char *need = NULL;
	char why[CONF_WHY];
	struct awscred ac;
	struct oauth *o;
	struct sigv4 *sv;
	size_t i;
	bool bad = false;

	if (t->auth == CONF_CRED_DEFAULT)
		t->auth =
		    t->token_file != NULL ? CONF_CRED_TOKEN : CONF_CRED_NONE;
	for (i = 0; i < nitems(conf_cred_keys); i++) {
		line = conf_key_line(ctx, name, conf_cred_keys[i].key);
		if (line != 0 && !(conf_cred_keys[i].modes & 1u << t->auth)) {
			conf_fail(ctx, line, "[%s] %s: not used with auth = %s",
			    name, conf_cred_keys[i].key,
			    conf_cred_name(t->auth));
			bad = true;
		}
	}
	switch (t->auth) {
	case CONF_CRED_TOKEN:
		if (t->token_file == NULL)
			need = "token_file";
		break;
	case CONF_CRED_OAUTH2:
		if (t->client_id == NULL)
			need = "client_id";
		else if (t->client_secret_file == NULL)
			need = "client_secret_file";
		break;
	case CONF_CRED_SIGV4:
		if (t->sigv4_region == NULL)
			need = "sigv4_region";
		break;
	case CONF_CRED_GOOGLE:
		if (t->google_key_file == NULL)
			need = "google_key_file";
		break;
	default:
		break;
	}
	if (need != NULL) {
		conf_fail(ctx, aline, "[%s] auth: %s needs %s", name,
		    conf_cred_name(t->auth), need);
		return;
	}
	if (t->auth == CONF_CRED_OAUTH2 && t->oauth_token_uri == NULL &&
	    t->uri != NULL)
		t->oauth_token_uri = xasprintf("%s/v1/oauth/tokens", t->uri);
	if (t->auth == CONF_CRED_SIGV4 && t->sigv4_service == NULL)
		t->sigv4_service = xstrdup("glue");
	if (bad || ctx->no_secrets)
		return;
	switch (t->auth) {
	case CONF_CRED_OAUTH2:
		if (t->oauth_token_uri == NULL)
			break;
		o = oauth_client_load(t->oauth_token_uri, t->client_id,
		    t->client_secret_file, t->scope, t->oauth_audience,
		    OAUTH_AUTH_FORM, why, sizeof(why));
		if (o == NULL)
			conf_fail(ctx,
			    conf_key_line(ctx, name, "client_secret_file"),
			    "[%s] client_secret_file: %s", name, why);
		oauth_free(o);
		break;
	case CONF_CRED_SIGV4:
		if ((sv = sigv4_new(t->sigv4_region, t->sigv4_service, 0, why,
			 sizeof(why))) == NULL) {
			conf_fail(ctx, conf_key_line(ctx, name, "sigv4_region"),
			    "[%s] sigv4_region: %s", name, why);
			break;
		}
		sigv4_free(sv);
		memset(&ac, 0, sizeof(ac));
		if (awscred_load(&ac, t->aws_credentials_file, t->aws_profile,
			why, sizeof(why)) == -1) {
			line = conf_key_line(ctx, name, "aws_credentials_file");
			conf_fail(ctx, line != 0 ? line : aline, "[%s] %s: %s",
			    name, line != 0 ? "aws_credentials_file" : "auth",
			    why);
		}
		awscred_clear(&ac);
		break;
	case CONF_CRED_GOOGLE:
		if ((o = oauth_google_load(t->google_key_file, t->scope, why,
			 sizeof(why))) == NULL)
			conf_fail(ctx,
			    conf_key_line(ctx, name, "google_key_file"),
			    "[%s] google_key_file: %s", name, why);
		oauth_free(o);
		break;
	default:
		break;
	}
}

const char *
conf_cred_name(enum conf_cred m)
{
	switch (m) {
	case CONF_CRED_DEFAULT:
		return "default";
	case CONF_CRED_NONE:
		return "none";
	case CONF_CRED_TOKEN:
		return "token";
	case CONF_CRED_OAUTH2:
		return "oauth2";
	case CONF_CRED_SIGV4:
		return "sigv4";
	case CONF_CRED_GOOGLE:
		return "google";
	}
	return "?";
}

/* Both NULL, or the same string. */
static bool
conf_str_same(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

bool
conf_cred_same(const struct conf_target *a, const struct conf_target *b)
{
	return a->auth == b->auth && conf_str_same(a->uri, b->uri) &&
	    conf_str_same(a->token, b->token) &&
	    conf_str_same(a->oauth_token_uri, b->oauth_token_uri) &&
	    conf_str_same(a->client_id, b->client_id) &&
	    conf_str_same(a->client_secret_file, b->client_secret_file) &&
	    conf_str_same(a->scope, b->scope) &&
	    conf_str_same(a->oauth_audience, b->oauth_audience) &&
	    conf_str_same(a->sigv4_region, b->sigv4_region) &&
	    conf_str_same(a->sigv4_service, b->sigv4_service) &&
	    conf_str_same(a->aws_credentials_file, b->aws_credentials_file) &&
	    conf_str_same(a->aws_profile, b->aws_profile) &&
	    conf_str_same(a->google_key_file, b->google_key_file) &&
	    conf_str_same(a->ca_file, b->ca_file) &&
	    a->timeout_ms == b->timeout_ms &&
	    a->connect_timeout_ms == b->connect_timeout_ms;
}

/*
 * Check the conf as a whole, once every key is read: every error is
 * recorded. A key given but refused is not said to be missing as well.
 */
static void
conf_validate(struct conf_ctx *ctx)
{
	struct conf *c = ctx->c;
	int side;

	for (side = 0; side < ROUTE_NSIDES; side++) {
		if (c->target[side].uri == NULL &&
		    conf_key_line(ctx, conf_side_names[side], "uri") == 0)
			conf_fail(ctx, 0, "[%s] uri: missing",
			    conf_side_names[side]);
	}
	if (c->tls_cert != NULL && c->tls_key == NULL &&
	    conf_key_line(ctx, "floe", "tls_key") == 0)
		conf_fail(ctx, conf_key_line(ctx, "floe", "tls_cert"),
		    "[floe] tls_cert: set without tls_key");
	if (c->tls_key != NULL && c->tls_cert == NULL &&
	    conf_key_line(ctx, "floe", "tls_cert") == 0)
		conf_fail(ctx, conf_key_line(ctx, "floe", "tls_key"),
		    "[floe] tls_key: set without tls_cert");
	if (strcmp(c->auth.mode, "token") == 0 && c->auth.token_file == NULL)
		conf_fail(ctx, conf_key_line(ctx, "auth", "mode"),
		    "[auth] mode: token needs token_file");
	if (strcmp(c->auth.mode, "jwt") == 0 && c->auth.jwks_file == NULL)
		conf_fail(ctx, conf_key_line(ctx, "auth", "mode"),
		    "[auth] mode: jwt needs jwks_file");
	for (side = 0; side < ROUTE_NSIDES; side++) {
		if (c->target[side].token_file != NULL && !ctx->no_secrets)
			(void)conf_read_token(ctx, side);
		conf_check_cred(ctx, side);
	}
	conf_validate_cluster(ctx);
}

/* [cluster] as a whole (conf_cluster.c), at the line of the key at fault. */
static void
conf_validate_cluster(struct conf_ctx *ctx)
{
	const char *key = "etcd";
	char why[CONF_WHY];

	if (conf_cluster_check(ctx->c, &key, why, sizeof(why)) == -1)
		conf_fail(ctx, conf_key_line(ctx, "cluster", key),
		    "[cluster] %s: %s", key, why);
}

/*
 * Make the relative path in *P relative to DIR, the conf file's directory
 * ("" for "/", NULL for the working directory itself).
 */
static void
conf_resolve_one(char **p, const char *dir)
{
	char *abs;

	if (*p == NULL || (*p)[0] == '/' || dir == NULL || strcmp(*p, "-") == 0)
		return;
	abs = xasprintf("%s/%s", dir, *p);
	free(*p);
	*p = abs;
}

/*
 * Take every relative path of C, the defaults included, from the
 * directory of PATH, the file it was read from: the same file means the
 * same paths wherever floe or floectl is started.
 */
static void
conf_resolve(struct conf *c, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = NULL;
	int side;

	if (slash != NULL)
		dir = xstrndup(path, (size_t)(slash - path));
	conf_resolve_one(&c->admin_socket, dir);
	conf_resolve_one(&c->state_dir, dir);
	conf_resolve_one(&c->rollback_log, dir);
	conf_resolve_one(&c->access_log, dir);
	conf_resolve_one(&c->tls_cert, dir);
	conf_resolve_one(&c->tls_key, dir);
	for (side = 0; side < ROUTE_NSIDES; side++) {
		conf_resolve_one(&c->target[side].token_file, dir);
		conf_resolve_one(&c->target[side].ca_file, dir);
		conf_resolve_one(&c->target[side].client_secret_file, dir);
		conf_resolve_one(&c->target[side].aws_credentials_file, dir);
		conf_resolve_one(&c->target[side].google_key_file, dir);
	}
	conf_resolve_one(&c->auth.token_file, dir);
	conf_resolve_one(&c->auth.jwks_file, dir);
	conf_resolve_one(&c->cluster.password_file, dir);
	conf_resolve_one(&c->cluster.ca_file, dir);
	conf_resolve_one(&c->cluster.cert_file, dir);
	conf_resolve_one(&c->cluster.key_file, dir);
	free(dir);
}

/* A conf holding the defaults. Caller frees. */
static struct conf *
conf_new(const char *path)
{
	struct conf *c;
	int side;

	c = xcalloc(1, sizeof(*c));
	c->path = xstrdup(path);
	c->listen = xstrdup("127.0.0.1:8181");
	c->admin_socket = xstrdup("var/floe.sock");
	c->state_dir = xstrdup("var/state");
	c->rollback_log = xstrdup("var/log/rollback.log");
	c->config_refresh_ms = 5 * 60 * 1000;
	c->idle_timeout_ms = 60 * 1000;
	c->header_timeout_ms = 10 * 1000;
	c->max_body = 8 * 1024 * 1024;
	c->max_header = 16 * 1024;
	c->drain_ms = 10 * 1000;
	c->cache_size = 64 << 20;
	c->cache_ttl_ms = 5 * 1000;
	c->check_memo_size = 16 << 20;
	c->output_budget = 256 << 20;
	c->workers = 1;
	for (side = 0; side < ROUTE_NSIDES; side++) {
		c->target[side].timeout_ms = 10 * 1000;
		c->target[side].connect_timeout_ms = 2 * 1000;
		c->target[side].pool_idle_ms = 30 * 1000;
		c->target[side].max_conns = 64;
	}
	c->policy.gate_min_clean = 5;
	c->policy.gate_window_ms = 7 * 24 * 3600 * 1000ULL;
	c->policy.decommission_min_clean = 10;
	c->policy.grace_ms = 14 * 24 * 3600 * 1000ULL;
	c->policy.freshness_max_lag_ms = 15 * 60 * 1000;
	c->policy.freshness_for_ms = 10 * 60 * 1000;
	c->policy.freshness_interval_ms = 60 * 1000;
	c->policy.error_ratio = 2.0;
	c->policy.error_floor = 0.01;
	c->policy.error_window_ms = 5 * 60 * 1000;
	c->policy.error_min_requests = 50;
	c->policy.readers_horizon_ms = 14 * 24 * 3600 * 1000ULL;
	c->policy.decommission_readers = CONF_READERS_BLOCK;
	c->auth.mode = xstrdup("none");
	conf_cluster_defaults(c);
	return c;
}

/* Read and validate PATH, keeping every error in ERRS. */
struct conf *
conf_read(const char *path, struct conf_errors *errs)
{
	return conf_read_flags(path, 0, errs);
}

struct conf *
conf_read_flags(const char *path, unsigned flags, struct conf_errors *errs)
{
	return conf_read_source(path, path, flags, errs);
}

/* The text of SOURCE read as the file PATH. */
struct conf *
conf_read_source(const char *source, const char *path, unsigned flags,
    struct conf_errors *errs)
{
	struct conf_ctx ctx;
	size_t i;
	int rc;

	memset(&ctx, 0, sizeof(ctx));
	memset(errs, 0, sizeof(*errs));
	ctx.no_secrets = (flags & CONF_NO_SECRETS) != 0;
	ctx.c = conf_new(path);
	if (conf_scan(&ctx, source) == -1) {
		conf_fail(&ctx, 0, "cannot open: %s", strerror(errno));
		goto done;
	}
	rc = ini_parse(source, conf_handler, &ctx);
	if (rc == -1) {
		conf_fail(&ctx, 0, "cannot open: %s", strerror(errno));
		goto done;
	}
	if (rc < 0)
		conf_fail(&ctx, 0, "cannot read (inih error %d)", rc);
	else if (rc > 0 && ctx.nerrs == 0)
		conf_fail(&ctx, rc, "syntax error");
	conf_resolve(ctx.c, path);
	conf_validate(&ctx);
done:
	free(ctx.events);
	if (ctx.nerrs == 0)
		return ctx.c;
	qsort(ctx.errs, ctx.nerrs, sizeof(*ctx.errs), conf_err_cmp);
	errs->msg = xcalloc(ctx.nerrs, sizeof(*errs->msg));
	for (i = 0; i < ctx.nerrs; i++) {
		if (ctx.errs[i].line > 0)
			errs->msg[i] = xasprintf("%s:%d: %s", path,
			    ctx.errs[i].line, ctx.errs[i].msg);
		else
			errs->msg[i] =
			    xasprintf("%s: %s", path, ctx.errs[i].msg);
		free(ctx.errs[i].msg);
	}
	errs->n = ctx.nerrs;
	free(ctx.errs);
	conf_free(ctx.c);
	return NULL;
}

/* Free what ERRS holds. */
void
conf_errors_clear(struct conf_errors *errs)
{
	size_t i;

	for (i = 0; i < errs->n; i++)
		free(errs->msg[i]);
	free(errs->msg);
	memset(errs, 0, sizeof(*errs));
}

/* Read and validate PATH; the first error in ERR. */
struct conf *
conf_load(const char *path, char *err, size_t errlen)
{
	return conf_load_flags(path, 0, err, errlen);
}

struct conf *
conf_load_flags(const char *path, unsigned flags, char *err, size_t errlen)
{
	struct conf_errors errs;
	struct conf *c;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if ((c = conf_read_flags(path, flags, &errs)) == NULL && err != NULL &&
	    errlen > 0)
		strlcpy(err, errs.msg[0], errlen);
	conf_errors_clear(&errs);
	return c;
}

/* Free a conf and wipe its tokens. Accepts NULL. */
void
conf_free(struct conf *c)
{
	struct conf_target *t;
	int side;

	if (c == NULL)
		return;
	free(c->path);
	free(c->listen);
	free(c->admin_socket);
	free(c->state_dir);
	free(c->rollback_log);
	free(c->access_log);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->listen_plain);
	free(c->metrics_listen);
	free(c->namespace_separator);
	for (side = 0; side < ROUTE_NSIDES; side++) {
		t = &c->target[side];
		free(t->uri);
		free(t->warehouse);
		free(t->token_file);
		if (t->token != NULL) {
			explicit_bzero(t->token, strlen(t->token));
			free(t->token);
		}
		free(t->host);
		free(t->port);
		free(t->path);
		free(t->ca_file);
		free(t->oauth_token_uri);
		free(t->client_id);
		free(t->client_secret_file);
		free(t->scope);
		free(t->oauth_audience);
		free(t->sigv4_region);
		free(t->sigv4_service);
		free(t->aws_credentials_file);
		free(t->aws_profile);
		free(t->google_key_file);
	}
	free(c->policy.webhook);
	free(c->auth.mode);
	free(c->auth.token_file);
	free(c->auth.jwks_file);
	free(c->auth.audience);
	free(c->auth.issuer);
	conf_cluster_free(c);
	free(c);
}
