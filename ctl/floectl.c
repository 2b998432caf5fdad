/*
 * floe: floectl.c -- the operator's command line: talks HTTP+JSON to floe's
 * admin socket (libcurl over a Unix socket) and prints aligned tables and
 * short sentences, or the API's JSON as is with --json. A short-lived CLI:
 * every call blocks. Exit status: 0 done, 1 refused, 2 usage error, 3 floe
 * unreachable or failing.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/conf.h"

#define CTL_DEFAULT_SOCKET "var/floe.sock"
#define CTL_EVENTS_PAGE 1000
#define CTL_FOLLOW_MS 500
#define CTL_TIMEOUT_S 60
#define CTL_IMPORT_MAX (64 << 20) /* floe's admin body limit */

enum ctl_exit {
	CTL_OK = 0,
	CTL_REFUSED = 1,
	CTL_USAGE = 2,
	CTL_UNREACHABLE = 3,
};

/* The connection settings and output mode of one run. */
struct ctl {
	const char *sock;
	bool json;
	CURL *curl;
};

/* One answer of the admin API. */
struct ctl_resp {
	long status;
	char *body;
	size_t len;
	json_t *json; /* the parsed body, or NULL */
};

/* A command option: --NAME [VALUE]. */
struct ctl_opt {
	const char *name;
	bool has_arg;
	bool set;
	const char *val;
};

/* A table being printed: rows of cells, aligned on output. */
struct ctl_table {
	int ncols;
	char **cells; /* row-major */
	size_t nrows;
};

struct ctl_cmd {
	const char *word1;
	const char *word2; /* NULL for one-word commands */
	int (*fn)(struct ctl *, int, char **);
};

static volatile sig_atomic_t ctl_stop;

static void ctl_usage(FILE *);
static int ctl_usage_error(const char *, ...)
    __attribute__((__format__(__printf__, 1, 2)));
static int ctl_args(int, char **, struct ctl *, struct ctl_opt *, char **, int,
    int, const char *);
static int ctl_parse_u64(const char *, uint64_t, uint64_t, uint64_t *);
static int ctl_wave_arg(const char *, uint64_t *);
static size_t ctl_write_cb(char *, size_t, size_t, void *);
static void ctl_resp_clear(struct ctl_resp *);
static int ctl_unreachable(const struct ctl *, const char *);
static int ctl_call(struct ctl *, const char *, const char *, json_t *,
    struct ctl_resp *);
static int ctl_call_raw(struct ctl *, const char *, const char *, const char *,
    size_t, const char *, struct ctl_resp *);
static void ctl_print_blocking(json_t *);
static void ctl_table_fprint(FILE *, struct ctl_table *);
static char *ctl_read_all(const char *, const char *, size_t *);
static void ctl_print_evidence(const char *, json_t *);
static char *ctl_escape(struct ctl *, const char *);
static void ctl_print_json(const struct ctl_resp *);
static char *ctl_text(const json_t *);
static const char *ctl_str(const json_t *, const char *);
static void ctl_table_init(struct ctl_table *, int);
static void ctl_table_add(struct ctl_table *, ...);
static void ctl_table_print(struct ctl_table *);
static void ctl_flatten(struct ctl_table *, const char *, json_t *);
static void ctl_print_event(json_t *);
static void ctl_sleep_ms(long);
static void ctl_sigint_cb(int);
static int ctl_status(struct ctl *, int, char **);
static int ctl_route_set(struct ctl *, int, char **);
static int ctl_route_rm(struct ctl *, int, char **);
static int ctl_route_list(struct ctl *, int, char **);
static int ctl_import(struct ctl *, int, char **, const char *, const char *,
    struct ctl_resp *);
static int ctl_route_import(struct ctl *, int, char **);
static int ctl_resolve(struct ctl *, int, char **);
static int ctl_wave_list(struct ctl *, int, char **);
static int ctl_wave_show(struct ctl *, int, char **);
static int ctl_wave_move(struct ctl *, const char *, const char *, json_t *);
static int ctl_wave_flip(struct ctl *, int, char **);
static int ctl_wave_rollback(struct ctl *, int, char **);
static int ctl_wave_ack(struct ctl *, int, char **);
static int ctl_wave_signoff(struct ctl *, int, char **);
static int ctl_wave_freeze(struct ctl *, int, char **);
static int ctl_wave_retire(struct ctl *, int, char **);
static int ctl_wave_set(struct ctl *, int, char **);
static int ctl_ledger_add(struct ctl *, int, char **);
static int ctl_ledger_import(struct ctl *, int, char **);
static int ctl_ledger_show(struct ctl *, int, char **);
static int ctl_eligible(struct ctl *, int, char **);
static int ctl_events(struct ctl *, int, char **);
static int ctl_rollbacks(struct ctl *, int, char **);
static void ctl_print_rollback(json_t *);
static int ctl_wave_report_errors(struct ctl *, int, char **);
static int ctl_metrics(struct ctl *, int, char **);
static int ctl_help(struct ctl *, int, char **);

static const struct ctl_cmd ctl_cmds[] = {
	{ "status", NULL, ctl_status },
	{ "route", "set", ctl_route_set },
	{ "route", "rm", ctl_route_rm },
	{ "route", "list", ctl_route_list },
	{ "route", "import", ctl_route_import },
	{ "resolve", NULL, ctl_resolve },
	{ "wave", "list", ctl_wave_list },
	{ "wave", "show", ctl_wave_show },
	{ "wave", "flip", ctl_wave_flip },
	{ "wave", "rollback", ctl_wave_rollback },
	{ "wave", "ack", ctl_wave_ack },
	{ "wave", "signoff", ctl_wave_signoff },
	{ "wave", "freeze", ctl_wave_freeze },
	{ "wave", "retire", ctl_wave_retire },
	{ "wave", "set", ctl_wave_set },
	{ "wave", "report-errors", ctl_wave_report_errors },
	{ "ledger", "add", ctl_ledger_add },
	{ "ledger", "import", ctl_ledger_import },
	{ "ledger", "show", ctl_ledger_show },
	{ "eligible", NULL, ctl_eligible },
	{ "events", NULL, ctl_events },
	{ "rollbacks", NULL, ctl_rollbacks },
	{ "metrics", NULL, ctl_metrics },
	{ "help", NULL, ctl_help },
};

