/*
 * floe: fuzz_admin.c -- libFuzzer target for the admin API: the input's
 * first line is "METHOD TARGET", the rest the body (route and wave JSON,
 * ledger JSON lines). It runs against a real store in a scratch directory
 * (under /dev/shm when there is one) and a floe with both catalogs unread.
 * /status and /metrics are left out: they take no input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "lib/log.h"
#include "proxy/admin.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/floe.h"
#include "proxy/server.h"
#include "proxy/upstream.h"
#include "routing/store.h"
#include "tests/fuzz/fuzz_floe.h"

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct floe fz;

/* A floe with a conf, a store, two idle pools and no listeners. */
int
LLVMFuzzerInitialize(int *argc __attribute__((unused)),
    char ***argv __attribute__((unused)))
{
	char dir[64], path[128], err[512];
	struct server_opts so;
	int i;

	log_init(0);
	fz.access_fd = -1;
	fz.conf = fuzz_floe_conf("admin", "", dir, sizeof(dir));
	if ((fz.base = event_base_new()) == NULL)
		abort();
	snprintf(path, sizeof(path), "%s/state", dir);
	if ((fz.store = store_open(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	memset(&so, 0, sizeof(so));
	so.name = "rest";
	so.lim.max_head = 4096;
	so.lim.max_headers = 16;
	fz.front = server_new(fz.base, &so, NULL, NULL, NULL);
	fz.admin = server_new(fz.base, &so, NULL, NULL, NULL);
	for (i = 0; i < ROUTE_NSIDES; i++) {
		fz.cat[i] = catalog_new();
		if ((fz.up[i] = upstream_new(fz.base, NULL, &fz.conf->target[i],
			 i == 0 ? "warehouse" : "lakehouse", err,
			 sizeof(err))) == NULL)
			abort();
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *nl, *sp;
	struct admin_reply rep;
	struct evbuffer *in;
	char method[16], *target;
	size_t mlen;

	nl = memchr(p, '\n', size);
	if (nl == NULL)
		nl = end;
	if ((sp = memchr(p, ' ', nl - p)) == NULL)
		return 0;
	mlen = sp - p;
	if (mlen == 0 || mlen >= sizeof(method))
		return 0;
	memcpy(method, p, mlen);
	method[mlen] = '\0';
	target = strndup(sp + 1, nl - sp - 1);
	/*
	 * /status and /metrics read no input and need the whole running
	 * daemon (listeners, cache, pools); everything else is fuzzed.
	 */
	if (strncmp(target, "/status", 7) == 0 ||
	    strncmp(target, "/metrics", 8) == 0) {
		free(target);
		return 0;
	}
	memset(&rep, 0, sizeof(rep));
	in = evbuffer_new();
	if (nl < end)
		evbuffer_add(in, nl + 1, (size_t)(end - nl - 1));
	admin_handle(&fz, method, target, strlen(target), in, 0, &rep, NULL,
	    NULL);
	evbuffer_free(in);
	if (rep.status < 200 || rep.status > 599 ||
	    (rep.len > 0 && rep.body == NULL))
		__builtin_trap();
	free(rep.body);
	free(target);
	return 0;
}
