/*
 * floe: test_etcd.c -- the etcd client against a real etcd (Debian's
 * etcd-server 3.4, started by tests/etcd/start.sh on loopback ports and
 * stopped by pid): ranges and pages pinned to a revision, compare-and-swap
 * txns, watches (order, progress, compaction, cancellation), leases, auth
 * and token renewal, TLS, failover across a 3-member cluster, and timeouts
 * against a stopped etcd. A local evhttp server stands in for etcd where
 * the real one cannot be made to misbehave (split stream messages, answers
 * that are not etcd's). Ends with the latencies it measured.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <netinet/in.h>

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "lib/compat.h"
#include "proxy/etcd.h"
#include "proxy/fetch.h"

#define MAXKV 64
#define MAXEV 512
#define WAIT_MS 15000 /* no single wait in these tests may take longer */

/* The loop, the fetch client and the shared single-member etcd. */
struct env {
	struct event_base *base;
	struct fetch *fetch;
	struct event *tick;
	char top[512];
	char dir[256]; /* the shared etcd's directory */
	char endpoints[256];
	int pid; /* the shared etcd's pid */
	/* Every etcd started and not yet stopped, for a failed test. */
	char up[8][256];
};

static struct env *E;

/* What a call's callback saw, copied out. */
struct got {
	int calls;
	enum etcd_err err;
	char error[512];
	char endpoint[128];
	struct etcd_header h;
	size_t nkvs;
	char keys[MAXKV][64];
	char vals[MAXKV][128];
	int64_t mods[MAXKV];
	int64_t lease_of[MAXKV];
	int64_t count;
	bool more;
	int64_t revision;
	bool succeeded;
	size_t nops;
	size_t op_nkvs[8];
	char op_val[8][128];
	int64_t lease;
	int64_t ttl;
	/* etcd_range_all: pages seen and what to do on the first one. */
	int pages;
	void (*on_first)(void);
	struct etcd *free_in_cb; /* etcd_free it from the callback */
};

/* What a watch's callback saw. */
struct wgot {
	int msgs;
	int created;
	int progress;
	int64_t progress_rev;
	int64_t created_rev;
	int nev;
	struct {
		enum etcd_event_type type;
		char key[64];
		char val[64];
		char prev[64];
		int64_t mod;
		int64_t t_us; /* when it arrived */
	} ev[MAXEV];
	int ended;
	enum etcd_err err;
	char error[512];
	int64_t compact;
	struct etcd_header end_header;
	size_t end_nevents;
	int cancel_after; /* etcd_watch_cancel after this many events */
	struct etcd_watch *w;
	struct etcd *free_in_cb;
};

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Keeps EVLOOP_ONCE from blocking for long. */
static void
tick_cb(evutil_socket_t fd __unused, short what __unused, void *arg __unused)
{
}

/* Run the loop until *COUNTER reaches WANT or MS pass. */
static bool
wait_for(const int *counter, int want, int ms)
{
	int64_t end = now_us() + (int64_t)ms * 1000;

	while (*counter < want && now_us() < end)
		event_base_loop(E->base, EVLOOP_ONCE);
	return *counter >= want;
}

/* Run the loop for MS. */
static void
spin(int ms)
{
	int never = 0;

	(void)wait_for(&never, 1, ms);
}

/* Run a shell command; its exit status. */
static int sh(const char *fmt, ...)
    __attribute__((__format__(__printf__, 1, 2)));
static int
sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == -1 ? -1 : WEXITSTATUS(rc);
}

/* The first line of DIR/NAME into BUF. */
static void
read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(buf, (int)len, fp));
	fclose(fp);
	buf[strcspn(buf, "\n")] = '\0';
}

/* Start an etcd in a new directory DIR; its endpoints into EPS. */
static void
etcd_up(char *dir, size_t dirlen, char *eps, size_t epslen, const char *opts,
    const char *args)
{
	size_t i;

	snprintf(dir, dirlen, "/tmp/floe-etcd.XXXXXX");
	assert_non_null(mkdtemp(dir));
	for (i = 0; i < nitems(E->up); i++)
		if (E->up[i][0] == '\0') {
			snprintf(E->up[i], sizeof(E->up[i]), "%s", dir);
			break;
		}
	if (sh("%s/tests/etcd/start.sh -o %d %s %s -- %s >/dev/null", E->top,
		(int)getpid(), opts, dir, args) != 0)
		fail_msg("tests/etcd/start.sh %s %s failed", opts, args);
	read_line(dir, "endpoints", eps, epslen);
}

