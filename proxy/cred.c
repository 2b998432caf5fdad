/*
 * floe: cred.c -- one catalog's credential, built from its floe.conf keys:
 * a copy of token_file's token, a token holder around an OAuth2 or Google
 * grant, or a SigV4 signer with the AWS credentials of the environment or
 * of a credentials file. Control-plane requests get their headers here
 * (cred_headers); the data path's come from here too, written by
 * upstream.c into each request head: the Authorization line made once per
 * token (cred_authz), or a signature over the head as it is sent
 * (cred_sign).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/secret.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/awscred.h"
#include "policy/oauth.h"
#include "policy/sigv4.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/token.h"

struct cred {
	enum conf_cred mode;
	char *name;
	char *host; /* the Host header floe sends: host[:port] */
	bool passthrough;
	char *token; /* token mode: the bearer token */
	struct token *holder; /* oauth2, google */
	struct sigv4 *signer; /* sigv4 */
	struct sigv4_body *body; /* payload hashes */
	char *authz; /* "Authorization: Bearer ...\r\n" of AUTHZ_GEN */
	size_t authz_len;
	uint64_t authz_gen;
	const char *authz_tok; /* the token it was made of */
	char *region, *service, *source;
	cred_changed_cb changed;
	void *changed_arg;
};

static int cred_sigv4(struct cred *, const struct conf_target *, char *,
    size_t);
static char *cred_header(const char *, const char *);
static void cred_authz_clear(struct cred *);
static void cred_token_cb(struct token *, void *);

/* A signer for T's region and service with T's AWS credentials. */
static int
cred_sigv4(struct cred *c, const struct conf_target *t, char *err,
    size_t errlen)
{
	struct awscred ac;
	unsigned flags = 0;
	int rc;

	/* S3 Tables, as S3, wants the payload hash sent too. */
	if (strcmp(t->sigv4_service, "s3tables") == 0)
		flags |= SIGV4_CONTENT_SHA256;
	if ((c->signer = sigv4_new(t->sigv4_region, t->sigv4_service, flags,
		 err, errlen)) == NULL)
		return -1;
	memset(&ac, 0, sizeof(ac));
	if (awscred_load(&ac, t->aws_credentials_file, t->aws_profile, err,
		errlen) == -1)
		return -1;
	rc = sigv4_set_creds(c->signer, ac.access_key_id, ac.secret_access_key,
	    ac.session_token, err, errlen);
	c->source = xstrdup(ac.source);
	awscred_clear(&ac);
	c->body = sigv4_body_new();
	c->region = xstrdup(t->sigv4_region);
	c->service = xstrdup(t->sigv4_service);
	return rc;
}

struct cred *
cred_new(struct event_base *base, struct fetch *f, const struct conf_target *t,
    const char *name, char *err, size_t errlen)
{
	struct token_opts to;
	struct oauth *grant = NULL;
	struct cred *c;
	bool dflt_port = strcmp(t->port, t->tls ? "443" : "80") == 0;
	bool v6 = strchr(t->host, ':') != NULL;

	c = xcalloc(1, sizeof(*c));
	c->mode = t->auth;
	c->name = xstrdup(name);
	/* The Host header as upstream.c and libcurl send it. */
	c->host = xasprintf("%s%s%s%s%s", v6 ? "[" : "", t->host, v6 ? "]" : "",
	    dflt_port ? "" : ":", dflt_port ? "" : t->port);
	switch (t->auth) {
	case CONF_CRED_DEFAULT:
	case CONF_CRED_NONE:
		break;
	case CONF_CRED_TOKEN:
		c->token = xstrdup(t->token);
		break;
	case CONF_CRED_OAUTH2:
		grant = oauth_client_load(t->oauth_token_uri, t->client_id,
		    t->client_secret_file, t->scope, t->oauth_audience,
		    OAUTH_AUTH_FORM, err, errlen);
		break;
	case CONF_CRED_GOOGLE:
		grant = oauth_google_load(t->google_key_file, t->scope, err,
		    errlen);
		break;
	case CONF_CRED_SIGV4:
		if (cred_sigv4(c, t, err, errlen) == -1)
			goto fail;
		break;
	}
	if (t->auth == CONF_CRED_OAUTH2 || t->auth == CONF_CRED_GOOGLE) {
		if (grant == NULL)
			goto fail;
		memset(&to, 0, sizeof(to));
		to.name = name;
		to.timeout_ms = t->timeout_ms;
		to.connect_timeout_ms = t->connect_timeout_ms;
		to.ca_file = t->ca_file;
		to.changed = cred_token_cb;
		to.arg = c;
		c->holder = token_new(base, f, grant, &to);
	}
	return c;
fail:
	cred_free(c);
	return NULL;
}

