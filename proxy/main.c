/*
 * floe: main.c -- the floe process, as relayd.c and nginx.c hold theirs:
 * the command line (run in the foreground, or check a configuration with
 * -t and exit, like nginx -t), start-up and shutdown of every part in
 * order, signals (SIGTERM drains, SIGHUP reloads: main_reload.c), the
 * service manager told (sd_notify), the 1 s tick, and the job helper's
 * entry. Its parts of GET /status and GET /metrics are main_stats.c's,
 * the clients' and catalogs' authentication main_auth.c's.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/sdnotify.h"
#include "lib/units.h"
#include "lib/version.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"
#include "cache/memo.h"
#include "proxy/admin.h"
#include "proxy/admin_sock.h"
#include "proxy/catalog.h"
#include "proxy/cluster.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/discover.h"
#include "proxy/fetch.h"
#include "proxy/floe.h"
#include "proxy/inventory.h"
#include "proxy/obs.h"
#include "proxy/main_impl.h"
#include "proxy/request.h"
#include "proxy/server.h"
#include "proxy/sockio.h"
#include "proxy/stats.h"
#include "proxy/tlsctx.h"
#include "proxy/upstream.h"
#include "proxy/watch.h"
#include "proxy/worker.h"
#include "proxy/workers.h"
#include "policy/auth.h"
#include "policy/rlog.h"
#include "routing/store.h"

#define FLOE_IMPORT_DEADLINE_MS (10 * 60 * 1000) /* an import's longest run */
#define FLOE_HEAP_KEEP (16 << 20) /* freed memory glibc keeps */
#define FLOE_TRIM_DROP (32 << 20) /* a fall of held answers worth a trim */
#ifndef FLOE_CONF_DEFAULT /* without -c; a build may set another */
#define FLOE_CONF_DEFAULT "conf/floe.conf"
#endif

static struct evdns_base *floe_dns;
static int floe_ticks;
static int floe_verbose;
static const int floe_sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };

static void usage(FILE *);
static int floe_check(const char *);
static int floe_mkdirs(const char *, bool);
static void floe_open_store(struct floe *);
static void floe_raise_nofile(void);
static int floe_run(const char *, int, const char *);
static int floe_start_conf(struct floe *);
static int floe_start_parts(struct floe *);
static int floe_start_listeners(struct floe *);
static const char *floe_listen_addr(const struct floe *);
static int floe_start_master(struct floe *);
static int floe_start_admin(struct floe *);
static int floe_start_events(struct floe *);
static void floe_log_start(struct floe *);
static void floe_stop(struct floe *);
static void floe_signal_cb(evutil_socket_t, short, void *);
static void floe_tick_cb(evutil_socket_t, short, void *);
static void floe_trim(void);
static int floe_check_files(const struct conf *, char *, size_t);
static void floe_rlog_flush(struct floe *);

/* The command line, on FP. */
static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: floe [-htv] [-c FILE] [--help] [--version]\n"
	    "  -c FILE    configuration (default %s)\n"
	    "  -t         check the configuration, report every error, exit\n"
	    "  -v         debug logging\n"
	    "  -h, --help this text\n"
	    "  --version  print floe's version and exit\n"
	    "See floe(8) and floe.conf(5).\n",
	    FLOE_CONF_DEFAULT);
}

/*
 * floe -t: read PATH, say every error it has (one a line, PATH:LINE: ...)
 * and how many; for a file without any, load what floe loads before it
 * serves. Exit status: 0 for a good file, 1 otherwise.
 */
