/*
 * floe: token.h -- the access token floe holds for one catalog (oauth2 and
 * google modes), fetched and refreshed by the control plane. Owns the
 * grant (struct oauth), the current token and its expiry, the fetch in
 * flight, and the refresh and expiry timers. The data path reads the
 * token from memory: token_get never does I/O. A refresh starts at 80 %
 * of the token's lifetime; a failed one is retried with jittered backoff
 * while the old token is kept until it expires, and is logged once per
 * outage. Loop thread only.
 */
#ifndef FLOE_PROXY_TOKEN_H
#define FLOE_PROXY_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct fetch;
struct oauth;
struct token;
typedef struct json_t json_t;

enum token_state {
	TOKEN_PENDING, /* no token yet; the first fetch is on its way */
	TOKEN_OK, /* a token, and its last refresh (if any) worked */
	TOKEN_FAILING, /* a token, but refreshing it fails */
	TOKEN_GONE, /* no token: it expired, or none could be fetched */
};

/* The token changed: a new one, or none (it expired). */
typedef void (*token_changed_cb)(struct token *, void *arg);

struct token_opts {
	const char *name; /* "warehouse": for logs and messages */
	uint64_t timeout_ms; /* per token request; 0: 10 s */
	uint64_t connect_timeout_ms; /* 0: 2 s */
	const char *ca_file; /* extra trust store, or NULL */
	uint64_t retry_min_ms; /* first retry after a failure; 0: 1 s */
	uint64_t retry_max_ms; /* backoff cap; 0: 60 s */
	uint64_t early_min_ms; /* 401-triggered refreshes apart; 0: 30 s */
	token_changed_cb changed; /* or NULL */
	void *arg;
};

/*
 * A holder for GRANT (taken: freed with the holder), fetching through F
 * on BASE. Nothing is fetched before token_start.
 */
struct token *token_new(struct event_base *, struct fetch *f,
    struct oauth *grant, const struct token_opts *);
/* Cancel the fetch and the timers, wipe the token, free. NULL is fine. */
void token_free(struct token *);
/*
 * Fetch the first token now (and keep it fresh from then on); nothing to
 * fetch when it took a token over (token_adopt).
 */
void token_start(struct token *);
/*
 * Take OLD's token over, with its expiry and refresh time, and its
 * counters (a reload rebuilds the holder with the secret read again:
 * requests go on with the token, the next refresh uses the new grant).
 * Call before token_start; OLD is freed after.
 */
void token_adopt(struct token *, struct token *old);

/*
 * The current access token, NUL-terminated, or NULL when there is none.
 * *GEN (if not NULL) is its generation, for token_unauthorized. Borrowed:
 * valid until the changed callback runs or control returns to the loop.
 */
const char *token_get(const struct token *, uint64_t *gen);
/*
 * Why there is no token, for a 503: "the warehouse catalog's token
 * endpoint idp.example/oauth/token: HTTP 401: invalid_client". Never
 * holds the secret or a token.
 */
void token_why(const struct token *, char *buf, size_t len);
/*
 * A catalog answered 401 to a request that carried token GEN: refresh now,
 * unless that token was already replaced, a fetch is on its way, or the
 * last early refresh was less than early_min_ms ago. True if a refresh
 * started.
 */
bool token_unauthorized(struct token *, uint64_t gen);

/* What /status and /metrics show. Strings are borrowed from the holder. */
struct token_info {
	enum token_state state;
	const char *endpoint; /* host[:port]/path of the token URI */
	const char *grant; /* "client_credentials", "jwt-bearer" */
	const char *last_error; /* of the last failed fetch, or NULL */
	int64_t expires_ms; /* wall clock, 0: no token */
	int64_t last_ok_ms; /* wall clock of the last token, 0: never */
	uint64_t fetches; /* token requests sent */
	uint64_t failures; /* ... that failed */
	uint64_t early; /* refreshes started by a catalog's 401 */
};
void token_info(const struct token *, struct token_info *);
const char *token_state_name(enum token_state);
/* The same as JSON: {"state", "endpoint", "grant", "expires", ...}. */
json_t *token_status_json(const struct token *);

#endif
