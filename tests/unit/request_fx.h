/*
 * floe: request_fx.h -- the fixture shared by test_request.c and
 * test_request_forward.c: struct fx (a floe with a listener, and a
 * scripted catalog), its setup and teardown, and the exchange helpers.
 */
#ifndef FLOE_TESTS_REQUEST_FX_H
#define FLOE_TESTS_REQUEST_FX_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/request.h"
#include "proxy/request_impl.h"
#include "proxy/rest.h"
#include "proxy/server.h"
#include "routing/route.h"
#include "tests/unit/routing_tmp.h"

#define CAT_CONNS 4
#define BUFSZ (128 * 1024)

/* A connection to the scripted catalog and what it read. */
struct cat_conn {
	int fd;
	char in[BUFSZ];
	size_t inlen;
	bool answered;
};

/* One floe, in process: a store, both pools, a listener; a catalog. */
struct fx {
	struct routing_tmp *tmp;
	struct event_base *base;
	struct floe f;
	struct server *srv;
	int port; /* floe's */
	int cat_fd; /* the scripted catalog's listener */
	struct cat_conn cat[CAT_CONNS];
	const char *answer[ROUTE_NSIDES]; /* what each side's catalog says */
	char head[ROUTE_NSIDES][BUFSZ]; /* the last head each side got */
	unsigned asked[ROUTE_NSIDES];
	char resp[BUFSZ]; /* floe's last answer */
	size_t resplen;
	char conf_path[300];
};

/* One floe and its scripted catalog, in *STATE. */
int setup(void **state);
/* Free what setup made. */
int teardown(void **state);

/*
 * Send REQ to floe and run the loop (and the catalog) until its whole
 * answer is in fx->resp; returns the status.
 */
unsigned exchange(struct fx *fx, const char *req);

/* The body of the last answer. */
const char *resp_body(const struct fx *fx);

/*
 * A request in BUF: REQ is the request line without its version, or
 * with it and more header lines; BODY, if not NULL, goes with its length.
 */
void req_fmt(char *buf, size_t len, const char *req, const char *body);

/* A catalog's 200 answer with BODY in BUF; closes after. */
const char *http_answer(char *buf, size_t len, const char *extra,
    const char *body);

/* Does S start with PREFIX? */
bool starts_with(const char *s, const char *prefix);

/* Does the last answer's head hold LINE ("Name: value")? */
bool resp_has(const struct fx *fx, const char *line);

/* The last answer is an ErrorModel of STATUS, TYPE, with MSG in it. */
void assert_error_model(const struct fx *fx, unsigned status, const char *type,
    const char *msg);

/* A request for TARGET (GET), parsed and with its prefix, not routed. */
struct request *request_for(struct fx *fx, struct h1_msg *m,
    enum rest_method rm, enum request_prefix pfx);

/* A bare message for METHOD TARGET with headers H (N of them). */
void msg_init(struct h1_msg *m, enum h1_method method, const char *target,
    struct h1_header *h, unsigned n);

#endif
