/*
 * floe: readers.c -- the reader inventory's table: one allocation of
 * fixed-size entries, an open-addressed index over them (linear probing,
 * deletion by backward shift) and a doubly linked idle order, so that the
 * longest idle entry is the one a new reader replaces; and, for the
 * request path, hints: a direct-mapped array from one hash of a reader
 * (the client hash, the object, the side) to its two entries, so that a
 * load seen before is one hash and a few stores. Also the stale-reader
 * rule.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "policy/readers.h"
#include "routing/route.h"
#include "routing/store.h"

#define READERS_NIL UINT32_MAX

/* One entry: a reader's key and its sightings since the last take. */
struct readers_ent {
	uint64_t h;
	uint32_t prev; /* toward the most recent; NIL at the head */
	uint32_t next; /* toward the longest idle; NIL at the tail */
	uint16_t keylen;
	bool dirty;
	uint32_t gen; /* bumped each time the entry takes a new key */
	struct store_reader r;
	unsigned char key[READERS_KEY_MAX];
};

/*
 * A hint: the entries of the reader whose readers_see hash is H, as they
 * were when it was set (GEN: their keys have not changed since). IDHASH
 * says who it was, the entries' keys the rest. All zero: none yet (no
 * entry in use has generation 0).
 */
struct readers_hint {
	uint64_t h;
	uint64_t idhash; /* the client hash */
	uint32_t ent, id; /* the object's entry, the identity's */
	uint32_t ent_gen, id_gen;
};

struct readers {
	struct readers_ent *ent; /* CAP entries, USED of them in use */
	uint32_t *slot; /* entry index + 1; 0: empty */
	struct readers_hint *hint; /* HMASK + 1 hints */
	size_t mask; /* slots - 1; slots is a power of 2, >= 2 * cap */
	size_t hmask; /* hints - 1: slots / 8 */
	size_t cap;
	size_t used;
	size_t ndirty;
	uint32_t head; /* the most recent */
	uint32_t tail; /* the longest idle */
	struct readers_stats st;
};

static size_t readers_nslots(size_t);
static uint64_t readers_hash(const unsigned char *, size_t);
static size_t readers_find(const struct readers *, const unsigned char *,
    size_t, uint64_t, bool *);
static void readers_unlink(struct readers *, uint32_t);
static void readers_push(struct readers *, uint32_t);
static void readers_unindex(struct readers *, uint32_t);
static struct readers_ent *readers_upsert(struct readers *,
    const unsigned char *, size_t, int64_t);
static void readers_touch(struct readers *, struct readers_ent *, const char *,
    size_t, bool, int64_t);
static inline void readers_mark(struct readers *, struct readers_ent *,
    const char *, size_t, bool, int64_t);
static uint64_t readers_see_hash(uint64_t, const struct route_obj *,
    enum route_side);
static bool readers_hint_holds(const struct readers *,
    const struct readers_hint *, const struct route_obj *, enum route_side,
    const struct readers_who *);
static void readers_note_ent(struct readers *, const struct route_obj *,
    enum route_side, const char *, size_t, const char *, size_t, bool, int64_t,
    uint32_t *, uint32_t *);

/* Slots of the index of a table of CAP entries: load at most one half. */
static size_t
readers_nslots(size_t cap)
{
	size_t n = 16;

	while (n < cap * 2)
		n *= 2;
	return n;
}

/* The bytes a table of CAP entries holds: entries, index and hints. */
size_t
readers_bytes(size_t cap)
{
	return sizeof(struct readers) + cap * sizeof(struct readers_ent) +
	    readers_nslots(cap) * sizeof(uint32_t) +
	    readers_nslots(cap) / 8 * sizeof(struct readers_hint);
}