/* Stop the etcd in DIR and remove DIR. */
static void
etcd_down(const char *dir)
{
	size_t i;

	sh("%s/tests/etcd/stop.sh %s", E->top, dir);
	sh("rm -rf %s", dir);
	for (i = 0; i < nitems(E->up); i++)
		if (strcmp(E->up[i], dir) == 0)
			E->up[i][0] = '\0';
}

/* The pid of member K of the etcd in DIR. */
static int
member_pid(const char *dir, int k)
{
	char name[16], buf[32];

	snprintf(name, sizeof(name), "%d/pid", k);
	read_line(dir, name, buf, sizeof(buf));
	return atoi(buf);
}

/* The client URL of member K. */
static void
member_url(const char *dir, int k, char *buf, size_t len)
{
	char name[16];

	snprintf(name, sizeof(name), "%d/url", k);
	read_line(dir, name, buf, len);
}

/* A client on ENDPOINTS with TIMEOUT_MS; fails the test if refused. */
static struct etcd *
client(const char *endpoints, uint64_t timeout_ms)
{
	struct etcd_conf c = { .endpoints = endpoints,
		.timeout_ms = timeout_ms };
	char err[256];
	struct etcd *e;

	e = etcd_new(E->base, E->fetch, &c, err, sizeof(err));
	if (e == NULL)
		fail_msg("etcd_new: %s", err);
	return e;
}

/* Copy what a call's callback gets into the struct got at ARG. */
static void
got_cb(const struct etcd_result *r, void *arg)
{
	struct got *g = arg;
	size_t i;

	g->calls++;
	g->err = r->err;
	snprintf(g->error, sizeof(g->error), "%s", r->error);
	snprintf(g->endpoint, sizeof(g->endpoint), "%s", r->endpoint);
	g->h = r->header;
	g->count = r->count;
	g->more = r->more;
	g->revision = r->revision;
	g->succeeded = r->succeeded;
	g->lease = r->lease;
	g->ttl = r->ttl;
	g->nops = r->nops;
	for (i = 0; i < r->nops && i < nitems(g->op_nkvs); i++) {
		g->op_nkvs[i] = r->ops[i].nkvs;
		snprintf(g->op_val[i], sizeof(g->op_val[i]), "%s",
		    r->ops[i].nkvs > 0 ? r->ops[i].kvs[0].value : "");
	}
	/* Pages accumulate. */
	if (g->pages == 0 || r->err != ETCD_OK)
		g->nkvs = 0;
	for (i = 0; i < r->nkvs && g->nkvs < MAXKV; i++, g->nkvs++) {
		snprintf(g->keys[g->nkvs], sizeof(g->keys[0]), "%s",
		    r->kvs[i].key);
		snprintf(g->vals[g->nkvs], sizeof(g->vals[0]), "%s",
		    r->kvs[i].value);
		g->mods[g->nkvs] = r->kvs[i].mod_revision;
		g->lease_of[g->nkvs] = r->kvs[i].lease;
	}
	if (r->err == ETCD_OK && g->pages++ == 0 && g->on_first != NULL)
		g->on_first();
	if (g->free_in_cb != NULL) {
		etcd_free(g->free_in_cb);
		g->free_in_cb = NULL;
	}
}

/* Wait for G's callback; fail if it does not come. */
static void
wait_got(struct got *g)
{
	if (!wait_for(&g->calls, 1, WAIT_MS))
		fail_msg("no answer in %d ms", WAIT_MS);
}

/* A range of KEY (a prefix if PREFIX) into G. */
static void
get(struct etcd *e, const char *key, bool prefix, struct got *g)
{
	struct etcd_op op = { .key = key, .prefix = prefix };

	memset(g, 0, sizeof(*g));
	etcd_range(e, &op, got_cb, g);
	wait_got(g);
}

/* A one-put txn; the revision it made. */
static int64_t
put(struct etcd *e, const char *key, const char *value, int64_t lease)
{
	struct etcd_op op = { .type = ETCD_OP_PUT,
		.key = key,
		.value = value,
		.value_len = strlen(value),
		.lease = lease };
	struct etcd_txn t = { .success = &op, .nsuccess = 1 };
	struct got g = { 0 };

	etcd_txn(e, &t, got_cb, &g);
	wait_got(&g);
	if (g.err != ETCD_OK)
		fail_msg("put %s: %s", key, g.error);
	assert_true(g.succeeded);
	return g.h.revision;
}

