/*
 * floe: main_stats.c -- the floe process's own parts of GET /status and
 * /metrics (its answers and readiness, each catalog and its credential,
 * the cache, the memo, the rollback log's health), added to the stats registry
 * at start-up ahead of the admin API's and the triggers'.
 */
#include <sys/types.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/version.h"
#include "cache/cache.h"
#include "cache/memo.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/discover.h"
#include "proxy/floe.h"
#include "proxy/main_impl.h"
#include "proxy/server.h"
#include "proxy/stats.h"
#include "proxy/token.h"
#include "proxy/upstream.h"
#include "policy/rlog.h"
#include "routing/route.h"

static json_t *floe_status_cb(void *);
static json_t *floe_catalogs_cb(void *);
static json_t *floe_cache_cb(void *);
static bool floe_catalog_is_up(const struct floe *, int);
static void floe_metrics_cb(struct evbuffer *, void *);
static void floe_cache_metrics_cb(struct evbuffer *, void *);
static json_t *floe_memo_cb(void *);
static void floe_memo_metrics_cb(struct evbuffer *, void *);
static void floe_cred_metrics_cb(struct evbuffer *, void *);
static json_t *floe_rlog_cb(void *);
static void floe_rlog_metrics_cb(struct evbuffer *, void *);

/* stats_status_cb: the rollback log's health. */
static json_t *
floe_rlog_cb(void *arg)
{
	struct floe *f = arg;
	struct rlog_stats rs;

	rlog_stats(f->rlog, &rs);
	return json_pack("{s:s, s:I, s:I, s:s?}", "path", f->conf->rollback_log,
	    "pending", (json_int_t)rs.pending, "failed", (json_int_t)rs.failed,
	    "error", rs.err != 0 ? log_strerror(rs.err) : NULL);
}

/* stats_metrics_cb: the rollback log's health. */
static void
floe_rlog_metrics_cb(struct evbuffer *b, void *arg)
{
	struct floe *f = arg;
	struct rlog_stats rs;

	rlog_stats(f->rlog, &rs);
	evbuffer_add_printf(b,
	    "# HELP floe_rollback_log_pending Rollback log lines not yet "
	    "written (kept in the flag store, retried every second).\n"
	    "# TYPE floe_rollback_log_pending gauge\n"
	    "floe_rollback_log_pending %zu\n"
	    "# HELP floe_rollback_log_failures_total Rollback log appends "
	    "that failed.\n"
	    "# TYPE floe_rollback_log_failures_total counter\n"
	    "floe_rollback_log_failures_total %llu\n",
	    rs.pending, (unsigned long long)rs.failed);
}

/* stats_status_cb: floe's own keys, at the top of GET /status. */
static json_t *
floe_status_cb(void *arg)
{
	struct floe *f = arg;
	struct cache_stats cs;
	unsigned conns;
	size_t held;

	floe_front_figures(f, &conns, &held, &cs);
	return json_pack(
	    "{s:s, s:b, s:b, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I}}", "version",
	    version_get(), "ready", floe_is_ready(f), "draining", f->draining,
	    "uptime_s", (json_int_t)((units_now_ms() - f->started_ms) / 1000),
	    "requests", (json_int_t)f->stats.requests, "local_errors",
	    (json_int_t)f->stats.local_errors, "connections", (json_int_t)conns,
	    "output", "held_bytes", (json_int_t)held, "budget",
	    (json_int_t)f->conf->output_budget, "refused",
	    (json_int_t)f->stats.refused_full);
}

/* stats_status_cb: each catalog's pool, config and counters. */
static json_t *
floe_catalogs_cb(void *arg)
{
	struct floe *f = arg;
	json_t *sides, *s;
	int i;

	sides = json_object();
	for (i = 0; i < ROUTE_NSIDES; i++) {
		s = upstream_status_json(f->up[i]);
		json_object_set_new(s, "config_known",
		    json_boolean(f->cat[i]->known));
		if (f->cat[i]->prefix != NULL)
			json_object_set_new(s, "prefix",
			    json_string(f->cat[i]->prefix));
		if (f->cat[i]->last_error != NULL)
			json_object_set_new(s, "last_error",
			    json_string(f->cat[i]->last_error));
		json_object_set_new(s, "requests",
		    json_integer(f->stats.side[i].requests));
		json_object_set_new(s, "errors_5xx",
		    json_integer(f->stats.side[i].errors_5xx));
		json_object_set_new(s, "failures",
		    json_integer(f->stats.side[i].failures));
		json_object_set_new(s, "memo_hits",
		    json_integer(f->stats.side[i].memo_hits));
		json_object_set_new(s, "auth", cred_status_json(f->cred[i]));
		json_object_set_new(sides, route_side_name(i), s);
	}
	return sides;
}

