/*
 * floe: request_cache.c -- LoadTable answers kept in the cache: the keys
 * (shared, or per client for answers with credentials), the lookup before
 * forwarding, the store of what was sent, revalidation of an expired entry
 * with the catalog's ETag, and the invalidation of a write's objects.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <event2/buffer.h>
#include <openssl/sha.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/memfind.h"
#include "lib/units.h"
#include "cache/cache.h"
#include "proxy/catalog.h"
#include "proxy/conf.h"
#include "proxy/etag.h"
#include "proxy/floe.h"
#include "proxy/h1.h"
#include "proxy/request_impl.h"
#include "proxy/server.h"
#include "proxy/workers.h"
#include "routing/route.h"

/* Bumped by every write through floe: a read sent before it may be stale. */
static uint64_t request_cache_epoch;

/*
 * Keys of answers that may carry secrets: such answers are cached for
 * the client that got them, never shared.
 */
static const char *const request_secret_keys[] = {
	"\"storage-credentials\"",
	"\"remote-signing-config\"",
	"\"token\"",
	"\"s3.access-key-id\"",
	"\"s3.secret-access-key\"",
	"\"s3.session-token\"",
	"\"gcs.oauth2.token\"",
	"\"adls.sas-token",
};

/* Does an answer BODY name one of those keys? */
bool
request_has_secrets(const char *body, size_t len)
{
	size_t i;

	for (i = 0; i < nitems(request_secret_keys); i++)
		if (memfind(body, len, request_secret_keys[i],
			strlen(request_secret_keys[i])) != NULL)
			return true;
	return false;
}

/* Append N bytes to the key being built; false when it does not fit. */
static bool
request_key_add(unsigned char *k, size_t *at, const void *p, size_t n)
{
	if (*at + n > REQUEST_CKEY_MAX)
		return false;
	memcpy(k + *at, p, n);
	*at += n;
	return true;
}

/*
 * The cache keys of a LoadTable for SIDE: the object, then everything that
 * changes the answer -- the side, the route version, the side's config
 * generation, the query (snapshots, referenced-by), the access delegation
 * and the Host (URLs are rewritten to it). Key 0 is shared by clients;
 * key 1 adds the client's credential, for answers that carry credentials
 * or from a side that sees the client's own Authorization: the SHA-256 of
 * its Authorization value, not the identity authentication gave it (two
 * tokens of one subject may differ in what a catalog vends for them),
 * else the client's hash (its address).
 */
bool
request_cache_keys(struct request *r, enum route_side side)
{
	const struct route_obj *obj = &r->objs[0];
	const struct h1_header *h;
	unsigned char head[REQUEST_CKEY_MAX], *k, tok[SHA256_DIGEST_LENGTH];
	uint64_t v[3];
	size_t n = 0, i, at;
	unsigned char zero = 0, sb = side;
	bool ok;

	v[0] = r->route.version;
	v[1] = r->f->cat[side]->generation;
	/* With workers, a write through any of them changes the key. */
	v[2] = r->f->workers != NULL ?
	    workers_objgen(r->f->workers, obj->key, obj->len) :
	    0;
	ok = request_key_add(head, &n, obj->key, obj->len) &&
	    request_key_add(head, &n, &zero, 1) &&
	    request_key_add(head, &n, &sb, 1) &&
	    request_key_add(head, &n, v,
		r->f->workers != NULL ? sizeof(v) : 2 * sizeof(v[0]));
	for (i = 0; i < 2 && ok; i++) {
		k = r->ckey[i];
		at = 0;
		ok = request_key_add(k, &at, head, n) &&
		    request_key_add(k, &at, i == 0 ? "s" : "c", 1);
		if (ok && i == 1 &&
		    (h = h1_get(r->msg, H1_F_AUTHORIZATION)) != NULL) {
			SHA256((const unsigned char *)h->value, h->value_len,
			    tok);
			ok = request_key_add(k, &at, tok, sizeof(tok));
		} else if (ok && i == 1)
			ok = request_key_add(k, &at, &r->client_hash,
			    sizeof(r->client_hash));
		ok = ok &&
		    request_key_add(k, &at, r->msg->target + r->rr.query.off,
			r->rr.query.len) &&
		    request_key_add(k, &at, &zero, 1);
		if (ok && (h = h1_get(r->msg, H1_F_ACCESS_DELEGATION)))
			ok = request_key_add(k, &at, h->value, h->value_len);
		ok = ok && request_key_add(k, &at, &zero, 1);
		if (ok && (h = h1_get(r->msg, H1_F_HOST)) != NULL)
			ok = request_key_add(k, &at, h->value, h->value_len);
		r->ckeylen[i] = at;
	}
	return ok;
}

/* Does the client's If-None-Match name ETAG (weak comparison)? */
bool
request_inm_matches(const struct h1_msg *m, const char *etag)
{
	const struct h1_header *h = h1_get(m, H1_F_IF_NONE_MATCH);
	size_t n;

	if (h == NULL || etag[0] == '\0')
		return false;
	if (strncmp(etag, "W/", 2) == 0)
		etag += 2;
	n = strlen(etag);
	return h->value_len >= n && memmem(h->value, h->value_len, etag, n);
}

