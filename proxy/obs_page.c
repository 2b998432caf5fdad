/*
 * floe: obs_page.c -- the status page: one HTML page made here, no script,
 * no external asset, refreshing itself every 10 s. The overview shows the
 * catalogs' health, the waves counted by state, the waves that need a
 * look (rolled back, or past 80 % of a trigger's threshold), then every
 * wave as a card (state, since, canary share, error ratio and freshness
 * lag against their thresholds, the last rollback's evidence, its last
 * events), 50 cards a page. Between the catalogs and the waves, what
 * floe holds: its output against output_budget, the cache, the memo. ?wave=N
 * shows one wave with its whole timeline, 100 events a page, newest first.
 * Everything that comes from data is HTML-escaped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/version.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "proxy/admin.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/floe.h"
#include "proxy/obs_impl.h"
#include "proxy/stats.h"
#include "proxy/token.h"
#include "proxy/watch.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

#define PAGE_WAVES 50 /* wave cards per page */
#define PAGE_EVENTS 100 /* timeline entries per page of one wave */
#define PAGE_CARD_EVENTS 3 /* the last events on a card */
#define PAGE_ATTENTION 20 /* cards in "needs a look" at most */

/* The query: ?wave=N&page=P&before=SEQ. */
struct page_q {
	bool has_wave;
	uint32_t wave;
	unsigned page; /* 1-based */
	uint64_t before; /* 0: the newest */
};

/* The waves, read once per page. */
struct page_waves {
	struct store_wave *v;
	size_t n;
};

static void page_q_parse(const char *, struct page_q *);
static void page_esc(struct evbuffer *, const char *);
static void page_head(struct obs *, struct evbuffer *);
static void page_catalogs(struct obs *, struct evbuffer *);
static uint64_t page_int(const json_t *, const char *);
static void page_size(uint64_t, struct evbuffer *);
static bool page_held(const char *, const char *, const char *, const json_t *,
    struct evbuffer *);
static void page_memory(struct obs *, struct evbuffer *);
static int page_waves_cb(const struct store_wave *, void *);
static void page_card(struct obs *, const struct store_wave *, bool,
    struct evbuffer *);
static bool page_needs_look(struct obs *, const struct store_wave *);
static json_t *page_event(struct obs *, uint64_t);
static void page_event_li(const json_t *, const char *, struct evbuffer *);
static void page_value(const char *, const json_t *, struct evbuffer *);
static void page_ago(int64_t, int64_t, struct evbuffer *);
static void page_bar(double, struct evbuffer *);
static void page_timeline(struct obs *, uint32_t, uint64_t, struct evbuffer *);

