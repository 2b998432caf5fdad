/*
 * floe: bench/slowread.c -- slow clients for `make bench`: N connections,
 * each with a small receive buffer (SO_RCVBUF) and a real network's MSS
 * (TCP_MAXSEG), both set before connect, each sending one GET and reading
 * the answer at RATE bytes a second (a token bucket that holds at most one
 * receive buffer), until the server closes or the time limit. Meanwhile
 * the summed VmRSS of the given pids is sampled every 100 ms. Prints one
 * line of key=value: clients, done, errors, bytes, first-byte and
 * completion times, RSS before and at its peak.
 *
 *   slowread -p PORT -u PATH [-n 200] [-r 65536] [-b 65536] [-m 1448]
 *            [-t 60] [-P PID,PID...]
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

#define MAXC 4096
#define MAXP 16

struct client {
	int fd;
	int state; /* 0 connecting, 1 reading, 2 done, 3 failed */
	size_t sent, got;
	double tokens, t_first, t_done;
	char head[16];
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long
rss_kb(const int *pids, int np)
{
	char path[64], line[256];
	long sum = 0, v;
	FILE *f;
	int i;

	for (i = 0; i < np; i++) {
		snprintf(path, sizeof(path), "/proc/%d/status", pids[i]);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "VmRSS: %ld", &v) == 1)
				sum += v;
		fclose(f);
	}
	return sum;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The Q quantile (0..1) of the N sorted values in V, in ms. */
static double
q_ms(const double *v, int n, double q)
{
	int i;

	if (n == 0)
		return -1;
	i = (int)(q * (n - 1) + 0.5);
	return v[i] * 1000;
}

