/*
 * floe: conf_cluster.c -- floe.conf's [cluster] section: the etcd
 * endpoints, this node's name, the key prefix, etcd auth and TLS. Parsed
 * and checked here without contacting etcd (floe -t); proxy/cluster.c
 * runs it.
 */
#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/compat.h"
#include "lib/nodename.h"
#include "lib/xmalloc.h"
#include "proxy/conf.h"
#include "proxy/conf_impl.h"

static int conf_etcd_one(const char *, size_t, char *, size_t);
static int conf_readable(const char *, char *, size_t);

/* The defaults of [cluster]; etcd stays NULL: one node. */
void
conf_cluster_defaults(struct conf *c)
{
	c->cluster.prefix = xstrdup("/floe/");
	c->cluster.etcd_timeout_ms = 2 * 1000;
	c->cluster.lease_ms = 10 * 1000;
}

/* Free what [cluster] holds. */
void
conf_cluster_free(struct conf *c)
{
	free(c->cluster.etcd);
	free(c->cluster.name);
	free(c->cluster.prefix);
	free(c->cluster.user);
	free(c->cluster.password_file);
	free(c->cluster.ca_file);
	free(c->cluster.cert_file);
	free(c->cluster.key_file);
}

/* One endpoint of the list, LEN bytes at P: http(s)://HOST:PORT. */
static int
conf_etcd_one(const char *p, size_t len, char *why, size_t whylen)
{
	const char *host, *colon, *end = p + len;
	size_t skip;
	long port;
	char *e, num[8];

	if (len >= 7 && strncmp(p, "http://", 7) == 0)
		skip = 7;
	else if (len >= 8 && strncmp(p, "https://", 8) == 0)
		skip = 8;
	else {
		snprintf(why, whylen,
		    "\"%.*s\" is not an http:// or https:// URL", (int)len, p);
		return -1;
	}
	host = p + skip;
	while (end > host && end[-1] == '/')
		end--;
	colon = memchr(host, ':', (size_t)(end - host));
	if (colon == NULL || colon == host || end - colon - 1 <= 0 ||
	    end - colon - 1 >= (long)sizeof(num) ||
	    memchr(host, '/', (size_t)(end - host)) != NULL) {
		snprintf(why, whylen,
		    "\"%.*s\": give each endpoint as SCHEME://HOST:PORT",
		    (int)len, p);
		return -1;
	}
	memcpy(num, colon + 1, (size_t)(end - colon - 1));
	num[end - colon - 1] = '\0';
	errno = 0;
	port = strtol(num, &e, 10);
	if (*e != '\0' || errno != 0 || port < 1 || port > 65535) {
		snprintf(why, whylen, "\"%.*s\": port \"%s\" is not 1..65535",
		    (int)len, p, num);
		return -1;
	}
	return 0;
}

/* [cluster] etcd: URL[,URL...], each http(s)://HOST:PORT. */
int
conf_parse_etcd(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	char **p = field;
	const char *s = value, *comma;
	size_t len;

	for (;;) {
		while (*s == ' ')
			s++;
		comma = strchr(s, ',');
		len = comma != NULL ? (size_t)(comma - s) : strlen(s);
		while (len > 0 && s[len - 1] == ' ')
			len--;
		if (len == 0) {
			snprintf(why, whylen, "an empty endpoint in \"%s\"",
			    value);
			return -1;
		}
		if (conf_etcd_one(s, len, why, whylen) == -1)
			return -1;
		if (comma == NULL)
			break;
		s = comma + 1;
	}
	free(*p);
	*p = xstrdup(value);
	return 0;
}

/* [cluster] name: this node, a key under PREFIX/nodes/. */
int
conf_parse_node(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	char **p = field;

	if (!node_name_ok(value, strlen(value))) {
		snprintf(why, whylen,
		    "\"%s\" is not a node name (1..%d of A-Z a-z 0-9 . _ -)",
		    value, NODE_NAME_MAX);
		return -1;
	}
	free(*p);
	*p = xstrdup(value);
	return 0;
}

/* [cluster] prefix: "/floe/"; it must begin and end with '/'. */
int
conf_parse_prefix(struct conf *c __unused, void *field, const char *value,
    char *why, size_t whylen)
{
	char **p = field;
	size_t len = strlen(value);

	if (len < 1 || value[0] != '/' || value[len - 1] != '/' || len > 200) {
		snprintf(why, whylen,
		    "\"%s\" must begin and end with '/' (\"/floe/\")", value);
		return -1;
	}
	free(*p);
	*p = xstrdup(value);
	return 0;
}

/* Whether PATH can be read. */
static int
conf_readable(const char *path, char *why, size_t whylen)
{
	FILE *f;

	if ((f = fopen(path, "r")) == NULL) {
		snprintf(why, whylen, "cannot read \"%s\": %s", path,
		    strerror(errno));
		return -1;
	}
	fclose(f);
	return 0;
}

/* [cluster] as a whole: pairs set together, files readable, a name. */
int
conf_cluster_check(struct conf *c, const char **key, char *why, size_t whylen)
{
	struct conf_cluster *k = &c->cluster;
	char host[256];
	static const struct {
		const char *key;
		size_t off;
	} files[] = {
		{ "password_file",
		    offsetof(struct conf_cluster, password_file) },
		{ "ca_file", offsetof(struct conf_cluster, ca_file) },
		{ "cert_file", offsetof(struct conf_cluster, cert_file) },
		{ "key_file", offsetof(struct conf_cluster, key_file) },
	};
	const char *path;
	size_t i;

	if (k->etcd == NULL) {
		if (k->name != NULL || k->user != NULL ||
		    k->password_file != NULL || k->ca_file != NULL ||
		    k->cert_file != NULL || k->key_file != NULL) {
			*key = "etcd";
			snprintf(why, whylen,
			    "missing: the other [cluster] keys need it");
			return -1;
		}
		return 0;
	}
	if ((k->user == NULL) != (k->password_file == NULL)) {
		*key = k->user == NULL ? "password_file" : "user";
		snprintf(why, whylen, "user and password_file go together");
		return -1;
	}
	if ((k->cert_file == NULL) != (k->key_file == NULL)) {
		*key = k->cert_file == NULL ? "key_file" : "cert_file";
		snprintf(why, whylen, "cert_file and key_file go together");
		return -1;
	}
	for (i = 0; i < nitems(files); i++) {
		path = *(char **)((char *)k + files[i].off);
		if (path != NULL && conf_readable(path, why, whylen) == -1) {
			*key = files[i].key;
			return -1;
		}
	}
	if (k->name == NULL) {
		if (gethostname(host, sizeof(host)) == -1 ||
		    (host[sizeof(host) - 1] = '\0',
			!node_name_ok(host, strlen(host)))) {
			*key = "name";
			snprintf(why, whylen,
			    "missing, and the host name is not a node name");
			return -1;
		}
		k->name = xstrdup(host);
	}
	return 0;
}
