/*
 * floe: test_etcd_cluster.c -- the etcd client against real etcds (Debian's
 * etcd-server 3.4, started by tests/etcd/start.sh on loopback ports and
 * stopped by pid): auth and token renewal, TLS, failover across a 3-member
 * cluster, and timeouts against a stopped etcd. The environment and
 * helpers are etcd_fx.c's (shared with test_etcd.c).
 */
#include "tests/unit/etcd_fx.h"

/* Auth: no user, a refused password, the token flow and its renewal. */
static void
test_auth(void **state __unused)
{
	char dir[256], eps[256], good[512], bad[512], err[256];
	struct etcd_conf c = { 0 };
	struct etcd *e, *anon, *wrong;
	struct wgot *w = calloc(1, sizeof(*w));
	struct got g;

	assert_non_null(w);
	/* Tokens idle for 2 s expire. */
	etcd_up(dir, sizeof(dir), eps, sizeof(eps), "", "--auth-token-ttl 2");
	assert_int_equal(sh("export ETCDCTL_API=3; etcdctl --endpoints=%s "
			    "user add root --new-user-password=s3cret "
			    ">/dev/null && etcdctl --endpoints=%s auth "
			    "enable >/dev/null 2>&1",
			     eps, eps),
	    0);
	password_file(dir, "s3cret", good, sizeof(good));
	password_file(dir, "wrong", bad, sizeof(bad));

	c.endpoints = eps;
	c.user = "root";
	assert_null(etcd_new(E->base, E->fetch, &c, err, sizeof(err)));
	assert_string_equal(err, "etcd user root has no password file");
	c.password_file = "/nonexistent/pw";
	assert_null(etcd_new(E->base, E->fetch, &c, err, sizeof(err)));
	assert_string_equal(err, "/nonexistent/pw: No such file or directory");

	anon = client(eps, 2000);
	get(anon, "a", false, &g);
	assert_int_equal(g.err, ETCD_EAUTH);
	etcd_free(anon);

	c.password_file = bad;
	wrong = etcd_new(E->base, E->fetch, &c, err, sizeof(err));
	assert_non_null(wrong);
	/* Two calls wait for one authentication; both are refused. */
	{
		struct etcd_op op = { .key = "a" };
		struct got g2 = { 0 };

		memset(&g, 0, sizeof(g));
		etcd_range(wrong, &op, got_cb, &g);
		etcd_range(wrong, &op, got_cb, &g2);
		wait_got(&g);
		wait_got(&g2);
		assert_int_equal(g2.err, ETCD_EAUTH);
	}
	assert_int_equal(g.err, ETCD_EAUTH);
	assert_non_null(strstr(g.error, "refused user root"));
	assert_non_null(strstr(g.error, "authentication failed"));
	/* A watch waiting for that authentication ends the same way. */
	watch(wrong, "au/", 0, w, 0);
	assert_true(wait_for(&w->ended, 1, WAIT_MS));
	assert_int_equal(w->err, ETCD_EAUTH);
	assert_int_equal(w->created, 0);
	assert_non_null(strstr(w->error, "refused user root"));
	etcd_free(wrong);
	memset(w, 0, sizeof(*w));

	/* A client freed while its calls wait for a token calls nobody. */
	c.password_file = good;
	wrong = etcd_new(E->base, E->fetch, &c, err, sizeof(err));
	assert_non_null(wrong);
	{
		struct etcd_op op = { .key = "a" };

		memset(&g, 0, sizeof(g));
		etcd_range(wrong, &op, got_cb, &g);
		watch(wrong, "au/", 0, w, 0);
		etcd_free(wrong);
		spin(500);
		assert_int_equal(g.calls, 0);
		assert_int_equal(w->msgs, 0);
	}

	c.password_file = good;
	e = etcd_new(E->base, E->fetch, &c, err, sizeof(err));
	assert_non_null(e);
	put(e, "au/1", "one", 0);
	get(e, "au/1", false, &g);
	assert_int_equal(g.err, ETCD_OK);
	assert_string_equal(g.vals[0], "one");

	/* The token expires; a watch renews it and goes on. */
	spin(3500);
	watch(e, "au/", 0, w, 0);
	assert_true(wait_for(&w->created, 1, WAIT_MS));
	assert_int_equal(w->ended, 0);
	put(e, "au/2", "two", 0);
	assert_true(wait_for(&w->nev, 1, WAIT_MS));
	assert_string_equal(w->ev[0].val, "two");
	etcd_watch_cancel(w->w);

	/* Expired again; a range renews it too. */
	spin(3500);
	get(e, "au/2", false, &g);
	assert_int_equal(g.err, ETCD_OK);
	assert_string_equal(g.vals[0], "two");
	etcd_free(e);
	free(w);
	etcd_down(dir);
}

