/*
 * floe: test_admin_sock.c -- the admin socket's glue, between doubles of
 * the server (connections that record their answer), the worker (a count
 * of imports pending) and admin_handle (which records the order it serves
 * in): who may use the socket, reads answered at once, changes held
 * behind an import and served in order once it is done, a peer that goes
 * away, and the admin parts of GET /status.
 */
#include <sys/types.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "proxy/admin.h"
#include "proxy/admin_sock.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/server.h"
#include "proxy/stats.h"
#include "proxy/worker.h"

/* A client connection as the double of server.c keeps it. */
struct server_conn {
	uid_t uid;
	int replies;
	unsigned status;
	char body[512];
	bool close_after;
	server_abort_cb abort_cb;
	void *abort_arg;
};

/* What the doubles saw. */
static struct {
	unsigned pending; /* worker_pending */
	char served[8][64]; /* admin_handle's targets, in order */
	int nserved;
	admin_later_cb later; /* the import's, while it runs */
	void *later_arg;
} seen;

uid_t
server_conn_uid(const struct server_conn *c)
{
	return c->uid;
}

void
server_reply_mem(struct server_conn *c, unsigned status,
    const char *ctype __unused, const char *body, size_t len)
{
	c->replies++;
	c->status = status;
	assert_true(len < sizeof(c->body));
	memcpy(c->body, body, len);
	c->body[len] = '\0';
}

void
server_reply(struct server_conn *c, unsigned status, const char *hdrs __unused,
    size_t hlen __unused, struct evbuffer *body, int64_t len)
{
	assert_true(body != NULL && (size_t)len < sizeof(c->body));
	server_reply_mem(c, status, NULL,
	    (const char *)evbuffer_pullup(body, -1), (size_t)len);
}

void
server_conn_close_after(struct server_conn *c)
{
	c->close_after = true;
}

void
server_conn_on_abort(struct server_conn *c, server_abort_cb cb, void *arg)
{
	c->abort_cb = cb;
	c->abort_arg = arg;
}

unsigned
worker_pending(const struct worker *w __unused)
{
	return seen.pending;
}

void
worker_on_idle(struct worker *w __unused, worker_idle_fn fn __unused,
    void *arg __unused)
{
}

uint64_t
worker_fork_us_max(const struct worker *w __unused, uint64_t *forks,
    uint64_t *avg_us)
{
	*forks = *avg_us = 0;
	return 0;
}

uint64_t
worker_helper_starts(const struct worker *w __unused)
{
	return 0;
}

/* Serve TARGET: an import runs on the worker and answers later. */
int
admin_handle(struct floe *f __unused, const char *method __unused,
    const char *target, size_t target_len __unused,
    struct evbuffer *body __unused, uid_t peer_uid __unused,
    struct admin_reply *rep, admin_later_cb later, void *arg)
{
	assert_true(seen.nserved < (int)nitems(seen.served));
	snprintf(seen.served[seen.nserved++], sizeof(seen.served[0]), "%s",
	    target);
	if (strcmp(target, "/routes/import") == 0) {
		seen.pending++;
		seen.later = later;
		seen.later_arg = arg;
		return 1;
	}
	memset(rep, 0, sizeof(*rep));
	rep->status = 200;
	rep->body = strdup("{}");
	rep->len = 2;
	return 0;
}

json_t *
admin_store_status_cb(void *arg __unused)
{
	return json_string("store");
}

json_t *
admin_waves_status_cb(void *arg __unused)
{
	return json_string("waves");
}

void
admin_readers_metrics_cb(struct evbuffer *out __unused, void *arg __unused)
{
}

void
admin_readers_metrics_free(void)
{
}

void
admin_elig_keep(const struct floe *f __unused, uint64_t seq __unused,
    const void *buf __unused, size_t len __unused)
{
}

/* The import is done: the worker's count drops, then its answer comes. */
static void
import_done(void)
{
	struct admin_reply rep = { .status = 201,
		.body = strdup("{\"imported\":1}"),
		.len = 14 };

	assert_non_null(seen.later);
	seen.pending--;
	seen.later(&rep, seen.later_arg);
}

