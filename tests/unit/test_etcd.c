/*
 * floe: test_etcd.c -- the etcd client against a real etcd (Debian's
 * etcd-server 3.4, started by tests/etcd/start.sh on loopback ports and
 * stopped by pid): ranges and pages pinned to a revision, compare-and-swap
 * txns, watches (order, progress, compaction, cancellation), leases and
 * cancellation. A local evhttp server stands in for etcd where
 * the real one cannot be made to misbehave (split stream messages, answers
 * that are not etcd's). Ends with the latencies it measured.
 *
 * The environment and helpers are etcd_fx.c's (shared with
 * test_etcd_cluster.c, which has auth, TLS, failover and timeouts; the
 * split keeps each file under 1,000 lines).
 */
#include "tests/unit/etcd_fx.h"

/* Ranges: one key, a prefix, limits, counts, keys only; ids in headers. */
static void
test_range(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 2000);
	struct etcd_op op = { .key = "r/", .prefix = true, .limit = 3 };
	int64_t rev;
	struct got g;

	rev = put_many(e, "r/", 10);
	get(e, "r/03", false, &g);
	assert_int_equal(g.err, ETCD_OK);
	assert_string_equal(g.error, "");
	assert_int_equal(g.nkvs, 1);
	assert_string_equal(g.keys[0], "r/03");
	assert_string_equal(g.vals[0], "v03");
	assert_int_equal(g.mods[0], rev);
	assert_int_equal(g.h.revision, rev);
	/* The cluster and member ids of every answer are kept. */
	assert_true(g.h.cluster_id != 0 && g.h.member_id != 0);
	assert_true(etcd_cluster_id(e) == g.h.cluster_id);
	assert_true(etcd_member_id(e) == g.h.member_id);
	assert_string_equal(g.endpoint, E->endpoints);

	memset(&g, 0, sizeof(g));
	etcd_range(e, &op, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.nkvs, 3);
	assert_true(g.more);
	assert_int_equal(g.count, 10);
	assert_string_equal(g.keys[2], "r/02");

	op.limit = 0;
	op.count_only = true;
	memset(&g, 0, sizeof(g));
	etcd_range(e, &op, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.nkvs, 0);
	assert_int_equal(g.count, 10);

	op.count_only = false;
	op.keys_only = true;
	memset(&g, 0, sizeof(g));
	etcd_range(e, &op, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.nkvs, 10);
	assert_string_equal(g.vals[9], "");

	/* A missing key: no pairs, count 0 (etcd leaves both out). */
	get(e, "r/none", false, &g);
	assert_int_equal(g.err, ETCD_OK);
	assert_int_equal(g.nkvs, 0);
	assert_int_equal(g.count, 0);

	/* A revision etcd has not reached. */
	op.revision = g.h.revision + 1000;
	memset(&g, 0, sizeof(g));
	etcd_range(e, &op, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_EFUTURE);
	assert_non_null(strstr(g.error, "future revision"));

	/* No key: refused, later, through the callback. */
	memset(&op, 0, sizeof(op));
	memset(&g, 0, sizeof(g));
	etcd_range(e, &op, got_cb, &g);
	assert_int_equal(g.calls, 0);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_EREFUSED);
	{
		struct etcd_watch_opts wo = { 0 };
		struct wgot *w = calloc(1, sizeof(*w));

		assert_non_null(w);
		assert_non_null(etcd_watch(e, &wo, wgot_cb, w));
		assert_int_equal(w->msgs, 0);
		assert_true(wait_for(&w->ended, 1, WAIT_MS));
		assert_int_equal(w->err, ETCD_EREFUSED);
		free(w);
	}
	etcd_free(e);
}

/* The txn that the first page of a walk starts: it changes later pages. */
static struct etcd *page_client;
static struct got page_txn;
static void
change_on_first_page(void)
{
	static struct etcd_op ops[] = {
		{ .type = ETCD_OP_DELETE, .key = "p/20" },
		{ .type = ETCD_OP_PUT,
		    .key = "p/10",
		    .value = "changed",
		    .value_len = 7 },
		{ .type = ETCD_OP_PUT,
		    .key = "p/99",
		    .value = "new",
		    .value_len = 3 },
	};
	static struct etcd_txn t = { .success = ops, .nsuccess = 3 };

	memset(&page_txn, 0, sizeof(page_txn));
	etcd_txn(page_client, &t, got_cb, &page_txn);
}

