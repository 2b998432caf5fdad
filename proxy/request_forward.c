/*
 * floe: request_forward.c -- a request as the catalog of one side gets it:
 * the request line with the catalog's prefix and namespace form, the query
 * without floe's own paging, the client headers that matter (its ETags
 * translated, its credential only where it is the catalog's), floe's
 * X-Forwarded-For and Via; then sent on that side's pool.
 */
#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"
#include "policy/auth.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/cred.h"
#include "proxy/etag.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/request_impl.h"
#include "proxy/rest.h"
#include "proxy/server.h"
#include "proxy/upstream.h"
#include "routing/route.h"

/* What to do with each field of the client's headers: FWD_NO unless named. */
static const enum request_fwd request_fwd_fields[H1_F_COUNT] = {
	/* forwarded as they came */
	[H1_F_CONTENT_TYPE] = FWD_AS_IS,
	[H1_F_ACCEPT] = FWD_AS_IS,
	[H1_F_ACCESS_DELEGATION] = FWD_AS_IS,
	[H1_F_IDEMPOTENCY_KEY] = FWD_AS_IS,
	[H1_F_USER_AGENT] = FWD_AS_IS,
	[H1_F_CLIENT_VERSION] = FWD_AS_IS,
	[H1_F_CLIENT_GIT_COMMIT] = FWD_AS_IS,
	[H1_F_REQUEST_ID] = FWD_AS_IS,
	[H1_F_TRACEPARENT] = FWD_AS_IS,
	[H1_F_AUTHORIZATION] = FWD_AUTHZ,
	[H1_F_IF_NONE_MATCH] = FWD_INM,
};

/* Is this query parameter one floe consumes for listings? */
bool
request_paging_param(const char *p, size_t len)
{
	return (len >= 10 && strncmp(p, "pageToken=", 10) == 0) ||
	    (len >= 9 && strncmp(p, "pageToken", 9) == 0 && len == 9) ||
	    (len >= 9 && strncmp(p, "pageSize=", 9) == 0);
}

/* What to do with the client's header NAME. */
enum request_fwd
request_fwd_kind(enum h1_field field)
{
	return request_fwd_fields[field];
}

/*
 * Whether requests to SIDE carry floe's own credential rather than the
 * client's: then every client gets the same answers from it.
 */
bool
request_floe_cred(const struct floe *f, enum route_side side)
{
	return f->cred[side] != NULL && cred_on_data(f->cred[side]);
}

/*
 * Encode the namespace NS (levels joined by 0x1f) for a catalog whose
 * separator is SEP (NULL: 0x1f), each byte outside Java's URLEncoder safe
 * set as %XX. The length, or -1 if it does not fit OUT.
 */
ssize_t
request_ns_encode(const char *ns, size_t nslen, const char *sep, char *out,
    size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *p, *end = ns + nslen, *s;
	unsigned char c;
	size_t n = 0;

	if (sep == NULL)
		sep = "\x1f";
	for (p = ns; p < end; p++) {
		s = *p == ROUTE_SEP_LEVEL ? sep : p;
		do {
			c = (unsigned char)*s;
			if (n + 3 > outlen)
				return -1;
			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '.' || c == '-' ||
			    c == '*' || c == '_')
				out[n++] = c;
			else {
				out[n++] = '%';
				out[n++] = hex[c >> 4];
				out[n++] = hex[c & 15];
			}
		} while (s != p && *++s != '\0');
	}
	return n;
}

/*
 * The byte the path text at P (N bytes left) stands for, and how many
 * bytes of text it takes (*ULEN): "%2E" is '.', and '+' is a '+' here (a
 * separator never is a space). A malformed escape is its '%'.
 */
static unsigned char
request_ns_unit(const char *p, size_t n, size_t *ulen)
{
	int hi, lo;

	if (n >= 3 && p[0] == '%' && (hi = units_hexval(p[1])) >= 0 &&
	    (lo = units_hexval(p[2])) >= 0) {
		*ulen = 3;
		return (unsigned char)(hi << 4 | lo);
	}
	*ulen = 1;
	return (unsigned char)p[0];
}

