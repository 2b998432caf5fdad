/*
 * floe: etcd_impl.h -- what etcd.c (calls, auth, endpoints) and etcd_watch.c
 * (watch streams) share: the client's struct and the helpers both use.
 * Private to those two files.
 */
#ifndef FLOE_PROXY_ETCD_IMPL_H
#define FLOE_PROXY_ETCD_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/compat.h"
#include "proxy/etcd.h"
#include "proxy/fetch.h"

#define ETCD_MAX_BODY (64 * 1024 * 1024) /* an answer or a watch message */
#define ETCD_MAX_ENDPOINTS 16

/* After an owner's callback: what is left. */
#define ETCD_LIVE 0 /* the call or watch lives on */
#define ETCD_GONE 1 /* its owner cancelled it: it is freed */
#define ETCD_DEAD (-1) /* its owner freed the client: all is freed */

enum etcd_state {
	ETCD_S_AUTH, /* waiting for a token */
	ETCD_S_RUNNING, /* its request is in flight */
	ETCD_S_FAILED, /* to be failed from the fail event */
};

struct event;

struct etcd {
	struct fetch *fetch;
	char *eps[ETCD_MAX_ENDPOINTS];
	int neps;
	int cur; /* where calls go first */
	uint64_t timeout_ms;
	char *user;
	char *password;
	char *ca_file;
	char *cert_file;
	char *key_file;
	char *token;
	unsigned gen; /* bumped with every new token */
	struct etcd_call *auth; /* the authentication in flight */
	TAILQ_HEAD(, etcd_call) calls;
	TAILQ_HEAD(, etcd_watch) watches;
	struct event *fail_ev; /* fails what could not start */
	uint64_t cluster_id;
	uint64_t member_id;
	bool calling; /* a callback runs */
	bool dying; /* etcd_free ran inside it */
};

/* etcd.c */
void etcd_destroy(struct etcd *);
struct fetch_req *etcd_post(struct etcd *, int, const char *, const char *,
    fetch_data_cb, uint64_t, fetch_done_cb, void *);
bool etcd_need_auth(const struct etcd *);
void etcd_auth_start(struct etcd *);
bool etcd_failover(struct etcd *, int *, int *, bool, enum fetch_fail);
bool etcd_renew(struct etcd *, bool *, unsigned);
void etcd_saw(struct etcd *, const struct etcd_header *);
void etcd_fail_later(struct etcd *);

/* etcd_watch.c */
void etcd_watches_free(struct etcd *);
bool etcd_watches_authed(struct etcd *, const struct etcd_result *);
int etcd_watches_fail(struct etcd *);

#endif
