/*
 * floe: etag.c -- floe's entity tags: the upstream ETag wrapped with the
 * side that produced it and the object's route version, and the reverse
 * for If-None-Match, which keeps only the tags still valid for the route.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "proxy/etag.h"

#define ETAG_MAGIC "fl1."

/* One parsed entity-tag: W/ flag and the opaque part between the quotes. */
struct etag_tag {
	bool weak;
	const char *opaque;
	size_t len;
};

static bool etag_is_ows(char);
static bool etag_is_opaque_char(unsigned char);
static size_t etag_opaque_end(const char *, size_t, size_t);
static int etag_parse(const char *, size_t, size_t *, struct etag_tag *);
static char etag_side_char(enum route_side);
static int etag_mint_new(const char *, size_t, enum route_side, uint64_t,
    char *, size_t);

/*
 * The last ETag minted, with what it was minted from: a catalog answers a
 * table that has not changed with the same ETag, load after load.
 */
static struct {
	char up[ETAG_MAX];
	size_t uplen; /* 0: none */
	enum route_side side;
	uint64_t version;
	char out[ETAG_MAX];
	size_t len; /* strlen(out) */
} etag_last;

/* Optional whitespace (RFC 9110 OWS). */
static bool
etag_is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* A byte allowed inside the quotes: no '"', no control characters. */
static bool
etag_is_opaque_char(unsigned char c)
{
	return c != '"' && c >= 0x20 && c != 0x7f;
}

/*
 * The first byte at or after S[I] (of LEN) that may not be inside the
 * quotes, or LEN: 16 bytes at a time with SSE2 ('"', 0x7f, or below
 * 0x20 compared unsigned), the rest one by one. Every answer's ETag and
 * every If-None-Match is scanned.
 */
static size_t
etag_opaque_end(const char *s, size_t len, size_t i)
{
#ifdef __SSE2__
	const __m128i q = _mm_set1_epi8('"'), del = _mm_set1_epi8(0x7f),
		      ctl = _mm_set1_epi8(0x1f);
	__m128i x, bad;
	unsigned m;

	for (; len - i >= 16; i += 16) {
		x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		bad = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q),
				       _mm_cmpeq_epi8(x, del)),
		    _mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x));
		if ((m = (unsigned)_mm_movemask_epi8(bad)) != 0)
			return i + (size_t)__builtin_ctz(m);
	}
#endif
	while (i < len && etag_is_opaque_char((unsigned char)s[i]))
		i++;
	return i;
}

/*
 * Parse one entity-tag at S[*POS] (no surrounding whitespace), leaving *POS
 * just past its closing quote. 0, or -1 if there is none.
 */
static int
etag_parse(const char *s, size_t len, size_t *pos, struct etag_tag *t)
{
	size_t i = *pos;

	t->weak = false;
	if (len - i >= 2 && s[i] == 'W' && s[i + 1] == '/') {
		t->weak = true;
		i += 2;
	}
	if (i >= len || s[i] != '"')
		return -1;
	t->opaque = s + ++i;
	i = etag_opaque_end(s, len, i);
	if (i >= len || s[i] != '"')
		return -1;
	t->len = (size_t)(s + i - t->opaque);
	*pos = i + 1;
	return 0;
}

/* The letter a side has in floe's tags. */
static char
etag_side_char(enum route_side side)
{
	return side == ROUTE_LAKEHOUSE ? 'l' : 'w';
}

/* Mint floe's ETag for the upstream tag UP, served by SIDE at VERSION. */
int
etag_mint(const char *up, size_t uplen, enum route_side side, uint64_t version,
    char *out, size_t outlen)
{
	if (uplen > 0 && uplen == etag_last.uplen && side == etag_last.side &&
	    version == etag_last.version &&
	    memcmp(up, etag_last.up, uplen) == 0) {
		if (etag_last.len >= outlen)
			return -1;
		memcpy(out, etag_last.out, etag_last.len + 1);
		return 0;
	}
	if (etag_mint_new(up, uplen, side, version, out, outlen) == -1)
		return -1;
	if (uplen < sizeof(etag_last.up)) {
		etag_last.len = strlen(out);
		memcpy(etag_last.out, out, etag_last.len + 1);
		memcpy(etag_last.up, up, uplen);
		etag_last.uplen = uplen;
		etag_last.side = side;
		etag_last.version = version;
	}
	return 0;
}

