/*
 * floe: test_awscred.c -- AWS credentials: the environment's three
 * variables, profiles of a credentials file (comments, case, ':' and '='
 * separators, a kilobyte session token, the old aws_security_token),
 * every malformed file with its line, and a file its group or others may
 * read refused by name.
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
#include "lib/xmalloc.h"
#include "policy/awscred.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static void
test_env(void **state __unused)
{
	struct awscred c = { 0 };
	char err[256];

	assert_int_equal(awscred_env(&c, AKID, SECRET, NULL, err, sizeof(err)),
	    0);
	assert_string_equal(c.access_key_id, AKID);
	assert_string_equal(c.secret_access_key, SECRET);
	assert_null(c.session_token);
	assert_string_equal(c.source, "environment");
	assert_int_equal(awscred_env(&c, AKID, SECRET, "tok/en=", err,
			     sizeof(err)),
	    0);
	assert_string_equal(c.session_token, "tok/en=");
	/* An empty AWS_SESSION_TOKEN is no token. */
	assert_int_equal(awscred_env(&c, AKID, SECRET, "", err, sizeof(err)),
	    0);
	assert_null(c.session_token);
	assert_int_equal(awscred_env(&c, NULL, SECRET, NULL, err, sizeof(err)),
	    -1);
	assert_string_equal(err,
	    "no AWS credentials: AWS_ACCESS_KEY_ID is not set in floe's "
	    "environment (and no aws_credentials_file)");
	assert_null(c.access_key_id);
	assert_int_equal(awscred_env(&c, AKID, "", NULL, err, sizeof(err)), -1);
	assert_string_equal(err,
	    "no AWS credentials: AWS_SECRET_ACCESS_KEY is not set in floe's "
	    "environment (and no aws_credentials_file)");
	assert_int_equal(awscred_env(&c, AKID, SECRET, "a\nb", err,
			     sizeof(err)),
	    -1);
	assert_string_equal(err,
	    "AWS_SESSION_TOKEN in floe's environment has blanks or control "
	    "characters");
	awscred_clear(&c);
}

/* The profile asked for, and only it. */
static void
test_parse(void **state __unused)
{
	static const char text[] =
	    "\xef\xbb\xbf# floe's AWS credentials\n"
	    "[default]\n"
	    "aws_access_key_id = AKIDDEFAULT\n"
	    "aws_secret_access_key = secretdefault\n"
	    "\n"
	    "; the migration role\r\n"
	    "[floe]\r\n"
	    "  # an indented comment\n"
	    "AWS_Access_Key_Id:" AKID "\r\n"
	    "aws_secret_access_key=  " SECRET "  \n"
	    "region = us-east-1\n"
	    "s3 =\n"
	    "    addressing_style = path\n"
	    "aws_session_token = IQoJb3JpZ2luX2VjE/with+slash=\n"
	    "[other]\n"
	    "aws_access_key_id = AKIDOTHER\n"
	    "aws_secret_access_key = secretother\n";
	struct awscred c = { 0 };
	char err[256];

	assert_int_equal(awscred_parse(&c, text, strlen(text), "floe", err,
			     sizeof(err)),
	    0);
	assert_string_equal(c.access_key_id, AKID);
	assert_string_equal(c.secret_access_key, SECRET);
	assert_string_equal(c.session_token, "IQoJb3JpZ2luX2VjE/with+slash=");
	assert_int_equal(awscred_parse(&c, text, strlen(text), "default", err,
			     sizeof(err)),
	    0);
	assert_string_equal(c.access_key_id, "AKIDDEFAULT");
	assert_string_equal(c.secret_access_key, "secretdefault");
	assert_null(c.session_token);
	assert_int_equal(awscred_parse(&c, text, strlen(text), "other", err,
			     sizeof(err)),
	    0);
	assert_string_equal(c.access_key_id, "AKIDOTHER");
	/* Section names are case-sensitive, as botocore reads them. */
	assert_int_equal(awscred_parse(&c, text, strlen(text), "FLOE", err,
			     sizeof(err)),
	    -1);
	assert_string_equal(err, "no profile [FLOE]");
	assert_null(c.access_key_id);
	awscred_clear(&c);
}

