/*
 * floe: main.c -- command line: run floe in the foreground, or check a
 * configuration with -t and exit (like nginx -t).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "lib/log.h"
#include "proxy/conf.h"
#include "proxy/floe_main.h"
#include "proxy/sockio.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: floe [-tv] [-c FILE]\n"
	    "  -c FILE  configuration (default conf/floe.conf)\n"
	    "  -t       check the configuration and exit\n"
	    "  -v       debug logging\n");
}

#define FLOE_HEAP_KEEP (16 << 20)

int
main(int argc, char *argv[])
{
	const char *path = "conf/floe.conf";
	struct conf *c;
	char err[1024];
	int ch, test = 0, verbose = 0, rc;

	while ((ch = getopt(argc, argv, "c:thv")) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 't':
			test = 1;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (test) {
		if ((c = conf_load(path, err, sizeof(err))) == NULL) {
			fprintf(stderr, "floe: %s\n", err);
			return 1;
		}
		conf_free(c);
		fprintf(stderr, "floe: configuration %s ok\n", path);
		return 0;
	}
	/*
	 * Answers of a megabyte pass through floe in 64 KiB buffers that
	 * are freed as soon as they are written. With glibc's defaults the
	 * heap gives that memory back to the kernel after every such answer
	 * and takes it again, zeroed, page fault by page fault, for the next
	 * one. Keep up to FLOE_HEAP_KEEP of freed memory instead.
	 */
	mallopt(M_TRIM_THRESHOLD, FLOE_HEAP_KEEP);
	mallopt(M_MMAP_THRESHOLD, FLOE_HEAP_KEEP);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		fprintf(stderr, "floe: curl_global_init failed\n");
		return 1;
	}
	sockio_mem_init();
	rc = floe_run(path, verbose);
	sockio_mem_release();
	curl_global_cleanup();
	return rc;
}
