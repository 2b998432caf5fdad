/*
 * floe: obs.c -- the read-only observability listener and the waves'
 * metric families. GET and HEAD only, three paths; anything else is a 404
 * or a 405 with Allow. The rollback counter is the rollback log itself,
 * read on from where the last read stopped (a log that shrank or was
 * replaced starts the count again, as a counter may); the timeline index
 * keeps, per wave, the sequences of its events, read on the same way.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/rlog.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/obs.h"
#include "proxy/obs_impl.h"
#include "proxy/server.h"
#include "proxy/stats.h"
#include "routing/store.h"
#include "routing/wave.h"

#define OBS_READ_CHUNK (1 << 20) /* the rollback log, read this at a time */
#define OBS_ALLOW "Allow: GET, HEAD\r\n"

const char *const obs_triggers[OBS_NTRIGGERS] = { "reconcile", "freshness",
	"errors", "operator", "split-brain", "other" };

/* Waves collected for the metrics. */
struct obs_wlist {
	struct store_wave *v;
	size_t n;
};

static void obs_serve(struct server_conn *, struct h1_msg *, void *);
static void obs_serve_error(struct server_conn *, int, const char *, void *);
static void obs_reply(struct server_conn *, unsigned, const char *,
    const char *, struct evbuffer *);
static void obs_reply_text(struct server_conn *, unsigned, const char *,
    const char *);
static void obs_metrics_cb(struct evbuffer *, void *);
static json_t *obs_rolled_back_cb(void *);
static int obs_event_get_cb(uint64_t, const char *, size_t, void *);
static json_t *obs_last_rollback(struct obs *, uint32_t);
static int obs_wlist_cb(const struct store_wave *, void *);
static void obs_rlog_read(struct obs *);
static void obs_rlog_line(struct obs *, const char *, size_t);
static struct obs_count *obs_count_at(struct obs *, uint32_t);
static int obs_event_cb(uint64_t, const char *, size_t, void *);
static struct obs_wave *obs_wave_at(struct obs *, uint32_t);
static void obs_index_reset(struct obs *);

struct obs *
obs_new(struct floe *f, const char *hostport, char *err, size_t errlen)
{
	struct server_opts so;
	struct obs *o;

	o = xcalloc(1, sizeof(*o));
	o->f = f;
	if (hostport != NULL) {
		memset(&so, 0, sizeof(so));
		so.name = "metrics";
		so.lim.max_head = 8192;
		so.lim.max_headers = 100;
		so.lim.max_body = 4096;
		so.idle_timeout_ms = f->conf->idle_timeout_ms;
		so.header_timeout_ms = f->conf->header_timeout_ms;
		so.write_timeout_ms = 60000;
		o->srv =
		    server_new(f->base, &so, obs_serve, obs_serve_error, o);
		if (server_listen_tcp(o->srv, hostport, err, errlen) == -1) {
			server_free(o->srv);
			free(o);
			return NULL;
		}
	}
	stats_add_metrics(&f->stats, obs_metrics_cb, o);
	stats_add_status(&f->stats, "rolled_back", obs_rolled_back_cb, o);
	return o;
}

void
obs_drain(struct obs *o)
{
	if (o != NULL && o->srv != NULL)
		server_drain(o->srv);
}

unsigned
obs_nconns(const struct obs *o)
{
	return o != NULL && o->srv != NULL ? server_nconns(o->srv) : 0;
}

void
obs_free(struct obs *o)
{
	if (o == NULL)
		return;
	stats_remove(&o->f->stats, o);
	if (o->srv != NULL)
		server_free(o->srv);
	obs_index_reset(o);
	free(o->counts);
	free(o);
}

/* Answer STATUS with BODY (moved; NULL: none) of type CTYPE, and HDRS. */
static void
obs_reply(struct server_conn *conn, unsigned status, const char *ctype,
    const char *hdrs, struct evbuffer *body)
{
	char h[256];
	int n;

	n = snprintf(h, sizeof(h),
	    "Content-Type: %s\r\nCache-Control: no-store\r\n"
	    "X-Content-Type-Options: nosniff\r\n%s",
	    ctype, hdrs != NULL ? hdrs : "");
	if (n < 0 || (size_t)n >= sizeof(h))
		fatalx("%s: headers too long", __func__);
	server_reply(conn, status, h, (size_t)n, body, -1);
}