/* Print the usage text to OUT. */
static void
ctl_usage(FILE *out)
{
	fputs(
	    "usage: floectl [-s SOCKET | -c CONF] [--json] COMMAND [ARGS]\n"
	    "\n"
	    "commands:\n"
	    "  status                              floe, store and waves at a "
	    "glance\n"
	    "  route set OBJECT|NS.* WAVE [--force]\n"
	    "                                      assign a table or a "
	    "namespace rule to a wave\n"
	    "  route rm OBJECT|NS.* [--force]      remove an assignment\n"
	    "  route list                          every assignment\n"
	    "  route import FILE|-                 import routes (JSON lines), "
	    "all or nothing\n"
	    "  resolve OBJECT [--client ID]        where OBJECT's reads and "
	    "writes go, and why\n"
	    "  wave list                           every wave and its state\n"
	    "  wave show N                         one wave with its objects "
	    "and rules\n"
	    "  wave flip N lakehouse [--canary PCT] [--reason TEXT]\n"
	    "                                      move wave N to the "
	    "lakehouse (or a canary share)\n"
	    "  wave rollback N [--reason TEXT] [--force-stale]\n"
	    "                                      put wave N back on the "
	    "warehouse\n"
	    "  wave ack N                          return a rolled-back wave "
	    "to the warehouse state\n"
	    "  wave signoff N --by NAME            sign off wave N for "
	    "decommissioning\n"
	    "  wave freeze N [--reason TEXT]       stop warehouse writes "
	    "(decommission gate); grace starts\n"
	    "  wave retire N                       retire a frozen wave after "
	    "its grace period (final)\n"
	    "  wave set N [--min-clean N|default] [--window DUR|default]\n"
	    "             [--count-check on|off]\n"
	    "                                      per-wave cutover gate "
	    "overrides, metadata count check\n"
	    "  wave report-errors N --errors E --total T [--side S]\n"
	    "                                      errors consumers saw in T "
	    "reads (error trigger)\n"
	    "  ledger add OBJECT --count ok|fail --aggregate ok|fail --hash "
	    "ok|fail\n"
	    "             [--bucket B] [--at TIME] [--source S]\n"
	    "                                      record one reconcile "
	    "result\n"
	    "  ledger import FILE|-                import JSON lines, all or "
	    "nothing\n"
	    "  ledger show OBJECT [--limit N]      an object's newest ledger "
	    "records\n"
	    "  eligible [N]                        gate evidence and drift "
	    "triage per wave\n"
	    "  events [--follow] [--after SEQ]     the event log, oldest "
	    "first\n"
	    "  rollbacks [--follow]                the rollback log, "
	    "readably\n"
	    "  metrics                             Prometheus metrics\n"
	    "  help                                this text\n"
	    "\n"
	    "socket: -s SOCKET, else admin_socket from -c CONF, else "
	    "$FLOE_SOCKET,\n"
	    "        else var/floe.sock\n"
	    "exit:   0 done, 1 refused, 2 usage error, 3 floe unreachable or "
	    "failing\n",
	    out);
}

/* Print a one-line usage error and the hint; the usage exit status. */
static int
ctl_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("floectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nusage: floectl [-s SOCKET | -c CONF] [--json] COMMAND [ARGS]; "
	      "floectl help lists the commands\n",
	    stderr);
	return CTL_USAGE;
}

/*
 * Split a command's arguments into OPTS (--name [value], anywhere; --json
 * too) and positional ones into POS. Exactly NMIN..NMAX positional
 * arguments. 0, or the usage exit status after the message.
 */
static int
ctl_args(int argc, char **argv, struct ctl *c, struct ctl_opt *opts, char **pos,
    int nmin, int nmax, const char *cmd)
{
	int i, n = 0;
	struct ctl_opt *o;
	bool dashdash = false;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = true;
			continue;
		}
		if (!dashdash && strcmp(a, "--json") == 0) {
			c->json = true;
			continue;
		}
		if (!dashdash && a[0] == '-' && a[1] != '\0') {
			for (o = opts; o != NULL && o->name != NULL; o++)
				if (strcmp(o->name, a) == 0)
					break;
			if (o == NULL || o->name == NULL)
				return ctl_usage_error("%s: unknown option %s",
				    cmd, a);
			if (o->set)
				return ctl_usage_error("%s: %s given twice",
				    cmd, a);
			o->set = true;
			if (o->has_arg) {
				if (i + 1 == argc)
					return ctl_usage_error(
					    "%s: %s needs a value", cmd, a);
				o->val = argv[++i];
			}
			continue;
		}
		if (n == nmax)
			return ctl_usage_error("%s: unexpected argument \"%s\"",
			    cmd, a);
		pos[n++] = argv[i];
	}
	if (n < nmin)
		return ctl_usage_error("%s: missing argument", cmd);
	return 0;
}

/* Parse a decimal number MIN..MAX. 0 or -1. */
static int
ctl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0 || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Parse a wave number; a usage error if bad. */
static int
ctl_wave_arg(const char *s, uint64_t *n)
{
	if (ctl_parse_u64(s, 0, 2147483647u, n) == -1)
		return ctl_usage_error(
		    "wave \"%s\" is not a number 0..2147483647", s);
	return 0;
}

/* Gather the answer body. */
static size_t
ctl_write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct ctl_resp *r = arg;
	size_t n = size * nmemb;

	r->body = xreallocarray(r->body, r->len + n + 1, 1);
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return n;
}

/* Free what an answer holds. */
static void
ctl_resp_clear(struct ctl_resp *r)
{
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

/*
 * Say why floe cannot be reached. libcurl only says it could not connect;
 * a connect of our own gives the reason (no such file, refused, denied).
 */
static int
ctl_unreachable(const struct ctl *c, const char *curl_err)
{
	struct sockaddr_un sun;
	int fd, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(c->sock) >= sizeof(sun.sun_path)) {
		fprintf(stderr,
		    "floectl: cannot reach floe at %s: socket path too long\n",
		    c->sock);
		return CTL_UNREACHABLE;
	}
	memcpy(sun.sun_path, c->sock, strlen(c->sock));
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1) {
		fprintf(stderr,
		    "floectl: cannot reach floe at %s: socket: %s\n", c->sock,
		    strerror(errno));
		return CTL_UNREACHABLE;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		close(fd);
		fprintf(stderr, "floectl: cannot reach floe at %s: %s\n",
		    c->sock, strerror(saved));
		return CTL_UNREACHABLE;
	}
	close(fd);
	fprintf(stderr, "floectl: cannot reach floe at %s: %s\n", c->sock,
	    curl_err);
	return CTL_UNREACHABLE;
}

/*
 * METHOD PATH with the JSON BODY (or none). On a 2xx answer returns 0 with
 * the answer in *R (the caller clears it). Otherwise prints why (and the
 * error JSON to stdout with --json) and returns the exit status: 1 for a
 * refusal (409), 2 for a request floe found wrong (other 4xx), 3 when floe
 * cannot be reached, refuses this user (401, 403) or fails (5xx).
 */
static int
ctl_call(struct ctl *c, const char *method, const char *path, json_t *body,
    struct ctl_resp *r)
{
	char *payload = NULL;
	int rc;

	if (body != NULL &&
	    (payload = json_dumps(body, JSON_COMPACT)) == NULL) {
		fprintf(stderr, "floectl: out of memory\n");
		memset(r, 0, sizeof(*r));
		return CTL_UNREACHABLE;
	}
	rc = ctl_call_raw(c, method, path, payload,
	    payload != NULL ? strlen(payload) : 0, "application/json", r);
	free(payload);
	return rc;
}

/*
 * ctl_call with a ready-made body of LEN bytes (NULL: none) of content
 * type CTYPE, such as the JSON lines of a ledger import.
 */
