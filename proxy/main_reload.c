/*
 * floe: main_reload.c -- read floe.conf again, on SIGHUP or POST /reload.
 * A file with errors changes nothing, and each error is said. Keys taken
 * only at start-up (conf_keep_restart) keep their running value and are
 * named; everything else applies at once: catalog tokens and timeouts,
 * policy, auth, the certificate, the cache, the access log. Each conf
 * applied is a new generation, shown in GET /status.
 */
#include <sys/types.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/sdnotify.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"
#include "cache/memo.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/discover.h"
#include "proxy/floe.h"
#include "proxy/main_impl.h"
#include "proxy/server.h"
#include "proxy/tlsctx.h"
#include "proxy/upstream.h"
#include "proxy/watch.h"
#include "policy/auth.h"

#define FLOE_RESTART_KEYS 32 /* restart-only keys a reload can name */

static json_t *floe_reload_refused(struct floe *, json_t *, const char *);
static json_t *floe_reload_outcome(struct floe *, bool, json_t *, json_t *,
    const char *);

/* The outcome of a reload, kept for GET /status. Caller decrefs. */
static json_t *
floe_reload_outcome(struct floe *f, bool applied, json_t *errors,
    json_t *restart, const char *message)
{
	char at[64];
	json_t *o;

	units_time_format(units_now_ms(), at, sizeof(at));
	o = json_pack("{s:b, s:s, s:I, s:o, s:o, s:s, s:s}", "applied", applied,
	    "path", f->conf_path, "generation", (json_int_t)f->conf_gen,
	    "errors", errors, "restart_needed", restart, "message", message,
	    "at", at);
	if (o == NULL)
		fatalx("reload: out of memory");
	json_decref(f->last_reload);
	f->last_reload = json_incref(o);
	(void)sdnotifyf("READY=1\nSTATUS=%s", message);
	return o;
}

/* A reload that changed nothing: ERRORS say why. */
static json_t *
floe_reload_refused(struct floe *f, json_t *errors, const char *what)
{
	json_t *o;
	char *msg;

	msg = xasprintf("%s; keeping the running configuration (generation "
			"%llu)",
	    what, (unsigned long long)f->conf_gen);
	o = floe_reload_outcome(f, false, errors, json_array(), msg);
	free(msg);
	return o;
}

