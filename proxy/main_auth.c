/*
 * floe: main_auth.c -- who proves what to whom, as the floe process sets
 * it up at start and on reload: the clients' verifier ([auth]), floe's
 * credential to each catalog (started, and replaced by a reload), and
 * what the log says of both. Owns nothing: the verifier and credentials
 * are the struct floe's.
 */
#include <stdio.h>

#include "lib/log.h"
#include "policy/auth.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/discover.h"
#include "proxy/floe.h"
#include "proxy/main_impl.h"
#include "proxy/token.h"
#include "proxy/upstream.h"
#include "routing/route.h"

static void floe_cred_changed_cb(struct cred *, void *);

/* Load the [auth] verifier into *OUT. 0, or -1 with ERR. */
int
floe_load_auth(const struct conf *c, struct auth **out, char *err,
    size_t errlen)
{
	int mode = auth_mode_parse(c->auth.mode);

	*out = NULL;
	if (mode == -1) {
		snprintf(err, errlen, "%s: [auth] mode %s: unknown", c->path,
		    c->auth.mode);
		return -1;
	}
	if (mode == AUTH_NONE)
		return 0;
	if ((*out = auth_load(mode, c->auth.token_file, c->auth.jwks_file,
		 c->auth.audience, c->auth.issuer, err, errlen)) == NULL)
		return -1;
	return 0;
}

/*
 * In token and jwt modes a client's credential is floe's, never a
 * catalog's: a catalog without a credential of floe's gets none. Say so, once
 * per such catalog, into BUF (empty when there is nothing to say).
 */
void
floe_credential_note(const struct conf *c, char *buf, size_t len)
{
	int mode = auth_mode_parse(c->auth.mode), i;
	size_t n = 0;

	if (len > 0)
		buf[0] = '\0';
	if (mode != AUTH_TOKEN && mode != AUTH_JWT)
		return;
	for (i = 0; i < ROUTE_NSIDES && n < len; i++)
		if (c->target[i].auth == CONF_CRED_NONE)
			n += snprintf(buf + n, len - n,
			    "%s[%s] has no credential of floe's (auth, "
			    "token_file): with [auth] mode %s it gets none (the "
			    "clients' tokens are floe's; mode passthrough "
			    "forwards them)",
			    n > 0 ? "\n" : "", route_side_name(i),
			    c->auth.mode);
}

/* Say how clients are authenticated. */
void
floe_log_auth(const struct floe *f)
{
	char note[512];

	switch (auth_mode(f->auth)) {
	case AUTH_NONE:
		break;
	case AUTH_TOKEN:
		log_info("client authentication: token (%zu clients)",
		    auth_count(f->auth));
		break;
	case AUTH_JWT:
		log_info("client authentication: jwt (%zu keys)",
		    auth_count(f->auth));
		break;
	case AUTH_PASSTHROUGH:
		log_info("client authentication: passthrough (the catalogs "
			 "check the clients' tokens)");
		break;
	}
	floe_credential_note(f->conf, note, sizeof(note));
	if (note[0] != '\0')
		log_info("%s", note);
}

/* Say how floe authenticates to catalog SIDE. */
void
floe_log_cred(const struct floe *f, int side)
{
	const struct conf_target *t = &f->conf->target[side];
	const struct cred *c = f->cred[side];
	struct token_info ti;

	switch (cred_mode(c)) {
	case CONF_CRED_OAUTH2:
	case CONF_CRED_GOOGLE:
		token_info(cred_token(c), &ti);
		log_info("the %s catalog: %s, tokens from %s (%s)%s",
		    route_side_name(side), conf_cred_name(cred_mode(c)),
		    ti.endpoint, ti.grant,
		    cred_on_data(c) ? "" :
				      "; on floe's own calls only "
				      "(passthrough)");
		break;
	case CONF_CRED_SIGV4:
		log_info("the %s catalog: sigv4, %s %s", route_side_name(side),
		    t->sigv4_region, t->sigv4_service);
		break;
	case CONF_CRED_TOKEN:
		log_info("the %s catalog: token from %s%s",
		    route_side_name(side), t->token_file,
		    cred_on_data(c) ? "" :
				      "; on floe's own calls only "
				      "(passthrough)");
		break;
	default:
		break;
	}
}

/* The credential of catalog SIDE as T says, or NULL (logged). */
struct cred *
floe_new_cred(struct floe *f, const struct conf_target *t, int side)
{
	struct cred *c;
	char err[512];

	if ((c = cred_new(f->base, f->fetch, t, route_side_name(side), err,
		 sizeof(err))) == NULL)
		log_warnx("%s: the %s catalog: %s", __func__,
		    route_side_name(side), err);
	return c;
}

/*
 * cred_changed_cb: a catalog's first token (or one after an outage) came.
 * A config not read yet is read now, not after discover's backoff.
 */
static void
floe_cred_changed_cb(struct cred *c, void *arg)
{
	struct floe *f = arg;
	int i;

	for (i = 0; i < ROUTE_NSIDES; i++)
		if (f->cred[i] == c && cred_is_ready(c) &&
		    f->discover != NULL && !f->cat[i]->known)
			discover_kick(f->discover);
}

/* Make C (taken) the credential of catalog SIDE, and start it. */
void
floe_set_cred(struct floe *f, int side, struct cred *c)
{
	cred_on_changed(c, floe_cred_changed_cb, f);
	cred_set_passthrough(c, auth_mode(f->auth) == AUTH_PASSTHROUGH);
	upstream_set_cred(f->up[side], c);
	cred_free(f->cred[side]);
	f->cred[side] = c;
	cred_start(c);
}
