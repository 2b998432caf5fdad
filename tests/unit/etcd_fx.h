/*
 * floe: etcd_fx.h -- the environment and helpers that test_etcd.c and
 * test_etcd_cluster.c share (etcd_fx.c).
 */
#ifndef FLOE_TESTS_UNIT_ETCD_FX_H
#define FLOE_TESTS_UNIT_ETCD_FX_H

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
extern struct env *E;

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

int64_t now_us(void);
bool wait_for(const int *counter, int want, int ms);
void spin(int ms);
int sh(const char *fmt, ...) __attribute__((__format__(__printf__, 1, 2)));
void read_line(const char *dir, const char *name, char *buf, size_t len);
void etcd_up(char *dir, size_t dirlen, char *eps, size_t epslen,
    const char *opts, const char *args);
void etcd_down(const char *dir);
int member_pid(const char *dir, int k);
void member_url(const char *dir, int k, char *buf, size_t len);
struct etcd *client(const char *endpoints, uint64_t timeout_ms);
void got_cb(const struct etcd_result *r, void *arg);
void wait_got(struct got *g);
void get(struct etcd *e, const char *key, bool prefix, struct got *g);
int64_t put(struct etcd *e, const char *key, const char *value, int64_t lease);
void wgot_cb(const struct etcd_watch_msg *m, void *arg);
struct etcd_watch *watch(struct etcd *e, const char *prefix, int64_t rev,
    struct wgot *w, uint64_t idle_ms);
void password_file(const char *dir, const char *password, char *buf,
    size_t len);
int64_t put_many(struct etcd *e, const char *prefix, int n);
int setup(void **state);
int teardown(void **state);

#endif
