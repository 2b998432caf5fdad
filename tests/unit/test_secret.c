/*
 * floe: test_secret.c -- secret files: read whole when only their owner
 * may read them; refused, naming the file and its mode, when their group
 * or others may; directories, missing and oversized files refused.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/compat.h"
#include "lib/secret.h"

/* A file in a fresh directory; the directory into DIR. */
static void
make_file(char *dir, size_t dirlen, char *path, size_t pathlen,
    const char *text, size_t len, mode_t mode)
{
	FILE *f;

	snprintf(dir, dirlen, "/tmp/floe-secret.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, pathlen, "%s/secret", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void
remove_file(const char *dir, const char *path)
{
	unlink(path);
	rmdir(dir);
}

/* Owner-only modes are read, bytes as they are (NULs included). */
static void
test_owner_only(void **state __unused)
{
	static const mode_t ok[] = { 0600, 0400, 0700 };
	char dir[64], path[128], err[256];
	char *s;
	size_t i, len;

	for (i = 0; i < nitems(ok); i++) {
		make_file(dir, sizeof(dir), path, sizeof(path), "s3cret\0x\n",
		    9, ok[i]);
		s = secret_read(path, &len, err, sizeof(err));
		assert_non_null(s);
		assert_int_equal(len, 9);
		assert_memory_equal(s, "s3cret\0x\n", 10);
		secret_free(s, len);
		remove_file(dir, path);
	}
	make_file(dir, sizeof(dir), path, sizeof(path), "", 0, 0600);
	s = secret_read(path, &len, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(len, 0);
	assert_string_equal(s, "");
	secret_free(s, len);
	remove_file(dir, path);
	secret_free(NULL, 0);
	secret_free_str(NULL);
}

/* Any group or other bit refuses the file, naming it and its mode. */
static void
test_refused(void **state __unused)
{
	static const mode_t bad[] = { 0640, 0604, 0644, 0620, 0602, 0660, 0601,
		0610, 0666 };
	char dir[64], path[128], err[256], want[256];
	size_t i, len;

	for (i = 0; i < nitems(bad); i++) {
		make_file(dir, sizeof(dir), path, sizeof(path), "s3cret", 6,
		    bad[i]);
		assert_null(secret_read(path, &len, err, sizeof(err)));
		snprintf(want, sizeof(want),
		    "%s: mode %04o lets its group or others at a secret; "
		    "chmod 600 it",
		    path, (unsigned)bad[i]);
		assert_string_equal(err, want);
		assert_null(strstr(err, "s3cret\n"));
		remove_file(dir, path);
	}
}

/* Missing files, directories and files over SECRET_MAX. */
static void
test_not_files(void **state __unused)
{
	char dir[64], path[128], err[256], want[256];
	size_t len;
	FILE *f;

	assert_null(
	    secret_read("/nonexistent/floe.secret", &len, err, sizeof(err)));
	assert_string_equal(err,
	    "/nonexistent/floe.secret: No such file or directory");
	snprintf(dir, sizeof(dir), "/tmp/floe-secret.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0700), 0);
	assert_null(secret_read(dir, &len, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: not a regular file", dir);
	assert_string_equal(err, want);
	snprintf(path, sizeof(path), "%s/big", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), SECRET_MAX + 1), 0);
	fclose(f);
	assert_int_equal(chmod(path, 0600), 0);
	assert_null(secret_read(path, &len, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: larger than %d bytes", path,
	    SECRET_MAX);
	assert_string_equal(err, want);
	remove_file(dir, path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_only),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_not_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