/* etcd_range_all: pages of a prefix, all at one revision. */
static void
test_range_all(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 2000);
	struct etcd_op op = { .key = "p/", .prefix = true, .limit = 7 };
	int64_t rev;
	struct got g;
	int i;

	rev = put_many(e, "p/", 25);
	page_client = e;
	memset(&g, 0, sizeof(g));
	g.on_first = change_on_first_page;
	etcd_range_all(e, &op, got_cb, &g);
	/* The last page has more false: count the callbacks until then. */
	for (i = 0; i < 10 && (g.calls == 0 || g.more); i++) {
		int want = g.calls + 1;

		if (!wait_for(&g.calls, want, WAIT_MS))
			fail_msg("page %d never came", want);
		assert_int_equal(g.err, ETCD_OK);
		/* Every page is read at the first page's revision. */
		assert_int_equal(g.revision, rev);
	}
	assert_int_equal(g.pages, 4);
	assert_false(g.more);
	assert_int_equal(g.nkvs, 25);
	for (i = 0; i < 25; i++) {
		char want[16];

		snprintf(want, sizeof(want), "v%02d", i);
		assert_string_equal(g.vals[i], want);
	}
	/* The change made after page 1 is not in pages 2 to 4. */
	wait_got(&page_txn);
	assert_int_equal(page_txn.err, ETCD_OK);
	assert_true(page_txn.h.revision > rev);
	assert_string_equal(g.keys[20], "p/20");
	assert_string_equal(g.vals[10], "v10");

	/* The latest revision shows it; a pinned older one does not. */
	memset(&g, 0, sizeof(g));
	op.limit = 0;
	etcd_range_all(e, &op, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.pages, 1);
	assert_false(g.more);
	assert_int_equal(g.nkvs, 25);
	assert_string_equal(g.vals[10], "changed");
	assert_string_equal(g.keys[24], "p/99");
	memset(&g, 0, sizeof(g));
	op.revision = rev;
	op.limit = 10;
	etcd_range_all(e, &op, got_cb, &g);
	for (i = 1; i <= 3; i++)
		assert_true(wait_for(&g.calls, i, WAIT_MS));
	assert_false(g.more);
	assert_int_equal(g.nkvs, 25);
	assert_string_equal(g.vals[10], "v10");
	assert_string_equal(g.keys[20], "p/20");
	assert_int_equal(g.revision, rev);
	etcd_free(e);
}

