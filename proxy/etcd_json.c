/*
 * floe: etcd_json.c -- request bodies for etcd v3's JSON gateway and the
 * decoding of its answers. The gateway marshals protobuf with jsonpb: bytes
 * as base64, int64 and uint64 as strings, enums by name, and every field at
 * its default left out; the decoders take a missing field as its default,
 * and a null as missing.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "lib/xmalloc.h"
#include "proxy/etcd_json.h"

static char *etcdjson_b64(const char *, size_t);
static int etcdjson_unb64(const char *, size_t, char **, size_t *);
static int etcdjson_set_bytes(json_t *, const char *, const char *, size_t);
static void etcdjson_set_int(json_t *, const char *, int64_t);
static int etcdjson_set_range(json_t *, const char *, size_t, bool,
    const char *, size_t);
static json_t *etcdjson_op(const struct etcd_op *);
static json_t *etcdjson_cmp(const struct etcd_cmp *);
static char *etcdjson_dump(json_t *);
static json_t *etcdjson_load(const char *, size_t, char *, size_t);
static int etcdjson_int(json_t *, const char *, int64_t *);
static int etcdjson_uint(json_t *, const char *, uint64_t *);
static int etcdjson_bool(json_t *, const char *, bool *);
static int etcdjson_bytes(json_t *, const char *, char **, size_t *);
static int etcdjson_header(json_t *, struct etcd_header *);
static int etcdjson_kv(json_t *, struct etcd_kv *);
static int etcdjson_kvs(json_t *, const char *, struct etcd_kv **, size_t *);
static void etcdjson_kvs_free(struct etcd_kv *, size_t);
static int etcdjson_op_result(json_t *, struct etcd_op_result *);
static int etcdjson_event(json_t *, struct etcd_event *);

/* base64 of BUF. Caller frees. */
static char *
etcdjson_b64(const char *buf, size_t len)
{
	char *out = xmalloc(4 * ((len + 2) / 3) + 1);

	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)buf,
	    (int)len);
	return out;
}

/*
 * Decode standard base64 with padding into a new NUL-terminated buffer.
 * OpenSSL's decoder takes '=' anywhere and counts padding as output, so
 * the shape is checked here first. 0, or -1 if malformed.
 */
static int
etcdjson_unb64(const char *s, size_t n, char **out, size_t *outlen)
{
	size_t i, pad = 0;
	unsigned char *buf;
	int got;

	if (n % 4 != 0 || n > (size_t)INT32_MAX)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] == '=' && i >= n - 2) {
			pad++;
			continue;
		}
		if (pad > 0 ||
		    !(isalnum((unsigned char)s[i]) || s[i] == '+' ||
			s[i] == '/'))
			return -1;
	}
	buf = xmalloc(n / 4 * 3 + 1);
	got =
	    n == 0 ? 0 : EVP_DecodeBlock(buf, (const unsigned char *)s, (int)n);
	if (got < 0 || (size_t)got != n / 4 * 3) {
		free(buf);
		return -1;
	}
	*outlen = (size_t)got - pad;
	buf[*outlen] = '\0';
	*out = (char *)buf;
	return 0;
}

/* Set NAME of O to BUF in base64. -1 if jansson refused. */
static int
etcdjson_set_bytes(json_t *o, const char *name, const char *buf, size_t len)
{
	char *b = etcdjson_b64(buf, len);
	int rc = json_object_set_new(o, name, json_string(b));

	free(b);
	return rc;
}

/* Set NAME of O to V as a decimal string, as jsonpb writes an int64. */
static void
etcdjson_set_int(json_t *o, const char *name, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	json_object_set_new(o, name, json_string(buf));
}

/*
 * Set O's "key" and, for a prefix or an explicit END, its "range_end". -1
 * without a key.
 */
