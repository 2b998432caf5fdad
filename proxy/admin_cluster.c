/*
 * floe: admin_cluster.c -- the admin API in cluster mode: GET /cluster,
 * and the changes that go through etcd. A change is served as in one-node
 * mode with the store capturing its writes instead of making them; a
 * success is then committed in etcd (proxy/cluster.h) and answered once
 * this node applied it, a refusal by etcd (a concurrent change, etcd
 * unreachable) replaces the answer.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/log.h"
#include "lib/xmalloc.h"
#include "proxy/admin_impl.h"
#include "proxy/cluster.h"
#include "proxy/floe.h"
#include "routing/store.h"

/* An answer held until etcd took the change and the mirror applied it. */
struct admin_cluster_hold {
	struct admin_reply reply;
	admin_later_cb later;
	void *arg;
	struct floe *f;
	struct evbuffer *after; /* ledger records for the trigger, or NULL */
	bool refusal; /* a refusal's event: answered as refused whatever */
};

static void admin_cluster_done(int, const char *, void *);

/* Whether R is a change that goes through etcd in cluster mode. */
bool
admin_cluster_captures(const struct admin_req *r)
{
	if (r->f->cluster == NULL || strcmp(r->method, "GET") == 0 ||
	    strcmp(r->method, "HEAD") == 0 || r->nseg == 0)
		return false;
	return strcmp(r->seg[0], "routes") == 0 ||
	    strcmp(r->seg[0], "waves") == 0 || strcmp(r->seg[0], "ledger") == 0;
}

/* Serve R through FN with the store capturing; commit in etcd. */
void
admin_cluster_run(struct admin_req *r, void (*fn)(struct admin_req *))
{
	struct store_capture cap;
	struct admin_cluster_hold *h;
	bool refusal;
	size_t i;

	store_capture_begin(r->st, &cap);
	fn(r);
	store_capture_end(r->st);
	/* A refusal that records its event (a gate's, the ledger's). */
	refusal = r->reply->status == 409 && cap.n > 0;
	for (i = 0; i < cap.n && refusal; i++)
		refusal = cap.ops[i].db == STORE_DB_EVENTS;
	if (r->later || cap.n == 0 ||
	    ((r->reply->status < 200 || r->reply->status > 299) && !refusal) ||
	    r->later_cb == NULL) {
		store_capture_clear(&cap);
		/* Nothing to commit (duplicates only): act now if it held. */
		if (r->after != NULL && !r->later && r->reply->status >= 200 &&
		    r->reply->status <= 299)
			admin_job_alarms(r->f, r->after);
		if (r->after != NULL)
			evbuffer_free(r->after);
		r->after = NULL;
		return;
	}
	h = xcalloc(1, sizeof(*h));
	h->reply = *r->reply;
	h->later = r->later_cb;
	h->arg = r->later_arg;
	h->f = r->f;
	h->refusal = refusal;
	h->after = r->after;
	r->after = NULL;
	r->reply->body = NULL;
	r->later = true;
	cluster_commit(r->f->cluster, &cap, admin_cluster_done, h);
}

/* etcd answered the change: the held answer, or why not. */
static void
admin_cluster_done(int status, const char *msg, void *arg)
{
	struct admin_cluster_hold *h = arg;
	json_t *j;
	char *s;

	if (h->refusal) {
		/* The refusal stands; only its event may be missing. */
		if (status != 200)
			log_info("admin: the refusal's event was not written "
				 "in etcd: %s",
			    msg);
	} else if (status == 202) {
		/* Applied here, pending for etcd: the answer says so. */
		j = json_loadb(h->reply.body, h->reply.len, 0, NULL);
		(void)json_object_set_new(j, "pending_etcd", json_string(msg));
		s = j != NULL ? json_dumps(j, ADMIN_JSON_FLAGS) : NULL;
		json_decref(j);
		if (s != NULL) {
			free(h->reply.body);
			h->reply.body = s;
			h->reply.len = strlen(s);
		}
	} else if (status != 200) {
		log_info("admin: change refused in etcd: %s", msg);
		j = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", msg,
		    "type",
		    status == 409 ? "RefusedException" :
				    "ServiceUnavailableException",
		    "code", status);
		s = j != NULL ? json_dumps(j, ADMIN_JSON_FLAGS) : NULL;
		json_decref(j);
		if (s == NULL)
			fatalx("%s: out of memory", __func__);
		free(h->reply.body);
		h->reply.status = status;
		h->reply.content_type = ADMIN_CT_JSON;
		h->reply.body = s;
		h->reply.len = strlen(s);
	}
	/* The ledger records are in etcd: the reconcile trigger may act. */
	if (h->after != NULL) {
		if (status == 200 && !h->refusal)
			admin_job_alarms(h->f, h->after);
		evbuffer_free(h->after);
	}
	h->later(&h->reply, h->arg);
	free(h);
}

/* GET /cluster: every node, side by side. */
void
admin_cluster_get(struct admin_req *r)
{
	json_t *j;

	if (r->f->cluster == NULL) {
		admin_error(r, 404,
		    "not in cluster mode: floe.conf has no [cluster]");
		return;
	}
	if ((j = cluster_status(r->f->cluster)) == NULL) {
		admin_error(r, 500, "cannot build the answer");
		return;
	}
	admin_reply_json(r, 200, j);
}