/* Compare-and-swap: of two txns decided on one mod_revision, one wins. */
static void
test_txn_cas(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 2000);
	struct etcd_cmp cmp = { .key = "w/1",
		.target = ETCD_CMP_MOD,
		.result = ETCD_CMP_EQUAL };
	struct etcd_op flip[] = {
		{ .type = ETCD_OP_PUT,
		    .key = "w/1",
		    .value = "lakehouse",
		    .value_len = 9 },
		{ .type = ETCD_OP_PUT,
		    .key = "ev/1",
		    .value = "flip",
		    .value_len = 4 },
	};
	struct etcd_op back[] = {
		{ .type = ETCD_OP_PUT,
		    .key = "w/1",
		    .value = "warehouse",
		    .value_len = 9 },
	};
	struct etcd_op now = { .type = ETCD_OP_RANGE, .key = "w/1" };
	struct etcd_txn a = { &cmp, 1, flip, 2, &now, 1 };
	struct etcd_txn b = { &cmp, 1, back, 1, &now, 1 };
	struct etcd_cmp absent = { .key = "w/new",
		.target = ETCD_CMP_VERSION,
		.result = ETCD_CMP_EQUAL,
		.number = 0 };
	struct etcd_op create = { .type = ETCD_OP_PUT,
		.key = "w/new",
		.value = "x",
		.value_len = 1 };
	struct etcd_txn c = { &absent, 1, &create, 1, NULL, 0 };
	struct etcd_op dup[] = { create, create };
	struct etcd_txn d = { NULL, 0, dup, 2, NULL, 0 };
	struct etcd_op many[129];
	struct etcd_txn m = { NULL, 0, many, 129, NULL, 0 };
	struct got ga, gb, g;
	int64_t rev;
	int i;

	rev = put(e, "w/1", "warehouse", 0);
	cmp.number = rev;
	/* Both sent at once, decided on the same revision. */
	memset(&ga, 0, sizeof(ga));
	memset(&gb, 0, sizeof(gb));
	etcd_txn(e, &a, got_cb, &ga);
	etcd_txn(e, &b, got_cb, &gb);
	wait_got(&ga);
	wait_got(&gb);
	assert_int_equal(ga.err, ETCD_OK);
	assert_int_equal(gb.err, ETCD_OK);
	assert_true(ga.succeeded != gb.succeeded);
	if (ga.succeeded) {
		assert_int_equal(ga.nops, 2);
		assert_int_equal(ga.h.revision, rev + 1);
		/* The loser's failure branch reads what won. */
		assert_int_equal(gb.nops, 1);
		assert_string_equal(gb.op_val[0], "lakehouse");
	} else {
		assert_int_equal(gb.nops, 1);
		assert_string_equal(ga.op_val[0], "warehouse");
	}
	/* The winner's writes are one revision. */
	get(e, "ev/1", false, &g);
	if (ga.succeeded)
		assert_int_equal(g.mods[0], ga.h.revision);

	/* Create only if absent: once yes, then no. */
	memset(&g, 0, sizeof(g));
	etcd_txn(e, &c, got_cb, &g);
	wait_got(&g);
	assert_true(g.succeeded);
	memset(&g, 0, sizeof(g));
	etcd_txn(e, &c, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_OK);
	assert_false(g.succeeded);

	/* What etcd refuses: a key twice, 129 operations. */
	memset(&g, 0, sizeof(g));
	etcd_txn(e, &d, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_EREFUSED);
	assert_non_null(strstr(g.error, "duplicate key"));
	memset(many, 0, sizeof(many));
	for (i = 0; i < 129; i++) {
		many[i].type = ETCD_OP_RANGE;
		many[i].key = "w/1";
	}
	memset(&g, 0, sizeof(g));
	etcd_txn(e, &m, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_EREFUSED);
	assert_non_null(strstr(g.error, "too many operations"));
	etcd_free(e);
}

/* A request over etcd's 1.5 MiB limit is refused, not retried. */
static void
test_too_large(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 5000);
	size_t n = 1600 * 1024;
	char *big = malloc(n);
	struct etcd_op op = { .type = ETCD_OP_PUT,
		.key = "big",
		.value = big,
		.value_len = n };
	struct etcd_txn t = { .success = &op, .nsuccess = 1 };
	struct got g = { 0 };

	assert_non_null(big);
	memset(big, 'x', n);
	etcd_txn(e, &t, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_EREFUSED);
	assert_non_null(strstr(g.error, "request is too large"));
	free(big);
	etcd_free(e);
}

/* A watch from a past revision: puts and deletes in order, progress. */
static void
test_watch(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 2000);
	struct etcd_op del = { .type = ETCD_OP_DELETE, .key = "wa/b" };
	struct etcd_txn t = { .success = &del, .nsuccess = 1 };
	struct wgot *w = calloc(1, sizeof(*w));
	int64_t first, rev;
	struct got g = { 0 };
	int i;

	assert_non_null(w);
	first = put(e, "wa/a", "1", 0);
	put(e, "wa/b", "2", 0);
	put(e, "other", "x", 0);
	watch(e, "wa/", first, w, 0);
	assert_true(wait_for(&w->created, 1, WAIT_MS));
	put(e, "wa/a", "3", 0);
	etcd_txn(e, &t, got_cb, &g);
	wait_got(&g);
	rev = g.h.revision;
	assert_true(wait_for(&w->nev, 4, WAIT_MS));
	/* Events before and after the watch started, in revision order. */
	assert_int_equal(w->nev, 4);
	assert_string_equal(w->ev[0].key, "wa/a");
	assert_int_equal(w->ev[0].type, ETCD_EVENT_PUT);
	assert_string_equal(w->ev[0].val, "1");
	assert_int_equal(w->ev[0].mod, first);
	assert_string_equal(w->ev[1].key, "wa/b");
	assert_string_equal(w->ev[2].val, "3");
	assert_string_equal(w->ev[2].prev, "1");
	assert_int_equal(w->ev[3].type, ETCD_EVENT_DELETE);
	assert_string_equal(w->ev[3].key, "wa/b");
	assert_string_equal(w->ev[3].prev, "2");
	assert_int_equal(w->ev[3].mod, rev);
	for (i = 1; i < w->nev; i++)
		assert_true(w->ev[i].mod > w->ev[i - 1].mod);
	/* Progress notifications (every 300 ms here) carry the revision. */
	assert_true(wait_for(&w->progress, 2, WAIT_MS));
	assert_true(w->progress_rev >= rev);
	assert_int_equal(w->ended, 0);
	etcd_watch_cancel(w->w);
	put(e, "wa/c", "4", 0);
	spin(200);
	assert_int_equal(w->nev, 4);
	free(w);
	etcd_free(e);
}