void
cred_free(struct cred *c)
{
	if (c == NULL)
		return;
	cred_authz_clear(c);
	token_free(c->holder);
	sigv4_free(c->signer);
	sigv4_body_free(c->body);
	secret_free_str(c->token);
	free(c->region);
	free(c->service);
	free(c->source);
	free(c->host);
	free(c->name);
	free(c);
}

void
cred_start(struct cred *c)
{
	if (c->holder != NULL)
		token_start(c->holder);
}

/* The holder's token changed: tell the owner. */
static void
cred_token_cb(struct token *t __unused, void *arg)
{
	struct cred *c = arg;

	if (c->changed != NULL)
		c->changed(c, c->changed_arg);
}

void
cred_on_changed(struct cred *c, cred_changed_cb cb, void *arg)
{
	c->changed = cb;
	c->changed_arg = arg;
}

void
cred_adopt(struct cred *c, struct cred *old)
{
	if (c->holder != NULL && old->holder != NULL)
		token_adopt(c->holder, old->holder);
}

enum cred_kind
cred_kind(const struct cred *c)
{
	switch (c->mode) {
	case CONF_CRED_TOKEN:
	case CONF_CRED_OAUTH2:
	case CONF_CRED_GOOGLE:
		return CRED_BEARER;
	case CONF_CRED_SIGV4:
		return CRED_SIGV4;
	default:
		return CRED_NONE;
	}
}

enum conf_cred
cred_mode(const struct cred *c)
{
	return c->mode;
}

bool
cred_on_data(const struct cred *c)
{
	switch (cred_kind(c)) {
	case CRED_BEARER:
		return !c->passthrough;
	case CRED_SIGV4:
		return true;
	default:
		return false;
	}
}

void
cred_set_passthrough(struct cred *c, bool on)
{
	c->passthrough = on;
}

const char *
cred_bearer(const struct cred *c, uint64_t *gen)
{
	if (gen != NULL)
		*gen = 0;
	if (c->holder != NULL)
		return token_get(c->holder, gen);
	return c->token;
}

bool
cred_is_ready(const struct cred *c)
{
	return c->holder == NULL || token_get(c->holder, NULL) != NULL;
}

bool
cred_is_pending(const struct cred *c)
{
	struct token_info ti;

	if (c->holder == NULL)
		return false;
	token_info(c->holder, &ti);
	return ti.state == TOKEN_PENDING;
}

void
cred_why(const struct cred *c, char *buf, size_t len)
{
	if (c->holder != NULL)
		token_why(c->holder, buf, len);
	else
		snprintf(buf, len, "the %s catalog's credential is ready",
		    c->name);
}

void
cred_unauthorized(struct cred *c, uint64_t gen)
{
	if (c->holder != NULL)
		(void)token_unauthorized(c->holder, gen);
}

struct sigv4 *
cred_signer(const struct cred *c)
{
	return c->signer;
}

const struct token *
cred_token(const struct cred *c)
{
	return c->holder;
}

/* Forget the Authorization line made of the last token. */
static void
cred_authz_clear(struct cred *c)
{
	if (c->authz != NULL) {
		explicit_bzero(c->authz, c->authz_len);
		free(c->authz);
	}
	c->authz = NULL;
	c->authz_len = 0;
	c->authz_tok = NULL;
}

const char *
cred_authz(struct cred *c, size_t *len, uint64_t *gen)
{
	const char *tok;
	uint64_t g;

	if ((tok = cred_bearer(c, &g)) == NULL)
		return NULL;
	if (c->authz == NULL || tok != c->authz_tok || g != c->authz_gen) {
		cred_authz_clear(c);
		c->authz = xasprintf("Authorization: Bearer %s\r\n", tok);
		c->authz_len = strlen(c->authz);
		c->authz_tok = tok;
		c->authz_gen = g;
	}
	*len = c->authz_len;
	*gen = g;
	return c->authz;
}

