/*
 * floe: memo.c -- the memo of checked answers: a red-black tree of
 * entries by side and key, a list in least recently used order for the
 * byte budget, and reference-counted buffers for the bodies, which an
 * entry shares with the answers being sent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "lib/xmalloc.h"
#include "cache/memo.h"

/* What an entry costs beside its key, bodies and parameters. */
#define MEMO_OVERHEAD 128
/* memo_same's steps with memcmp. */
#define MEMO_BLOCK 1024
#define MEMO_SUBBLOCK 64

struct mentry {
	RB_ENTRY(mentry) node;
	TAILQ_ENTRY(mentry) lru;
	unsigned side;
	unsigned char *key;
	size_t keylen;
	struct memo_buf *in; /* the answer as the catalog sent it */
	struct memo_buf *out; /* ... as rewritten, or NULL */
	bool same; /* ... with OUT NULL: the rewrite left it as it was */
	unsigned char *params; /* the rewrite's, or NULL */
	size_t plen;
	struct memo_buf *edits; /* a streamed rewrite's, with PARAMS, or NULL */
	unsigned misses; /* in a row */
	size_t size; /* bytes charged against the budget */
};

RB_HEAD(mentry_tree, mentry);
TAILQ_HEAD(mentry_list, mentry);

struct memo {
	struct mentry_tree tree;
	struct mentry_list lru; /* most recently used first */
	struct memo_stats st;
};

static int mentry_cmp(struct mentry *, struct mentry *);
static struct mentry *memo_find(struct memo *, unsigned, const void *, size_t);
static void memo_remove(struct memo *, struct mentry *);
static void memo_evict(struct memo *, uint64_t);
static size_t memo_size(const struct mentry *);
static size_t memo_same(const char *, const char *, size_t);
static bool memo_due(const struct mentry *);
static bool memo_made(const struct mentry *, const struct memo_buf *,
    const void *, size_t);
RB_PROTOTYPE_STATIC(mentry_tree, mentry, node, mentry_cmp)
RB_GENERATE_STATIC(mentry_tree, mentry, node, mentry_cmp)

/* By side, then key as bytes; a shorter key before its extensions. */
static int
mentry_cmp(struct mentry *a, struct mentry *b)
{
	size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
	int c;

	if (a->side != b->side)
		return a->side < b->side ? -1 : 1;
	if ((c = memcmp(a->key, b->key, n)) != 0)
		return c;
	return a->keylen < b->keylen ? -1 : a->keylen > b->keylen;
}

struct memo_buf *
memo_buf_new(size_t len)
{
	return memo_buf_take(xmalloc(len > 0 ? len : 1), len);
}

struct memo_buf *
memo_buf_take(char *data, size_t len)
{
	struct memo_buf *b = xmalloc(sizeof(*b));

	b->data = data;
	b->len = len;
	b->refs = 1;
	return b;
}

struct memo_buf *
memo_buf_ref(struct memo_buf *b)
{
	b->refs++;
	return b;
}

void
memo_buf_unref(struct memo_buf *b)
{
	if (b == NULL || --b->refs > 0)
		return;
	free(b->data);
	free(b);
}

struct memo *
memo_new(uint64_t budget)
{
	struct memo *m = xcalloc(1, sizeof(*m));

	RB_INIT(&m->tree);
	TAILQ_INIT(&m->lru);
	m->st.budget = budget;
	return m;
}

/* Unlink and free E (its buffers live on while others hold them). */
static void
memo_remove(struct memo *m, struct mentry *e)
{
	RB_REMOVE(mentry_tree, &m->tree, e);
	TAILQ_REMOVE(&m->lru, e, lru);
	m->st.bytes -= e->size;
	m->st.entries--;
	memo_buf_unref(e->in);
	memo_buf_unref(e->out);
	memo_buf_unref(e->edits);
	free(e->params);
	free(e->key);
	free(e);
}

void
memo_free(struct memo *m)
{
	struct mentry *e;

	if (m == NULL)
		return;
	while ((e = TAILQ_FIRST(&m->lru)) != NULL)
		memo_remove(m, e);
	free(m);
}

/* Drop the least recently used entries until BUDGET bytes are held. */
static void
memo_evict(struct memo *m, uint64_t budget)
{
	struct mentry *e;

	while (m->st.bytes > budget &&
	    (e = TAILQ_LAST(&m->lru, mentry_list)) != NULL) {
		memo_remove(m, e);
		m->st.evictions++;
	}
}

void
memo_configure(struct memo *m, uint64_t budget)
{
	m->st.budget = budget;
	memo_evict(m, budget);
}

bool
memo_is_on(const struct memo *m)
{
	return m != NULL && m->st.budget > 0;
}