/* A plain-text answer TEXT with STATUS. */
static void
obs_reply_text(struct server_conn *conn, unsigned status, const char *hdrs,
    const char *text)
{
	struct evbuffer *b;

	if ((b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add(b, text, strlen(text));
	obs_reply(conn, status, "text/plain; charset=utf-8", hdrs, b);
	evbuffer_free(b);
}

/* server_request_cb: GET or HEAD of /metrics, / or /status.json. */
static void
obs_serve(struct server_conn *conn, struct h1_msg *m, void *arg)
{
	struct obs *o = arg;
	const char *q;
	char path[64];
	size_t plen;
	struct evbuffer *b;
	char *text;
	json_t *j;

	q = memchr(m->target, '?', m->target_len);
	plen = q != NULL ? (size_t)(q - m->target) : m->target_len;
	if (plen >= sizeof(path)) {
		obs_reply_text(conn, 404, NULL,
		    "not found: this listener serves /metrics, / and "
		    "/status.json\n");
		return;
	}
	memcpy(path, m->target, plen);
	path[plen] = '\0';
	if (strcmp(path, "/metrics") != 0 && strcmp(path, "/") != 0 &&
	    strcmp(path, "/status.json") != 0) {
		obs_reply_text(conn, 404, NULL,
		    "not found: this listener serves /metrics, / and "
		    "/status.json\n");
		return;
	}
	if (m->method != H1_GET && m->method != H1_HEAD) {
		obs_reply_text(conn, 405, OBS_ALLOW,
		    "method not allowed: this listener is read-only (GET, "
		    "HEAD)\n");
		return;
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	if (strcmp(path, "/metrics") == 0) {
		text = stats_metrics_text(&o->f->stats);
		evbuffer_add(b, text, strlen(text));
		free(text);
		obs_reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8",
		    NULL, b);
	} else if (strcmp(path, "/status.json") == 0) {
		if ((j = stats_status_json(&o->f->stats)) == NULL ||
		    (text = json_dumps(j,
			 JSON_INDENT(2) | JSON_PRESERVE_ORDER)) == NULL) {
			json_decref(j);
			evbuffer_free(b);
			obs_reply_text(conn, 500, NULL,
			    "the status is not available\n");
			return;
		}
		json_decref(j);
		evbuffer_add(b, text, strlen(text));
		evbuffer_add(b, "\n", 1);
		free(text);
		obs_reply(conn, 200, "application/json", NULL, b);
	} else {
		obs_page_render(o, q != NULL ? q + 1 : "", b);
		obs_reply(conn, 200, "text/html; charset=utf-8",
		    "Content-Security-Policy: default-src 'none'; "
		    "style-src 'unsafe-inline'\r\n",
		    b);
	}
	evbuffer_free(b);
}

/* server_error_cb: a request that could not be framed. */
static void
obs_serve_error(struct server_conn *conn, int status, const char *why,
    void *arg __attribute__((unused)))
{
	char text[256];

	snprintf(text, sizeof(text), "%s\n", why != NULL ? why : "bad request");
	obs_reply_text(conn, (unsigned)status, NULL, text);
}

/* Keep every wave. */
static int
obs_wlist_cb(const struct store_wave *sw, void *arg)
{
	struct obs_wlist *l = arg;

	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = *sw;
	return 0;
}

/*
 * stats_metrics_cb: every wave's state and canary share, and the
 * rollback log's lines per wave and trigger. A wave whose triggers are
 * armed shows its zeros too, so that its first rollback is an increase.
 */
static void
obs_metrics_cb(struct evbuffer *b, void *arg)
{
	struct obs *o = arg;
	struct obs_wlist l = { NULL, 0 };
	const struct obs_count *c;
	size_t i, k, t;
	int s;
	bool armed;

	obs_refresh(o);
	if (o->f->store != NULL)
		(void)store_wave_foreach(o->f->store, obs_wlist_cb, &l);
	evbuffer_add_printf(b,
	    "# HELP floe_wave_state The wave's state: 1 for the current "
	    "one.\n"
	    "# TYPE floe_wave_state gauge\n");
	for (i = 0; i < l.n; i++)
		for (s = 0; s < WAVE_NSTATES; s++)
			evbuffer_add_printf(b,
			    "floe_wave_state{wave=\"%u\",state=\"%s\"} %d\n",
			    l.v[i].n, wave_state_name((enum wave_state)s),
			    l.v[i].state == s ? 1 : 0);
	evbuffer_add_printf(b,
	    "# HELP floe_wave_canary_ratio Share of the wave's reads sent "
	    "to the lakehouse.\n"
	    "# TYPE floe_wave_canary_ratio gauge\n");
	for (i = 0; i < l.n; i++)
		evbuffer_add_printf(b,
		    "floe_wave_canary_ratio{wave=\"%u\"} %g\n", l.v[i].n,
		    (double)l.v[i].pct / 100);
	evbuffer_add_printf(b,
	    "# HELP floe_rollbacks_total Lines of the rollback log, by wave "
	    "and trigger.\n"
	    "# TYPE floe_rollbacks_total counter\n");
	/* The counted waves, then the armed ones not counted yet. */
	for (k = 0; k < o->ncounts; k++)
		for (t = 0; t < OBS_NTRIGGERS; t++)
			if (o->counts[k].n[t] != 0 || t < 4)
				evbuffer_add_printf(b,
				    "floe_rollbacks_total{wave=\"%u\","
				    "trigger=\"%s\"} %llu\n",
				    o->counts[k].wave, obs_triggers[t],
				    (unsigned long long)o->counts[k].n[t]);
	for (i = 0; i < l.n; i++) {
		armed = l.v[i].state == WAVE_CANARY ||
		    l.v[i].state == WAVE_LAKEHOUSE ||
		    l.v[i].state == WAVE_FROZEN;
		if (!armed || (c = obs_count_get(o, l.v[i].n)) != NULL)
			continue;
		for (t = 0; t < 4; t++)
			evbuffer_add_printf(b,
			    "floe_rollbacks_total{wave=\"%u\",trigger=\"%s\"} "
			    "0\n",
			    l.v[i].n, obs_triggers[t]);
	}
	free(l.v);
}

/* store_event_cb: take the one event asked for. */
static int
obs_event_get_cb(uint64_t seq __attribute__((unused)), const char *json,
    size_t len, void *arg)
{
	*(json_t **)arg = json_loadb(json, len, 0, NULL);
	return 1;
}

/* The last rollback event of wave N, or NULL. Caller frees. */
static json_t *
obs_last_rollback(struct obs *o, uint32_t n)
{
	const struct obs_wave *w = obs_wave_get(o, n);
	const char *type;
	json_t *ev;
	size_t i;

	for (i = w != NULL ? w->nseqs : 0; i > 0; i--) {
		ev = NULL;
		(void)store_event_foreach(o->f->store, w->seqs[i - 1] - 1, 1,
		    obs_event_get_cb, &ev);
		type = json_string_value(json_object_get(ev, "type"));
		if (type != NULL && strcmp(type, "wave.rollback") == 0)
			return ev;
		json_decref(ev);
	}
	return NULL;
}

/*
 * stats_status_cb: each rolled-back wave with the evidence of its
 * rollback, which outlives the trigger's counters: the trigger, the
 * measured value and the threshold exact and rounded for people, the
 * reason, since when and by whom. Null without a store.
 */
static json_t *
obs_rolled_back_cb(void *arg)
{
	struct obs *o = arg;
	struct obs_wlist l = { NULL, 0 };
	json_t *all, *one, *ev;
	const char *trig;
	char num[16], ts[40], m[128], t[128];
	size_t i;

	if (o->f->store == NULL)
		return json_null();
	obs_refresh(o);
	(void)store_wave_foreach(o->f->store, obs_wlist_cb, &l);
	all = json_object();
	for (i = 0; i < l.n; i++) {
		if (l.v[i].state != WAVE_ROLLED_BACK)
			continue;
		units_time_format(l.v[i].since_ms, ts, sizeof(ts));
		one = json_pack("{s:s,s:s,s:s}", "since", ts, "actor",
		    l.v[i].actor, "reason", l.v[i].reason);
		if ((ev = obs_last_rollback(o, l.v[i].n)) != NULL) {
			trig =
			    json_string_value(json_object_get(ev, "trigger"));
			json_object_set_new(one, "trigger",
			    json_string(trig != NULL ? trig : "operator"));
			if (trig != NULL) {
				json_object_set(one, "measured",
				    json_object_get(ev, "measured"));
				json_object_set(one, "threshold",
				    json_object_get(ev, "threshold"));
				rlog_value_text(trig,
				    json_object_get(ev, "measured"), m,
				    sizeof(m));
				rlog_value_text(trig,
				    json_object_get(ev, "threshold"), t,
				    sizeof(t));
				json_object_set_new(one, "evidence",
				    json_sprintf("measured %s, threshold %s", m,
					t));
			}
			json_decref(ev);
		}
		snprintf(num, sizeof(num), "%u", l.v[i].n);
		json_object_set_new(all, num, one);
	}
	free(l.v);
	return all;
}

void
obs_refresh(struct obs *o)
{
	uint64_t last;

	obs_rlog_read(o);
	if (o->f->store == NULL)
		return;
	last = store_last_seq(o->f->store);
	if (last < o->ev_seq)
		obs_index_reset(o); /* another store: start again */
	if (last > o->ev_seq)
		(void)store_event_foreach(o->f->store, o->ev_seq, 0,
		    obs_event_cb, o);
}

/* Read the lines added to the rollback log since the last read. */
static void
obs_rlog_read(struct obs *o)
{
	const char *path = o->f->conf->rollback_log;
	struct stat st;
	char *buf, *nl, *p;
	ssize_t got;
	int fd;

	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &st) == -1) {
		close(fd);
		return;
	}
	if (st.st_ino != o->rlog_ino || st.st_size < o->rlog_off) {
		/* Rotated or replaced: its count starts again. */
		free(o->counts);
		o->counts = NULL;
		o->ncounts = 0;
		o->rlog_off = 0;
		o->rlog_ino = st.st_ino;
	}
	buf = xmalloc(OBS_READ_CHUNK);
	while (o->rlog_off < st.st_size) {
		got = pread(fd, buf, OBS_READ_CHUNK, o->rlog_off);
		if (got <= 0)
			break;
		if ((nl = memrchr(buf, '\n', (size_t)got)) == NULL) {
			if (got < OBS_READ_CHUNK)
				break; /* a line still being written */
			o->rlog_off += got; /* no line is that long: skip */
			continue;
		}
		for (p = buf; p <= nl;) {
			char *e = memchr(p, '\n', (size_t)(nl - p) + 1);

			obs_rlog_line(o, p, (size_t)(e - p));
			p = e + 1;
		}
		o->rlog_off += nl - buf + 1;
	}
	free(buf);
	close(fd);
}

