/*
 * floe: catalog_rewrite.c -- an upstream answer made fit for the client:
 * the catalog's config merged under a LoadTableResult's "config" (the
 * table's own keys win) and absolute URLs under the upstream's base
 * pointed back at floe, on the same side. catalog_splice.c finds where the
 * edits go; this file builds the URL prefixes and the inserted members and
 * writes the new answer. No I/O.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/memfind.h"
#include "lib/xmalloc.h"
#include "proxy/catalog.h"
#include "proxy/catalog_impl.h"

/*
 * catalog_body_has searches up to CATALOG_BODY_VECS pieces in place, for
 * strings of up to CATALOG_SEAM_MAX bytes; evbuffer_search does the rest.
 */
#define CATALOG_BODY_VECS 256
#define CATALOG_SEAM_MAX 512

static void splice_put(char **, const char *, size_t);
static char *splice_members(struct splice *, bool, size_t *);
static const char *catalog_url(char[CATALOG_URL_BUF], char **, const char *,
    size_t, const char *, bool, size_t *);
static bool catalog_merged_urls(const struct catalog *, const char *, size_t);

/* Append JSON-string text S (already escaped as jansson writes it). */
static void
splice_put(char **o, const char *s, size_t n)
{
	memcpy(*o, s, n);
	*o += n;
}

/* The merge members to insert, URLs in them rewritten. Caller frees. */
static char *
splice_members(struct splice *sp, bool lead_comma, size_t *outlen)
{
	const struct catalog_text *t = sp->c->text;
	const struct catalog_urls *u = sp->mu;
	size_t i, n = 0, cap = 0;
	char *buf, *o;
	bool first = true;

	for (i = 0; i < t->n; i++)
		cap += t->m[i].klen + t->m[i].vlen + 2 +
		    (u != NULL ? u->tolen : 0);
	o = buf = xmalloc(cap + 1);
	for (i = 0; i < t->n && i < SPLICE_MAX_MERGE; i++) {
		if (sp->present[i])
			continue;
		if (!first || lead_comma)
			*o++ = ',';
		first = false;
		splice_put(&o, t->m[i].key, t->m[i].klen);
		*o++ = ':';
		/* A merged value may be an upstream URL too (a signer's). */
		if (u != NULL && t->m[i].vlen > u->fromlen + 1 &&
		    t->m[i].val[0] == '"' &&
		    memcmp(t->m[i].val + 1, u->from, u->fromlen) == 0) {
			*o++ = '"';
			splice_put(&o, u->to, u->tolen);
			splice_put(&o, t->m[i].val + 1 + u->fromlen,
			    t->m[i].vlen - 1 - u->fromlen);
		} else
			splice_put(&o, t->m[i].val, t->m[i].vlen);
	}
	n = o - buf;
	*outlen = n;
	return buf;
}

/*
 * After a scan that left SP->merge set: the text to insert (caller frees;
 * NULL if none) and its offset in the scanned body, *AT.
 */
char *
splice_insertion(struct splice *sp, size_t *inslen, size_t *at)
{
	size_t mlen;
	char *m, *ins, *o;

	if (sp->config_seen) {
		/* After the table's own keys, which win. */
		ins = splice_members(sp, !sp->config_empty, inslen);
		*at = sp->config_at;
	} else {
		/* Last, as a new key of the answer. */
		m = splice_members(sp, false, &mlen);
		o = ins = xmalloc(mlen + 16);
		if (!sp->top_empty)
			*o++ = ',';
		splice_put(&o, "\"config\":{", 10);
		splice_put(&o, m, mlen);
		*o++ = '}';
		*inslen = o - ins;
		free(m);
		*at = sp->top_at;
	}
	if (*inslen == 0) {
		free(ins);
		return NULL;
	}
	return ins;
}

/*
 * BASE (BLEN bytes) "/v1/" PREFIX, and "/" if SLASH: into BUF when it
 * fits, else into a new allocation left in *OWN for the caller to free.
 */
static const char *
catalog_url(char buf[CATALOG_URL_BUF], char **own, const char *base,
    size_t blen, const char *prefix, bool slash, size_t *outlen)
{
	size_t plen = strlen(prefix), n = blen + 4 + plen + slash;
	char *o;

	o = n < CATALOG_URL_BUF ? buf : (*own = xmalloc(n + 1));
	memcpy(o, base, blen);
	memcpy(o + blen, "/v1/", 4);
	memcpy(o + blen + 4, prefix, plen);
	if (slash)
		o[n - 1] = '/';
	o[n] = '\0';
	*outlen = n;
	return o;
}

