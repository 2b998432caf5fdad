/*
 * floe: token.c -- a catalog's access token, kept fresh off the data
 * path. One token request at a time goes out through fetch; an answer
 * schedules the next refresh at 80 % of the lifetime (counted from when
 * the request left, so a slow endpoint never stretches it) and the
 * expiry. A failure is retried after a jittered, doubling delay; the old
 * token stays until its expiry; the first failure of an outage, the loss
 * of the token and the recovery are logged once each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/secret.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/oauth.h"
#include "proxy/fetch.h"
#include "proxy/token.h"

#define TOKEN_TIMEOUT_MS 10000
#define TOKEN_CONNECT_TIMEOUT_MS 2000
#define TOKEN_RETRY_MIN_MS 1000
#define TOKEN_RETRY_MAX_MS 60000
#define TOKEN_EARLY_MIN_MS 30000
#define TOKEN_MAX_BODY (64 * 1024)
#define TOKEN_REFRESH_PCT 80

struct token {
	struct event_base *base;
	struct fetch *f;
	struct oauth *grant;
	char *name;
	char *ca_file;
	uint64_t timeout_ms, connect_timeout_ms;
	uint64_t retry_min_ms, retry_max_ms, early_min_ms;
	token_changed_cb changed;
	void *arg;

	char *tok; /* the access token, or NULL */
	uint64_t gen; /* bumped with every new token */
	int64_t expires_ms; /* wall clock */
	int64_t refresh_ms; /* wall clock of the planned refresh */
	int64_t last_ok_ms;
	enum token_state state;
	char *last_error;
	bool outage; /* its first failure was logged */
	bool gone_logged; /* the loss of the token was logged */
	unsigned tries; /* failures in a row */
	int64_t early_us; /* the last 401-triggered refresh, mono */

	struct fetch_req *req;
	int64_t req_us, req_ms; /* when it left: mono, wall */
	struct event *refresh; /* the next token request */
	struct event *expire; /* the current token's end */
	uint64_t fetches, failures, early;
};

static void token_fetch(struct token *);
static void token_arm(struct event *, int64_t);
static void token_done_cb(int, const char *, size_t, const char *, void *);
static void token_refresh_cb(evutil_socket_t, short, void *);
static void token_expire_cb(evutil_socket_t, short, void *);
static void token_failed(struct token *, const char *);
static void token_drop(struct token *);

struct token *
token_new(struct event_base *base, struct fetch *f, struct oauth *grant,
    const struct token_opts *o)
{
	struct token *t;

	t = xcalloc(1, sizeof(*t));
	t->base = base;
	t->f = f;
	t->grant = grant;
	t->name = xstrdup(o->name != NULL ? o->name : "catalog");
	t->ca_file = o->ca_file != NULL ? xstrdup(o->ca_file) : NULL;
	t->timeout_ms = o->timeout_ms != 0 ? o->timeout_ms : TOKEN_TIMEOUT_MS;
	t->connect_timeout_ms = o->connect_timeout_ms != 0 ?
	    o->connect_timeout_ms :
	    TOKEN_CONNECT_TIMEOUT_MS;
	t->retry_min_ms =
	    o->retry_min_ms != 0 ? o->retry_min_ms : TOKEN_RETRY_MIN_MS;
	t->retry_max_ms =
	    o->retry_max_ms != 0 ? o->retry_max_ms : TOKEN_RETRY_MAX_MS;
	if (t->retry_max_ms < t->retry_min_ms)
		t->retry_max_ms = t->retry_min_ms;
	t->early_min_ms =
	    o->early_min_ms != 0 ? o->early_min_ms : TOKEN_EARLY_MIN_MS;
	t->changed = o->changed;
	t->arg = o->arg;
	t->state = TOKEN_PENDING;
	if ((t->refresh = evtimer_new(base, token_refresh_cb, t)) == NULL ||
	    (t->expire = evtimer_new(base, token_expire_cb, t)) == NULL)
		fatalx("%s: out of memory", __func__);
	return t;
}

void
token_free(struct token *t)
{
	if (t == NULL)
		return;
	fetch_cancel(t->req);
	event_free(t->refresh);
	event_free(t->expire);
	secret_free_str(t->tok);
	oauth_free(t->grant);
	free(t->last_error);
	free(t->ca_file);
	free(t->name);
	free(t);
}

void
token_start(struct token *t)
{
	/* A token taken over from another holder keeps its schedule. */
	if (t->tok != NULL)
		return;
	evtimer_del(t->refresh);
	token_fetch(t);
}

void
token_adopt(struct token *t, struct token *old)
{
	int64_t now = units_now_ms();

	t->fetches = old->fetches;
	t->failures = old->failures;
	t->early = old->early;
	t->last_ok_ms = old->last_ok_ms;
	if (old->tok == NULL)
		return;
	secret_free_str(t->tok);
	t->tok = old->tok;
	old->tok = NULL;
	t->gen = old->gen;
	t->expires_ms = old->expires_ms;
	t->refresh_ms = old->refresh_ms;
	t->state = TOKEN_OK;
	token_arm(t->refresh, (t->refresh_ms - now) * 1000);
	token_arm(t->expire, (t->expires_ms - now) * 1000);
}