/* A watch whose start was compacted away ends with ETCD_ECOMPACTED. */
static void
test_watch_compacted(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 2000);
	struct etcd_op op = { .key = "co/", .prefix = true };
	struct wgot *w = calloc(1, sizeof(*w));
	int64_t first, last;
	struct got g = { 0 };

	assert_non_null(w);
	first = put(e, "co/a", "1", 0);
	put(e, "co/a", "2", 0);
	last = put(e, "co/a", "3", 0);
	assert_int_equal(sh("ETCDCTL_API=3 etcdctl --endpoints=%s compact "
			    "%" PRId64 " >/dev/null",
			     E->endpoints, last),
	    0);
	watch(e, "co/", first, w, 0);
	assert_true(wait_for(&w->ended, 1, WAIT_MS));
	assert_int_equal(w->err, ETCD_ECOMPACTED);
	assert_int_equal(w->compact, last);
	assert_non_null(strstr(w->error, "compacted"));
	/* Never an advance: no event, no progress, no revision. */
	assert_int_equal(w->nev, 0);
	assert_int_equal(w->progress, 0);
	assert_int_equal(w->end_header.revision, 0);
	spin(100);
	assert_int_equal(w->ended, 1);

	/* A range pinned to a compacted revision says so too. */
	op.revision = first;
	etcd_range(e, &op, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_ECOMPACTED);
	free(w);
	etcd_free(e);
}

/* Leases: grant, keepalive past the TTL, expiry deleting a key, revoke. */
static void
test_lease(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 2000);
	struct wgot *w = calloc(1, sizeof(*w));
	struct got g;
	int64_t id, id2;
	int i;

	assert_non_null(w);
	memset(&g, 0, sizeof(g));
	etcd_lease_grant(e, 2, 0, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_OK);
	assert_true(g.lease != 0);
	assert_int_equal(g.ttl, 2);
	id = g.lease;
	put(e, "le/node", "a", id);
	get(e, "le/node", false, &g);
	assert_int_equal(g.lease_of[0], id);
	watch(e, "le/", 0, w, 0);
	assert_true(wait_for(&w->created, 1, WAIT_MS));
	/* 3.5 s of keepalives keep a 2 s lease alive. */
	for (i = 0; i < 5; i++) {
		memset(&g, 0, sizeof(g));
		etcd_lease_keepalive(e, id, got_cb, &g);
		wait_got(&g);
		assert_int_equal(g.err, ETCD_OK);
		assert_int_equal(g.ttl, 2);
		assert_int_equal(g.lease, id);
		spin(700);
	}
	get(e, "le/node", false, &g);
	assert_int_equal(g.nkvs, 1);
	assert_int_equal(w->nev, 0);
	/* Without them it expires and its key goes. */
	assert_true(wait_for(&w->nev, 1, 6000));
	assert_int_equal(w->ev[0].type, ETCD_EVENT_DELETE);
	assert_string_equal(w->ev[0].key, "le/node");
	get(e, "le/node", false, &g);
	assert_int_equal(g.nkvs, 0);
	memset(&g, 0, sizeof(g));
	etcd_lease_keepalive(e, id, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_ENOTFOUND);

	/* A lease of our own id, revoked: its key goes at once. */
	memset(&g, 0, sizeof(g));
	etcd_lease_grant(e, 60, 4242, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_OK);
	id2 = g.lease;
	assert_int_equal(id2, 4242);
	put(e, "le/leader", "me", id2);
	memset(&g, 0, sizeof(g));
	etcd_lease_revoke(e, id2, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_OK);
	get(e, "le/leader", false, &g);
	assert_int_equal(g.nkvs, 0);
	memset(&g, 0, sizeof(g));
	etcd_lease_revoke(e, id2, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_ENOTFOUND);
	free(w);
	etcd_free(e);
}