/* Copy a watch message into the struct wgot at ARG. */
static void
wgot_cb(const struct etcd_watch_msg *m, void *arg)
{
	struct wgot *w = arg;
	size_t i;

	w->msgs++;
	if (m->err != ETCD_OK) {
		w->ended++;
		w->err = m->err;
		snprintf(w->error, sizeof(w->error), "%s", m->error);
		w->compact = m->compact_revision;
		w->end_header = m->header;
		w->end_nevents = m->nevents;
		return;
	}
	if (m->created) {
		w->created++;
		w->created_rev = m->header.revision;
	}
	if (m->progress) {
		w->progress++;
		w->progress_rev = m->header.revision;
	}
	for (i = 0; i < m->nevents && w->nev < MAXEV; i++, w->nev++) {
		w->ev[w->nev].type = m->events[i].type;
		snprintf(w->ev[w->nev].key, sizeof(w->ev[0].key), "%s",
		    m->events[i].kv.key);
		snprintf(w->ev[w->nev].val, sizeof(w->ev[0].val), "%s",
		    m->events[i].kv.value);
		snprintf(w->ev[w->nev].prev, sizeof(w->ev[0].prev), "%s",
		    m->events[i].prev_kv != NULL ? m->events[i].prev_kv->value :
						   "-");
		w->ev[w->nev].mod = m->events[i].kv.mod_revision;
		w->ev[w->nev].t_us = now_us();
	}
	if (w->cancel_after != 0 && w->nev >= w->cancel_after) {
		etcd_watch_cancel(w->w);
		w->w = NULL;
	}
	if (w->free_in_cb != NULL) {
		etcd_free(w->free_in_cb);
		w->free_in_cb = NULL;
	}
}

/* Start a watch of PREFIX from REV into W. */
static struct etcd_watch *
watch(struct etcd *e, const char *prefix, int64_t rev, struct wgot *w,
    uint64_t idle_ms)
{
	struct etcd_watch_opts o = { .key = prefix,
		.prefix = true,
		.start_revision = rev,
		.progress_notify = true,
		.prev_kv = true,
		.idle_timeout_ms = idle_ms };

	w->w = etcd_watch(e, &o, wgot_cb, w);
	assert_non_null(w->w);
	return w->w;
}

/* Write PASSWORD into a new file under DIR; its path into BUF. */
static void
password_file(const char *dir, const char *password, char *buf, size_t len)
{
	FILE *fp;

	snprintf(buf, len, "%s/password.%s", dir, password);
	fp = fopen(buf, "w");
	assert_non_null(fp);
	fprintf(fp, "%s\n", password);
	fclose(fp);
}

/* Keys and values put in one txn: PREFIX00.. with "vNN". Its revision. */
static int64_t
put_many(struct etcd *e, const char *prefix, int n)
{
	struct etcd_op ops[128];
	char keys[128][64], vals[128][16];
	struct etcd_txn t = { .success = ops, .nsuccess = (size_t)n };
	struct got g = { 0 };
	int i;

	assert_true(n <= 128);
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "%s%02d", prefix, i);
		snprintf(vals[i], sizeof(vals[i]), "v%02d", i);
		ops[i].type = ETCD_OP_PUT;
		ops[i].key = keys[i];
		ops[i].value = vals[i];
		ops[i].value_len = strlen(vals[i]);
	}
	etcd_txn(e, &t, got_cb, &g);
	wait_got(&g);
	if (g.err != ETCD_OK)
		fail_msg("txn of %d puts: %s", n, g.error);
	return g.h.revision;
}

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

/* The loop, the client and the shared etcd (progress every 300 ms). */
static int
setup(void **state __unused)
{
	const char *top = getenv("FLOE_TOP");
	struct timeval tv = { 0, 10000 };

	E = calloc(1, sizeof(*E));
	assert_non_null(E);
	snprintf(E->top, sizeof(E->top), "%s", top != NULL ? top : ".");
	E->base = event_base_new();
	assert_non_null(E->base);
	E->fetch = fetch_new(E->base);
	assert_non_null(E->fetch);
	E->tick = event_new(E->base, -1, EV_PERSIST, tick_cb, NULL);
	evtimer_add(E->tick, &tv);
	etcd_up(E->dir, sizeof(E->dir), E->endpoints, sizeof(E->endpoints), "",
	    "--experimental-watch-progress-notify-interval 300ms");
	E->pid = member_pid(E->dir, 1);
	return 0;
}

/* Stop every etcd still up: the shared one, and any a failed test left. */
static int
teardown(void **state __unused)
{
	size_t i;

	for (i = 0; i < nitems(E->up); i++)
		if (E->up[i][0] != '\0')
			etcd_down(E->up[i]);
	fetch_free(E->fetch);
	event_free(E->tick);
	event_base_free(E->base);
	free(E);
	return 0;
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
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_measure),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, setup, teardown);
	curl_global_cleanup();
	return rc;
}
