/*
 * floe: awscred.c -- AWS credentials from the environment or from an AWS
 * credentials file. The file is parsed here rather than by inih: inih r55
 * cuts lines at 200 bytes, and a session token is a line of about a
 * kilobyte. The rules are those of botocore's reader (Python's
 * configparser): '=' or ':' separates key and value, keys are
 * case-insensitive, whole-line comments only, a repeated key or section
 * is an error.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/compat.h"
#include "lib/secret.h"
#include "lib/xmalloc.h"
#include "policy/awscred.h"

static bool awscred_value_ok(const char *, size_t);
static void awscred_set(char **, const char *, size_t);

/* A credential: printable ASCII, no blanks (it goes into a header). */
static bool
awscred_value_ok(const char *v, size_t n)
{
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] <= ' ' || (unsigned char)v[i] >= 0x7f)
			return false;
	return true;
}

/* Replace *DST with a copy of the N bytes at V, wiping the old one. */
static void
awscred_set(char **dst, const char *v, size_t n)
{
	secret_free_str(*dst);
	*dst = xstrndup(v, n);
}

void
awscred_clear(struct awscred *c)
{
	secret_free_str(c->access_key_id);
	secret_free_str(c->secret_access_key);
	secret_free_str(c->session_token);
	c->access_key_id = c->secret_access_key = c->session_token = NULL;
	c->source[0] = '\0';
}

int
awscred_env(struct awscred *c, const char *id, const char *secret,
    const char *token, char *err, size_t errlen)
{
	awscred_clear(c);
	if (id == NULL || *id == '\0' || secret == NULL || *secret == '\0') {
		snprintf(err, errlen,
		    "no AWS credentials: %s is not set in floe's environment "
		    "(and no aws_credentials_file)",
		    id == NULL || *id == '\0' ? "AWS_ACCESS_KEY_ID" :
						"AWS_SECRET_ACCESS_KEY");
		return -1;
	}
	if (!awscred_value_ok(id, strlen(id)) ||
	    !awscred_value_ok(secret, strlen(secret)) ||
	    (token != NULL && *token != '\0' &&
		!awscred_value_ok(token, strlen(token)))) {
		snprintf(err, errlen,
		    "%s in floe's environment has blanks or control "
		    "characters",
		    !awscred_value_ok(id, strlen(id)) ?
			"AWS_ACCESS_KEY_ID" :
			!awscred_value_ok(secret, strlen(secret)) ?
			"AWS_SECRET_ACCESS_KEY" :
			"AWS_SESSION_TOKEN");
		return -1;
	}
	c->access_key_id = xstrdup(id);
	c->secret_access_key = xstrdup(secret);
	if (token != NULL && *token != '\0')
		c->session_token = xstrdup(token);
	strlcpy(c->source, "environment", sizeof(c->source));
	return 0;
}

/* Trim blanks (and a CR) at both ends of [*P, *P + *N). */
static void
awscred_trim(const char **p, size_t *n)
{
	while (*n > 0 && isspace((unsigned char)**p)) {
		(*p)++;
		(*n)--;
	}
	while (*n > 0 && isspace((unsigned char)(*p)[*n - 1]))
		(*n)--;
}

