/*
 * floe: conf.c -- read floe.conf into a new struct conf. inih splits the
 * lines; one handler finds each key in conf_keys[] (conf_keys.c) and hands
 * the value to the key's parser; the whole conf is then validated. The
 * first error wins and reads "PATH:LINE: [section] key: what is wrong".
 */
#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "lib/xmalloc.h"
#include "proxy/conf.h"
#include "proxy/conf_impl.h"
#include "routing/route.h"

/*
 * r55 reads at most 199 bytes of a line (INI_MAX_LINE 200 with the NUL)
 * and then treats the rest as a new line, which shifts every later line
 * number; so lines of 200 bytes or more, newline included, are refused.
 */
#define CONF_MAX_LINE 200

/* State of one conf_load: the conf being built and the first error. */
struct conf_ctx {
	struct conf *c;
	int *events; /* line of each handler call inih will make */
	size_t nevents;
	size_t ncalls;
	int lines[CONF_NKEYS_MAX]; /* line each key was set on, by row */
	int errline; /* 0: no line */
	bool failed;
	char err[CONF_WHY + 128];
	int scanline; /* the first error conf_scan found, or 0 */
	char scanerr[CONF_WHY];
};

static char *conf_find_sep(char *, const char *);
static void conf_fail(struct conf_ctx *, int, const char *, ...)
    __attribute__((__format__(__printf__, 3, 4)));
static void conf_scan_fail(struct conf_ctx *, int, const char *, ...)
    __attribute__((__format__(__printf__, 3, 4)));
static int conf_scan(struct conf_ctx *, const char *);
static int conf_handler(void *, const char *, const char *, const char *);
static int conf_key_line(struct conf_ctx *, const char *, const char *);
static int conf_read_token(struct conf_ctx *, int);
static int conf_validate(struct conf_ctx *);
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

/* Record the first error; LINE 0 means the error has no line. */
static void
conf_fail(struct conf_ctx *ctx, int line, const char *fmt, ...)
{
	va_list ap;

	if (ctx->failed)
		return;
	ctx->failed = true;
	ctx->errline = line;
	va_start(ap, fmt);
	vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	va_end(ap);
}

/*
 * Note what conf_scan found wrong at LINE. It is kept apart, because an
 * error the handler finds on an earlier line comes first.
 */
static void
conf_scan_fail(struct conf_ctx *ctx, int line, const char *fmt, ...)
{
	va_list ap;

	ctx->scanline = line;
	va_start(ap, fmt);
	vsnprintf(ctx->scanerr, sizeof(ctx->scanerr), fmt, ap);
	va_end(ap);
}

/*
 * Read PATH once before inih does, as inih will: refuse what r55 would get
 * wrong or accept silently (long lines, indented continuation lines,
 * unknown or broken section headers, lines that are not key = value) and
 * note the line of every handler call inih is going to make, so that the
 * handler knows its line. Stops at the first error: calls after it are
 * not numbered and the handler ignores them, so a bad value on an earlier
 * line still wins. Returns -1 if the file cannot be read.
 */