/* stats_status_cb: the LoadTable cache. */
static json_t *
floe_cache_cb(void *arg)
{
	struct floe *f = arg;
	struct cache_stats cs;
	unsigned conns;
	size_t held;

	floe_front_figures(f, &conns, &held, &cs);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
	    "budget", (json_int_t)cs.budget, "bytes", (json_int_t)cs.bytes,
	    "entries", (json_int_t)cs.entries, "hits", (json_int_t)cs.hits,
	    "misses", (json_int_t)cs.misses, "revalidations",
	    (json_int_t)cs.revalidations, "evictions", (json_int_t)cs.evictions,
	    "expirations", (json_int_t)cs.expirations, "invalidations",
	    (json_int_t)cs.invalidations, "ttl_ms",
	    (json_int_t)f->conf->cache_ttl_ms);
}

/*
 * stats_status_cb: the memo of checked answers (with workers = N, the
 * sum of the workers' memos).
 */
static json_t *
floe_memo_cb(void *arg)
{
	struct floe *f = arg;
	struct memo_stats ms;

	floe_memo_figures(f, &ms);
	return json_pack("{s:I, s:I, s:I}", "budget", (json_int_t)ms.budget,
	    "bytes", (json_int_t)ms.bytes, "entries", (json_int_t)ms.entries);
}

/*
 * Catalog SIDE is up: its config was read, and the last read of it did
 * not fail (discover.c reads it again every config_refresh, and at once
 * after a failure).
 */
static bool
floe_catalog_is_up(const struct floe *f, int side)
{
	return f->cat[side]->known && f->cat[side]->last_error == NULL;
}

/* stats_metrics_cb: floe's answers and readiness, and each catalog's. */
static void
floe_metrics_cb(struct evbuffer *b, void *arg)
{
	struct floe *f = arg;
	struct cache_stats cs;
	unsigned conns;
	size_t held;
	int i;

	floe_front_figures(f, &conns, &held, &cs);
	stats_requests_metrics(b, &f->stats);
	evbuffer_add_printf(b,
	    "# HELP floe_local_errors_total ErrorModel answers floe made "
	    "itself.\n"
	    "# TYPE floe_local_errors_total counter\n"
	    "floe_local_errors_total %llu\n"
	    "# HELP floe_ready Both catalog configs known and the store "
	    "open.\n"
	    "# TYPE floe_ready gauge\n"
	    "floe_ready %d\n"
	    "# HELP floe_connections Open client connections.\n"
	    "# TYPE floe_connections gauge\n"
	    "floe_connections %u\n"
	    "# HELP floe_build_info The version floe was built from.\n"
	    "# TYPE floe_build_info gauge\n"
	    "floe_build_info{version=\"%s\"} 1\n"
	    "# HELP floe_output_held_bytes Bytes of answers clients have "
	    "not taken yet.\n"
	    "# TYPE floe_output_held_bytes gauge\n"
	    "floe_output_held_bytes %zu\n"
	    "# HELP floe_output_refused_total Requests refused (503) while "
	    "floe held its output_budget.\n"
	    "# TYPE floe_output_refused_total counter\n"
	    "floe_output_refused_total %llu\n",
	    (unsigned long long)f->stats.local_errors, floe_is_ready(f) ? 1 : 0,
	    conns, version_get(), held,
	    (unsigned long long)f->stats.refused_full);
	evbuffer_add_printf(b,
	    "# HELP floe_catalog_up The catalog's config was read and its "
	    "last answer was not a failure of floe's connection to it.\n"
	    "# TYPE floe_catalog_up gauge\n");
	for (i = 0; i < ROUTE_NSIDES; i++)
		evbuffer_add_printf(b, "floe_catalog_up{side=\"%s\"} %d\n",
		    route_side_name(i), floe_catalog_is_up(f, i) ? 1 : 0);
	evbuffer_add_printf(b,
	    "# HELP floe_upstream_requests_total Requests forwarded per "
	    "catalog.\n"
	    "# TYPE floe_upstream_requests_total counter\n"
	    "# HELP floe_upstream_5xx_total 5xx answers per catalog.\n"
	    "# TYPE floe_upstream_5xx_total counter\n"
	    "# HELP floe_upstream_failures_total Connect failures, "
	    "timeouts and garbage per catalog.\n"
	    "# TYPE floe_upstream_failures_total counter\n"
	    "# HELP floe_upstream_memo_hits_total LoadTable answers per "
	    "catalog equal to the last one checked, not checked again.\n"
	    "# TYPE floe_upstream_memo_hits_total counter\n");
	for (i = 0; i < ROUTE_NSIDES; i++)
		evbuffer_add_printf(b,
		    "floe_upstream_requests_total{side=\"%s\"} %llu\n"
		    "floe_upstream_5xx_total{side=\"%s\"} %llu\n"
		    "floe_upstream_failures_total{side=\"%s\"} %llu\n"
		    "floe_upstream_memo_hits_total{side=\"%s\"} %llu\n",
		    route_side_name(i),
		    (unsigned long long)f->stats.side[i].requests,
		    route_side_name(i),
		    (unsigned long long)f->stats.side[i].errors_5xx,
		    route_side_name(i),
		    (unsigned long long)f->stats.side[i].failures,
		    route_side_name(i),
		    (unsigned long long)f->stats.side[i].memo_hits);
}

