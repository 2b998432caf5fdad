/*
 * floe: discover.c -- keeps each upstream's catalog config current. At start
 * it reads GET {uri}/v1/config?warehouse=... of both sides, retrying with
 * backoff while a side cannot be read, then rereads it every
 * config_refresh. One warning per outage, one info line per change.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/discover.h"
#include "proxy/fetch.h"
#include "proxy/floe.h"

#define DISCOVER_BACKOFF_MIN_MS 250
#define DISCOVER_BACKOFF_MAX_MS 30000
#define DISCOVER_REFRESH_MS (5 * 60 * 1000)
#define DISCOVER_MAX_BODY (1024 * 1024)
#define DISCOVER_TOKEN_WAIT_MS 100 /* while the first token is on its way */

/* One side's reader: its timer, its request in flight, its backoff. */
struct discover_side {
	struct discover *d;
	enum route_side side;
	struct event *timer;
	struct fetch_req *req;
	uint64_t backoff_ms; /* the next retry delay */
	int64_t next_us; /* when the timer fires (units_mono_us) */
	uint64_t gen; /* of the token the request carries */
	bool failing; /* in an outage that was already logged */
};

struct discover {
	struct floe *f;
	discover_changed_cb changed_cb; /* or NULL */
	void *changed_arg;
	struct discover_side s[ROUTE_NSIDES];
};

static char *discover_url(const struct conf_target *);
static void discover_start(struct discover_side *);
static void discover_schedule(struct discover_side *, uint64_t);
static void discover_timer_cb(evutil_socket_t, short, void *);
static void discover_done_cb(int, const char *, size_t, const char *, void *);
static void discover_failed(struct discover_side *, const char *);

/* {uri}/v1/config, with ?warehouse= percent-encoded. Caller frees. */
static char *
discover_url(const struct conf_target *t)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;
	char *url, *o;
	size_t n;

	if (t->warehouse == NULL)
		return xasprintf("%s/v1/config", t->uri);
	n = strlen(t->uri) + sizeof("/v1/config?warehouse=") +
	    3 * strlen(t->warehouse);
	url = xmalloc(n);
	o = url + snprintf(url, n, "%s/v1/config?warehouse=", t->uri);
	for (p = (const unsigned char *)t->warehouse; *p != '\0'; p++) {
		/* RFC 3986 unreserved characters go as they are. */
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL)
			*o++ = (char)*p;
		else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 0xf];
		}
	}
	*o = '\0';
	return url;
}

/* Create the reader for F and start reading both sides. */
struct discover *
discover_new(struct floe *f, discover_changed_cb cb, void *arg)
{
	struct discover *d;
	int i;

	d = xcalloc(1, sizeof(*d));
	d->f = f;
	d->changed_cb = cb;
	d->changed_arg = arg;
	for (i = 0; i < ROUTE_NSIDES; i++) {
		d->s[i].d = d;
		d->s[i].side = (enum route_side)i;
		d->s[i].backoff_ms = DISCOVER_BACKOFF_MIN_MS;
		if ((d->s[i].timer = evtimer_new(f->base, discover_timer_cb,
			 &d->s[i])) == NULL) {
			log_warnx("%s: cannot create a timer", __func__);
			discover_free(d);
			return NULL;
		}
	}
	discover_kick(d);
	return d;
}

/* Cancel the timers and requests of D and free it. */
void
discover_free(struct discover *d)
{
	int i;

	if (d == NULL)
		return;
	for (i = 0; i < ROUTE_NSIDES; i++) {
		fetch_cancel(d->s[i].req);
		if (d->s[i].timer != NULL)
			event_free(d->s[i].timer);
	}
	free(d);
}

/* Read both configs now, whatever was pending. */
void
discover_kick(struct discover *d)
{
	int i;

	for (i = 0; i < ROUTE_NSIDES; i++) {
		d->s[i].backoff_ms = DISCOVER_BACKOFF_MIN_MS;
		discover_start(&d->s[i]);
	}
}