/* A table of CAP entries, in one allocation. */
struct readers *
readers_new(size_t cap)
{
	struct readers *t;
	unsigned char *p;

	if (cap < 2)
		cap = 2;
	/* calloc: the pages of entries never used are never touched. */
	p = xcalloc(1, readers_bytes(cap));
	t = (struct readers *)(void *)p;
	t->ent = (struct readers_ent *)(void *)(p + sizeof(*t));
	t->slot = (uint32_t *)(void *)(p + sizeof(*t) +
	    cap * sizeof(struct readers_ent));
	t->hint = (struct readers_hint *)(void *)((unsigned char *)t->slot +
	    readers_nslots(cap) * sizeof(uint32_t));
	t->cap = cap;
	t->mask = readers_nslots(cap) - 1;
	t->hmask = readers_nslots(cap) / 8 - 1;
	t->head = t->tail = READERS_NIL;
	return t;
}

void
readers_free(struct readers *t)
{
	free(t);
}

/*
 * A key's hash, eight bytes at a time (a multiply and a shift per word,
 * as in murmur's finalizer): a load hashes two keys of 20 to 80 bytes.
 */
static uint64_t
readers_hash(const unsigned char *k, size_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ n, w;

	for (; n >= 8; k += 8, n -= 8) {
		memcpy(&w, k, 8);
		x = (x ^ w) * 0xff51afd7ed558ccdULL;
		x ^= x >> 32;
	}
	w = 0;
	memcpy(&w, k, n);
	x = (x ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 29);
}

/*
 * The slot holding KEY (hash H), with *FOUND true; else the empty slot
 * where it would go.
 */
static size_t
readers_find(const struct readers *t, const unsigned char *key, size_t len,
    uint64_t h, bool *found)
{
	const struct readers_ent *e;
	size_t i = h & t->mask;

	for (; t->slot[i] != 0; i = (i + 1) & t->mask) {
		e = &t->ent[t->slot[i] - 1];
		if (e->h == h && e->keylen == len &&
		    memcmp(e->key, key, len) == 0) {
			*found = true;
			return i;
		}
	}
	*found = false;
	return i;
}

/* Take entry I out of the idle order. */
static void
readers_unlink(struct readers *t, uint32_t i)
{
	struct readers_ent *e = &t->ent[i];

	if (e->prev != READERS_NIL)
		t->ent[e->prev].next = e->next;
	else
		t->head = e->next;
	if (e->next != READERS_NIL)
		t->ent[e->next].prev = e->prev;
	else
		t->tail = e->prev;
	e->prev = e->next = READERS_NIL;
}

/* Put entry I at the head of the idle order: the most recent. */
static void
readers_push(struct readers *t, uint32_t i)
{
	struct readers_ent *e = &t->ent[i];

	e->prev = READERS_NIL;
	e->next = t->head;
	if (t->head != READERS_NIL)
		t->ent[t->head].prev = i;
	t->head = i;
	if (t->tail == READERS_NIL)
		t->tail = i;
}

/*
 * Take entry I out of the index, shifting back the entries probed past
 * its slot so that every probe still finds what it looks for.
 */
