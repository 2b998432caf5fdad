/*
 * floe: cache.c -- the LoadTable cache: a red-black tree of entries by key
 * (prefix scans find every answer for one object) and a list in least
 * recently used order for the byte budget. One allocation per entry holds
 * its key, headers, body and ETags together; a large one is not copied
 * into a forked child (xmalloc_nofork): no child reads the cache.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "cache/cache.h"

struct centry {
	RB_ENTRY(centry) node;
	TAILQ_ENTRY(centry) lru;
	struct cache_entry e;
	unsigned char *key;
	size_t keylen;
	size_t objlen;
	size_t size; /* bytes charged against the budget */
};

RB_HEAD(centry_tree, centry);
TAILQ_HEAD(centry_list, centry);

struct cache {
	struct centry_tree tree;
	struct centry_list lru; /* most recently used first */
	uint64_t budget;
	uint64_t ttl_ms;
	struct cache_stats st;
};

static int centry_cmp(struct centry *, struct centry *);
RB_PROTOTYPE_STATIC(centry_tree, centry, node, centry_cmp)
RB_GENERATE_STATIC(centry_tree, centry, node, centry_cmp)

/* Keys compare as bytes; a shorter key sorts before its extensions. */
static int
centry_cmp(struct centry *a, struct centry *b)
{
	size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
	int c = memcmp(a->key, b->key, n);

	if (c != 0)
		return c;
	return a->keylen < b->keylen ? -1 : a->keylen > b->keylen;
}

struct cache *
cache_new(uint64_t budget, uint64_t ttl_ms)
{
	struct cache *c;

	c = xcalloc(1, sizeof(*c));
	RB_INIT(&c->tree);
	TAILQ_INIT(&c->lru);
	c->budget = budget;
	c->ttl_ms = ttl_ms;
	c->st.budget = budget;
	return c;
}

/* Unlink and free E. */
static void
cache_remove(struct cache *c, struct centry *e)
{
	RB_REMOVE(centry_tree, &c->tree, e);
	TAILQ_REMOVE(&c->lru, e, lru);
	c->st.bytes -= e->size;
	c->st.entries--;
	xfree_nofork(e);
}

void
cache_clear(struct cache *c)
{
	struct centry *e;

	while ((e = TAILQ_FIRST(&c->lru)) != NULL) {
		cache_remove(c, e);
		c->st.invalidations++;
	}
}

void
cache_free(struct cache *c)
{
	struct centry *e;

	if (c == NULL)
		return;
	while ((e = TAILQ_FIRST(&c->lru)) != NULL)
		cache_remove(c, e);
	free(c);
}

bool
cache_is_on(const struct cache *c)
{
	return c != NULL && c->budget > 0;
}

/* Evict least recently used entries until NEED more bytes fit. */
static void
cache_evict(struct cache *c, uint64_t need)
{
	struct centry *e;

	while (c->st.bytes + need > c->budget &&
	    (e = TAILQ_LAST(&c->lru, centry_list)) != NULL) {
		cache_remove(c, e);
		c->st.evictions++;
	}
}

void
cache_configure(struct cache *c, uint64_t budget, uint64_t ttl_ms)
{
	c->budget = budget;
	c->ttl_ms = ttl_ms;
	c->st.budget = budget;
	cache_evict(c, 0);
}

/* The entry under KEY, or NULL. */
static struct centry *
cache_find(struct cache *c, const void *key, size_t keylen)
{
	struct centry probe;

	probe.key = (unsigned char *)(uintptr_t)key;
	probe.keylen = keylen;
	return RB_FIND(centry_tree, &c->tree, &probe);
}