const char *
token_get(const struct token *t, uint64_t *gen)
{
	if (gen != NULL)
		*gen = t->gen;
	return t->tok;
}

/* Send a token request, unless one is on its way. */
static void
token_fetch(struct token *t)
{
	struct fetch_opts fo = { 0 };
	struct oauth_req r;
	char err[256];

	if (t->req != NULL)
		return;
	t->req_us = units_mono_us();
	t->req_ms = units_now_ms();
	if (oauth_request(t->grant, t->req_ms / 1000, &r, err, sizeof(err)) ==
	    -1) {
		token_failed(t, err);
		return;
	}
	fo.method = "POST";
	fo.headers = (const char *const *)r.headers;
	fo.body = r.body;
	fo.body_len = r.body_len;
	fo.timeout_ms = t->timeout_ms;
	fo.connect_timeout_ms = t->connect_timeout_ms;
	fo.ca_file = t->ca_file;
	fo.max_body = TOKEN_MAX_BODY;
	t->fetches++;
	/* fetch copies the body and headers; ours are wiped here. */
	t->req = fetch_start(t->f, r.url, &fo, token_done_cb, t);
	oauth_req_clear(&r);
}

/* Arm EV to fire in US microseconds (at once if not positive). */
static void
token_arm(struct event *ev, int64_t us)
{
	struct timeval tv = units_us_tv(us > 0 ? us : 0);

	evtimer_add(ev, &tv);
}

/* TOK is the new token (taken). */
static void
token_set(struct token *t, struct oauth_token *tok)
{
	int64_t life_us = tok->expires_in * 1000000;
	int64_t now = units_mono_us();
	char dur[32];

	secret_free_str(t->tok);
	t->tok = tok->access_token;
	tok->access_token = NULL;
	t->gen++;
	t->expires_ms = t->req_ms + tok->expires_in * 1000;
	t->refresh_ms =
	    t->req_ms + tok->expires_in * 1000 * TOKEN_REFRESH_PCT / 100;
	t->last_ok_ms = units_now_ms();
	t->state = TOKEN_OK;
	t->tries = 0;
	free(t->last_error);
	t->last_error = NULL;
	units_format_duration((uint64_t)tok->expires_in * 1000, dur,
	    sizeof(dur));
	if (t->outage)
		log_info("the %s catalog's token endpoint %s answers again; "
			 "the new token is valid for %s",
		    t->name, oauth_endpoint(t->grant), dur);
	else
		log_debug("%s: %s catalog: new token, valid for %s%s", __func__,
		    t->name, dur, tok->expires_known ? "" : " (assumed)");
	t->outage = t->gone_logged = false;
	token_arm(t->refresh,
	    t->req_us + life_us * TOKEN_REFRESH_PCT / 100 - now);
	token_arm(t->expire, t->req_us + life_us - now);
	if (t->changed != NULL)
		t->changed(t, t->arg);
}

/* A token request ended. */
static void
token_done_cb(int status, const char *body, size_t len, const char *error,
    void *arg)
{
	struct token *t = arg;
	struct oauth_token tok;
	char err[320];

	t->req = NULL;
	if (status == 0) {
		token_failed(t, error != NULL ? error : "no answer");
		return;
	}
	if (oauth_response(t->grant, status, body, len, &tok, err,
		sizeof(err)) == -1) {
		token_failed(t, err);
		return;
	}
	token_set(t, &tok);
}

/*
 * A token request failed because of WHY: keep the token (if any), log the
 * first failure of an outage, retry after a doubling delay (from
 * retry_min_ms to retry_max_ms), each drawn at random from its upper
 * half so that floes sharing an endpoint spread out.
 */
static void
token_failed(struct token *t, const char *why)
{
	uint64_t delay = t->retry_min_ms, ms;
	int64_t now = units_now_ms();
	char left[32];
	unsigned i;

	t->failures++;
	free(t->last_error);
	t->last_error = xstrdup(why);
	t->state = t->tok != NULL ? TOKEN_FAILING : TOKEN_GONE;
	if (!t->outage) {
		t->outage = true;
		if (t->tok != NULL) {
			/* Whole seconds: "719s", not "719532ms". */
			ms = t->expires_ms > now ?
			    (uint64_t)(t->expires_ms - now) :
			    0;
			units_format_duration(ms >= 1000 ? ms / 1000 * 1000 :
							   ms,
			    left, sizeof(left));
			log_warnx("%s: the %s catalog's token endpoint %s: %s; "
				  "retrying, the current token is valid for "
				  "%s more",
			    __func__, t->name, oauth_endpoint(t->grant), why,
			    left);
		} else {
			log_warnx("%s: the %s catalog's token endpoint %s: %s; "
				  "retrying, requests to it get 503 meanwhile",
			    __func__, t->name, oauth_endpoint(t->grant), why);
			t->gone_logged = true;
		}
	} else
		log_debug("%s: %s catalog: %s", __func__, t->name, why);
	for (i = 0; i < t->tries && delay < t->retry_max_ms; i++)
		delay *= 2;
	if (delay > t->retry_max_ms)
		delay = t->retry_max_ms;
	t->tries++;
	delay = delay / 2 + arc4random_uniform((uint32_t)(delay / 2 + 1));
	token_arm(t->refresh, (int64_t)delay * 1000);
}

