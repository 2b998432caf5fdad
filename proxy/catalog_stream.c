/*
 * floe: catalog_stream.c -- catalog_rewrite for an answer that is passed
 * on as it arrives: the same edits (the catalog's config merged under a
 * LoadTableResult's "config", upstream URLs in string values pointed back
 * at floe), made piece by piece, whatever byte a piece ends at. Only the
 * structure is followed (strings, brackets, the key or value position in
 * an object). An answer to be checked as JSON is checked here, in the
 * same pass (catalog_stream_check): the check's scan (jscheck_feed_tap)
 * tells the rewrite of the keys and brackets at the levels the merge
 * looks at and of the strings that may begin with the URL prefix
 * (stream_event), and a piece that cannot be JSON is refused whole.
 * Otherwise the rewrite follows the structure itself (stream_scan),
 * skipping what is nested deeper than the merge looks (a LoadTable's
 * "metadata", nearly all of it) 64 bytes at a time where no string in
 * them can begin with the URL prefix (stream_skip, in
 * catalog_stream_skip.c). Bytes are moved from
 * the input to the output without a copy, but for the few a URL prefix
 * that a piece cuts in two keeps back until the next one. The merge is
 * taken as it was when the answer began. No I/O.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <event2/buffer.h>

#include "lib/compat.h"
#include "lib/jscheck.h"
#include "lib/xmalloc.h"
#include "proxy/catalog.h"
#include "proxy/catalog_impl.h"

/* Byte classes outside strings. */
#define STREAM_C_QUOTE 1
#define STREAM_C_OPEN 2
#define STREAM_C_CLOSE 3
#define STREAM_C_COMMA 4
#define STREAM_C_ESCAPE 5

static const unsigned char stream_class[256] = {
	['"'] = STREAM_C_QUOTE,
	['{'] = STREAM_C_OPEN,
	['['] = STREAM_C_OPEN,
	['}'] = STREAM_C_CLOSE,
	[']'] = STREAM_C_CLOSE,
	[','] = STREAM_C_COMMA,
	['\\'] = STREAM_C_ESCAPE,
};

static void stream_edit(struct catalog_stream *, size_t, size_t, const char *,
    size_t, bool);
static void stream_log(struct catalog_stream *, const struct stream_edit *);
static void stream_scan(struct catalog_stream *, const char *, size_t, size_t);
static void stream_byte(struct catalog_stream *, const char *, size_t, size_t,
    size_t);
static void stream_string_end(struct catalog_stream *, const char *, size_t);
static void stream_key_add(struct catalog_stream *, const char *, size_t);
static void stream_key_end(struct catalog_stream *);
static void stream_open(struct catalog_stream *, char, size_t);
static void stream_close(struct catalog_stream *, size_t);
static void stream_match(struct catalog_stream *, const char *, size_t, size_t);
static void stream_event(void *, enum jscheck_event, const unsigned char *,
    unsigned);
static bool stream_follow(struct catalog_stream *, const char *, size_t,
    size_t);

struct catalog_stream *
catalog_stream_new(const struct catalog *c, bool merge,
    const char *upstream_base, const char *floe_base, const char *pinned_prefix)
{
	struct catalog_stream *st;
	size_t blen, i;

	st = xcalloc(1, sizeof(*st));
	merge = merge && catalog_has_merge(c);
	blen = catalog_base_len(upstream_base, floe_base);
	if (blen > 0) {
		catalog_urls_make(&st->ub, c, upstream_base, blen, floe_base,
		    pinned_prefix);
		/* A prefix with a quote or an escape is not matched here. */
		if (memchr(st->ub.u.from, '"', st->ub.u.fromlen) != NULL ||
		    memchr(st->ub.u.from, '\\', st->ub.u.fromlen) != NULL) {
			catalog_stream_free(st);
			return NULL;
		}
		st->urls = true;
	}
	if (merge) {
		st->cat.text = catalog_text_ref(c->text);
		c = &st->cat;
	}
	splice_init(&st->sp, c, merge, "", 0);
	st->sp.mu = st->urls ? &st->ub.u : NULL;
	st->keycap = 8; /* "config" */
	for (i = 0; merge && i < c->text->n; i++)
		if (c->text->m[i].klen > st->keycap)
			st->keycap = c->text->m[i].klen;
	st->key = xmalloc(st->keycap);
	return st;
}