/* Cancelled calls and watches are never called back; so is a freed client. */
static void
test_cancel(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 2000);
	struct etcd *f = client(E->endpoints, 2000);
	struct etcd_op op = { .key = "r/", .prefix = true };
	struct wgot *w = calloc(1, sizeof(*w));
	struct wgot *w2 = calloc(1, sizeof(*w2));
	struct got a = { 0 }, b = { 0 }, c = { 0 };

	assert_non_null(w);
	assert_non_null(w2);
	etcd_cancel(etcd_range(e, &op, got_cb, &a));
	etcd_range(e, &op, got_cb, &b);
	wait_got(&b);
	spin(200);
	assert_int_equal(a.calls, 0);

	/* A watch cancelled from its own callback. */
	w->cancel_after = 1;
	watch(e, "ca/", 0, w, 0);
	assert_true(wait_for(&w->created, 1, WAIT_MS));
	put(e, "ca/1", "1", 0);
	put(e, "ca/2", "2", 0);
	assert_true(wait_for(&w->nev, 1, WAIT_MS));
	spin(300);
	assert_int_equal(w->nev, 1);
	assert_null(w->w);

	/* A client freed from a watch callback, with a call in flight. */
	watch(f, "ca/", 0, w2, 0);
	assert_true(wait_for(&w2->created, 1, WAIT_MS));
	w2->free_in_cb = f;
	memset(&c, 0, sizeof(c));
	etcd_range(f, &op, got_cb, &c);
	put(e, "ca/3", "3", 0);
	assert_true(wait_for(&w2->nev, 1, WAIT_MS));
	assert_null(w2->free_in_cb);
	spin(300);
	assert_int_equal(w2->msgs, 2);

	/* A client freed from a call's callback, with a watch running. */
	f = client(E->endpoints, 2000);
	memset(w2, 0, sizeof(*w2));
	watch(f, "ca/", 0, w2, 0);
	memset(&c, 0, sizeof(c));
	c.free_in_cb = f;
	etcd_range(f, &op, got_cb, &c);
	wait_got(&c);
	put(e, "ca/4", "4", 0);
	spin(300);
	assert_int_equal(w2->nev, 0);
	assert_int_equal(w2->ended, 0);
	free(w);
	free(w2);
	etcd_free(e);
}

/* The stand-in etcd: how it answers, and its request counter. */
static int fake_mode;
static int fake_served;

struct fake_stream;
static void fake_stream_stop(struct fake_stream *);

/* One chunk of the stand-in's watch stream, 20 ms apart. */
struct fake_stream {
	struct evhttp_request *req;
	struct event *ev;
	int step;
	int last; /* pieces to send */
};

/* Stop a stand-in stream: end its reply; its connection may stay. */
static void
fake_stream_stop(struct fake_stream *s)
{
	struct evhttp_connection *c = evhttp_request_get_connection(s->req);

	if (c != NULL)
		evhttp_connection_set_closecb(c, NULL, NULL);
	evhttp_send_reply_end(s->req);
	event_free(s->ev);
	free(s);
}

/*
 * The client closed a stand-in stream's connection mid-answer; libevent
 * keeps a started reply until it is ended.
 */
static void
fake_closed_cb(struct evhttp_connection *c __unused, void *arg)
{
	struct fake_stream *s = arg;

	evhttp_send_reply_end(s->req);
	event_free(s->ev);
	free(s);
}

/* Send the next piece of a watch stream with messages split mid-line. */
static void
fake_stream_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	static const char *pieces[] = {
		"{\"result\":{\"header\":{\"revision\":\"5\"},\"created\":true}}"
		"\n{\"result\":{\"header\":{\"revision\":\"6\"},\"eve",
		"nts\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"6\","
		"\"value\":\"MQ==\"}}]}}\r\n\n",
		"{\"result\":{\"header\":{\"revision\":\"7\"}}}\n"
		"{\"result\":{\"header\":{\"revision\":\"8\"},\"events\":[{\"t",
		"ype\":\"DELETE\",\"kv\":{\"key\":\"YQ==\",\"mod_revision\":"
		"\"8\"}}]}}\n",
		"{\"result\":{\"events\":[{\"kv\":\"garbage\"}]}}\n",
	};
	struct fake_stream *s = arg;
	struct timeval tv = { 0, 20000 };
	struct evbuffer *b;

	if (s->step == s->last) {
		fake_stream_stop(s);
		return;
	}
	b = evbuffer_new();
	evbuffer_add(b, pieces[s->step], strlen(pieces[s->step]));
	evhttp_send_reply_chunk(s->req, b);
	evbuffer_free(b);
	s->step++;
	evtimer_add(s->ev, &tv);
}

