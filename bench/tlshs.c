/*
 * floe: bench/tlshs.c -- full TLS handshakes for `make bench`: C
 * connections, each in a loop of connect, a full TLS 1.3 handshake (a new
 * SSL every time, no session offered: the client has no session cache and
 * never sets one), one GET with "Connection: close", the answer read to
 * its end, close. wrk cannot measure this: it keeps the SSL of a closed
 * connection and resumes its session on the next. Prints what wrk prints
 * (requests, Requests/sec, p50 and p99, socket errors, non-2xx), which
 * bench/run.sh parses, and a line with the handshakes resumed (must be 0),
 * the protocol, group and cipher.
 *
 *   tlshs -p PORT -u PATH [-c 32] [-d 4] [-g P-256]
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>

#define MAXC 1024

enum { HS_CONNECT, HS_HANDSHAKE, HS_WRITE, HS_READ };

struct conn {
	int fd, state, want;
	SSL *ssl;
	double t0;
	size_t got;
	char head[16];
};

static SSL_CTX *ctx;
static struct sockaddr_in sa;
static char req[1024];
static size_t reqlen;
static double *lat;
static size_t nlat, caplat;
static long n_connect_err, n_read_err, n_write_err, n_bad, n_reused;
static char proto[32] = "?", group[32] = "?", cipher[64] = "?";

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
conn_start(struct conn *c)
{
	int one = 1;

	c->t0 = now();
	c->got = 0;
	c->head[0] = '\0';
	c->ssl = NULL;
	if ((c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1) {
		perror("tlshs: socket");
		exit(1);
	}
	/* As wrk does: the request does not wait for the Finished's ACK. */
	if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ==
	    -1) {
		perror("tlshs: TCP_NODELAY");
		exit(1);
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 &&
	    errno != EINPROGRESS) {
		n_connect_err++;
		close(c->fd);
		c->fd = -1;
		return;
	}
	c->state = HS_CONNECT;
	c->want = POLLOUT;
}

static void
conn_end(struct conn *c, int ok)
{
	if (ok) {
		if (nlat == caplat) {
			caplat = caplat ? caplat * 2 : 65536;
			if ((lat = realloc(lat, caplat * sizeof(*lat))) == NULL)
				exit(1);
		}
		lat[nlat++] = now() - c->t0;
		if (strncmp(c->head, "HTTP/1.1 200", 12) != 0)
			n_bad++;
	}
	if (c->ssl != NULL)
		SSL_free(c->ssl);
	close(c->fd);
	ERR_clear_error();
	conn_start(c);
}

/* SSL_ERROR_WANT_* to poll events; anything else ends the connection. */
static int
conn_wait(struct conn *c, int r, long *errs)
{
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		c->want = POLLIN;
		return 1;
	case SSL_ERROR_WANT_WRITE:
		c->want = POLLOUT;
		return 1;
	default:
		(*errs)++;
		conn_end(c, 0);
		return 0;
	}
}