void
catalog_stream_free(struct catalog_stream *st)
{
	size_t i;

	if (st == NULL)
		return;
	for (i = 0; i < st->ned; i++)
		if (st->ed[i].own)
			free((void *)(uintptr_t)st->ed[i].ins);
	free(st->ed);
	free(st->log);
	free(st->logins);
	if (st->scratch != NULL)
		evbuffer_free(st->scratch);
	free(st->key);
	splice_clear(&st->sp);
	free(st->ub.from);
	free(st->ub.to);
	catalog_text_free(st->cat.text);
	free(st);
}

/* Record an edit at input offset AT; edits come in input order. */
static void
stream_edit(struct catalog_stream *st, size_t at, size_t cut, const char *ins,
    size_t inslen, bool own)
{
	if (st->ned == st->edcap) {
		st->edcap = st->edcap > 0 ? st->edcap * 2 : 8;
		st->ed = xreallocarray(st->ed, st->edcap, sizeof(*st->ed));
	}
	st->ed[st->ned].at = at;
	st->ed[st->ned].cut = cut;
	st->ed[st->ned].ins = ins;
	st->ed[st->ned].inslen = inslen;
	st->ed[st->ned].own = own;
	st->ned++;
}

/* Note edit E, applied, in the answer's offsets (catalog_stream_edits). */
static void
stream_log(struct catalog_stream *st, const struct stream_edit *e)
{
	size_t need = st->loginslen + e->inslen;

	if (st->nlog == st->logcap) {
		st->logcap = st->logcap > 0 ? st->logcap * 2 : 8;
		st->log = xreallocarray(st->log, st->logcap, sizeof(*st->log));
	}
	st->log[st->nlog].at = st->base + e->at;
	st->log[st->nlog].cut = e->cut;
	st->log[st->nlog].inslen = e->inslen;
	st->nlog++;
	if (need > st->loginscap) {
		st->loginscap =
		    need > st->loginscap * 2 ? need : st->loginscap * 2;
		st->logins = xreallocarray(st->logins, st->loginscap, 1);
	}
	if (e->inslen > 0)
		memcpy(st->logins + st->loginslen, e->ins, e->inslen);
	st->loginslen = need;
}

/*
 * Go on matching the URL prefix with the N bytes at P (input offset OFF),
 * as far as they go: the whole prefix is a URL edit; a byte that differs
 * ends the match.
 */
static void
stream_match(struct catalog_stream *st, const char *p, size_t n,
    size_t off __unused)
{
	size_t k = st->ub.u.fromlen - st->mpos;

	if (k > n)
		k = n;
	if (memcmp(p, st->ub.u.from + st->mpos, k) != 0) {
		st->matching = false;
		return;
	}
	st->mpos += k;
	if (st->mpos < st->ub.u.fromlen)
		return;
	st->matching = false;
	stream_edit(st, st->mat, st->ub.u.fromlen, st->ub.u.to, st->ub.u.tolen,
	    false);
}

/* Append N bytes of the key being read (past KEYCAP only counted). */
static void
stream_key_add(struct catalog_stream *st, const char *p, size_t n)
{
	if (st->keylen < st->keycap)
		memcpy(st->key + st->keylen, p,
		    n < st->keycap - st->keylen ? n : st->keycap - st->keylen);
	st->keylen += n;
}