int
cred_sign(struct cred *c, struct evbuffer *head, struct evbuffer *body)
{
	struct evbuffer_iovec v[16], out;
	struct evbuffer_ptr eol;
	struct sigv4_msg m;
	struct sigv4_sig sig;
	char method[16], hash[SIGV4_HEX];
	const char *line, *sp1, *sp2, *q;
	size_t eol_len, llen;
	ssize_t n;
	int i, nv;

	eol = evbuffer_search_eol(head, NULL, &eol_len, EVBUFFER_EOL_CRLF);
	if (eol.pos <= 0 ||
	    (line = (const char *)evbuffer_pullup(head, eol.pos)) == NULL)
		return -1;
	llen = (size_t)eol.pos;
	if ((sp1 = memchr(line, ' ', llen)) == NULL ||
	    (sp2 = memrchr(line, ' ', llen)) == NULL || sp2 <= sp1 ||
	    (size_t)(sp1 - line) >= sizeof(method))
		return -1;
	memcpy(method, line, (size_t)(sp1 - line));
	method[sp1 - line] = '\0';
	memset(&m, 0, sizeof(m));
	m.method = method;
	m.path = sp1 + 1;
	if ((q = memchr(m.path, '?', (size_t)(sp2 - m.path))) != NULL) {
		m.path_len = (size_t)(q - m.path);
		m.query = q + 1;
		m.query_len = (size_t)(sp2 - m.query);
	} else
		m.path_len = (size_t)(sp2 - m.path);
	m.host = c->host;
	m.host_len = strlen(c->host);
	if (body != NULL && evbuffer_get_length(body) > 0) {
		sigv4_body_init(c->body);
		nv = evbuffer_peek(body, -1, NULL, v, nitems(v));
		if (nv > (int)nitems(v))
			/* Many pieces: hash it whole. */
			sigv4_body_update(c->body, evbuffer_pullup(body, -1),
			    evbuffer_get_length(body));
		else
			for (i = 0; i < nv; i++)
				sigv4_body_update(c->body, v[i].iov_base,
				    v[i].iov_len);
		if (sigv4_body_final(c->body, hash) == -1)
			return -1;
		m.payload_hash = hash;
	}
	if (sigv4_sign(c->signer, &m, units_now_ms() / 1000, &sig) == -1)
		return -1;
	n = (ssize_t)sigv4_head_len(&sig);
	if (evbuffer_reserve_space(head, n, &out, 1) != 1)
		fatalx("%s: out of memory", __func__);
	if ((n = sigv4_head(&sig, out.iov_base, out.iov_len)) == -1)
		return -1;
	out.iov_len = (size_t)n;
	evbuffer_commit_space(head, &out, 1);
	return 0;
}

/* "NAME: VALUE". Caller frees (wipes: it may be a secret). */
static char *
cred_header(const char *name, const char *value)
{
	return xasprintf("%s: %s", name, value);
}

int
cred_headers(struct cred *c, const char *method, const char *url,
    const char *body, size_t len, char **hdrs, char *why, size_t whylen)
{
	struct sigv4_msg m;
	struct sigv4_sig sig;
	char hash[SIGV4_HEX];
	const char *tok, *p, *q;
	int n = 0;

	switch (cred_kind(c)) {
	case CRED_NONE:
		return 0;
	case CRED_BEARER:
		if ((tok = cred_bearer(c, NULL)) == NULL) {
			cred_why(c, why, whylen);
			return -1;
		}
		hdrs[n] = xasprintf("Authorization: Bearer %s", tok);
		return 1;
	case CRED_SIGV4:
		break;
	}
	/* The path and query of URL, as libcurl sends them. */
	if ((p = strstr(url, "://")) == NULL ||
	    (p = strchr(p + 3, '/')) == NULL)
		p = "/";
	memset(&m, 0, sizeof(m));
	m.method = method;
	m.path = p;
	if ((q = strchr(p, '?')) != NULL) {
		m.path_len = (size_t)(q - p);
		m.query = q + 1;
		m.query_len = strlen(q + 1);
	} else
		m.path_len = strlen(p);
	m.host = c->host;
	m.host_len = strlen(c->host);
	if (body != NULL) {
		sigv4_body_init(c->body);
		sigv4_body_update(c->body, body, len);
		if (sigv4_body_final(c->body, hash) == -1)
			goto fail;
		m.payload_hash = hash;
	}
	if (sigv4_sign(c->signer, &m, units_now_ms() / 1000, &sig) == -1)
		goto fail;
	hdrs[n++] = cred_header("X-Amz-Date", sig.date);
	if (sig.token != NULL)
		hdrs[n++] = cred_header("X-Amz-Security-Token", sig.token);
	if (sig.content_sha256)
		hdrs[n++] =
		    cred_header("X-Amz-Content-Sha256", sig.payload_hash);
	hdrs[n++] = cred_header("Authorization", sig.auth);
	explicit_bzero(&sig, sizeof(sig));
	return n;
fail:
	snprintf(why, whylen, "the %s catalog's request cannot be signed",
	    c->name);
	return -1;
}

void
cred_headers_clear(char **hdrs, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		secret_free_str(hdrs[i]);
		hdrs[i] = NULL;
	}
}

json_t *
cred_status_json(const struct cred *c)
{
	json_t *j;

	j = json_pack("{ss}", "mode", conf_cred_name(c->mode));
	if (j == NULL)
		fatalx("%s: out of memory", __func__);
	if (c->holder != NULL)
		json_object_set_new(j, "token", token_status_json(c->holder));
	if (c->signer != NULL) {
		json_object_set_new(j, "region", json_string(c->region));
		json_object_set_new(j, "service", json_string(c->service));
		json_object_set_new(j, "access_key_id",
		    json_string(sigv4_access_key_id(c->signer)));
		json_object_set_new(j, "credentials", json_string(c->source));
	}
	json_object_set_new(j, "on_requests", json_boolean(cred_on_data(c)));
	return j;
}
