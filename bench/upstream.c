/*
 * floe: bench/upstream.c -- the benchmark's Iceberg REST catalog: as fast as
 * a catalog can be, so that it is never what a load run measures. It answers
 * GET /v1/config with a catalog's usual storage defaults (which floe merges
 * into every LoadTable result it routes, as it would in production) and
 * every other GET or
 * HEAD under /v1/ with a fixed LoadTable result read from a file at start
 * (the long-history one for tables whose name starts with "long"), with an
 * ETag, a Content-Length and keep-alive. Bodies are never copied: each
 * answer references the one buffer in memory.
 *
 *   bench-upstream [-v] -s SMALL.json -l LARGE.json -p PORT [-p PORT ...]
 *
 * -v: every LoadTable answer differs from the one before it, at the same
 * length: the digits of the body's last number of ten digits or more (a
 * timestamp near its end), but its first, are a counter's. A proxy that recognises an
 * answer it has seen before pays its full price with -v (the ETag stays
 * the same: it is the file's).
 *
 * It prints "ready PORT..." on stdout once it listens, and runs until
 * SIGTERM or SIGINT.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#define UPSTREAM_MAX_PORTS 4
#define UPSTREAM_MAX_HEAD 65536

/* One canned answer: its head and its body, both built at start. */
struct answer {
	char *head;
	size_t head_len;
	const char *body;
	size_t body_len;
	size_t vary_at, vary_len; /* -v: the digits varied (vary_len 0: none) */
};

static struct answer answer_small, answer_large, answer_config, answer_missing;
static char *body_small, *body_large;
static int vary; /* -v */
static unsigned long long vary_count;

static void upstream_read_cb(struct bufferevent *, void *);
static void upstream_drained_cb(struct bufferevent *, void *);
static void upstream_event_cb(struct bufferevent *, short, void *);
static void upstream_accept_cb(struct evconnlistener *, evutil_socket_t,
    struct sockaddr *, int, void *);
static void upstream_signal_cb(evutil_socket_t, short, void *);