static int
etcdjson_set_range(json_t *o, const char *key, size_t len, bool prefix,
    const char *end, size_t endlen)
{
	char *pend;

	if (key == NULL)
		return -1;
	if (len == 0)
		len = strlen(key);
	etcdjson_set_bytes(o, "key", key, len);
	if (prefix) {
		pend = xmalloc(len + 1);
		etcdjson_prefix_end(key, len, pend, &endlen);
		etcdjson_set_bytes(o, "range_end", pend, endlen);
		free(pend);
	} else if (end != NULL)
		etcdjson_set_bytes(o, "range_end", end,
		    endlen != 0 ? endlen : strlen(end));
	return 0;
}

/* The prefix's range end: see etcd_json.h. */
void
etcdjson_prefix_end(const char *key, size_t len, char *out, size_t *outlen)
{
	size_t n = len;

	while (n > 0 && (unsigned char)key[n - 1] == 0xff)
		n--;
	if (n == 0) {
		out[0] = '\0';
		*outlen = 1;
		return;
	}
	memcpy(out, key, n);
	out[n - 1] = (char)((unsigned char)out[n - 1] + 1);
	*outlen = n;
}

/* O as compact JSON. Caller frees. */
static char *
etcdjson_dump(json_t *o)
{
	char *s;

	if (o == NULL)
		return NULL;
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* A RangeRequest, or a txn's RequestOp body of any type. NULL without key. */
static json_t *
etcdjson_op(const struct etcd_op *op)
{
	json_t *o = json_object();
	bool ranged = op->type != ETCD_OP_PUT;

	if (o == NULL ||
	    etcdjson_set_range(o, op->key, op->key_len, ranged && op->prefix,
		ranged ? op->range_end : NULL, op->range_end_len) == -1) {
		json_decref(o);
		return NULL;
	}
	switch (op->type) {
	case ETCD_OP_RANGE:
		if (op->limit > 0)
			etcdjson_set_int(o, "limit", op->limit);
		if (op->revision > 0)
			etcdjson_set_int(o, "revision", op->revision);
		if (op->keys_only)
			json_object_set_new(o, "keys_only", json_true());
		if (op->count_only)
			json_object_set_new(o, "count_only", json_true());
		break;
	case ETCD_OP_PUT:
		etcdjson_set_bytes(o, "value",
		    op->value != NULL ? op->value : "", op->value_len);
		if (op->lease != 0)
			etcdjson_set_int(o, "lease", op->lease);
		break;
	case ETCD_OP_DELETE:
		break;
	}
	if (op->type != ETCD_OP_RANGE && op->prev_kv)
		json_object_set_new(o, "prev_kv", json_true());
	return o;
}

/* A RangeRequest. Caller frees. */
char *
etcdjson_range(const struct etcd_op *op)
{
	struct etcd_op r = *op;

	r.type = ETCD_OP_RANGE;
	return etcdjson_dump(etcdjson_op(&r));
}

/* A txn's Compare. NULL without key. */
static json_t *
etcdjson_cmp(const struct etcd_cmp *c)
{
	static const char *targets[] = { "VERSION", "CREATE", "MOD", "VALUE" };
	static const char *fields[] = { "version", "create_revision",
		"mod_revision", "value" };
	static const char *results[] = { "EQUAL", "NOT_EQUAL", "GREATER",
		"LESS" };
	json_t *o = json_object();

	if (o == NULL ||
	    etcdjson_set_range(o, c->key, 0, false, NULL, 0) == -1) {
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "target", json_string(targets[c->target]));
	json_object_set_new(o, "result", json_string(results[c->result]));
	if (c->target == ETCD_CMP_VALUE)
		etcdjson_set_bytes(o, fields[c->target],
		    c->value != NULL ? c->value : "", c->value_len);
	else
		etcdjson_set_int(o, fields[c->target], c->number);
	return o;
}

/* A TxnRequest. Caller frees; NULL if a compare or an op has no key. */
char *
etcdjson_txn(const struct etcd_txn *t)
{
	static const char *kinds[] = { "request_range", "request_put",
		"request_delete_range" };
	json_t *o = json_object(), *a, *x, *w;
	const struct etcd_op *ops;
	size_t i, n, branch;

	if (o == NULL)
		return NULL;
	if (t->ncmps > 0) {
		a = json_array();
		json_object_set_new(o, "compare", a);
		for (i = 0; i < t->ncmps; i++) {
			if ((x = etcdjson_cmp(&t->cmps[i])) == NULL)
				goto fail;
			json_array_append_new(a, x);
		}
	}
	for (branch = 0; branch < 2; branch++) {
		ops = branch == 0 ? t->success : t->failure;
		n = branch == 0 ? t->nsuccess : t->nfailure;
		if (n == 0)
			continue;
		a = json_array();
		json_object_set_new(o, branch == 0 ? "success" : "failure", a);
		for (i = 0; i < n; i++) {
			if ((x = etcdjson_op(&ops[i])) == NULL)
				goto fail;
			w = json_object();
			json_object_set_new(w, kinds[ops[i].type], x);
			json_array_append_new(a, w);
		}
	}
	return etcdjson_dump(o);
fail:
	json_decref(o);
	return NULL;
}

/* A WatchRequest with its create_request. Caller frees. */
char *
etcdjson_watch(const struct etcd_watch_opts *w)
{
	json_t *o, *c = json_object();

	if (c == NULL ||
	    etcdjson_set_range(c, w->key, w->key_len, w->prefix, NULL, 0) ==
		-1) {
		json_decref(c);
		return NULL;
	}
	if (w->start_revision > 0)
		etcdjson_set_int(c, "start_revision", w->start_revision);
	if (w->progress_notify)
		json_object_set_new(c, "progress_notify", json_true());
	if (w->prev_kv)
		json_object_set_new(c, "prev_kv", json_true());
	o = json_object();
	json_object_set_new(o, "create_request", c);
	return etcdjson_dump(o);
}

/* A LeaseGrantRequest. Caller frees. */
char *
etcdjson_lease_grant(int64_t ttl, int64_t id)
{
	json_t *o = json_object();

	etcdjson_set_int(o, "TTL", ttl);
	if (id != 0)
		etcdjson_set_int(o, "ID", id);
	return etcdjson_dump(o);
}

/* A LeaseKeepAliveRequest or LeaseRevokeRequest. Caller frees. */
char *
etcdjson_lease_id(int64_t id)
{
	json_t *o = json_object();

	etcdjson_set_int(o, "ID", id);
	return etcdjson_dump(o);
}

/* An AuthenticateRequest. Caller frees. */
char *
etcdjson_auth(const char *user, const char *password)
{
	return etcdjson_dump(
	    json_pack("{s:s, s:s}", "name", user, "password", password));
}

/* Parse BODY as a JSON object. NULL with a message in ERR. */
static json_t *
etcdjson_load(const char *body, size_t len, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *j;

	if ((j = json_loadb(body, len, 0, &jerr)) == NULL) {
		snprintf(err, errlen, "not JSON: %s", jerr.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		snprintf(err, errlen, "not a JSON object");
		json_decref(j);
		return NULL;
	}
	return j;
}

/*
 * NAME of O as an int64: a decimal string (jsonpb's way) or a JSON
 * integer; missing or null is 0. -1 if it is anything else.
 */
static int
etcdjson_int(json_t *o, const char *name, int64_t *out)
{
	json_t *v = json_object_get(o, name);
	const char *s;
	char *end;
	long long n;

	*out = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || *(s = json_string_value(v)) == '\0')
		return -1;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || isspace((unsigned char)*s))
		return -1;
	*out = n;
	return 0;
}

