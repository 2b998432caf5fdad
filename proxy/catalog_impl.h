/*
 * floe: catalog_impl.h -- private to the catalog (catalog.c,
 * catalog_splice.c, catalog_rewrite.c, catalog_stream.c); nothing else
 * includes it. Owns the
 * merge members kept as JSON text (struct catalog_text, built by
 * catalog.c), and the state of one scan of an answer (struct splice:
 * filled by catalog_splice.c, turned into a new answer by
 * catalog_rewrite.c). Callers use proxy/catalog.h.
 */
#ifndef FLOE_PROXY_CATALOG_IMPL_H
#define FLOE_PROXY_CATALOG_IMPL_H

#include <stdbool.h>
#include <stddef.h>

struct catalog;

/* Merge members a rewrite handles; any past it are left out. */
#define SPLICE_MAX_MERGE 256

/* The merge members as JSON text, escaped once per config change. */
struct catalog_text {
	size_t n;
	struct {
		char *key; /* "key", quotes included */
		size_t klen;
		char *val; /* "value", quotes included */
		size_t vlen;
	} m[];
};

/* Free T (NULL is nothing). */
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

#endif