static void
readers_unindex(struct readers *t, uint32_t idx)
{
	size_t i = t->ent[idx].h & t->mask, j, k;

	while (t->slot[i] != idx + 1)
		i = (i + 1) & t->mask;
	for (;;) {
		j = i;
		for (;;) {
			j = (j + 1) & t->mask;
			if (t->slot[j] == 0) {
				t->slot[i] = 0;
				return;
			}
			k = t->ent[t->slot[j] - 1].h & t->mask;
			/* Stays if its home is cyclically in (i, j]. */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		t->slot[i] = t->slot[j];
		i = j;
	}
}

/*
 * The entry of KEY, made (from a free one, or by replacing the longest
 * idle) if it is not there; unlinked from the idle order.
 */
static struct readers_ent *
readers_upsert(struct readers *t, const unsigned char *key, size_t len,
    int64_t now_ms)
{
	uint64_t h = readers_hash(key, len);
	struct readers_ent *e;
	uint32_t idx;
	size_t at;
	bool found;

	at = readers_find(t, key, len, h, &found);
	if (found) {
		idx = t->slot[at] - 1;
		readers_unlink(t, idx);
		return &t->ent[idx];
	}
	if (t->used < t->cap)
		idx = (uint32_t)t->used++;
	else {
		idx = t->tail;
		readers_unlink(t, idx);
		readers_unindex(t, idx);
		t->st.evicted++;
		if (t->ent[idx].dirty) {
			t->st.evicted_dirty++;
			t->ndirty--;
		}
		/* The shift may have moved the empty slot found. */
		at = readers_find(t, key, len, h, &found);
	}
	e = &t->ent[idx];
	e->h = h;
	e->keylen = (uint16_t)len;
	e->dirty = false;
	e->gen++; /* the hints that named it no longer hold */
	memcpy(e->key, key, len);
	memset(&e->r, 0, sizeof(e->r));
	e->r.first_ms = now_ms;
	t->slot[at] = idx + 1;
	return e;
}

/* Note one load in E and make it the most recent. */
static void
readers_touch(struct readers *t, struct readers_ent *e, const char *ua,
    size_t ualen, bool oldtag, int64_t now_ms)
{
	readers_mark(t, e, ua, ualen, oldtag, now_ms);
	readers_push(t, (uint32_t)(e - t->ent));
}

/* Note one load in E (its place in the idle order is the caller's). */
static inline void
readers_mark(struct readers *t, struct readers_ent *e, const char *ua,
    size_t ualen, bool oldtag, int64_t now_ms)
{
	e->r.last_ms = now_ms;
	e->r.count++;
	if (oldtag)
		e->r.oldtag_ms = now_ms;
	if (ualen > 0) {
		if (ualen > sizeof(e->r.ua) - 1)
			ualen = sizeof(e->r.ua) - 1;
		memcpy(e->r.ua, ua, ualen);
		e->r.ua[ualen] = '\0';
	}
	if (!e->dirty) {
		e->dirty = true;
		t->ndirty++;
	}
}

/* The key of a reader of OBJ on SIDE, or of IDENT anywhere. */
size_t
readers_key(unsigned char *out, size_t outlen, const struct route_obj *obj,
    enum route_side side, const char *ident, size_t identlen)
{
	size_t n = 0;

	if (identlen == 0 || memchr(ident, '\0', identlen) != NULL)
		return 0;
	if (obj != NULL) {
		if (obj->len == 0 || obj->len + 2 + identlen > outlen ||
		    obj->len + 2 + identlen > STORE_KEY_MAX)
			return 0;
		memcpy(out, obj->key, obj->len);
		n = obj->len;
		out[n++] = '\0';
		out[n++] = side == ROUTE_LAKEHOUSE ? 'l' : 'w';
	} else {
		if (1 + identlen > outlen)
			return 0;
		out[n++] = '\0';
	}
	memcpy(out + n, ident, identlen);
	return n + identlen;
}

/* Split a reader key. */
int
readers_key_split(const unsigned char *key, size_t keylen,
    struct route_obj *obj, enum route_side *side, char *ident, size_t identlen)
{
	const unsigned char *z = memchr(key, '\0', keylen), *id;
	size_t n;

	if (z == NULL)
		return -1;
	if (z == key) {
		obj->len = 0;
		id = key + 1;
	} else {
		if ((size_t)(z - key) > sizeof(obj->key) ||
		    (size_t)(key + keylen - z) < 3 ||
		    (z[1] != 'w' && z[1] != 'l'))
			return -1;
		obj->len = (size_t)(z - key);
		memcpy(obj->key, key, obj->len);
		obj->rule = false;
		*side = z[1] == 'l' ? ROUTE_LAKEHOUSE : ROUTE_WAREHOUSE;
		id = z + 2;
	}
	n = (size_t)(key + keylen - id);
	if (n == 0 || n >= identlen)
		return -1;
	memcpy(ident, id, n);
	ident[n] = '\0';
	return 0;
}

/*
 * Note a load: the object's record, then the identity's; their entries
 * into *ENT and *ID (NIL: not noted).
 */
static void
readers_note_ent(struct readers *t, const struct route_obj *obj,
    enum route_side side, const char *ident, size_t identlen, const char *ua,
    size_t ualen, bool oldtag, int64_t now_ms, uint32_t *ent, uint32_t *id)
{
	unsigned char key[READERS_KEY_MAX];
	struct readers_ent *e;
	size_t len;

	*ent = *id = READERS_NIL;
	t->st.noted++;
	if ((len = readers_key(key, sizeof(key), obj, side, ident, identlen)) ==
	    0)
		t->st.too_long++;
	else {
		e = readers_upsert(t, key, len, now_ms);
		readers_touch(t, e, ua, ua != NULL ? ualen : 0, oldtag, now_ms);
		*ent = (uint32_t)(e - t->ent);
	}
	/* The identity's own entry: when it was last seen, no agent. */
	if ((len = readers_key(key, sizeof(key), NULL, side, ident,
		 identlen)) != 0) {
		e = readers_upsert(t, key, len, now_ms);
		readers_touch(t, e, NULL, 0, false, now_ms);
		*id = (uint32_t)(e - t->ent);
	}
}

/* Note a load. */
void
readers_note(struct readers *t, const struct route_obj *obj,
    enum route_side side, const char *ident, size_t identlen, const char *ua,
    size_t ualen, bool oldtag, int64_t now_ms)
{
	uint32_t ent, id;

	readers_note_ent(t, obj, side, ident, identlen, ua, ualen, oldtag,
	    now_ms, &ent, &id);
}

/* A bearer token's identity: "token:" and the hash in hex, by hand. */
size_t
readers_token_ident(uint64_t h, char *out, size_t outlen)
{
	int i;

	if (outlen < 23)
		return 0;
	memcpy(out, "token:", 6);
	for (i = 0; i < 16; i++)
		out[6 + i] = "0123456789abcdef"[(h >> (60 - 4 * i)) & 15];
	out[22] = '\0';
	return 22;
}

/*
 * The hint's hash of a reader: the client hash, then the object's key
 * eight bytes at a time (its last word overlapping the one before when
 * the length is not a multiple of eight), and the side.
 */
static uint64_t
readers_see_hash(uint64_t idhash, const struct route_obj *obj,
    enum route_side side)
{
	const unsigned char *k = obj->key;
	size_t n = obj->len, i;
	uint64_t x = idhash ^ (0x9e3779b97f4a7c15ULL * (2 * n + side + 1)), w;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, k + i, 8);
		x = (x ^ w) * 0xff51afd7ed558ccdULL;
		x ^= x >> 32;
	}
	if (i < n) {
		if (n >= 8)
			memcpy(&w, k + n - 8, 8);
		else
			for (w = 0; i < n; i++)
				w = w << 8 | k[i];
		x = (x ^ w) * 0xc4ceb9fe1a85ec53ULL;
	}
	return x ^ (x >> 29);
}