static int
ctl_call_raw(struct ctl *c, const char *method, const char *path,
    const char *payload, size_t len, const char *ctype, struct ctl_resp *r)
{
	char errbuf[CURL_ERROR_SIZE], *url, *hct = NULL;
	struct curl_slist *hdrs = NULL;
	const char *msg = NULL;
	json_t *e;
	CURLcode rc;
	int status;

	memset(r, 0, sizeof(*r));
	url = xasprintf("http://floe%s", path);
	errbuf[0] = '\0';
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_UNIX_SOCKET_PATH, c->sock);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, (long)CTL_TIMEOUT_S);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, ctl_write_cb);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, r);
	if (payload != NULL) {
		hct = xasprintf("Content-Type: %s", ctype);
		hdrs = curl_slist_append(hdrs, hct);
		/* No "Expect: 100-continue" round trip for big imports. */
		hdrs = curl_slist_append(hdrs, "Expect:");
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, payload);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)len);
	}
	rc = curl_easy_perform(c->curl);
	curl_slist_free_all(hdrs);
	free(hct);
	free(url);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		return ctl_unreachable(c,
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
	if (rc != CURLE_OK) {
		fprintf(stderr, "floectl: no answer from floe at %s: %s\n",
		    c->sock, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		return CTL_UNREACHABLE;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->body == NULL)
		r->body = xstrdup("");
	r->json = json_loadb(r->body, r->len, 0, NULL);
	if (r->status >= 200 && r->status < 300) {
		if (r->json != NULL || strcmp(path, "/metrics") == 0)
			return 0;
		fprintf(stderr,
		    "floectl: floe at %s answered %ld with no JSON: "
		    "%.200s\n",
		    c->sock, r->status, r->body);
		ctl_resp_clear(r);
		return CTL_UNREACHABLE;
	}

	status = r->status == 409 ? CTL_REFUSED :
	    (r->status >= 400 && r->status < 500 && r->status != 401 &&
		r->status != 403) ?
				    CTL_USAGE :
				    CTL_UNREACHABLE;
	e = json_object_get(r->json, "error");
	if (json_is_string(json_object_get(e, "message")))
		msg = json_string_value(json_object_get(e, "message"));
	if (c->json && r->json != NULL)
		ctl_print_json(r);
	if (status == CTL_REFUSED) {
		fprintf(stderr, "floectl: refused: %s\n", msg ? msg : r->body);
		if (!c->json)
			ctl_print_blocking(json_object_get(e, "blocking"));
	} else if (status == CTL_USAGE)
		fprintf(stderr, "floectl: %s\n", msg ? msg : r->body);
	else
		fprintf(stderr, "floectl: floe at %s answered %ld: %s\n",
		    c->sock, r->status, msg ? msg : r->body);
	ctl_resp_clear(r);
	return status;
}

/* Percent-encode S for a path segment or query value. Caller frees. */
static char *
ctl_escape(struct ctl *c, const char *s)
{
	char *e, *out;

	if ((e = curl_easy_escape(c->curl, s, 0)) == NULL) {
		fprintf(stderr, "floectl: out of memory\n");
		exit(CTL_UNREACHABLE);
	}
	out = xstrdup(e);
	curl_free(e);
	return out;
}

/* Print the answer as the API wrote it, one line. */
static void
ctl_print_json(const struct ctl_resp *r)
{
	fwrite(r->body, 1, r->len, stdout);
	if (r->len == 0 || r->body[r->len - 1] != '\n')
		putchar('\n');
}

/* A JSON value as table text: strings bare, null as "-". Caller frees. */
static char *
ctl_text(const json_t *v)
{
	char *s, *out;

	if (v == NULL || json_is_null(v))
		return xstrdup("-");
	if (json_is_string(v))
		return xstrdup(json_string_value(v));
	if (json_is_integer(v))
		return xasprintf("%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
	if (json_is_true(v))
		return xstrdup("true");
	if (json_is_false(v))
		return xstrdup("false");
	if ((s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
		return xstrdup("?");
	out = xstrdup(s);
	free(s);
	return out;
}

/* String member KEY of O, or "-". */
static const char *
ctl_str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : "-";
}

/* Start a table of NCOLS columns. */
static void
ctl_table_init(struct ctl_table *t, int ncols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
}

/* Add a row of NCOLS strings (copied). */
static void
ctl_table_add(struct ctl_table *t, ...)
{
	va_list ap;
	int i;

	t->cells = xreallocarray(t->cells, (t->nrows + 1) * (size_t)t->ncols,
	    sizeof(char *));
	va_start(ap, t);
	for (i = 0; i < t->ncols; i++)
		t->cells[t->nrows * (size_t)t->ncols + (size_t)i] =
		    xstrdup(va_arg(ap, const char *));
	va_end(ap);
	t->nrows++;
}

/* Print the table to stdout, aligned, and free it. */
static void
ctl_table_print(struct ctl_table *t)
{
	ctl_table_fprint(stdout, t);
}

/* Print the table with columns aligned, two spaces apart, and free it. */
static void
ctl_table_fprint(FILE *out, struct ctl_table *t)
{
	size_t w[16], r, len;
	int i;

	memset(w, 0, sizeof(w));
	for (r = 0; r < t->nrows; r++)
		for (i = 0; i < t->ncols && i < 16; i++) {
			len =
			    strlen(t->cells[r * (size_t)t->ncols + (size_t)i]);
			if (len > w[i])
				w[i] = len;
		}
	for (r = 0; r < t->nrows; r++) {
		for (i = 0; i < t->ncols; i++) {
			char *cell = t->cells[r * (size_t)t->ncols + (size_t)i];

			if (i == t->ncols - 1)
				fprintf(out, "%s\n", cell);
			else
				fprintf(out, "%-*s  ", (int)w[i], cell);
			free(cell);
		}
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
}

/* Add V's members to T as "prefix.key  value" rows, objects flattened. */
static void
ctl_flatten(struct ctl_table *t, const char *prefix, json_t *v)
{
	const char *key;
	json_t *m;
	char *name, *text;

	json_object_foreach(v, key, m) {
		name = prefix[0] != '\0' ? xasprintf("%s.%s", prefix, key) :
					   xstrdup(key);
		if (json_is_object(m) && json_object_size(m) > 0)
			ctl_flatten(t, name, m);
		else {
			text = ctl_text(m);
			ctl_table_add(t, name, text);
			free(text);
		}
		free(name);
	}
}

/*
 * One event as a line: seq, time and type, then its other members as
 * key=value (nulls left out, strings quoted when they hold a space).
 */
static void
ctl_print_event(json_t *ev)
{
	const char *key;
	json_t *m;
	char *text, *q;

	printf("%" JSON_INTEGER_FORMAT "  %s  %s",
	    json_integer_value(json_object_get(ev, "seq")), ctl_str(ev, "ts"),
	    ctl_str(ev, "type"));
	json_object_foreach(ev, key, m) {
		if (strcmp(key, "seq") == 0 || strcmp(key, "ts") == 0 ||
		    strcmp(key, "type") == 0 || json_is_null(m))
			continue;
		text = ctl_text(m);
		if (json_is_string(m) && strpbrk(text, " \t\"=") != NULL &&
		    (q = json_dumps(m, JSON_ENCODE_ANY)) != NULL) {
			printf("  %s=%s", key, q);
			free(q);
		} else
			printf("  %s=%s", key, text);
		free(text);
	}
	putchar('\n');
	fflush(stdout);
}

/* Sleep MS milliseconds, or less if interrupted. */
static void
ctl_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	(void)nanosleep(&ts, NULL);
}

/* SIGINT/SIGTERM during events --follow: stop after the current poll. */
static void
ctl_sigint_cb(int sig)
{
	(void)sig;
	ctl_stop = 1;
}

/* floectl status */
static int
ctl_status(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	struct ctl_table t;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0, "status")) != 0)
		return rc;
	if ((rc = ctl_call(c, "GET", "/status", NULL, &r)) != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else {
		ctl_table_init(&t, 2);
		ctl_flatten(&t, "", r.json);
		ctl_table_print(&t);
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl route set OBJECT WAVE [--force] */
static int
ctl_route_set(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--force", false, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	char *pos[2];
	uint64_t wave;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 2, 2, "route set")) != 0)
		return rc;
	if ((rc = ctl_wave_arg(pos[1], &wave)) != 0)
		return rc;
	body =
	    json_pack("{s:s,s:I}", "object", pos[0], "wave", (json_int_t)wave);
	if (opts[0].set)
		json_object_set_new(body, "force", json_true());
	rc = ctl_call(c, "POST", "/routes", body, &r);
	json_decref(body);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%s -> wave %" JSON_INTEGER_FORMAT "\n",
		    ctl_str(r.json, "object"),
		    json_integer_value(json_object_get(r.json, "wave")));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl route rm OBJECT [--force] */