static const char page_css[] =
    "body{font:15px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;"
    "margin:0;background:#f4f5f7;color:#1d2330}"
    "header{background:#1d2330;color:#fff;padding:10px 16px}"
    "header h1{font-size:20px;margin:0 8px 0 0;display:inline}"
    "header span{margin-right:12px;white-space:nowrap}"
    "main{padding:8px 12px;max-width:1400px;margin:auto}"
    "h2{font-size:17px;margin:18px 0 8px}"
    ".grid{display:grid;grid-template-columns:repeat(auto-fill,"
    "minmax(min(100%,340px),1fr));gap:10px}"
    ".card{background:#fff;border:1px solid #d5d9e0;border-radius:6px;"
    "padding:10px 12px;border-left:6px solid #8a93a3;min-width:0}"
    ".card h3{font-size:16px;margin:0 0 4px}"
    ".card h3 a{color:inherit}"
    ".st{font-size:12px;padding:1px 7px;border-radius:9px;color:#fff;"
    "background:#8a93a3;margin-left:6px;vertical-align:middle}"
    ".s-warehouse{border-left-color:#8a93a3}.s-warehouse .st{background:#8a93a3}"
    ".s-canary{border-left-color:#d08a00}.s-canary .st{background:#d08a00}"
    ".s-lakehouse{border-left-color:#1f7a3a}.s-lakehouse .st{background:#1f7a3a}"
    ".s-rolled_back{border-left-color:#c0262d}.s-rolled_back .st{background:#c0262d}"
    ".s-frozen{border-left-color:#2364aa}.s-frozen .st{background:#2364aa}"
    ".s-retired{border-left-color:#4b4f58}.s-retired .st{background:#4b4f58}"
    "dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;"
    "margin:6px 0}dt{color:#5b6472}dd{margin:0;overflow-wrap:anywhere}"
    ".bar{display:inline-block;width:80px;height:8px;background:#e3e6eb;"
    "border-radius:4px;vertical-align:middle;margin-left:6px}"
    ".bar i{display:block;height:8px;border-radius:4px;background:#1f7a3a}"
    ".bar i.warn{background:#d08a00}.bar i.over{background:#c0262d}"
    ".ev{font-size:13px;border-left:3px solid #d5d9e0;padding-left:8px;"
    "margin:4px 0;overflow-wrap:anywhere}"
    ".ev.rb{border-left-color:#c0262d;background:#fdf1f1}"
    ".ev time{color:#5b6472;margin-right:6px}"
    ".why{font-size:13px;color:#5b6472;overflow-wrap:anywhere}"
    ".evidence{font-size:13px;background:#fdf1f1;border-radius:4px;"
    "padding:4px 6px;overflow-wrap:anywhere}"
    ".chips span{display:inline-block;background:#fff;border:1px solid "
    "#d5d9e0;border-radius:12px;padding:2px 10px;margin:0 6px 6px 0}"
    ".up{color:#1f7a3a;font-weight:600}.down{color:#c0262d;font-weight:600}"
    ".card.warn{border-left-color:#d08a00;background:#fffaf0}"
    "nav a{margin-right:10px}ol{padding-left:0;list-style:none;margin:4px 0}"
    "@media (max-width:480px){body{font-size:14px}main{padding:6px}"
    "header span{display:block}}";

/* Parse QUERY (a=1&b=2) into Q; unknown or bad parts are ignored. */
static void
page_q_parse(const char *query, struct page_q *q)
{
	const char *p = query, *amp, *eq;
	char num[24];
	unsigned long long v;
	size_t len;
	char *end;

	memset(q, 0, sizeof(*q));
	q->page = 1;
	while (p != NULL && *p != '\0') {
		amp = strchr(p, '&');
		len = amp != NULL ? (size_t)(amp - p) : strlen(p);
		eq = memchr(p, '=', len);
		if (eq != NULL && (size_t)(p + len - eq - 1) < sizeof(num) &&
		    p + len - eq - 1 > 0) {
			memcpy(num, eq + 1, (size_t)(p + len - eq - 1));
			num[p + len - eq - 1] = '\0';
			errno = 0;
			v = strtoull(num, &end, 10);
			if (*end == '\0' && errno == 0 && num[0] != '-') {
				if (eq - p == 4 && strncmp(p, "wave", 4) == 0 &&
				    v <= WAVE_MAX) {
					q->has_wave = true;
					q->wave = (uint32_t)v;
				} else if (eq - p == 4 &&
				    strncmp(p, "page", 4) == 0 && v >= 1 &&
				    v < 1000000)
					q->page = (unsigned)v;
				else if (eq - p == 6 &&
				    strncmp(p, "before", 6) == 0)
					q->before = v;
			}
		}
		p = amp != NULL ? amp + 1 : NULL;
	}
}

/* S, HTML-escaped (text and attribute values alike). */
static void
page_esc(struct evbuffer *b, const char *s)
{
	const char *run = s;

	for (; s != NULL && *s != '\0'; s++) {
		const char *r = NULL;

		switch (*s) {
		case '&':
			r = "&amp;";
			break;
		case '<':
			r = "&lt;";
			break;
		case '>':
			r = "&gt;";
			break;
		case '"':
			r = "&quot;";
			break;
		case '\'':
			r = "&#39;";
			break;
		default:
			continue;
		}
		evbuffer_add(b, run, (size_t)(s - run));
		evbuffer_add(b, r, strlen(r));
		run = s + 1;
	}
	if (s != NULL)
		evbuffer_add(b, run, (size_t)(s - run));
}

