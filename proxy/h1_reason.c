/*
 * floe: h1_reason.c -- the tables of HTTP/1.1 framing that need no
 * parser: finding a header of a parsed message, and the reason phrase of
 * a status code (RFC 9110 15).
 */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "proxy/h1.h"

const struct h1_header *
h1_find(const struct h1_msg *m, const char *name)
{
	struct h1_name lit = { name, strlen(name) };
	unsigned i;

	for (i = 0; i < m->nhdrs; i++)
		if (h1_name_eq(m->hdrs[i].name, m->hdrs[i].name_len, &lit))
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