static int
floe_check(const char *path)
{
	struct conf_errors errs;
	struct conf *c;
	char err[512];
	size_t i;

	if ((c = conf_read(path, &errs)) != NULL) {
		/* Then the files floe loads before it serves. */
		if (floe_check_files(c, err, sizeof(err)) == -1) {
			fprintf(stderr, "floe: %s\n", err);
			conf_free(c);
			return 1;
		}
		floe_credential_note(c, err, sizeof(err));
		if (err[0] != '\0')
			fprintf(stderr, "floe: note: %s\n", err);
		conf_free(c);
		fprintf(stderr, "floe: configuration %s ok\n", path);
		return 0;
	}
	for (i = 0; i < errs.n; i++)
		fprintf(stderr, "floe: %s\n", errs.msg[i]);
	if (errs.n > 1)
		fprintf(stderr, "floe: %zu errors in %s\n", errs.n, path);
	conf_errors_clear(&errs);
	return 1;
}

/* mkdir -p for the directory part of PATH. */
static int
floe_mkdirs(const char *path, bool is_dir)
{
	char buf[4096], *p;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
		return -1;
	if (!is_dir) {
		if ((p = strrchr(buf, '/')) == NULL)
			return 0;
		*p = '\0';
	}
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (buf[0] != '\0' && mkdir(buf, 0755) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/* Try to open the store; floe serves (warehouse only) until it opens. */
static void
floe_open_store(struct floe *f)
{
	char err[512];
	static bool warned;

	if (f->store != NULL)
		return;
	if (floe_mkdirs(f->conf->state_dir, true) == -1 ||
	    (f->store = store_open(f->conf->state_dir, err, sizeof(err))) ==
		NULL) {
		if (!warned)
			log_warnx("%s: flag store %s cannot be opened (%s): "
				  "every table is served by the warehouse "
				  "until it opens",
			    __func__, f->conf->state_dir,
			    f->store == NULL ? err : strerror(errno));
		warned = true;
		return;
	}
	if (warned)
		log_info("flag store %s opened", f->conf->state_dir);
	warned = false;
	rlog_attach(f->rlog, f->store);
}

/*
 * Raise the open-file limit as far as allowed and say what it is: every
 * client connection is a descriptor, and 10,000 of them must fit.
 */
static void
floe_raise_nofile(void)
{
	struct rlimit rl;
	rlim_t was;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
		log_warn("%s: getrlimit", __func__);
		return;
	}
	was = rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
			log_warn("%s: setrlimit", __func__);
			rl.rlim_cur = was;
		}
	}
	if (rl.rlim_cur != was)
		log_info("open files limit raised from %llu to %llu (the "
			 "hard limit)",
		    (unsigned long long)was, (unsigned long long)rl.rlim_cur);
	else
		log_info("open files limit %llu%s", (unsigned long long)was,
		    rl.rlim_cur == rl.rlim_max ? " (the hard limit)" : "");
}

/* Open (or reopen) the access log. */
void
floe_open_access_log(struct floe *f)
{
	int fd = -1;

	if (f->conf->access_log != NULL) {
		if (strcmp(f->conf->access_log, "-") == 0)
			fd = dup(STDERR_FILENO);
		else if (floe_mkdirs(f->conf->access_log, false) == -1 ||
		    (fd = open(f->conf->access_log,
			 O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640)) ==
			-1)
			log_warn("%s: access log %s", __func__,
			    f->conf->access_log);
	}
	if (f->access_fd != -1) {
		request_flush_log(f);
		close(f->access_fd);
	}
	f->access_fd = fd;
}

/*
 * floe -t: load what floe_run loads before it serves (the [auth] token or
 * key file, the listener's certificate, each catalog's TLS settings), so
 * that a configuration -t passes does not stop floe. 0, or -1 with ERR.
 */
static int
floe_check_files(const struct conf *c, char *err, size_t errlen)
{
	struct event_base *base;
	struct auth *a;
	struct tlsctx *t;
	struct upstream *u;
	int i, rc = 0;

	if (floe_load_auth(c, &a, err, errlen) == -1)
		return -1;
	auth_free(a);
	if (c->tls_cert != NULL) {
		if ((t = tlsctx_new(c->tls_cert, c->tls_key, err, errlen)) ==
		    NULL)
			return -1;
		tlsctx_free(t);
	}
	if ((base = event_base_new()) == NULL) {
		snprintf(err, errlen, "event_base_new failed");
		return -1;
	}
	/* No resolver: each pool is built, never used. */
	for (i = 0; i < ROUTE_NSIDES && rc == 0; i++) {
		if ((u = upstream_new(base, NULL, &c->target[i],
			 route_side_name(i), err, errlen)) == NULL)
			rc = -1;
		upstream_free(u);
	}
	event_base_free(base);
	return rc;
}