/* "TIME (5m 2s ago)" for a time THEN_MS, at NOW_MS; 0 is "never". */
static void
page_ago(int64_t then_ms, int64_t now_ms, struct evbuffer *b)
{
	char ts[40], d[32];

	if (then_ms <= 0) {
		evbuffer_add_printf(b, "never moved");
		return;
	}
	units_time_format(then_ms, ts, sizeof(ts));
	units_format_human(now_ms - then_ms, d, sizeof(d));
	evbuffer_add_printf(b, "<time datetime=\"%s\">%s</time> (%s ago)", ts,
	    ts, d);
}

/* A small bar: FRAC of its threshold (1 = at the threshold). */
static void
page_bar(double frac, struct evbuffer *b)
{
	double pct = frac < 0 ? 0 : frac > 1 ? 100 : frac * 100;

	evbuffer_add_printf(b,
	    "<span class=\"bar\"><i class=\"%s\" "
	    "style=\"width:%.0f%%\"></i></span>",
	    frac >= 1	    ? "over" :
		frac >= 0.8 ? "warn" :
			      "",
	    pct);
}

/* The header: version, readiness, uptime, store. */
static void
page_head(struct obs *o, struct evbuffer *b)
{
	struct floe *f = o->f;
	char d[32], ts[40];

	units_format_human(units_now_ms() - f->started_ms, d, sizeof(d));
	units_time_format(units_now_ms(), ts, sizeof(ts));
	evbuffer_add_printf(b,
	    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	    "<meta name=\"viewport\" content=\"width=device-width,"
	    "initial-scale=1\"><meta http-equiv=\"refresh\" content=\"10\">"
	    "<title>floe status</title><style>%s</style></head><body>"
	    "<header><h1><a href=\"/\" style=\"color:inherit\">floe</a></h1>"
	    "<span>version ",
	    page_css);
	page_esc(b, version_get());
	evbuffer_add_printf(b,
	    "</span><span>%s</span><span>up %s</span><span>store %s</span>"
	    "<span>%s</span></header><main>",
	    floe_is_ready(f) ? "ready" : "NOT READY", d,
	    f->store != NULL && store_is_healthy(f->store) ? "healthy" :
							     "FAILING",
	    ts);
}

/* The catalogs' health. */
static void
page_catalogs(struct obs *o, struct evbuffer *b)
{
	struct floe *f = o->f;
	const struct catalog *c;
	const struct token *t;
	struct token_info ti;
	bool up;
	int i;

	evbuffer_add_printf(b, "<h2>Catalogs</h2><div class=\"grid\">");
	for (i = 0; i < ROUTE_NSIDES; i++) {
		c = f->cat[i];
		t = f->cred[i] != NULL ? cred_token(f->cred[i]) : NULL;
		up = c->known && c->last_error == NULL &&
		    (f->cred[i] == NULL || cred_is_ready(f->cred[i]));
		evbuffer_add_printf(b,
		    "<div class=\"card\" id=\"cat-%s\"><h3>%s <span "
		    "class=\"%s\">%s</span></h3><dl><dt>uri</dt><dd>",
		    route_side_name(i), route_side_name(i), up ? "up" : "down",
		    up ? "up" : "down");
		page_esc(b, f->conf->target[i].uri);
		evbuffer_add_printf(b,
		    "</dd><dt>requests</dt><dd>%llu</dd><dt>5xx</dt>"
		    "<dd>%llu</dd><dt>failures</dt><dd>%llu</dd>",
		    (unsigned long long)f->stats.side[i].requests,
		    (unsigned long long)f->stats.side[i].errors_5xx,
		    (unsigned long long)f->stats.side[i].failures);
		if (c->fetched_ms != 0) {
			evbuffer_add_printf(b, "<dt>config read</dt><dd>");
			page_ago(c->fetched_ms, units_now_ms(), b);
			evbuffer_add_printf(b, "</dd>");
		}
		if (c->last_error != NULL) {
			evbuffer_add_printf(b, "<dt>last error</dt><dd>");
			page_esc(b, c->last_error);
			evbuffer_add_printf(b, "</dd>");
		}
		/* floe's access token for it: its state and endpoint. */
		if (t != NULL) {
			token_info(t, &ti);
			evbuffer_add_printf(b, "<dt>token</dt><dd>%s, from ",
			    token_state_name(ti.state));
			page_esc(b, ti.endpoint);
			if (ti.last_error != NULL) {
				evbuffer_add_printf(b, ": ");
				page_esc(b, ti.last_error);
			}
			evbuffer_add_printf(b, "</dd>");
		}
		evbuffer_add_printf(b, "</dl></div>");
	}
	evbuffer_add_printf(b, "</div>");
}