/* A key just ended: "config" at the top level, or one of config's. */
static void
stream_key_end(struct catalog_stream *st)
{
	size_t n = st->keylen;

	if (!st->capture)
		return;
	st->capture = false;
	if (n > st->keycap)
		return; /* longer than any key looked for */
	if (st->depth == 1 && n == 8 && memcmp(st->key, "\"config\"", 8) == 0) {
		/* The first "config" decides; another one stops the merge. */
		if (st->sp.config_seen)
			st->sp.merge = false;
		else {
			st->sp.config_seen = true;
			st->cfg_next = true;
		}
	} else if (st->cfg_depth > 0 && st->depth == st->cfg_depth &&
	    st->sp.merge)
		splice_mark_key(&st->sp, st->key, n);
}

/* '{' or '[' (C) at input offset AT. */
static void
stream_open(struct catalog_stream *st, char c, size_t at __unused)
{
	if (st->cfg_next) {
		st->cfg_next = false;
		if (c == '{')
			st->cfg_depth = st->depth + 1;
		else
			st->sp.merge = false; /* the table's choice */
	}
	if (st->depth >= JSCHECK_MAX_DEPTH) {
		/* Not JSON (the check says so): no further edit. */
		st->phase = STREAM_DONE;
		return;
	}
	if (c == '{')
		st->objs[st->depth / 64] |= 1ULL << (st->depth % 64);
	else
		st->objs[st->depth / 64] &= ~(1ULL << (st->depth % 64));
	st->depth++;
	st->want_key = c == '{';
}

/* '}' or ']' at input offset AT: the merge goes in before config's end. */
static void
stream_close(struct catalog_stream *st, size_t at)
{
	size_t inslen = 0, unused;
	char *ins;

	if (st->cfg_next) {
		st->cfg_next = false;
		st->sp.merge = false;
	}
	if (st->depth == 0) {
		st->phase = STREAM_DONE;
		return;
	}
	if (st->cfg_depth > 0 && st->depth == st->cfg_depth) {
		st->cfg_depth = 0;
		if (st->sp.merge) {
			st->sp.config_empty = st->cfg_keys == 0;
			if ((ins = splice_insertion(&st->sp, &inslen,
				 &unused)) != NULL)
				stream_edit(st, at, 0, ins, inslen, true);
			st->sp.merge = false; /* done */
		}
	} else if (st->depth == 1) {
		if (st->sp.merge && !st->sp.config_seen) {
			st->sp.top_empty = st->top_keys == 0;
			if ((ins = splice_insertion(&st->sp, &inslen,
				 &unused)) != NULL)
				stream_edit(st, at, 0, ins, inslen, true);
		}
		st->phase = STREAM_DONE;
	}
	st->depth--;
	st->want_key = false;
}

/*
 * The structural byte at P[I], outside a string, of the N bytes at P
 * (input offset OFF): a quote, a bracket or a comma.
 */
static inline __attribute__((always_inline)) void
stream_byte(struct catalog_stream *st, const char *p, size_t n, size_t off,
    size_t i)
{
	unsigned char c = p[i];
	bool obj;

	switch (stream_class[c]) {
	case STREAM_C_QUOTE:
		st->instr = true;
		st->esc = false;
		st->iskey = st->want_key;
		st->want_key = false;
		if (st->iskey) {
			st->capture = st->depth == 1 ||
			    (st->cfg_depth > 0 && st->depth == st->cfg_depth);
			st->keylen = 0;
			st->kfrom = i;
			if (st->depth == 1)
				st->top_keys++;
			else if (st->cfg_depth > 0 &&
			    st->depth == st->cfg_depth)
				st->cfg_keys++;
			return;
		}
		st->capture = false;
		if (st->cfg_next) {
			st->cfg_next = false;
			st->sp.merge = false;
		}
		if (st->urls && i + 1 < n && p[i + 1] != st->ub.u.from[0])
			return; /* the common case, decided at once */
		if (st->urls) {
			st->matching = true;
			st->mpos = 0;
			st->mat = off + i + 1;
			stream_match(st, p + i + 1, n - i - 1, off + i + 1);
		}
		return;
	case STREAM_C_OPEN:
		stream_open(st, (char)c, off + i);
		return;
	case STREAM_C_CLOSE:
		stream_close(st, off + i);
		return;
	case STREAM_C_COMMA:
		if (st->cfg_next) {
			st->cfg_next = false;
			st->sp.merge = false;
		}
		obj = st->depth > 0 &&
		    (st->objs[(st->depth - 1) / 64] >> ((st->depth - 1) % 64) &
			1);
		st->want_key = obj;
		return;
	default:
		return; /* a backslash outside a string: not JSON */
	}
}