/* A session token of a kilobyte (longer than inih's lines) is read. */
static void
test_long_token(void **state __unused)
{
	struct awscred c = { 0 };
	char token[1301], *text, err[256];

	memset(token, 'T', 1300);
	token[0] = 'I';
	token[1300] = '\0';
	text = xasprintf("[default]\naws_access_key_id=%s\n"
			 "aws_secret_access_key=%s\naws_security_token=old\n"
			 "aws_session_token=%s\n",
	    AKID, SECRET, token);
	assert_int_equal(awscred_parse(&c, text, strlen(text), "default", err,
			     sizeof(err)),
	    0);
	assert_string_equal(c.session_token, token);
	free(text);
	/* The old name alone still works. */
	text = xasprintf("[default]\naws_access_key_id=%s\n"
			 "aws_secret_access_key=%s\naws_security_token=old\n",
	    AKID, SECRET);
	assert_int_equal(awscred_parse(&c, text, strlen(text), "default", err,
			     sizeof(err)),
	    0);
	assert_string_equal(c.session_token, "old");
	free(text);
	awscred_clear(&c);
}

/* Every malformed file says where. */
static void
test_errors(void **state __unused)
{
	static const struct {
		const char *text, *profile, *err;
	} v[] = {
		{ "[default]\naws_access_key_id = A\n", "default",
		    "[default] has no aws_secret_access_key" },
		{ "[default]\naws_secret_access_key = S\n", "default",
		    "[default] has no aws_access_key_id" },
		{ "[p]\naws_access_key_id = A\n[q]\n", "q",
		    "[q] has no aws_access_key_id" },
		{ "", "default", "no profile [default]" },
		{ "[default\naws_access_key_id = A\n", "default",
		    "line 1: a section header needs ']'" },
		{ "[default]\njust words\n", "default",
		    "line 2: not \"key = value\" nor a [profile]" },
		{ "[default]\naws_access_key_id = A\naws_access_key_id = B\n",
		    "default",
		    "line 3: aws_access_key_id appears twice in [default]" },
		{ "[default]\naws_access_key_id = A\n[x]\n[default]\n",
		    "default", "line 4: profile [default] appears twice" },
		{ "[default]\naws_access_key_id = A B\n", "default",
		    "line 2: aws_access_key_id is empty or has blanks or "
		    "control characters" },
		{ "[default]\naws_secret_access_key =\n", "default",
		    "line 2: aws_secret_access_key is empty or has blanks or "
		    "control characters" },
		{ "[default]\naws_session_token = abc\n  def\n", "default",
		    "line 3: a credential cannot go on over lines" },
	};
	struct awscred c = { 0 };
	char err[256];
	size_t i;

	for (i = 0; i < nitems(v); i++) {
		assert_int_equal(awscred_parse(&c, v[i].text, strlen(v[i].text),
				     v[i].profile, err, sizeof(err)),
		    -1);
		assert_string_equal(err, v[i].err);
		assert_null(c.access_key_id);
		assert_null(c.secret_access_key);
		assert_null(c.session_token);
	}
	/* A NUL byte inside. */
	assert_int_equal(awscred_parse(&c, "[default]\na\0b = c\n", 18,
			     "default", err, sizeof(err)),
	    -1);
	assert_string_equal(err, "line 2: a NUL byte");
}

/* awscred_load: the file (mode checked, errors FILE:LINE), or the env. */
static void
test_load(void **state __unused)
{
	struct awscred c = { 0 };
	char dir[] = "/tmp/floe-awscred.XXXXXX", path[128], err[512];
	char want[512];
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/credentials", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
	    "[default]\naws_access_key_id = %s\n"
	    "aws_secret_access_key = %s\n[bad]\nkey\n",
	    AKID, SECRET);
	fclose(f);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(awscred_load(&c, path, NULL, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
	    "%s: mode 0644 lets its group or others at a secret; chmod 600 it",
	    path);
	assert_string_equal(err, want);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(awscred_load(&c, path, NULL, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
	    "%s:5: not \"key = value\" nor a [profile]", path);
	assert_string_equal(err, want);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
	    "[default]\naws_access_key_id = %s\n"
	    "aws_secret_access_key = %s\n",
	    AKID, SECRET);
	fclose(f);
	assert_int_equal(awscred_load(&c, path, NULL, err, sizeof(err)), 0);
	assert_string_equal(c.access_key_id, AKID);
	snprintf(want, sizeof(want), "%s [default]", path);
	assert_string_equal(c.source, want);
	assert_int_equal(awscred_load(&c, path, "prod", err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: no profile [prod]", path);
	assert_string_equal(err, want);
	unlink(path);
	rmdir(dir);
	/* No file: the environment. */
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secretenv", 1);
	setenv("AWS_SESSION_TOKEN", "tokenenv", 1);
	assert_int_equal(awscred_load(&c, NULL, NULL, err, sizeof(err)), 0);
	assert_string_equal(c.access_key_id, "AKIDENV");
	assert_string_equal(c.session_token, "tokenenv");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	assert_int_equal(awscred_load(&c, NULL, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "AWS_SECRET_ACCESS_KEY is not set"));
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SESSION_TOKEN");
	awscred_clear(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_long_token),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