/* UPSTREAM_BASE without trailing slashes: its length (0: no rewrites). */
size_t
catalog_base_len(const char *upstream_base, const char *floe_base)
{
	size_t blen;

	if (upstream_base == NULL || floe_base == NULL)
		return 0;
	blen = strlen(upstream_base);
	while (blen > 0 && upstream_base[blen - 1] == '/')
		blen--;
	return blen;
}

/*
 * Does a merged value start with the upstream URL (a signer's uri)? Only
 * such values are rewritten (see splice_members).
 */
static bool
catalog_merged_urls(const struct catalog *c, const char *upstream_base,
    size_t blen)
{
	size_t i;

	for (i = 0; blen > 0 && i < c->text->n; i++)
		if (c->text->m[i].vlen > blen + 1 &&
		    c->text->m[i].val[0] == '"' &&
		    memcmp(c->text->m[i].val + 1, upstream_base, blen) == 0)
			return true;
	return false;
}

/* Build the from and to prefixes of a rewrite into UB. */
void
catalog_urls_make(struct catalog_urlbuf *ub, const struct catalog *c,
    const char *upstream_base, size_t blen, const char *floe_base,
    const char *pinned_prefix)
{
	const char *prefix = c != NULL ? c->prefix : NULL;
	size_t flen = strlen(floe_base);

	while (flen > 0 && floe_base[flen - 1] == '/')
		flen--;
	ub->u.from = catalog_url(ub->frombuf, &ub->from, upstream_base, blen,
	    prefix != NULL ? prefix : "", prefix != NULL, &ub->u.fromlen);
	ub->u.to = catalog_url(ub->tobuf, &ub->to, floe_base, flen,
	    pinned_prefix != NULL ? pinned_prefix : "",
	    pinned_prefix != NULL && *pinned_prefix != '\0', &ub->u.tolen);
}

/*
 * Rewrite an upstream answer for the client (see catalog.h). The common
 * case, nothing to merge and no upstream URL in the body, costs one scan
 * (memfind) and the caller passes the original bytes on.
 */
char *
catalog_rewrite(const struct catalog *c, bool merge, const char *body,
    size_t len, const char *upstream_base, const char *floe_base,
    const char *pinned_prefix, size_t *outlen)
{
	struct catalog_urlbuf ub = { 0 };
	struct splice sp;
	char *out = NULL, *o, *ins = NULL;
	size_t blen, inslen = 0, total, at = 0, i, ins_at = 0;
	bool urls, in_body, ins_done = true;

	merge = merge && catalog_has_merge(c);
	blen = catalog_base_len(upstream_base, floe_base);
	in_body = blen > 0 && memfind(body, len, upstream_base, blen) != NULL;
	urls =
	    in_body || (merge && catalog_merged_urls(c, upstream_base, blen));
	if (!merge && !urls)
		return NULL;
	if (urls)
		catalog_urls_make(&ub, c, upstream_base, blen, floe_base,
		    pinned_prefix);
	splice_init(&sp, c, merge, body, len);
	sp.u = in_body ? &ub.u : NULL;
	sp.mu = urls ? &ub.u : NULL;
	/*
	 * With no URL to rewrite only the top level and its config matter,
	 * and they are read from the end; otherwise every string value is
	 * looked at, front to back.
	 */
	if (sp.u == NULL && sp.merge && splice_tail(&sp) == 0)
		;
	else {
		memset(sp.present, 0, sizeof(sp.present));
		sp.config_seen = sp.config_empty = sp.top_empty = false;
		sp.merge = merge;
		sp.p = body;
		splice_ws(&sp);
		if (sp.p >= sp.end || *sp.p != '{' ||
		    splice_value(&sp, 0, 1) == -1)
			goto out;
		splice_ws(&sp);
		if (sp.p != sp.end)
			goto out; /* trailing bytes: not one JSON object */
	}
	if (sp.merge) {
		ins = splice_insertion(&sp, &inslen, &ins_at);
		ins_done = ins == NULL;
	}
	if (sp.nedits == 0 && ins_done)
		goto out;
	total = len + inslen;
	for (i = 0; i < sp.nedits; i++)
		total += ub.u.tolen - sp.edits[i].cut;
	o = out = xmalloc(total + 1);
	for (i = 0; i <= sp.nedits; i++) {
		size_t next = i < sp.nedits ? sp.edits[i].at : len;

		if (!ins_done && ins_at <= next) {
			splice_put(&o, body + at, ins_at - at);
			splice_put(&o, ins, inslen);
			at = ins_at;
			ins_done = true;
		}
		splice_put(&o, body + at, next - at);
		if (i == sp.nedits)
			break;
		splice_put(&o, ub.u.to, ub.u.tolen);
		at = next + sp.edits[i].cut;
	}
	*o = '\0';
	*outlen = o - out;
out:
	splice_clear(&sp);
	free(ins);
	free(ub.from);
	free(ub.to);
	return out;
}

