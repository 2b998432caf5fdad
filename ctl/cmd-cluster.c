/*
 * floe: cmd-cluster.c -- floectl cluster: every node of a cluster side by
 * side, from GET /cluster of the node floectl talks to.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctl/ctl.h"

/* floectl cluster: one row per node; exit 1 if one lags or disagrees. */
int
ctl_cluster(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	struct ctl_table t;
	json_t *n;
	size_t i;
	char rev[32];
	const char *flag;
	int rc, off = 0;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0)) != 0)
		return rc;
	if ((rc = ctl_call(c, "GET", "/cluster", NULL, &r)) != 0)
		return rc;
	json_array_foreach(json_object_get(r.json, "nodes"), i, n)
		off += json_is_true(json_object_get(n, "lagging")) ||
		    json_is_true(json_object_get(n, "disagrees")) ||
		    !json_is_true(json_object_get(n, "connected"));
	if (c->json) {
		ctl_print_json(&r);
		ctl_resp_clear(&r);
		return off > 0 ? CTL_REFUSED : CTL_OK;
	}
	printf("node %s, etcd revision %" JSON_INTEGER_FORMAT " applied, %s\n",
	    ctl_str(r.json, "node"),
	    json_integer_value(json_object_get(r.json, "applied_revision")),
	    json_is_true(json_object_get(r.json, "connected")) ?
		"connected to etcd" :
		"NOT connected to etcd: serving its copy");
	if (json_is_string(json_object_get(r.json, "leader")))
		printf("leader %s (it runs the freshness and count polls)%s\n",
		    ctl_str(r.json, "leader"),
		    json_is_true(json_object_get(r.json, "is_leader")) ?
			": this node" :
			"");
	else
		printf("no leader: nobody runs the freshness and count "
		       "polls\n");
	ctl_table_init(&t, 8);
	ctl_table_add(&t, "NODE", "ROLE", "APPLIED", "HASH", "CONNECTED",
	    "VERSION", "HEARTBEAT", "");
	json_array_foreach(json_object_get(r.json, "nodes"), i, n) {
		snprintf(rev, sizeof(rev), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(json_object_get(n, "applied_revision")));
		flag = json_is_true(json_object_get(n, "lagging")) ?
		    "LAGGING" :
		    json_is_true(json_object_get(n, "disagrees")) ?
		    "DISAGREES" :
		    json_is_true(json_object_get(n, "self")) ? "(this node)" :
							       "";
		ctl_table_add(&t, ctl_str(n, "name"),
		    json_is_true(json_object_get(n, "leader")) ? "leader" : "-",
		    rev, ctl_str(n, "hash"),
		    json_is_true(json_object_get(n, "connected")) ? "yes" :
								    "NO",
		    ctl_str(n, "version"), ctl_str(n, "heartbeat"), flag);
	}
	ctl_table_print(&t);
	ctl_resp_clear(&r);
	return off > 0 ? CTL_REFUSED : CTL_OK;
}