/* TLS with client certificates; a missing certificate or wrong CA fails. */
static void
test_tls(void **state __unused)
{
	char dir[256], eps[256], ca[512], crt[512], key[512], err[256];
	struct etcd_conf c = { 0 };
	struct wgot *w = calloc(1, sizeof(*w));
	struct etcd *e;
	struct got g;

	assert_non_null(w);

	etcd_up(dir, sizeof(dir), eps, sizeof(eps), "-t", "");
	snprintf(ca, sizeof(ca), "%s/tls/ca.crt", dir);
	snprintf(crt, sizeof(crt), "%s/tls/client.crt", dir);
	snprintf(key, sizeof(key), "%s/tls/client.key", dir);
	assert_int_equal(strncmp(eps, "https://", 8), 0);

	c.endpoints = eps;
	c.timeout_ms = 10000; /* handshakes under valgrind are slow */
	c.ca_file = ca;
	c.cert_file = crt;
	c.key_file = key;
	e = etcd_new(E->base, E->fetch, &c, err, sizeof(err));
	assert_non_null(e);
	put(e, "tls", "yes", 0);
	get(e, "tls", false, &g);
	assert_int_equal(g.err, ETCD_OK);
	assert_string_equal(g.vals[0], "yes");
	/* A watch streams over TLS too. */
	watch(e, "tls", 0, w, 0);
	assert_true(wait_for(&w->created, 1, WAIT_MS));
	put(e, "tls", "still", 0);
	assert_true(wait_for(&w->nev, 1, WAIT_MS));
	assert_string_equal(w->ev[0].val, "still");
	assert_string_equal(w->ev[0].prev, "yes");
	etcd_free(e);
	free(w);

	/* The server asks for a certificate this client does not have. */
	c.cert_file = c.key_file = NULL;
	e = etcd_new(E->base, E->fetch, &c, err, sizeof(err));
	get(e, "tls", false, &g);
	assert_true(g.err == ETCD_EUNAVAILABLE || g.err == ETCD_ETIMEDOUT);
	assert_int_equal(g.nkvs, 0);
	etcd_free(e);

	/* The server's certificate is not from a CA this client trusts. */
	c.ca_file = crt;
	c.cert_file = crt;
	c.key_file = key;
	e = etcd_new(E->base, E->fetch, &c, err, sizeof(err));
	get(e, "tls", false, &g);
	assert_int_equal(g.err, ETCD_EUNAVAILABLE);
	assert_non_null(strstr(g.error, eps));
	etcd_free(e);
	etcd_down(dir);
}

/*
 * A 3-member cluster: a stopped (SIGSTOP) member times out; reads move on
 * to the next member, a write is reported as timed out, never as done nor
 * sent twice. A killed member (and a dead first endpoint) is skipped for
 * everything.
 */