/*
 * The config merge of a large answer from its tail (see catalog.h). Only
 * what splice_tail decides within the tail counts: a "config" member found
 * there, or, with the whole answer in hand, its absence.
 */
int
catalog_merge_tail(const struct catalog *c, const char *tail, size_t tlen,
    size_t len, const char *upstream_base, const char *floe_base,
    const char *pinned_prefix, char **ins, size_t *inslen, size_t *at)
{
	struct catalog_urlbuf ub = { 0 };
	struct splice sp;
	size_t blen;
	int rc = -1;

	*ins = NULL;
	*inslen = *at = 0;
	if (!catalog_has_merge(c))
		return 0;
	if (tlen > len || tlen == 0)
		return -1;
	splice_init(&sp, c, true, tail, tlen);
	sp.partial = tlen < len;
	blen = catalog_base_len(upstream_base, floe_base);
	if (catalog_merged_urls(c, upstream_base, blen)) {
		catalog_urls_make(&ub, c, upstream_base, blen, floe_base,
		    pinned_prefix);
		sp.mu = &ub.u;
	}
	if (splice_tail(&sp) == -1 || (!sp.config_seen && tlen < len))
		goto out;
	rc = 0;
	if (sp.merge && (*ins = splice_insertion(&sp, inslen, at)) != NULL) {
		*at += len - tlen;
		rc = 1;
	}
out:
	splice_clear(&sp);
	free(ub.from);
	free(ub.to);
	return rc;
}

/*
 * Does BODY hold S (N bytes)? Each piece is searched whole and each seam
 * between two pieces through a small window, so a large answer is never
 * made contiguous to be searched; its pieces are taken CATALOG_BODY_VECS
 * at a time (a 200 MB answer is 3,200 of them).
 */
bool
catalog_body_has(struct evbuffer *body, const char *s, size_t n)
{
	struct evbuffer_iovec v[CATALOG_BODY_VECS];
	struct evbuffer_ptr pos;
	char seam[2 * CATALOG_SEAM_MAX];
	size_t off = 0, total = evbuffer_get_length(body), plen = 0;
	const char *prev = NULL;
	int i, nv;

	if (n == 0 || n > CATALOG_SEAM_MAX)
		return evbuffer_search(body, s, n, NULL).pos != -1;
	while (off < total) {
		if (evbuffer_ptr_set(body, &pos, off, EVBUFFER_PTR_SET) == -1 ||
		    (nv = evbuffer_peek(body, -1, &pos, v, nitems(v))) < 1)
			return evbuffer_search(body, s, n, NULL).pos != -1;
		if (nv > (int)nitems(v))
			nv = nitems(v);
		for (i = 0; i < nv; i++) {
			if (memfind(v[i].iov_base, v[i].iov_len, s, n) != NULL)
				return true;
			if (prev != NULL) {
				/* A match across a seam: N - 1 bytes each side.
				 */
				if (plen < n - 1 || v[i].iov_len < n - 1)
					return evbuffer_search(body, s, n, NULL)
						   .pos != -1;
				memcpy(seam, prev + plen - (n - 1), n - 1);
				memcpy(seam + n - 1, v[i].iov_base, n - 1);
				if (memfind(seam, 2 * (n - 1), s, n) != NULL)
					return true;
			}
			prev = v[i].iov_base;
			plen = v[i].iov_len;
			off += plen;
		}
	}
	return false;
}