/* A string ends at P[I] (its closing quote): a key is looked at. */
static void
stream_string_end(struct catalog_stream *st, const char *p, size_t i)
{
	st->instr = false;
	if (st->capture) {
		stream_key_add(st, p + st->kfrom, i + 1 - st->kfrom);
		stream_key_end(st);
	}
}

/*
 * Scan the N bytes at P, at input offset OFF: only the structural bytes
 * are looked at, found 32 at a time where SSE2 is there. In a
 * string only quotes and backslashes count; a backslash takes the byte
 * after it, whatever it is.
 */
static void
stream_scan(struct catalog_stream *st, const char *p, size_t n, size_t off)
{
	size_t i = 0;
	unsigned char c;
#if defined(__SSE2__)
	/* '[' and ']' are '{' and '}' but for the bit 0x20. */
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i ob = _mm_set1_epi8('{'), cb = _mm_set1_epi8('}');
	const __m128i cm = _mm_set1_epi8(','), up = _mm_set1_epi8(0x20);
	__m128i v, w;
	uint32_t m;
	int j;
#endif

	if (st->matching)
		stream_match(st, p, n, off);
	st->kfrom = 0; /* a key continued from the last piece */
	while (i < n && st->phase == STREAM_START) {
		c = p[i];
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			i++;
			continue;
		}
		/* Not an object: passed on as it is. */
		st->phase = c == '{' ? STREAM_BODY : STREAM_DONE;
	}
#if defined(__SSE2__)
	while (n - i >= 32 && st->phase == STREAM_BODY) {
		/* Deeper than the merge looks, only URLs matter: skipped. */
		if (n - i >= 66 && !st->matching && !st->esc && !st->cfg_next &&
		    st->depth > (st->cfg_depth > 0 ? st->cfg_depth : 1)) {
			/* Then at least a block byte by byte. */
			i += stream_skip(st, p + i, n - i);
			if (n - i < 32)
				break;
		}
		v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		w = _mm_or_si128(v, up);
		m = (uint32_t)_mm_movemask_epi8(
		    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q),
				     _mm_cmpeq_epi8(v, bs)),
			_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, ob),
					 _mm_cmpeq_epi8(w, cb)),
			    _mm_cmpeq_epi8(v, cm))));
		v = _mm_loadu_si128(
		    (const __m128i *)(const void *)(p + i + 16));
		w = _mm_or_si128(v, up);
		m |= (uint32_t)_mm_movemask_epi8(
			 _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q),
					  _mm_cmpeq_epi8(v, bs)),
			     _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, ob),
					      _mm_cmpeq_epi8(w, cb)),
				 _mm_cmpeq_epi8(v, cm))))
		    << 16;
		if (st->esc) {
			/* The first byte was escaped in the block before. */
			m &= ~1u;
			st->esc = false;
		}
		while (m != 0) {
			j = __builtin_ctz(m);
			m &= m - 1;
			c = p[i + j];
			if (st->instr) {
				if (c == '\\') {
					if (j == 31)
						st->esc = true;
					else
						m &= ~(1u << (j + 1));
				} else if (c == '"')
					stream_string_end(st, p, i + j);
				continue;
			}
			stream_byte(st, p, n, off, i + j);
			if (st->phase == STREAM_DONE)
				return;
		}
		i += 32;
	}
