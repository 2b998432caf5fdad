/*
 * floe: main_impl.h -- private to the floe process's files (main.c, which
 * starts and stops floe, main_reload.c, which reads its conf again, and
 * main_stats.c, its parts of /status and /metrics);
 * nothing else includes it. Owns nothing: the parts of start-up a reload
 * runs again.
 */
#ifndef FLOE_PROXY_MAIN_IMPL_H
#define FLOE_PROXY_MAIN_IMPL_H

#include <stddef.h>

struct auth;
struct conf;
struct conf_target;
struct cred;
struct floe;
typedef struct json_t json_t;

/* main.c */
/* Open (or reopen) the access log. */
void floe_open_access_log(struct floe *);
/* Load C's [auth] verifier into *OUT. 0, or -1 with ERR. */
int floe_load_auth(const struct conf *, struct auth **, char *, size_t);
/* Say how clients are authenticated. */
void floe_log_auth(const struct floe *);
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

#endif