/* Read all of PATH into memory, NUL-terminated; its length in LEN. */
static char *
upstream_slurp(const char *path, size_t *len)
{
	struct stat sb;
	char *buf;
	ssize_t n;
	size_t got = 0;
	int fd;

	if ((fd = open(path, O_RDONLY)) == -1 || fstat(fd, &sb) == -1) {
		fprintf(stderr, "bench-upstream: %s: %s\n", path,
		    strerror(errno));
		exit(1);
	}
	if ((buf = malloc((size_t)sb.st_size + 1)) == NULL) {
		fprintf(stderr, "bench-upstream: out of memory\n");
		exit(1);
	}
	while (got < (size_t)sb.st_size) {
		n = read(fd, buf + got, (size_t)sb.st_size - got);
		if (n <= 0) {
			fprintf(stderr, "bench-upstream: reading %s failed\n",
			    path);
			exit(1);
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	return buf;
}

/* FNV-1a of BUF, for an ETag that changes when the body does. */
static unsigned long long
upstream_hash(const char *buf, size_t len)
{
	unsigned long long h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)buf[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* -v: the last run of ten digits or more in A's body, if any. */
static void
upstream_vary_find(struct answer *a)
{
	size_t i = a->body_len, end;

	while (i > 0) {
		while (i > 0 && (a->body[i - 1] < '0' || a->body[i - 1] > '9'))
			i--;
		end = i;
		while (i > 0 && a->body[i - 1] >= '0' && a->body[i - 1] <= '9')
			i--;
		if (end - i >= 10) {
			a->vary_at = i;
			a->vary_len = end - i < 19 ? end - i : 19;
			return;
		}
	}
}

/*
 * Add A's body to OUT: by reference; with -v, its varied digits are the
 * next count's, zero-padded to their width.
 */
static void
upstream_add_body(struct evbuffer *out, const struct answer *a)
{
	char digits[24];
	size_t rest;

	if (!vary || a->vary_len == 0) {
		evbuffer_add_reference(out, a->body, a->body_len, NULL, NULL);
		return;
	}
	snprintf(digits, sizeof(digits), "%0*llu", (int)a->vary_len - 1,
	    ++vary_count);
	rest = a->vary_at + a->vary_len;
	/* The first digit stays (a JSON number has no leading zero)... */
	evbuffer_add_reference(out, a->body, a->vary_at + 1, NULL, NULL);
	/* ... the others are the count's last ones. */
	evbuffer_add(out, digits + strlen(digits) - (a->vary_len - 1),
	    a->vary_len - 1);
	if (rest < a->body_len)
		evbuffer_add_reference(out, a->body + rest, a->body_len - rest,
		    NULL, NULL);
}

/* Build answer A: STATUS line, the headers, and BODY (borrowed). */
static void
upstream_answer_init(struct answer *a, const char *status, const char *body,
    size_t len, int etag)
{
	char head[512];
	int n;

	if (etag)
		n = snprintf(head, sizeof(head),
		    "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
		    "ETag: \"%016llx\"\r\nContent-Length: %zu\r\n\r\n",
		    status, upstream_hash(body, len), len);
	else
		n = snprintf(head, sizeof(head),
		    "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n",
		    status, len);
	if ((a->head = strdup(head)) == NULL) {
		fprintf(stderr, "bench-upstream: out of memory\n");
		exit(1);
	}
	a->head_len = (size_t)n;
	a->body = body;
	a->body_len = len;
	a->vary_at = a->vary_len = 0;
	upstream_vary_find(a);
}

/*
 * The value of header NAME ("\nname:", lower case) in request head H (LEN
 * bytes), or NULL. Only line starts are compared: a catalog reads a head
 * line by line, and a scan that compared at every byte would make each
 * header byte a proxy forwards cost ten times what it costs a real server.
 */
static const char *
upstream_header(const char *h, size_t len, const char *name, size_t k)
{
	const char *p = h, *end = h + len;

	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if ((size_t)(end - p) >= k && strncasecmp(p, name, k) == 0)
			return p + k;
		p++;
	}
	return NULL;
}

/* Does the request head H (LEN bytes) ask to close the connection? */
static int
upstream_wants_close(const char *h, size_t len)
{
	static const char want[] = "\nconnection:";
	const char *v = upstream_header(h, len, want, sizeof(want) - 1);

	while (v != NULL && v < h + len && (*v == ' ' || *v == '\t'))
		v++;
	return v != NULL && (size_t)(h + len - v) >= 5 &&
	    strncasecmp(v, "close", 5) == 0;
}

/* The Content-Length of request head H, 0 without one. */
static size_t
upstream_content_length(const char *h, size_t len)
{
	static const char want[] = "\ncontent-length:";
	const char *v = upstream_header(h, len, want, sizeof(want) - 1);

	return v != NULL ? strtoul(v, NULL, 10) : 0;
}

/* Pick the answer for request head H (LEN bytes, not NUL-terminated). */
static const struct answer *
upstream_route(const char *h, size_t len, int *head_only)
{
	const char *sp, *path, *end, *t;

	*head_only = len >= 5 && memcmp(h, "HEAD ", 5) == 0;
	if ((sp = memchr(h, ' ', len)) == NULL)
		return &answer_missing;
	path = sp + 1;
	if ((end = memchr(path, ' ', len - (size_t)(path - h))) == NULL)
		return &answer_missing;
	if (end - path >= 10 && memcmp(path, "/v1/config", 10) == 0 &&
	    (end - path == 10 || path[10] == '?'))
		return &answer_config;
	if (end - path < 4 || memcmp(path, "/v1/", 4) != 0)
		return &answer_missing;
	/* ".../tables/long..." is a table with a long history. */
	for (t = path; end - t >= 12; t++)
		if (memcmp(t, "/tables/long", 12) == 0)
			return &answer_large;
	return &answer_small;
}

/* Answer every complete request in the input, in order. */
static void
upstream_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	const struct answer *a;
	struct evbuffer_ptr p;
	size_t hlen, clen;
	const char *h;
	int head_only, closing = 0;

	(void)arg;
	for (;;) {
		p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
		if (p.pos < 0) {
			if (evbuffer_get_length(in) > UPSTREAM_MAX_HEAD)
				closing = 1;
			break;
		}
		hlen = (size_t)p.pos + 4;
		h = (const char *)evbuffer_pullup(in, (ssize_t)hlen);
		clen = upstream_content_length(h, hlen);
		if (evbuffer_get_length(in) < hlen + clen)
			break;
		a = upstream_route(h, hlen, &head_only);
		closing = upstream_wants_close(h, hlen);
		evbuffer_add(out, a->head, a->head_len);
		if (!head_only && a->body_len > 0)
			upstream_add_body(out, a);
		evbuffer_drain(in, hlen + clen);
		if (closing)
			break;
	}
	if (closing) {
		/* Close once the answers are written. */
		bufferevent_disable(bev, EV_READ);
		bufferevent_setcb(bev, NULL, upstream_drained_cb,
		    upstream_event_cb, NULL);
		if (evbuffer_get_length(out) == 0)
			bufferevent_free(bev);
	}
}

/* The output of a closing connection is written: close it. */
static void
upstream_drained_cb(struct bufferevent *bev, void *arg)
{
	(void)arg;
	bufferevent_free(bev);
}

/* EOF or an error: the connection is done. */
static void
upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)what;
	(void)arg;
	bufferevent_free(bev);
}

