/*
 * floe: client.c -- floectl's admin-socket client: HTTP over floe's Unix
 * socket with one libcurl easy handle, an answer's JSON parsed, an error
 * answer turned into one message and an exit status, and files read whole
 * to be posted as imports.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "ctl/ctl.h"
#include "lib/xmalloc.h"

static size_t ctl_write_cb(char *, size_t, size_t, void *);
static int ctl_unreachable(struct ctl *, const char *);
static void ctl_warn_rollbacks(json_t *);
static void ctl_say(struct ctl *, const char *, ...)
    __attribute__((__format__(__printf__, 2, 3)));
static char *ctl_read_all(const struct ctl *, const char *, size_t *);
static char *ctl_one_record(const struct ctl *, const char *);

/* Set up libcurl and C's handle. 0, or -1 with a message. */
int
ctl_client_init(struct ctl *c)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (c->curl = curl_easy_init()) == NULL) {
		fprintf(stderr, "floectl: cannot initialise libcurl\n");
		return -1;
	}
	return 0;
}

/* Free C's handle and libcurl's global state. */
void
ctl_client_free(struct ctl *c)
{
	curl_easy_cleanup(c->curl);
	c->curl = NULL;
	curl_global_cleanup();
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
void
ctl_resp_clear(struct ctl_resp *r)
{
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

/*
 * Say that floe cannot be reached (or did not answer): on stderr, or when
 * C is quiet (a --follow riding out a restart) into C->errmsg, for the
 * caller to say once.
 */
static void
ctl_say(struct ctl *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (c->quiet)
		vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	else {
		fputs("floectl: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

/*
 * Say why floe cannot be reached. libcurl only says it could not connect;
 * a connect of our own gives the reason (no such file, refused, denied).
 */
static int
ctl_unreachable(struct ctl *c, const char *curl_err)
{
	struct sockaddr_un sun;
	int fd, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(c->sock) >= sizeof(sun.sun_path)) {
		ctl_say(c, "cannot reach floe at %s: socket path too long",
		    c->sock);
		return CTL_UNREACHABLE;
	}
	memcpy(sun.sun_path, c->sock, strlen(c->sock));
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1) {
		ctl_say(c, "cannot reach floe at %s: socket: %s", c->sock,
		    strerror(errno));
		return CTL_UNREACHABLE;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		close(fd);
		ctl_say(c, "cannot reach floe at %s: %s", c->sock,
		    strerror(saved));
	} else {
		close(fd);
		ctl_say(c, "cannot reach floe at %s: %s", c->sock, curl_err);
	}
	if (!c->quiet && c->sock_from != NULL &&
	    strcmp(c->sock_from, "-s") != 0)
		fprintf(stderr, "floectl: (that path is %s)\n", c->sock_from);
	return CTL_UNREACHABLE;
}

/*
 * A change that made a trigger roll waves back (the answer's
 * "rolled_back"): one warning line on stderr per wave, with the trigger
 * and its evidence. The change itself was made: the exit status stays 0.
 */
static void
ctl_warn_rollbacks(json_t *answer)
{
	json_t *rb = json_object_get(answer, "rolled_back"), *one;
	const char *ev;
	size_t i;

	json_array_foreach(rb, i, one) {
		ev = json_string_value(json_object_get(one, "evidence"));
		fprintf(stderr,
		    "floectl: warning: this rolled wave %" JSON_INTEGER_FORMAT
		    " back to the warehouse: %s trigger%s%s\n",
		    json_integer_value(json_object_get(one, "wave")),
		    json_string_value(json_object_get(one, "trigger")) != NULL ?
			json_string_value(json_object_get(one, "trigger")) :
			"a",
		    ev != NULL ? ", " : "", ev != NULL ? ev : "");
	}
}

/*
 * METHOD PATH with the JSON BODY (or none). On a 2xx answer returns 0 with
 * the answer in *R (the caller clears it). Otherwise prints why (and the
 * error JSON to stdout with --json) and returns the exit status: 1 for a
 * refusal (409), 2 for a request floe found wrong (other 4xx), 3 when floe
 * cannot be reached, refuses this user (401, 403) or fails (5xx).
 */
int
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
 * type CTYPE, such as the JSON lines of a ledger import. With
 * c->one_record, an error is said of the command, not of an import.
 */
int
ctl_call_raw(struct ctl *c, const char *method, const char *path,
    const char *payload, size_t len, const char *ctype, struct ctl_resp *r)
{
	char errbuf[CURL_ERROR_SIZE], *url, *hct = NULL, *one = NULL;
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
	/*
	 * A read is answered at once or floe is stuck. A change may wait
	 * behind an import that runs for minutes, and it lands whether or
	 * not floectl is still waiting: giving up would report a failure
	 * for a change that was applied. So a change waits for floe's
	 * answer (a floe that dies closes the socket; Ctrl-C abandons a
	 * change still queued, and floe drops it).
	 */
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT,
	    strcmp(method, "GET") == 0 ? (long)CTL_TIMEOUT_S : 0L);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, (long)CTL_TIMEOUT_S);
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
		ctl_say(c, "no answer from floe at %s: %s", c->sock,
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
		return CTL_UNREACHABLE;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->body == NULL)
		r->body = xstrdup("");
	r->json = json_loadb(r->body, r->len, 0, NULL);
	if (r->status >= 200 && r->status < 300) {
		if (r->json != NULL && strcmp(method, "GET") != 0)
			ctl_warn_rollbacks(r->json);
		if (r->json != NULL || strcmp(path, "/metrics") == 0)
			return 0;
		ctl_say(c, "floe at %s answered %ld with no JSON: %.200s",
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
	if (c->json && r->json != NULL &&
	    !(c->quiet && status == CTL_UNREACHABLE))
		ctl_print_json(r);
	if (msg != NULL && c->one_record)
		msg = one = ctl_one_record(c, msg);
	if (status == CTL_REFUSED) {
		fprintf(stderr, "floectl: refused: %s\n", msg ? msg : r->body);
		if (!c->json)
			ctl_print_blocking(json_object_get(e, "blocking"));
		/* A reload's errors, one a line (PATH:LINE: ...). */
		if (!c->json)
			ctl_print_errors(json_object_get(e, "errors"));
	} else if (status == CTL_USAGE)
		fprintf(stderr, "floectl: %s\n", msg ? msg : r->body);
	else
		ctl_say(c, "floe at %s answered %ld: %s", c->sock, r->status,
		    msg ? msg : r->body);
	free(one);
	ctl_resp_clear(r);
	return status;
}

/*
 * floe answers a POST /ledger as an import: "line 1: WHY; nothing was
 * imported". For a command that posts one record, "COMMAND: WHY" says it
 * as it is. Caller frees.
 */
static char *
ctl_one_record(const struct ctl *c, const char *msg)
{
	static const char *const where[] = { "line 1: ", "record 1: " };
	static const char outcome[] = "; nothing was imported";
	char name[64];
	size_t i, len;

	for (i = 0; i < 2; i++)
		if (strncmp(msg, where[i], strlen(where[i])) == 0) {
			msg += strlen(where[i]);
			break;
		}
	len = strlen(msg);
	if (len >= sizeof(outcome) - 1 &&
	    strcmp(msg + len - (sizeof(outcome) - 1), outcome) == 0)
		len -= sizeof(outcome) - 1;
	return xasprintf("%s: %.*s", ctl_cmd_name(c, name, sizeof(name)),
	    (int)len, msg);
}

/* Percent-encode S for a path segment or query value. Caller frees. */
char *
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

/* GET PATH page by page and gather the arrays under KEY into *ALL. */
int
ctl_list(struct ctl *c, const char *path, const char *key, json_t **all)
{
	struct ctl_resp r;
	json_t *next;
	char *after = NULL, *p;
	int rc;

	*all = json_array();
	do {
		p = after == NULL ?
		    xasprintf("%s?limit=%d", path, CTL_LIST_PAGE) :
		    xasprintf("%s?limit=%d&after=%s", path, CTL_LIST_PAGE,
			after);
		free(after);
		after = NULL;
		rc = ctl_call(c, "GET", p, NULL, &r);
		free(p);
		if (rc != 0) {
			json_decref(*all);
			*all = NULL;
			return rc;
		}
		json_array_extend(*all, json_object_get(r.json, key));
		/* A floe that does not page answers all of it, without next. */
		next = json_object_get(r.json, "next");
		if (json_is_string(next))
			after = ctl_escape(c, json_string_value(next));
		else if (json_is_integer(next))
			after = xasprintf("%" JSON_INTEGER_FORMAT,
			    json_integer_value(next));
		ctl_resp_clear(&r);
	} while (after != NULL);
	return CTL_OK;
}

/* Read all of PATH ("-": stdin) into a new buffer. NULL with a message. */
static char *
ctl_read_all(const struct ctl *c, const char *path, size_t *len)
{
	FILE *f;
	char *buf = NULL, cmd[64];
	size_t cap = 0, n;

	ctl_cmd_name(c, cmd, sizeof(cmd));
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

/*
 * COMMAND FILE|- (route import, ledger import): post the JSON lines of
 * FILE (or stdin) to PATH as one import; the answer in *R.
 */
int
ctl_import(struct ctl *c, int argc, char **argv, const char *path,
    struct ctl_resp *r)
{
	char *pos[1], *buf;
	size_t len;
	int rc;

	if ((rc = ctl_args(argc, argv, c, NULL, pos, 1, 1)) != 0)
		return rc;
	if ((buf = ctl_read_all(c, pos[0], &len)) == NULL)
		return CTL_USAGE;
	rc = ctl_call_raw(c, "POST", path, buf, len, "application/x-ndjson", r);
	free(buf);
	return rc;
}
