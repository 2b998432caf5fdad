/*
 * floe: conf_impl.h -- private to the floe.conf reader (conf.c and
 * conf_keys.c); nothing else includes it. Owns the shape of the key table,
 * conf_keys[], whose rows conf_keys.c holds and conf.c's inih handler
 * walks. Callers use proxy/conf.h.
 */
#ifndef FLOE_PROXY_CONF_IMPL_H
#define FLOE_PROXY_CONF_IMPL_H

#include <stdbool.h>
#include <stddef.h>

struct conf;

#define CONF_WHY 256 /* room for what is wrong with one value */
#define CONF_NKEYS_MAX 128 /* rows conf_keys[] may have */

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

/* Every key floe.conf may hold; conf/floe.conf documents each one. */
extern const struct conf_key conf_keys[];

/* The index of SECTION KEY in conf_keys[], or -1. */
int conf_key_find(const char *section, const char *key);
/* Whether some key lives in SECTION. */
bool conf_is_section(const char *section);

/* conf_cluster.c: [cluster]'s parsers, defaults and checks. */
int conf_parse_etcd(struct conf *, void *, const char *, char *, size_t);
int conf_parse_node(struct conf *, void *, const char *, char *, size_t);
int conf_parse_prefix(struct conf *, void *, const char *, char *, size_t);
void conf_cluster_defaults(struct conf *);
void conf_cluster_free(struct conf *);
/*
 * Check [cluster] as a whole, without contacting etcd. 0, or -1 with what
 * is wrong in WHY and the key at fault in *KEY.
 */
int conf_cluster_check(struct conf *, const char **key, char *why,
    size_t whylen);

#endif
