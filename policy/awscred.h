/*
 * floe: awscred.h -- AWS credentials for SigV4: an access key id, a secret
 * access key and, for temporary credentials, a session token, taken from
 * floe's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN) or from a profile of an AWS-format credentials file.
 * Owns the copies it makes and wipes them. Never logs; no error message
 * holds a secret.
 */
#ifndef FLOE_POLICY_AWSCRED_H
#define FLOE_POLICY_AWSCRED_H

#include <stddef.h>

struct awscred {
	char *access_key_id;
	char *secret_access_key;
	char *session_token; /* or NULL */
	char source[300]; /* "environment" or "FILE [profile]", for logs */
};

/*
 * Credentials from the values of the three environment variables (TOKEN
 * may be NULL). -1 with ERR naming what is missing or malformed.
 */
int awscred_env(struct awscred *, const char *access_key_id,
    const char *secret_access_key, const char *session_token, char *err,
    size_t errlen);
/*
 * Credentials of PROFILE from the text of an AWS credentials file (INI:
 * "[profile]" sections of "key = value" lines, '#' and ';' comments).
 * -1 with "line N: why" (or "no profile [P]") in ERR.
 */
int awscred_parse(struct awscred *, const char *text, size_t len,
    const char *profile, char *err, size_t errlen);
/*
 * Credentials as floe.conf asks: PROFILE ("default" if NULL) of FILE when
 * FILE is set (refused if its group or others may read it), otherwise the
 * environment. -1 with ERR naming the file or the variables.
 */
int awscred_load(struct awscred *, const char *file, const char *profile,
    char *err, size_t errlen);
/* Wipe and free the copies; C may be used again. */
void awscred_clear(struct awscred *);

#endif