int
awscred_parse(struct awscred *c, const char *text, size_t len,
    const char *profile, char *err, size_t errlen)
{
	static const char *const keys[] = { "aws_access_key_id",
		"aws_secret_access_key", "aws_session_token",
		"aws_security_token" };
	const char *p = text, *end = text + len, *nl, *l, *k, *v, *sep;
	size_t n, kn, vn, i;
	/* IN: 0 before the profile, 1 in it, 2 after it. */
	int line = 0, seen[4] = { 0 }, in = 0;
	bool indented, cont = false;
	char **dst;

	awscred_clear(c);
	/* A UTF-8 byte order mark, as some editors write. */
	if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	for (; p < end; p = nl + 1) {
		line++;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		l = p;
		n = (size_t)(nl - p);
		if (memchr(l, '\0', n) != NULL) {
			snprintf(err, errlen, "line %d: a NUL byte", line);
			goto fail;
		}
		indented = n > 0 && (l[0] == ' ' || l[0] == '\t');
		awscred_trim(&l, &n);
		if (n == 0 || l[0] == '#' || l[0] == ';')
			continue;
		/* An indented line continues the value above it. */
		if (indented) {
			if (cont) {
				snprintf(err, errlen,
				    "line %d: a credential cannot go on over "
				    "lines",
				    line);
				goto fail;
			}
			continue;
		}
		cont = false;
		if (l[0] == '[') {
			if (l[n - 1] != ']') {
				snprintf(err, errlen,
				    "line %d: a section header needs ']'",
				    line);
				goto fail;
			}
			k = l + 1;
			kn = n - 2;
			if (in == 1)
				in = 2; /* the profile ended */
			if (kn == strlen(profile) &&
			    memcmp(k, profile, kn) == 0) {
				if (in == 2) {
					snprintf(err, errlen,
					    "line %d: profile [%s] appears "
					    "twice",
					    line, profile);
					goto fail;
				}
				in = 1;
			}
			continue;
		}
		sep = NULL;
		for (i = 0; i < n && sep == NULL; i++)
			if (l[i] == '=' || l[i] == ':')
				sep = l + i;
		if (sep == NULL) {
			snprintf(err, errlen,
			    "line %d: not \"key = value\" nor a [profile]",
			    line);
			goto fail;
		}
		if (in != 1)
			continue;
		k = l;
		kn = (size_t)(sep - l);
		awscred_trim(&k, &kn);
		v = sep + 1;
		vn = (size_t)(l + n - v);
		awscred_trim(&v, &vn);
		for (i = 0; i < nitems(keys); i++)
			if (strlen(keys[i]) == kn &&
			    strncasecmp(k, keys[i], kn) == 0)
				break;
		if (i == nitems(keys))
			continue;
		if (seen[i]++) {
			snprintf(err, errlen,
			    "line %d: %s appears twice in [%s]", line, keys[i],
			    profile);
			goto fail;
		}
		if (!awscred_value_ok(v, vn)) {
			snprintf(err, errlen,
			    "line %d: %s is empty or has blanks or control "
			    "characters",
			    line, keys[i]);
			goto fail;
		}
		/* The next indented line would continue a credential. */
		cont = true;
		dst = i == 0 ? &c->access_key_id :
		    i == 1   ? &c->secret_access_key :
			       &c->session_token;
		/* aws_security_token is the old name of the session token. */
		if (i == 3 && seen[2])
			continue;
		awscred_set(dst, v, vn);
	}
	if (in == 0) {
		snprintf(err, errlen, "no profile [%s]", profile);
		goto fail;
	}
	if (c->access_key_id == NULL || c->secret_access_key == NULL) {
		snprintf(err, errlen, "[%s] has no %s", profile,
		    c->access_key_id == NULL ? "aws_access_key_id" :
					       "aws_secret_access_key");
		goto fail;
	}
	return 0;
fail:
	awscred_clear(c);
	return -1;
}

int
awscred_load(struct awscred *c, const char *file, const char *profile,
    char *err, size_t errlen)
{
	char *text, why[256];
	size_t len;
	int rc;

	if (profile == NULL)
		profile = "default";
	if (file == NULL)
		return awscred_env(c, getenv("AWS_ACCESS_KEY_ID"),
		    getenv("AWS_SECRET_ACCESS_KEY"),
		    getenv("AWS_SESSION_TOKEN"), err, errlen);
	awscred_clear(c);
	if ((text = secret_read(file, &len, err, errlen)) == NULL)
		return -1;
	rc = awscred_parse(c, text, len, profile, why, sizeof(why));
	secret_free(text, len);
	if (rc == -1) {
		if (strncmp(why, "line ", 5) == 0)
			snprintf(err, errlen, "%s:%s", file, why + 5);
		else
			snprintf(err, errlen, "%s: %s", file, why);
		return -1;
	}
	snprintf(c->source, sizeof(c->source), "%s [%s]", file, profile);
	return 0;
}
