/*
 * floe: main_workers.c -- workers = N > 1. The master (the process
 * started) holds the listen ports without listening, makes the shared
 * region (workers.h), and starts each worker as this same program run
 * again (fork, then fexecve of its own file, opened once from
 * /proc/self/exe, with --worker SLOT:FD), so a
 * worker's event loop, LMDB environment, pools and sockets are its own
 * from its first instruction: LMDB forbids an environment used across a
 * fork, and libevent's and libcurl's state is the loop's that made it.
 * The master reaps a worker that dies (SIGCHLD on its loop) and starts it
 * again, passes SIGHUP and SIGTERM on, feeds its workers' table reads to
 * the error trigger every WORKERS_COLLECT_MS, and sums their counters into
 * GET /status and /metrics. A worker maps the region, and on its tick
 * copies its counters there.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/util.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"
#include "cache/memo.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/inventory.h"
#include "proxy/main_impl.h"
#include "proxy/server.h"
#include "proxy/stats.h"
#include "proxy/tlsctx.h"
#include "proxy/watch.h"
#include "proxy/workers.h"

#define WORKERS_COLLECT_MS 100 /* the master reads its workers' counts */
#define WORKERS_QUICK_MS 1000 /* a worker dead sooner waits to start */

/* What the master last took of one wave entry of one slot. */
struct floe_wave_seen {
	uint32_t wave1;
	uint64_t reads[ROUTE_NSIDES];
	uint64_t errors[ROUTE_NSIDES];
};

/* The master's side (one per process). */
static struct {
	int fd; /* the region's memfd */
	/*
	 * The program's own file, opened at start (O_PATH: a binary that
	 * may be run but not read runs too): a worker started after an
	 * upgrade replaced it on disk still runs the master's code, and a
	 * tool the master runs under (valgrind) runs the workers too.
	 */
	int exe;
	int hold[2]; /* listen, listen_plain: held, never listened on */
	char *argv[10]; /* a worker's command line, but its slot */
	char slotarg[32];
	struct event *chld, *collect;
	int64_t started_ms[CONF_MAX_WORKERS];
	int64_t due_ms[CONF_MAX_WORKERS]; /* start again then; 0: no */
	struct floe_wave_seen *seen; /* n * WORKERS_WAVES */
	uint64_t restarts;
	/* The workers' figures, summed at the last refresh. */
	uint64_t conns, held;
	struct cache_stats cache;
	struct memo_stats memo;
	char *text; /* the conf text the master parsed last */
	size_t textlen;
	/* What workers that died had counted: still in the sums. */
	struct stats retired;
	struct cache_stats retired_cache;
	struct memo_stats retired_memo;
} fw = { .fd = -1, .exe = -1, .hold = { -1, -1 } };

static int floe_workers_hold(const char *, char *, size_t, char *, size_t);
static void floe_workers_spawn(struct floe *, unsigned);
static void floe_workers_retire(struct floe *, unsigned);
static void floe_cache_add(struct cache_stats *, const struct cache_stats *);
static void floe_memo_add(struct memo_stats *, const struct memo_stats *);
static void floe_workers_chld_cb(evutil_socket_t, short, void *);
static void floe_workers_collect_cb(evutil_socket_t, short, void *);
static json_t *floe_workers_status_cb(void *);
static void floe_workers_metrics_cb(struct evbuffer *, void *);

/* ERRS holds the one error WHAT. */
static void
floe_conf_error(struct conf_errors *errs, const char *what)
{
	errs->msg = xcalloc(1, sizeof(*errs->msg));
	errs->msg[0] = xstrdup(what);
	errs->n = 1;
}

/* Parse TEXT (LEN bytes) as the file PATH, through a memfd of its own. */
static struct conf *
floe_conf_parse(const char *text, size_t len, const char *path,
    struct conf_errors *errs)
{
	struct conf *c;
	char src[64], *msg;
	size_t off = 0;
	ssize_t n;
	int fd = -1;

	memset(errs, 0, sizeof(*errs));
	if ((fd = memfd_create("floe-conf", MFD_CLOEXEC)) == -1)
		goto fail;
	for (; off < len; off += (size_t)n)
		if ((n = write(fd, text + off, len - off)) <= 0)
			goto fail;
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	c = conf_read_source(src, path, 0, errs);
	close(fd);
	return c;
fail:
	msg = xasprintf("%s: a copy to read: %s", path, strerror(errno));
	floe_conf_error(errs, msg);
	free(msg);
	if (fd != -1)
		close(fd);
	return NULL;
}