static int
ctl_route_rm(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--force", false, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	char *pos[1], *obj, *path;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1, "route rm")) != 0)
		return rc;
	obj = ctl_escape(c, pos[0]);
	path = xasprintf("/routes/%s%s", obj, opts[0].set ? "?force=1" : "");
	rc = ctl_call(c, "DELETE", path, NULL, &r);
	free(path);
	free(obj);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%s: route removed (was wave %" JSON_INTEGER_FORMAT
		       ")\n",
		    ctl_str(r.json, "object"),
		    json_integer_value(json_object_get(r.json, "wave")));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl route list */
static int
ctl_route_list(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	struct ctl_table t;
	json_t *routes, *rt;
	size_t i;
	char *wave;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0, "route list")) != 0)
		return rc;
	if ((rc = ctl_call(c, "GET", "/routes", NULL, &r)) != 0)
		return rc;
	routes = json_object_get(r.json, "routes");
	if (c->json)
		ctl_print_json(&r);
	else if (json_array_size(routes) == 0)
		printf("no routes: every object reads from the warehouse\n");
	else {
		ctl_table_init(&t, 3);
		ctl_table_add(&t, "OBJECT", "WAVE", "SINCE");
		json_array_foreach(routes, i, rt) {
			wave = ctl_text(json_object_get(rt, "wave"));
			ctl_table_add(&t, ctl_str(rt, "object"), wave,
			    ctl_str(rt, "since"));
			free(wave);
		}
		ctl_table_print(&t);
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/*
 * COMMAND FILE|- (route import, ledger import): post the JSON lines of
 * FILE (or stdin) to PATH as one import; the answer in *R.
 */
static int
ctl_import(struct ctl *c, int argc, char **argv, const char *command,
    const char *path, struct ctl_resp *r)
{
	char *pos[1], *buf;
	size_t len;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, pos, 1, 1, command)) != 0)
		return rc;
	if ((buf = ctl_read_all(command, pos[0], &len)) == NULL)
		return CTL_USAGE;
	rc = ctl_call_raw(c, "POST", path, buf, len, "application/x-ndjson", r);
	free(buf);
	return rc;
}

/* floectl route import FILE|- : JSON lines of routes, one synced import. */
static int
ctl_route_import(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	int rc;

	if ((rc = ctl_import(c, argc, argv, "route import", "/routes/import",
		 &r)) != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%" JSON_INTEGER_FORMAT " set, %" JSON_INTEGER_FORMAT
		       " unchanged\n",
		    json_integer_value(json_object_get(r.json, "set")),
		    json_integer_value(json_object_get(r.json, "unchanged")));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl resolve OBJECT [--client ID] */
static int
ctl_resolve(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--client", true, false, NULL },
		{ NULL, false, false, NULL } };
	static const char *const keys[] = { "object", "target", "write_target",
		"wave", "state", "pct", "since", "why", "matched", "version",
		"refuses_warehouse_writes", "client", NULL };
	struct ctl_resp r;
	struct ctl_table t;
	char *pos[1], *obj, *client = NULL, *path, *text;
	json_t *v;
	int rc, i;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1, "resolve")) != 0)
		return rc;
	obj = ctl_escape(c, pos[0]);
	if (opts[0].set)
		client = ctl_escape(c, opts[0].val);
	path = xasprintf("/resolve/%s%s%s", obj, client ? "?client=" : "",
	    client ? client : "");
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	free(client);
	free(obj);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else {
		ctl_table_init(&t, 2);
		for (i = 0; keys[i] != NULL; i++) {
			if ((v = json_object_get(r.json, keys[i])) == NULL)
				continue;
			text = ctl_text(v);
			ctl_table_add(&t, keys[i], text);
			free(text);
		}
		ctl_table_print(&t);
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl wave list */
static int
ctl_wave_list(struct ctl *c, int argc, char **argv)
{
	static const char *const keys[] = { "wave", "state", "pct", "objects",
		"rules", "since", "actor", "reason" };
	struct ctl_resp r;
	struct ctl_table t;
	json_t *waves, *w;
	char *cells[8];
	size_t i, k;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0, "wave list")) != 0)
		return rc;
	if ((rc = ctl_call(c, "GET", "/waves", NULL, &r)) != 0)
		return rc;
	waves = json_object_get(r.json, "waves");
	if (c->json)
		ctl_print_json(&r);
	else if (json_array_size(waves) == 0)
		printf("no waves: no routes and no wave state yet\n");
	else {
		ctl_table_init(&t, 8);
		ctl_table_add(&t, "WAVE", "STATE", "PCT", "OBJECTS", "RULES",
		    "SINCE", "ACTOR", "REASON");
		json_array_foreach(waves, i, w) {
			for (k = 0; k < 8; k++)
				cells[k] =
				    ctl_text(json_object_get(w, keys[k]));
			ctl_table_add(&t, cells[0], cells[1], cells[2],
			    cells[3], cells[4], cells[5], cells[6], cells[7]);
			for (k = 0; k < 8; k++)
				free(cells[k]);
		}
		ctl_table_print(&t);
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl wave show N */
static int
ctl_wave_show(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	struct ctl_table t;
	const char *key;
	char *pos[1], *path, *text;
	uint64_t n;
	json_t *v, *o;
	size_t i;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, pos, 1, 1, "wave show")) != 0)
		return rc;
	if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
		return rc;
	path = xasprintf("/waves/%" PRIu64, n);
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	if (rc != 0)
		return rc;
	if (c->json) {
		ctl_print_json(&r);
		ctl_resp_clear(&r);
		return CTL_OK;
	}
	ctl_table_init(&t, 2);
	json_object_foreach(r.json, key, v) {
		if (json_is_array(v))
			continue;
		text = ctl_text(v);
		ctl_table_add(&t, key, text);
		free(text);
	}
	ctl_table_print(&t);
	json_object_foreach(r.json, key, v) {
		if (!json_is_array(v))
			continue;
		printf("%s:%s\n", key, json_array_size(v) == 0 ? " none" : "");
		json_array_foreach(v, i, o) {
			text = ctl_text(o);
			printf("  %s\n", text);
			free(text);
		}
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* POST /waves/N/WHAT with BODY and print "wave N: from -> to". */
static int
ctl_wave_move(struct ctl *c, const char *n, const char *what, json_t *body)
{
	struct ctl_resp r;
	char *path;
	int rc;

	path = xasprintf("/waves/%s/%s", n, what);
	rc = ctl_call(c, "POST", path, body, &r);
	free(path);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else if (strcmp(what, "signoff") == 0 || strcmp(what, "set") == 0 ||
	    strcmp(what, "freeze") == 0)
		printf("%s\n", ctl_str(r.json, "message"));
	else if (strcmp(ctl_str(r.json, "state"), "canary") == 0)
		printf("wave %s: %s -> canary (%" JSON_INTEGER_FORMAT "%%)\n",
		    n, ctl_str(r.json, "from"),
		    json_integer_value(json_object_get(r.json, "pct")));
	else
		printf("wave %s: %s -> %s\n", n, ctl_str(r.json, "from"),
		    ctl_str(r.json, "state"));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl wave flip N lakehouse [--canary PCT] [--reason TEXT] */
static int
ctl_wave_flip(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--canary", true, false, NULL },
		{ "--reason", true, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[2], num[16];
	uint64_t n, pct = 100;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 2, 2, "wave flip")) != 0)
		return rc;
	if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
		return rc;
	if (strcmp(pos[1], "lakehouse") != 0)
		return ctl_usage_error(
		    "wave flip: the target is \"lakehouse\", "
		    "not \"%s\" (wave rollback goes back)",
		    pos[1]);
	if (opts[0].set && ctl_parse_u64(opts[0].val, 1, 100, &pct) == -1)
		return ctl_usage_error(
		    "wave flip: --canary takes a share 1..100, not \"%s\"",
		    opts[0].val);
	body = json_pack("{s:s}", "to", opts[0].set ? "canary" : "lakehouse");
	if (opts[0].set)
		json_object_set_new(body, "pct", json_integer((json_int_t)pct));
	if (opts[1].set)
		json_object_set_new(body, "reason", json_string(opts[1].val));
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "flip", body);
	json_decref(body);
	return rc;
}

