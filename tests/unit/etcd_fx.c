/*
 * floe: etcd_fx.c -- what test_etcd.c and test_etcd_cluster.c share: the
 * loop, the fetch client, the etcds started by tests/etcd/start.sh, and the
 * helpers that call the client and copy out what its callbacks saw.
 */
#include "tests/unit/etcd_fx.h"

struct env *E;

int64_t
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
bool
wait_for(const int *counter, int want, int ms)
{
	int64_t end = now_us() + (int64_t)ms * 1000;

	while (*counter < want && now_us() < end)
		event_base_loop(E->base, EVLOOP_ONCE);
	return *counter >= want;
}

/* Run the loop for MS. */
void
spin(int ms)
{
	int never = 0;

	(void)wait_for(&never, 1, ms);
}

/* Run a shell command; its exit status. */
int
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
void
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
void
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
void
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
int
member_pid(const char *dir, int k)
{
	char name[16], buf[32];

	snprintf(name, sizeof(name), "%d/pid", k);
	read_line(dir, name, buf, sizeof(buf));
	return atoi(buf);
}

/* The client URL of member K. */
void
member_url(const char *dir, int k, char *buf, size_t len)
{
	char name[16];

	snprintf(name, sizeof(name), "%d/url", k);
	read_line(dir, name, buf, len);
}

/* A client on ENDPOINTS with TIMEOUT_MS; fails the test if refused. */
struct etcd *
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
void
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
void
wait_got(struct got *g)
{
	if (!wait_for(&g->calls, 1, WAIT_MS))
		fail_msg("no answer in %d ms", WAIT_MS);
}

/* A range of KEY (a prefix if PREFIX) into G. */
void
get(struct etcd *e, const char *key, bool prefix, struct got *g)
{
	struct etcd_op op = { .key = key, .prefix = prefix };

	memset(g, 0, sizeof(*g));
	etcd_range(e, &op, got_cb, g);
	wait_got(g);
}

/* A one-put txn; the revision it made. */
int64_t
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
void
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
struct etcd_watch *
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
void
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
int64_t
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

/* The loop, the client and the shared etcd (progress every 300 ms). */
int
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
int
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