static int
conf_scan(struct conf_ctx *ctx, const char *path)
{
	FILE *f;
	char *line = NULL, *start, *end, *sep;
	size_t cap = 0, nalloc = 0;
	ssize_t len;
	int lineno = 0, saved;
	bool in_key = false;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while ((len = getline(&line, &cap, f)) != -1) {
		lineno++;
		if (len >= CONF_MAX_LINE) {
			conf_scan_fail(ctx, lineno,
			    "line is %zd bytes long; lines must be shorter than "
			    "%d bytes",
			    len, CONF_MAX_LINE);
			break;
		}
		start = line;
		if (lineno == 1 && strncmp(start, "\xEF\xBB\xBF", 3) == 0)
			start += 3;
		end = start + strlen(start);
		while (end > start && isspace((unsigned char)end[-1]))
			*--end = '\0';
		while (isspace((unsigned char)*start))
			start++;
		if (*start == '\0' || *start == ';' || *start == '#')
			continue;
		if (in_key && start > line) {
			conf_scan_fail(ctx, lineno,
			    "indented line: inih would append it to the value "
			    "above; remove the indentation");
			break;
		}
		if (*start == '[') {
			sep = conf_find_sep(start + 1, "]");
			if (*sep != ']') {
				conf_scan_fail(ctx, lineno,
				    "section header without ']'");
				break;
			}
			*sep++ = '\0';
			while (isspace((unsigned char)*sep))
				sep++;
			if (*sep != '\0' && *sep != ';' && *sep != '#') {
				conf_scan_fail(ctx, lineno,
				    "[%s]: text after ']'", start + 1);
				break;
			}
			if (!conf_is_section(start + 1)) {
				conf_scan_fail(ctx, lineno,
				    "[%s]: unknown section", start + 1);
				break;
			}
			in_key = false;
			continue;
		}
		sep = conf_find_sep(start, "=:");
		if (*sep != '=' && *sep != ':') {
			conf_scan_fail(ctx, lineno,
			    "\"%s\" is not key = value, a [section] or a "
			    "comment",
			    start);
			break;
		}
		in_key = sep > start;
		if (ctx->nevents == nalloc) {
			nalloc = nalloc == 0 ? 64 : nalloc * 2;
			ctx->events = xreallocarray(ctx->events, nalloc,
			    sizeof(*ctx->events));
		}
		ctx->events[ctx->nevents++] = lineno;
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

/* The inih handler: look KEY up, refuse duplicates, parse the value. */
static int
conf_handler(void *user, const char *section, const char *key,
    const char *value)
{
	struct conf_ctx *ctx = user;
	char why[CONF_WHY];
	int i, line;

	/* Past an error conf_scan found: not numbered, not looked at. */
	if (ctx->ncalls >= ctx->nevents)
		return 1;
	line = ctx->events[ctx->ncalls++];
	if (ctx->failed)
		return 1;
	if (*section == '\0') {
		conf_fail(ctx, line, "%s: outside any [section]", key);
		return 0;
	}
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

/* Check the conf as a whole, once every key is read. */
static int
conf_validate(struct conf_ctx *ctx)
{
	struct conf *c = ctx->c;
	int side;

	for (side = 0; side < ROUTE_NSIDES; side++) {
		if (c->target[side].uri == NULL) {
			conf_fail(ctx, 0, "[%s] uri: missing",
			    conf_side_names[side]);
			return -1;
		}
	}
	if (c->tls_cert != NULL && c->tls_key == NULL) {
		conf_fail(ctx, conf_key_line(ctx, "floe", "tls_cert"),
		    "[floe] tls_cert: set without tls_key");
		return -1;
	}
	if (c->tls_key != NULL && c->tls_cert == NULL) {
		conf_fail(ctx, conf_key_line(ctx, "floe", "tls_key"),
		    "[floe] tls_key: set without tls_cert");
		return -1;
	}
	if (strcmp(c->auth.mode, "token") == 0 && c->auth.token_file == NULL) {
		conf_fail(ctx, conf_key_line(ctx, "auth", "mode"),
		    "[auth] mode: token needs token_file");
		return -1;
	}
	if (strcmp(c->auth.mode, "jwt") == 0 && c->auth.jwks_file == NULL) {
		conf_fail(ctx, conf_key_line(ctx, "auth", "mode"),
		    "[auth] mode: jwt needs jwks_file");
		return -1;
	}
	for (side = 0; side < ROUTE_NSIDES; side++) {
		if (c->target[side].token_file != NULL &&
		    conf_read_token(ctx, side) == -1)
			return -1;
	}
	return 0;
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
	return c;
}

/* Read and validate PATH. */
struct conf *
conf_load(const char *path, char *err, size_t errlen)
{
	struct conf_ctx ctx;
	int rc;

	memset(&ctx, 0, sizeof(ctx));
	ctx.c = conf_new(path);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (conf_scan(&ctx, path) == -1) {
		conf_fail(&ctx, 0, "cannot open: %s", strerror(errno));
		goto fail;
	}
	rc = ini_parse(path, conf_handler, &ctx);
	if (rc == -1) {
		conf_fail(&ctx, 0, "cannot open: %s", strerror(errno));
		goto fail;
	}
	if (rc < 0)
		conf_fail(&ctx, 0, "cannot read (inih error %d)", rc);
	if (ctx.scanline != 0)
		conf_fail(&ctx, ctx.scanline, "%s", ctx.scanerr);
	if (rc > 0)
		conf_fail(&ctx, rc, "syntax error");
	if (ctx.failed || conf_validate(&ctx) == -1)
		goto fail;
	free(ctx.events);
	return ctx.c;
fail:
	if (err != NULL && errlen > 0) {
		if (ctx.errline > 0)
			snprintf(err, errlen, "%s:%d: %s", path, ctx.errline,
			    ctx.err);
		else
			snprintf(err, errlen, "%s: %s", path, ctx.err);
	}
	free(ctx.events);
	conf_free(ctx.c);
	return NULL;
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
	}
	free(c->policy.webhook);
	free(c->auth.mode);
	free(c->auth.token_file);
	free(c->auth.jwks_file);
	free(c->auth.audience);
	free(c->auth.issuer);
	free(c);
}