/* Count one line of the rollback log. */
static void
obs_rlog_line(struct obs *o, const char *line, size_t len)
{
	json_t *j, *w;
	const char *trig;
	size_t t;

	if (len == 0 || (j = json_loadb(line, len, 0, NULL)) == NULL)
		return;
	w = json_object_get(j, "wave");
	trig = json_string_value(json_object_get(j, "trigger"));
	if (json_is_integer(w) && json_integer_value(w) >= 0 &&
	    json_integer_value(w) <= WAVE_MAX) {
		for (t = 0; t < OBS_NTRIGGERS - 1; t++)
			if (trig != NULL && strcmp(trig, obs_triggers[t]) == 0)
				break;
		obs_count_at(o, (uint32_t)json_integer_value(w))->n[t]++;
	}
	json_decref(j);
}

/*
 * Where KEY is, or would go, in the N elements of SIZE bytes at ARR,
 * sorted by the uint32_t each starts with; *FOUND says whether it is.
 */
static size_t
obs_sorted_find(const void *arr, size_t n, size_t size, uint32_t key,
    bool *found)
{
	const unsigned char *a = arr;
	size_t lo = 0, hi = n, mid;
	uint32_t k;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		memcpy(&k, a + mid * size, sizeof(k));
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	if (lo < n) {
		memcpy(&k, a + lo * size, sizeof(k));
		*found = k == key;
	}
	return lo;
}

