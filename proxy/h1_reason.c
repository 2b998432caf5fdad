/*
 * floe: h1_reason.c -- the tables of HTTP/1.1 framing that need no
 * parser: the field a header name is, finding a header of a parsed
 * message, and the reason phrase of a status code (RFC 9110 15).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "proxy/h1.h"

static inline uint64_t
h1_load8(const char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

static inline uint32_t
h1_load4(const char *p)
{
	uint32_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/*
 * The LEN bytes at P equal LC (lower case letters, digits and '-'),
 * ignoring the case of letters: a word at a time, the bytes of P under
 * LC's letters with 0x20 set (LC's letters have 0x40 set, its digits and
 * '-' not). Only 'A'-'Z' becomes 'a'-'z' so, whatever P holds: a name
 * that matches is made of LC's bytes. Words overlap rather than read
 * past P's LEN bytes.
 */
static inline bool
h1_lc_eq(const char *p, const char *lc, size_t len)
{
	const uint64_t b8 = 0x4040404040404040ull;
	const uint32_t b4 = 0x40404040u;
	uint64_t w8;
	uint32_t w4;
	size_t i;

	if (len >= 8) {
		for (i = 0; i + 8 < len; i += 8) {
			w8 = h1_load8(lc + i);
			if ((h1_load8(p + i) | (w8 & b8) >> 1) != w8)
				return false;
		}
		w8 = h1_load8(lc + len - 8);
		return (h1_load8(p + len - 8) | (w8 & b8) >> 1) == w8;
	}
	if (len >= 4) {
		w4 = h1_load4(lc);
		if ((h1_load4(p) | (w4 & b4) >> 1) != w4)
			return false;
		w4 = h1_load4(lc + len - 4);
		return (h1_load4(p + len - 4) | (w4 & b4) >> 1) == w4;
	}
	for (i = 0; i < len; i++)
		if ((p[i] | (lc[i] & 0x40) >> 1) != lc[i])
			return false;
	return true;
}

/* NAME is LC (a literal): its length is known before it is compared. */
#define H1_IS(lc) h1_lc_eq(name, lc, sizeof(lc) - 1)

/* By length first: most names are told apart by it alone. */
enum h1_field
h1_field_of(const char *name, size_t len)
{
	switch (len) {
	case 3:
		return H1_IS("via") ? H1_F_VIA : H1_F_OTHER;
	case 4:
		return H1_IS("host") ? H1_F_HOST :
		    H1_IS("etag")    ? H1_F_ETAG :
				       H1_F_OTHER;
	case 6:
		return H1_IS("accept") ? H1_F_ACCEPT :
		    H1_IS("expect")    ? H1_F_EXPECT :
					 H1_F_OTHER;
	case 8:
		return H1_IS("location") ? H1_F_LOCATION : H1_F_OTHER;
	case 10:
		return H1_IS("user-agent") ? H1_F_USER_AGENT : H1_F_OTHER;
	case 11:
		return H1_IS("traceparent") ? H1_F_TRACEPARENT :
		    H1_IS("retry-after")    ? H1_F_RETRY_AFTER :
					      H1_F_OTHER;
	case 12:
		return H1_IS("content-type") ? H1_F_CONTENT_TYPE :
		    H1_IS("x-request-id")    ? H1_F_REQUEST_ID :
					       H1_F_OTHER;
	case 13:
		return H1_IS("authorization") ? H1_F_AUTHORIZATION :
		    H1_IS("if-none-match")    ? H1_F_IF_NONE_MATCH :
		    H1_IS("cache-control")    ? H1_F_CACHE_CONTROL :
						H1_F_OTHER;
	case 14:
		return H1_IS("content-length") ? H1_F_CONTENT_LENGTH :
						 H1_F_OTHER;
	case 15:
		return H1_IS("idempotency-key") ? H1_F_IDEMPOTENCY_KEY :
						  H1_F_OTHER;
	case 16:
		return H1_IS("x-client-version") ? H1_F_CLIENT_VERSION :
		    H1_IS("www-authenticate")	 ? H1_F_WWW_AUTHENTICATE :
						   H1_F_OTHER;
	case 17:
		return H1_IS("transfer-encoding") ? H1_F_TRANSFER_ENCODING :
						    H1_F_OTHER;
	case 25:
		return H1_IS("x-client-git-commit-short") ?
		    H1_F_CLIENT_GIT_COMMIT :
		    H1_F_OTHER;
	case 27:
		return H1_IS("x-iceberg-access-delegation") ?
		    H1_F_ACCESS_DELEGATION :
		    H1_F_OTHER;
	default:
		return H1_F_OTHER;
	}
}

#undef H1_IS

void
h1_index(struct h1_msg *m)
{
	struct h1_header *hd;
	unsigned i;

	memset(m->first, 0, sizeof(m->first));
	for (i = 0; i < m->nhdrs && i < UINT16_MAX; i++) {
		hd = &m->hdrs[i];
		hd->field = h1_field_of(hd->name, hd->name_len);
		if (hd->field != H1_F_OTHER && m->first[hd->field] == 0)
			m->first[hd->field] = i + 1;
	}
}

const struct h1_header *
h1_find(const struct h1_msg *m, const char *name)
{
	size_t len = strlen(name);
	unsigned i;

	for (i = 0; i < m->nhdrs; i++)
		if (m->hdrs[i].name_len == len &&
		    strncasecmp(m->hdrs[i].name, name, len) == 0)
			return &m->hdrs[i];
	return NULL;
}

/*
 * The reason phrases of RFC 9110 15 (and 419, which catalogs answer for an
 * expired token). A code with none registered gets an empty phrase: the
 * status line stays valid (RFC 9112 4) and clients read only the code.
 */
const char *
h1_reason(unsigned status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 101:
		return "Switching Protocols";
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 203:
		return "Non-Authoritative Information";
	case 204:
		return "No Content";
	case 205:
		return "Reset Content";
	case 206:
		return "Partial Content";
	case 300:
		return "Multiple Choices";
	case 301:
		return "Moved Permanently";
	case 302:
		return "Found";
	case 303:
		return "See Other";
	case 304:
		return "Not Modified";
	case 307:
		return "Temporary Redirect";
	case 308:
		return "Permanent Redirect";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 406:
		return "Not Acceptable";
	case 407:
		return "Proxy Authentication Required";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 410:
		return "Gone";
	case 411:
		return "Length Required";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 416:
		return "Range Not Satisfiable";
	case 417:
		return "Expectation Failed";
	case 419:
		return "Authentication Timeout";
	case 421:
		return "Misdirected Request";
	case 422:
		return "Unprocessable Content";
	case 426:
		return "Upgrade Required";
	case 428:
		return "Precondition Required";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	case 508:
		return "Loop Detected";
	default:
		return "";
	}
}