/* NAME of O as a uint64 (ids), as etcdjson_int. */
static int
etcdjson_uint(json_t *o, const char *name, uint64_t *out)
{
	json_t *v = json_object_get(o, name);
	const char *s;
	char *end;
	unsigned long long n;

	*out = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) ||
	    !isdigit((unsigned char)*json_string_value(v)))
		return -1;
	s = json_string_value(v);
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = n;
	return 0;
}

/* NAME of O as a bool; missing or null is false. */
static int
etcdjson_bool(json_t *o, const char *name, bool *out)
{
	json_t *v = json_object_get(o, name);

	*out = false;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return -1;
	*out = json_is_true(v);
	return 0;
}

/* NAME of O, base64, decoded into a new buffer; missing is "". */
static int
etcdjson_bytes(json_t *o, const char *name, char **out, size_t *len)
{
	json_t *v = json_object_get(o, name);

	if (v == NULL || json_is_null(v)) {
		*out = xstrdup("");
		*len = 0;
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	return etcdjson_unb64(json_string_value(v), json_string_length(v), out,
	    len);
}

/* O's "header"; missing is all zero (a cancelled watch has no revision). */
static int
etcdjson_header(json_t *o, struct etcd_header *h)
{
	json_t *j = json_object_get(o, "header");

	memset(h, 0, sizeof(*h));
	if (j == NULL || json_is_null(j))
		return 0;
	if (!json_is_object(j) ||
	    etcdjson_uint(j, "cluster_id", &h->cluster_id) ||
	    etcdjson_uint(j, "member_id", &h->member_id) ||
	    etcdjson_int(j, "revision", &h->revision) ||
	    etcdjson_uint(j, "raft_term", &h->raft_term))
		return -1;
	return 0;
}

/* A KeyValue. On failure nothing is left to free. */
static int
etcdjson_kv(json_t *j, struct etcd_kv *kv)
{
	memset(kv, 0, sizeof(*kv));
	if (!json_is_object(j) ||
	    etcdjson_int(j, "create_revision", &kv->create_revision) ||
	    etcdjson_int(j, "mod_revision", &kv->mod_revision) ||
	    etcdjson_int(j, "version", &kv->version) ||
	    etcdjson_int(j, "lease", &kv->lease) ||
	    etcdjson_bytes(j, "key", &kv->key, &kv->key_len))
		return -1;
	if (etcdjson_bytes(j, "value", &kv->value, &kv->value_len) == -1) {
		free(kv->key);
		kv->key = NULL;
		return -1;
	}
	return 0;
}

/* The KeyValue array NAME of O; missing is none. -1 leaves none. */
static int
etcdjson_kvs(json_t *o, const char *name, struct etcd_kv **out, size_t *n)
{
	json_t *a = json_object_get(o, name);
	size_t i;

	*out = NULL;
	*n = 0;
	if (a == NULL || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return -1;
	if (json_array_size(a) == 0)
		return 0;
	*out = xcalloc(json_array_size(a), sizeof(**out));
	for (i = 0; i < json_array_size(a); i++) {
		if (etcdjson_kv(json_array_get(a, i), &(*out)[i]) == -1) {
			etcdjson_kvs_free(*out, i);
			*out = NULL;
			*n = 0;
			return -1;
		}
		(*n)++;
	}
	return 0;
}

/* Free N pairs and the array. */
static void
etcdjson_kvs_free(struct etcd_kv *kvs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].value);
	}
	free(kvs);
}