/* O's member KEY, a count (0 if it is not one). */
static uint64_t
page_int(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (uint64_t)v : 0;
}

/* N bytes for people ("16.0 MiB"), escaped. */
static void
page_size(uint64_t n, struct evbuffer *b)
{
	char s[32];

	units_format_size(n, s, sizeof(s));
	page_esc(b, s);
}

/*
 * The card ID, TITLE, of O ({bytes, budget, entries}) from GET /status:
 * "off (KNOB = 0)" for its budget 0 (false), else its bytes of its
 * budget and its entries (true). The caller closes its list and card.
 */
static bool
page_held(const char *id, const char *title, const char *knob, const json_t *o,
    struct evbuffer *b)
{
	evbuffer_add_printf(b,
	    "<div class=\"card\" id=\"%s\" data-budget=\"%llu\" "
	    "data-entries=\"%llu\"><h3>%s</h3><dl>",
	    id, (unsigned long long)page_int(o, "budget"),
	    (unsigned long long)page_int(o, "entries"), title);
	if (page_int(o, "budget") == 0) {
		evbuffer_add_printf(b, "<dt>held</dt><dd>off (%s = 0)</dd>",
		    knob);
		return false;
	}
	evbuffer_add_printf(b, "<dt>held</dt><dd>");
	page_size(page_int(o, "bytes"), b);
	evbuffer_add_printf(b, " of ");
	page_size(page_int(o, "budget"), b);
	evbuffer_add_printf(b, "</dd><dt>entries</dt><dd>%llu</dd>",
	    (unsigned long long)page_int(o, "entries"));
	return true;
}

/*
 * What floe holds, as floectl status shows it and from the same members
 * of GET /status (with workers, the master's are its workers' summed):
 * the answers clients have not read against output_budget (a warning
 * past 80 % of it, or once a request was refused), the LoadTable cache
 * and the memo of checked answers against their sizes.
 */
static void
page_memory(struct obs *o, struct evbuffer *b)
{
	static const char *const keys[] = { "output", "cache", "memo", NULL };
	json_t *st = stats_status_pick(&o->f->stats, keys), *out, *m;
	uint64_t held, budget, refused;
	double frac;
	bool warn;

	if (st == NULL)
		return;
	evbuffer_add_printf(b,
	    "<h2>Memory and output</h2><div class=\"grid\" id=\"memory\">");
	if (json_is_object(out = json_object_get(st, "output"))) {
		held = page_int(out, "held_bytes");
		budget = page_int(out, "budget");
		refused = page_int(out, "refused");
		frac = budget > 0 ? (double)held / (double)budget : 0;
		warn = frac >= 0.8 || refused > 0;
		evbuffer_add_printf(b,
		    "<div class=\"card%s\" id=\"mem-output\" "
		    "data-warn=\"%s\" data-held=\"%llu\" "
		    "data-budget=\"%llu\" data-refused=\"%llu\"><h3>output"
		    "</h3><dl><dt>held</dt><dd>",
		    warn ? " warn" : "", warn ? "yes" : "no",
		    (unsigned long long)held, (unsigned long long)budget,
		    (unsigned long long)refused);
		page_size(held, b);
		evbuffer_add_printf(b, " of ");
		page_size(budget, b);
		evbuffer_add_printf(b, " (%.1f%%)", frac * 100);
		page_bar(frac, b);
		evbuffer_add_printf(b,
		    "</dd><dt>refused</dt><dd%s>%llu request%s (503)</dd></dl>",
		    refused > 0 ? " class=\"down\"" : "",
		    (unsigned long long)refused, refused == 1 ? "" : "s");
		if (refused > 0)
			evbuffer_add_printf(b,
			    "<div class=\"why\">requests were refused since "
			    "start: floe held its output_budget</div>");
		else if (warn)
			evbuffer_add_printf(b,
			    "<div class=\"why\">past 80 %% of output_budget: "
			    "past all of it, requests are refused with 503"
			    "</div>");
		evbuffer_add_printf(b, "</div>");
	}
	if (json_is_object(m = json_object_get(st, "cache"))) {
		if (page_held("mem-cache", "LoadTable cache", "cache_size", m,
			b))
			evbuffer_add_printf(b,
			    "<dt>hits</dt><dd>%llu</dd><dt>misses</dt>"
			    "<dd>%llu</dd>",
			    (unsigned long long)page_int(m, "hits"),
			    (unsigned long long)page_int(m, "misses"));
		evbuffer_add_printf(b, "</dl></div>");
	}
	if (json_is_object(m = json_object_get(st, "memo"))) {
		(void)page_held("mem-memo", "memo of checked answers",
		    "check_memo_size", m, b);
		evbuffer_add_printf(b, "</dl></div>");
	}
	evbuffer_add_printf(b, "</div>");
	json_decref(st);
}