/* etag_mint without the last one remembered. */
static int
etag_mint_new(const char *up, size_t uplen, enum route_side side,
    uint64_t version, char *out, size_t outlen)
{
	struct etag_tag t;
	size_t pos = 0, need;
	char hex[16], *o;
	int n;

	while (uplen > 0 && etag_is_ows(up[uplen - 1]))
		uplen--;
	while (pos < uplen && etag_is_ows(up[pos]))
		pos++;
	if (etag_parse(up, uplen, &pos, &t) == -1 || pos != uplen)
		return -1;
	/* Built by hand: this runs for every answer with an ETag. */
	n = 0;
	do {
		hex[n++] = "0123456789abcdef"[version & 15];
		version >>= 4;
	} while (version != 0);
	need =
	    (t.weak ? 2 : 0) + 2 + sizeof(ETAG_MAGIC) - 1 + 2 + n + 1 + t.len;
	if (need >= outlen || need >= ETAG_MAX)
		return -1;
	o = out;
	if (t.weak) {
		*o++ = 'W';
		*o++ = '/';
	}
	*o++ = '"';
	memcpy(o, ETAG_MAGIC, sizeof(ETAG_MAGIC) - 1);
	o += sizeof(ETAG_MAGIC) - 1;
	*o++ = etag_side_char(side);
	*o++ = '.';
	while (n > 0)
		*o++ = hex[--n];
	*o++ = '.';
	memcpy(o, t.opaque, t.len);
	o += t.len;
	*o++ = '"';
	*o = '\0';
	return 0;
}

/*
 * Translate an If-None-Match list. Each tag floe minted for SIDE and
 * VERSION becomes its upstream tag again; any other tag (another side, an
 * older route, not floe's) is dropped: it cannot match what the upstream
 * would answer for this route, and forwarding it could earn a wrong 304.
 */
int
etag_unmint(const char *inm, size_t len, enum route_side side, uint64_t version,
    char *out, size_t outlen)
{
	char want[32];
	struct etag_tag t;
	size_t pos = 0, wlen, o = 0;
	bool first = true;
	int n;

	if (outlen == 0)
		return -1;
	out[0] = '\0';
	n = snprintf(want, sizeof(want), ETAG_MAGIC "%c.%" PRIx64 ".",
	    etag_side_char(side), version);
	wlen = (size_t)n;
	while (len > 0 && etag_is_ows(inm[len - 1]))
		len--;
	while (pos < len && etag_is_ows(inm[pos]))
		pos++;
	if (len - pos == 1 && inm[pos] == '*') {
		if (outlen < 2)
			return -1;
		memcpy(out, "*", 2);
		return 1;
	}
	if (pos == len)
		return -1;
	for (;;) {
		/* Empty list elements (", ,") are allowed (RFC 9110 5.6.1). */
		while (pos < len && (inm[pos] == ',' || etag_is_ows(inm[pos])))
			pos++;
		if (pos == len)
			break;
		if (etag_parse(inm, len, &pos, &t) == -1)
			return -1;
		while (pos < len && etag_is_ows(inm[pos]))
			pos++;
		if (pos < len && inm[pos] != ',')
			return -1;
		if (t.len < wlen || memcmp(t.opaque, want, wlen) != 0)
			continue;
		n = snprintf(out + o, outlen - o, "%s%s\"%.*s\"",
		    first ? "" : ", ", t.weak ? "W/" : "", (int)(t.len - wlen),
		    t.opaque + wlen);
		if (n < 0 || (size_t)n >= outlen - o)
			return -1;
		o += (size_t)n;
		first = false;
	}
	return (int)o;
}

/* Is a tag of INM floe's, minted for the other side? */
bool
etag_is_other_side(const char *inm, size_t len, enum route_side side)
{
	struct etag_tag t;
	size_t pos = 0, m = sizeof(ETAG_MAGIC) - 1;
	char other = etag_side_char(
	    side == ROUTE_LAKEHOUSE ? ROUTE_WAREHOUSE : ROUTE_LAKEHOUSE);

	while (pos < len) {
		while (pos < len && (inm[pos] == ',' || etag_is_ows(inm[pos])))
			pos++;
		if (pos == len || etag_parse(inm, len, &pos, &t) == -1)
			return false;
		if (t.len > m + 1 && memcmp(t.opaque, ETAG_MAGIC, m) == 0 &&
		    t.opaque[m] == other)
			return true;
	}
	return false;
}