/* SIGHUP, POST /reload: read the conf again; say what applied. */
json_t *
floe_reload(struct floe *f)
{
	const char *keep[FLOE_RESTART_KEYS];
	struct conf_errors errs;
	struct conf *nc;
	struct auth *na;
	struct cred *ncred[ROUTE_NSIDES] = { NULL };
	json_t *errors, *restart;
	char err[512], what[600];
	size_t n, i;
	int side;

	(void)sdnotifyf("RELOADING=1\nMONOTONIC_USEC=%lld\nSTATUS=reloading",
	    (long long)units_mono_us());
	errors = json_array();
	if ((nc = floe_conf_read(f, &errs)) == NULL) {
		for (i = 0; i < errs.n; i++) {
			if (errs.n == 1)
				log_warnx("reload: %s; keeping the running "
					  "configuration",
				    errs.msg[i]);
			else
				log_warnx("reload: %s", errs.msg[i]);
			json_array_append_new(errors, json_string(errs.msg[i]));
		}
		snprintf(what, sizeof(what), "%zu error%s in %s", errs.n,
		    errs.n == 1 ? "" : "s", f->conf_path);
		if (errs.n > 1)
			log_warnx("reload: %s; keeping the running "
				  "configuration",
			    what);
		conf_errors_clear(&errs);
		return floe_reload_refused(f, errors, what);
	}
	n = conf_keep_restart(nc, f->conf, keep, nitems(keep));
	/*
	 * New client tokens or keys, and the certificate read again: open
	 * connections keep the context they started with.
	 */
	if (floe_load_auth(nc, &na, err, sizeof(err)) == -1) {
		log_warnx("reload: %s; keeping the running configuration", err);
		json_array_append_new(errors, json_string(err));
		conf_free(nc);
		return floe_reload_refused(f, errors, err);
	}
	if (f->tls != NULL &&
	    tlsctx_reload(f->tls, nc->tls_cert, nc->tls_key, err,
		sizeof(err)) == -1) {
		log_warnx("reload: %s; keeping the running configuration", err);
		json_array_append_new(errors, json_string(err));
		auth_free(na);
		conf_free(nc);
		return floe_reload_refused(f, errors, err);
	}
	/*
	 * Each catalog's credential is built again, its secrets read again
	 * (a rotated client secret or AWS key applies at once). A token
	 * holder whose keys did not change takes the running token over
	 * rather than ask for a new one: its next refresh uses the new
	 * secret.
	 */
	for (side = 0; side < ROUTE_NSIDES; side++) {
		if ((ncred[side] = floe_new_cred(f, &nc->target[side], side)) ==
		    NULL) {
			snprintf(err, sizeof(err),
			    "the %s catalog's credential does not load",
			    route_side_name(side));
			log_warnx("reload: %s; keeping the running "
				  "configuration",
			    err);
			json_array_append_new(errors, json_string(err));
			cred_free(ncred[0]);
			auth_free(na);
			conf_free(nc);
			return floe_reload_refused(f, errors, err);
		}
	}
	auth_free(f->auth);
	f->auth = na;
	/* Same uris: new tokens, timeouts and policy apply from now on. */
	for (side = 0; side < ROUTE_NSIDES; side++) {
		upstream_retarget(f->up[side], &nc->target[side]);
		if (conf_cred_same(&nc->target[side], &f->conf->target[side]))
			cred_adopt(ncred[side], f->cred[side]);
		floe_set_cred(f, side, ncred[side]);
		cred_set_passthrough(f->cred[side],
		    auth_mode(f->auth) == AUTH_PASSTHROUGH);
	}
	conf_free(f->conf);
	f->conf = nc;
	f->conf_gen++;
	f->conf_loaded_ms = units_now_ms();
	cache_configure(f->cache, nc->cache_size, nc->cache_ttl_ms);
	memo_configure(f->memo, nc->check_memo_size);
	server_set_budget(nc->output_budget);
	restart = json_array();
	for (i = 0; i < n && i < nitems(keep); i++) {
		log_warnx("reload: %s changes only on restart; the running "
			  "value stays until then",
		    keep[i]);
		json_array_append_new(restart, json_string(keep[i]));
	}
	if (n == 0)
		snprintf(what, sizeof(what),
		    "configuration %s applied (generation %llu)", f->conf_path,
		    (unsigned long long)f->conf_gen);
	else
		snprintf(what, sizeof(what),
		    "configuration %s applied (generation %llu) but for %zu "
		    "key%s that change%s only on restart",
		    f->conf_path, (unsigned long long)f->conf_gen, n,
		    n == 1 ? "" : "s", n == 1 ? "s" : "");
	log_info("reload: %s", what);
	if (f->tls != NULL)
		log_info("reload: TLS certificate %s", tlsctx_subject(f->tls));
	floe_log_auth(f);
	for (side = 0; side < ROUTE_NSIDES; side++)
		floe_log_cred(f, side);
	floe_open_access_log(f);
	discover_kick(f->discover);
	if (f->watch != NULL)
		watch_reload(f->watch);
	/* Each worker reads the text this process applied, itself. */
	floe_conf_publish(f);
	floe_workers_signal(f, SIGHUP);
	return floe_reload_outcome(f, true, errors, restart, what);
}

/* stats_status_cb: the running conf, and the last reload's outcome. */
json_t *
floe_config_status_cb(void *arg)
{
	struct floe *f = arg;
	char at[64];
	json_t *o;

	units_time_format(f->conf_loaded_ms, at, sizeof(at));
	o = json_pack("{s:s, s:I, s:s}", "path", f->conf_path, "generation",
	    (json_int_t)f->conf_gen, "loaded_at", at);
	if (o != NULL && f->last_reload != NULL)
		json_object_set(o, "last_reload", f->last_reload);
	return o;
}