static void
conn_step(struct conn *c)
{
	char buf[16384];
	int r, e;
	socklen_t el = sizeof(e);

	for (;;) {
		switch (c->state) {
		case HS_CONNECT:
			if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) ==
				-1 ||
			    e != 0) {
				n_connect_err++;
				conn_end(c, 0);
				return;
			}
			if ((c->ssl = SSL_new(ctx)) == NULL ||
			    SSL_set_fd(c->ssl, c->fd) != 1) {
				fprintf(stderr, "tlshs: SSL_new failed\n");
				exit(1);
			}
			c->state = HS_HANDSHAKE;
			break;
		case HS_HANDSHAKE:
			if ((r = SSL_connect(c->ssl)) != 1) {
				conn_wait(c, r, &n_connect_err);
				return;
			}
			if (SSL_session_reused(c->ssl))
				n_reused++;
			snprintf(proto, sizeof(proto), "%s",
			    SSL_get_version(c->ssl));
			snprintf(group, sizeof(group), "%s",
			    OBJ_nid2sn(SSL_get_negotiated_group(c->ssl)));
			snprintf(cipher, sizeof(cipher), "%s",
			    SSL_get_cipher_name(c->ssl));
			c->state = HS_WRITE;
			break;
		case HS_WRITE:
			if ((r = SSL_write(c->ssl, req, (int)reqlen)) <= 0) {
				conn_wait(c, r, &n_write_err);
				return;
			}
			c->state = HS_READ;
			break;
		case HS_READ:
			r = SSL_read(c->ssl, buf, sizeof(buf));
			if (r > 0) {
				if (c->got < sizeof(c->head) - 1) {
					size_t m = sizeof(c->head) - 1 - c->got;

					memcpy(c->head + c->got, buf,
					    (size_t)r < m ? (size_t)r : m);
					c->head[c->got +
					    ((size_t)r < m ? (size_t)r : m)] =
					    '\0';
				}
				c->got += (size_t)r;
				break;
			}
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_ZERO_RETURN ||
			    (e == SSL_ERROR_SYSCALL && c->got > 0) ||
			    (e == SSL_ERROR_SSL && c->got > 0)) {
				/* The server closed after its answer. */
				conn_end(c, 1);
				return;
			}
			conn_wait(c, r, &n_read_err);
			return;
		}
	}
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static struct conn cs[MAXC];
	static struct pollfd pfd[MAXC];
	int port = 0, nc = 32, secs = 4, i, o;
	const char *url = "/", *groups = "P-256";
	double t0, el;

	while ((o = getopt(argc, argv, "p:u:c:d:g:")) != -1) {
		switch (o) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'u':
			url = optarg;
			break;
		case 'c':
			nc = atoi(optarg);
			break;
		case 'd':
			secs = atoi(optarg);
			break;
		case 'g':
			groups = optarg;
			break;
		default:
			fprintf(stderr,
			    "usage: tlshs -p PORT -u PATH [-c CONNS] "
			    "[-d SECS] [-g GROUPS]\n");
			return 2;
		}
	}
	if (port <= 0 || nc <= 0 || nc > MAXC || secs <= 0) {
		fprintf(stderr, "tlshs: bad arguments\n");
		return 2;
	}
	reqlen = (size_t)snprintf(req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
	    url);
	if (reqlen >= sizeof(req))
		return 2;
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set1_groups_list(ctx, groups) != 1) {
		fprintf(stderr, "tlshs: SSL_CTX setup failed\n");
		return 1;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	t0 = now();
	for (i = 0; i < nc; i++)
		conn_start(&cs[i]);
	while (now() - t0 < secs) {
		for (i = 0; i < nc; i++) {
			if (cs[i].fd == -1)
				conn_start(&cs[i]);
			pfd[i].fd = cs[i].fd;
			pfd[i].events = (short)cs[i].want;
			pfd[i].revents = 0;
		}
		if (poll(pfd, (nfds_t)nc, 50) == -1 && errno != EINTR) {
			perror("tlshs: poll");
			return 1;
		}
		for (i = 0; i < nc; i++)
			if (pfd[i].revents != 0 && cs[i].fd != -1)
				conn_step(&cs[i]);
	}
	el = now() - t0;
	qsort(lat, nlat, sizeof(*lat), cmp);
	printf("  %zu requests in %.2fs, full TLS handshakes\n", nlat, el);
	printf("  Latency Distribution\n");
	printf("     50%%  %.2fus\n",
	    nlat ? lat[(size_t)(0.5 * (double)(nlat - 1))] * 1e6 : 0);
	printf("     99%%  %.2fus\n",
	    nlat ? lat[(size_t)(0.99 * (double)(nlat - 1))] * 1e6 : 0);
	if (n_connect_err + n_read_err + n_write_err > 0)
		printf("  Socket errors: connect %ld, read %ld, write %ld, "
		       "timeout 0\n",
		    n_connect_err, n_read_err, n_write_err);
	if (n_bad > 0)
		printf("  Non-2xx or 3xx responses: %ld\n", n_bad);
	printf("Requests/sec: %.2f\n", (double)nlat / el);
	printf("tls: resumed=%ld protocol=%s group=%s cipher=%s\n", n_reused,
	    proto, group, cipher);
	return 0;
}