const struct cache_entry *
cache_get(struct cache *c, const void *key, size_t keylen, int64_t now_ms,
    bool *expired)
{
	struct centry *e;

	*expired = false;
	if (!cache_is_on(c) || (e = cache_find(c, key, keylen)) == NULL) {
		c->st.misses++;
		return NULL;
	}
	if (now_ms - e->e.stored_ms >= (int64_t)c->ttl_ms) {
		if (e->e.up_etag[0] == '\0') {
			/* Nothing to revalidate with: it is simply gone. */
			cache_remove(c, e);
			c->st.expirations++;
			c->st.misses++;
			return NULL;
		}
		*expired = true;
	} else
		c->st.hits++;
	TAILQ_REMOVE(&c->lru, e, lru);
	TAILQ_INSERT_HEAD(&c->lru, e, lru);
	return &e->e;
}

const struct cache_entry *
cache_peek(struct cache *c, const void *key, size_t keylen)
{
	struct centry *e;

	if (!cache_is_on(c) || (e = cache_find(c, key, keylen)) == NULL)
		return NULL;
	return &e->e;
}

/* Copy N bytes of S to *P and return where they went (NUL-terminated). */
static char *
cache_copy(char **p, const char *s, size_t n)
{
	char *at = *p;

	if (n > 0)
		memcpy(at, s, n);
	at[n] = '\0';
	*p += n + 1;
	return at;
}

size_t
cache_entry_max(const struct cache *c)
{
	return cache_is_on(c) ? c->budget / 8 : 0;
}

void
cache_put(struct cache *c, const void *key, size_t keylen, size_t objlen,
    const struct cache_entry *in, int64_t now_ms)
{
	struct centry *e, *old;
	size_t elen = strlen(in->etag), ulen = strlen(in->up_etag), size;
	char *p;

	if (!cache_is_on(c))
		return;
	size = sizeof(*e) + keylen + in->hlen + in->len + elen + ulen + 4;
	if (size > c->budget / 8)
		return;
	if ((old = cache_find(c, key, keylen)) != NULL)
		cache_remove(c, old);
	cache_evict(c, size);
	e = xmalloc_nofork(size);
	memset(e, 0, sizeof(*e));
	p = (char *)(e + 1);
	e->key = (unsigned char *)p;
	memcpy(p, key, keylen);
	p += keylen;
	e->keylen = keylen;
	e->objlen = objlen;
	e->size = size;
	e->e.status = in->status;
	e->e.headers = cache_copy(&p, in->headers, in->hlen);
	e->e.hlen = in->hlen;
	e->e.body = cache_copy(&p, in->body, in->len);
	e->e.len = in->len;
	e->e.etag = cache_copy(&p, in->etag, elen);
	e->e.up_etag = cache_copy(&p, in->up_etag, ulen);
	e->e.stored_ms = now_ms;
	RB_INSERT(centry_tree, &c->tree, e);
	TAILQ_INSERT_HEAD(&c->lru, e, lru);
	c->st.bytes += size;
	c->st.entries++;
}

void
cache_renew(struct cache *c, const void *key, size_t keylen, int64_t now_ms)
{
	struct centry *e;

	if ((e = cache_find(c, key, keylen)) == NULL)
		return;
	e->e.stored_ms = now_ms;
	c->st.revalidations++;
}

void
cache_drop(struct cache *c, const void *key, size_t keylen)
{
	struct centry *e;

	if ((e = cache_find(c, key, keylen)) != NULL) {
		cache_remove(c, e);
		c->st.invalidations++;
	}
}

unsigned
cache_drop_object(struct cache *c, const void *obj, size_t objlen)
{
	struct centry probe, *e, *next;
	unsigned n = 0;

	probe.key = (unsigned char *)(uintptr_t)obj;
	probe.keylen = objlen;
	for (e = RB_NFIND(centry_tree, &c->tree, &probe); e != NULL; e = next) {
		next = RB_NEXT(centry_tree, &c->tree, e);
		if (e->keylen < objlen || memcmp(e->key, obj, objlen) != 0)
			break;
		if (e->objlen != objlen)
			continue; /* a longer object name with this prefix */
		cache_remove(c, e);
		c->st.invalidations++;
		n++;
	}
	return n;
}

void
cache_get_stats(const struct cache *c, struct cache_stats *st)
{
	*st = c->st;
}
