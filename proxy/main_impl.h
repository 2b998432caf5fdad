/*
 * floe: main_impl.h -- private to the floe process's files (main.c, which
 * starts and stops floe, main_auth.c, its clients' and catalogs'
 * authentication, main_reload.c, which reads its conf again, and
 * main_stats.c, its parts of /status and /metrics);
 * nothing else includes it. Owns nothing: the parts of start-up a reload
 * runs again.
 */
#ifndef FLOE_PROXY_MAIN_IMPL_H
#define FLOE_PROXY_MAIN_IMPL_H

#include <stddef.h>

struct auth;
struct cache_stats;
struct conf;
struct conf_errors;
struct conf_target;
struct cred;
struct floe;
struct memo_stats;
typedef struct json_t json_t;

/* workers = N > 1: the process started, and each data-path process. */
#define FLOE_MASTER(f) ((f)->workers != NULL && (f)->wslot == NULL)
#define FLOE_WORKER(f) ((f)->wslot != NULL)

/* main.c */
/* Open (or reopen) the access log. */
void floe_open_access_log(struct floe *);

/* main_auth.c */
/* Load C's [auth] verifier into *OUT. 0, or -1 with ERR. */
int floe_load_auth(const struct conf *, struct auth **, char *, size_t);
/* Say how clients are authenticated. */
void floe_log_auth(const struct floe *);
/*
 * What C's [auth] mode means for a catalog without a credential of
 * floe's, into BUF (LEN bytes; empty when there is nothing to say).
 */
void floe_credential_note(const struct conf *, char *buf, size_t len);
/* Say how floe authenticates to catalog SIDE. */
void floe_log_cred(const struct floe *, int side);
/* The credential of catalog SIDE as T says, or NULL (logged). */
struct cred *floe_new_cred(struct floe *, const struct conf_target *t,
    int side);
/* Make C (taken) the credential of catalog SIDE, and start it. */
void floe_set_cred(struct floe *, int side, struct cred *c);

/* main_stats.c */
/*
 * floe's parts of GET /status and /metrics, first; the admin API's and
 * the triggers' come after them, in the order their modules start.
 */
void floe_stats_add(struct floe *);

/* main_reload.c */
/* Read the conf again (SIGHUP, POST /reload); the outcome. Caller decrefs. */
json_t *floe_reload(struct floe *);
/* stats_status_cb: the running conf's path, generation and load time. */
json_t *floe_config_status_cb(void *);

/* main_workers.c: workers = N > 1 (see there) */
/*
 * floe.conf as this process must run it: a worker's is its master's text;
 * a master reads the file and keeps the text it parsed (for
 * floe_conf_publish); a single process reads the file. NULL with ERRS.
 */
struct conf *floe_conf_read(struct floe *, struct conf_errors *errs);
/* A master: the text of the conf just applied is its workers' from now. */
void floe_conf_publish(struct floe *);
/*
 * A master, once its conf is read: the shared region, and its conf read
 * again through it (what the workers get is what the master runs). 0, or
 * -1 (logged).
 */
int floe_workers_prepare(struct floe *);
/* The master: the ports held. 0, or -1 with ERR. */
int floe_workers_listen(struct floe *, char *err, size_t errlen);
/* The master: start every worker and watch them. */
void floe_workers_start(struct floe *, int verbose);
/* Send SIG to every worker running (nothing but in a master). */
void floe_workers_signal(struct floe *, int sig);
/* Workers still running (0 but in a master). */
unsigned floe_workers_alive(const struct floe *);
/* Kill and reap workers still running; free the region. */
void floe_workers_stop(struct floe *);
/* stats refresh: a master sums its workers' counters. */
void floe_workers_refresh(void *);
/* The data path's connections, held bytes and cache: summed in a master. */
void floe_front_figures(struct floe *, unsigned *conns, size_t *held,
    struct cache_stats *);
/* The memo of checked answers: summed over the workers in a master. */
void floe_memo_figures(struct floe *, struct memo_stats *);
/* A worker: take the slot named by --worker SLOT:FD. 0, or -1 (logged). */
int floe_worker_attach(struct floe *, const char *arg);
/* A worker's tick: its counters to its slot. */
void floe_worker_publish(struct floe *);

#endif