/* floectl wave rollback N [--reason TEXT] [--force-stale] */
static int
ctl_wave_rollback(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--reason", true, false, NULL },
		{ "--force-stale", false, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[1], num[16];
	uint64_t n;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1, "wave rollback")) !=
	    0)
		return rc;
	if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
		return rc;
	body = json_object();
	if (opts[0].set)
		json_object_set_new(body, "reason", json_string(opts[0].val));
	if (opts[1].set)
		json_object_set_new(body, "force_stale", json_true());
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "rollback", body);
	json_decref(body);
	return rc;
}

/* floectl wave ack N, wave retire N: a transition with no options. */
static int
ctl_wave_bare(struct ctl *c, int argc, char **argv, const char *action)
{
	char *pos[1], num[16], what[32];
	uint64_t n;
	int rc;

	snprintf(what, sizeof(what), "wave %s", action);
	if ((rc = ctl_args(argc, argv, c, NULL, pos, 1, 1, what)) != 0)
		return rc;
	if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
		return rc;
	snprintf(num, sizeof(num), "%" PRIu64, n);
	return ctl_wave_move(c, num, action, NULL);
}

static int
ctl_wave_ack(struct ctl *c, int argc, char **argv)
{
	return ctl_wave_bare(c, argc, argv, "ack");
}

static int
ctl_wave_retire(struct ctl *c, int argc, char **argv)
{
	return ctl_wave_bare(c, argc, argv, "retire");
}

/*
 * The objects of a gate refusal's "blocking" list as a table on stderr:
 * object, clean and dirty counts, dirty records by bucket.
 */
static void
ctl_print_blocking(json_t *list)
{
	struct ctl_table t;
	json_t *o, *b, *v;
	const char *key;
	char *clean, *dirty, *buckets, *p;
	size_t i;

	if (json_array_size(list) == 0)
		return;
	ctl_table_init(&t, 4);
	ctl_table_add(&t, "OBJECT", "CLEAN", "DIRTY", "BUCKETS");
	json_array_foreach(list, i, o) {
		clean = ctl_text(json_object_get(o, "clean"));
		dirty = ctl_text(json_object_get(o, "dirty"));
		buckets = xstrdup("");
		b = json_object_get(o, "buckets");
		json_object_foreach(b, key, v) {
			p = xasprintf("%s%s%s %" JSON_INTEGER_FORMAT, buckets,
			    buckets[0] != '\0' ? ", " : "", key,
			    json_integer_value(v));
			free(buckets);
			buckets = p;
		}
		ctl_table_add(&t, ctl_str(o, "object"), clean, dirty,
		    buckets[0] != '\0' ? buckets : "-");
		free(clean);
		free(dirty);
		free(buckets);
	}
	ctl_table_fprint(stderr, &t);
}

/* Read all of PATH ("-": stdin) into a new buffer. NULL with a message. */
static char *
ctl_read_all(const char *cmd, const char *path, size_t *len)
{
	FILE *f;
	char *buf = NULL;
	size_t cap = 0, n;

	*len = 0;
	if (strcmp(path, "-") == 0)
		f = stdin;
	else if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "floectl: %s: %s: %s\n", cmd, path,
		    strerror(errno));
		return NULL;
	}
	for (;;) {
		if (*len == cap) {
			cap = cap != 0 ? cap * 2 : 1 << 20;
			buf = xreallocarray(buf, cap + 1, 1);
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
		if (*len > CTL_IMPORT_MAX) {
			fprintf(stderr,
			    "floectl: %s: %s is larger than %d MiB; split "
			    "it (each import is all or nothing)\n",
			    cmd, path, CTL_IMPORT_MAX >> 20);
			goto fail;
		}
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "floectl: %s: reading %s: %s\n", cmd, path,
		    strerror(errno));
		goto fail;
	}
	if (f != stdin)
		fclose(f);
	buf[*len] = '\0';
	return buf;
fail:
	if (f != stdin)
		fclose(f);
	free(buf);
	return NULL;
}

/* floectl wave signoff N --by NAME */
static int
ctl_wave_signoff(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--by", true, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[1], num[16];
	uint64_t n;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1, "wave signoff")) !=
	    0)
		return rc;
	if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
		return rc;
	if (!opts[0].set || opts[0].val[0] == '\0')
		return ctl_usage_error("wave signoff: --by NAME is required");
	body = json_pack("{s:s}", "by", opts[0].val);
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "signoff", body);
	json_decref(body);
	return rc;
}

/* floectl wave freeze N [--reason TEXT] */
static int
ctl_wave_freeze(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--reason", true, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[1], num[16];
	uint64_t n;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1, "wave freeze")) != 0)
		return rc;
	if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
		return rc;
	body = json_object();
	if (opts[0].set)
		json_object_set_new(body, "reason", json_string(opts[0].val));
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "freeze", body);
	json_decref(body);
	return rc;
}

/* floectl wave set N [--min-clean N|default] [--window DUR|default] */
static int
ctl_wave_set(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--min-clean", true, false, NULL },
		{ "--window", true, false, NULL },
		{ "--count-check", true, false, NULL },
		{ NULL, false, false, NULL } };
	char *pos[1], num[16];
	uint64_t n, v;
	json_t *body;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1, "wave set")) != 0)
		return rc;
	if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
		return rc;
	if (!opts[0].set && !opts[1].set && !opts[2].set)
		return ctl_usage_error("wave set: give --min-clean N, --window "
				       "DUR, --count-check on|off or several");
	if (opts[2].set && strcmp(opts[2].val, "on") != 0 &&
	    strcmp(opts[2].val, "off") != 0)
		return ctl_usage_error(
		    "wave set: --count-check takes on or off, not \"%s\"",
		    opts[2].val);
	body = json_object();
	if (opts[2].set)
		json_object_set_new(body, "count_check",
		    json_boolean(strcmp(opts[2].val, "on") == 0));
	if (opts[0].set) {
		if (strcmp(opts[0].val, "default") == 0)
			json_object_set_new(body, "gate_min_clean",
			    json_null());
		else if (ctl_parse_u64(opts[0].val, 1, 1000000, &v) == 0)
			json_object_set_new(body, "gate_min_clean",
			    json_integer((json_int_t)v));
		else {
			json_decref(body);
			return ctl_usage_error(
			    "wave set: --min-clean takes 1..1000000 or "
			    "\"default\", not \"%s\"",
			    opts[0].val);
		}
	}
	if (opts[1].set) {
		if (strcmp(opts[1].val, "default") == 0)
			json_object_set_new(body, "gate_window", json_null());
		else if (units_duration(opts[1].val, &v) == 0 && v > 0)
			json_object_set_new(body, "gate_window",
			    json_string(opts[1].val));
		else {
			json_decref(body);
			return ctl_usage_error(
			    "wave set: --window takes a duration (\"14d\") or "
			    "\"default\", not \"%s\"",
			    opts[1].val);
		}
	}
	snprintf(num, sizeof(num), "%" PRIu64, n);
	rc = ctl_wave_move(c, num, "set", body);
	json_decref(body);
	return rc;
}

