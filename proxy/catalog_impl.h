/*
 * floe: catalog_impl.h -- private to the catalog (catalog.c,
 * catalog_splice.c, catalog_rewrite.c, catalog_stream.c,
 * catalog_stream_skip.c, catalog_edits.c); nothing else includes it.
 * Owns the merge members kept as JSON text (struct catalog_text, built by
 * catalog.c), the state of one scan of an answer (struct splice: filled
 * by catalog_splice.c, turned into a new answer by catalog_rewrite.c),
 * and that of a streamed rewrite (struct catalog_stream). Callers use
 * proxy/catalog.h.
 */
#ifndef FLOE_PROXY_CATALOG_IMPL_H
#define FLOE_PROXY_CATALOG_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/jscheck.h"
#include "proxy/catalog.h"

struct evbuffer;

/* Merge members a rewrite handles; any past it are left out. */
#define SPLICE_MAX_MERGE 256

/* The merge members as JSON text, escaped once per config change. */
struct catalog_text {
	/*
	 * Held by the catalog and by each stream begun while it was the
	 * catalog's (catalog_text_ref): never changed once made.
	 */
	unsigned refs;
	size_t n;
	struct {
		char *key; /* "key", quotes included */
		size_t klen;
		char *val; /* "value", quotes included */
		size_t vlen;
	} m[];
};

/* Another holder of T; T. */
struct catalog_text *catalog_text_ref(struct catalog_text *);
/* Drop a hold on T, freed with the last (NULL is nothing). */
void catalog_text_free(struct catalog_text *);

/* What a string value is rewritten from and to. */
struct catalog_urls {
	const char *from; /* UPSTREAM_BASE "/v1/" [prefix "/"] */
	size_t fromlen;
	const char *to; /* FLOE_BASE "/v1/" [PINNED "/"] */
	size_t tolen;
};

/* Room for a rewritten URL prefix on the stack. */
#define CATALOG_URL_BUF 512

/* The URL prefixes of one rewrite, and what holds them. */
struct catalog_urlbuf {
	struct catalog_urls u;
	char *from, *to; /* heap copies of long ones, or NULL */
	char frombuf[CATALOG_URL_BUF], tobuf[CATALOG_URL_BUF];
};

struct splice_edit {
	size_t at; /* offset in the body */
	size_t cut; /* bytes of the body replaced there */
	int kind; /* SPLICE_URL or SPLICE_MERGE */
};

enum { SPLICE_URL, SPLICE_MERGE };

/* One scan of an answer. */
struct splice {
	const char *body, *p, *end;
	const struct catalog_urls *u; /* NULL: no URL in the body */
	const struct catalog_urls *mu; /* for merged values, or NULL */
	/* Merge keys as they appear in JSON (quotes included). */
	const struct catalog *c;
	bool merge;
	bool partial; /* body is the tail of a longer answer */
	bool present[SPLICE_MAX_MERGE];
	bool config_seen;
	size_t config_at; /* the '}' that closes "config" */
	bool config_empty;
	size_t top_at; /* the '}' that closes the top level */
	bool top_empty;
	struct splice_edit *edits, stack[16];
	size_t nedits, cap;
};

/* catalog_splice.c */
void splice_init(struct splice *, const struct catalog *, bool merge,
    const char *body, size_t len);
void splice_clear(struct splice *);
void splice_ws(struct splice *);
int splice_value(struct splice *, int depth, int role);
int splice_tail(struct splice *);
void splice_mark_key(struct splice *, const char *, size_t);

/* catalog_rewrite.c */
char *splice_insertion(struct splice *, size_t *, size_t *);
size_t catalog_base_len(const char *, const char *);
void catalog_urls_make(struct catalog_urlbuf *, const struct catalog *,
    const char *, size_t, const char *, const char *);

/* catalog_stream.c, catalog_stream_skip.c, catalog_edits.c */
/* Where the scan is. */
enum stream_phase {
	STREAM_START, /* whitespace before the answer's first byte */
	STREAM_BODY, /* inside the top-level object */
	STREAM_DONE, /* past it, or not an object: the rest passes as is */
};

/* One edit of the bytes the input holds: CUT bytes at AT become INS. */
struct stream_edit {
	size_t at;
	size_t cut;
	const char *ins;
	size_t inslen;
	bool own; /* INS is freed once applied */
};

struct catalog_stream {
	/*
	 * The merge as it was when the answer began (its text held: the
	 * catalog's config may be read anew while a large answer streams).
	 */
	struct catalog cat;
	struct catalog_urlbuf ub;
	bool urls; /* URLs may be rewritten (ub is built) */
	struct splice sp; /* the merge: keys seen, config found */
	enum stream_phase phase;
	size_t scanned; /* bytes at the input's start already scanned */
	unsigned depth;
	uint64_t objs[JSCHECK_MAX_DEPTH / 64]; /* bit set: an object */
	bool want_key; /* the next string in this object is a key */
	bool instr, iskey;
	bool esc; /* the next byte is escaped (in a string) */
	/* The key being read, when its level matters (1, or config's). */
	bool capture;
	char *key;
	size_t keycap, keylen;
	size_t kfrom; /* where the key begins in the piece being scanned */
	/* A value string whose start may be the upstream URL prefix. */
	bool matching;
	size_t mpos; /* prefix bytes matched */
	size_t mat; /* input offset of the string's first byte */
	bool cfg_next; /* the next value is the first "config"'s */
	unsigned cfg_depth; /* the config object's depth, inside it */
	size_t cfg_keys, top_keys;
	struct stream_edit *ed;
	size_t ned, edcap;
	/*
	 * Checked as JSON too (catalog_stream_check): the check's scan
	 * tells where the structure is (stream_event), in place of
	 * stream_scan's.
	 */
	bool checking;
	bool ahead; /* the next input was checked already (by the pool) */
	bool inkey; /* in a key the check told of */
	struct jscheck jsc;
	struct jscheck_tap tap;
	const char *pbase, *pend; /* the piece being checked */
	size_t poff; /* its input offset */
	/*
	 * The edits made so far, in the answer's offsets (BASE: the
	 * answer's offset of the input's first byte), for the memo
	 * (catalog_stream_edits): LOG's entries, their inserted bytes in
	 * LOGINS.
	 */
	size_t base;
	struct catalog_edit *log;
	size_t nlog, logcap;
	char *logins;
	size_t loginslen, loginscap;
	/* Output bytes not to pass on (catalog_stream_resume). */
	size_t drop;
	struct evbuffer *scratch;
};

#if defined(__SSE2__)
size_t stream_skip(struct catalog_stream *, const char *, size_t);
#endif

#endif