/*
 * The namespace RAW (LEN bytes of a path segment or a parent parameter,
 * as the client encoded it) in the form of a catalog whose separator is
 * CSEP (NULL: 0x1f): each level separator (0x1f, or FSEP, floe's, either
 * written as is or percent-encoded) becomes CSEP encoded, and every other
 * byte goes on exactly as the client wrote it: "my%20db" stays that, and
 * so does "my+db" (a literal '+' to a catalog that does not read '+' as
 * a space). The length in OUT, and the separators found in *NSEP; -1 if
 * it does not fit OUTLEN.
 */
ssize_t
request_ns_reframe(const char *raw, size_t len, const char *fsep,
    const char *csep, char *out, size_t outlen, size_t *nsep)
{
	char sep[64];
	size_t i = 0, k, u, ulen, sl = fsep != NULL ? strlen(fsep) : 0, n = 0;
	ssize_t seplen;
	bool hit;

	*nsep = 0;
	if ((seplen = request_ns_encode("\x1f", 1, csep, sep, sizeof(sep))) < 0)
		return -1;
	while (i < len) {
		if (request_ns_unit(raw + i, len - i, &ulen) ==
		    ROUTE_SEP_LEVEL) {
			hit = true;
		} else {
			/* FSEP, its bytes each as is or encoded. */
			hit = sl > 0;
			for (k = 0, u = i; hit && k < sl; k++, u += ulen)
				hit = u < len &&
				    request_ns_unit(raw + u, len - u, &ulen) ==
					(unsigned char)fsep[k];
			if (hit)
				ulen = u - i;
			else
				request_ns_unit(raw + i, len - i, &ulen);
		}
		if (hit) {
			if (n + (size_t)seplen > outlen)
				return -1;
			memcpy(out + n, sep, (size_t)seplen);
			n += (size_t)seplen;
			(*nsep)++;
		} else {
			if (n + ulen > outlen)
				return -1;
			memcpy(out + n, raw + i, ulen);
			n += ulen;
		}
		i += ulen;
	}
	return (ssize_t)n;
}

/*
 * The namespace of R in SIDE's form, when it must be rewritten: it has
 * more than one level and floe or that catalog announces a separator of
 * its own, so the client's form (floe's) is not the catalog's. NS gets
 * the path segment, PARENT the value of a list's parent parameter (length
 * 0 when there is none to rewrite), each level as the client encoded it
 * (request_ns_reframe). False when the path goes on as the client wrote
 * it.
 */
static bool
request_ns_translate(const struct request *r, const struct catalog *cat,
    char *ns, size_t nssize, size_t *nslen, char *parent, size_t psize,
    size_t *plen)
{
	const char *fsep = r->f->conf->namespace_separator;
	const char *q, *qe, *amp;
	size_t nsep;
	ssize_t len;

	*nslen = *plen = 0;
	if (fsep == NULL && cat->separator == NULL)
		return false;
	q = r->msg->target + r->rr.query.off;
	qe = q + r->rr.query.len;
	for (; r->rr.op == REST_LIST_NAMESPACES && q < qe; q = amp + 1) {
		if ((amp = memchr(q, '&', (size_t)(qe - q))) == NULL)
			amp = qe;
		if (amp - q < 7 || strncmp(q, "parent=", 7) != 0)
			continue;
		if ((len = request_ns_reframe(q + 7, (size_t)(amp - q - 7),
			 fsep, cat->separator, parent, psize, &nsep)) > 0 &&
		    nsep > 0)
			*plen = (size_t)len;
		break;
	}
	if (r->rr.nlevels > 1 && r->rr.ns_raw.len > 0 &&
	    (len = request_ns_reframe(r->msg->target + r->rr.ns_raw.off,
		 r->rr.ns_raw.len, fsep, cat->separator, ns, nssize, &nsep)) >
		0)
		*nslen = (size_t)len;
	return *nslen > 0 || *plen > 0;
}

/* The namespace of a request in one catalog's form (request_ns_translate). */
struct request_ns {
	bool translated; /* false: the path goes on as the client wrote it */
	char ns[REST_NAME_MAX * 3 + 64];
	size_t nslen;
	char parent[REST_NAME_MAX * 3 + 64];
	size_t plen;
};

