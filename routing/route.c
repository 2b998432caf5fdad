/*
 * floe: route.c -- objects and namespace rules: their canonical keys, their
 * text forms, and resolution of an object to the side that serves it
 * (object entry, then the longest namespace rule, then the warehouse).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/shortcopy.h"
#include "lib/units.h"
#include "routing/route.h"
#include "routing/store.h"
#include "routing/wave.h"

#define ROUTE_TEXT_MAX 2048
#define ROUTE_MEMO_SLOTS 512 /* a power of 2 */
#define ROUTE_MEMO_KEY 96 /* longer keys are resolved every time */

/*
 * The route memo: what the store said of an object (before the side is
 * decided, which depends on the client), direct-mapped by its key, kept
 * with the store and the snapshot it was read in. An entry is used only
 * while that snapshot is still the last committed one (store_snapshot,
 * read from LMDB's meta pages without a txn): every change to a route, a
 * rule or a wave is a write txn that commits, moving the last txn id,
 * before whoever made it is answered, so any resolve after an admin's
 * acknowledgement (or a worker's, when the master writes) misses and
 * reads the store. Store errors are never kept, and nothing is used while
 * the store is unhealthy or in cluster mode's capture (store_snapshot 0).
 * The serial tells a reopened store (a reload, a test) from the last one.
 */
struct route_memo {
	uint64_t serial; /* store_serial */
	uint64_t snap; /* store_read_snapshot; 0: empty */
	uint64_t version;
	int64_t since_ms;
	uint32_t wave;
	uint16_t klen;
	uint16_t mnslen; /* ROUTE_WHY_RULE: the rule's namespace length */
	uint8_t why;
	uint8_t state;
	uint8_t pct;
	bool assigned;
	unsigned char key[ROUTE_MEMO_KEY];
};
static struct route_memo route_memo[ROUTE_MEMO_SLOTS];

static bool route_name_ok(const char *, size_t);
static bool route_is_plain(const unsigned char *, size_t);
static bool route_is_unreserved(unsigned char);
static int route_decode(const char *, size_t, char *, size_t, size_t *, char *,
    size_t);
static int route_build(const char *, size_t, const char *, size_t, bool,
    struct route_obj *);
static size_t route_ns_len(const struct route_obj *);
static void route_out(char *, size_t, size_t *, const void *, size_t);
static void route_out_enc(char *, size_t, size_t *, const unsigned char *,
    size_t);
static uint64_t route_mix(uint64_t);
static uint64_t route_canary_hash(const struct route_obj *, uint64_t);
static void route_decide(struct route_result *, const struct route_obj *,
    uint64_t);
static struct route_memo *route_memo_slot(const struct route_obj *);
static bool route_memo_get(struct store *, const struct route_obj *,
    struct route_result *);
static void route_memo_put(struct store *, const struct route_obj *, uint64_t,
    const struct route_result *);

const char route_side_names[ROUTE_NSIDES][ROUTE_SIDE_NAME_LEN + 1] = {
	[ROUTE_WAREHOUSE] = "warehouse",
	[ROUTE_LAKEHOUSE] = "lakehouse",
};

/* A name (one level or the table) is non-empty and holds no control byte. */
static bool
route_name_ok(const char *name, size_t len)
{
	size_t i;

	if (len == 0)
		return false;
	for (i = 0; i < len; i++) {
		if ((unsigned char)name[i] < 0x20)
			return false;
	}
	return true;
}

/* RFC 3986 unreserved, the bytes the REST form keeps as they are. */
static bool
route_is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
	    c == '~';
}

/*
 * A name the dot form can carry unchanged: unreserved bytes but the dot,
 * and not "*" (which would read back as a rule).
 */
static bool
route_is_plain(const unsigned char *name, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (name[i] == '.' || !route_is_unreserved(name[i]))
			return false;
	}
	return true;
}

/*
 * Percent-decode SRC of LEN bytes, appending to OUT (capacity CAP) at
 * *OFF. 0, or -1 with a message in ERR.
 */