int
main(int argc, char **argv)
{
	static struct client cl[MAXC];
	static struct pollfd pfd[MAXC];
	static int idx[MAXC];
	static double fb[MAXC], dn[MAXC];
	int port = 0, n = 200, rcvbuf = 65536, mss = 1448, limit = 60, np = 0;
	int pids[MAXP], i, c, active, nfb = 0, ndn = 0, failed = 0;
	double rate = 65536, t0, t, last, next_rss = 0;
	const char *url = "/";
	char req[1024], buf[65536], *p, *tok;
	long rss0, peak, r;
	size_t reqlen, total = 0;
	struct sockaddr_in sa;

	while ((c = getopt(argc, argv, "p:u:n:r:b:m:t:P:")) != -1) {
		switch (c) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'u':
			url = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'b':
			rcvbuf = atoi(optarg);
			break;
		case 'm':
			mss = atoi(optarg);
			break;
		case 't':
			limit = atoi(optarg);
			break;
		case 'P':
			for (p = optarg; (tok = strsep(&p, ",")) != NULL;)
				if (*tok != '\0' && np < MAXP)
					pids[np++] = atoi(tok);
			break;
		default:
			fprintf(stderr,
			    "usage: slowread -p PORT -u PATH [-n N] "
			    "[-r BYTES/S] [-b RCVBUF] [-m MSS] [-t SECS] [-P PIDS]\n");
			return 2;
		}
	}
	if (port <= 0 || n <= 0 || n > MAXC || rate <= 0) {
		fprintf(stderr, "slowread: bad arguments\n");
		return 2;
	}
	reqlen = (size_t)snprintf(req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
	    url);
	if (reqlen >= sizeof(req)) {
		fprintf(stderr, "slowread: path too long\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	rss0 = peak = rss_kb(pids, np);
	t0 = last = now();
	for (i = 0; i < n; i++) {
		struct client *k = &cl[i];

		k->fd = socket(AF_INET, SOCK_STREAM, 0);
		if (k->fd == -1 ||
		    setsockopt(k->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
			sizeof(rcvbuf)) == -1 ||
		    setsockopt(k->fd, IPPROTO_TCP, TCP_MAXSEG, &mss,
			sizeof(mss)) == -1 ||
		    fcntl(k->fd, F_SETFL, O_NONBLOCK) == -1) {
			perror("slowread: socket");
			return 1;
		}
		if (connect(k->fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 &&
		    errno != EINPROGRESS) {
			k->state = 3;
			failed++;
		}
		k->tokens = 0;
	}
	for (;;) {
		t = now();
		if (t >= next_rss) {
			if ((r = rss_kb(pids, np)) > peak)
				peak = r;
			next_rss = t + 0.1;
		}
		if (t - t0 > limit)
			break;
		active = 0;
		for (i = 0; i < n; i++) {
			struct client *k = &cl[i];

			if (k->state >= 2)
				continue;
			if (k->state == 1) {
				k->tokens += rate * (t - last);
				if (k->tokens > rcvbuf)
					k->tokens = rcvbuf;
				if (k->tokens < 1)
					continue;
			}
			pfd[active].fd = k->fd;
			pfd[active].events = k->state == 0 ? POLLOUT : POLLIN;
			pfd[active].revents = 0;
			idx[active++] = i;
		}
		last = t;
		if (active == 0) {
			for (i = 0; i < n && cl[i].state >= 2; i++)
				;
			if (i == n)
				break;
		}
		if (poll(pfd, (nfds_t)active, 10) == -1 && errno != EINTR) {
			perror("slowread: poll");
			return 1;
		}
		t = now();
		for (c = 0; c < active; c++) {
			struct client *k = &cl[idx[c]];
			size_t want;
			ssize_t got;

			if (pfd[c].revents == 0)
				continue;
			if (k->state == 0) {
				got = write(k->fd, req + k->sent,
				    reqlen - k->sent);
				if (got < 0 && errno != EAGAIN) {
					k->state = 3;
					failed++;
				} else if (got > 0 &&
				    (k->sent += (size_t)got) == reqlen) {
					k->state = 1;
				}
				continue;
			}
			want = (size_t)k->tokens;
			if (want > sizeof(buf))
				want = sizeof(buf);
			got = read(k->fd, buf, want);
			if (got > 0) {
				if (k->got == 0)
					k->t_first = t - t0;
				if (k->got < sizeof(k->head) - 1) {
					size_t m = sizeof(k->head) - 1 - k->got;

					memcpy(k->head + k->got, buf,
					    (size_t)got < m ? (size_t)got : m);
				}
				k->got += (size_t)got;
				k->tokens -= (double)got;
			} else if (got == 0 || errno != EAGAIN) {
				k->t_done = t - t0;
				if (got == 0 && k->got > 0 &&
				    strncmp(k->head, "HTTP/1.1 200", 12) == 0) {
					k->state = 2;
				} else {
					k->state = 3;
					failed++;
				}
			}
		}
	}
	for (i = 0; i < n; i++) {
		if (cl[i].got > 0)
			fb[nfb++] = cl[i].t_first;
		if (cl[i].state == 2) {
			dn[ndn++] = cl[i].t_done;
			total += cl[i].got;
		}
		if (cl[i].fd >= 0)
			close(cl[i].fd);
	}
	qsort(fb, (size_t)nfb, sizeof(double), cmp);
	qsort(dn, (size_t)ndn, sizeof(double), cmp);
	printf("clients=%d done=%d errors=%d unfinished=%d bytes_each=%zu "
	       "first_byte_p50_ms=%.0f first_byte_p99_ms=%.0f "
	       "first_byte_max_ms=%.0f done_p50_ms=%.0f done_max_ms=%.0f "
	       "rss_before_kb=%ld rss_peak_kb=%ld secs=%.1f\n",
	    n, ndn, failed, n - ndn - failed, ndn > 0 ? total / (size_t)ndn : 0,
	    q_ms(fb, nfb, 0.5), q_ms(fb, nfb, 0.99), q_ms(fb, nfb, 1),
	    q_ms(dn, ndn, 0.5), q_ms(dn, ndn, 1), rss0, peak, now() - t0);
	return 0;
}