static void
test_failover(void **state __unused)
{
	char dir[256], eps[256], m[4][128], list[1024];
	struct etcd *e, *r, *wr;
	struct wgot *w = calloc(1, sizeof(*w));
	struct got g;
	int i, pid1;

	assert_non_null(w);
	etcd_up(dir, sizeof(dir), eps, sizeof(eps), "-n 3", "");
	for (i = 1; i <= 3; i++)
		member_url(dir, i, m[i], sizeof(m[i]));
	pid1 = member_pid(dir, 1);

	e = client(eps, 1500);
	put(e, "fo/a", "1", 0);
	assert_string_equal(etcd_endpoint(e), m[1]);
	etcd_free(e);

	/* Member 1 stops answering; wait until 2 and 3 serve without it. */
	assert_int_equal(kill(pid1, SIGSTOP), 0);
	snprintf(list, sizeof(list), "%s,%s", m[2], m[3]);
	e = client(list, 1000);
	for (i = 0; i < 30; i++) {
		get(e, "fo/a", false, &g);
		if (g.err == ETCD_OK)
			break;
		spin(200);
	}
	assert_int_equal(g.err, ETCD_OK);
	etcd_free(e);

	/* A read times out on member 1 and is answered by member 2. */
	r = client(eps, 1500);
	get(r, "fo/a", false, &g);
	assert_int_equal(g.err, ETCD_OK);
	assert_string_equal(g.vals[0], "1");
	assert_string_equal(g.endpoint, m[2]);
	assert_string_equal(etcd_endpoint(r), m[2]);
	/* A watch set up there too. */
	watch(r, "fo/", 0, w, 0);
	assert_true(wait_for(&w->created, 1, WAIT_MS));

	/* A write times out on member 1: not done, not resent elsewhere. */
	wr = client(eps, 1500);
	{
		struct etcd_op op = { .type = ETCD_OP_PUT,
			.key = "fo/b",
			.value = "2",
			.value_len = 1 };
		struct etcd_txn t = { .success = &op, .nsuccess = 1 };

		memset(&g, 0, sizeof(g));
		etcd_txn(wr, &t, got_cb, &g);
		wait_got(&g);
	}
	assert_int_equal(g.err, ETCD_ETIMEDOUT);
	assert_false(g.succeeded);
	assert_non_null(strstr(g.error, m[1]));
	/* The next call starts at member 2. */
	assert_string_equal(etcd_endpoint(wr), m[2]);
	put(wr, "fo/c", "3", 0);
	assert_true(wait_for(&w->nev, 1, WAIT_MS));
	assert_string_equal(w->ev[w->nev - 1].key, "fo/c");
	etcd_free(wr);
	etcd_watch_cancel(w->w);
	etcd_free(r);

	/*
	 * Member 1 is killed. Resumed first, it may have called an election
	 * (etcd 3.4 has no pre-vote by default): wait for a leader again.
	 */
	sh("%s/tests/etcd/stop.sh %s 1", E->top, dir);
	snprintf(list, sizeof(list), "%s,%s", m[2], m[3]);
	e = client(list, 1000);
	for (i = 0; i < 30; i++) {
		get(e, "fo/a", false, &g);
		if (g.err == ETCD_OK)
			break;
		spin(200);
	}
	assert_int_equal(g.err, ETCD_OK);
	etcd_free(e);
	/* A dead port leads the list as well. */
	{
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sin = { .sin_family = AF_INET };
		socklen_t slen = sizeof(sin);

		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_int_equal(bind(fd, (struct sockaddr *)&sin, slen), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&sin,
				     &slen),
		    0);
		close(fd);
		snprintf(list, sizeof(list), "http://127.0.0.1:%d,%s",
		    ntohs(sin.sin_port), eps);
	}
	e = client(list, 1500);
	/* A write: nothing was sent to either, so it moves on. */
	put(e, "fo/d", "4", 0);
	assert_string_equal(etcd_endpoint(e), m[2]);
	etcd_free(e);
	e = client(list, 1500);
	memset(w, 0, sizeof(*w));
	watch(e, "fo/", 0, w, 0);
	assert_true(wait_for(&w->created, 1, WAIT_MS));
	put(e, "fo/e", "5", 0);
	assert_true(wait_for(&w->nev, 1, WAIT_MS));
	assert_string_equal(w->ev[0].key, "fo/e");
	etcd_free(e);

	/* With every endpoint down: unavailable, naming the last one. */
	snprintf(list, sizeof(list), "%s", m[1]);
	e = client(list, 1500);
	get(e, "fo/a", false, &g);
	assert_int_equal(g.err, ETCD_EUNAVAILABLE);
	assert_non_null(strstr(g.error, "refused"));
	etcd_free(e);
	free(w);
	etcd_down(dir);
}

/*
 * etcd stopped (SIGSTOP): every call times out and none reports success;
 * a watch ends with ETCD_ETIMEDOUT, with no revision, at its idle limit.
 */
static void
test_timeout(void **state __unused)
{
	struct etcd *e = client(E->endpoints, 600);
	struct wgot *w = calloc(1, sizeof(*w));
	struct etcd_op op = { .type = ETCD_OP_PUT,
		.key = "to/a",
		.value = "x",
		.value_len = 1 };
	struct etcd_txn t = { .success = &op, .nsuccess = 1 };
	struct got g, k;
	int64_t start, progress;

	assert_non_null(w);
	memset(&k, 0, sizeof(k));
	etcd_lease_grant(e, 30, 0, got_cb, &k);
	wait_got(&k);
	watch(e, "to/", 0, w, 1000);
	assert_true(wait_for(&w->progress, 1, WAIT_MS));
	assert_int_equal(kill(E->pid, SIGSTOP), 0);
	progress = w->progress;
	start = now_us();

	memset(&g, 0, sizeof(g));
	etcd_txn(e, &t, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_ETIMEDOUT);
	assert_false(g.succeeded);
	assert_non_null(strstr(g.error, "timed out"));
	assert_true(now_us() - start < 3000000);

	get(e, "to/a", false, &g);
	assert_int_equal(g.err, ETCD_ETIMEDOUT);
	assert_int_equal(g.nkvs, 0);

	memset(&g, 0, sizeof(g));
	etcd_lease_keepalive(e, k.lease, got_cb, &g);
	wait_got(&g);
	assert_int_equal(g.err, ETCD_ETIMEDOUT);

	assert_true(wait_for(&w->ended, 1, WAIT_MS));
	assert_int_equal(w->err, ETCD_ETIMEDOUT);
	assert_non_null(strstr(w->error, "no data for 1000 ms"));
	/* Nothing that looks like progress came while etcd was stopped. */
	assert_int_equal(w->progress, progress);
	assert_int_equal(w->end_header.revision, 0);
	assert_int_equal(w->end_nevents, 0);

	assert_int_equal(kill(E->pid, SIGCONT), 0);
	get(e, "r/00", false, &g);
	assert_int_equal(g.err, ETCD_OK);
	free(w);
	etcd_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_failover),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, setup, teardown);
	curl_global_cleanup();
	return rc;
}