static int
route_decode(const char *src, size_t len, char *out, size_t cap, size_t *off,
    char *err, size_t errlen)
{
	size_t i;
	int hi, lo;
	unsigned char c;

	for (i = 0; i < len; i++) {
		c = src[i];
		if (c == '%') {
			if (i + 2 >= len) {
				snprintf(err, errlen,
				    "bad percent escape in \"%.*s\"", (int)len,
				    src);
				return -1;
			}
			hi = units_hexval((unsigned char)src[i + 1]);
			lo = units_hexval((unsigned char)src[i + 2]);
			if (hi < 0 || lo < 0) {
				snprintf(err, errlen,
				    "bad percent escape in \"%.*s\"", (int)len,
				    src);
				return -1;
			}
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
		}
		if (c < 0x20) {
			snprintf(err, errlen,
			    "\"%.*s\" holds a control character", (int)len,
			    src);
			return -1;
		}
		if (*off >= cap) {
			snprintf(err, errlen, "object name too long");
			return -1;
		}
		out[(*off)++] = (char)c;
	}
	return 0;
}

/*
 * Build a key from NS (levels joined by 0x1f) and, for a table, NAME. Every
 * level and the name must be valid; the key must fit.
 */
static int
route_build(const char *ns, size_t nslen, const char *name, size_t namelen,
    bool rule, struct route_obj *obj)
{
	size_t i, start = 0, len;

	if (nslen == 0)
		return -1;
	/*
	 * One pass: a byte below 0x20 ends a level (0x1f) or makes the key
	 * invalid, and no level may be empty (route_name_ok's rule).
	 */
	for (i = 0; i < nslen; i++) {
		if ((unsigned char)ns[i] >= 0x20)
			continue;
		if (ns[i] != ROUTE_SEP_LEVEL || i == start)
			return -1;
		start = i + 1;
	}
	if (start == nslen)
		return -1;
	if (!rule && !route_name_ok(name, namelen))
		return -1;
	len = nslen + 1 + (rule ? 0 : namelen);
	if (len > sizeof(obj->key))
		return -1;
	short_copy(obj->key, ns, nslen);
	obj->key[nslen] = rule ? ROUTE_SEP_RULE : ROUTE_SEP_TABLE;
	if (!rule)
		short_copy(obj->key + nslen + 1, name, namelen);
	obj->len = len;
	obj->rule = rule;
	return 0;
}

/* Build a table key. */
int
route_obj_table(const char *ns, size_t nslen, const char *table,
    size_t tablelen, struct route_obj *obj)
{
	return route_build(ns, nslen, table, tablelen, false, obj);
}

/* Build a rule key for namespace NS. */
int
route_obj_rule(const char *ns, size_t nslen, struct route_obj *obj)
{
	return route_build(ns, nslen, NULL, 0, true, obj);
}

/* Rebuild an object from a stored key, checking its shape. */
int
route_obj_from_key(const void *key, size_t len, struct route_obj *obj)
{
	const char *k = key;
	const char *sep;

	if (len < 2)
		return -1;
	if ((unsigned char)k[len - 1] == ROUTE_SEP_RULE)
		return route_obj_rule(k, len - 1, obj);
	if ((sep = memchr(k, ROUTE_SEP_TABLE, len)) == NULL)
		return -1;
	return route_obj_table(k, (size_t)(sep - k), sep + 1,
	    len - (size_t)(sep - k) - 1, obj);
}

