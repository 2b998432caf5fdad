/*
 * floe: catalog.h -- what floe knows of one upstream catalog from its
 * /v1/config answer (prefix, namespace separator, defaults, overrides), and
 * the answer rewrites that depend on it: merging the catalog config into
 * a LoadTableResult and pointing absolute URLs under the upstream's base
 * back at floe. Pure: no I/O.
 */
#ifndef FLOE_PROXY_CATALOG_H
#define FLOE_PROXY_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;

typedef struct json_t json_t;
struct catalog_text;
struct catalog_stream;
struct jscheck;
struct memo_buf;

struct catalog {
	bool known; /* a config answer was read once */
	int64_t fetched_ms; /* when it was last read */
	char *prefix; /* upstream prefix as it goes in the path, or NULL */
	char *separator; /* decoded namespace-separator, or NULL (0x1f) */
	json_t *config; /* the whole answer, as received */
	/*
	 * defaults, then overrides, minus prefix, uri and endpoints: what a
	 * routed LoadTable answer gets merged under its "config".
	 */
	json_t *merge;
	struct catalog_text *text; /* merge as JSON text, for the splice */
	uint64_t generation; /* bumped whenever the config changes */
	char *last_error; /* last failure to read it, or NULL */
};

struct catalog *catalog_new(void);
void catalog_free(struct catalog *);
/*
 * Take a /v1/config answer. Returns 1 if the config changed (generation
 * bumped), 0 if identical, -1 with ERR if it is not a CatalogConfig.
 */
int catalog_update(struct catalog *, const char *body, size_t len,
    int64_t now_ms, char *err, size_t errlen);

/* Does C have config to merge into LoadTable answers? */
bool catalog_has_merge(const struct catalog *);

/*
 * Rewrite an upstream answer body for the client:
 * - MERGE: merge C->merge under the top-level "config" (the table's own
 *   keys win), for LoadTableResult answers;
 * - absolute URLs (string values anywhere) starting with UPSTREAM_BASE +
 *   "/v1/" + the upstream prefix (or UPSTREAM_BASE + "/v1/" without one)
 *   become FLOE_BASE + "/v1/" + PINNED_PREFIX + the rest, so follow-up
 *   calls come back through floe, to the same side.
 * Of two top-level "config" members the first decides (merged into when
 * an object, the merge off when not), unless the body holds no upstream
 * URL: the merge is then found from the end, and the last decides.
 * Returns a new body (caller frees, length in *OUTLEN), or NULL if nothing
 * changed or the body is not a JSON object (then it is passed on as is).
 */
char *catalog_rewrite(const struct catalog *, bool merge, const char *body,
    size_t len, const char *upstream_base, const char *floe_base,
    const char *pinned_prefix, size_t *outlen);
/*
 * The config merge alone, for an answer too large to rewrite whole that
 * holds no upstream URL (the caller has looked): TAIL is its last TLEN of
 * LEN bytes. 1 with the text to insert (*INS, caller frees; *INSLEN bytes)
 * at offset *AT of the answer; 0 if there is nothing to merge; -1 if the
 * tail does not decide it: then catalog_rewrite the whole answer. Spliced
 * in, the result is byte for byte what catalog_rewrite gives.
 */
int catalog_merge_tail(const struct catalog *, const char *tail, size_t tlen,
    size_t len, const char *upstream_base, const char *floe_base,
    const char *pinned_prefix, char **ins, size_t *inslen, size_t *at);
/*
 * catalog_rewrite for an answer passed on as it arrives, in pieces cut
 * anywhere: the same bytes come out, for every answer that is JSON. (But
 * one: with a second top-level "config", the first decides here, where
 * catalog_rewrite of an answer that holds no upstream URL merges into
 * the last, which it reads from the end.) NULL when the upstream URL
 * cannot be matched piece by piece (it holds a quote or a backslash):
 * such answers are rewritten whole.
 */
struct catalog_stream *catalog_stream_new(const struct catalog *, bool merge,
    const char *upstream_base, const char *floe_base,
    const char *pinned_prefix);