/*
 * floectl ledger add OBJECT --count ok|fail --aggregate ok|fail
 * --hash ok|fail [--bucket B] [--at TIME] [--source S]
 */
static int
ctl_ledger_add(struct ctl *c, int argc, char **argv)
{
	static const char *const tiers[] = { "count_match", "aggregate_match",
		"hash_match" };
	struct ctl_opt opts[] = { { "--count", true, false, NULL },
		{ "--aggregate", true, false, NULL },
		{ "--hash", true, false, NULL },
		{ "--bucket", true, false, NULL },
		{ "--at", true, false, NULL },
		{ "--source", true, false, NULL },
		{ NULL, false, false, NULL } };
	struct ctl_resp r;
	char *pos[1], ts[40];
	int64_t at;
	json_t *body;
	int rc, i;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1, "ledger add")) != 0)
		return rc;
	body = json_pack("{s:s}", "object", pos[0]);
	for (i = 0; i < 3; i++) {
		if (!opts[i].set) {
			json_decref(body);
			return ctl_usage_error(
			    "ledger add: %s ok|fail is required", opts[i].name);
		}
		if (strcmp(opts[i].val, "ok") != 0 &&
		    strcmp(opts[i].val, "fail") != 0) {
			json_decref(body);
			return ctl_usage_error(
			    "ledger add: %s takes ok or fail, not \"%s\"",
			    opts[i].name, opts[i].val);
		}
		json_object_set_new(body, tiers[i],
		    json_boolean(strcmp(opts[i].val, "ok") == 0));
	}
	if (opts[4].set) {
		if (units_time_parse(opts[4].val, &at) == -1) {
			json_decref(body);
			return ctl_usage_error("ledger add: --at takes an RFC "
					       "3339 time, not \"%s\"",
			    opts[4].val);
		}
	} else
		at = units_now_ms();
	units_time_format(at, ts, sizeof(ts));
	json_object_set_new(body, "ts", json_string(ts));
	if (opts[3].set)
		json_object_set_new(body, "bucket", json_string(opts[3].val));
	json_object_set_new(body, "source",
	    json_string(opts[5].set ? opts[5].val : "floectl"));
	rc = ctl_call(c, "POST", "/ledger", body, &r);
	json_decref(body);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("%s at %s: %s\n", pos[0], ts,
		    json_integer_value(json_object_get(r.json, "added")) > 0 ?
			"recorded" :
			"already recorded");
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl ledger import FILE|- : JSON lines, one synced import. */
static int
ctl_ledger_import(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	int rc;

	if ((rc = ctl_import(c, argc, argv, "ledger import", "/ledger", &r)) !=
	    0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else
		printf("imported %" JSON_INTEGER_FORMAT
		       " records: %" JSON_INTEGER_FORMAT
		       " new, %" JSON_INTEGER_FORMAT " already recorded\n",
		    json_integer_value(json_object_get(r.json, "records")),
		    json_integer_value(json_object_get(r.json, "added")),
		    json_integer_value(json_object_get(r.json, "duplicates")));
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl ledger show OBJECT [--limit N] */
static int
ctl_ledger_show(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--limit", true, false, NULL },
		{ NULL, false, false, NULL } };
	static const char *const keys[] = { "ts", "count_match",
		"aggregate_match", "hash_match", "bucket", "source" };
	struct ctl_resp r;
	struct ctl_table t;
	char *pos[1], *obj, *path, *cells[6];
	uint64_t limit = 20;
	json_t *recs, *rec;
	size_t i, k;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1, "ledger show")) != 0)
		return rc;
	if (opts[0].set && ctl_parse_u64(opts[0].val, 1, 100000, &limit) == -1)
		return ctl_usage_error(
		    "ledger show: --limit takes 1..100000, not \"%s\"",
		    opts[0].val);
	obj = ctl_escape(c, pos[0]);
	path = xasprintf("/ledger?object=%s&limit=%" PRIu64, obj, limit);
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	free(obj);
	if (rc != 0)
		return rc;
	recs = json_object_get(r.json, "records");
	if (c->json)
		ctl_print_json(&r);
	else if (json_array_size(recs) == 0)
		printf("%s: no ledger records\n", ctl_str(r.json, "object"));
	else {
		printf("%s: %" JSON_INTEGER_FORMAT " records%s\n",
		    ctl_str(r.json, "object"),
		    json_integer_value(json_object_get(r.json, "total")),
		    (json_int_t)json_array_size(recs) <
			    json_integer_value(
				json_object_get(r.json, "total")) ?
			", the newest shown" :
			"");
		ctl_table_init(&t, 6);
		ctl_table_add(&t, "TS", "COUNT", "AGGREGATE", "HASH", "BUCKET",
		    "SOURCE");
		json_array_foreach(recs, i, rec) {
			for (k = 0; k < 6; k++) {
				json_t *v = json_object_get(rec, keys[k]);

				cells[k] = json_is_boolean(v) ?
				    xstrdup(json_is_true(v) ? "ok" : "FAIL") :
				    ctl_text(v);
			}
			ctl_table_add(&t, cells[0], cells[1], cells[2],
			    cells[3], cells[4], cells[5]);
			for (k = 0; k < 6; k++)
				free(cells[k]);
		}
		ctl_table_print(&t);
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* One gate's per-object evidence as an indented table. */
static void
ctl_print_evidence(const char *title, json_t *g)
{
	struct ctl_table t;
	json_t *objs = json_object_get(g, "objects"), *o, *b, *v;
	const char *key;
	char *clean, *dirty, *buckets, *p;
	size_t i;

	printf("  %s: %s\n    %s\n", title,
	    json_is_true(json_object_get(g, "pass")) ? "holds" : "BLOCKED",
	    ctl_str(g, "message"));
	if (json_array_size(objs) == 0)
		return;
	ctl_table_init(&t, 6);
	ctl_table_add(&t, "    OBJECT", "CLEAN", "DIRTY", "BUCKETS", "NEWEST",
	    "PASS");
	json_array_foreach(objs, i, o) {
		clean = ctl_text(json_object_get(o, "clean"));
		dirty = ctl_text(json_object_get(o, "dirty"));
		buckets = xstrdup("");
		b = json_object_get(o, "buckets");
		json_object_foreach(b, key, v) {
			p = xasprintf("%s%s%s %" JSON_INTEGER_FORMAT, buckets,
			    buckets[0] != '\0' ? ", " : "", key,
			    json_integer_value(v));
			free(buckets);
			buckets = p;
		}
		p = xasprintf("    %s", ctl_str(o, "object"));
		ctl_table_add(&t, p, clean, dirty,
		    buckets[0] != '\0' ? buckets : "-", ctl_str(o, "newest"),
		    json_is_true(json_object_get(o, "pass")) ? "yes" : "no");
		free(p);
		free(clean);
		free(dirty);
		free(buckets);
	}
	ctl_table_print(&t);
}

/* floectl eligible [N]: the gates' evidence and the drift triage. */
static int
ctl_eligible(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	char *pos[1] = { NULL }, *path;
	uint64_t n;
	json_t *waves, *w, *tr, *t, *o;
	size_t i, k, m;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, pos, 0, 1, "eligible")) != 0)
		return rc;
	if (pos[0] != NULL) {
		if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
			return rc;
		path = xasprintf("/eligibility?wave=%" PRIu64, n);
	} else
		path = xstrdup("/eligibility");
	rc = ctl_call(c, "GET", path, NULL, &r);
	free(path);
	if (rc != 0)
		return rc;
	waves = json_object_get(r.json, "waves");
	if (c->json)
		ctl_print_json(&r);
	else if (json_array_size(waves) == 0)
		printf("no waves: no routes and no wave state yet\n");
	json_array_foreach(c->json ? NULL : waves, i, w) {
		printf("%swave %" JSON_INTEGER_FORMAT "  %s\n",
		    i > 0 ? "\n" : "",
		    json_integer_value(json_object_get(w, "wave")),
		    ctl_str(w, "state"));
		ctl_print_evidence("cutover gate",
		    json_object_get(w, "cutover"));
		ctl_print_evidence("decommission gate",
		    json_object_get(w, "decommission"));
		tr = json_object_get(w, "triage");
		if (json_array_size(tr) == 0) {
			printf("  triage: no open mismatches\n");
			continue;
		}
		printf("  triage (open mismatches):\n");
		json_array_foreach(tr, k, t) {
			printf("    %s: %s\n", ctl_str(t, "bucket"),
			    ctl_str(t, "action"));
			json_array_foreach(json_object_get(t, "objects"), m, o)
				printf("      %s  %" JSON_INTEGER_FORMAT
				       " record%s since %s\n",
				    ctl_str(o, "object"),
				    json_integer_value(
					json_object_get(o, "records")),
				    json_integer_value(
					json_object_get(o, "records")) == 1 ?
					"" :
					"s",
				    ctl_str(o, "since"));
		}
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/*
 * floectl events [--follow] [--after SEQ]: page through the event log;
 * with --follow keep polling every 500 ms until interrupted (one JSON
 * line per event with --json).
 */
static int
ctl_events(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--follow", false, false, NULL },
		{ "--after", true, false, NULL },
		{ NULL, false, false, NULL } };
	struct sigaction sa;
	struct ctl_resp r;
	json_t *all = NULL, *events, *ev;
	uint64_t after = 0;
	json_int_t last = 0;
	size_t i, n;
	char *path, *line;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, NULL, 0, 0, "events")) != 0)
		return rc;
	if (opts[1].set &&
	    ctl_parse_u64(opts[1].val, 0, UINT64_MAX, &after) == -1)
		return ctl_usage_error(
		    "events: --after takes a sequence number, not \"%s\"",
		    opts[1].val);
	if (opts[0].set) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = ctl_sigint_cb;
		sigemptyset(&sa.sa_mask);
		(void)sigaction(SIGINT, &sa, NULL);
		(void)sigaction(SIGTERM, &sa, NULL);
	}
	if (c->json && !opts[0].set)
		all = json_array();
	while (!ctl_stop) {
		path = xasprintf("/events?after=%" PRIu64 "&limit=%d", after,
		    CTL_EVENTS_PAGE);
		rc = ctl_call(c, "GET", path, NULL, &r);
		free(path);
		if (rc != 0) {
			json_decref(all);
			return rc;
		}
		events = json_object_get(r.json, "events");
		n = json_array_size(events);
		last = json_integer_value(json_object_get(r.json, "last_seq"));
		json_array_foreach(events, i, ev) {
			json_int_t seq =
			    json_integer_value(json_object_get(ev, "seq"));

			if (seq > 0 && (uint64_t)seq > after)
				after = (uint64_t)seq;
			if (all != NULL)
				json_array_append(all, ev);
			else if (c->json) {
				line = json_dumps(ev, JSON_COMPACT);
				if (line != NULL)
					printf("%s\n", line);
				free(line);
				fflush(stdout);
			} else
				ctl_print_event(ev);
		}
		ctl_resp_clear(&r);
		if (n == CTL_EVENTS_PAGE)
			continue;
		if (!opts[0].set)
			break;
		ctl_sleep_ms(CTL_FOLLOW_MS);
	}
	if (all != NULL) {
		ev = json_pack("{s:o,s:I}", "events", all, "last_seq", last);
		line = ev != NULL ? json_dumps(ev, JSON_COMPACT) : NULL;
		if (line != NULL)
			printf("%s\n", line);
		free(line);
		json_decref(ev);
	}
	return CTL_OK;
}