/* Free what a decoder put in R, keep the rest. */
void
etcdjson_result_clear(struct etcd_result *r)
{
	size_t i;

	etcdjson_kvs_free(r->kvs, r->nkvs);
	r->kvs = NULL;
	r->nkvs = 0;
	for (i = 0; i < r->nops; i++)
		etcdjson_kvs_free(r->ops[i].kvs, r->ops[i].nkvs);
	free(r->ops);
	r->ops = NULL;
	r->nops = 0;
}

/* A RangeResponse. */
int
etcdjson_range_answer(const char *body, size_t len, struct etcd_result *r,
    char *err, size_t errlen)
{
	json_t *j;

	if ((j = etcdjson_load(body, len, err, errlen)) == NULL)
		return -1;
	if (etcdjson_header(j, &r->header) == -1 ||
	    etcdjson_int(j, "count", &r->count) == -1 ||
	    etcdjson_bool(j, "more", &r->more) == -1 ||
	    etcdjson_kvs(j, "kvs", &r->kvs, &r->nkvs) == -1) {
		snprintf(err, errlen, "a range answer with a malformed field");
		json_decref(j);
		return -1;
	}
	json_decref(j);
	return 0;
}

/* One ResponseOp of a txn: {"response_range":{...}} and the like. */
static int
etcdjson_op_result(json_t *w, struct etcd_op_result *op)
{
	json_t *o;
	struct etcd_kv *prev;

	memset(op, 0, sizeof(*op));
	if (!json_is_object(w))
		return -1;
	if ((o = json_object_get(w, "response_range")) != NULL) {
		op->type = ETCD_OP_RANGE;
		if (!json_is_object(o) ||
		    etcdjson_int(o, "count", &op->count) == -1 ||
		    etcdjson_bool(o, "more", &op->more) == -1)
			return -1;
		return etcdjson_kvs(o, "kvs", &op->kvs, &op->nkvs);
	}
	if ((o = json_object_get(w, "response_put")) != NULL) {
		op->type = ETCD_OP_PUT;
		if (!json_is_object(o))
			return -1;
		if ((o = json_object_get(o, "prev_kv")) == NULL ||
		    json_is_null(o))
			return 0;
		prev = xcalloc(1, sizeof(*prev));
		if (etcdjson_kv(o, prev) == -1) {
			free(prev);
			return -1;
		}
		op->kvs = prev;
		op->nkvs = 1;
		return 0;
	}
	if ((o = json_object_get(w, "response_delete_range")) != NULL) {
		op->type = ETCD_OP_DELETE;
		if (!json_is_object(o) ||
		    etcdjson_int(o, "deleted", &op->deleted) == -1)
			return -1;
		return etcdjson_kvs(o, "prev_kvs", &op->kvs, &op->nkvs);
	}
	return -1;
}