/* A floe with a conf, as admin_sock reads it. */
struct fixture {
	struct floe f;
	struct conf conf;
	struct admin_sock *as;
};

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	memset(&seen, 0, sizeof(seen));
	fx->f.conf = &fx->conf;
	fx->f.worker = (void *)fx; /* only worker_pending's double sees it */
	fx->as = admin_sock_new(&fx->f);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;

	admin_sock_free(fx->as);
	stats_clear(&fx->f.stats);
	free(fx);
	return 0;
}

/* Send METHOD TARGET on C. */
static void
send_req(struct fixture *fx, struct server_conn *c, struct h1_msg *m,
    enum h1_method method, const char *target)
{
	memset(m, 0, sizeof(*m));
	m->method = method;
	m->method_name = method == H1_GET ? "GET" : "POST";
	m->target = target;
	m->target_len = strlen(target);
	admin_sock_serve(c, m, fx->as);
}

/* The admin part of GET /status: {"imports":N,"changes_waiting":N}. */
static void
expect_queue(struct fixture *fx, json_int_t imports, json_int_t waiting)
{
	json_t *j = stats_status_json(&fx->f.stats), *a;

	a = json_object_get(j, "admin");
	assert_int_equal(json_integer_value(json_object_get(a, "imports")),
	    imports);
	assert_int_equal(json_integer_value(
			     json_object_get(a, "changes_waiting")),
	    waiting);
	json_decref(j);
}

/* admin_uids, or else floe's own uid and root; never an unknown peer. */
static void
test_uids(void **state)
{
	struct fixture *fx = *state;
	const uid_t me = getuid(), other = getuid() + 4242;
	const struct {
		int nuids;
		uid_t uids[2];
		uid_t peer;
		bool ok;
	} cases[] = {
		{ 0, { 0, 0 }, 0, true }, { 0, { 0, 0 }, me, true },
		{ 0, { 0, 0 }, other, false },
		{ 0, { 0, 0 }, (uid_t)-1, false },
		{ 2, { 7, other }, other, true }, { 2, { 7, other }, 7, true },
		{ 2, { 7, other }, me == 0 ? 1 : me, false },
		{ 1, { 7, 0 }, 0, false }, /* root is not in the list */
	};
	struct server_conn c;
	struct h1_msg m;
	char want[128];
	size_t i;
	int served;

	for (i = 0; i < nitems(cases); i++) {
		fx->conf.nadmin_uids = cases[i].nuids;
		memcpy(fx->conf.admin_uids, cases[i].uids,
		    sizeof(cases[i].uids));
		memset(&c, 0, sizeof(c));
		c.uid = cases[i].peer;
		served = seen.nserved;
		send_req(fx, &c, &m, H1_GET, "/status");
		assert_int_equal(c.replies, 1);
		if (cases[i].ok) {
			assert_int_equal(c.status, 200);
			assert_int_equal(seen.nserved, served + 1);
			assert_false(c.close_after);
			continue;
		}
		/* Refused: a 403 naming the uid, a close, nothing served. */
		assert_int_equal(c.status, 403);
		assert_true(c.close_after);
		assert_int_equal(seen.nserved, served);
		snprintf(want, sizeof(want), "uid %ld may not use",
		    cases[i].peer == (uid_t)-1 ? -1L : (long)cases[i].peer);
		if (strstr(c.body, want) == NULL)
			fail_msg("case %zu: %s lacks \"%s\"", i, c.body, want);
		assert_non_null(strstr(c.body, "\"code\":403"));
	}
}

/*
 * While an import runs, reads are answered at once and changes wait, in
 * order; one whose peer went away is dropped. When the import is done its
 * peer gets its answer, then the changes are served.
 */