/* Keep every wave. */
static int
page_waves_cb(const struct store_wave *sw, void *arg)
{
	struct page_waves *l = arg;

	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = *sw;
	return 0;
}

/* Event SEQ from the store, or NULL. Caller frees. */
struct page_ev_get {
	json_t *j;
};

static int
page_ev_get_cb(uint64_t seq __attribute__((unused)), const char *json,
    size_t len, void *arg)
{
	struct page_ev_get *g = arg;

	g->j = json_loadb(json, len, 0, NULL);
	return 1;
}

static json_t *
page_event(struct obs *o, uint64_t seq)
{
	struct page_ev_get g = { NULL };

	if (o->f->store == NULL || seq == 0)
		return NULL;
	(void)store_event_foreach(o->f->store, seq - 1, 1, page_ev_get_cb, &g);
	return g.j;
}

/* A trigger's value V for people, escaped. */
static void
page_value(const char *trigger, const json_t *v, struct evbuffer *b)
{
	char text[256];

	rlog_value_text(trigger, v, text, sizeof(text));
	page_esc(b, text);
}

/*
 * One event of a timeline, as a list item; its reason is left out when it
 * is SHOWN already (may be NULL).
 */
static void
page_event_li(const json_t *ev, const char *shown, struct evbuffer *b)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	const char *from = json_string_value(json_object_get(ev, "from"));
	const char *to = json_string_value(json_object_get(ev, "to"));
	const char *trig = json_string_value(json_object_get(ev, "trigger"));
	const char *reason = json_string_value(json_object_get(ev, "reason"));
	const char *actor = json_string_value(json_object_get(ev, "actor"));
	const char *ts = json_string_value(json_object_get(ev, "ts"));
	json_int_t pct = json_integer_value(json_object_get(ev, "pct"));
	bool rb = type != NULL &&
	    (strcmp(type, "wave.rollback") == 0 ||
		strcmp(type, "trigger.page") == 0 ||
		strstr(type, "alarm") != NULL);

	if (type == NULL)
		type = "event";
	evbuffer_add_printf(b, "<li class=\"ev%s\" data-type=\"",
	    rb ? " rb" : "");
	page_esc(b, type);
	evbuffer_add_printf(b, "\"><time>");
	page_esc(b, ts != NULL ? ts : "");
	evbuffer_add_printf(b, "</time><b>");
	if (strcmp(type, "wave.flip") == 0) {
		if (from != NULL && to != NULL && strcmp(from, "canary") == 0 &&
		    strcmp(to, "canary") == 0)
			evbuffer_add_printf(b, "canary step</b> to %lld%%",
			    (long long)pct);
		else {
			evbuffer_add_printf(b, "flip</b> ");
			page_esc(b, from);
			evbuffer_add_printf(b, " &rarr; ");
			page_esc(b, to);
			if (to != NULL && strcmp(to, "canary") == 0)
				evbuffer_add_printf(b, " at %lld%%",
				    (long long)pct);
		}
	} else if (strcmp(type, "wave.rollback") == 0 ||
	    strcmp(type, "trigger.page") == 0) {
		evbuffer_add_printf(b, "%s</b> ",
		    strcmp(type, "wave.rollback") == 0 ? "rollback" :
							 "page (frozen)");
		if (from != NULL && strcmp(type, "wave.rollback") == 0) {
			evbuffer_add_printf(b, "from ");
			page_esc(b, from);
			evbuffer_add_printf(b, " ");
		}
		evbuffer_add_printf(b, "&middot; trigger <b class=\"trig\">");
		page_esc(b, trig != NULL ? trig : "operator");
		evbuffer_add_printf(b, "</b>");
		if (trig != NULL) {
			evbuffer_add_printf(b, " &middot; measured ");
			page_value(trig, json_object_get(ev, "measured"), b);
			evbuffer_add_printf(b, " vs threshold ");
			page_value(trig, json_object_get(ev, "threshold"), b);
		}
	} else if (strcmp(type, "wave.ack") == 0) {
		evbuffer_add_printf(b, "rollback acknowledged</b>");
	} else if (strcmp(type, "wave.signoff") == 0) {
		evbuffer_add_printf(b, "signed off</b> by ");
		page_esc(b, json_string_value(json_object_get(ev, "by")));
	} else if (strcmp(type, "wave.freeze") == 0) {
		evbuffer_add_printf(b, "frozen</b> &middot; grace ends ");
		page_esc(b,
		    json_string_value(json_object_get(ev, "grace_ends")));
	} else if (strcmp(type, "wave.retire") == 0) {
		evbuffer_add_printf(b, "retired</b>");
	} else if (strcmp(type, "wave.set") == 0) {
		evbuffer_add_printf(b, "gate overrides set</b>");
	} else {
		page_esc(b, type);
		evbuffer_add_printf(b, "</b>");
	}
	if (actor != NULL && actor[0] != '\0') {
		evbuffer_add_printf(b, " &middot; by ");
		page_esc(b, actor);
	}
	if (reason != NULL && reason[0] != '\0' &&
	    (shown == NULL || strcmp(reason, shown) != 0)) {
		evbuffer_add_printf(b, "<div class=\"why\">");
		page_esc(b, reason);
		evbuffer_add_printf(b, "</div>");
	}
	evbuffer_add_printf(b, "</li>");
}