size_t
route_key_format(const void *key, size_t len, char *buf, size_t buflen)
{
	const unsigned char *k = key;
	struct route_obj obj;
	size_t i, tables = 0;
	bool empty = true;

	/*
	 * A table key whose names are plain is its dot form, byte for byte,
	 * separators made dots: written from the key at once.
	 */
	for (i = 0; i < len; i++) {
		if (k[i] == ROUTE_SEP_LEVEL || k[i] == ROUTE_SEP_TABLE) {
			if (empty || tables > 0)
				break;
			tables += k[i] == ROUTE_SEP_TABLE;
			empty = true;
		} else if (k[i] != '.' && route_is_unreserved(k[i]))
			empty = false;
		else
			break;
	}
	if (i == len && tables == 1 && !empty && len < buflen) {
		for (i = 0; i < len; i++)
			buf[i] =
			    k[i] == ROUTE_SEP_LEVEL || k[i] == ROUTE_SEP_TABLE ?
			    '.' :
			    (char)k[i];
		buf[len] = '\0';
		return len;
	}
	if (buflen > 0)
		buf[0] = '\0';
	if (route_obj_from_key(key, len, &obj) == -1)
		return 0;
	route_obj_format(&obj, buf, buflen);
	return strlen(buf);
}

/*
 * Parse "db.orders", "a.b.orders", "db.*", or the REST form "my.db%1Forders"
 * and "my.db%1F*" (levels percent-encoded, joined by %1F). Any "%1F" makes
 * the text the REST form; otherwise it is the dot form, taken literally
 * ("db.50%off" is the table "50%off"). route_obj_format writes the REST
 * form for any name the dot form could misread, so its output parses back
 * to the same key.
 */
int
route_obj_parse(const char *text, struct route_obj *obj, char *err,
    size_t errlen)
{
	char ns[STORE_KEY_MAX], name[STORE_KEY_MAX];
	const char *p, *end, *next, *last;
	size_t tlen, nslen = 0, namelen = 0, seplen;
	bool rest, rule;

	tlen = strlen(text);
	if (tlen == 0) {
		snprintf(err, errlen, "empty object name");
		return -1;
	}
	if (tlen > ROUTE_TEXT_MAX) {
		snprintf(err, errlen, "object name too long (%zu bytes)", tlen);
		return -1;
	}
	rest = strstr(text, "%1F") != NULL || strstr(text, "%1f") != NULL;
	seplen = rest ? 3 : 1;
	end = text + tlen;

	/* The last part is the table or "*". */
	for (last = NULL, p = text; p < end; p++) {
		if (rest ? (end - p >= 3 && p[0] == '%' && p[1] == '1' &&
			       (p[2] == 'F' || p[2] == 'f')) :
			   *p == '.')
			last = p;
	}
	if (last == NULL) {
		snprintf(err, errlen,
		    "\"%s\": an object is a namespace and a table "
		    "(\"db.orders\") or a rule (\"db.*\")",
		    text);
		return -1;
	}
	rule = end - (last + seplen) == 1 && last[seplen] == '*';

	for (p = text; p < last + seplen; p = next + seplen) {
		if (rest) {
			for (next = p; next < last; next++) {
				if (next[0] == '%' && next[1] == '1' &&
				    (next[2] == 'F' || next[2] == 'f'))
					break;
			}
		} else if ((next = memchr(p, '.', (size_t)(last - p))) == NULL)
			next = last;
		if (next == p) {
			snprintf(err, errlen, "\"%s\": empty namespace level",
			    text);
			return -1;
		}
		if (nslen > 0) {
			if (nslen >= sizeof(ns))
				goto toolong;
			ns[nslen++] = ROUTE_SEP_LEVEL;
		}
		if (rest) {
			if (route_decode(p, (size_t)(next - p), ns, sizeof(ns),
				&nslen, err, errlen) == -1)
				return -1;
		} else {
			if (!route_name_ok(p, (size_t)(next - p))) {
				snprintf(err, errlen,
				    "\"%s\": a name holds a control character",
				    text);
				return -1;
			}
			if (nslen + (size_t)(next - p) > sizeof(ns))
				goto toolong;
			short_copy(ns + nslen, p, (size_t)(next - p));
			nslen += (size_t)(next - p);
		}
		if (next == last)
			break;
	}

	if (!rule) {
		p = last + seplen;
		if (p == end) {
			snprintf(err, errlen, "\"%s\": empty table name", text);
			return -1;
		}
		if (rest) {
			if (route_decode(p, (size_t)(end - p), name,
				sizeof(name), &namelen, err, errlen) == -1)
				return -1;
		} else {
			if (!route_name_ok(p, (size_t)(end - p))) {
				snprintf(err, errlen,
				    "\"%s\": a name holds a control character",
				    text);
				return -1;
			}
			namelen = (size_t)(end - p);
			if (namelen > sizeof(name))
				goto toolong;
			short_copy(name, p, namelen);
		}
	}
	if (route_build(ns, nslen, name, namelen, rule, obj) == -1)
		goto toolong;
	return 0;

toolong:
	snprintf(err, errlen,
	    "\"%.64s...\": object name too long (at most %d "
	    "bytes)",
	    text, STORE_KEY_MAX);
	return -1;
}