#endif
	for (; i < n && st->phase == STREAM_BODY; i++) {
		c = p[i];
		if (st->instr) {
			if (st->esc)
				st->esc = false;
			else if (c == '\\')
				st->esc = true;
			else if (c == '"')
				stream_string_end(st, p, i);
			continue;
		}
		if (stream_class[c] != 0)
			stream_byte(st, p, n, off, i);
	}
	if (st->instr && st->capture)
		stream_key_add(st, p + st->kfrom, n - st->kfrom);
}

void
catalog_stream_check(struct catalog_stream *st, const struct jscheck *from)
{
	st->checking = true;
	if (from != NULL) {
		st->jsc = *from;
		st->ahead = true;
	} else
		jscheck_init(&st->jsc);
	st->tap.depth = 0; /* the top-level value's start */
	st->tap.first = st->urls ? (unsigned char)st->ub.u.from[0] : -1;
	st->tap.fn = stream_event;
	st->tap.arg = st;
}

/*
 * The input checked ahead was followed by stream_scan: go on from the
 * check's events, in the state the scan left.
 */
static void
stream_to_events(struct catalog_stream *st)
{
	st->inkey = st->instr && st->iskey;
	if (st->phase == STREAM_BODY)
		st->tap.depth = st->cfg_depth > 0 ? st->cfg_depth : 1;
	else if (st->phase == STREAM_DONE) {
		st->tap.depth = 0;
		st->tap.first = -1;
	}
}

size_t
catalog_stream_error_at(const struct catalog_stream *st)
{
	return st->jsc.err_at;
}

/*
 * What the check tells of the structure (jscheck_tap): the same steps as
 * stream_byte's, at the depths the merge looks at (DEPTH), and for the
 * strings that may begin with the URL prefix.
 */
static void
stream_event(void *arg, enum jscheck_event ev, const unsigned char *at,
    unsigned d)
{
	struct catalog_stream *st = arg;
	size_t i = (size_t)((const char *)at - st->pbase);

	if (st->phase == STREAM_START)
		st->phase = ev == JSCHECK_OPEN && *at == '{' ? STREAM_BODY :
							       STREAM_DONE;
	if (st->phase == STREAM_DONE) {
		st->tap.depth = 0;
		st->tap.first = -1;
		return;
	}
	st->depth = d;
	switch (ev) {
	case JSCHECK_OPEN:
		stream_open(st, (char)*at, st->poff + i);
		break;
	case JSCHECK_CLOSE:
		stream_close(st, st->poff + i);
		break;
	case JSCHECK_KEY:
		if (st->cfg_next) {
			/* "config" was not an object. */
			st->cfg_next = false;
			st->sp.merge = false;
		}
		st->inkey = true;
		st->capture =
		    d == 1 || (st->cfg_depth > 0 && d == st->cfg_depth);
		st->keylen = 0;
		st->kfrom = i;
		if (d == 1)
			st->top_keys++;
		else if (st->cfg_depth > 0 && d == st->cfg_depth)
			st->cfg_keys++;
		break;
	case JSCHECK_KEY_END:
		st->inkey = false;
		if (st->capture) {
			stream_key_add(st, st->pbase + st->kfrom,
			    i + 1 - st->kfrom);
			stream_key_end(st);
		}
		break;
	case JSCHECK_STRING:
		st->capture = false;
		if (st->cfg_next) {
			st->cfg_next = false;
			st->sp.merge = false;
		}
		if (st->urls) {
			st->matching = true;
			st->mpos = 0;
			st->mat = st->poff + i + 1;
			stream_match(st, (const char *)at + 1,
			    (size_t)(st->pend - (const char *)at) - 1,
			    st->poff + i + 1);
		}
		break;
	}
	st->tap.depth = st->cfg_depth > 0 ? st->cfg_depth : 1;
}

/*
 * Check the N bytes at P (input offset OFF) and follow them: false once
 * the answer cannot be JSON.
 */