size_t
memo_entry_max(const struct memo *m)
{
	if (!memo_is_on(m))
		return 0;
	return m->st.budget / 4 < MEMO_ENTRY_MAX ? (size_t)(m->st.budget / 4) :
						   MEMO_ENTRY_MAX;
}

/* The entry for SIDE and KEY, or NULL. */
static struct mentry *
memo_find(struct memo *m, unsigned side, const void *key, size_t keylen)
{
	struct mentry q;

	q.side = side;
	q.key = (unsigned char *)(uintptr_t)key;
	q.keylen = keylen;
	return RB_FIND(mentry_tree, &m->tree, &q);
}

struct memo_buf *
memo_get(struct memo *m, unsigned side, const void *key, size_t keylen)
{
	struct mentry *e;

	if (!memo_is_on(m) || (e = memo_find(m, side, key, keylen)) == NULL ||
	    !memo_due(e))
		return NULL;
	return memo_buf_ref(e->in);
}

enum memo_out
memo_hit(struct memo *m, unsigned side, const void *key, size_t keylen,
    const struct memo_buf *in, const void *params, size_t plen,
    struct memo_buf **out)
{
	struct mentry *e;

	*out = NULL;
	m->st.hits++;
	if ((e = memo_find(m, side, key, keylen)) == NULL)
		return MEMO_OUT_NONE;
	e->misses = 0;
	TAILQ_REMOVE(&m->lru, e, lru);
	TAILQ_INSERT_HEAD(&m->lru, e, lru);
	/* Refreshed since: its rewrite is another answer's. */
	if (!memo_made(e, in, params, plen))
		return MEMO_OUT_NONE;
	if (e->out != NULL) {
		*out = memo_buf_ref(e->out);
		return MEMO_OUT_BUF;
	}
	return e->same ? MEMO_OUT_SAME : MEMO_OUT_NONE;
}

bool
memo_miss(struct memo *m, unsigned side, const void *key, size_t keylen,
    size_t len)
{
	struct mentry *e;

	if (!memo_is_on(m))
		return false;
	m->st.misses++;
	if (len > memo_entry_max(m))
		return false;
	if ((e = memo_find(m, side, key, keylen)) == NULL)
		return true;
	if (e->misses < 1u << 30)
		e->misses++;
	/* 1, 2, 4, 8, ...: a power of two. */
	return (e->misses & (e->misses - 1)) == 0;
}

bool
memo_wants(struct memo *m, unsigned side, const void *key, size_t keylen)
{
	struct mentry *e;

	if (!memo_is_on(m))
		return false;
	if ((e = memo_find(m, side, key, keylen)) == NULL)
		return true;
	return memo_due(e);
}

/* Would E's next miss be stored: its 1st, 2nd, 4th, 8th... in a row? */
static bool
memo_due(const struct mentry *e)
{
	unsigned n = e->misses < 1u << 30 ? e->misses + 1 : e->misses;

	return (n & (n - 1)) == 0;
}

/* What E is charged against the budget. */
static size_t
memo_size(const struct mentry *e)
{
	return MEMO_OVERHEAD + e->keylen + e->in->len + e->plen +
	    (e->out != NULL ? e->out->len : 0) +
	    (e->edits != NULL ? e->edits->len : 0);
}

void
memo_put(struct memo *m, unsigned side, const void *key, size_t keylen,
    struct memo_buf *in, const void *params, size_t plen, struct memo_buf *out,
    bool same)
{
	struct memo_buf *edits = NULL;
	struct mentry *e;

	if (!memo_is_on(m) || in->len > memo_entry_max(m))
		return;
	if ((e = memo_find(m, side, key, keylen)) == NULL) {
		e = xcalloc(1, sizeof(*e));
		e->side = side;
		e->key = xmalloc(keylen > 0 ? keylen : 1);
		memcpy(e->key, key, keylen);
		e->keylen = keylen;
		RB_INSERT(mentry_tree, &m->tree, e);
		m->st.entries++;
	} else {
		TAILQ_REMOVE(&m->lru, e, lru);
		m->st.bytes -= e->size;
		/* The same body and parameters: a stream's edits stay. */
		if (params != NULL && memo_made(e, in, params, plen))
			edits = e->edits;
		else
			memo_buf_unref(e->edits);
		memo_buf_unref(e->in);
		memo_buf_unref(e->out);
		free(e->params);
	}
	TAILQ_INSERT_HEAD(&m->lru, e, lru);
	e->in = memo_buf_ref(in);
	e->out = out != NULL ? memo_buf_ref(out) : NULL;
	e->same = out == NULL && same;
	e->edits = edits;
	e->params = NULL;
	e->plen = 0;
	if (params != NULL) {
		e->params = xmalloc(plen > 0 ? plen : 1);
		memcpy(e->params, params, plen);
		e->plen = plen;
	}
	e->size = memo_size(e);
	m->st.bytes += e->size;
	m->st.stores++;
	/* The newest is at the head: evicted last, unless alone too big. */
	memo_evict(m, m->st.budget);
}