/* The stand-in: mode 0 answers 404 as a plain web server would. */
static void
fake_cb(struct evhttp_request *req, void *arg __unused)
{
	struct evbuffer *out = evbuffer_new();
	struct fake_stream *s;
	struct timeval tv = { 0, 20000 };

	fake_served++;
	if (fake_mode == 0) {
		evbuffer_add_printf(out, "404 page not found\n");
		evhttp_send_reply(req, 404, "Not Found", out);
	} else if (fake_mode == 3) {
		evbuffer_add_printf(out, "{\"header\":{\"revision\":\"x\"}}");
		evhttp_send_reply(req, 200, "OK", out);
	} else {
		s = calloc(1, sizeof(*s));
		assert_non_null(s);
		s->req = req;
		s->last = fake_mode == 2 ? 5 : 4;
		s->ev = evtimer_new(E->base, fake_stream_cb, s);
		evhttp_send_reply_start(req, 200, "OK");
		evhttp_connection_set_closecb(evhttp_request_get_connection(
						  req),
		    fake_closed_cb, s);
		evtimer_add(s->ev, &tv);
	}
	evbuffer_free(out);
}

/*
 * Stream framing and answers that are not etcd's: messages split across
 * pieces and CRLF endings are read whole; garbage ends the watch with
 * ETCD_EPROTO; a stream that ends is ETCD_ECLOSED; a 404 and a bad field
 * are ETCD_EPROTO.
 */
static void
test_framing(void **state __unused)
{
	struct evhttp *http = evhttp_new(E->base);
	struct evhttp_bound_socket *bs;
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	char url[64];
	struct etcd *e;
	struct wgot *w = calloc(1, sizeof(*w));
	struct got g;

	assert_non_null(http);
	assert_non_null(w);
	evhttp_set_gencb(http, fake_cb, NULL);
	bs = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	assert_non_null(bs);
	assert_int_equal(getsockname(evhttp_bound_socket_get_fd(bs),
			     (struct sockaddr *)&sin, &slen),
	    0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sin.sin_port));
	e = client(url, 2000);

	fake_mode = 1;
	watch(e, "a", 0, w, 0);
	assert_true(wait_for(&w->ended, 1, WAIT_MS));
	assert_int_equal(w->created, 1);
	assert_int_equal(w->created_rev, 5);
	assert_int_equal(w->nev, 2);
	assert_int_equal(w->ev[0].type, ETCD_EVENT_PUT);
	assert_string_equal(w->ev[0].val, "1");
	assert_int_equal(w->ev[1].type, ETCD_EVENT_DELETE);
	assert_int_equal(w->ev[1].mod, 8);
	assert_int_equal(w->progress, 1);
	assert_int_equal(w->progress_rev, 7);
	assert_int_equal(w->err, ETCD_ECLOSED);
	assert_non_null(strstr(w->error, "stream ended"));

	fake_mode = 2;
	memset(w, 0, sizeof(*w));
	watch(e, "a", 0, w, 0);
	assert_true(wait_for(&w->ended, 1, WAIT_MS));
	assert_int_equal(w->nev, 2);
	assert_int_equal(w->err, ETCD_EPROTO);

	fake_mode = 0;
	get(e, "a", false, &g);
	assert_int_equal(g.err, ETCD_EPROTO);
	assert_non_null(strstr(g.error, "HTTP 404"));
	memset(w, 0, sizeof(*w));
	watch(e, "a", 0, w, 0);
	assert_true(wait_for(&w->ended, 1, WAIT_MS));
	assert_int_equal(w->err, ETCD_EPROTO);

	fake_mode = 3;
	get(e, "a", false, &g);
	assert_int_equal(g.err, ETCD_EPROTO);
	assert_non_null(strstr(g.error, "malformed"));
	etcd_free(e);
	free(w);
	evhttp_free(http);
}