/*
 * Does hint HT still name the entries of WHO's record of OBJ on SIDE and
 * of WHO? Their keys have not changed since it was set (GEN), for the
 * same client hash, when both were noted for one identity; the object,
 * the side and the identity are compared with the object's key. A
 * token's identity is its hash: "token:" and the same client hash is the
 * same identity.
 */
static bool
readers_hint_holds(const struct readers *t, const struct readers_hint *ht,
    const struct route_obj *obj, enum route_side side,
    const struct readers_who *who)
{
	const struct readers_ent *e = &t->ent[ht->ent];
	const unsigned char *id = e->key + obj->len + 2;
	size_t idlen = who->name != NULL ? who->namelen : 22;

	if (ht->idhash != who->hash || e->gen != ht->ent_gen ||
	    t->ent[ht->id].gen != ht->id_gen ||
	    e->keylen != obj->len + 2 + idlen ||
	    e->key[obj->len + 1] != (side == ROUTE_LAKEHOUSE ? 'l' : 'w') ||
	    memcmp(e->key, obj->key, obj->len) != 0)
		return false;
	if (who->name == NULL)
		return id[0] == 't' && id[1] == 'o' && id[2] == 'k' &&
		    id[3] == 'e' && id[4] == 'n' && id[5] == ':';
	return memcmp(id, who->name, idlen) == 0;
}