/*
 * Run floe with the config at CONF_PATH until it is stopped; as worker
 * WORKER ("SLOT:FD", main_workers.c) of a master unless it is NULL. Exit
 * status.
 */
static int
floe_run(const char *conf_path, int verbose, const char *worker)
{
	struct floe *f;

	log_init(verbose);
	floe_verbose = verbose;
	f = xcalloc(1, sizeof(*f));
	f->access_fd = -1;
	if (worker != NULL && floe_worker_attach(f, worker) == -1)
		return 1;
	f->conf_path = xstrdup(conf_path);
	f->reload = floe_reload;
	if (floe_start_conf(f) == -1 || floe_start_parts(f) == -1 ||
	    floe_start_listeners(f) == -1 || floe_start_events(f) == -1)
		return 1;
	floe_log_start(f);

	event_base_dispatch(f->base);

	log_info("floe stopped");
	floe_stop(f);
	return 0;
}

/* Read the conf, its [auth] files and the TLS certificate. 0, or -1. */
static int
floe_start_conf(struct floe *f)
{
	struct conf_errors errs;
	char err[512];
	size_t i;

	if ((f->conf = floe_conf_read(f, &errs)) == NULL) {
		for (i = 0; i < errs.n; i++)
			log_warnx("%s: %s", __func__, errs.msg[i]);
		conf_errors_clear(&errs);
		return -1;
	}
	/* A master: its workers will read the text it runs, not the file. */
	if (f->conf->workers > 1 && !FLOE_WORKER(f) &&
	    floe_workers_prepare(f) == -1)
		return -1;
	f->conf_gen = 1;
	f->conf_loaded_ms = units_now_ms();
	if (floe_load_auth(f->conf, &f->auth, err, sizeof(err)) == -1) {
		log_warnx("%s: %s", __func__, err);
		return -1;
	}
	if (f->conf->tls_cert != NULL &&
	    (f->tls = tlsctx_new(f->conf->tls_cert, f->conf->tls_key, err,
		 sizeof(err))) == NULL) {
		log_warnx("%s: %s", __func__, err);
		return -1;
	}
	return 0;
}

/*
 * The loop and what runs on it before any listener: the store, the
 * worker, the cache, each catalog's pool and credential, the control
 * plane, the cluster, the stats registry. 0, or -1 (logged).
 */