/* Does E hold IN, rewritten with PARAMS (PLEN bytes)? */
static bool
memo_made(const struct mentry *e, const struct memo_buf *in, const void *params,
    size_t plen)
{
	return e->in == in && e->params != NULL && e->plen == plen &&
	    memcmp(e->params, params, plen) == 0;
}

struct memo_buf *
memo_edits(struct memo *m, unsigned side, const void *key, size_t keylen,
    const struct memo_buf *in, const void *params, size_t plen)
{
	struct mentry *e;

	if (!memo_is_on(m) || (e = memo_find(m, side, key, keylen)) == NULL ||
	    e->edits == NULL || !memo_made(e, in, params, plen))
		return NULL;
	return memo_buf_ref(e->edits);
}

void
memo_put_edits(struct memo *m, unsigned side, const void *key, size_t keylen,
    const struct memo_buf *in, const void *params, size_t plen,
    struct memo_buf *edits)
{
	struct mentry *e;

	if (!memo_is_on(m) || (e = memo_find(m, side, key, keylen)) == NULL ||
	    e->in != in)
		return;
	if (!memo_made(e, in, params, plen)) {
		/* Made with other parameters: what they made goes. */
		memo_buf_unref(e->out);
		e->out = NULL;
		e->same = false;
		free(e->params);
		e->params = xmalloc(plen > 0 ? plen : 1);
		memcpy(e->params, params, plen);
		e->plen = plen;
	}
	memo_buf_unref(e->edits);
	e->edits = memo_buf_ref(edits);
	m->st.bytes -= e->size;
	e->size = memo_size(e);
	m->st.bytes += e->size;
	memo_evict(m, m->st.budget);
}

void
memo_get_stats(const struct memo *m, struct memo_stats *st)
{
	*st = m->st;
}

/*
 * How many of the N bytes at A and B are equal before the first that
 * differs (N when none does), in one pass: memcmp over large blocks,
 * then small ones in the block that differs, then words, then bytes. A
 * byte at a time, the search cost as much as the check it saves.
 */
static size_t
memo_same(const char *a, const char *b, size_t n)
{
	size_t i = 0, k;
	uint64_t x, y;

	while (n - i >= MEMO_BLOCK && memcmp(a + i, b + i, MEMO_BLOCK) == 0)
		i += MEMO_BLOCK;
	if (n - i < MEMO_BLOCK && memcmp(a + i, b + i, n - i) == 0)
		return n;
	while (
	    n - i >= MEMO_SUBBLOCK && memcmp(a + i, b + i, MEMO_SUBBLOCK) == 0)
		i += MEMO_SUBBLOCK;
	for (; n - i >= sizeof(x); i += sizeof(x)) {
		memcpy(&x, a + i, sizeof(x));
		memcpy(&y, b + i, sizeof(y));
		if (x != y)
			break;
	}
	for (k = i; k < n && a[k] == b[k]; k++)
		;
	return k;
}

void
memo_cmp_init(struct memo_cmp *mc, struct memo_buf *memo)
{
	mc->memo = memo != NULL ? memo_buf_ref(memo) : NULL;
	mc->at = 0;
}

void
memo_cmp_stop(struct memo_cmp *mc, struct jscheck *js)
{
	if (mc->memo == NULL)
		return;
	if (js != NULL && mc->at > 0)
		jscheck_feed(js, mc->memo->data, mc->at);
	memo_buf_unref(mc->memo);
	mc->memo = NULL;
}

bool
memo_cmp_feed(struct memo_cmp *mc, struct jscheck *js, const void *p, size_t n)
{
	const char *s = p;
	size_t avail, m, k;

	if (mc->memo != NULL) {
		avail = mc->memo->len - mc->at;
		m = n < avail ? n : avail;
		k = memo_same(s, mc->memo->data + mc->at, m);
		mc->at += k;
		if (k == n)
			return true;
		/* The first difference: the check takes over at it. */
		memo_cmp_stop(mc, js);
		s += k;
		n -= k;
	}
	return jscheck_feed(js, s, n);
}

bool
memo_cmp_end(struct memo_cmp *mc, struct jscheck *js)
{
	if (mc->memo != NULL && mc->at == mc->memo->len) {
		memo_buf_unref(mc->memo);
		mc->memo = NULL;
		return true;
	}
	/* Shorter than the memo: only its start. */
	memo_cmp_stop(mc, js);
	return false;
}