/* Length of the namespace part of OBJ's key (before the 0x1e or 0x1d). */
static size_t
route_ns_len(const struct route_obj *obj)
{
	const unsigned char *sep;

	if (obj->rule)
		return obj->len - 1;
	sep = memchr(obj->key, ROUTE_SEP_TABLE, obj->len);
	return sep == NULL ? 0 : (size_t)(sep - obj->key);
}

/* Append LEN bytes of SRC to BUF at *OFF, truncating, NUL-terminated. */
static void
route_out(char *buf, size_t cap, size_t *off, const void *src, size_t len)
{
	if (cap == 0)
		return;
	if (*off + len > cap - 1)
		len = cap - 1 > *off ? cap - 1 - *off : 0;
	short_copy(buf + *off, src, len);
	*off += len;
	buf[*off] = '\0';
}

/* Append SRC percent-encoded (unreserved bytes kept). */
static void
route_out_enc(char *buf, size_t cap, size_t *off, const unsigned char *src,
    size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char esc[3];
	size_t i;

	for (i = 0; i < len; i++) {
		if (route_is_unreserved(src[i])) {
			route_out(buf, cap, off, src + i, 1);
			continue;
		}
		esc[0] = '%';
		esc[1] = hex[src[i] >> 4];
		esc[2] = hex[src[i] & 0xf];
		route_out(buf, cap, off, esc, 3);
	}
}

/*
 * Text form of OBJ: the dot form when every name is plain, else the REST
 * form, which round-trips any name.
 */
void
route_obj_format(const struct route_obj *obj, char *buf, size_t len)
{
	const unsigned char *k = obj->key, *p, *name, *end;
	size_t nslen = route_ns_len(obj), off = 0;
	bool plain = true;

	if (len == 0)
		return;
	buf[0] = '\0';
	/* An empty or malformed object (no match) formats as "". */
	if (obj->len == 0 || nslen == 0 || nslen >= obj->len)
		return;
	end = k + nslen;
	for (p = name = k; p <= end; p++) {
		if (p < end && *p != ROUTE_SEP_LEVEL)
			continue;
		if (!route_is_plain(name, (size_t)(p - name)))
			plain = false;
		name = p + 1;
	}
	if (!obj->rule && !route_is_plain(k + nslen + 1, obj->len - nslen - 1))
		plain = false;

	for (p = name = k; p <= end; p++) {
		if (p < end && *p != ROUTE_SEP_LEVEL)
			continue;
		if (plain)
			route_out(buf, len, &off, name, (size_t)(p - name));
		else
			route_out_enc(buf, len, &off, name, (size_t)(p - name));
		route_out(buf, len, &off, plain ? "." : "%1F", plain ? 1 : 3);
		name = p + 1;
	}
	if (obj->rule)
		route_out(buf, len, &off, "*", 1);
	else if (plain)
		route_out(buf, len, &off, k + nslen + 1, obj->len - nslen - 1);
	else
		route_out_enc(buf, len, &off, k + nslen + 1,
		    obj->len - nslen - 1);
}

