/*
 * floe: conf.c -- read floe.conf into a new struct conf. inih splits the
 * lines; one handler finds each key in conf_keys[] and hands the value to
 * the key's parser; the whole conf is then validated. The first error wins
 * and reads "PATH:LINE: [section] key: what is wrong".
 */
#include <sys/types.h>

#include <arpa/inet.h>

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

#include "lib/compat.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/conf.h"
#include "routing/route.h"

/*
 * r55 reads at most 199 bytes of a line (INI_MAX_LINE 200 with the NUL)
 * and then treats the rest as a new line, which shifts every later line
 * number; so lines of 200 bytes or more, newline included, are refused.
 */
#define CONF_MAX_LINE 200
#define CONF_WHY 256

/*
 * Parse VALUE into FIELD (which points into C). Returns 0, or -1 with what
 * is wrong in WHY.
 */
typedef int (*conf_parser)(struct conf *c, void *field, const char *value,
    char *why, size_t whylen);

/* One key of floe.conf: where it lives and how its value is read. */
struct conf_key {
	const char *section;
	const char *key;
	conf_parser parse;
	size_t offset;
};

/* State of one conf_load: the conf being built and the first error. */
struct conf_ctx {
	struct conf *c;
	int *events; /* line of each handler call inih will make */
	size_t nevents;
	size_t ncalls;
	int lines[64]; /* line each key was set on, by conf_keys index */
	int errline; /* 0: no line */
	bool failed;
	char err[CONF_WHY + 128];
	int scanline; /* the first error conf_scan found, or 0 */
	char scanerr[CONF_WHY];
};