/* Time for the next token request. */
static void
token_refresh_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	token_fetch(arg);
}

/* Wipe the token away. */
static void
token_drop(struct token *t)
{
	secret_free_str(t->tok);
	t->tok = NULL;
	t->expires_ms = 0;
	t->state = TOKEN_GONE;
}

/* The token ran out before a new one came. */
static void
token_expire_cb(evutil_socket_t fd __unused, short what __unused, void *arg)
{
	struct token *t = arg;

	token_drop(t);
	if (!t->gone_logged) {
		log_warnx("%s: the %s catalog's token expired%s%s; requests "
			  "to it get 503 until its token endpoint %s answers",
		    __func__, t->name, t->last_error != NULL ? ": " : "",
		    t->last_error != NULL ? t->last_error : "",
		    oauth_endpoint(t->grant));
		t->gone_logged = true;
	}
	t->outage = true;
	/* Nothing on its way (a refresh was lost?): ask now. */
	if (t->req == NULL && !evtimer_pending(t->refresh, NULL))
		token_fetch(t);
	if (t->changed != NULL)
		t->changed(t, t->arg);
}

void
token_why(const struct token *t, char *buf, size_t len)
{
	if (t->tok != NULL)
		snprintf(buf, len, "the %s catalog has a token", t->name);
	else if (t->last_error != NULL)
		snprintf(buf, len, "the %s catalog's token endpoint %s: %s",
		    t->name, oauth_endpoint(t->grant), t->last_error);
	else if (t->state == TOKEN_GONE)
		snprintf(buf, len,
		    "the %s catalog's token expired; its token endpoint %s "
		    "has not answered since",
		    t->name, oauth_endpoint(t->grant));
	else
		snprintf(buf, len,
		    "the %s catalog's token endpoint %s has not answered yet",
		    t->name, oauth_endpoint(t->grant));
}

bool
token_unauthorized(struct token *t, uint64_t gen)
{
	int64_t now = units_mono_us();

	if (t->tok == NULL || gen != t->gen || t->req != NULL)
		return false;
	if (t->early_us != 0 &&
	    now - t->early_us < (int64_t)t->early_min_ms * 1000)
		return false;
	t->early_us = now;
	t->early++;
	log_info("the %s catalog refused floe's token (401); fetching a new "
		 "one from %s",
	    t->name, oauth_endpoint(t->grant));
	evtimer_del(t->refresh);
	token_fetch(t);
	return true;
}

const char *
token_state_name(enum token_state s)
{
	switch (s) {
	case TOKEN_PENDING:
		return "pending";
	case TOKEN_OK:
		return "ok";
	case TOKEN_FAILING:
		return "failing";
	case TOKEN_GONE:
		return "gone";
	}
	return "?";
}

void
token_info(const struct token *t, struct token_info *i)
{
	i->state = t->state;
	i->endpoint = oauth_endpoint(t->grant);
	i->grant = oauth_grant_name(t->grant);
	i->last_error = t->last_error;
	i->expires_ms = t->tok != NULL ? t->expires_ms : 0;
	i->last_ok_ms = t->last_ok_ms;
	i->fetches = t->fetches;
	i->failures = t->failures;
	i->early = t->early;
}

/* MS as an RFC 3339 JSON string, or null for 0. */
static json_t *
token_time_json(int64_t ms)
{
	char buf[40];

	if (ms == 0)
		return json_null();
	units_time_format(ms, buf, sizeof(buf));
	return json_string(buf);
}

json_t *
token_status_json(const struct token *t)
{
	struct token_info i;
	json_t *j;

	token_info(t, &i);
	j = json_pack("{ss ss ss so so so sI sI sI}", "state",
	    token_state_name(i.state), "endpoint", i.endpoint, "grant", i.grant,
	    "expires", token_time_json(i.expires_ms), "last_ok",
	    token_time_json(i.last_ok_ms), "last_error",
	    i.last_error != NULL ? json_string(i.last_error) : json_null(),
	    "fetches", (json_int_t)i.fetches, "failures",
	    (json_int_t)i.failures, "early_refreshes", (json_int_t)i.early);
	if (j == NULL)
		fatalx("%s: out of memory", __func__);
	return j;
}
