/*
 * floe: fuzz_floe.h -- the scratch directory and floe.conf of the targets
 * that run parts of a floe on a real store (fuzz_admin.c, fuzz_mirror.c).
 */
#ifndef FLOE_FUZZ_FLOE_H
#define FLOE_FUZZ_FLOE_H

#include <sys/stat.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/conf.h"

static char fuzz_floe_dir[160]; /* removed at exit */

static int
fuzz_floe_rm_cb(const char *path, const struct stat *st __attribute__((unused)),
    int flag __attribute__((unused)), struct FTW *ftw __attribute__((unused)))
{
	return remove(path);
}

/* At exit: the scratch directory and all in it. */
static void
fuzz_floe_rm(void)
{
	(void)nftw(fuzz_floe_dir, fuzz_floe_rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/*
 * A new directory for target NAME, under /dev/shm when there is one,
 * into DIR (SIZE bytes), holding a floe.conf: the state directory, admin
 * socket and rollback log in it, both catalogs on closed ports, then the
 * lines EXTRA; it is removed when the process exits. Returns the conf
 * loaded; aborts on any failure.
 */
static inline struct conf *
fuzz_floe_conf(const char *name, const char *extra, char *dir, size_t size)
{
	char path[160], err[512];
	struct conf *conf;
	FILE *fp;

	snprintf(dir, size, "/dev/shm/floe-fuzz-%s.XXXXXX", name);
	if (mkdtemp(dir) == NULL) {
		snprintf(dir, size, "/tmp/floe-fuzz-%s.XXXXXX", name);
		if (mkdtemp(dir) == NULL)
			abort();
	}
	snprintf(fuzz_floe_dir, sizeof(fuzz_floe_dir), "%s", dir);
	if (atexit(fuzz_floe_rm) != 0)
		abort();
	snprintf(path, sizeof(path), "%s/floe.conf", dir);
	if ((fp = fopen(path, "w")) == NULL)
		abort();
	fprintf(fp,
	    "[floe]\nstate_dir = %s/state\nadmin_socket = %s/sock\n"
	    "rollback_log = %s/rollback.log\n"
	    "[warehouse]\nuri = http://127.0.0.1:1\n"
	    "[lakehouse]\nuri = http://127.0.0.1:2\n%s",
	    dir, dir, dir, extra);
	if (fclose(fp) != 0)
		abort();
	if ((conf = conf_load(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	return conf;
}

#endif