/* Past 80 % of a threshold, or rolled back. */
static bool
page_needs_look(struct obs *o, const struct store_wave *sw)
{
	struct watch_view v;

	if (sw->state == WAVE_ROLLED_BACK || sw->alarm_ms != 0)
		return true;
	if (watch_wave_view(o->f->watch, sw, &v) == -1 || !v.armed)
		return false;
	return (v.threshold > 0 && v.requests >= v.min_requests &&
		   v.ratio >= 0.8 * v.threshold) ||
	    (v.lag_known && v.max_lag_ms > 0 &&
		(double)v.lag_ms >= 0.8 * (double)v.max_lag_ms);
}

/* One wave's card; FULL: without its last events (the timeline follows). */
static void
page_card(struct obs *o, const struct store_wave *sw, bool full,
    struct evbuffer *b)
{
	const char *st = wave_state_name((enum wave_state)sw->state);
	const struct obs_wave *tl = obs_wave_get(o, sw->n);
	const struct obs_count *c = obs_count_get(o, sw->n);
	struct watch_view v;
	char d1[32], d2[32];
	json_t *ev;
	size_t i, k, t;
	unsigned nstale;
	int64_t now = units_now_ms();

	evbuffer_add_printf(b,
	    "<article class=\"card s-%s\" id=\"wave-%u\" data-wave=\"%u\" "
	    "data-state=\"%s\"><h3><a href=\"/?wave=%u\">wave %u</a><span "
	    "class=\"st\">%s</span></h3><dl><dt>since</dt><dd>",
	    st, sw->n, sw->n, st, sw->n, sw->n, st);
	page_ago(sw->since_ms, now, b);
	if (sw->actor[0] != '\0') {
		evbuffer_add_printf(b, " by ");
		page_esc(b, sw->actor);
	}
	evbuffer_add_printf(b, "</dd><dt>canary share</dt><dd>%u%%</dd>",
	    sw->pct);
	if (admin_readers_stale_of(o->f, sw->n, &nstale) && nstale > 0)
		evbuffer_add_printf(b,
		    "<dt>stale readers</dt><dd class=\"why\">%u: floectl "
		    "readers --wave %u (a freeze waits for them)</dd>",
		    nstale, sw->n);
	/* A frozen wave's warehouse copy changed behind floe's back. */
	if (sw->alarm_ms != 0) {
		evbuffer_add_printf(b,
		    "<dt>split brain</dt><dd class=\"why\">"
		    "the warehouse copy changed after the "
		    "freeze, ");
		page_ago(sw->alarm_ms, now, b);
		evbuffer_add_printf(b, "; floectl wave ack-alarm %u</dd>",
		    sw->n);
	}
	if (watch_wave_view(o->f->watch, sw, &v) == 0 && v.armed) {
		evbuffer_add_printf(b,
		    "<dt>error ratio</dt><dd>%.2f%% of %llu reads &middot; "
		    "threshold %.2f%%",
		    v.ratio * 100, (unsigned long long)v.requests,
		    v.threshold * 100);
		page_bar(v.threshold > 0 ? v.ratio / v.threshold : 0, b);
		if (v.requests < v.min_requests)
			evbuffer_add_printf(b,
			    " <span class=\"why\">(fires "
			    "from %u reads)</span>",
			    v.min_requests);
		evbuffer_add_printf(b, "</dd><dt>freshness lag</dt><dd>");
		units_format_human(v.max_lag_ms, d2, sizeof(d2));
		if (v.lag_known) {
			units_format_human(v.lag_ms, d1, sizeof(d1));
			evbuffer_add_printf(b, "%s of %s", d1, d2);
			page_bar(v.max_lag_ms > 0 ?
				(double)v.lag_ms / (double)v.max_lag_ms :
				0,
			    b);
		} else
			evbuffer_add_printf(b, "not known yet (limit %s)", d2);
		if (v.objects_unknown > 0)
			evbuffer_add_printf(b,
			    " <span class=\"why\">(%u of %u tables not "
			    "read)</span>",
			    v.objects_unknown, v.objects);
		evbuffer_add_printf(b, "</dd>");
	}
	if (c != NULL) {
		evbuffer_add_printf(b, "<dt>rollbacks</dt><dd>");
		for (t = 0, k = 0; t < OBS_NTRIGGERS; t++)
			if (c->n[t] > 0)
				evbuffer_add_printf(b, "%s%s %llu",
				    k++ > 0 ? ", " : "", obs_triggers[t],
				    (unsigned long long)c->n[t]);
		evbuffer_add_printf(b, "</dd>");
	}
	evbuffer_add_printf(b, "</dl>");
	if (sw->reason[0] != '\0') {
		evbuffer_add_printf(b, "<div class=\"%s\">",
		    sw->state == WAVE_ROLLED_BACK ? "evidence" : "why");
		page_esc(b, sw->reason);
		evbuffer_add_printf(b, "</div>");
	}
	if (tl == NULL || full) {
		evbuffer_add_printf(b, "</article>");
		return;
	}
	evbuffer_add_printf(b, "<ol reversed>");
	for (i = tl->nseqs, k = 0; i > 0 && k < PAGE_CARD_EVENTS; i--, k++) {
		if ((ev = page_event(o, tl->seqs[i - 1])) == NULL)
			continue;
		page_event_li(ev, sw->reason, b);
		json_decref(ev);
	}
	evbuffer_add_printf(b,
	    "</ol><a href=\"/?wave=%u\">timeline: %zu event%s</a></article>",
	    sw->n, tl->nseqs, tl->nseqs == 1 ? "" : "s");
}

