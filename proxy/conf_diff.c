/*
 * floe: conf_diff.c -- what a reload may not change. Some keys are taken
 * once, at start-up: the listeners and their limits, the admin socket,
 * the store, the rollback log, the catalogs' addresses and trust stores.
 * A reload names each such key that changed, keeps its running value in
 * the new conf, and applies the rest.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/xmalloc.h"
#include "proxy/conf.h"
#include "routing/route.h"

static bool conf_str_differ(const char *, const char *);
static void conf_str_keep(char **, const char *);
static void conf_note(const char **, size_t, size_t *, const char *);

/* Whether two optional strings differ. */
static bool
conf_str_differ(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return strcmp(a, b) != 0;
}

/* Put a copy of OLD (or NULL) in *P. */
static void
conf_str_keep(char **p, const char *old)
{
	free(*p);
	*p = old != NULL ? xstrdup(old) : NULL;
}

/* Add NAME to NAMES (at most MAX), counting it in *N either way. */
static void
conf_note(const char **names, size_t max, size_t *n, const char *name)
{
	if (*n < max)
		names[*n] = name;
	(*n)++;
}

/* The keys a reload cannot change, in NC against the running OC. */
size_t
conf_keep_restart(struct conf *nc, const struct conf *oc, const char **names,
    size_t max)
{
	static const char *uri_names[ROUTE_NSIDES] = { "[warehouse] uri",
		"[lakehouse] uri" };
	static const char *ca_names[ROUTE_NSIDES] = { "[warehouse] ca_file",
		"[lakehouse] ca_file" };
	struct conf_target *nt;
	const struct conf_target *ot;
	size_t n = 0;
	int side;

#define KEEP_STR(field, name)                                                  \
	do {                                                                   \
		if (conf_str_differ(nc->field, oc->field)) {                   \
			conf_str_keep(&nc->field, oc->field);                  \
			conf_note(names, max, &n, name);                       \
		}                                                              \
	} while (0)
#define KEEP_NUM(field, name)                                                  \
	do {                                                                   \
		if (nc->field != oc->field) {                                  \
			nc->field = oc->field;                                 \
			conf_note(names, max, &n, name);                       \
		}                                                              \
	} while (0)

	KEEP_STR(listen, "[floe] listen");
	KEEP_STR(listen_plain, "[floe] listen_plain");
	KEEP_STR(metrics_listen, "[floe] metrics_listen");
	/* A certificate is read again; TLS is not turned on or off. */
	if ((nc->tls_cert != NULL) != (oc->tls_cert != NULL)) {
		conf_str_keep(&nc->tls_cert, oc->tls_cert);
		conf_str_keep(&nc->tls_key, oc->tls_key);
		conf_note(names, max, &n, "[floe] tls_cert");
	}
	KEEP_STR(admin_socket, "[floe] admin_socket");
	KEEP_STR(state_dir, "[floe] state_dir");
	KEEP_STR(rollback_log, "[floe] rollback_log");
	KEEP_NUM(idle_timeout_ms, "[floe] idle_timeout");
	KEEP_NUM(workers, "[floe] workers");
	KEEP_NUM(header_timeout_ms, "[floe] header_timeout");
	KEEP_NUM(max_body, "[floe] max_body");
	KEEP_NUM(max_header, "[floe] max_header");
	for (side = 0; side < ROUTE_NSIDES; side++) {
		nt = &nc->target[side];
		ot = &oc->target[side];
		if (strcmp(nt->uri, ot->uri) != 0) {
			conf_str_keep(&nt->uri, ot->uri);
			conf_str_keep(&nt->host, ot->host);
			conf_str_keep(&nt->port, ot->port);
			conf_str_keep(&nt->path, ot->path);
			nt->uri_len = ot->uri_len;
			nt->path_len = ot->path_len;
			nt->tls = ot->tls;
			conf_note(names, max, &n, uri_names[side]);
		}
		if (conf_str_differ(nt->ca_file, ot->ca_file)) {
			conf_str_keep(&nt->ca_file, ot->ca_file);
			conf_note(names, max, &n, ca_names[side]);
		}
	}
#undef KEEP_STR
#undef KEEP_NUM
	return n;
}
