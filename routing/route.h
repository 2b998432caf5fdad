/*
 * floe: route.h -- objects, namespace rules and resolution. Owns nothing but
 * the canonical object key format; reads the store.
 *
 * Canonical key (the objects DBI key): namespace levels joined by 0x1f, then
 *   0x1e + table name    for a table object ("db.orders")
 *   0x1d                 for a namespace rule ("db.*", covering the
 *                        namespace and every namespace below it)
 * Names holding bytes 0x00..0x1f are refused. Key at most STORE_KEY_MAX.
 *
 * Text forms (floectl, admin API): "db.orders", "a.b.orders", "db.*"; when a
 * name holds a dot, the REST form: levels percent-encoded and joined by %1F,
 * the last level being the table ("my.db%1Forders") or "*" for a rule.
 */
#ifndef FLOE_ROUTING_ROUTE_H
#define FLOE_ROUTING_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routing/store.h"

enum route_side {
	ROUTE_WAREHOUSE = 0,
	ROUTE_LAKEHOUSE = 1,
};
#define ROUTE_NSIDES 2

#define ROUTE_SEP_TABLE 0x1e
#define ROUTE_SEP_RULE 0x1d
#define ROUTE_SEP_LEVEL 0x1f

struct route_obj {
	unsigned char key[STORE_KEY_MAX];
	size_t len;
	bool rule;
};

enum route_why {
	ROUTE_WHY_UNASSIGNED, /* no object entry nor rule: warehouse */
	ROUTE_WHY_OBJECT, /* the object's own entry */
	ROUTE_WHY_RULE, /* a namespace rule */
	ROUTE_WHY_STORE_ERROR /* the store failed: warehouse, the safe side */
};

struct route_result {
	enum route_side read; /* where reads go */
	enum route_side write; /* the authoritative side: where writes go */
	bool assigned;
	uint32_t wave;
	uint8_t state; /* enum wave_state */
	uint8_t pct;
	/*
	 * Changes whenever the answer for this object may change: the highest
	 * event sequence among the records that decided it (0: unassigned).
	 */
	uint64_t version;
	/* Writes to the warehouse copy refused (wave frozen or retired). */
	bool warehouse_writes_refused;
	int64_t since_ms; /* when the deciding wave entered its state */
	enum route_why why;
	struct route_obj matched; /* the object or rule key that decided */
};

/*
 * "warehouse" or "lakehouse" (ROUTE_SIDE_NAME_LEN bytes either): always
 * the same two pointers, so that a name can be told by its address. An
 * inline on the request path, which names a side several times.
 */
#define ROUTE_SIDE_NAME_LEN 9
extern const char route_side_names[ROUTE_NSIDES][ROUTE_SIDE_NAME_LEN + 1];
static inline const char *
route_side_name(enum route_side side)
{
	return route_side_names[side == ROUTE_LAKEHOUSE];
}
/*
 * The canary identity of a client (its bearer token, or its address):
 * 64-bit FNV-1a of ID, 0 for none. The data path and /resolve?client=
 * both use it, so floectl resolve predicts the side a client gets.
 */
uint64_t route_client_hash(const void *id, size_t len);

/* Parse a text form. 0, or -1 with a message in ERR. */
int route_obj_parse(const char *text, struct route_obj *, char *err,
    size_t errlen);
/*
 * Build a table key from decoded parts: NS holds the levels joined by
 * 0x1f. 0, or -1 if too long or a name holds a control byte.
 */
int route_obj_table(const char *ns, size_t nslen, const char *table,
    size_t tablelen, struct route_obj *);
/* Build a rule key for namespace NS (levels joined by 0x1f). */
int route_obj_rule(const char *ns, size_t nslen, struct route_obj *);
/* Rebuild from a stored key. 0 or -1. */
int route_obj_from_key(const void *key, size_t len, struct route_obj *);
/* Text form of OBJ into BUF ("db.orders", "db.*" or the REST form). */
void route_obj_format(const struct route_obj *, char *buf, size_t len);
/*
 * route_obj_format of the stored key KEY (LEN bytes) into BUF: its
 * length, 0 ("") when KEY is not an object's key. A table key of plain
 * names is written from the key without building the object.
 */
size_t route_key_format(const void *key, size_t len, char *buf, size_t buflen);

/*
 * Resolve OBJ: its own entry, else the longest namespace rule, else
 * unassigned (warehouse). CLIENT_HASH picks the side in a canary wave
 * (sticky per client and object). Never fails: a store error resolves to
 * the warehouse with why = ROUTE_WHY_STORE_ERROR and returns -1.
 */
int route_resolve(struct store *, const struct route_obj *,
    uint64_t client_hash, struct route_result *);

#endif