/* The request path's note: a hint's two entries, else readers_note. */
void
readers_see(struct readers *t, const struct route_obj *obj,
    enum route_side side, const struct readers_who *who, const char *ua,
    size_t ualen, bool oldtag, int64_t now_ms)
{
	uint64_t h = readers_see_hash(who->hash, obj, side);
	struct readers_hint *ht = &t->hint[h & t->hmask];
	char tok[READERS_IDENT_MAX];
	const char *ident = who->name;
	size_t identlen = who->namelen;
	uint32_t ent, id;

	if (ht->h == h && readers_hint_holds(t, ht, obj, side, who)) {
		t->st.noted++;
		/*
		 * Most recent first: the identity's entry, then the object's
		 * (as readers_note leaves them); often they already are.
		 */
		if (t->head != ht->id || t->ent[ht->id].next != ht->ent) {
			readers_unlink(t, ht->ent);
			readers_push(t, ht->ent);
			readers_unlink(t, ht->id);
			readers_push(t, ht->id);
		}
		readers_mark(t, &t->ent[ht->ent], ua, ua != NULL ? ualen : 0,
		    oldtag, now_ms);
		readers_mark(t, &t->ent[ht->id], NULL, 0, false, now_ms);
		return;
	}
	if (ident == NULL)
		identlen = readers_token_ident(who->hash, tok, sizeof(tok));
	if (ident == NULL)
		ident = tok;
	readers_note_ent(t, obj, side, ident, identlen, ua, ualen, oldtag,
	    now_ms, &ent, &id);
	/* The identity's entry may have replaced the object's (a tiny table).
	 */
	if (ent == READERS_NIL || id == READERS_NIL || ent == id)
		return;
	*ht = (struct readers_hint) { .h = h,
		.idhash = who->hash,
		.ent = ent,
		.id = id,
		.ent_gen = t->ent[ent].gen,
		.id_gen = t->ent[id].gen };
}

size_t
readers_dirty(const struct readers *t)
{
	return t->ndirty;
}

/*
 * Take dirty entries: their sightings go to OUT, they are clean after.
 * From the most recent on: every entry noted since the last take is ahead
 * of every one that was not, so a take reads about as many entries as it
 * takes, not the whole table.
 */
size_t
readers_take(struct readers *t, struct readers_item *out, size_t max)
{
	struct readers_ent *e;
	uint32_t i;
	size_t n = 0;

	for (i = t->head; i != READERS_NIL && n < max && t->ndirty > 0;
	     i = e->next) {
		e = &t->ent[i];
		if (!e->dirty)
			continue;
		memcpy(out[n].key, e->key, e->keylen);
		out[n].keylen = e->keylen;
		out[n].r = e->r;
		n++;
		/* first, last, oldtag and ua merge idempotently; count adds. */
		e->r.count = 0;
		e->dirty = false;
		t->ndirty--;
	}
	if (n > 0)
		t->st.flushes++;
	return n;
}

/* A failed flush: the sightings of IN go back to their entries. */
void
readers_give_back(struct readers *t, const struct readers_item *in, size_t n)
{
	struct readers_ent *e;
	size_t i, at;
	bool found;

	for (i = 0; i < n; i++) {
		at = readers_find(t, in[i].key, in[i].keylen,
		    readers_hash(in[i].key, in[i].keylen), &found);
		if (!found)
			continue;
		e = &t->ent[t->slot[at] - 1];
		e->r.count += in[i].r.count;
		if (!e->dirty) {
			e->dirty = true;
			t->ndirty++;
		}
	}
}

void
readers_stats(const struct readers *t, struct readers_stats *st)
{
	*st = t->st;
	st->cap = t->cap;
	st->used = t->used;
	st->dirty = t->ndirty;
	st->bytes = readers_bytes(t->cap);
}

/* The stale-reader rule (readers.h). */
bool
readers_is_stale(const struct store_reader *wh, const struct store_reader *lh,
    int64_t flipped_ms, int64_t horizon_ms)
{
	int64_t wl;

	if (wh == NULL || flipped_ms <= 0 || wh->count == 0)
		return false;
	wl = wh->last_ms;
	if (wl < flipped_ms - horizon_ms)
		return false;
	if (wh->excused_ms >= wl)
		return false;
	if (lh != NULL && lh->count > 0 && lh->last_ms >= flipped_ms &&
	    lh->last_ms >= wl)
		return false;
	return true;
}