static int conf_parse_str(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_log(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_listen(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_uids(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_dur(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_durpos(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_size(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_size0(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_count(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_conns(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_factor(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_ratio(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_uri(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_url(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_mode(struct conf *, void *, const char *, char *, size_t);
static int conf_number(const char *, long long, long long, long long *);
static int conf_split_uri(const char *, bool *, char **, char **, char **,
    char *, size_t);
static bool conf_is_section(const char *);
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

#define F(m) offsetof(struct conf, m)
#define W(m) offsetof(struct conf, target[ROUTE_WAREHOUSE].m)
#define L(m) offsetof(struct conf, target[ROUTE_LAKEHOUSE].m)

/* Every key floe.conf may hold. conf/floe.conf documents each one. */
static const struct conf_key conf_keys[] = {
	{ "floe", "listen", conf_parse_listen, F(listen) },
	{ "floe", "admin_socket", conf_parse_str, F(admin_socket) },
	{ "floe", "state_dir", conf_parse_str, F(state_dir) },
	{ "floe", "rollback_log", conf_parse_str, F(rollback_log) },
	{ "floe", "access_log", conf_parse_log, F(access_log) },
	{ "floe", "tls_cert", conf_parse_str, F(tls_cert) },
	{ "floe", "tls_key", conf_parse_str, F(tls_key) },
	{ "floe", "listen_plain", conf_parse_listen, F(listen_plain) },
	{ "floe", "admin_uids", conf_parse_uids, F(admin_uids) },
	{ "floe", "config_refresh", conf_parse_durpos, F(config_refresh_ms) },
	{ "floe", "idle_timeout", conf_parse_durpos, F(idle_timeout_ms) },
	{ "floe", "header_timeout", conf_parse_durpos, F(header_timeout_ms) },
	{ "floe", "max_body", conf_parse_size, F(max_body) },
	{ "floe", "max_header", conf_parse_size, F(max_header) },
	{ "floe", "namespace_separator", conf_parse_str,
	    F(namespace_separator) },
	{ "floe", "drain", conf_parse_dur, F(drain_ms) },
	{ "floe", "cache_size", conf_parse_size0, F(cache_size) },
	{ "floe", "cache_ttl", conf_parse_durpos, F(cache_ttl_ms) },

	{ "warehouse", "uri", conf_parse_uri, W(uri) },
	{ "warehouse", "warehouse", conf_parse_str, W(warehouse) },
	{ "warehouse", "token_file", conf_parse_str, W(token_file) },
	{ "warehouse", "timeout", conf_parse_durpos, W(timeout_ms) },
	{ "warehouse", "connect_timeout", conf_parse_durpos,
	    W(connect_timeout_ms) },
	{ "warehouse", "pool_idle_timeout", conf_parse_durpos,
	    W(pool_idle_ms) },
	{ "warehouse", "max_conns", conf_parse_conns, W(max_conns) },
	{ "warehouse", "ca_file", conf_parse_str, W(ca_file) },

	{ "lakehouse", "uri", conf_parse_uri, L(uri) },
	{ "lakehouse", "warehouse", conf_parse_str, L(warehouse) },
	{ "lakehouse", "token_file", conf_parse_str, L(token_file) },
	{ "lakehouse", "timeout", conf_parse_durpos, L(timeout_ms) },
	{ "lakehouse", "connect_timeout", conf_parse_durpos,
	    L(connect_timeout_ms) },
	{ "lakehouse", "pool_idle_timeout", conf_parse_durpos,
	    L(pool_idle_ms) },
	{ "lakehouse", "max_conns", conf_parse_conns, L(max_conns) },
	{ "lakehouse", "ca_file", conf_parse_str, L(ca_file) },

	{ "policy", "gate_min_clean", conf_parse_count,
	    F(policy.gate_min_clean) },
	{ "policy", "gate_window", conf_parse_durpos,
	    F(policy.gate_window_ms) },
	{ "policy", "decommission_min_clean", conf_parse_count,
	    F(policy.decommission_min_clean) },
	{ "policy", "grace", conf_parse_dur, F(policy.grace_ms) },
	{ "policy", "freshness_max_lag", conf_parse_dur,
	    F(policy.freshness_max_lag_ms) },
	{ "policy", "freshness_for", conf_parse_dur,
	    F(policy.freshness_for_ms) },
	{ "policy", "freshness_interval", conf_parse_durpos,
	    F(policy.freshness_interval_ms) },
	{ "policy", "error_ratio", conf_parse_factor, F(policy.error_ratio) },
	{ "policy", "error_floor", conf_parse_ratio, F(policy.error_floor) },
	{ "policy", "error_window", conf_parse_durpos,
	    F(policy.error_window_ms) },
	{ "policy", "error_min_requests", conf_parse_count,
	    F(policy.error_min_requests) },
	{ "policy", "webhook", conf_parse_url, F(policy.webhook) },

	{ "auth", "mode", conf_parse_mode, F(auth.mode) },
	{ "auth", "token_file", conf_parse_str, F(auth.token_file) },
	{ "auth", "jwks_file", conf_parse_str, F(auth.jwks_file) },
	{ "auth", "audience", conf_parse_str, F(auth.audience) },
	{ "auth", "issuer", conf_parse_str, F(auth.issuer) },
};

#undef F
#undef W
#undef L

_Static_assert(nitems(conf_keys) <= 64, "conf_ctx.lines is too short");

static const char *conf_side_names[ROUTE_NSIDES] = {
	[ROUTE_WAREHOUSE] = "warehouse",
	[ROUTE_LAKEHOUSE] = "lakehouse",
};

/* Copy a string value over the default. */
static int
conf_parse_str(struct conf *c __unused, void *field, const char *value,
    char *why __unused, size_t whylen __unused)
{
	char **p = field;

	free(*p);
	*p = xstrdup(value);
	return 0;
}

/* A log path, "-" for stderr, or "off" for none. */
static int
conf_parse_log(struct conf *c, void *field, const char *value, char *why,
    size_t whylen)
{
	char **p = field;

	if (strcmp(value, "off") == 0) {
		free(*p);
		*p = NULL;
		return 0;
	}
	return conf_parse_str(c, field, value, why, whylen);
}

/* "IPv4:port" or "[IPv6]:port", kept as written. */
static int
conf_parse_listen(struct conf *c, void *field, const char *value, char *why,
    size_t whylen)
{
	char host[INET6_ADDRSTRLEN + 1], buf[16];
	const char *h = value, *colon, *close;
	long long port;
	size_t hlen;
	int af = AF_INET;

	if (value[0] == '[') {
		if ((close = strchr(value, ']')) == NULL || close[1] != ':')
			goto bad;
		af = AF_INET6;
		h = value + 1;
		colon = close + 1;
		hlen = (size_t)(close - h);
	} else {
		if ((colon = strrchr(value, ':')) == NULL)
			goto bad;
		hlen = (size_t)(colon - value);
	}
	if (hlen == 0 || hlen >= sizeof(host))
		goto bad;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (inet_pton(af, host, buf) != 1)
		goto bad;
	if (conf_number(colon + 1, 1, 65535, &port) == -1)
		goto bad;
	return conf_parse_str(c, field, value, why, whylen);
bad:
	snprintf(why, whylen,
	    "\"%s\" is not ADDRESS:PORT (IPv4 or [IPv6], port 1-65535)", value);
	return -1;
}

/* uids separated by commas or blanks. */
static int
conf_parse_uids(struct conf *c, void *field, const char *value, char *why,
    size_t whylen)
{
	uid_t *uids = field;
	char *copy, *p, *word;
	long long uid;
	int n = 0;

	copy = p = xstrdup(value);
	while ((word = strsep(&p, ", \t")) != NULL) {
		if (*word == '\0')
			continue;
		if (conf_number(word, 0, (uid_t)-2, &uid) == -1) {
			snprintf(why, whylen, "\"%s\" is not a uid", word);
			goto fail;
		}
		if (n == CONF_MAX_UIDS) {
			snprintf(why, whylen, "more than %d uids",
			    CONF_MAX_UIDS);
			goto fail;
		}
		uids[n++] = (uid_t)uid;
	}
	if (n == 0) {
		snprintf(why, whylen, "\"%s\" holds no uid", value);
		goto fail;
	}
	c->nadmin_uids = n;
	free(copy);
	return 0;
fail:
	free(copy);
	return -1;
}

/* A duration in ms; zero allowed. */
static int
conf_parse_dur(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	if (units_duration(value, field) == -1) {
		snprintf(why, whylen, "\"%s\" is not a duration", value);
		return -1;
	}
	return 0;
}

/* A duration in ms that must be more than zero. */
static int
conf_parse_durpos(struct conf *c, void *field, const char *value, char *why,
    size_t whylen)
{
	if (conf_parse_dur(c, field, value, why, whylen) == -1)
		return -1;
	if (*(uint64_t *)field == 0) {
		snprintf(why, whylen, "\"%s\" must be more than zero", value);
		return -1;
	}
	return 0;
}

/* A size in bytes, more than zero. */
static int
conf_parse_size(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	if (units_size(value, field) == -1) {
		snprintf(why, whylen, "\"%s\" is not a size", value);
		return -1;
	}
	if (*(uint64_t *)field == 0) {
		snprintf(why, whylen, "\"%s\" must be more than zero", value);
		return -1;
	}
	return 0;
}

/* A size in bytes; 0 is allowed (it turns the thing off). */
static int
conf_parse_size0(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	if (units_size(value, field) == -1) {
		snprintf(why, whylen, "\"%s\" is not a size", value);
		return -1;
	}
	return 0;
}

/* A count, as a uint32_t; 0 is allowed (a demo gate needs no records). */
static int
conf_parse_count(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	long long n;

	if (conf_number(value, 0, UINT32_MAX, &n) == -1) {
		snprintf(why, whylen, "\"%s\" is not a whole number", value);
		return -1;
	}
	*(uint32_t *)field = (uint32_t)n;
	return 0;
}

/* A connection cap, as an unsigned. */
static int
conf_parse_conns(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	long long n;

	if (conf_number(value, 1, 65535, &n) == -1) {
		snprintf(why, whylen, "\"%s\" is not a number from 1 to 65535",
		    value);
		return -1;
	}
	*(unsigned *)field = (unsigned)n;
	return 0;
}

/* A multiplier such as "2.0": digits, an optional fraction, above zero. */
static int
conf_parse_factor(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	const char *p = value;
	double v;

	while (isdigit((unsigned char)*p))
		p++;
	if (p != value && *p == '.' && isdigit((unsigned char)p[1]))
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (p == value || *p != '\0' || p - value > 32 ||
	    (v = strtod(value, NULL)) <= 0.0) {
		snprintf(why, whylen, "\"%s\" is not a number above zero",
		    value);
		return -1;
	}
	*(double *)field = v;
	return 0;
}

/* A fraction: "1%" or "0.01". */
static int
conf_parse_ratio(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	if (units_ratio(value, field) == -1) {
		snprintf(why, whylen,
		    "\"%s\" is not a ratio (a percentage such as 1%% or a "
		    "fraction from 0 to 1)",
		    value);
		return -1;
	}
	return 0;
}

/* An upstream's base URI, split into tls, host, port and path. */
static int
conf_parse_uri(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	struct conf_target *t = field;
	char *host, *port, *path;
	size_t len;
	bool tls;

	if (conf_split_uri(value, &tls, &host, &port, &path, why, whylen) == -1)
		return -1;
	if (strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/v1") == 0) {
		snprintf(why, whylen,
		    "\"%s\" ends in /v1: give the base without /v1", value);
		free(host);
		free(port);
		free(path);
		return -1;
	}
	free(t->uri);
	free(t->host);
	free(t->port);
	free(t->path);
	t->tls = tls;
	t->host = host;
	t->port = port;
	t->path = path;
	/* The uri as written, less the trailing slashes. */
	len = strlen(value);
	while (len > 0 && value[len - 1] == '/')
		len--;
	t->uri = xstrndup(value, len);
	t->uri_len = len;
	return 0;
}

/* A URL floe posts to (the webhook): http or https with a host. */
static int
conf_parse_url(struct conf *c, void *field, const char *value, char *why,
    size_t whylen)
{
	const char *host;

	if (strncmp(value, "http://", 7) == 0)
		host = value + 7;
	else if (strncmp(value, "https://", 8) == 0)
		host = value + 8;
	else {
		snprintf(why, whylen,
		    "\"%s\" must start with http:// or https://", value);
		return -1;
	}
	if (*host == '\0' || strchr("/:?#@", *host) != NULL ||
	    strpbrk(value, " \t") != NULL) {
		snprintf(why, whylen, "\"%s\" has no valid host", value);
		return -1;
	}
	return conf_parse_str(c, field, value, why, whylen);
}

/* The client auth mode. */
static int
conf_parse_mode(struct conf *c, void *field, const char *value, char *why,
    size_t whylen)
{
	static const char *modes[] = { "none", "token", "jwt", "passthrough" };
	size_t i;

	for (i = 0; i < nitems(modes); i++)
		if (strcmp(value, modes[i]) == 0)
			return conf_parse_str(c, field, value, why, whylen);
	snprintf(why, whylen,
	    "\"%s\" is not one of none, token, jwt, passthrough", value);
	return -1;
}

/* Decimal digits only (no sign, no blanks) within [MIN, MAX]. */
static int
conf_number(const char *s, long long min, long long max, long long *out)
{
	const char *errstr;
	const char *p;

	for (p = s; *p != '\0'; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	if (p == s || p - s > 18)
		return -1;
	*out = strtonum(s, min, max, &errstr);
	return errstr == NULL ? 0 : -1;
}

/*
 * Split "http[s]://host[:port][/path]" (host may be "[v6]"). Trailing '/'
 * are dropped from the path. Users, queries and fragments are refused:
 * floe appends "/v1/..." to the base. *host is without brackets. On
 * success the caller frees *host, *port and *path.
 */
static int
conf_split_uri(const char *uri, bool *tls, char **host, char **port,
    char **path, char *why, size_t whylen)
{
	const char *p, *h, *hend, *slash;
	long long n;
	size_t len;

	if (strncmp(uri, "http://", 7) == 0) {
		*tls = false;
		p = uri + 7;
	} else if (strncmp(uri, "https://", 8) == 0) {
		*tls = true;
		p = uri + 8;
	} else {
		snprintf(why, whylen,
		    "\"%s\" must start with http:// or https://", uri);
		return -1;
	}
	if (strpbrk(uri, "@?# \t\\") != NULL) {
		snprintf(why, whylen,
		    "\"%s\" may hold only scheme, host, port and path", uri);
		return -1;
	}
	if ((slash = strchr(p, '/')) == NULL)
		slash = p + strlen(p);
	if (*p == '[') {
		h = p + 1;
		if ((hend = memchr(h, ']', (size_t)(slash - h))) == NULL)
			goto badhost;
		p = hend + 1;
	} else {
		h = p;
		if ((hend = memchr(h, ':', (size_t)(slash - h))) == NULL)
			hend = slash;
		p = hend;
	}
	if (hend == h)
		goto badhost;
	if (*p == ':') {
		char buf[8];

		len = (size_t)(slash - p - 1);
		if (len == 0 || len >= sizeof(buf))
			goto badport;
		memcpy(buf, p + 1, len);
		buf[len] = '\0';
		if (conf_number(buf, 1, 65535, &n) == -1)
			goto badport;
		*port = xstrdup(buf);
	} else if (p == slash)
		*port = xstrdup(*tls ? "443" : "80");
	else
		goto badhost;
	*host = xstrndup(h, (size_t)(hend - h));
	len = strlen(slash);
	while (len > 0 && slash[len - 1] == '/')
		len--;
	*path = xstrndup(slash, len);
	return 0;
badhost:
	snprintf(why, whylen, "\"%s\" has no valid host", uri);
	return -1;
badport:
	snprintf(why, whylen, "\"%s\" has no valid port (1-65535)", uri);
	return -1;
}

/* Whether some key lives in SECTION. */
static bool
conf_is_section(const char *section)
{
	size_t i;

	for (i = 0; i < nitems(conf_keys); i++)
		if (strcmp(conf_keys[i].section, section) == 0)
			return true;
	return false;
}

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
	size_t i;
	int line;

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
	for (i = 0; i < nitems(conf_keys); i++)
		if (strcmp(conf_keys[i].section, section) == 0 &&
		    strcmp(conf_keys[i].key, key) == 0)
			break;
	if (i == nitems(conf_keys)) {
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
	size_t i;

	for (i = 0; i < nitems(conf_keys); i++)
		if (strcmp(conf_keys[i].section, section) == 0 &&
		    strcmp(conf_keys[i].key, key) == 0)
			return ctx->lines[i];
	return 0;
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
	if (buf != NULL)
		explicit_bzero(buf, cap);
	free(buf);
	fclose(f);
	return 0;
fail:
	if (buf != NULL)
		explicit_bzero(buf, cap);
	free(buf);
	fclose(f);
	return -1;
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