/* Wave N's timeline, newest first, PAGE_EVENTS from before BEFORE. */
static void
page_timeline(struct obs *o, uint32_t n, uint64_t before, struct evbuffer *b)
{
	const struct obs_wave *tl = obs_wave_get(o, n);
	size_t i, k;
	json_t *ev;

	evbuffer_add_printf(b, "<h2>Timeline of wave %u</h2>", n);
	if (tl == NULL || tl->nseqs == 0) {
		evbuffer_add_printf(b, "<p>No events yet.</p>");
		return;
	}
	for (i = tl->nseqs; i > 0 && before != 0 && tl->seqs[i - 1] >= before;
	     i--)
		;
	evbuffer_add_printf(b,
	    "<p>%zu events in all; %zu older than this "
	    "page's first.</p><ol class=\"timeline\">",
	    tl->nseqs, i);
	for (k = 0; i > 0 && k < PAGE_EVENTS; i--, k++) {
		if ((ev = page_event(o, tl->seqs[i - 1])) == NULL)
			continue;
		page_event_li(ev, NULL, b);
		json_decref(ev);
	}
	evbuffer_add_printf(b, "</ol><nav>");
	if (before != 0)
		evbuffer_add_printf(b, "<a href=\"/?wave=%u\">newest</a>", n);
	if (i > 0)
		evbuffer_add_printf(b,
		    "<a href=\"/?wave=%u&amp;before=%llu\">older</a>", n,
		    (unsigned long long)tl->seqs[i]);
	evbuffer_add_printf(b, "</nav>");
}