/* The lengths of the request line's fixed parts, measured once. */
struct request_line_lens {
	size_t method; /* the method's name */
	size_t path; /* the catalog's path */
	size_t prefix; /* its prefix, 0 without one */
};

/*
 * Write the request line for SIDE at *O: the method, the catalog's path
 * and prefix, the rest of the path (its namespace in the catalog's form)
 * and the query, without the paging floe does itself for listings.
 */
static void
request_put_line(const struct request *r, enum route_side side,
    const struct request_ns *ns, const struct request_line_lens *ll, char **o)
{
	const struct conf_target *t = &r->f->conf->target[side];
	const struct catalog *cat = r->f->cat[side];
	const struct h1_msg *m = r->msg;
	const struct rest_req *rr = &r->rr;
	const char *q, *qe, *amp;
	bool first = true;

	request_put(o, m->method_name, ll->method);
	*(*o)++ = ' ';
	request_put(o, t->path, ll->path);
	request_put(o, "/v1", 3);
	if (ll->prefix > 0 && !r->no_prefix) {
		*(*o)++ = '/';
		request_put(o, cat->prefix, ll->prefix);
	}
	if (ns->translated && ns->nslen > 0) {
		/* The namespace segment in the catalog's form. */
		request_put(o, m->target + rr->rest.off,
		    rr->ns_raw.off - rr->rest.off);
		request_put(o, ns->ns, ns->nslen);
		request_put(o, m->target + rr->ns_raw.off + rr->ns_raw.len,
		    rr->rest.off + rr->rest.len - rr->ns_raw.off -
			rr->ns_raw.len);
	} else
		request_put(o, m->target + rr->rest.off, rr->rest.len);
	q = m->target + rr->query.off;
	qe = q + rr->query.len;
	while (q < qe) {
		amp = memchr(q, '&', qe - q);
		if (amp == NULL)
			amp = qe;
		if (amp > q &&
		    !(r->mode == MODE_LIST &&
			request_paging_param(q, amp - q))) {
			*(*o)++ = first ? '?' : '&';
			if (ns->translated && ns->plen > 0 && amp - q >= 7 &&
			    strncmp(q, "parent=", 7) == 0) {
				request_put(o, "parent=", 7);
				request_put(o, ns->parent, ns->plen);
			} else
				request_put(o, q, amp - q);
			first = false;
		}
		q = amp + 1;
	}
	request_put(o, " HTTP/1.1\r\n", 11);
}

/*
 * Write the client's headers that go on to SIDE at *O, in one walk over
 * them. True if one was an Idempotency-Key (the request may be retried).
 */
static bool
request_put_headers(const struct request *r, enum route_side side,
    bool pass_authz, char **o)
{
	const struct h1_msg *m = r->msg;
	const struct h1_header *h;
	char inm[ETAG_MAX];
	bool idem = false;
	unsigned i;
	int n;

	for (i = 0; i < m->nhdrs; i++) {
		h = &m->hdrs[i];
		switch (request_fwd_fields[h->field]) {
		case FWD_NO:
			continue;
		case FWD_AUTHZ:
			if (!pass_authz)
				continue;
			break;
		case FWD_INM:
			/*
			 * Only when floe minted it for this side and this route
			 * version: a 304 must never keep a client on the side
			 * its table has left.
			 */
			if (r->revalidating || r->rr.op != REST_LOAD_TABLE)
				continue;
			n = etag_unmint(h->value, h->value_len, side,
			    r->has_route ? r->route.version : 0, inm,
			    sizeof(inm));
			if (n > 0) {
				request_put(o, "If-None-Match: ", 15);
				request_put(o, inm, n);
				request_put(o, "\r\n", 2);
			}
			continue;
		case FWD_AS_IS:
			if (h->field == H1_F_IDEMPOTENCY_KEY)
				idem = true;
			break;
		}
		request_put(o, h->name, h->name_len);
		request_put(o, ": ", 2);
		request_put(o, h->value, h->value_len);
		request_put(o, "\r\n", 2);
	}
	return idem;
}

/*
 * A cached entry past its TTL is revalidated with the catalog's tag:
 * write its If-None-Match at *O, or stop revalidating R when the entry
 * has gone or has no tag.
 */
