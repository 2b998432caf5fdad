/*
 * floe: memo.h -- the memo of checked answers: per side and table, the
 * last answer body a catalog sent that was checked as JSON and found
 * valid, and what floe rewrote it into (with the parameters of that
 * rewrite). An answer byte-identical to the memo's has the same verdict
 * and the same rewrite: the caller compares, the memo only keeps. The
 * key decides where to look, never what is reused. Within a byte budget,
 * least recently used go first. Owns the entries and its references to
 * their buffers; buffers are reference-counted, so one sent to a client
 * outlives its entry's eviction. Pure: no I/O, no clock. Loop thread
 * only.
 */
#ifndef FLOE_CACHE_MEMO_H
#define FLOE_CACHE_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jscheck;
struct memo;

/* Bytes shared by the memo and whoever sends them: read-only once made. */
struct memo_buf {
	char *data;
	size_t len;
	unsigned refs;
};

struct memo_stats {
	uint64_t hits; /* an answer was the memo's: not checked again */
	uint64_t misses; /* it differed (or was new) and was checked */
	uint64_t stores; /* an entry made or refreshed */
	uint64_t evictions; /* dropped for the byte budget */
	uint64_t bytes;
	uint64_t entries;
	uint64_t budget;
};

/* The largest answer an entry holds, whatever the budget. */
#define MEMO_ENTRY_MAX (4u << 20)

/* A new buffer of LEN bytes (contents to be written), one reference. */
struct memo_buf *memo_buf_new(size_t len);
/* A buffer that takes DATA (malloc'd, LEN bytes); one reference. */
struct memo_buf *memo_buf_take(char *data, size_t len);
struct memo_buf *memo_buf_ref(struct memo_buf *);
/* Drop a reference; the last frees. NULL is nothing. */
void memo_buf_unref(struct memo_buf *);

/* BUDGET bytes (0: the memo is off). */
struct memo *memo_new(uint64_t budget);
void memo_free(struct memo *);
/* A new budget (a reload): evicts down to it; 0 empties it. */
void memo_configure(struct memo *, uint64_t budget);
bool memo_is_on(const struct memo *);
/* The largest answer an entry may hold: MEMO_ENTRY_MAX or budget / 4. */
size_t memo_entry_max(const struct memo *);

/*
 * The body last checked valid under SIDE and KEY, with a reference for
 * the caller (memo_buf_unref it), or NULL. Not counted. Also NULL while
 * the entry keeps missing, but for the answers memo_miss would store
 * (see memo_wants): those are compared, the others only checked, so a
 * table whose answers always change pays for a comparison only now and
 * then, and one that stops changing is found so again.
 */
struct memo_buf *memo_get(struct memo *, unsigned side, const void *key,
    size_t keylen);

/* What a hit may reuse of the rewrite. */
enum memo_out {
	MEMO_OUT_NONE, /* nothing for these parameters: rewrite it */
	MEMO_OUT_SAME, /* the rewrite leaves the answer as it is */
	MEMO_OUT_BUF, /* *OUT, referenced for the caller */
};

/*
 * The answer under SIDE and KEY was byte for byte IN, the body memo_get
 * gave: a hit (its miss count starts again). What the rewrite made of IN
 * with the parameters PARAMS (PLEN opaque bytes the caller builds from
 * everything the rewrite depends on), if the entry still holds IN and
 * was rewritten with exactly those.
 */
enum memo_out memo_hit(struct memo *, unsigned side, const void *key,
    size_t keylen, const struct memo_buf *in, const void *params, size_t plen,
    struct memo_buf **out);

/*
 * An answer of LEN bytes under SIDE and KEY was checked valid and was
 * not the memo's (or there was none): count a miss. Whether to store it
 * (memo_put): always for a new key; for an entry that keeps missing,
 * only at its 1st, 2nd, 4th, 8th, ... miss in a row, so that a table
 * whose answers always change costs a copy only now and then. False for
 * an answer larger than memo_entry_max.
 */
bool memo_miss(struct memo *, unsigned side, const void *key, size_t keylen,
    size_t len);

/*
 * Would the next miss under SIDE and KEY be stored (see memo_miss)?
 * Not counted: for a caller that must decide before the answer ends
 * whether to keep a copy of it.
 */
bool memo_wants(struct memo *, unsigned side, const void *key, size_t keylen);

/*
 * Store under SIDE and KEY the answer IN, checked valid, and what the
 * rewrite with PARAMS made of it: OUT, or with OUT NULL, the answer as it
 * was (SAME) or nothing kept (!SAME). The memo takes its own references.
 * Replaces what the entry held (but a streamed rewrite's edits of IN
 * with the same PARAMS: memo_put_edits); its miss count stays.
 */
void memo_put(struct memo *, unsigned side, const void *key, size_t keylen,
    struct memo_buf *in, const void *params, size_t plen, struct memo_buf *out,
    bool same);

/*
 * The edits a streamed rewrite made of IN with the parameters PARAMS
 * (opaque to the memo: the caller's list), with a reference for the
 * caller, if the entry under SIDE and KEY still holds IN and they were
 * made with exactly those; else NULL. Not counted.
 */
struct memo_buf *memo_edits(struct memo *, unsigned side, const void *key,
    size_t keylen, const struct memo_buf *in, const void *params, size_t plen);
/*
 * Keep EDITS (a reference is taken), made of IN with PARAMS, in the
 * entry under SIDE and KEY, if it still holds IN: what a rewrite with
 * other parameters made of it goes. Charged to the budget.
 */
void memo_put_edits(struct memo *, unsigned side, const void *key,
    size_t keylen, const struct memo_buf *in, const void *params, size_t plen,
    struct memo_buf *edits);

void memo_get_stats(const struct memo *, struct memo_stats *);

/*
 * An answer compared with a memo's body as it arrives, and checked as
 * JSON (lib/jscheck.h) from its first difference on: while its bytes are
 * the memo's at the same offsets they are not fed to the check; at the
 * first one that differs (or past the memo's end), the check takes the
 * memo's bytes before it (the answer's own) and goes on with the
 * answer's. The verdict and the offset of a wrong byte are so exactly
 * the check's of the answer alone. Set up with memo_cmp_init.
 */
struct memo_cmp {
	struct memo_buf *memo; /* a reference; NULL: checking */
	size_t at; /* bytes compared equal */
};

/* Compare with MEMO (a reference is taken), or check only (NULL). */
void memo_cmp_init(struct memo_cmp *, struct memo_buf *memo);
/* The next N bytes of the answer. False once JS found it wrong. */
bool memo_cmp_feed(struct memo_cmp *, struct jscheck *js, const void *p,
    size_t n);
/*
 * The answer ended. True when it was the memo's, to its last byte (JS
 * was given nothing: it is JSON as the memo's was); else JS has had all
 * of it, for jscheck_end.
 */
bool memo_cmp_end(struct memo_cmp *, struct jscheck *js);
/* Compare no more: JS (unless NULL) gets the bytes compared so far. */
void memo_cmp_stop(struct memo_cmp *, struct jscheck *js);

#endif
