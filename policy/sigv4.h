/*
 * floe: sigv4.h -- AWS Signature Version 4 for one catalog (Glue's or S3
 * Tables' Iceberg REST endpoint): canonical request, string to sign and
 * Authorization exactly as the AWS SDKs build them for non-S3 services.
 * Owns the credentials it was given, the signing key derived from them
 * (once per UTC day; region and service are fixed) and the hash and MAC
 * contexts it reuses, so that signing allocates nothing. Pure: no I/O, no
 * clock (callers pass the time), never logs. Loop thread only.
 */
#ifndef FLOE_POLICY_SIGV4_H
#define FLOE_POLICY_SIGV4_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIGV4_HEX 65 /* a SHA-256 in hex, with its NUL */
#define SIGV4_DATE 17 /* "20150830T123600Z", with its NUL */
#define SIGV4_AUTH_MAX 640 /* the Authorization value, with its NUL */
#define SIGV4_MAX_HDRS 8 /* headers a caller adds to the signed ones */
/* The payload hash of an empty body. */
#define SIGV4_EMPTY_HASH                                                       \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Send and sign X-Amz-Content-Sha256 (the payload hash) on every request. */
#define SIGV4_CONTENT_SHA256 0x1

struct sigv4;
struct sigv4_body;

/* A header to sign besides host and the x-amz-* ones (Content-Type). */
struct sigv4_hdr {
	const char *name; /* any case; signed lowercased */
	size_t name_len;
	const char *value; /* signed trimmed, inner runs of blanks as one */
	size_t value_len;
};

/* One request as floe sends it, after every rewrite. Borrowed. */
struct sigv4_msg {
	const char *method; /* "GET" */
	const char *path; /* as sent, percent-encoded, without the query */
	size_t path_len;
	const char *query; /* as sent, without '?'; or NULL */
	size_t query_len;
	const char *host; /* the Host header as sent (host[:port]) */
	size_t host_len;
	const struct sigv4_hdr *hdrs; /* SIGV4_MAX_HDRS at most */
	size_t nhdrs;
	const char *payload_hash; /* sigv4_body_final's, or NULL: no body */
};

/* What goes on the request: see sigv4_head. */
struct sigv4_sig {
	char date[SIGV4_DATE]; /* X-Amz-Date */
	char payload_hash[SIGV4_HEX]; /* X-Amz-Content-Sha256, if sent */
	bool content_sha256;
	const char *token; /* X-Amz-Security-Token or NULL; the signer's */
	char auth[SIGV4_AUTH_MAX]; /* Authorization */
	size_t auth_len;
};

/*
 * A signer for REGION and SERVICE ("us-east-1", "glue") with FLAGS
 * (SIGV4_CONTENT_SHA256). NULL with ERR if a name is not [a-z0-9-] or
 * OpenSSL has no SHA-256 or HMAC.
 */
struct sigv4 *sigv4_new(const char *region, const char *service, unsigned flags,
    char *err, size_t errlen);
/* Wipe the credentials and the key, and free. NULL is fine. */
void sigv4_free(struct sigv4 *);
/*
 * Set (or replace) the credentials: access key id, secret access key and,
 * for temporary credentials, the session token (or NULL). Copied. -1 with
 * ERR (which never holds a secret) if one is empty or not printable.
 */
int sigv4_set_creds(struct sigv4 *, const char *access_key_id,
    const char *secret, const char *session_token, char *err, size_t errlen);
bool sigv4_has_creds(const struct sigv4 *);
/* The access key id, for status pages; it is not a secret. */
const char *sigv4_access_key_id(const struct sigv4 *);

/*
 * Sign M at NOW (seconds since the epoch) into SIG. 0, or -1 when M cannot
 * be signed (no credentials, too many headers, an Authorization longer
 * than SIGV4_AUTH_MAX, an OpenSSL failure). Allocates only for queries
 * longer than 2 KiB or paths of more than 64 segments.
 */
int sigv4_sign(struct sigv4 *, const struct sigv4_msg *m, int64_t now,
    struct sigv4_sig *sig);
/*
 * Write the header lines of SIG ("X-Amz-Date: ...\r\n", the security
 * token, the content hash, "Authorization: ...\r\n") into BUF. The bytes
 * written (no NUL), or -1 if LEN is too small; sigv4_head_len says how
 * many.
 */
ssize_t sigv4_head(const struct sigv4_sig *sig, char *buf, size_t len);
size_t sigv4_head_len(const struct sigv4_sig *sig);
/*
 * The canonical request of M at NOW into BUF (NUL-terminated), as it is
 * hashed for the signature: for tests and for debugging a refusal. 0, or
 * -1 if it does not fit.
 */
int sigv4_canonical(struct sigv4 *, const struct sigv4_msg *m, int64_t now,
    char *buf, size_t len);

/*
 * The payload hash of one request, fed piece by piece as the body is
 * sent. A context is reusable: init starts over without allocating.
 */
struct sigv4_body *sigv4_body_new(void);
void sigv4_body_free(struct sigv4_body *);
void sigv4_body_init(struct sigv4_body *);
void sigv4_body_update(struct sigv4_body *, const void *, size_t);
/* The hash in lowercase hex into HEX. 0, or -1 if OpenSSL failed. */
int sigv4_body_final(struct sigv4_body *, char hex[SIGV4_HEX]);

#endif