/* The element KEY of the sorted array *ARR (*N of SIZE), added if new. */
static void *
obs_sorted_at(void **arr, size_t *n, size_t size, uint32_t key)
{
	unsigned char *a = *arr;
	bool found;
	size_t i = obs_sorted_find(a, *n, size, key, &found);

	if (found)
		return a + i * size;
	a = xreallocarray(a, *n + 1, size);
	memmove(a + (i + 1) * size, a + i * size, (*n - i) * size);
	memset(a + i * size, 0, size);
	memcpy(a + i * size, &key, sizeof(key));
	(*n)++;
	*arr = a;
	return a + i * size;
}

/* The counts of wave N, added if new. */
static struct obs_count *
obs_count_at(struct obs *o, uint32_t n)
{
	void *a = o->counts;
	struct obs_count *c;

	c = obs_sorted_at(&a, &o->ncounts, sizeof(*o->counts), n);
	o->counts = a;
	return c;
}

const struct obs_count *
obs_count_get(const struct obs *o, uint32_t n)
{
	bool found;
	size_t i = obs_sorted_find(o->counts, o->ncounts, sizeof(*o->counts), n,
	    &found);

	return found ? &o->counts[i] : NULL;
}

bool
obs_event_is_timeline(const char *type)
{
	return type != NULL &&
	    ((strncmp(type, "wave.", 5) == 0 &&
		 strcmp(type, "wave.refused") != 0) ||
		strncmp(type, "trigger.", 8) == 0 ||
		strstr(type, "alarm") != NULL);
}