void
obs_page_render(struct obs *o, const char *query, struct evbuffer *b)
{
	struct page_waves l = { NULL, 0 };
	unsigned counts[WAVE_NSTATES];
	struct page_q q;
	size_t i, k, first, pages;
	bool found = false;

	page_q_parse(query, &q);
	obs_refresh(o);
	if (o->f->store != NULL)
		(void)store_wave_foreach(o->f->store, page_waves_cb, &l);
	page_head(o, b);
	if (q.has_wave) {
		for (i = 0; i < l.n; i++)
			if (l.v[i].n == q.wave) {
				evbuffer_add_printf(b, "<h2>Wave %u</h2>",
				    q.wave);
				page_card(o, &l.v[i], true, b);
				found = true;
			}
		if (!found)
			evbuffer_add_printf(b,
			    "<h2>Wave %u</h2><p>No such wave in the store.</p>",
			    q.wave);
		page_timeline(o, q.wave, q.before, b);
		goto out;
	}
	page_catalogs(o, b);
	page_memory(o, b);
	memset(counts, 0, sizeof(counts));
	for (i = 0; i < l.n; i++)
		if (l.v[i].state < WAVE_NSTATES)
			counts[l.v[i].state]++;
	evbuffer_add_printf(b, "<h2>Waves: %zu</h2><div class=\"chips\">", l.n);
	for (i = 0; i < WAVE_NSTATES; i++)
		if (counts[i] > 0)
			evbuffer_add_printf(b, "<span>%s: %u</span>",
			    wave_state_name((enum wave_state)i), counts[i]);
	evbuffer_add_printf(b, "<span>timeline events: %llu</span></div>",
	    (unsigned long long)o->nevents);
	evbuffer_add_printf(b,
	    "<h2>Needs a look</h2><div class=\"grid\" "
	    "id=\"attention\">");
	for (i = 0, k = 0; i < l.n && k < PAGE_ATTENTION; i++)
		if (page_needs_look(o, &l.v[i])) {
			page_card(o, &l.v[i], false, b);
			k++;
		}
	if (k == 0)
		evbuffer_add_printf(b,
		    "<p>Nothing: no wave is rolled back or "
		    "near a threshold.</p>");
	evbuffer_add_printf(b, "</div>");
	pages = (l.n + PAGE_WAVES - 1) / PAGE_WAVES;
	if (pages == 0)
		pages = 1;
	if (q.page > pages)
		q.page = (unsigned)pages;
	first = (size_t)(q.page - 1) * PAGE_WAVES;
	evbuffer_add_printf(b, "<h2>All waves (page %u of %zu)</h2>", q.page,
	    pages);
	if (l.n == 0)
		evbuffer_add_printf(b, "<p>No wave has a record yet.</p>");
	evbuffer_add_printf(b, "<div class=\"grid\" id=\"waves\">");
	for (i = first; i < l.n && i < first + PAGE_WAVES; i++)
		page_card(o, &l.v[i], false, b);
	evbuffer_add_printf(b, "</div><nav>");
	for (i = 1; pages > 1 && i <= pages; i++)
		evbuffer_add_printf(b,
		    i == q.page ? "<b>%zu</b> " :
				  "<a href=\"/?page=%zu\">%zu</a> ",
		    i, i);
	evbuffer_add_printf(b, "</nav>");
out:
	evbuffer_add_printf(b,
	    "<p class=\"why\">Read-only. Metrics: <a href=\"/metrics\">"
	    "/metrics</a>; everything as JSON: <a href=\"/status.json\">"
	    "/status.json</a>.</p></main></body></html>\n");
	free(l.v);
}