static int
floe_start_parts(struct floe *f)
{
	char err[512], node[64];
	struct cred *c;
	int i;

	signal(SIGPIPE, SIG_IGN);
	floe_raise_nofile();
	f->started_ms = units_now_ms();
	if ((f->base = event_base_new()) == NULL)
		fatalx("event_base_new failed");
	if ((floe_dns = evdns_base_new(f->base,
		 EVDNS_BASE_INITIALIZE_NAMESERVERS)) == NULL)
		floe_dns = evdns_base_new(f->base, 0);
	snprintf(node, sizeof(node), "floe-%08x",
	    (unsigned)(getpid() ^ (unsigned)f->started_ms));
	request_init(node);
	floe_open_store(f);
	/* A worker serves the data path only: no imports, no cluster. */
	if (!FLOE_WORKER(f) &&
	    (f->worker = worker_new(f->base, FLOE_IMPORT_DEADLINE_MS, err,
		 sizeof(err))) == NULL) {
		log_warnx("%s: %s", __func__, err);
		return -1;
	}
	f->cache = cache_new(f->conf->cache_size, f->conf->cache_ttl_ms);
	f->memo = memo_new(f->conf->check_memo_size);
	for (i = 0; i < ROUTE_NSIDES; i++) {
		f->cat[i] = catalog_new();
		f->up[i] = upstream_new(f->base, floe_dns, &f->conf->target[i],
		    route_side_name(i), err, sizeof(err));
		if (f->up[i] == NULL) {
			log_warnx("%s: %s catalog: %s", __func__,
			    route_side_name(i), err);
			return -1;
		}
	}
	if ((f->fetch = fetch_new(f->base)) == NULL)
		fatalx("control-plane client: cannot start");
	if (f->conf->cluster.etcd != NULL && f->store != NULL &&
	    !FLOE_WORKER(f) &&
	    (f->cluster = cluster_new(f, err, sizeof(err))) == NULL) {
		log_warnx("%s: [cluster]: %s", __func__, err);
		return -1;
	}
	/* Tokens are asked for first: the catalogs' configs need them. */
	for (i = 0; i < ROUTE_NSIDES; i++) {
		if ((c = floe_new_cred(f, &f->conf->target[i], i)) == NULL)
			return -1;
		floe_set_cred(f, i, c);
	}
	floe_stats_add(f);
	f->inv = inventory_new(f);
	return 0;
}

/*
 * The engines' listeners (plain, then TLS or plain), the admin socket,
 * the access log and the rollback log. 0, or -1 (logged).
 */
static int
floe_start_listeners(struct floe *f)
{
	struct server_opts so;
	char err[512];

	memset(&so, 0, sizeof(so));
	so.name = "rest";
	so.budgeted = true;
	so.lim.max_head = f->conf->max_header;
	so.lim.max_headers = 100;
	so.lim.max_body = f->conf->max_body;
	so.idle_timeout_ms = f->conf->idle_timeout_ms;
	so.header_timeout_ms = f->conf->header_timeout_ms;
	so.write_timeout_ms = 60000;
	so.reuseport = FLOE_WORKER(f);
	f->front =
	    server_new(f->base, &so, request_serve, request_serve_error, f);
	server_set_budget(f->conf->output_budget);
	/* A master holds the ports; its workers listen on them. */
	if (f->conf->workers > 1 && !FLOE_WORKER(f))
		return floe_start_master(f);
	/* The plain listener first: server_port() names the last one. */
	if (f->conf->listen_plain != NULL &&
	    server_listen_tcp(f->front,
		FLOE_WORKER(f) ? f->workers->listen_plain :
				 f->conf->listen_plain,
		err, sizeof(err)) == -1) {
		log_warnx("%s: %s", __func__, err);
		return -1;
	}
	if ((f->tls != NULL ? server_listen_tls(f->front, floe_listen_addr(f),
				  f->tls, err, sizeof(err)) :
			      server_listen_tcp(f->front, floe_listen_addr(f),
				  err, sizeof(err))) == -1) {
		log_warnx("%s: %s", __func__, err);
		return -1;
	}
	if (FLOE_WORKER(f)) {
		floe_open_access_log(f);
		return 0;
	}
	return floe_start_admin(f);
}

/* The address the engines' listener binds: a worker's, as its master held. */
static const char *
floe_listen_addr(const struct floe *f)
{
	return FLOE_WORKER(f) ? f->workers->listen : f->conf->listen;
}

/* A master: the ports held and the shared region, then as any floe. */
static int
floe_start_master(struct floe *f)
{
	char err[512];

	if (floe_workers_listen(f, err, sizeof(err)) == -1) {
		log_warnx("%s: %s", __func__, err);
		return -1;
	}
	return floe_start_admin(f);
}