static void
request_put_revalidation(struct request *r, char **o)
{
	struct cache *c = r->f->cache;
	const struct cache_entry *e;

	e = cache_peek(c, r->ckey[0], r->ckeylen[0]);
	if (e == NULL)
		e = cache_peek(c, r->ckey[1], r->ckeylen[1]);
	if (e != NULL && e->up_etag[0] != '\0' &&
	    strlen(e->up_etag) < ETAG_MAX) {
		request_put(o, "If-None-Match: ", 15);
		request_put(o, e->up_etag, strlen(e->up_etag));
		request_put(o, "\r\n", 2);
	} else
		r->revalidating = false;
}

/*
 * Forward R to SIDE. The request head is written in one pass into one
 * buffer, grown as needed and kept: the request line with the catalog's
 * prefix, the headers that matter (one walk over the client's), and floe's
 * own X-Forwarded-For and Via. Host, the catalog's Authorization and
 * Content-Length are added by the pool.
 */
void
request_forward(struct request *r, enum route_side side)
{
	static char *head;
	static size_t headcap;
	struct request_ns ns;
	struct floe *f = r->f;
	const struct conf_target *t = &f->conf->target[side];
	const struct catalog *cat = f->cat[side];
	const struct h1_msg *m = r->msg;
	const char *peer = server_conn_peer(r->conn);
	size_t peerlen = server_conn_peer_len(r->conn),
	       vialen = request_via_len;
	struct request_line_lens ll = { strlen(m->method_name), t->path_len,
		cat->prefix != NULL ? strlen(cat->prefix) : 0 };
	struct upstream_req ur;
	bool pass_authz, idem;
	size_t need;
	char *o;
	unsigned i;

	/*
	 * The client's own credential goes on only to a catalog that does
	 * not get floe's (cred.h says when it does), and only when floe does
	 * not check it itself (mode none) or checks nothing but passes it on
	 * (passthrough): in token and jwt modes it is the client's credential
	 * to floe (a JWT's audience is floe), never a catalog's.
	 */
	pass_authz = !request_floe_cred(f, side) &&
	    (auth_mode(f->auth) == AUTH_NONE ||
		auth_mode(f->auth) == AUTH_PASSTHROUGH);
	ns.translated = request_ns_translate(r, cat, ns.ns, sizeof(ns.ns),
	    &ns.nslen, ns.parent, sizeof(ns.parent), &ns.plen);
	need = ll.method + ll.path + ll.prefix + m->target_len + ETAG_MAX +
	    peerlen + vialen + 128;
	if (ns.translated)
		need += ns.nslen + ns.plen;
	for (i = 0; i < m->nhdrs; i++)
		need += m->hdrs[i].name_len + m->hdrs[i].value_len + 4;
	/* One buffer for every request's head: upstream_send copies it. */
	if (need > headcap) {
		head = xreallocarray(head, 1, need);
		headcap = need;
	}
	o = head;
	request_put_line(r, side, &ns, &ll, &o);
	idem = request_put_headers(r, side, pass_authz, &o);
	if (r->revalidating)
		request_put_revalidation(r, &o);
	request_put(&o, "X-Forwarded-For: ", 17);
	request_put(&o, peer, peerlen);
	request_put(&o, "\r\nVia: ", 7);
	request_put(&o, request_via, vialen);
	request_put(&o, "\r\n", 2);

	memset(&ur, 0, sizeof(ur));
	ur.head = head;
	ur.head_len = o - head;
	ur.body = evbuffer_get_length(m->body) > 0 || m->method == H1_POST ||
		m->method == H1_PUT ?
	    m->body :
	    NULL;
	/* Listings and namespace reads are GET/HEAD: no body to share. */
	if (r->mode != MODE_ONE)
		ur.body = NULL;
	ur.head_method = m->method == H1_HEAD;
	ur.retryable = m->method == H1_GET || m->method == H1_HEAD || idem;
	/* The answers request_body_is_json is asked about. */
	ur.check_json = r->merge_config || r->mode == MODE_LIST;
	request_memo_look(r, side);
	ur.memo = r->memo_in;
	if (request_stream_wanted(r))
		ur.body_cb = request_body_cb;
	r->pending++;
	f->stats.side[side].requests++;
	r->x[side] = upstream_send(f->up[side], &ur, request_done_cb, r);
}
