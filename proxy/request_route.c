/*
 * floe: request_route.c -- which side answers a request (DESIGN "Which
 * side answers"): the table a path or a body names resolved on the route
 * table, reads following the wave and writes the authoritative side,
 * listings asking both, and the refusals (writes to a warehouse copy a
 * wave has left, renames and transactions across catalogs).
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/request_impl.h"
#include "proxy/rest.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

/* Resolve the table named by NS (levels joined by 0x1f) and NAME. */
static int
request_resolve(struct request *r, const char *ns, size_t nslen,
    const char *name, size_t namelen, struct route_result *res)
{
	struct route_obj spare, *obj;

	/* Built where the request keeps it, when it has room: no copy. */
	obj = r->nobjs < REQUEST_MAX_OBJS ? &r->objs[r->nobjs] : &spare;
	if (route_obj_table(ns, nslen, name, namelen, obj) == -1)
		return -1;
	if (obj == &spare)
		r->objs_overflow = true;
	else
		r->nobjs++;
	if (r->f->store == NULL) {
		memset(res, 0, sizeof(*res));
		res->why = ROUTE_WHY_STORE_ERROR;
		return 0;
	}
	(void)route_resolve(r->f->store, obj, r->client_hash, res);
	return 0;
}

/* Join a JSON array of namespace levels with 0x1f into BUF. */
int
request_json_ns(json_t *levels, char *buf, size_t len, size_t *outlen)
{
	size_t i, n = 0, l;
	json_t *v;

	if (!json_is_array(levels) || json_array_size(levels) == 0)
		return -1;
	json_array_foreach(levels, i, v) {
		if (!json_is_string(v))
			return -1;
		l = json_string_length(v);
		if (n + l + 1 >= len)
			return -1;
		if (i > 0)
			buf[n++] = ROUTE_SEP_LEVEL;
		memcpy(buf + n, json_string_value(v), l);
		n += l;
	}
	*outlen = n;
	return 0;
}

/* Resolve a TableIdentifier object {namespace, name}. */
static int
request_resolve_ident(struct request *r, json_t *ident,
    struct route_result *res, char *text, size_t textlen)
{
	char ns[REST_NAME_MAX];
	size_t nslen;
	json_t *name = json_object_get(ident, "name");
	struct route_obj obj;

	if (!json_is_string(name) ||
	    request_json_ns(json_object_get(ident, "namespace"), ns, sizeof(ns),
		&nslen) == -1)
		return -1;
	if (route_obj_table(ns, nslen, json_string_value(name),
		json_string_length(name), &obj) == -1)
		return -1;
	route_obj_format(&obj, text, textlen);
	return request_resolve(r, ns, nslen, json_string_value(name),
	    json_string_length(name), res);
}

/*
 * Do A and B resolve to the same side? Writes must match; reads too,
 * except within one wave: a canary picks each name's read side by a hash,
 * but names of one wave move together, so the route still follows.
 */
bool
request_same_side(const struct route_result *a, const struct route_result *b)
{
	if (a->write != b->write)
		return false;
	return a->read == b->read ||
	    (a->assigned && b->assigned && a->wave == b->wave);
}

/* createTable, registerTable: the table is the path's namespace and "name". */
static int
request_route_body_name(struct request *r, json_t *j)
{
	json_t *name = json_object_get(j, "name");

	if (!json_is_string(name) ||
	    request_resolve(r, r->rr.ns, r->rr.ns_len, json_string_value(name),
		json_string_length(name), &r->route) == -1) {
		request_errorf(r, 400, "BadRequestException",
		    "Invalid %s request: \"name\" must be a table name",
		    rest_op_name(r->rr.op));
		return -1;
	}
	r->has_route = true;
	return 0;
}

/* renameTable: "source" and "destination" must be served alike. */
static int
request_route_body_rename(struct request *r, json_t *j)
{
	struct route_result res[2];
	char text[2][600];

	if (request_resolve_ident(r, json_object_get(j, "source"), &res[0],
		text[0], sizeof(text[0])) == -1 ||
	    request_resolve_ident(r, json_object_get(j, "destination"), &res[1],
		text[1], sizeof(text[1])) == -1) {
		request_errorf(r, 400, "BadRequestException",
		    "Invalid renameTable request: \"source\" and "
		    "\"destination\" must be table identifiers");
		return -1;
	}
	/*
	 * Reads must follow the table too: renaming a lakehouse-read
	 * table to a warehouse-read name would move its readers.
	 */
	if (!request_same_side(&res[0], &res[1])) {
		request_errorf(r, 400, "BadRequestException",
		    "Cannot rename %s (read from the %s, written to the %s) "
		    "to %s (read from the %s, written to the %s): the two "
		    "names are served by different catalogs; put both in the "
		    "same wave first",
		    text[0], route_side_name(res[0].read),
		    route_side_name(res[0].write), text[1],
		    route_side_name(res[1].read),
		    route_side_name(res[1].write));
		return -1;
	}
	r->route = res[0];
	r->has_route = true;
	return 0;
}

/*
 * commitTransaction: every table of "table-changes" on the side of the
 * first; a refusal of warehouse writes to any of them holds for all.
 */