/* The admin socket, the access log and the rollback log. 0, or -1. */
static int
floe_start_admin(struct floe *f)
{
	struct server_opts so;
	char err[512];

	memset(&so, 0, sizeof(so));
	so.lim.max_head = f->conf->max_header;
	so.lim.max_headers = 100;
	so.idle_timeout_ms = f->conf->idle_timeout_ms;
	so.header_timeout_ms = f->conf->header_timeout_ms;
	so.write_timeout_ms = 60000;
	so.name = "admin";
	so.budgeted = false;
	so.lim.max_body = 64 << 20; /* ledger imports */
	f->admin_sock = admin_sock_new(f);
	f->admin = server_new(f->base, &so, admin_sock_serve, admin_sock_error,
	    f->admin_sock);
	err[0] = '\0';
	if (floe_mkdirs(f->conf->admin_socket, false) == -1 ||
	    server_listen_unix(f->admin, f->conf->admin_socket, err,
		sizeof(err)) == -1) {
		log_warnx("%s: %s", __func__,
		    err[0] != '\0' ? err : strerror(errno));
		return -1;
	}
	floe_open_access_log(f);
	/* A directory that cannot be made shows as rlog_open's error. */
	(void)floe_mkdirs(f->conf->rollback_log, false);
	if (f->rlog == NULL) {
		f->rlog = rlog_open(f->conf->rollback_log, err, sizeof(err));
		if (err[0] != '\0')
			log_warnx("%s: %s; rollbacks will still happen, their "
				  "lines wait in the flag store until the log "
				  "opens",
			    __func__, err);
		rlog_attach(f->rlog, f->store);
	}
	return 0;
}

/*
 * Signals, the tick, and the modules that act on their own: the config
 * reads, the triggers, the metrics listener. 0, or -1 (logged).
 */
static int
floe_start_events(struct floe *f)
{
	struct timeval one = { 1, 0 };
	char err[512];
	size_t i;

	for (i = 0; i < nitems(floe_sigs); i++) {
		f->sig[i] =
		    evsignal_new(f->base, floe_sigs[i], floe_signal_cb, f);
		evsignal_add(f->sig[i], NULL);
	}
	f->tick = event_new(f->base, -1, EV_PERSIST, floe_tick_cb, f);
	evtimer_add(f->tick, &one);
	/* The catalogs hold each config read; answers use it from then on. */
	f->discover = discover_new(f, NULL, NULL);
	if (FLOE_WORKER(f))
		return 0;
	f->watch = watch_new(f);
	if ((f->obs = obs_new(f, f->conf->metrics_listen, err, sizeof(err))) ==
	    NULL) {
		log_warnx("%s: metrics_listen: %s", __func__, err);
		return -1;
	}
	if (FLOE_MASTER(f))
		floe_workers_start(f, floe_verbose);
	return 0;
}

/* Say what floe serves and how, and tell systemd it is ready. */
static void
floe_log_start(struct floe *f)
{
	int i;

	if (FLOE_WORKER(f)) {
		log_info("serving on %s%s (pid %ld)", f->workers->listen,
		    f->tls != NULL ? ", TLS" : "", (long)getpid());
		return;
	}
	if (FLOE_MASTER(f))
		log_info("floe master: %u workers listening on %s%s, admin "
			 "socket %s",
		    f->workers->n, f->workers->listen,
		    f->tls != NULL ? " (TLS)" : "", f->conf->admin_socket);
	else
		log_info("floe listening on %s (port %d%s), admin socket %s",
		    f->conf->listen, server_port(f->front),
		    f->tls != NULL ? ", TLS" : "", f->conf->admin_socket);
	if (f->tls != NULL)
		log_info("TLS certificate %s", tlsctx_subject(f->tls));
	if (f->conf->listen_plain != NULL)
		log_info("plain listener on %s", f->conf->listen_plain);
	if (f->conf->metrics_listen != NULL)
		log_info("metrics and status page on http://%s/",
		    f->conf->metrics_listen);
	floe_log_auth(f);
	for (i = 0; i < ROUTE_NSIDES; i++)
		floe_log_cred(f, i);
	if (sdnotifyf("READY=1\nMAINPID=%ld\nSTATUS=serving on %s, "
		      "configuration generation 1",
		(long)getpid(), f->conf->listen) == -1)
		log_warn("%s: NOTIFY_SOCKET", __func__);
}