/* A TxnResponse. */
int
etcdjson_txn_answer(const char *body, size_t len, struct etcd_result *r,
    char *err, size_t errlen)
{
	json_t *j, *a;
	size_t i;

	if ((j = etcdjson_load(body, len, err, errlen)) == NULL)
		return -1;
	if (etcdjson_header(j, &r->header) == -1 ||
	    etcdjson_bool(j, "succeeded", &r->succeeded) == -1)
		goto fail;
	a = json_object_get(j, "responses");
	if (a != NULL && !json_is_null(a)) {
		if (!json_is_array(a))
			goto fail;
		if (json_array_size(a) > 0)
			r->ops = xcalloc(json_array_size(a), sizeof(*r->ops));
		for (i = 0; i < json_array_size(a); i++) {
			if (etcdjson_op_result(json_array_get(a, i),
				&r->ops[i]) == -1)
				goto fail;
			r->nops++;
		}
	}
	json_decref(j);
	return 0;
fail:
	etcdjson_result_clear(r);
	snprintf(err, errlen, "a txn answer with a malformed field");
	json_decref(j);
	return -1;
}

/*
 * A LeaseGrantResponse, LeaseRevokeResponse, or a keepalive's streamed
 * {"result":LeaseKeepAliveResponse}. A grant's own "error" field is an
 * error too.
 */
int
etcdjson_lease_answer(const char *body, size_t len, struct etcd_result *r,
    char *err, size_t errlen)
{
	json_t *j, *o, *e;

	if ((j = etcdjson_load(body, len, err, errlen)) == NULL)
		return -1;
	o = json_object_get(j, "result");
	if (o == NULL)
		o = j;
	if (!json_is_object(o) || etcdjson_header(o, &r->header) == -1 ||
	    etcdjson_int(o, "ID", &r->lease) == -1 ||
	    etcdjson_int(o, "TTL", &r->ttl) == -1) {
		snprintf(err, errlen, "a lease answer with a malformed field");
		json_decref(j);
		return -1;
	}
	e = json_object_get(o, "error");
	if (json_is_string(e) && json_string_length(e) > 0) {
		snprintf(err, errlen, "%s", json_string_value(e));
		json_decref(j);
		return -1;
	}
	json_decref(j);
	return 0;
}