/* store_event_cb: index one event under its wave. */
static int
obs_event_cb(uint64_t seq, const char *json, size_t len, void *arg)
{
	struct obs *o = arg;
	struct obs_wave *w;
	json_t *j, *n;

	o->ev_seq = seq;
	if ((j = json_loadb(json, len, 0, NULL)) == NULL)
		return 0;
	n = json_object_get(j, "wave");
	if (json_is_integer(n) && json_integer_value(n) >= 0 &&
	    json_integer_value(n) <= WAVE_MAX &&
	    obs_event_is_timeline(
		json_string_value(json_object_get(j, "type")))) {
		w = obs_wave_at(o, (uint32_t)json_integer_value(n));
		if (w->nseqs == w->cap) {
			w->cap = w->cap == 0 ? 8 : w->cap * 2;
			w->seqs =
			    xreallocarray(w->seqs, w->cap, sizeof(*w->seqs));
		}
		w->seqs[w->nseqs++] = seq;
		o->nevents++;
	}
	json_decref(j);
	return 0;
}

/* The timeline of wave N, added if new. */
static struct obs_wave *
obs_wave_at(struct obs *o, uint32_t n)
{
	void *a = o->waves;
	struct obs_wave *w;

	w = obs_sorted_at(&a, &o->nwaves, sizeof(*o->waves), n);
	o->waves = a;
	return w;
}

const struct obs_wave *
obs_wave_get(const struct obs *o, uint32_t n)
{
	bool found;
	size_t i =
	    obs_sorted_find(o->waves, o->nwaves, sizeof(*o->waves), n, &found);

	return found ? &o->waves[i] : NULL;
}

/* Forget the events index. */
static void
obs_index_reset(struct obs *o)
{
	size_t i;

	for (i = 0; i < o->nwaves; i++)
		free(o->waves[i].seqs);
	free(o->waves);
	o->waves = NULL;
	o->nwaves = 0;
	o->nevents = 0;
	o->ev_seq = 0;
}