/* floectl wave report-errors N --errors E --total T [--side S] */
static int
ctl_wave_report_errors(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--errors", true, false, NULL },
		{ "--total", true, false, NULL },
		{ "--side", true, false, NULL }, { NULL, false, false, NULL } };
	struct ctl_resp r;
	uint64_t n, e, t;
	char *pos[1], *path;
	json_t *body, *win;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, pos, 1, 1,
		 "wave report-errors")) != 0)
		return rc;
	if ((rc = ctl_wave_arg(pos[0], &n)) != 0)
		return rc;
	if (!opts[0].set || !opts[1].set)
		return ctl_usage_error(
		    "wave report-errors: give --errors E and --total T");
	if (ctl_parse_u64(opts[1].val, 1, 1000000000, &t) == -1 ||
	    ctl_parse_u64(opts[0].val, 0, t, &e) == -1)
		return ctl_usage_error(
		    "wave report-errors: --total takes 1..1000000000 and "
		    "--errors 0..total, not \"%s\" and \"%s\"",
		    opts[1].val, opts[0].val);
	body = json_pack("{s:I,s:I}", "errors", (json_int_t)e, "total",
	    (json_int_t)t);
	if (opts[2].set)
		json_object_set_new(body, "side", json_string(opts[2].val));
	path = xasprintf("/waves/%" PRIu64 "/errors", n);
	rc = ctl_call(c, "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (rc != 0)
		return rc;
	if (c->json)
		ctl_print_json(&r);
	else {
		win = json_object_get(r.json, "window");
		printf(
		    "wave %" PRIu64 ": %" PRIu64 " errors in %" PRIu64
		    " %s reads counted; the window holds %" JSON_INTEGER_FORMAT
		    " errors in %" JSON_INTEGER_FORMAT " reads; wave is %s\n",
		    n, e, t, ctl_str(r.json, "side"),
		    json_integer_value(json_object_get(win, "errors")),
		    json_integer_value(json_object_get(win, "requests")),
		    ctl_str(r.json, "state"));
	}
	ctl_resp_clear(&r);
	return CTL_OK;
}

/*
 * One rollback log line, readably: when, which wave, which trigger, the
 * move and who; then the objects, the measurement and the reason.
 */