/* A new connection: no Nagle, read requests. */
static void
upstream_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct event_base *base = evconnlistener_get_base(l);
	struct bufferevent *bev;
	int one = 1;

	(void)sa;
	(void)salen;
	(void)arg;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		close(fd);
		return;
	}
	bufferevent_setcb(bev, upstream_read_cb, NULL, upstream_event_cb, NULL);
	bufferevent_enable(bev, EV_READ);
}

/* SIGTERM, SIGINT: leave the loop. */
static void
upstream_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	event_base_loopexit(arg, NULL);
}

int
main(int argc, char **argv)
{
	static const char config[] =
	    "{\"defaults\":{\"s3.endpoint\":\"https://s3.eu-west-1."
	    "amazonaws.com\",\"client.region\":\"eu-west-1\","
	    "\"s3.path-style-access\":\"false\",\"io-impl\":"
	    "\"org.apache.iceberg.aws.s3.S3FileIO\"},\"overrides\":{"
	    "\"warehouse\":\"s3://bench-warehouse/\"}}";
	static const char missing[] =
	    "{\"error\":{\"message\":\"not found\",\"type\":"
	    "\"NotFoundException\",\"code\":404}}";
	struct evconnlistener *ls[UPSTREAM_MAX_PORTS];
	struct event *sigterm, *sigint;
	struct event_base *base;
	struct sockaddr_in sin;
	const char *small = NULL, *large = NULL;
	int ports[UPSTREAM_MAX_PORTS], nports = 0, ch, i;
	size_t len_small, len_large;

	while ((ch = getopt(argc, argv, "s:l:p:v")) != -1) {
		switch (ch) {
		case 's':
			small = optarg;
			break;
		case 'l':
			large = optarg;
			break;
		case 'v':
			vary = 1;
			break;
		case 'p':
			if (nports == UPSTREAM_MAX_PORTS)
				goto usage;
			ports[nports++] = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (small == NULL || large == NULL || nports == 0)
		goto usage;
	body_small = upstream_slurp(small, &len_small);
	body_large = upstream_slurp(large, &len_large);
	upstream_answer_init(&answer_small, "200 OK", body_small, len_small, 1);
	upstream_answer_init(&answer_large, "200 OK", body_large, len_large, 1);
	upstream_answer_init(&answer_config, "200 OK", config,
	    sizeof(config) - 1, 0);
	upstream_answer_init(&answer_missing, "404 Not Found", missing,
	    sizeof(missing) - 1, 0);

	signal(SIGPIPE, SIG_IGN);
	if ((base = event_base_new()) == NULL) {
		fprintf(stderr, "bench-upstream: event_base_new failed\n");
		return 1;
	}
	for (i = 0; i < nports; i++) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin.sin_port = htons((unsigned short)ports[i]);
		ls[i] = evconnlistener_new_bind(base, upstream_accept_cb, NULL,
		    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 1024,
		    (struct sockaddr *)&sin, sizeof(sin));
		if (ls[i] == NULL) {
			fprintf(stderr,
			    "bench-upstream: listen on port %d: %s\n", ports[i],
			    strerror(errno));
			return 1;
		}
	}
	sigterm = evsignal_new(base, SIGTERM, upstream_signal_cb, base);
	sigint = evsignal_new(base, SIGINT, upstream_signal_cb, base);
	if (sigterm == NULL || sigint == NULL || event_add(sigterm, NULL) ||
	    event_add(sigint, NULL)) {
		fprintf(stderr, "bench-upstream: signal events failed\n");
		return 1;
	}
	printf("ready");
	for (i = 0; i < nports; i++)
		printf(" %d", ports[i]);
	printf("\n");
	fflush(stdout);
	event_base_dispatch(base);
	for (i = 0; i < nports; i++)
		evconnlistener_free(ls[i]);
	event_free(sigterm);
	event_free(sigint);
	event_base_free(base);
	free(body_small);
	free(body_large);
	return 0;

usage:
	fprintf(stderr,
	    "usage: bench-upstream [-v] -s SMALL.json -l LARGE.json "
	    "-p PORT [-p PORT ...]\n");
	return 2;
}