static bool
stream_follow(struct catalog_stream *st, const char *p, size_t n, size_t off)
{
	bool ok;

	if (st->matching)
		stream_match(st, p, n, off);
	if (st->phase == STREAM_DONE)
		return jscheck_feed(&st->jsc, p, n);
	st->pbase = p;
	st->pend = p + n;
	st->poff = off;
	st->kfrom = 0; /* a key continued from the last piece */
	ok = jscheck_feed_tap(&st->jsc, p, n, &st->tap);
	if (ok && st->inkey && st->capture)
		stream_key_add(st, p + st->kfrom, n - st->kfrom);
	return ok;
}

bool
catalog_stream_run(struct catalog_stream *st, struct evbuffer *in,
    struct evbuffer *out, bool end)
{
	struct evbuffer_iovec v[16];
	struct evbuffer_ptr pos;
	size_t len = evbuffer_get_length(in), done = 0, keep, i;
	bool ahead = st->ahead; /* IN was checked: only followed */
	struct evbuffer *dst = out;
	int k, nv;

	st->ned = 0;
	st->ahead = false;
	/* The first bytes out were passed on already: left out. */
	if (st->drop > 0) {
		if (st->scratch == NULL &&
		    (st->scratch = evbuffer_new()) == NULL)
			abort();
		dst = st->scratch;
	}
	/* Scan what came since the last call, piece by piece, in place. */
	while (st->scanned < len &&
	    (st->phase != STREAM_DONE || (st->checking && !ahead))) {
		if (evbuffer_ptr_set(in, &pos, st->scanned, EVBUFFER_PTR_SET) ==
			-1 ||
		    (nv = evbuffer_peek(in, len - st->scanned, &pos, v,
			 nitems(v))) < 1)
			break;
		if (nv > (int)nitems(v))
			nv = nitems(v);
		for (k = 0; k < nv && st->scanned < len; k++) {
			if (v[k].iov_len > len - st->scanned)
				v[k].iov_len = len - st->scanned;
			if (!st->checking || ahead)
				stream_scan(st, v[k].iov_base, v[k].iov_len,
				    st->scanned);
			else if (!stream_follow(st, v[k].iov_base, v[k].iov_len,
				     st->scanned))
				goto bad;
			st->scanned += v[k].iov_len;
		}
	}
	if (ahead)
		stream_to_events(st);
	if (end && st->checking && !jscheck_end(&st->jsc, NULL))
		goto bad;
	/* Apply the edits, moving the bytes between them. */
	for (i = 0; i < st->ned; i++) {
		if (st->ed[i].at > done &&
		    evbuffer_remove_buffer(in, dst, st->ed[i].at - done) !=
			(int)(st->ed[i].at - done))
			abort();
		if (st->ed[i].cut > 0)
			evbuffer_drain(in, st->ed[i].cut);
		evbuffer_add(dst, st->ed[i].ins, st->ed[i].inslen);
		stream_log(st, &st->ed[i]);
		if (st->ed[i].own)
			free((void *)(uintptr_t)st->ed[i].ins);
		done = st->ed[i].at + st->ed[i].cut;
	}
	st->ned = 0;
	/* What a URL match not yet decided covers stays, unless it ended. */
	keep = st->matching && !end ? len - st->mat : 0;
	if (len - keep > done)
		evbuffer_remove_buffer(in, dst, len - keep - done);
	st->base += len - keep;
	if (dst != out) {
		i = evbuffer_get_length(dst);
		i = i < st->drop ? i : st->drop;
		evbuffer_drain(dst, i);
		st->drop -= i;
		evbuffer_add_buffer(out, dst);
	}
	st->scanned = keep;
	if (st->matching)
		st->mat -= len - keep;
	if (end)
		st->matching = false;
	return true;
bad:
	/* Not JSON: nothing of this input is passed on. */
	for (i = 0; i < st->ned; i++)
		if (st->ed[i].own)
			free((void *)(uintptr_t)st->ed[i].ins);
	st->ned = 0;
	return false;
}