/* Free everything floe_run started, in the order that keeps peers valid. */
static void
floe_stop(struct floe *f)
{
	size_t i;

	request_flush_log(f);
	if (FLOE_WORKER(f)) /* its last counts, for its master's sums */
		floe_worker_publish(f);
	if (FLOE_MASTER(f))
		floe_workers_stop(f);
	/* Imports still queued are answered (503) before their peers go. */
	cluster_free(f->cluster);
	f->cluster = NULL; /* the inventory's last flush stays local */
	worker_free(f->worker);
	f->worker = NULL;
	obs_free(f->obs);
	watch_free(f->watch);
	inventory_free(f->inv);
	discover_free(f->discover);
	server_free(f->front);
	server_free(f->admin);
	admin_sock_free(f->admin_sock);
	for (i = 0; i < ROUTE_NSIDES; i++) {
		upstream_free(f->up[i]);
		catalog_free(f->cat[i]);
		cred_free(f->cred[i]);
	}
	fetch_free(f->fetch);
	cache_free(f->cache);
	memo_free(f->memo);
	for (i = 0; i < nitems(floe_sigs); i++)
		event_free(f->sig[i]);
	event_free(f->tick);
	evdns_base_free(floe_dns, 0);
	event_base_free(f->base);
	store_free(f->store);
	rlog_free(f->rlog);
	auth_free(f->auth);
	stats_clear(&f->stats);
	tlsctx_free(f->tls);
	if (f->access_fd != -1)
		close(f->access_fd);
	conf_free(f->conf);
	json_decref(f->last_reload);
	free(f->conf_path);
	workers_free(f->workers);
	free(f);
}

static void
floe_signal_cb(evutil_socket_t sig, short ev __unused, void *arg)
{
	struct floe *f = arg;
	struct timeval tv;

	switch (sig) {
	case SIGHUP:
		json_decref(floe_reload(f));
		return;
	default:
		/*
		 * A worker drains to its end: its master passes every stop
		 * on, and systemd signals the whole group as well.
		 */
		if (f->draining && FLOE_WORKER(f))
			return;
		if (f->draining) {
			log_info("second signal: stopping now");
			floe_workers_signal(f, SIGKILL);
			event_base_loopbreak(f->base);
			return;
		}
		log_info("signal %d: draining (%u connections)", (int)sig,
		    server_nconns(f->front));
		(void)sdnotify("STOPPING=1\nSTATUS=draining");
		f->draining = true;
		server_drain(f->front);
		if (f->admin != NULL) /* a worker has none */
			server_drain(f->admin);
		obs_drain(f->obs);
		if (f->cluster != NULL)
			cluster_leader_resign(f->cluster);
		/* Workers drain as long; their master waits a little more. */
		floe_workers_signal(f, SIGTERM);
		tv = units_ms_tv(
		    f->conf->drain_ms + (FLOE_MASTER(f) ? 1000 : 0));
		event_base_loopexit(f->base, &tv);
		return;
	}
}

static void
floe_tick_cb(evutil_socket_t fd __unused, short ev __unused, void *arg)
{
	struct floe *f = arg;

	floe_ticks++;
	request_flush_log(f);
	if (FLOE_WORKER(f))
		floe_worker_publish(f);
	else
		floe_rlog_flush(f);
	if (f->store == NULL)
		floe_open_store(f);
	else if (floe_ticks % 60 == 0 && !FLOE_WORKER(f))
		store_maintain(f->store);
	floe_trim();
	if (f->draining && server_nconns(f->front) == 0 &&
	    (f->admin == NULL || server_nconns(f->admin) == 0) &&
	    obs_nconns(f->obs) == 0 && floe_workers_alive(f) == 0)
		event_base_loopbreak(f->base);
}