static int
request_route_body_commit(struct request *r, json_t *j)
{
	json_t *changes = json_object_get(j, "table-changes"), *c;
	struct route_result res[2];
	char text[2][600];
	size_t i;

	if (!json_is_array(changes) || json_array_size(changes) == 0) {
		request_errorf(r, 400, "BadRequestException",
		    "Invalid commitTransaction request: \"table-changes\" "
		    "must be a non-empty array");
		return -1;
	}
	json_array_foreach(changes, i, c) {
		struct route_result *cur = i == 0 ? &res[0] : &res[1];

		if (request_resolve_ident(r, json_object_get(c, "identifier"),
			cur, text[i == 0 ? 0 : 1], sizeof(text[0])) == -1) {
			request_errorf(r, 400, "BadRequestException",
			    "Invalid commitTransaction request: "
			    "table-changes[%zu] has no valid \"identifier\"",
			    i);
			return -1;
		}
		if (i > 0 && !request_same_side(&res[0], &res[1])) {
			request_errorf(r, 400, "BadRequestException",
			    "Cannot commit one transaction across catalogs: "
			    "%s is read from the %s and written to the %s, %s "
			    "is read from the %s and written to the %s",
			    text[0], route_side_name(res[0].read),
			    route_side_name(res[0].write), text[1],
			    route_side_name(res[1].read),
			    route_side_name(res[1].write));
			return -1;
		}
		if (i > 0 && res[1].warehouse_writes_refused &&
		    res[1].write == ROUTE_WAREHOUSE)
			res[0].warehouse_writes_refused = true;
	}
	r->route = res[0];
	r->has_route = true;
	return 0;
}

/*
 * Operations that name their tables only in the body: create, register,
 * rename, multi-table transactions. All tables must be on one side, or
 * floe refuses rather than split what no catalog can do atomically.
 */
static int
request_route_body(struct request *r)
{
	struct evbuffer *body = r->msg->body;
	size_t len = evbuffer_get_length(body);
	json_error_t jerr;
	json_t *j;
	int rc = 0;

	j = json_loadb(len > 0 ? (const char *)evbuffer_pullup(body, -1) : "",
	    len, 0, &jerr);
	if (j == NULL || !json_is_object(j)) {
		request_errorf(r, 400, "BadRequestException",
		    "Invalid JSON body for %s: %s", rest_op_name(r->rr.op),
		    j == NULL ? jerr.text : "not an object");
		json_decref(j);
		return -1;
	}
	switch (r->rr.op) {
	case REST_CREATE_TABLE:
	case REST_REGISTER_TABLE:
		rc = request_route_body_name(r, j);
		break;
	case REST_RENAME_TABLE:
		rc = request_route_body_rename(r, j);
		break;
	case REST_COMMIT_TRANSACTION:
		rc = request_route_body_commit(r, j);
		break;
	default:
		break;
	}
	json_decref(j);
	return rc;
}

/* Decide the side(s) for R. 0 to forward, -1 if R was answered. */
int
request_route(struct request *r)
{
	const struct rest_req *rr = &r->rr;
	enum route_side pinned =
	    r->pfx == PFX_LAKEHOUSE ? ROUTE_LAKEHOUSE : ROUTE_WAREHOUSE;
	char text[600];

	r->mode = MODE_ONE;
	switch (rr->scope) {
	case REST_SCOPE_TABLE:
		if (request_resolve(r, rr->ns, rr->ns_len, rr->table,
			rr->table_len, &r->route) == -1) {
			request_errorf(r, 400, "BadRequestException",
			    "Invalid table identifier");
			return -1;
		}
		r->has_route = true;
		break;
	case REST_SCOPE_BODY:
		if (request_route_body(r) == -1)
			return -1;
		break;
	case REST_SCOPE_NAMESPACE:
	case REST_SCOPE_CATALOG:
		if (r->pfx != PFX_ROUTED)
			break;
		if (rr->op == REST_LIST_NAMESPACES ||
		    rr->op == REST_LIST_TABLES || rr->op == REST_LIST_VIEWS)
			r->mode = MODE_LIST;
		else if (rr->op == REST_LOAD_NAMESPACE ||
		    rr->op == REST_NAMESPACE_EXISTS)
			r->mode = MODE_NS_READ;
		break;
	case REST_SCOPE_VIEW:
		break;
	}
	if (r->pfx != PFX_ROUTED)
		r->side = pinned;
	else if (!r->has_route)
		r->side = ROUTE_WAREHOUSE;
	else
		r->side = rr->write ? r->route.write : r->route.read;
	if (rr->write && r->side == ROUTE_WAREHOUSE && r->has_route &&
	    r->route.warehouse_writes_refused) {
		char since[40];

		route_obj_format(&r->route.matched, text, sizeof(text));
		units_time_format(r->route.since_ms, since, sizeof(since));
		request_errorf(r, 403, "ForbiddenException",
		    "Writes to the warehouse copy of %.*s are refused: wave %u "
		    "is %s since %s; write to the lakehouse",
		    (int)rr->table_len, rr->table, r->route.wave,
		    wave_state_name(r->route.state), since);
		return -1;
	}
	r->commit = rr->op == REST_UPDATE_TABLE ||
	    rr->op == REST_COMMIT_TRANSACTION || rr->op == REST_REPLACE_VIEW;
	r->merge_config = rr->op == REST_LOAD_TABLE ||
	    rr->op == REST_CREATE_TABLE || rr->op == REST_REGISTER_TABLE;
	return 0;
}