static void
ctl_print_rollback(json_t *l)
{
	char *m, *t, *objs;
	json_int_t held;
	char dur[32];

	if (json_object_get(l, "unparsed") != NULL) {
		printf("(unreadable line) %s\n", ctl_str(l, "unparsed"));
		return;
	}
	m = ctl_text(json_object_get(l, "measured"));
	t = ctl_text(json_object_get(l, "threshold"));
	objs = ctl_text(json_object_get(l, "objects"));
	held = json_integer_value(json_object_get(l, "held_ms"));
	units_format_duration(held > 0 ? (uint64_t)held : 0, dur, sizeof(dur));
	printf("%s  wave %" JSON_INTEGER_FORMAT "  %s  %s -> %s  by %s\n",
	    ctl_str(l, "ts"), json_integer_value(json_object_get(l, "wave")),
	    ctl_str(l, "trigger"), ctl_str(l, "from"), ctl_str(l, "to"),
	    ctl_str(l, "actor"));
	printf("    objects:   %s\n", objs);
	if (!json_is_null(json_object_get(l, "measured")) ||
	    !json_is_null(json_object_get(l, "threshold")))
		printf("    measured:  %s  threshold: %s  held: %s\n", m, t,
		    dur);
	if (json_is_string(json_object_get(l, "reason")))
		printf("    reason:    %s\n", ctl_str(l, "reason"));
	free(m);
	free(t);
	free(objs);
}

/* floectl rollbacks [--follow]: the rollback log, oldest first. */
static int
ctl_rollbacks(struct ctl *c, int argc, char **argv)
{
	struct ctl_opt opts[] = { { "--follow", false, false, NULL },
		{ NULL, false, false, NULL } };
	struct sigaction sa;
	struct ctl_resp r;
	json_t *list, *l, *all = NULL;
	uint64_t after = 0;
	size_t i, n;
	char *path, *line;
	int rc;

	if ((rc = ctl_args(argc, argv, c, opts, NULL, 0, 0, "rollbacks")) != 0)
		return rc;
	if (opts[0].set) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = ctl_sigint_cb;
		sigemptyset(&sa.sa_mask);
		(void)sigaction(SIGINT, &sa, NULL);
		(void)sigaction(SIGTERM, &sa, NULL);
	}
	if (c->json && !opts[0].set)
		all = json_array();
	while (!ctl_stop) {
		path = xasprintf("/rollbacks?after=%" PRIu64 "&limit=%d", after,
		    CTL_EVENTS_PAGE);
		rc = ctl_call(c, "GET", path, NULL, &r);
		free(path);
		if (rc != 0) {
			json_decref(all);
			return rc;
		}
		list = json_object_get(r.json, "rollbacks");
		n = json_array_size(list);
		after = (uint64_t)json_integer_value(
		    json_object_get(r.json, "next"));
		json_array_foreach(list, i, l) {
			if (all != NULL)
				json_array_append(all, l);
			else if (c->json) {
				line = json_dumps(l,
				    JSON_COMPACT | JSON_PRESERVE_ORDER);
				if (line != NULL)
					printf("%s\n", line);
				free(line);
			} else
				ctl_print_rollback(l);
		}
		fflush(stdout);
		ctl_resp_clear(&r);
		if (n == CTL_EVENTS_PAGE)
			continue;
		if (!opts[0].set)
			break;
		ctl_sleep_ms(CTL_FOLLOW_MS);
	}
	if (all != NULL) {
		l = json_pack("{s:o}", "rollbacks", all);
		line = l != NULL ? json_dumps(l, JSON_COMPACT) : NULL;
		if (line != NULL)
			printf("%s\n", line);
		free(line);
		json_decref(l);
	} else if (!c->json && !opts[0].set && after == 0)
		printf("no rollbacks\n");
	return CTL_OK;
}

/* floectl metrics */
static int
ctl_metrics(struct ctl *c, int argc, char **argv)
{
	struct ctl_resp r;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, NULL, 0, 0, "metrics")) != 0)
		return rc;
	if ((rc = ctl_call(c, "GET", "/metrics", NULL, &r)) != 0)
		return rc;
	fwrite(r.body, 1, r.len, stdout);
	ctl_resp_clear(&r);
	return CTL_OK;
}

/* floectl help */
static int
ctl_help(struct ctl *c, int argc, char **argv)
{
	(void)c;
	(void)argc;
	(void)argv;
	ctl_usage(stdout);
	return CTL_OK;
}

/* Parse the global options, find the command, run it. */
int
main(int argc, char **argv)
{
	const char *sock = NULL, *conf_path = NULL;
	struct conf *conf = NULL;
	struct ctl c;
	const struct ctl_cmd *cmd = NULL;
	char err[512];
	size_t k;
	int i, rc, used;

	memset(&c, 0, sizeof(c));
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			ctl_usage(stdout);
			return CTL_OK;
		} else if (strcmp(a, "--json") == 0)
			c.json = true;
		else if (strcmp(a, "-s") == 0 || strcmp(a, "-c") == 0) {
			if (i + 1 == argc)
				return ctl_usage_error("%s needs a value", a);
			if ((a[1] == 's' && sock != NULL) ||
			    (a[1] == 'c' && conf_path != NULL))
				return ctl_usage_error("%s given twice", a);
			if (a[1] == 's')
				sock = argv[++i];
			else
				conf_path = argv[++i];
		} else
			return ctl_usage_error("unknown option %s", a);
	}
	if (sock != NULL && conf_path != NULL)
		return ctl_usage_error("-s and -c cannot be used together");
	if (i == argc)
		return ctl_usage_error("no command given");

	for (k = 0; k < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); k++) {
		if (strcmp(ctl_cmds[k].word1, argv[i]) != 0)
			continue;
		if (ctl_cmds[k].word2 == NULL) {
			cmd = &ctl_cmds[k];
			break;
		}
		if (i + 1 < argc &&
		    strcmp(ctl_cmds[k].word2, argv[i + 1]) == 0) {
			cmd = &ctl_cmds[k];
			break;
		}
	}
	if (cmd == NULL) {
		for (k = 0; k < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); k++)
			if (strcmp(ctl_cmds[k].word1, argv[i]) == 0)
				return ctl_usage_error("%s: unknown or missing "
						       "subcommand%s%s",
				    argv[i], i + 1 < argc ? " " : "",
				    i + 1 < argc ? argv[i + 1] : "");
		return ctl_usage_error("unknown command \"%s\"", argv[i]);
	}
	if (cmd->fn == ctl_help)
		return ctl_help(&c, 0, NULL);
	used = cmd->word2 != NULL ? 2 : 1;

	if (sock == NULL && conf_path != NULL) {
		if ((conf = conf_load(conf_path, err, sizeof(err))) == NULL) {
			fprintf(stderr, "floectl: %s\n", err);
			return CTL_USAGE;
		}
		sock = conf->admin_socket != NULL ? conf->admin_socket :
						    CTL_DEFAULT_SOCKET;
	}
	if (sock == NULL)
		sock = getenv("FLOE_SOCKET");
	if (sock == NULL || *sock == '\0')
		sock = CTL_DEFAULT_SOCKET;
	c.sock = sock;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (c.curl = curl_easy_init()) == NULL) {
		fprintf(stderr, "floectl: cannot initialise libcurl\n");
		conf_free(conf);
		return CTL_UNREACHABLE;
	}
	rc = cmd->fn(&c, argc - i - used, argv + i + used);
	curl_easy_cleanup(c.curl);
	curl_global_cleanup();
	conf_free(conf);
	return rc;
}