/* Answer R from the cached entry E. */
void
request_cache_reply(struct request *r, const struct cache_entry *e,
    const char *how)
{
	/* Cached heads were built in request_reply_upstream's buffer. */
	static char hdr[REQUEST_HDRS_MAX + 64];
	static struct evbuffer *b;
	bool not_modified = request_inm_matches(r->msg, e->etag);
	char *o = hdr;

	if (b == NULL && (b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	r->cache_state = how;
	request_put(&o, e->headers, e->hlen);
	request_put(&o, "X-Floe-Cache: ", 14);
	request_put(&o, how, strlen(how));
	request_put(&o, "\r\n", 2);
	request_log_access(r, not_modified ? 304 : e->status,
	    route_side_name(r->side));
	r->f->stats.requests++;
	if (not_modified) {
		r->f->stats.side[r->side].not_modified++;
		server_reply(r->conn, 304, hdr, o - hdr, NULL, -1);
	} else {
		evbuffer_add(b, e->body, e->len);
		server_reply(r->conn, e->status, hdr, o - hdr, b, -1);
	}
}

/*
 * Look a LoadTable up in the cache. True if R was answered from it;
 * false to forward (a miss, or an expired entry to revalidate, when
 * r->revalidating is set).
 */
bool
request_cache_lookup(struct request *r)
{
	struct floe *f = r->f;
	const struct cache_entry *e = NULL;
	bool expired = false;
	int i = 1;

	r->cacheable = request_cache_keys(r, r->side);
	if (!r->cacheable)
		return false;
	r->cache_state = "miss";
	r->cache_epoch = request_cache_epoch;
	/* A side with floe's own credential answers every client alike. */
	if (request_floe_cred(f, r->side) &&
	    cache_peek(f->cache, r->ckey[0], r->ckeylen[0]) != NULL)
		i = 0;
	e = cache_get(f->cache, r->ckey[i], r->ckeylen[i], units_now_ms(),
	    &expired);
	if (e == NULL)
		return false;
	if (expired) {
		r->revalidating = true;
		return false;
	}
	request_cache_reply(r, e, "hit");
	return true;
}

/* Store the answer being sent for R (HDRS and BODY as sent). */
void
request_cache_store(struct request *r, const struct h1_msg *m, const char *hdrs,
    size_t hlen, struct evbuffer *body, const char *etag)
{
	const struct h1_header *up = h1_get(m, H1_F_ETAG);
	const struct h1_header *cc = h1_get(m, H1_F_CACHE_CONTROL);
	struct cache_entry e;
	char upbuf[ETAG_MAX];
	int i;

	if (!r->cacheable || m->status != 200 ||
	    r->cache_epoch != request_cache_epoch)
		return;
	if (cc != NULL &&
	    (memmem(cc->value, cc->value_len, "no-store", 8) ||
		memmem(cc->value, cc->value_len, "private", 7)))
		return;
	memset(&e, 0, sizeof(e));
	e.status = m->status;
	e.hlen = hlen;
	e.headers = hdrs;
	e.len = evbuffer_get_length(body);
	e.body = (const char *)evbuffer_pullup(body, -1);
	e.etag = etag;
	upbuf[0] = '\0';
	if (up != NULL && up->value_len < sizeof(upbuf)) {
		memcpy(upbuf, up->value, up->value_len);
		upbuf[up->value_len] = '\0';
	}
	e.up_etag = upbuf;
	i = request_floe_cred(r->f, r->side) &&
		!request_has_secrets(e.body, e.len) ?
	    0 :
	    1;
	cache_put(r->f->cache, r->ckey[i], r->ckeylen[i], r->objs[0].len, &e,
	    units_now_ms());
}

/* A write through floe: its objects' cached answers are dropped. */
void
request_cache_invalidate(struct request *r)
{
	unsigned i;

	request_cache_epoch++;
	/* Every worker's answers of these objects, before this one answers. */
	if (r->f->workers != NULL && r->objs_overflow)
		workers_objgen_bump_all(r->f->workers);
	else if (r->f->workers != NULL)
		for (i = 0; i < r->nobjs; i++)
			workers_objgen_bump(r->f->workers, r->objs[i].key,
			    r->objs[i].len);
	if (!cache_is_on(r->f->cache))
		return;
	if (r->objs_overflow) {
		cache_clear(r->f->cache);
		return;
	}
	for (i = 0; i < r->nobjs; i++)
		cache_drop_object(r->f->cache, r->objs[i].key, r->objs[i].len);
}

/*
 * The answer to a revalidation. A 304 renews the cached entry and serves
 * it; anything else replaces or drops it. True if R was answered.
 */
bool
request_revalidated(struct request *r, struct h1_msg *m)
{
	const struct cache_entry *e;
	int i;

	for (i = 0; i < 2; i++) {
		if ((e = cache_peek(r->f->cache, r->ckey[i], r->ckeylen[i])) ==
		    NULL)
			continue;
		if (m->status == 304) {
			cache_renew(r->f->cache, r->ckey[i], r->ckeylen[i],
			    units_now_ms());
			request_cache_reply(r, e, "revalidated");
			request_free(r);
			return true;
		}
		cache_drop(r->f->cache, r->ckey[i], r->ckeylen[i]);
	}
	if (m->status == 304) {
		/* The entry went meanwhile: ask again, unconditionally. */
		r->revalidating = false;
		request_forward(r, r->side);
		return true;
	}
	r->cache_state = "miss";
	return false;
}
