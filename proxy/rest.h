/*
 * floe: rest.h -- the Iceberg REST catalog path grammar: a request line
 * (method + target) becomes an operation with its prefix, namespace and
 * table. Pure: no I/O, no allocation; the result points into the caller's
 * target buffer or into the fixed buffers of struct rest_req.
 */
#ifndef FLOE_PROXY_REST_H
#define FLOE_PROXY_REST_H

#include <stdbool.h>
#include <stddef.h>

enum rest_op {
	REST_NONE = 0,
	REST_GET_CONFIG,
	REST_GET_TOKEN,
	REST_LIST_NAMESPACES,
	REST_CREATE_NAMESPACE,
	REST_LOAD_NAMESPACE,
	REST_NAMESPACE_EXISTS,
	REST_DROP_NAMESPACE,
	REST_UPDATE_PROPERTIES,
	REST_LIST_TABLES,
	REST_CREATE_TABLE,
	REST_REGISTER_TABLE,
	REST_LOAD_TABLE,
	REST_UPDATE_TABLE,
	REST_DROP_TABLE,
	REST_TABLE_EXISTS,
	REST_UNREGISTER_TABLE,
	REST_LOAD_CREDENTIALS,
	REST_SIGN,
	REST_PLAN,
	REST_FETCH_PLAN,
	REST_CANCEL_PLAN,
	REST_FETCH_TASKS,
	REST_REPORT_METRICS,
	REST_RENAME_TABLE,
	REST_COMMIT_TRANSACTION,
	REST_LIST_VIEWS,
	REST_CREATE_VIEW,
	REST_LOAD_VIEW,
	REST_REPLACE_VIEW,
	REST_DROP_VIEW,
	REST_VIEW_EXISTS,
	REST_RENAME_VIEW,
	REST_REGISTER_VIEW,
	REST_LIST_FUNCTIONS,
	REST_LOAD_FUNCTION,
	REST_NOPS
};

/* What a path names, which decides how it is routed. */
enum rest_scope {
	REST_SCOPE_CATALOG, /* config, token, namespace list/create */
	REST_SCOPE_NAMESPACE, /* N and N/properties, listings */
	REST_SCOPE_TABLE, /* N/tables/{table}[/...]: table in the path */
	REST_SCOPE_BODY, /* the table(s) are named only in the body */
	REST_SCOPE_VIEW, /* views and functions: always the warehouse */
};

enum rest_rc {
	REST_OK = 0,
	REST_NOTFOUND = 404, /* no such path */
	REST_BADMETHOD = 405, /* path exists, not with this method */
	REST_MALFORMED = 400, /* bad percent-encoding, empty level, ... */
	REST_TOOLONG = 414, /* a name does not fit the buffers */
};

#define REST_NAME_MAX 1024

/* A span of the caller's target buffer. */
struct rest_span {
	size_t off;
	size_t len;
};

struct rest_req {
	enum rest_op op;
	enum rest_scope scope;
	bool write; /* changes the catalog */
	struct rest_span prefix; /* len 0 when the path has none */
	/* Everything after the prefix, "/namespaces/..." up to '?'. */
	struct rest_span rest;
	struct rest_span query; /* after '?', without it; may be empty */
	struct rest_span ns_raw; /* the namespace segment as sent */
	struct rest_span table_raw; /* the table/view/function segment */
	struct rest_span plan_id; /* fetch/cancel plan */
	/* Decoded namespace: levels joined by 0x1f; nlevels 0 if none. */
	char ns[REST_NAME_MAX];
	size_t ns_len;
	int nlevels;
	/* Decoded table, view or function name. */
	char table[REST_NAME_MAX];
	size_t table_len;
	bool has_table;
	/* On REST_BADMETHOD: the methods the path has ("GET, HEAD"). */
	char allow[32];
};

/* HTTP methods as rest.c knows them. */
enum rest_method {
	REST_M_GET,
	REST_M_HEAD,
	REST_M_POST,
	REST_M_PUT,
	REST_M_DELETE,
	REST_M_OTHER
};

/*
 * Parse TARGET (the request-target, "/v1/..."[?query]) of length LEN. SEP is
 * the extra namespace separator floe announces (decoded bytes, e.g. "."),
 * or NULL: 0x1f (sent as %1F) is always accepted. Returns REST_OK and fills
 * R, or an enum rest_rc status; for 405, R->allow lists the methods the
 * path has, for the Allow header.
 *
 * Percent-decoding is for routing only: '+' decodes to a space (Java
 * clients send URLEncoder output), %1F splits levels, and a decoded byte
 * below 0x20 other than the separator is malformed.
 */
int rest_parse(enum rest_method, const char *target, size_t len,
    const char *sep, struct rest_req *r);

/* The spec's operationId ("loadTable"), for logs and /v1/config. */
const char *rest_op_name(enum rest_op);
/*
 * The endpoint string for /v1/config ("GET /v1/{prefix}/namespaces"), or
 * NULL for operations not announced there (config, token).
 */
const char *rest_op_endpoint(enum rest_op);
/* Decode one query parameter NAME from QUERY into BUF. 0, or -1 if absent. */
int rest_query_get(const char *query, size_t len, const char *name, char *buf,
    size_t buflen);

#endif
