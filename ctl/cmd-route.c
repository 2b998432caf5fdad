/*
 * floe: cmd-route.c -- floectl's route commands: assign an object or a
 * namespace rule to a wave, remove, list and import assignments, and
 * resolve an object as the data path would.
 */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/xmalloc.h"

/* floectl route set OBJECT WAVE [--force] */
int
ctl_route_set(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--force", false, false, NULL },
		{ "--dry-run", false, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	char *pos[2];
	uint64_t wave;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 2, 2)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(c, pos[1], &wave)) != 0)
		return rc;
	body =
	    json_pack("{s:s,s:I}", "object", pos[0], "wave", (json_int_t)wave);
	if (opts[0].set)
		json_object_set_new(body, "force", json_true());
	if (opts[1].set)
		json_object_set_new(body, "dry_run", json_true());
	rc = ctl_call(c, "POST", "/routes", body, &r);
	json_decref(body);
	if (rc != 0)
		return rc;
	if (opts[1].set) {
		rc = ctl_print_dry(c, &r);
		ctl_resp_clear(&r);
		return rc;
	}
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%s -> wave %" JSON_INTEGER_FORMAT "\n",
		    ctl_str(r.json, "object"),
		    json_integer_value(json_object_get(r.json, "wave")));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl route rm OBJECT [--force] */
int
ctl_route_rm(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--force", false, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	char *pos[1], *obj, *path;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	obj = ctl_escape(c, pos[0]);
	path = xasprintf("/routes/%s%s", obj, opts[0].set ? "?force=1" : "");
	rc = ctl_call(c, "DELETE", path, NULL, &r);
	free(path);
	free(obj);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%s: route removed (was wave %" JSON_INTEGER_FORMAT
		       ")\n",
		    ctl_str(r.json, "object"),
		    json_integer_value(json_object_get(r.json, "wave")));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl route list */
int
ctl_route_list(struct ctl *c, int argc, char **argv)
{
	struct ctl_table t;
	json_t *routes, *rt;
	size_t i;
	char *wave;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0)) != 0)
		return rc;
	if ((rc = ctl_list(c, "/routes", "routes", &routes)) != 0)
		return rc;
	if (c->json)
		ctl_print_list("routes", routes);
	else if (json_array_size(routes) == 0)
		printf("no routes: every object reads from the warehouse\n");
	else {
		ctl_table_init(&t, 3);
		ctl_table_add(&t, "OBJECT", "WAVE", "SINCE");
		json_array_foreach(routes, i, rt) {
			wave = ctl_text(json_object_get(rt, "wave"));
			ctl_table_add(&t, ctl_str(rt, "object"), wave,
			    ctl_str(rt, "since"));
			free(wave);
		}
		ctl_table_print(&t);
	}
	json_decref(routes);
	return CTL_OK;
}

/* floectl route import FILE|- : JSON lines of routes, one synced import. */
int
ctl_route_import(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	int rc;

	if ((rc = ctl_import(c, argc, argv, "/routes/import", &r)) != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%" JSON_INTEGER_FORMAT " set, %" JSON_INTEGER_FORMAT
		       " unchanged\n",
		    json_integer_value(json_object_get(r.json, "set")),
		    json_integer_value(json_object_get(r.json, "unchanged")));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl resolve OBJECT [--client ID] */
int
ctl_resolve(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--client", true, false, NULL },
		{ NULL, false, false, NULL } };
	static const char *const keys[] = { "object", "target", "write_target",
		"wave", "state", "pct", "since", "why", "matched", "version",
		"refuses_warehouse_writes", "client", NULL };
	struct ctl_resp r;
	struct ctl_table t;
	char *pos[1], *obj, *client = NULL, *path, *text;
	json_t *v;
	int rc, i;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1)) != 0)
		return rc;
	obj = ctl_escape(c, pos[0]);
	if (opts[0].set)
		client = ctl_escape(c, opts[0].val);
	path = xasprintf("/resolve/%s%s%s", obj, client ? "?client=" : "",
	    client ? client : "");
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	free(client);
	free(obj);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else {
		ctl_table_init(&t, 2);
		for (i = 0; keys[i] != NULL; i++) {
			if ((v = json_object_get(r.json, keys[i])) == NULL)
				continue;
			text = ctl_text(v);
			ctl_table_add(&t, keys[i], text);
			free(text);
		}
		ctl_table_print(&t);
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}
