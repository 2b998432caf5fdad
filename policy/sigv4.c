/*
 * floe: sigv4.c -- AWS Signature Version 4, as the AWS SDKs (botocore, the
 * JS and Java SDKs) sign requests to non-S3 services: the path normalised
 * (empty and dot segments removed) and URI-encoded once more, so what floe
 * sends as %1F is signed as %251F; the query decoded ('+' is a space, as
 * AWS's servers and the Java SDK read it), re-encoded with RFC 3986's
 * unreserved set, sorted by key then value; header values trimmed. The
 * canonical request is never built: its pieces go straight into SHA-256.
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "lib/compat.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "policy/sigv4.h"

#define SIGV4_NAME_MAX 64 /* region and service names */
#define SIGV4_SEGS 64 /* path segments kept on the stack */
#define SIGV4_PARAMS 64 /* query parameters kept on the stack */
#define SIGV4_QBUF 2048 /* re-encoded query kept on the stack */

struct sigv4 {
	char region[SIGV4_NAME_MAX];
	char service[SIGV4_NAME_MAX];
	unsigned flags;
	char *akid;
	char *secret; /* "AWS4" + the secret access key */
	size_t secret_len;
	char *token;
	EVP_MD *sha256;
	EVP_MAC *hmac;
	EVP_MD_CTX *md; /* the canonical request's hash */
	EVP_MAC_CTX *derive; /* the key derivation */
	EVP_MAC_CTX *sign; /* keyed with the signing key of DAY */
	char day[9]; /* the day of the signing key, "" for none */
	/* "/region/service/aws4_request\n", for the string to sign */
	char tail[2 * SIGV4_NAME_MAX + 20];
	size_t tail_len;
	/*
	 * The Authorization around the day: "... Credential=AKID/" and
	 * "/region/service/aws4_request, SignedHeaders=".
	 */
	char *prefix;
	size_t prefix_len;
	char mid[2 * SIGV4_NAME_MAX + 40];
	size_t mid_len;
};

struct sigv4_body {
	EVP_MD_CTX *md;
	EVP_MD *sha256;
	bool failed;
};

/* Where canonical pieces go: the hash, or a buffer (sigv4_canonical). */
struct sigv4_sink {
	EVP_MD_CTX *md;
	char *buf;
	size_t len, cap;
	bool failed;
};

/* A query parameter, re-encoded, as offsets into the scratch buffer. */
struct sigv4_param {
	size_t k, klen, v, vlen;
};

/* A span of the path: one segment. */
struct sigv4_seg {
	const char *p;
	size_t len;
};

static bool sigv4_name_ok(const char *);
static bool sigv4_printable(const char *);
static void sigv4_put(struct sigv4_sink *, const void *, size_t);
static void sigv4_puts(struct sigv4_sink *, const char *);
static void sigv4_put_encoded(struct sigv4_sink *, const char *, size_t);
static void sigv4_path(struct sigv4_sink *, const char *, size_t);
static void sigv4_query(struct sigv4_sink *, const char *, size_t);
static int sigv4_headers(struct sigv4_sink *, const struct sigv4 *,
    const struct sigv4_msg *, const char *, char *, size_t);
static void sigv4_canon(struct sigv4 *, struct sigv4_sink *,
    const struct sigv4_msg *, const char *, char *, size_t);
static void sigv4_hex(const unsigned char *, size_t, char *);
static void sigv4_date(int64_t, char *);
static int sigv4_hmac(EVP_MAC_CTX *, const void *, size_t, const void *, size_t,
    unsigned char *);
static int sigv4_key(struct sigv4 *, const char *);
static int sigv4_stage(struct sigv4 *, const struct sigv4_msg *, int64_t,
    struct sigv4_sig *, char *, size_t);

static const char sigv4_hexdig[] = "0123456789abcdef";
static const char sigv4_uhex[] = "0123456789ABCDEF";

/* RFC 3986's unreserved characters: ALPHA DIGIT - . _ ~ (ASCII only). */
static bool
sigv4_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/* Region and service names: [a-z0-9-], not empty. */
static bool
sigv4_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= SIGV4_NAME_MAX)
		return false;
	for (; *s != '\0'; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= '0' && *s <= '9') &&
		    *s != '-')
			return false;
	return true;
}