/* An AuthenticateResponse. */
int
etcdjson_auth_answer(const char *body, size_t len, struct etcd_header *h,
    char **token, char *err, size_t errlen)
{
	json_t *j, *t;

	if ((j = etcdjson_load(body, len, err, errlen)) == NULL)
		return -1;
	t = json_object_get(j, "token");
	if (etcdjson_header(j, h) == -1 || !json_is_string(t) ||
	    json_string_length(t) == 0 ||
	    strpbrk(json_string_value(t), "\r\n") != NULL) {
		snprintf(err, errlen, "an authentication answer without token");
		json_decref(j);
		return -1;
	}
	*token = xstrdup(json_string_value(t));
	json_decref(j);
	return 0;
}

/* An Event: a missing type is PUT (0), as jsonpb leaves defaults out. */
static int
etcdjson_event(json_t *j, struct etcd_event *ev)
{
	json_t *t, *p;

	memset(ev, 0, sizeof(*ev));
	if (!json_is_object(j))
		return -1;
	t = json_object_get(j, "type");
	if (t == NULL || json_is_null(t) ||
	    (json_is_string(t) && strcmp(json_string_value(t), "PUT") == 0) ||
	    (json_is_integer(t) && json_integer_value(t) == 0))
		ev->type = ETCD_EVENT_PUT;
	else if ((json_is_string(t) &&
		     strcmp(json_string_value(t), "DELETE") == 0) ||
	    (json_is_integer(t) && json_integer_value(t) == 1))
		ev->type = ETCD_EVENT_DELETE;
	else
		return -1;
	if (etcdjson_kv(json_object_get(j, "kv"), &ev->kv) == -1)
		return -1;
	p = json_object_get(j, "prev_kv");
	if (p != NULL && !json_is_null(p)) {
		ev->prev_kv = xcalloc(1, sizeof(*ev->prev_kv));
		if (etcdjson_kv(p, ev->prev_kv) == -1) {
			free(ev->prev_kv);
			ev->prev_kv = NULL;
			free(ev->kv.key);
			free(ev->kv.value);
			return -1;
		}
	}
	return 0;
}

/* Free what etcdjson_watch_msg allocated in M. */
void
etcdjson_watch_msg_clear(struct etcd_watch_msg *m)
{
	size_t i;

	for (i = 0; i < m->nevents; i++) {
		free(m->events[i].kv.key);
		free(m->events[i].kv.value);
		if (m->events[i].prev_kv != NULL) {
			free(m->events[i].prev_kv->key);
			free(m->events[i].prev_kv->value);
			free(m->events[i].prev_kv);
		}
	}
	free(m->events);
	m->events = NULL;
	m->nevents = 0;
	free(m->cancel_reason);
	m->cancel_reason = NULL;
}