/*
 * Check the answer as JSON too (lib/jscheck.h): in one pass with the
 * rewrite, the check's scan telling it where the structure is. Before the
 * first catalog_stream_run. FROM NULL: from the answer's first byte;
 * else the check as it was after the bytes the first call's input holds
 * (checked already: those are followed by the rewrite alone).
 */
void catalog_stream_check(struct catalog_stream *, const struct jscheck *from);
/*
 * IN holds the answer's next bytes: move to OUT what the client gets for
 * them. Bytes a URL prefix cut by the end of IN may yet cover (fewer than
 * the prefix's length) stay at IN's start for the next call, unless END:
 * no byte follows. False when the answer is checked and cannot be JSON
 * (catalog_stream_error_at says where): nothing of IN was moved; the
 * stream is then only to be freed.
 */
bool catalog_stream_run(struct catalog_stream *, struct evbuffer *in,
    struct evbuffer *out, bool end);
/* After a false catalog_stream_run: the offset of the first wrong byte. */
size_t catalog_stream_error_at(const struct catalog_stream *);
void catalog_stream_free(struct catalog_stream *);
/* One edit of an answer: CUT bytes at offset AT become INSLEN bytes. */
struct catalog_edit {
	size_t at;
	size_t cut;
	size_t inslen;
};

/*
 * The edits the stream made so far, in the answer's offsets, with the
 * bytes they insert, as a list to keep (a new buffer, caller frees,
 * *LEN bytes) and replay on an answer byte for byte the same
 * (catalog_replay_*), made with the same merge, upstream, floe base and
 * pinned prefix.
 */
char *catalog_stream_edits(const struct catalog_stream *, size_t *len);

/*
 * An answer passed on with the edits a stream made of an answer with
 * the same bytes (catalog_stream_edits), while it is compared with them:
 * no scan. The replay lags behind the bytes compared equal by the URL
 * prefix's length less one, and never applies an edit before all the
 * bytes it cuts were compared: nothing passed on could be changed by a
 * byte after the first difference (see catalog_stream_resume).
 */
struct catalog_replay {
	const char *ed; /* the list (held by the caller) */
	struct memo_buf *same; /* the list's answer (held by the caller) */
	size_t n, i; /* edits, the next one */
	size_t lag;
	size_t ins; /* the next one's inserted bytes, in ED */
	size_t at; /* the answer's bytes passed on (taken from the input) */
};

/*
 * Replay ED (LEN bytes, from catalog_stream_edits) on answers the same as
 * SAME, the answer it was made of: false if ED is not a list. The bytes
 * passed on as they are are SAME's, referenced.
 */
bool catalog_replay_init(struct catalog_replay *, const char *ed, size_t len,
    struct memo_buf *same);
/*
 * IN holds the answer from offset RP->at on, the same as the list's
 * answer up to offset EQUAL: move to OUT what can be passed on. END: the
 * answer ended there, the same to its last byte: all of it.
 */
void catalog_replay_run(struct catalog_replay *, struct evbuffer *in,
    struct evbuffer *out, size_t equal, bool end);
/*
 * The answer replayed differs from the list's from some byte on (at or
 * past AT + the lag, or it is shorter or longer): go on with the stream
 * ST, new, as if it had had the answer's first AT bytes, which are
 * MEMO's: their output, passed on already, is left out. IN is to hold
 * the answer's bytes from AT on (empty now): ST may put the last few
 * of MEMO's before them. Checked (catalog_stream_check, NULL), ST checks
 * MEMO's bytes too, from the first.
 */
void catalog_stream_resume(struct catalog_stream *, struct evbuffer *in,
    const char *memo, size_t at);

/*
 * Does BODY hold S (N bytes)? Each piece of it is searched in place and
 * each seam between two pieces through a small window: a large answer is
 * never made contiguous to be searched.
 */
bool catalog_body_has(struct evbuffer *body, const char *s, size_t n);

#endif