/* Printable ASCII without spaces: nothing that could break a header. */
static bool
sigv4_printable(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

struct sigv4 *
sigv4_new(const char *region, const char *service, unsigned flags, char *err,
    size_t errlen)
{
	struct sigv4 *s;

	if (!sigv4_name_ok(region)) {
		snprintf(err, errlen, "region \"%s\" is not [a-z0-9-]", region);
		return NULL;
	}
	if (!sigv4_name_ok(service)) {
		snprintf(err, errlen, "service \"%s\" is not [a-z0-9-]",
		    service);
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	strlcpy(s->region, region, sizeof(s->region));
	strlcpy(s->service, service, sizeof(s->service));
	s->flags = flags;
	s->tail_len = (size_t)snprintf(s->tail, sizeof(s->tail),
	    "/%s/%s/aws4_request\n", region, service);
	s->mid_len = (size_t)snprintf(s->mid, sizeof(s->mid),
	    "/%s/%s/aws4_request, SignedHeaders=", region, service);
	/* Fetched once: OpenSSL 3 looks algorithms up by name otherwise. */
	if ((s->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL ||
	    (s->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL ||
	    (s->md = EVP_MD_CTX_new()) == NULL ||
	    (s->derive = EVP_MAC_CTX_new(s->hmac)) == NULL ||
	    (s->sign = EVP_MAC_CTX_new(s->hmac)) == NULL) {
		snprintf(err, errlen, "OpenSSL has no SHA-256 or HMAC");
		sigv4_free(s);
		return NULL;
	}
	return s;
}

/* Forget the credentials and the key derived from them. */
static void
sigv4_forget(struct sigv4 *s)
{
	if (s->secret != NULL) {
		OPENSSL_cleanse(s->secret, s->secret_len);
		free(s->secret);
	}
	if (s->token != NULL) {
		OPENSSL_cleanse(s->token, strlen(s->token));
		free(s->token);
	}
	free(s->akid);
	free(s->prefix);
	s->akid = s->secret = s->token = s->prefix = NULL;
	s->secret_len = 0;
	s->day[0] = '\0';
}

void
sigv4_free(struct sigv4 *s)
{
	if (s == NULL)
		return;
	sigv4_forget(s);
	/* The MAC contexts hold the keys: freeing them cleanses them. */
	EVP_MAC_CTX_free(s->sign);
	EVP_MAC_CTX_free(s->derive);
	EVP_MD_CTX_free(s->md);
	EVP_MAC_free(s->hmac);
	EVP_MD_free(s->sha256);
	free(s);
}

int
sigv4_set_creds(struct sigv4 *s, const char *akid, const char *secret,
    const char *token, char *err, size_t errlen)
{
	if (akid == NULL || !sigv4_printable(akid) || strchr(akid, '/') ||
	    strchr(akid, ',')) {
		snprintf(err, errlen,
		    "the access key id is empty or not "
		    "printable");
		return -1;
	}
	if (secret == NULL || !sigv4_printable(secret)) {
		snprintf(err, errlen,
		    "the secret access key is empty or not "
		    "printable");
		return -1;
	}
	if (token != NULL && !sigv4_printable(token)) {
		snprintf(err, errlen,
		    "the session token is empty or not "
		    "printable");
		return -1;
	}
	sigv4_forget(s);
	s->akid = xstrdup(akid);
	s->prefix = xasprintf("AWS4-HMAC-SHA256 Credential=%s/", akid);
	s->prefix_len = strlen(s->prefix);
	s->secret = xasprintf("AWS4%s", secret);
	s->secret_len = strlen(s->secret);
	s->token = token != NULL ? xstrdup(token) : NULL;
	return 0;
}

bool
sigv4_has_creds(const struct sigv4 *s)
{
	return s->akid != NULL;
}

const char *
sigv4_access_key_id(const struct sigv4 *s)
{
	return s->akid;
}

/* Append N bytes of P to the canonical request. */
static void
sigv4_put(struct sigv4_sink *k, const void *p, size_t n)
{
	if (k->md != NULL) {
		if (EVP_DigestUpdate(k->md, p, n) != 1)
			k->failed = true;
		return;
	}
	if (k->len + n >= k->cap) {
		k->failed = true;
		return;
	}
	memcpy(k->buf + k->len, p, n);
	k->len += n;
}

static void
sigv4_puts(struct sigv4_sink *k, const char *s)
{
	sigv4_put(k, s, strlen(s));
}

/*
 * Append P, URI-encoded: unreserved bytes as they are, any other as %XX.
 * Runs of unreserved bytes go in one piece.
 */
static void
sigv4_put_encoded(struct sigv4_sink *k, const char *p, size_t n)
{
	const char *run = p, *end = p + n;
	char pct[3] = { '%', 0, 0 };

	for (; p < end; p++) {
		if (sigv4_unreserved((unsigned char)*p))
			continue;
		if (p > run)
			sigv4_put(k, run, (size_t)(p - run));
		pct[1] = sigv4_uhex[(unsigned char)*p >> 4];
		pct[2] = sigv4_uhex[(unsigned char)*p & 15];
		sigv4_put(k, pct, 3);
		run = p + 1;
	}
	if (p > run)
		sigv4_put(k, run, (size_t)(p - run));
}

/*
 * The canonical URI: the path's segments without empty and "." ones, ".."
 * taking the one before away (RFC 3986 5.2.4, and AWS's consecutive
 * slashes), each URI-encoded. The path is already encoded as sent, so its
 * '%' becomes "%25": the double encoding of non-S3 services.
 */
static void
sigv4_path(struct sigv4_sink *k, const char *path, size_t len)
{
	struct sigv4_seg stack[SIGV4_SEGS], *segs = stack;
	size_t nsegs = 0, cap = SIGV4_SEGS, i, n;
	const char *p = path, *end = path + len, *slash;

	if (len == 0) {
		sigv4_put(k, "/", 1);
		return;
	}
	while (p <= end) {
		slash = memchr(p, '/', (size_t)(end - p));
		n = (size_t)((slash != NULL ? slash : end) - p);
		if (n == 0 || (n == 1 && p[0] == '.'))
			;
		else if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (nsegs > 0)
				nsegs--;
		} else {
			if (nsegs == cap) {
				cap *= 2;
				if (segs == stack) {
					segs = xreallocarray(NULL, cap,
					    sizeof(*segs));
					memcpy(segs, stack, sizeof(stack));
				} else
					segs = xreallocarray(segs, cap,
					    sizeof(*segs));
			}
			segs[nsegs].p = p;
			segs[nsegs++].len = n;
		}
		if (slash == NULL)
			break;
		p = slash + 1;
	}
	if (path[0] == '/')
		sigv4_put(k, "/", 1);
	for (i = 0; i < nsegs; i++) {
		if (i > 0)
			sigv4_put(k, "/", 1);
		sigv4_put_encoded(k, segs[i].p, segs[i].len);
	}
	if (path[len - 1] == '/' && nsegs > 0)
		sigv4_put(k, "/", 1);
	if (segs != stack)
		free(segs);
}

/*
 * Decode P (N bytes of a query key or value: '+' is a space, %XX a byte,
 * a '%' not followed by two hex digits stays itself) and re-encode it at
 * OUT. The bytes written: at most 3 * N.
 */
static size_t
sigv4_reencode(const char *p, size_t n, char *out)
{
	const char *end = p + n;
	char *o = out;
	int hi, lo;
	unsigned char c;

	while (p < end) {
		c = (unsigned char)*p++;
		if (c == '+')
			c = ' ';
		else if (c == '%' && end - p >= 2 &&
		    (hi = units_hexval(p[0])) >= 0 &&
		    (lo = units_hexval(p[1])) >= 0) {
			c = (unsigned char)(hi << 4 | lo);
			p += 2;
		}
		if (sigv4_unreserved(c))
			*o++ = (char)c;
		else {
			*o++ = '%';
			*o++ = sigv4_uhex[c >> 4];
			*o++ = sigv4_uhex[c & 15];
		}
	}
	return (size_t)(o - out);
}

/* Byte order of two re-encoded strings. */
static int
sigv4_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/*
 * The canonical query: every non-empty "k=v" (or "k") piece decoded and
 * re-encoded, sorted by key then value, joined by '&'; "k" is "k=".
 */
static void
sigv4_query(struct sigv4_sink *k, const char *q, size_t len)
{
	struct sigv4_param pstack[SIGV4_PARAMS], *ps = pstack, t;
	char qstack[SIGV4_QBUF], *buf = qstack;
	size_t np = 0, cap = SIGV4_PARAMS, used = 0, i, j, n;
	const char *p = q, *end = q + len, *amp, *eq;

	if (len == 0)
		return;
	if (3 * len > sizeof(qstack))
		buf = xmalloc(3 * len);
	while (p < end) {
		amp = memchr(p, '&', (size_t)(end - p));
		n = (size_t)((amp != NULL ? amp : end) - p);
		if (n > 0) {
			if (np == cap) {
				cap *= 2;
				if (ps == pstack) {
					ps = xreallocarray(NULL, cap,
					    sizeof(*ps));
					memcpy(ps, pstack, sizeof(pstack));
				} else
					ps =
					    xreallocarray(ps, cap, sizeof(*ps));
			}
			eq = memchr(p, '=', n);
			ps[np].k = used;
			ps[np].klen = sigv4_reencode(p,
			    eq != NULL ? (size_t)(eq - p) : n, buf + used);
			used += ps[np].klen;
			ps[np].v = used;
			ps[np].vlen = eq != NULL ?
			    sigv4_reencode(eq + 1, (size_t)(p + n - eq - 1),
				buf + used) :
			    0;
			used += ps[np].vlen;
			np++;
		}
		p += n + 1;
	}
	/* Insertion sort: queries have a handful of parameters. */
	for (i = 1; i < np; i++) {
		t = ps[i];
		for (j = i; j > 0; j--) {
			int c = sigv4_cmp(buf + ps[j - 1].k, ps[j - 1].klen,
			    buf + t.k, t.klen);

			if (c == 0)
				c = sigv4_cmp(buf + ps[j - 1].v, ps[j - 1].vlen,
				    buf + t.v, t.vlen);
			if (c <= 0)
				break;
			ps[j] = ps[j - 1];
		}
		ps[j] = t;
	}
	for (i = 0; i < np; i++) {
		if (i > 0)
			sigv4_put(k, "&", 1);
		sigv4_put(k, buf + ps[i].k, ps[i].klen);
		sigv4_put(k, "=", 1);
		sigv4_put(k, buf + ps[i].v, ps[i].vlen);
	}
	if (buf != qstack)
		free(buf);
	if (ps != pstack)
		free(ps);
}

/* A header to sign, its name lowercased into LNAME. */
struct sigv4_h {
	char lname[64];
	size_t nlen;
	const char *value;
	size_t vlen;
};

/* Append V trimmed, with inner runs of blanks as one space. */
static void
sigv4_put_trimmed(struct sigv4_sink *k, const char *v, size_t n)
{
	const char *end = v + n, *run;
	bool first = true;

	/* Most values (dates, hashes, tokens) have no blank at all. */
	if (n > 0 && v[0] != ' ' && v[0] != '\t' && memchr(v, ' ', n) == NULL &&
	    memchr(v, '\t', n) == NULL) {
		sigv4_put(k, v, n);
		return;
	}
	while (v < end) {
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		if (v == end)
			break;
		run = v;
		while (v < end && *v != ' ' && *v != '\t')
			v++;
		if (!first)
			sigv4_put(k, " ", 1);
		sigv4_put(k, run, (size_t)(v - run));
		first = false;
	}
}

/*
 * The canonical headers and, into SIGNED (LEN bytes), the signed header
 * list. Host, X-Amz-Date, the security token and the content hash when
 * sent, and the caller's; sorted by lowercase name, repeated names joined
 * with ','. -1 if there are too many or a name is too long.
 */
static int
sigv4_headers(struct sigv4_sink *k, const struct sigv4 *s,
    const struct sigv4_msg *m, const char *date, char *signed_, size_t len)
{
	struct sigv4_h h[SIGV4_MAX_HDRS + 4], t;
	size_t nh = 0, i, j, o = 0;
	const char *hash;
	char c;

	if (m->nhdrs > SIGV4_MAX_HDRS)
		return -1;
	for (i = 0; i < m->nhdrs; i++) {
		if (m->hdrs[i].name_len == 0 ||
		    m->hdrs[i].name_len >= sizeof(h[nh].lname))
			return -1;
		for (j = 0; j < m->hdrs[i].name_len; j++) {
			c = m->hdrs[i].name[j];
			h[nh].lname[j] =
			    c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
		}
		h[nh].lname[j] = '\0';
		h[nh].nlen = j;
		h[nh].value = m->hdrs[i].value;
		h[nh++].vlen = m->hdrs[i].value_len;
	}
#define SIGV4_ADD(n, v, l)                                                     \
	do {                                                                   \
		strlcpy(h[nh].lname, (n), sizeof(h[nh].lname));                \
		h[nh].nlen = strlen(n);                                        \
		h[nh].value = (v);                                             \
		h[nh++].vlen = (l);                                            \
	} while (0)
	SIGV4_ADD("host", m->host, m->host_len);
	SIGV4_ADD("x-amz-date", date, strlen(date));
	if (s->token != NULL)
		SIGV4_ADD("x-amz-security-token", s->token, strlen(s->token));
	if (s->flags & SIGV4_CONTENT_SHA256) {
		hash = m->payload_hash != NULL ? m->payload_hash :
						 SIGV4_EMPTY_HASH;
		SIGV4_ADD("x-amz-content-sha256", hash, strlen(hash));
	}
#undef SIGV4_ADD
	/* Stable: repeated names keep the caller's order of values. */
	for (i = 1; i < nh; i++) {
		t = h[i];
		for (j = i; j > 0 && strcmp(h[j - 1].lname, t.lname) > 0; j--)
			h[j] = h[j - 1];
		h[j] = t;
	}
	for (i = 0; i < nh; i++) {
		if (i == 0 || strcmp(h[i - 1].lname, h[i].lname) != 0) {
			if (i > 0)
				sigv4_put(k, "\n", 1);
			sigv4_put(k, h[i].lname, h[i].nlen);
			sigv4_put(k, ":", 1);
			if (o + h[i].nlen + 2 > len)
				return -1;
			if (o > 0)
				signed_[o++] = ';';
			memcpy(signed_ + o, h[i].lname, h[i].nlen);
			o += h[i].nlen;
		} else
			sigv4_put(k, ",", 1);
		sigv4_put_trimmed(k, h[i].value, h[i].vlen);
	}
	sigv4_put(k, "\n", 1);
	signed_[o] = '\0';
	return 0;
}

/* The whole canonical request into K; the signed header list into SH. */
static void
sigv4_canon(struct sigv4 *s, struct sigv4_sink *k, const struct sigv4_msg *m,
    const char *date, char *sh, size_t shlen)
{
	sigv4_puts(k, m->method);
	sigv4_put(k, "\n", 1);
	sigv4_path(k, m->path, m->path_len);
	sigv4_put(k, "\n", 1);
	if (m->query != NULL)
		sigv4_query(k, m->query, m->query_len);
	sigv4_put(k, "\n", 1);
	if (sigv4_headers(k, s, m, date, sh, shlen) == -1) {
		k->failed = true;
		return;
	}
	sigv4_put(k, "\n", 1);
	sigv4_puts(k, sh);
	sigv4_put(k, "\n", 1);
	sigv4_puts(k,
	    m->payload_hash != NULL ? m->payload_hash : SIGV4_EMPTY_HASH);
}

static void
sigv4_hex(const unsigned char *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = sigv4_hexdig[p[i] >> 4];
		out[2 * i + 1] = sigv4_hexdig[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* V as N decimal digits at O. */
static void
sigv4_digits(char *o, int v, int n)
{
	while (n-- > 0) {
		o[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* NOW as "YYYYMMDDTHHMMSSZ" (UTC) into OUT[SIGV4_DATE]; no printf. */
static void
sigv4_date(int64_t now, char *out)
{
	struct tm tm;
	time_t t = (time_t)now;

	if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 < 0 ||
	    tm.tm_year + 1900 > 9999)
		memset(&tm, 0, sizeof(tm));
	sigv4_digits(out, tm.tm_year + 1900, 4);
	sigv4_digits(out + 4, tm.tm_mon + 1, 2);
	sigv4_digits(out + 6, tm.tm_mday, 2);
	out[8] = 'T';
	sigv4_digits(out + 9, tm.tm_hour, 2);
	sigv4_digits(out + 11, tm.tm_min, 2);
	sigv4_digits(out + 13, tm.tm_sec, 2);
	out[15] = 'Z';
	out[16] = '\0';
}

/* HMAC-SHA256 of MSG under KEY into OUT[32]. 0 or -1. */
static int
sigv4_hmac(EVP_MAC_CTX *ctx, const void *key, size_t klen, const void *msg,
    size_t mlen, unsigned char *out)
{
	OSSL_PARAM params[2];
	size_t outlen;

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)(uintptr_t) "SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(ctx, key, klen, params) != 1 ||
	    EVP_MAC_update(ctx, msg, mlen) != 1 ||
	    EVP_MAC_final(ctx, out, &outlen, 32) != 1 || outlen != 32)
		return -1;
	return 0;
}

/*
 * Derive the signing key of DAY ("YYYYMMDD") unless it is the cached one:
 * HMAC chain over day, region, service and "aws4_request", then key the
 * signing MAC with it.
 */
static int
sigv4_key(struct sigv4 *s, const char *day)
{
	unsigned char k[32];
	OSSL_PARAM params[2];
	int rc = -1;

	if (strcmp(s->day, day) == 0)
		return 0;
	s->day[0] = '\0';
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)(uintptr_t) "SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	if (sigv4_hmac(s->derive, s->secret, s->secret_len, day, 8, k) == 0 &&
	    sigv4_hmac(s->derive, k, 32, s->region, strlen(s->region), k) ==
		0 &&
	    sigv4_hmac(s->derive, k, 32, s->service, strlen(s->service), k) ==
		0 &&
	    sigv4_hmac(s->derive, k, 32, "aws4_request", 12, k) == 0 &&
	    EVP_MAC_init(s->sign, k, 32, params) == 1) {
		strlcpy(s->day, day, sizeof(s->day));
		rc = 0;
	}
	OPENSSL_cleanse(k, sizeof(k));
	return rc;
}

/*
 * Sign M into SIG: hash the canonical request, then MAC the string to sign
 * ("AWS4-HMAC-SHA256", date, scope, that hash) with the key of the day.
 * The signed header list goes into SH.
 */
static int
sigv4_stage(struct sigv4 *s, const struct sigv4_msg *m, int64_t now,
    struct sigv4_sig *sig, char *sh, size_t shlen)
{
	struct sigv4_sink k = { .md = s->md };
	unsigned char md[32], mac[32];
	unsigned int mdlen;
	char chash[SIGV4_HEX], mac_hex[SIGV4_HEX], day[9], *o;
	size_t maclen, shl;

	if (s->akid == NULL)
		return -1;
	sigv4_date(now, sig->date);
	sig->content_sha256 = (s->flags & SIGV4_CONTENT_SHA256) != 0;
	strlcpy(sig->payload_hash,
	    m->payload_hash != NULL ? m->payload_hash : SIGV4_EMPTY_HASH,
	    sizeof(sig->payload_hash));
	sig->token = s->token;
	if (EVP_DigestInit_ex2(s->md, s->sha256, NULL) != 1)
		return -1;
	sigv4_canon(s, &k, m, sig->date, sh, shlen);
	if (k.failed || EVP_DigestFinal_ex(s->md, md, &mdlen) != 1)
		return -1;
	sigv4_hex(md, 32, chash);
	memcpy(day, sig->date, 8);
	day[8] = '\0';
	if (sigv4_key(s, day) == -1)
		return -1;
	/* A NULL key starts over with the key already set. */
	if (EVP_MAC_init(s->sign, NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(s->sign, (const unsigned char *)"AWS4-HMAC-SHA256\n",
		17) != 1 ||
	    EVP_MAC_update(s->sign, (const unsigned char *)sig->date, 16) !=
		1 ||
	    EVP_MAC_update(s->sign, (const unsigned char *)"\n", 1) != 1 ||
	    EVP_MAC_update(s->sign, (const unsigned char *)day, 8) != 1 ||
	    EVP_MAC_update(s->sign, (const unsigned char *)s->tail,
		s->tail_len) != 1 ||
	    EVP_MAC_update(s->sign, (const unsigned char *)chash, 64) != 1 ||
	    EVP_MAC_final(s->sign, mac, &maclen, sizeof(mac)) != 1 ||
	    maclen != 32)
		return -1;
	sigv4_hex(mac, 32, mac_hex);
	/* Pieces by hand, no printf: prefix, day, middle, list, signature. */
	shl = strlen(sh);
	if (s->prefix_len + 8 + s->mid_len + shl + 12 + 64 >= sizeof(sig->auth))
		return -1;
	o = sig->auth;
	memcpy(o, s->prefix, s->prefix_len);
	o += s->prefix_len;
	memcpy(o, day, 8);
	o += 8;
	memcpy(o, s->mid, s->mid_len);
	o += s->mid_len;
	memcpy(o, sh, shl);
	o += shl;
	memcpy(o, ", Signature=", 12);
	memcpy(o + 12, mac_hex, 65);
	sig->auth_len = (size_t)(o + 12 + 64 - sig->auth);
	return 0;
}

int
sigv4_sign(struct sigv4 *s, const struct sigv4_msg *m, int64_t now,
    struct sigv4_sig *sig)
{
	char sh[256];

	if (sigv4_stage(s, m, now, sig, sh, sizeof(sh)) == -1) {
		sig->auth[0] = '\0';
		sig->auth_len = 0;
		return -1;
	}
	return 0;
}

int
sigv4_canonical(struct sigv4 *s, const struct sigv4_msg *m, int64_t now,
    char *buf, size_t len)
{
	struct sigv4_sink k = { .buf = buf, .cap = len };
	char date[SIGV4_DATE], sh[256];

	if (len == 0)
		return -1;
	sigv4_date(now, date);
	sigv4_canon(s, &k, m, date, sh, sizeof(sh));
	buf[k.failed ? 0 : k.len] = '\0';
	return k.failed ? -1 : 0;
}

/* One header line "NAME: VALUE\r\n" at O; the bytes written. */
static size_t
sigv4_line(char *o, const char *name, size_t nlen, const char *v, size_t vlen)
{
	memcpy(o, name, nlen);
	memcpy(o + nlen, ": ", 2);
	memcpy(o + nlen + 2, v, vlen);
	memcpy(o + nlen + 2 + vlen, "\r\n", 2);
	return nlen + vlen + 4;
}

size_t
sigv4_head_len(const struct sigv4_sig *sig)
{
	size_t n = 10 + 16 + 4 + 13 + sig->auth_len + 4;

	if (sig->token != NULL)
		n += 20 + strlen(sig->token) + 4;
	if (sig->content_sha256)
		n += 20 + 64 + 4;
	return n;
}

ssize_t
sigv4_head(const struct sigv4_sig *sig, char *buf, size_t len)
{
	char *o = buf;

	if (sig->auth_len == 0 || sigv4_head_len(sig) > len)
		return -1;
	o += sigv4_line(o, "X-Amz-Date", 10, sig->date, 16);
	if (sig->token != NULL)
		o += sigv4_line(o, "X-Amz-Security-Token", 20, sig->token,
		    strlen(sig->token));
	if (sig->content_sha256)
		o += sigv4_line(o, "X-Amz-Content-Sha256", 20,
		    sig->payload_hash, 64);
	o += sigv4_line(o, "Authorization", 13, sig->auth, sig->auth_len);
	return o - buf;
}

struct sigv4_body *
sigv4_body_new(void)
{
	struct sigv4_body *b;

	b = xcalloc(1, sizeof(*b));
	if ((b->md = EVP_MD_CTX_new()) == NULL ||
	    (b->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
		b->failed = true;
	sigv4_body_init(b);
	return b;
}

void
sigv4_body_free(struct sigv4_body *b)
{
	if (b == NULL)
		return;
	EVP_MD_CTX_free(b->md);
	EVP_MD_free(b->sha256);
	free(b);
}

/* Start a new hash; the context's memory is reused. */
void
sigv4_body_init(struct sigv4_body *b)
{
	if (b->md == NULL || b->sha256 == NULL)
		return;
	b->failed = EVP_DigestInit_ex2(b->md, b->sha256, NULL) != 1;
}

void
sigv4_body_update(struct sigv4_body *b, const void *p, size_t n)
{
	if (!b->failed && n > 0 && EVP_DigestUpdate(b->md, p, n) != 1)
		b->failed = true;
}

int
sigv4_body_final(struct sigv4_body *b, char hex[SIGV4_HEX])
{
	unsigned char md[32];
	unsigned int n;

	if (b->failed || EVP_DigestFinal_ex(b->md, md, &n) != 1 || n != 32) {
		hex[0] = '\0';
		return -1;
	}
	sigv4_hex(md, 32, hex);
	return 0;
}