/*
 * Give back what a burst of answers left behind. glibc returns only the
 * free top of its heap (past FLOE_HEAP_KEEP); the answers of clients that
 * held them leave the rest in pieces that only malloc_trim hands back.
 * When the bytes held for clients have fallen by FLOE_TRIM_DROP and to a
 * quarter of their peak since the last trim, trim, keeping
 * FLOE_HEAP_KEEP. Measured: see docs/performance.md, "Bounds".
 */
static void
floe_trim(void)
{
	static size_t hi;
	size_t peak = server_held_peak_take(), now = server_held_bytes();
	int64_t t0;

	if (peak > hi)
		hi = peak;
	if (hi - now < FLOE_TRIM_DROP || now > hi / 4)
		return;
	t0 = units_mono_us();
	(void)malloc_trim(FLOE_HEAP_KEEP);
	log_debug("%s: %zu MB held at the peak, %zu MB now: trimmed in "
		  "%lld us",
	    __func__, hi >> 20, now >> 20, (long long)(units_mono_us() - t0));
	hi = now;
}

/*
 * On the tick: write the rollback log lines that are pending, and say so
 * when the log takes them again.
 */
static void
floe_rlog_flush(struct floe *f)
{
	struct rlog_stats rs;
	size_t before;
	int e;

	rlog_stats(f->rlog, &rs);
	if (rs.pending == 0 || f->store == NULL)
		return;
	before = rs.pending;
	/* A write txn and an fsync: not on the loop when a child can. */
	if (admin_rlog_retry(f, before))
		return;
	if (rlog_flush(f->rlog, units_now_ms()) == 0) {
		log_info("rollback log %s: %zu pending line%s written",
		    f->conf->rollback_log, before, before == 1 ? "" : "s");
		return;
	}
	e = errno;
	if (floe_ticks % 60 == 1)
		log_warnx("rollback log %s: %zu line%s still pending: %s",
		    f->conf->rollback_log, before, before == 1 ? "" : "s",
		    log_strerror(e));
}

/* A job helper (started with WORKER_HELPER_ARG): its job, by kind. */
static void
floe_helper_serve(unsigned kind, const void *in, size_t len,
    struct evbuffer *out)
{
	switch (kind) {
	case INVENTORY_JOB:
		inventory_serve(in, len, out);
		break;
	case ADMIN_STALE_JOB:
		admin_readers_stale_serve(in, len, out);
		break;
	default:
		log_warnx("job helper: a job of unknown kind %u", kind);
		break;
	}
}

/* floe [-htv] [-c FILE] [--help] [--version] */
int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		/* A master's worker, started by it (main_workers.c). */
		{ "worker", required_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = FLOE_CONF_DEFAULT, *worker = NULL;
	int ch, test = 0, verbose = 0, rc;

	/* Started by the worker (proxy/worker.c), not by a person. */
	if (argc == 2 && strcmp(argv[1], WORKER_HELPER_ARG) == 0) {
		log_set_prefix("job helper: ");
		return worker_helper_main(floe_helper_serve);
	}
	while ((ch = getopt_long(argc, argv, "c:thv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 't':
			test = 1;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("floe %s\n", version_get());
			return 0;
		case 'W':
			worker = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (test)
		return floe_check(path);
	/*
	 * Answers of a megabyte pass through floe in 64 KiB buffers that
	 * are freed as soon as they are written. With glibc's defaults the
	 * heap gives that memory back to the kernel after every such answer
	 * and takes it again, zeroed, page fault by page fault, for the next
	 * one. Keep up to FLOE_HEAP_KEEP of freed memory instead.
	 */
	mallopt(M_TRIM_THRESHOLD, FLOE_HEAP_KEEP);
	mallopt(M_MMAP_THRESHOLD, FLOE_HEAP_KEEP);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		fprintf(stderr, "floe: curl_global_init failed\n");
		return 1;
	}
	sockio_mem_init();
	rc = floe_run(path, verbose, worker);
	sockio_mem_release();
	curl_global_cleanup();
	return rc;
}