uint64_t
route_client_hash(const void *id, size_t len)
{
	const unsigned char *p = id;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* splitmix64's finalizer: a good 64-bit mix. */
static uint64_t
route_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Hash of the client and the object: FNV-1a of the key, mixed. */
static uint64_t
route_canary_hash(const struct route_obj *obj, uint64_t client_hash)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < obj->len; i++) {
		h ^= obj->key[i];
		h *= 0x100000001b3ULL;
	}
	return route_mix(h ^ client_hash);
}

/*
 * Sides for the wave state in RES. Reads follow the state (a canary by the
 * sticky hash); writes stay on the warehouse until it stops receiving
 * them, at frozen.
 */
static void
route_decide(struct route_result *res, const struct route_obj *obj,
    uint64_t client_hash)
{
	switch (res->state) {
	case WAVE_CANARY:
		res->read =
		    route_canary_hash(obj, client_hash) % 100 < res->pct ?
		    ROUTE_LAKEHOUSE :
		    ROUTE_WAREHOUSE;
		res->write = ROUTE_WAREHOUSE;
		break;
	case WAVE_LAKEHOUSE:
		res->read = ROUTE_LAKEHOUSE;
		res->write = ROUTE_WAREHOUSE;
		break;
	case WAVE_FROZEN:
	case WAVE_RETIRED:
		res->read = ROUTE_LAKEHOUSE;
		res->write = ROUTE_LAKEHOUSE;
		res->warehouse_writes_refused = true;
		break;
	case WAVE_WAREHOUSE:
	case WAVE_ROLLED_BACK:
	default:
		/* An unknown (newer) state is served safely. */
		res->read = ROUTE_WAREHOUSE;
		res->write = ROUTE_WAREHOUSE;
		break;
	}
}

/*
 * OBJ's slot in the route memo, or NULL for a key too long: its length
 * and its first and last eight bytes (where tables of one namespace
 * differ), mixed; a key shorter than eight bytes byte by byte.
 */
static struct route_memo *
route_memo_slot(const struct route_obj *obj)
{
	uint64_t h = obj->len, a, b;
	size_t i;

	if (obj->len > ROUTE_MEMO_KEY)
		return NULL;
	if (obj->len >= 8) {
		memcpy(&a, obj->key, 8);
		memcpy(&b, obj->key + obj->len - 8, 8);
		h ^= a * 0x9e3779b97f4a7c15ULL ^ b;
	} else
		for (i = 0; i < obj->len; i++)
			h = h << 8 | obj->key[i];
	return &route_memo[route_mix(h) & (ROUTE_MEMO_SLOTS - 1)];
}

/*
 * Fill RES (all but the sides) from the memo when it holds OBJ for the
 * store's current snapshot. The key bytes of RES->matched past its length
 * are left as they were (nothing reads them).
 */
static bool
route_memo_get(struct store *s, const struct route_obj *obj,
    struct route_result *res)
{
	struct route_memo *e = route_memo_slot(obj);
	uint64_t snap;

	if (e == NULL || e->snap == 0 || e->klen != obj->len ||
	    memcmp(e->key, obj->key, obj->len) != 0 ||
	    e->serial != store_serial(s) || (snap = store_snapshot(s)) == 0 ||
	    e->snap != snap)
		return false;
	res->read = res->write = ROUTE_WAREHOUSE;
	res->warehouse_writes_refused = false;
	res->matched.len = 0;
	res->matched.rule = false;
	res->why = e->why;
	res->assigned = e->assigned;
	res->wave = e->wave;
	res->state = e->state;
	res->pct = e->pct;
	res->since_ms = e->since_ms;
	res->version = e->version;
	if (e->why == ROUTE_WHY_OBJECT) {
		memcpy(res->matched.key, obj->key, obj->len);
		res->matched.len = obj->len;
		res->matched.rule = obj->rule;
	} else if (e->why == ROUTE_WHY_RULE) {
		/* A rule's key is its namespace and ROUTE_SEP_RULE. */
		memcpy(res->matched.key, obj->key, e->mnslen);
		res->matched.key[e->mnslen] = ROUTE_SEP_RULE;
		res->matched.len = (size_t)e->mnslen + 1;
		res->matched.rule = true;
	}
	return true;
}