/* floe.conf as this process must run it (main_impl.h). */
struct conf *
floe_conf_read(struct floe *f, struct conf_errors *errs)
{
	struct workers *w = f->workers;
	char *text, *msg;
	struct conf *c;
	uint64_t a;
	size_t len = 0;
	ssize_t n;
	int fd, tries;

	if (w == NULL)
		return conf_read(f->conf_path, errs);
	text = xmalloc(WORKERS_CONF_MAX + 1);
	if (f->wslot != NULL) {
		/* A worker: the text its master last applied. */
		for (tries = 0; tries < 1000; tries++) {
			a = __atomic_load_n(&w->conf_seq, __ATOMIC_ACQUIRE);
			if (a & 1)
				continue;
			len = w->conf_len < WORKERS_CONF_MAX ? w->conf_len :
							       WORKERS_CONF_MAX;
			memcpy(text, w->conf, len);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&w->conf_seq, __ATOMIC_RELAXED) ==
			    a)
				break;
		}
		c = floe_conf_parse(text, len, f->conf_path, errs);
		free(text);
		return c;
	}
	/* A master: the file, kept as parsed for floe_conf_publish. */
	if ((fd = open(f->conf_path, O_RDONLY | O_CLOEXEC)) == -1) {
		/* conf_read says why, as floe always did. */
		free(text);
		return conf_read(f->conf_path, errs);
	}
	while (len <= WORKERS_CONF_MAX &&
	    (n = read(fd, text + len, WORKERS_CONF_MAX + 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len > WORKERS_CONF_MAX) {
		msg = xasprintf("%s: larger than %d bytes, which is all a "
				"master hands its workers",
		    f->conf_path, WORKERS_CONF_MAX);
		floe_conf_error(errs, msg);
		free(msg);
		free(text);
		return NULL;
	}
	if ((c = floe_conf_parse(text, len, f->conf_path, errs)) == NULL) {
		free(text);
		return NULL;
	}
	free(fw.text);
	fw.text = text;
	fw.textlen = len;
	return c;
}

/* A master: the conf text it now runs is its workers'. */
void
floe_conf_publish(struct floe *f)
{
	struct workers *w = f->workers;

	if (w == NULL || f->wslot != NULL || fw.text == NULL)
		return;
	__atomic_store_n(&w->conf_seq, w->conf_seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(w->conf, fw.text, fw.textlen);
	w->conf_len = (uint32_t)fw.textlen;
	__atomic_store_n(&w->conf_seq, w->conf_seq + 1, __ATOMIC_RELEASE);
}

/* The master, once its conf is read (main_impl.h). */
int
floe_workers_prepare(struct floe *f)
{
	struct conf_errors errs;
	struct conf *c;
	size_t i;

	if ((fw.exe = open("/proc/self/exe", O_PATH | O_CLOEXEC)) == -1) {
		log_warn("%s: workers: /proc/self/exe", __func__);
		return -1;
	}
	if ((f->workers = workers_create(f->conf->workers, &fw.fd)) == NULL) {
		log_warn("%s: workers: shared memory", __func__);
		return -1;
	}
	if ((c = floe_conf_read(f, &errs)) == NULL) {
		for (i = 0; i < errs.n; i++)
			log_warnx("%s: %s", __func__, errs.msg[i]);
		conf_errors_clear(&errs);
		return -1;
	}
	/* The file read again: the workers' count is the first read's. */
	if (c->workers != f->workers->n) {
		log_warnx("%s: %s changed while it was read", __func__,
		    f->conf_path);
		conf_free(c);
		return -1;
	}
	conf_free(f->conf);
	f->conf = c;
	floe_conf_publish(f);
	return 0;
}

/*
 * The master, instead of listening: listen (and listen_plain) bound with
 * SO_REUSEPORT and held, so a port in use fails here and port 0 is chosen
 * once; the TLS ticket keys for the workers. 0, or -1 with ERR.
 */
int
floe_workers_listen(struct floe *f, char *err, size_t errlen)
{
	struct workers *w = f->workers;

	if (f->tls != NULL &&
	    tlsctx_tickets_export(w->tk_chain, &w->tk_hour) == -1) {
		snprintf(err, errlen, "workers: TLS session ticket keys");
		return -1;
	}
	if ((fw.hold[0] = floe_workers_hold(f->conf->listen, w->listen,
		 sizeof(w->listen), err, errlen)) == -1)
		return -1;
	if (f->conf->listen_plain != NULL &&
	    (fw.hold[1] = floe_workers_hold(f->conf->listen_plain,
		 w->listen_plain, sizeof(w->listen_plain), err, errlen)) == -1)
		return -1;
	return 0;
}

/*
 * Bind HOSTPORT with SO_REUSEPORT and never listen: the port is held (and
 * chosen, for port 0) for the workers, which listen on it with reuseport;
 * no connection comes to this socket. Its address, port resolved, goes in
 * BOUND. The descriptor, or -1 with ERR.
 */
static int
floe_workers_hold(const char *hostport, char *bound, size_t boundlen, char *err,
    size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int sslen = sizeof(ss), fd, on = 1, port;
	char host[INET6_ADDRSTRLEN];
	const void *a;

	memset(&ss, 0, sizeof(ss));
	if (evutil_parse_sockaddr_port(hostport, (struct sockaddr *)&ss,
		&sslen) == -1) {
		snprintf(err, errlen, "listen %s: not host:port", hostport);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&ss, sslen) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) == -1) {
		snprintf(err, errlen, "listen %s: %s", hostport,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (ss.ss_family == AF_INET6) {
		a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	} else {
		a = &((struct sockaddr_in *)&ss)->sin_addr;
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	if (inet_ntop(ss.ss_family, a, host, sizeof(host)) == NULL ||
	    (size_t)snprintf(bound, boundlen,
		ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host,
		port) >= boundlen) {
		snprintf(err, errlen, "listen %s: address too long", hostport);
		close(fd);
		return -1;
	}
	return fd;
}

/* The master: start every worker, and watch them. */
void
floe_workers_start(struct floe *f, int verbose)
{
	struct timeval tv = units_ms_tv(WORKERS_COLLECT_MS);
	unsigned i, a = 0;
	int v;

	fw.argv[a++] = xstrdup("floe");
	fw.argv[a++] = xstrdup("-c");
	fw.argv[a++] = xstrdup(f->conf_path);
	for (v = 0; v < verbose && v < 3; v++)
		fw.argv[a++] = xstrdup("-v");
	fw.argv[a++] = xstrdup("--worker");
	fw.argv[a++] = fw.slotarg;
	fw.argv[a] = NULL;
	fw.seen =
	    xcalloc((size_t)f->workers->n * WORKERS_WAVES, sizeof(*fw.seen));
	fw.chld = evsignal_new(f->base, SIGCHLD, floe_workers_chld_cb, f);
	evsignal_add(fw.chld, NULL);
	fw.collect =
	    event_new(f->base, -1, EV_PERSIST, floe_workers_collect_cb, f);
	evtimer_add(fw.collect, &tv);
	f->stats.refresh = floe_workers_refresh;
	f->stats.refresh_arg = f;
	stats_add_status(&f->stats, "workers", floe_workers_status_cb, f);
	stats_add_metrics(&f->stats, floe_workers_metrics_cb, f);
	for (i = 0; i < f->workers->n; i++)
		floe_workers_spawn(f, i);
}

/* Fork and exec worker I. */
static void
floe_workers_spawn(struct floe *f, unsigned i)
{
	struct workers_slot *s = &f->workers->slot[i];
	pid_t pid, master = getpid();

	snprintf(fw.slotarg, sizeof(fw.slotarg), "%u:%d", i, fw.fd);
	if ((pid = fork()) == -1) {
		log_warn("worker %u: fork", i);
		fw.due_ms[i] = units_now_ms() + WORKERS_QUICK_MS;
		return;
	}
	if (pid == 0) {
		/* The child: async-signal-safe calls only, until exec. */
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != master)
			_exit(1);
		(void)fcntl(fw.fd, F_SETFD, 0);
		fexecve(fw.exe, fw.argv, environ);
		_exit(127);
	}
	s->pid = pid;
	s->starts++;
	fw.started_ms[i] = units_now_ms();
	fw.due_ms[i] = 0;
	log_info("worker %u started (pid %ld)", i, (long)pid);
}

/* SIGCHLD: reap the workers that died; start them again unless draining. */
static void
floe_workers_chld_cb(evutil_socket_t sig __unused, short ev __unused, void *arg)
{
	struct floe *f = arg;
	struct workers_slot *s;
	int64_t now = units_now_ms();
	unsigned i;
	int st;

	for (i = 0; i < f->workers->n; i++) {
		s = &f->workers->slot[i];
		if (s->pid == 0 || waitpid(s->pid, &st, WNOHANG) != s->pid)
			continue;
		if (f->draining && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			log_info("worker %u (pid %ld) stopped", i,
			    (long)s->pid);
		else if (f->draining)
			log_warnx("worker %u (pid %ld) ended with status 0x%x "
				  "while draining",
			    i, (long)s->pid, (unsigned)st);
		else if (WIFSIGNALED(st))
			log_warnx("worker %u (pid %ld) killed by signal %d; "
				  "starting it again",
			    i, (long)s->pid, WTERMSIG(st));
		else
			log_warnx("worker %u (pid %ld) exited with status %d; "
				  "starting it again",
			    i, (long)s->pid, WEXITSTATUS(st));
		s->pid = 0;
		floe_workers_retire(f, i);
		if (f->draining)
			continue;
		fw.restarts++;
		/* One that dies at once waits, not to fork in a loop. */
		if (now - fw.started_ms[i] < WORKERS_QUICK_MS)
			fw.due_ms[i] = now + WORKERS_QUICK_MS;
		else
			floe_workers_spawn(f, i);
	}
}

/*
 * Worker I is gone: what it last copied to its slot stays in the sums (as
 * it was: it may have died writing it), and the slot's copy starts again
 * from zero for the next one. Its waves' counts and its sightings stay in
 * the slot; the next worker goes on from them.
 */
static void
floe_workers_retire(struct floe *f, unsigned i)
{
	struct workers_slot *s = &f->workers->slot[i];
	struct stats last;

	memcpy(&last, s->counters, STATS_COUNTERS_SIZE);
	stats_counters_add(&fw.retired, &last);
	floe_cache_add(&fw.retired_cache, &s->cache);
	fw.retired_cache.bytes = fw.retired_cache.entries = 0;
	fw.retired_cache.budget = 0;
	floe_memo_add(&fw.retired_memo, &s->memo);
	fw.retired_memo.bytes = fw.retired_memo.entries = 0;
	fw.retired_memo.budget = 0;
	memset(s->counters, 0, sizeof(s->counters));
	memset(&s->cache, 0, sizeof(s->cache));
	memset(&s->memo, 0, sizeof(s->memo));
	s->conns = s->held = 0;
	s->seq = 0;
}

/* A += B. */
static void
floe_cache_add(struct cache_stats *a, const struct cache_stats *b)
{
	a->hits += b->hits;
	a->misses += b->misses;
	a->revalidations += b->revalidations;
	a->evictions += b->evictions;
	a->expirations += b->expirations;
	a->invalidations += b->invalidations;
	a->bytes += b->bytes;
	a->entries += b->entries;
	a->budget += b->budget;
}

/* A += B. */
static void
floe_memo_add(struct memo_stats *a, const struct memo_stats *b)
{
	a->hits += b->hits;
	a->misses += b->misses;
	a->stores += b->stores;
	a->evictions += b->evictions;
	a->bytes += b->bytes;
	a->entries += b->entries;
	a->budget += b->budget;
}

/*
 * Every WORKERS_COLLECT_MS: the table reads each worker counted since the
 * last look go to the error trigger; workers due are started again.
 */
static void
floe_workers_collect_cb(evutil_socket_t fd __unused, short ev __unused,
    void *arg)
{
	struct floe *f = arg;
	const struct workers_wave *e;
	struct floe_wave_seen *seen;
	unsigned char chain[32];
	uint64_t r, b, hour;
	uint32_t key, state;
	unsigned i, j;
	int side;

	(void)inventory_from_workers(f->inv, f->workers);
	/* The hour's ticket link for workers started from now on. */
	if (f->tls != NULL && tlsctx_tickets_export(chain, &hour) == 0 &&
	    hour != f->workers->tk_hour) {
		memcpy(f->workers->tk_chain, chain, sizeof(chain));
		__atomic_store_n(&f->workers->tk_hour, hour, __ATOMIC_RELEASE);
		OPENSSL_cleanse(chain, sizeof(chain));
	}
	for (i = 0; i < f->workers->n; i++) {
		if (fw.due_ms[i] != 0 && fw.due_ms[i] <= units_now_ms() &&
		    !f->draining)
			floe_workers_spawn(f, i);
		for (j = 0; j < WORKERS_WAVES; j++) {
			e = &f->workers->slot[i].waves[j];
			key = __atomic_load_n(&e->wave1, __ATOMIC_ACQUIRE);
			if (key == 0)
				continue;
			seen = &fw.seen[(size_t)i * WORKERS_WAVES + j];
			if (seen->wave1 != key)
				memset(seen, 0, sizeof(*seen));
			seen->wave1 = key;
			state = __atomic_load_n(&e->state, __ATOMIC_RELAXED);
			for (side = 0; side < ROUTE_NSIDES; side++) {
				r = __atomic_load_n(&e->reads[side],
				    __ATOMIC_RELAXED);
				b = __atomic_load_n(&e->errors[side],
				    __ATOMIC_RELAXED);
				if (r == seen->reads[side] &&
				    b == seen->errors[side])
					continue;
				watch_count_n(f->watch, key - 1, state, side,
				    (uint32_t)(r - seen->reads[side]),
				    (uint32_t)(b - seen->errors[side]));
				seen->reads[side] = r;
				seen->errors[side] = b;
			}
		}
	}
}

/* stats refresh: the master's counters are its workers', summed. */
void
floe_workers_refresh(void *arg)
{
	struct floe *f = arg;
	struct stats one;
	struct cache_stats cs;
	struct memo_stats ms;
	uint64_t conns, held;
	unsigned i;

	stats_counters_zero(&f->stats);
	stats_counters_add(&f->stats, &fw.retired);
	fw.cache = fw.retired_cache;
	fw.memo = fw.retired_memo;
	fw.conns = fw.held = 0;
	for (i = 0; i < f->workers->n; i++) {
		if (!workers_read(f->workers, i, &one, &cs, &ms, &conns, &held))
			continue;
		stats_counters_add(&f->stats, &one);
		floe_cache_add(&fw.cache, &cs);
		floe_memo_add(&fw.memo, &ms);
		fw.conns += conns;
		fw.held += held;
	}
}

/* The data path's figures: this process's, or the workers' summed. */
void
floe_front_figures(struct floe *f, unsigned *conns, size_t *held,
    struct cache_stats *cs)
{
	if (f->workers == NULL || f->wslot != NULL) {
		*conns = server_nconns(f->front);
		*held = server_held_bytes();
		cache_get_stats(f->cache, cs);
		return;
	}
	*conns = (unsigned)fw.conns;
	*held = (size_t)fw.held;
	*cs = fw.cache;
}

/* The memo's figures: this process's, or the workers' summed. */
void
floe_memo_figures(struct floe *f, struct memo_stats *ms)
{
	if (f->workers == NULL || f->wslot != NULL) {
		memo_get_stats(f->memo, ms);
		return;
	}
	*ms = fw.memo;
}

/* GET /status "workers": each one's pid, starts and answers. */
static json_t *
floe_workers_status_cb(void *arg)
{
	struct floe *f = arg;
	struct stats one;
	struct cache_stats cs;
	struct memo_stats ms;
	uint64_t conns = 0, held = 0;
	json_t *a = json_array();
	unsigned i;

	for (i = 0; i < f->workers->n; i++) {
		memset(&one, 0, sizeof(one));
		(void)workers_read(f->workers, i, &one, &cs, &ms, &conns,
		    &held);
		json_array_append_new(a,
		    json_pack("{s:I, s:I, s:I, s:I, s:I}", "slot",
			(json_int_t)i, "pid",
			(json_int_t)f->workers->slot[i].pid, "starts",
			(json_int_t)f->workers->slot[i].starts, "requests",
			(json_int_t)one.requests, "connections",
			(json_int_t)conns));
	}
	return a;
}

static void
floe_workers_metrics_cb(struct evbuffer *b, void *arg)
{
	struct floe *f = arg;
	unsigned i, up = 0;

	for (i = 0; i < f->workers->n; i++)
		up += f->workers->slot[i].pid != 0;
	evbuffer_add_printf(b,
	    "# HELP floe_workers Worker processes running.\n"
	    "# TYPE floe_workers gauge\n"
	    "floe_workers %u\n"
	    "# HELP floe_worker_restarts_total Workers started again after "
	    "they died.\n"
	    "# TYPE floe_worker_restarts_total counter\n"
	    "floe_worker_restarts_total %llu\n",
	    up, (unsigned long long)fw.restarts);
}

/* Send SIG to every worker running. */
void
floe_workers_signal(struct floe *f, int sig)
{
	unsigned i;

	if (f->workers == NULL || f->wslot != NULL)
		return;
	for (i = 0; i < f->workers->n; i++)
		if (f->workers->slot[i].pid != 0)
			(void)kill(f->workers->slot[i].pid, sig);
}

/* Workers still running (0 in a worker or a single process). */
unsigned
floe_workers_alive(const struct floe *f)
{
	unsigned i, n = 0;

	if (f->workers == NULL || f->wslot != NULL)
		return 0;
	for (i = 0; i < f->workers->n; i++)
		n += f->workers->slot[i].pid != 0;
	return n;
}

/* The master stops: workers still running are killed and reaped. */
void
floe_workers_stop(struct floe *f)
{
	struct workers_slot *s;
	unsigned i;
	size_t a;

	if (f->workers == NULL)
		return;
	for (i = 0; i < f->workers->n && f->wslot == NULL; i++) {
		s = &f->workers->slot[i];
		if (s->pid == 0)
			continue;
		log_warnx("worker %u (pid %ld) still running: killed", i,
		    (long)s->pid);
		(void)kill(s->pid, SIGKILL);
		(void)waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	/* What the workers queued last. */
	(void)inventory_from_workers(f->inv, f->workers);
	if (fw.chld != NULL)
		event_free(fw.chld);
	if (fw.collect != NULL)
		event_free(fw.collect);
	for (a = 0; a < nitems(fw.argv) && fw.argv[a] != NULL; a++)
		if (fw.argv[a] != fw.slotarg)
			free(fw.argv[a]);
	free(fw.seen);
	free(fw.text);
	for (i = 0; i < nitems(fw.hold); i++)
		if (fw.hold[i] != -1)
			close(fw.hold[i]);
	if (fw.fd != -1)
		close(fw.fd);
	if (fw.exe != -1)
		close(fw.exe);
	workers_free(f->workers);
	f->workers = NULL;
	f->wslot = NULL;
}

/*
 * A worker, first thing: ARG is "SLOT:FD" from the master. Map the region,
 * take slot SLOT; the service manager hears from the master alone. 0, or
 * -1 (said on stderr).
 */
int
floe_worker_attach(struct floe *f, const char *arg)
{
	static char prefix[32];
	unsigned slot;
	int fd, n = 0;

	if (sscanf(arg, "%u:%d%n", &slot, &fd, &n) != 2 || arg[n] != '\0' ||
	    fd < 0) {
		log_warnx("--worker %s: not SLOT:FD", arg);
		return -1;
	}
	if ((f->workers = workers_attach(fd)) == NULL) {
		log_warn("worker %u: shared memory", slot);
		return -1;
	}
	if (slot >= f->workers->n) {
		log_warnx("worker %u: the master has %u slots", slot,
		    f->workers->n);
		return -1;
	}
	f->wslot = &f->workers->slot[slot];
	/* Any worker resumes the TLS tickets any other issued. */
	tlsctx_tickets_import(f->workers->tk_chain, f->workers->tk_hour);
	(void)unsetenv("NOTIFY_SOCKET");
	snprintf(prefix, sizeof(prefix), "worker %u: ", slot);
	log_set_prefix(prefix);
	return 0;
}

/* A worker's tick: its counters to its slot. */
void
floe_worker_publish(struct floe *f)
{
	struct cache_stats cs;
	struct memo_stats ms;

	cache_get_stats(f->cache, &cs);
	memo_get_stats(f->memo, &ms);
	workers_publish(f->wslot, &f->stats, &cs, &ms, server_nconns(f->front),
	    server_held_bytes());
}