/* stats_metrics_cb: the LoadTable cache. */
static void
floe_cache_metrics_cb(struct evbuffer *b, void *arg)
{
	struct floe *f = arg;
	struct cache_stats cs;
	unsigned conns;
	size_t held;

	floe_front_figures(f, &conns, &held, &cs);
	evbuffer_add_printf(b,
	    "# HELP floe_cache_hits_total LoadTable answers served from the "
	    "cache.\n"
	    "# TYPE floe_cache_hits_total counter\n"
	    "floe_cache_hits_total %llu\n"
	    "# HELP floe_cache_misses_total LoadTable lookups the cache could "
	    "not answer.\n"
	    "# TYPE floe_cache_misses_total counter\n"
	    "floe_cache_misses_total %llu\n"
	    "# HELP floe_cache_revalidations_total Expired entries a catalog "
	    "confirmed with 304.\n"
	    "# TYPE floe_cache_revalidations_total counter\n"
	    "floe_cache_revalidations_total %llu\n"
	    "# HELP floe_cache_evictions_total Entries dropped for the byte "
	    "budget.\n"
	    "# TYPE floe_cache_evictions_total counter\n"
	    "floe_cache_evictions_total %llu\n"
	    "# HELP floe_cache_expirations_total Entries dropped because "
	    "their cache_ttl ran out.\n"
	    "# TYPE floe_cache_expirations_total counter\n"
	    "floe_cache_expirations_total %llu\n"
	    "# HELP floe_cache_invalidations_total Entries dropped by writes "
	    "through floe.\n"
	    "# TYPE floe_cache_invalidations_total counter\n"
	    "floe_cache_invalidations_total %llu\n"
	    "# HELP floe_cache_bytes Bytes the cache holds.\n"
	    "# TYPE floe_cache_bytes gauge\n"
	    "floe_cache_bytes %llu\n"
	    "# HELP floe_cache_entries Answers the cache holds.\n"
	    "# TYPE floe_cache_entries gauge\n"
	    "floe_cache_entries %llu\n",
	    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
	    (unsigned long long)cs.revalidations,
	    (unsigned long long)cs.evictions,
	    (unsigned long long)cs.expirations,
	    (unsigned long long)cs.invalidations, (unsigned long long)cs.bytes,
	    (unsigned long long)cs.entries);
}