/* Keep RES, read in snapshot SNAP, as the memo of OBJ. */
static void
route_memo_put(struct store *s, const struct route_obj *obj, uint64_t snap,
    const struct route_result *res)
{
	struct route_memo *e = route_memo_slot(obj);

	if (e == NULL || snap == 0)
		return;
	e->serial = store_serial(s);
	e->snap = snap;
	e->version = res->version;
	e->since_ms = res->since_ms;
	e->wave = res->wave;
	e->klen = (uint16_t)obj->len;
	e->mnslen =
	    res->why == ROUTE_WHY_RULE ? (uint16_t)(res->matched.len - 1) : 0;
	e->why = (uint8_t)res->why;
	e->state = res->state;
	e->pct = res->pct;
	e->assigned = res->assigned;
	memcpy(e->key, obj->key, obj->len);
}

/*
 * Resolve OBJ to the sides that serve it: from the route memo while the
 * store is unchanged, else from the store.
 */
int
route_resolve(struct store *s, const struct route_obj *obj,
    uint64_t client_hash, struct route_result *res)
{
	struct route_obj rule;
	struct store_route r;
	struct store_wave_brief w;
	size_t nslen;
	uint64_t snap;
	int rc = STORE_NOTFOUND;

	if (route_memo_get(s, obj, res)) {
		if (res->assigned)
			route_decide(res, obj, client_hash);
		return 0;
	}
	memset(res, 0, sizeof(*res));
	res->read = res->write = ROUTE_WAREHOUSE;
	res->why = ROUTE_WHY_UNASSIGNED;
	if (store_read_begin(s) == -1)
		goto fail;
	snap = store_read_snapshot(s);

	rc = store_route_get(s, obj->key, obj->len, &r);
	if (rc == STORE_OK) {
		res->why = ROUTE_WHY_OBJECT;
		res->matched = *obj;
	}
	/*
	 * Rules from the longest namespace to the shortest: for "a.b.t" (or
	 * the rule "a.b.*" itself) try "a.b.*", then "a.*".
	 */
	nslen = route_ns_len(obj);
	while (rc == STORE_NOTFOUND && nslen > 0) {
		if (!obj->rule || nslen < route_ns_len(obj)) {
			if (route_obj_rule((const char *)obj->key, nslen,
				&rule) == 0 &&
			    (rc = store_route_get(s, rule.key, rule.len, &r)) ==
				STORE_OK) {
				res->why = ROUTE_WHY_RULE;
				res->matched = rule;
				break;
			}
		}
		while (nslen > 0 && obj->key[nslen - 1] != ROUTE_SEP_LEVEL)
			nslen--;
		if (nslen > 0)
			nslen--;
	}
	if (rc == STORE_ERROR)
		goto fail;
	if (rc == STORE_NOTFOUND) {
		store_read_end(s);
		route_memo_put(s, obj, snap, res);
		return 0;
	}

	res->assigned = true;
	res->wave = r.wave;
	rc = store_wave_brief(s, r.wave, &w);
	if (rc == STORE_ERROR)
		goto fail;
	if (rc == STORE_NOTFOUND) {
		/* A wave nobody has moved yet: on the warehouse. */
		memset(&w, 0, sizeof(w));
		w.state = WAVE_WAREHOUSE;
	}
	store_read_end(s);
	res->state = w.state;
	res->pct = w.pct;
	res->since_ms = w.since_ms;
	res->version = r.seq > w.seq ? r.seq : w.seq;
	route_memo_put(s, obj, snap, res);
	route_decide(res, obj, client_hash);
	return 0;

fail:
	store_read_end(s);
	memset(res, 0, sizeof(*res));
	res->read = res->write = ROUTE_WAREHOUSE;
	res->why = ROUTE_WHY_STORE_ERROR;
	return -1;
}