/* One line of a watch stream into M; see etcd_json.h. */
int
etcdjson_watch_msg(const char *line, size_t len, struct etcd_watch_msg *m,
    char *err, size_t errlen)
{
	json_t *j, *o, *a, *c;
	char msg[256];
	size_t i;
	int code;

	memset(m, 0, sizeof(*m));
	m->error = "";
	if ((j = etcdjson_load(line, len, err, errlen)) == NULL)
		return -1;
	if ((o = json_object_get(j, "result")) == NULL) {
		json_decref(j);
		if (etcdjson_error(line, len, &code, msg, sizeof(msg)) == -1) {
			snprintf(err, errlen, "neither a result nor an error");
			return -1;
		}
		m->err = etcdjson_classify(code, msg);
		snprintf(err, errlen, "%s", msg);
		m->error = err;
		return 0;
	}
	if (!json_is_object(o) || etcdjson_header(o, &m->header) == -1 ||
	    etcdjson_int(o, "watch_id", &m->watch_id) == -1 ||
	    etcdjson_bool(o, "created", &m->created) == -1 ||
	    etcdjson_bool(o, "canceled", &m->canceled) == -1 ||
	    etcdjson_int(o, "compact_revision", &m->compact_revision) == -1)
		goto fail;
	c = json_object_get(o, "cancel_reason");
	if (c != NULL && !json_is_null(c)) {
		if (!json_is_string(c))
			goto fail;
		m->cancel_reason = xstrdup(json_string_value(c));
	}
	a = json_object_get(o, "events");
	if (a != NULL && !json_is_null(a)) {
		if (!json_is_array(a))
			goto fail;
		if (json_array_size(a) > 0)
			m->events =
			    xcalloc(json_array_size(a), sizeof(*m->events));
		for (i = 0; i < json_array_size(a); i++) {
			if (etcdjson_event(json_array_get(a, i),
				&m->events[i]) == -1)
				goto fail;
			m->nevents++;
		}
	}
	m->progress = !m->created && !m->canceled && m->nevents == 0 &&
	    m->compact_revision == 0;
	json_decref(j);
	return 0;
fail:
	etcdjson_watch_msg_clear(m);
	snprintf(err, errlen, "a watch message with a malformed field");
	json_decref(j);
	return -1;
}

/* An error answer's code and message: see etcd_json.h. */
int
etcdjson_error(const char *body, size_t len, int *code, char *msg,
    size_t msglen)
{
	json_t *j, *e, *c, *m;
	char err[64];

	if ((j = etcdjson_load(body, len, err, sizeof(err))) == NULL)
		return -1;
	e = json_object_get(j, "error");
	if (json_is_object(e)) {
		/* A stream's error, from the gateway's streaming handler. */
		c = json_object_get(e, "grpc_code");
		m = json_object_get(e, "message");
	} else {
		c = json_object_get(j, "code");
		m = json_object_get(j, "message");
		if (!json_is_string(m))
			m = e;
	}
	if (!json_is_integer(c) || !json_is_string(m)) {
		json_decref(j);
		return -1;
	}
	*code = (int)json_integer_value(c);
	snprintf(msg, msglen, "%s", json_string_value(m));
	json_decref(j);
	return 0;
}

/*
 * gRPC codes as etcd 3.4 uses them (api/v3rpc/rpctypes): 3 invalid argument
 * (also a refused password), 5 not found, 7 permission denied, 9 failed
 * precondition, 11 out of range (compacted, future revision), 14
 * unavailable, 16 unauthenticated.
 */
enum etcd_err
etcdjson_classify(int code, const char *m)
{
	switch (code) {
	case 0:
		return ETCD_OK;
	case 3:
		if (strstr(m, "authentication failed") != NULL ||
		    strstr(m, "user name is empty") != NULL ||
		    strstr(m, "invalid auth") != NULL)
			return ETCD_EAUTH;
		return ETCD_EREFUSED;
	case 4:
		return ETCD_ETIMEDOUT;
	case 5:
		return ETCD_ENOTFOUND;
	case 7:
	case 16:
		return ETCD_EAUTH;
	case 9:
		if (strstr(m, "auth") != NULL)
			return ETCD_EAUTH;
		return ETCD_ESERVER;
	case 11:
		if (strstr(m, "compacted") != NULL)
			return ETCD_ECOMPACTED;
		if (strstr(m, "future revision") != NULL)
			return ETCD_EFUTURE;
		return ETCD_EREFUSED;
	case 14:
		/* "request timed out", "leader changed": maybe applied. */
		if (strstr(m, "timed out") != NULL ||
		    strstr(m, "leader changed") != NULL)
			return ETCD_ETIMEDOUT;
		return ETCD_EUNAVAILABLE;
	default:
		return ETCD_ESERVER;
	}
}