/* stats_metrics_cb: the memo of checked answers (the workers' summed). */
static void
floe_memo_metrics_cb(struct evbuffer *b, void *arg)
{
	struct floe *f = arg;
	struct memo_stats ms;

	floe_memo_figures(f, &ms);
	evbuffer_add_printf(b,
	    "# HELP floe_memo_bytes Bytes the memo of checked answers holds "
	    "(every worker's).\n"
	    "# TYPE floe_memo_bytes gauge\n"
	    "floe_memo_bytes %llu\n"
	    "# HELP floe_memo_entries Tables the memo of checked answers "
	    "holds an answer of, per side (every worker's).\n"
	    "# TYPE floe_memo_entries gauge\n"
	    "floe_memo_entries %llu\n"
	    "# HELP floe_memo_budget_bytes check_memo_size, times the "
	    "workers.\n"
	    "# TYPE floe_memo_budget_bytes gauge\n"
	    "floe_memo_budget_bytes %llu\n",
	    (unsigned long long)ms.bytes, (unsigned long long)ms.entries,
	    (unsigned long long)ms.budget);
}

/* stats_metrics_cb: the access tokens floe holds for the catalogs. */
static void
floe_cred_metrics_cb(struct evbuffer *b, void *arg)
{
	struct floe *f = arg;
	const struct token *t;
	struct token_info ti;
	int64_t left;
	int i;

	evbuffer_add_printf(b,
	    "# HELP floe_catalog_token_ok 1 while floe holds an access token "
	    "for the catalog.\n"
	    "# TYPE floe_catalog_token_ok gauge\n"
	    "# HELP floe_catalog_token_refresh_failing 1 while the catalog's "
	    "token endpoint fails.\n"
	    "# TYPE floe_catalog_token_refresh_failing gauge\n"
	    "# HELP floe_catalog_token_expiry_seconds Seconds the current "
	    "token has left.\n"
	    "# TYPE floe_catalog_token_expiry_seconds gauge\n"
	    "# HELP floe_catalog_token_fetches_total Token requests sent.\n"
	    "# TYPE floe_catalog_token_fetches_total counter\n"
	    "# HELP floe_catalog_token_failures_total Token requests that "
	    "failed.\n"
	    "# TYPE floe_catalog_token_failures_total counter\n"
	    "# HELP floe_catalog_token_early_refreshes_total Refreshes a "
	    "catalog's 401 started.\n"
	    "# TYPE floe_catalog_token_early_refreshes_total counter\n");
	for (i = 0; i < ROUTE_NSIDES; i++) {
		if ((t = cred_token(f->cred[i])) == NULL)
			continue;
		token_info(t, &ti);
		left = ti.expires_ms != 0 ? ti.expires_ms - units_now_ms() : 0;
		evbuffer_add_printf(b,
		    "floe_catalog_token_ok{side=\"%s\"} %d\n"
		    "floe_catalog_token_refresh_failing{side=\"%s\"} %d\n"
		    "floe_catalog_token_expiry_seconds{side=\"%s\"} %lld\n"
		    "floe_catalog_token_fetches_total{side=\"%s\"} %llu\n"
		    "floe_catalog_token_failures_total{side=\"%s\"} %llu\n"
		    "floe_catalog_token_early_refreshes_total{side=\"%s\"} "
		    "%llu\n",
		    route_side_name(i), ti.expires_ms != 0 ? 1 : 0,
		    route_side_name(i),
		    ti.state == TOKEN_FAILING || ti.state == TOKEN_GONE ? 1 : 0,
		    route_side_name(i), (long long)(left > 0 ? left / 1000 : 0),
		    route_side_name(i), (unsigned long long)ti.fetches,
		    route_side_name(i), (unsigned long long)ti.failures,
		    route_side_name(i), (unsigned long long)ti.early);
	}
}

/*
 * floe's parts of GET /status and /metrics, first; the admin API's and
 * the triggers' come after them, in the order their modules start.
 */
void
floe_stats_add(struct floe *f)
{
	stats_add_status(&f->stats, NULL, floe_status_cb, f);
	stats_add_status(&f->stats, "config", floe_config_status_cb, f);
	stats_add_status(&f->stats, "catalogs", floe_catalogs_cb, f);
	stats_add_status(&f->stats, "cache", floe_cache_cb, f);
	stats_add_status(&f->stats, "memo", floe_memo_cb, f);
	stats_add_status(&f->stats, "rollback_log", floe_rlog_cb, f);
	stats_add_metrics(&f->stats, floe_metrics_cb, f);
	stats_add_metrics(&f->stats, floe_cache_metrics_cb, f);
	stats_add_metrics(&f->stats, floe_memo_metrics_cb, f);
	stats_add_metrics(&f->stats, floe_cred_metrics_cb, f);
	stats_add_metrics(&f->stats, floe_rlog_metrics_cb, f);
}