static void
test_held(void **state)
{
	struct fixture *fx = *state;
	struct server_conn imp, rd, ch1, ch2, ch3;
	struct h1_msg m_imp, m_rd, m1, m2, m3;

	memset(&imp, 0, sizeof(imp));
	memset(&rd, 0, sizeof(rd));
	memset(&ch1, 0, sizeof(ch1));
	memset(&ch2, 0, sizeof(ch2));
	memset(&ch3, 0, sizeof(ch3));
	send_req(fx, &imp, &m_imp, H1_POST, "/routes/import");
	assert_int_equal(imp.replies, 0);
	assert_non_null(imp.abort_cb); /* the import's peer may go */
	expect_queue(fx, 1, 0);

	send_req(fx, &ch1, &m1, H1_POST, "/routes");
	send_req(fx, &ch2, &m2, H1_POST, "/waves/1/flip");
	send_req(fx, &rd, &m_rd, H1_GET, "/waves");
	send_req(fx, &ch3, &m3, H1_POST, "/waves/2/flip");
	assert_int_equal(rd.replies, 1); /* a read does not wait */
	assert_int_equal(ch1.replies + ch2.replies + ch3.replies, 0);
	expect_queue(fx, 1, 3);

	/* The second change's peer goes away: it is forgotten. */
	ch2.abort_cb(ch2.abort_arg);
	expect_queue(fx, 1, 2);

	import_done();
	assert_int_equal(imp.replies, 1);
	assert_int_equal(imp.status, 201);
	assert_string_equal(imp.body, "{\"imported\":1}");
	assert_int_equal(ch1.replies, 1);
	assert_int_equal(ch2.replies, 0);
	assert_int_equal(ch3.replies, 1);
	/* Served: no abort callback left on them. */
	assert_null(ch1.abort_cb);
	assert_null(ch3.abort_cb);
	expect_queue(fx, 0, 0);
	assert_int_equal(seen.nserved, 4);
	assert_string_equal(seen.served[0], "/routes/import");
	assert_string_equal(seen.served[1], "/waves");
	assert_string_equal(seen.served[2], "/routes");
	assert_string_equal(seen.served[3], "/waves/2/flip");
}

/*
 * A change held behind an import that is itself an import runs when its
 * turn comes, and the changes behind it wait for it in turn. An import
 * whose peer went away still runs; its answer goes nowhere.
 */
static void
test_chain(void **state)
{
	struct fixture *fx = *state;
	struct server_conn a, b, c;
	struct h1_msg ma, mb, mc;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	send_req(fx, &a, &ma, H1_POST, "/routes/import");
	send_req(fx, &b, &mb, H1_POST, "/routes/import");
	send_req(fx, &c, &mc, H1_POST, "/routes");
	expect_queue(fx, 1, 2);
	a.abort_cb(a.abort_arg); /* a's peer goes */
	import_done(); /* a: answered to nobody; b starts */
	assert_int_equal(a.replies, 0);
	assert_int_equal(b.replies, 0);
	assert_int_equal(c.replies, 0);
	expect_queue(fx, 1, 1);
	import_done(); /* b: answered; c is served */
	assert_int_equal(b.replies, 1);
	assert_int_equal(c.replies, 1);
	expect_queue(fx, 0, 0);
	assert_int_equal(seen.nserved, 3);
	assert_string_equal(seen.served[2], "/routes");
}

/* A request the server cannot frame: an error object with its status. */
static void
test_error(void **state)
{
	struct server_conn c;
	json_t *j;

	(void)state;
	memset(&c, 0, sizeof(c));
	admin_sock_error(&c, 413, "body \"too\" large", NULL);
	assert_int_equal(c.status, 413);
	j = json_loads(c.body, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(
				json_object_get(json_object_get(j, "error"),
				    "message")),
	    "body \"too\" large");
	assert_string_equal(json_string_value(
				json_object_get(json_object_get(j, "error"),
				    "type")),
	    "BadRequestException");
	assert_int_equal(json_integer_value(
			     json_object_get(json_object_get(j, "error"),
				 "code")),
	    413);
	json_decref(j);
}

/* The admin parts of /status, in order; the queue's goes with the socket. */
static void
test_status_parts(void **state)
{
	struct fixture *fx = *state;
	json_t *j;
	char *s;

	j = stats_status_json(&fx->f.stats);
	s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(s,
	    "{\"admin\":{\"imports\":0,\"changes_waiting\":0,\"forks\":0,\"fork_avg_us\":0,\"fork_max_us\":0,\"helper_starts\":0},"
	    "\"store\":\"store\",\"waves\":\"waves\"}");
	free(s);
	json_decref(j);
	admin_sock_free(fx->as);
	fx->as = NULL;
	j = stats_status_json(&fx->f.stats);
	assert_null(json_object_get(j, "admin"));
	assert_non_null(json_object_get(j, "store"));
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_uids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_parts, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