/* Start (or restart) reading S's config. */
static void
discover_start(struct discover_side *s)
{
	struct floe *f = s->d->f;
	const struct conf_target *t = &f->conf->target[s->side];
	const char *headers[CRED_MAX_HDRS + 2] = { "Accept: application/json" };
	char *url, *ch[CRED_MAX_HDRS], why[512];
	struct fetch_opts o = { 0 };
	int i, n = 0;

	evtimer_del(s->timer);
	fetch_cancel(s->req);
	s->req = NULL;
	if (t->uri == NULL) {
		discover_failed(s, "no uri configured");
		return;
	}
	url = discover_url(t);
	/* The first token is on its way: wait for it without a warning. */
	if (f->cred[s->side] != NULL && cred_is_pending(f->cred[s->side])) {
		free(url);
		cred_why(f->cred[s->side], why, sizeof(why));
		free(f->cat[s->side]->last_error);
		f->cat[s->side]->last_error = xstrdup(why);
		discover_schedule(s, DISCOVER_TOKEN_WAIT_MS);
		return;
	}
	if (f->cred[s->side] != NULL)
		(void)cred_bearer(f->cred[s->side], &s->gen);
	/* floe's credential for that catalog, in every [auth] mode. */
	if (f->cred[s->side] != NULL &&
	    (n = cred_headers(f->cred[s->side], "GET", url, NULL, 0, ch, why,
		 sizeof(why))) == -1) {
		free(url);
		discover_failed(s, why);
		return;
	}
	for (i = 0; i < n; i++)
		headers[i + 1] = ch[i];
	o.headers = headers;
	o.timeout_ms = t->timeout_ms;
	o.connect_timeout_ms = t->connect_timeout_ms;
	o.ca_file = t->ca_file;
	o.max_body = DISCOVER_MAX_BODY;
	/* fetch copies the headers; the callback never runs from here. */
	s->req = fetch_start(f->fetch, url, &o, discover_done_cb, s);
	free(url);
	cred_headers_clear(ch, n);
}

/* Run discover_start for S after MS. */
static void
discover_schedule(struct discover_side *s, uint64_t ms)
{
	struct timeval tv = units_ms_tv(ms);

	s->next_us = units_mono_us() + (int64_t)ms * 1000;
	evtimer_add(s->timer, &tv);
}

uint64_t
discover_retry_ms(const struct discover *d, enum route_side side)
{
	int64_t left;

	if (d == NULL || d->s[side].req != NULL)
		return 0;
	left = d->s[side].next_us - units_mono_us();
	return left > 0 ? (uint64_t)(left + 999) / 1000 : 0;
}

/* A retry or refresh is due. */
static void
discover_timer_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	discover_start(arg);
}

/*
 * A read failed: remember why, warn once per outage, retry with backoff
 * (doubling from 250 ms to 30 s). A side whose config is known keeps using
 * it meanwhile, and is not retried more often than it is refreshed.
 */
static void
discover_failed(struct discover_side *s, const char *why)
{
	struct floe *f = s->d->f;
	struct catalog *cat = f->cat[s->side];
	uint64_t delay = s->backoff_ms;
	uint64_t refresh = f->conf->config_refresh_ms != 0 ?
	    f->conf->config_refresh_ms :
	    DISCOVER_REFRESH_MS;

	free(cat->last_error);
	cat->last_error = xstrdup(why);
	if (!s->failing) {
		log_warnx("%s: %s catalog config: %s%s; retrying", __func__,
		    route_side_name(s->side), why,
		    cat->known ? " (keeping the last one read)" : "");
		s->failing = true;
	}
	if (cat->known && delay > refresh)
		delay = refresh;
	s->backoff_ms = s->backoff_ms * 2 > DISCOVER_BACKOFF_MAX_MS ?
	    DISCOVER_BACKOFF_MAX_MS :
	    s->backoff_ms * 2;
	discover_schedule(s, delay);
}

/* A /v1/config answer (or a failure to get one) for one side. */
static void
discover_done_cb(int status, const char *body, size_t len, const char *error,
    void *arg)
{
	struct discover_side *s = arg;
	struct floe *f = s->d->f;
	struct catalog *cat = f->cat[s->side];
	const char *name = route_side_name(s->side);
	char err[256], why[320];
	int rc;

	s->req = NULL;
	if (status == 0) {
		discover_failed(s, error != NULL ? error : "no answer");
		return;
	}
	/* floe's token refused: one early refresh (rate-limited there). */
	if (status == 401 && f->cred[s->side] != NULL)
		cred_unauthorized(f->cred[s->side], s->gen);
	if (status != 200) {
		/* The body is not logged: it may echo credentials. */
		snprintf(why, sizeof(why), "HTTP %d", status);
		discover_failed(s, why);
		return;
	}
	rc = catalog_update(cat, body, len, units_now_ms(), err, sizeof(err));
	if (rc == -1) {
		snprintf(why, sizeof(why), "not a catalog config: %s", err);
		discover_failed(s, why);
		return;
	}
	if (rc == 1)
		log_info("%s catalog config read: prefix %s%s%s", name,
		    cat->prefix != NULL ? "\"" : "",
		    cat->prefix != NULL ? cat->prefix : "none",
		    cat->prefix != NULL ? "\"" : "");
	else if (s->failing)
		log_info("%s catalog config read again, unchanged", name);
	s->failing = false;
	s->backoff_ms = DISCOVER_BACKOFF_MIN_MS;
	discover_schedule(s,
	    f->conf->config_refresh_ms != 0 ? f->conf->config_refresh_ms :
					      DISCOVER_REFRESH_MS);
	if (s->d->changed_cb != NULL)
		s->d->changed_cb(s->side, rc == 1, s->d->changed_arg);
}