/* Bad configurations are refused with a message. */
static void
test_conf(void **state __unused)
{
	static const struct {
		const char *endpoints;
		const char *err;
	} bad[] = {
		{ "", "no etcd endpoint" },
		{ "127.0.0.1:2379",
		    "etcd endpoint \"127.0.0.1:2379\" is not "
		    "http(s)://HOST:PORT" },
		{ "http://a:1,ftp://b:2",
		    "etcd endpoint \"ftp://b:2\" is not http(s)://HOST:PORT" },
		{ "http://a:1/v3",
		    "etcd endpoint \"http://a:1/v3\" is not "
		    "http(s)://HOST:PORT" },
		{ "http://a:1,,http://b:2",
		    "etcd endpoint \"\" is not http(s)://HOST:PORT" },
	};
	struct etcd_conf c = { 0 };
	char err[256];
	struct etcd *e;
	size_t i;

	for (i = 0; i < nitems(bad); i++) {
		c.endpoints = bad[i].endpoints;
		assert_null(etcd_new(E->base, E->fetch, &c, err, sizeof(err)));
		assert_string_equal(err, bad[i].err);
	}
	/* Spaces and a trailing slash are fine. */
	c.endpoints = " http://a:1/ , https://b:2";
	e = etcd_new(E->base, E->fetch, &c, err, sizeof(err));
	assert_non_null(e);
	assert_string_equal(etcd_endpoint(e), "http://a:1");
	etcd_free(e);
	assert_string_equal(etcd_strerror(ETCD_ECOMPACTED), "compacted");
}

/* Ascending order, for medians. */
static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Latencies against the local etcd: a one-put txn, a 128-put txn, and
 * a put seen by a watch (from the txn's start to the event). Printed;
 * checked only for being complete and in order.
 */
static void
test_measure(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 5000);
	struct wgot *w = calloc(1, sizeof(*w));
	int64_t one[200], big[50], seen[200], t0;
	struct etcd_op op = { .type = ETCD_OP_PUT,
		.key = "me/x",
		.value = "v",
		.value_len = 1 };
	struct etcd_txn t = { .success = &op, .nsuccess = 1 };
	struct got g;
	int i;

	assert_non_null(w);
	for (i = 0; i < 200; i++) {
		memset(&g, 0, sizeof(g));
		t0 = now_us();
		etcd_txn(e, &t, got_cb, &g);
		wait_got(&g);
		one[i] = now_us() - t0;
		assert_int_equal(g.err, ETCD_OK);
	}
	for (i = 0; i < 50; i++) {
		t0 = now_us();
		put_many(e, "mb/", 128);
		big[i] = now_us() - t0;
	}
	watch(e, "mw/", 0, w, 0);
	assert_true(wait_for(&w->created, 1, WAIT_MS));
	for (i = 0; i < 200; i++) {
		char val[16];
		struct etcd_op p = { .type = ETCD_OP_PUT,
			.key = "mw/k",
			.value = val };
		struct etcd_txn pt = { .success = &p, .nsuccess = 1 };

		snprintf(val, sizeof(val), "%d", i);
		p.value_len = strlen(val);
		memset(&g, 0, sizeof(g));
		t0 = now_us();
		etcd_txn(e, &pt, got_cb, &g);
		assert_true(wait_for(&w->nev, i + 1, WAIT_MS));
		seen[i] = w->ev[i].t_us - t0;
		wait_got(&g);
		assert_string_equal(w->ev[i].val, val);
		assert_int_equal(w->ev[i].mod, g.h.revision);
	}
	qsort(one, 200, sizeof(one[0]), cmp_i64);
	qsort(big, 50, sizeof(big[0]), cmp_i64);
	qsort(seen, 200, sizeof(seen[0]), cmp_i64);
	printf("etcd: put txn p50 %.2f ms p99 %.2f ms (200); "
	       "128-op txn p50 %.2f ms p99 %.2f ms (50); "
	       "watch sees a put p50 %.2f ms p99 %.2f ms (200)\n",
	    (double)one[100] / 1000, (double)one[197] / 1000,
	    (double)big[25] / 1000, (double)big[49] / 1000,
	    (double)seen[100] / 1000, (double)seen[197] / 1000);
	free(w);
	etcd_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_range_all),
		cmocka_unit_test(test_txn_cas),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_watch_compacted),
		cmocka_unit_test(test_lease),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_measure),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, setup, teardown);
	curl_global_cleanup();
	return rc;
}
