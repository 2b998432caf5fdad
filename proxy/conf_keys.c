/*
 * floe: conf_keys.c -- every key floe.conf may hold, in one table
 * (conf_keys[]: section, key, parser, where the value goes in struct conf),
 * and the parsers of its values: strings, addresses, uids, durations,
 * sizes, counts, ratios and the upstreams' URIs. conf.c reads the file
 * and validates the whole.
 */
#include <sys/types.h>

#include <arpa/inet.h>

#include <ctype.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/conf.h"
#include "proxy/conf_impl.h"
#include "routing/route.h"

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
static int conf_parse_workers(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_factor(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_ratio(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_uri(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_url(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_mode(struct conf *, void *, const char *, char *, size_t);
static int conf_parse_readers(struct conf *, void *, const char *, char *,
    size_t);
static int conf_parse_cred(struct conf *, void *, const char *, char *, size_t);
static int conf_number(const char *, long long, long long, long long *);
static int conf_split_uri(const char *, bool *, char **, char **, char **,
    char *, size_t);
static const char *conf_uri_scheme(const char *, bool *, char *, size_t);

#define F(m) offsetof(struct conf, m)
#define W(m) offsetof(struct conf, target[ROUTE_WAREHOUSE].m)
#define L(m) offsetof(struct conf, target[ROUTE_LAKEHOUSE].m)

/* Every key floe.conf may hold. conf/floe.conf documents each one. */
const struct conf_key conf_keys[] = {
	{ "floe", "listen", conf_parse_listen, F(listen) },
	{ "floe", "admin_socket", conf_parse_str, F(admin_socket) },
	{ "floe", "state_dir", conf_parse_str, F(state_dir) },
	{ "floe", "rollback_log", conf_parse_str, F(rollback_log) },
	{ "floe", "access_log", conf_parse_log, F(access_log) },
	{ "floe", "tls_cert", conf_parse_str, F(tls_cert) },
	{ "floe", "tls_key", conf_parse_str, F(tls_key) },
	{ "floe", "listen_plain", conf_parse_listen, F(listen_plain) },
	{ "floe", "metrics_listen", conf_parse_listen, F(metrics_listen) },
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
	{ "floe", "check_memo_size", conf_parse_size0, F(check_memo_size) },
	{ "floe", "output_budget", conf_parse_size, F(output_budget) },
	{ "floe", "workers", conf_parse_workers, F(workers) },

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
	{ "warehouse", "auth", conf_parse_cred, W(auth) },
	{ "warehouse", "oauth_token_uri", conf_parse_url, W(oauth_token_uri) },
	{ "warehouse", "client_id", conf_parse_str, W(client_id) },
	{ "warehouse", "client_secret_file", conf_parse_str,
	    W(client_secret_file) },
	{ "warehouse", "scope", conf_parse_str, W(scope) },
	{ "warehouse", "oauth_audience", conf_parse_str, W(oauth_audience) },
	{ "warehouse", "sigv4_region", conf_parse_str, W(sigv4_region) },
	{ "warehouse", "sigv4_service", conf_parse_str, W(sigv4_service) },
	{ "warehouse", "aws_credentials_file", conf_parse_str,
	    W(aws_credentials_file) },
	{ "warehouse", "aws_profile", conf_parse_str, W(aws_profile) },
	{ "warehouse", "google_key_file", conf_parse_str, W(google_key_file) },

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
	{ "lakehouse", "auth", conf_parse_cred, L(auth) },
	{ "lakehouse", "oauth_token_uri", conf_parse_url, L(oauth_token_uri) },
	{ "lakehouse", "client_id", conf_parse_str, L(client_id) },
	{ "lakehouse", "client_secret_file", conf_parse_str,
	    L(client_secret_file) },
	{ "lakehouse", "scope", conf_parse_str, L(scope) },
	{ "lakehouse", "oauth_audience", conf_parse_str, L(oauth_audience) },
	{ "lakehouse", "sigv4_region", conf_parse_str, L(sigv4_region) },
	{ "lakehouse", "sigv4_service", conf_parse_str, L(sigv4_service) },
	{ "lakehouse", "aws_credentials_file", conf_parse_str,
	    L(aws_credentials_file) },
	{ "lakehouse", "aws_profile", conf_parse_str, L(aws_profile) },
	{ "lakehouse", "google_key_file", conf_parse_str, L(google_key_file) },

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
	{ "policy", "readers_horizon", conf_parse_durpos,
	    F(policy.readers_horizon_ms) },
	{ "policy", "decommission_readers", conf_parse_readers,
	    F(policy.decommission_readers) },

	{ "auth", "mode", conf_parse_mode, F(auth.mode) },
	{ "auth", "token_file", conf_parse_str, F(auth.token_file) },
	{ "auth", "jwks_file", conf_parse_str, F(auth.jwks_file) },
	{ "auth", "audience", conf_parse_str, F(auth.audience) },
	{ "auth", "issuer", conf_parse_str, F(auth.issuer) },

	{ "cluster", "etcd", conf_parse_etcd, F(cluster.etcd) },
	{ "cluster", "name", conf_parse_node, F(cluster.name) },
	{ "cluster", "prefix", conf_parse_prefix, F(cluster.prefix) },
	{ "cluster", "etcd_timeout", conf_parse_durpos,
	    F(cluster.etcd_timeout_ms) },
	{ "cluster", "lease", conf_parse_durpos, F(cluster.lease_ms) },
	{ "cluster", "user", conf_parse_str, F(cluster.user) },
	{ "cluster", "password_file", conf_parse_str,
	    F(cluster.password_file) },
	{ "cluster", "ca_file", conf_parse_str, F(cluster.ca_file) },
	{ "cluster", "cert_file", conf_parse_str, F(cluster.cert_file) },
	{ "cluster", "key_file", conf_parse_str, F(cluster.key_file) },
};

#undef F
#undef W
#undef L

_Static_assert(nitems(conf_keys) <= CONF_NKEYS_MAX,
    "raise CONF_NKEYS_MAX: conf_ctx.lines is too short");

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
conf_parse_size(struct conf *c, void *field, const char *value, char *why,
    size_t whylen)
{
	if (conf_parse_size0(c, field, value, why, whylen) == -1)
		return -1;
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

/*
 * workers: a number from 1 to CONF_MAX_WORKERS, or "auto": the CPUs floe
 * may run on (its affinity mask), at most CONF_MAX_WORKERS.
 */
static int
conf_parse_workers(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	cpu_set_t set;
	long long n;

	if (strcmp(value, "auto") == 0) {
		n = sched_getaffinity(0, sizeof(set), &set) == 0 ?
		    CPU_COUNT(&set) :
		    1;
		if (n < 1)
			n = 1;
		if (n > CONF_MAX_WORKERS)
			n = CONF_MAX_WORKERS;
	} else if (conf_number(value, 1, CONF_MAX_WORKERS, &n) == -1) {
		snprintf(why, whylen,
		    "\"%s\" is neither auto nor a number from 1 to %d", value,
		    CONF_MAX_WORKERS);
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
	t->path_len = strlen(path);
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
	bool tls;

	if ((host = conf_uri_scheme(value, &tls, why, whylen)) == NULL)
		return -1;
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

/* block | warn | off: what stale readers do to a freeze. */
static int
conf_parse_readers(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	static const char *const modes[] = { [CONF_READERS_BLOCK] = "block",
		[CONF_READERS_WARN] = "warn",
		[CONF_READERS_OFF] = "off" };
	size_t i;

	for (i = 0; i < nitems(modes); i++)
		if (strcmp(value, modes[i]) == 0) {
			*(int *)field = (int)i;
			return 0;
		}
	snprintf(why, whylen, "\"%s\" is not one of block, warn, off", value);
	return -1;
}

/* How floe authenticates to a catalog (its auth key). */
static int
conf_parse_cred(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	enum conf_cred m;

	for (m = CONF_CRED_NONE; m <= CONF_CRED_GOOGLE; m++)
		if (strcmp(value, conf_cred_name(m)) == 0) {
			*(enum conf_cred *)field = m;
			return 0;
		}
	snprintf(why, whylen,
	    "\"%s\" is not one of none, token, oauth2, sigv4, google", value);
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
 * What follows the scheme of URI, http:// or https:// (*TLS says which),
 * or NULL with what is wrong in WHY.
 */
static const char *
conf_uri_scheme(const char *uri, bool *tls, char *why, size_t whylen)
{
	if (strncmp(uri, "http://", 7) == 0) {
		*tls = false;
		return uri + 7;
	}
	if (strncmp(uri, "https://", 8) == 0) {
		*tls = true;
		return uri + 8;
	}
	snprintf(why, whylen, "\"%s\" must start with http:// or https://",
	    uri);
	return NULL;
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

	if ((p = conf_uri_scheme(uri, tls, why, whylen)) == NULL)
		return -1;
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

/* The index of SECTION KEY in conf_keys[], or -1. */
int
conf_key_find(const char *section, const char *key)
{
	size_t i;

	for (i = 0; i < nitems(conf_keys); i++)
		if (strcmp(conf_keys[i].section, section) == 0 &&
		    strcmp(conf_keys[i].key, key) == 0)
			return (int)i;
	return -1;
}

/* Whether some key lives in SECTION. */
bool
conf_is_section(const char *section)
{
	size_t i;

	for (i = 0; i < nitems(conf_keys); i++)
		if (strcmp(conf_keys[i].section, section) == 0)
			return true;
	return false;
}
