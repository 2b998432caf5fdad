/*
 * floe: admin_ledger.c -- the reconcile ledger in the admin API: GET
 * /ledger, an object's newest records, and POST /ledger, a batch of
 * records appended in one synced txn by the worker (admin_job.c); the
 * records that are not clean go back to the loop for the reconcile
 * trigger.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "lib/compat.h"
#include "lib/log.h"
#include "lib/units.h"
#include "lib/xmalloc.h"
#include "proxy/admin_impl.h"
#include "routing/ledger.h"
#include "routing/route.h"
#include "routing/store.h"

#define ADMIN_LEDGER_LIMIT 1000 /* default records of GET /ledger */
#define ADMIN_LEDGER_MAX 100000 /* most a client may ask for */

/* GET /ledger: the newest LIMIT records of one object. */
struct admin_ledger_show {
	const struct route_obj *obj;
	size_t limit;
	size_t total;
	json_t *list;
};

/* Where one parsed record sits in the batch's arena. */
struct admin_ledger_off {
	size_t key;
	size_t keylen;
	size_t vallen; /* the value follows the key */
};

/* A POST /ledger being parsed: keys and values, and their line numbers. */
struct admin_ledger_batch {
	const char *unit; /* "line" or "record" */
	unsigned char *arena;
	size_t alen;
	size_t acap;
	struct admin_ledger_off *off;
	size_t *no;
	size_t n;
	size_t cap;
	int64_t first_ms;
	int64_t last_ms;
	char first_obj[STORE_KEY_MAX * 3 + 8];
};

static int admin_ledger_show_cb(int64_t, const void *, size_t, void *);
static int admin_ledger_one(struct admin_req *, json_t *, size_t, void *);
static void admin_ledger_refused(struct admin_req *,
    const struct admin_ledger_batch *, const struct store_kv *, size_t);
static void admin_ledger_alarms(const struct store_kv *, size_t,
    struct evbuffer *);
static void admin_ledger_run(struct admin_req *, struct evbuffer *);

/* Keep the next record of GET /ledger, dropping the oldest past LIMIT. */
static int
admin_ledger_show_cb(int64_t ts, const void *val, size_t len, void *arg)
{
	struct admin_ledger_show *sh = arg;
	struct ledger_rec rec;

	rec.ts_ms = ts;
	if (ledger_decode(val, len, &rec) == -1) {
		log_warnx("%s: skipping a damaged ledger record", __func__);
		return 0;
	}
	sh->total++;
	json_array_append_new(sh->list, ledger_rec_json(sh->obj, &rec));
	if (json_array_size(sh->list) > sh->limit)
		json_array_remove(sh->list, 0);
	return 0;
}

/* GET /ledger?object=X[&limit=N]: an object's newest records, oldest first. */
void
admin_ledger_get(struct admin_req *r)
{
	struct admin_ledger_show sh;
	struct route_obj obj;
	char canon[STORE_KEY_MAX * 3 + 8], *text = NULL;
	unsigned long long limit = ADMIN_LEDGER_LIMIT;

	if (admin_query_get(r, "object", &text) != 1 || text[0] == '\0') {
		free(text);
		admin_error(r, 400,
		    "give the object: /ledger?object=db.orders");
		return;
	}
	if (admin_parse_object(r, text, &obj) == -1) {
		free(text);
		return;
	}
	free(text);
	if (obj.rule) {
		admin_error(r, 400, "the ledger holds tables, not rules");
		return;
	}
	if (admin_query_uint(r, "limit", 1, ADMIN_LEDGER_MAX, NULL, &limit) ==
	    -1)
		return;
	route_obj_format(&obj, canon, sizeof(canon));
	memset(&sh, 0, sizeof(sh));
	sh.obj = &obj;
	sh.limit = limit;
	sh.list = json_array();
	if (store_ledger_foreach(r->st, obj.key, obj.len, 0, INT64_MAX,
		admin_ledger_show_cb, &sh) < 0) {
		json_decref(sh.list);
		log_warnx("%s: reading the ledger of %s failed", __func__,
		    canon);
		admin_error(r, 500, "store error reading the ledger");
		return;
	}
	admin_reply_json(r, 200,
	    json_pack("{s:s,s:I,s:o}", "object", canon, "total",
		(json_int_t)sh.total, "records", sh.list));
}

/*
 * Parse one record J (from line or element NO) into the batch: key and
 * value appended to the arena. 0, or -1 with a 400 naming the line.
 */
static int
admin_ledger_one(struct admin_req *r, json_t *j, size_t no, void *arg)
{
	struct admin_ledger_batch *lb = arg;
	struct route_obj obj;
	struct ledger_rec rec;
	unsigned char key[STORE_KEY_MAX], val[LEDGER_VAL_MAX];
	size_t klen, vlen;
	char err[512];

	err[0] = '\0';
	if (ledger_rec_from_json(j, r->now_ms, &obj, &rec, err, sizeof(err)) ==
	    -1) {
		admin_error(r, 400, "%s", err);
		return -1;
	}
	klen = ledger_key(&obj, rec.ts_ms, key);
	vlen = ledger_encode(&rec, val);
	if (lb->n == lb->cap) {
		lb->cap = lb->cap != 0 ? lb->cap * 2 : 64;
		lb->off = xreallocarray(lb->off, lb->cap, sizeof(*lb->off));
		lb->no = xreallocarray(lb->no, lb->cap, sizeof(*lb->no));
	}
	while (lb->alen + klen + vlen > lb->acap) {
		lb->acap = lb->acap != 0 ? lb->acap * 2 : 65536;
		lb->arena = xreallocarray(lb->arena, lb->acap, 1);
	}
	lb->off[lb->n].key = lb->alen;
	lb->off[lb->n].keylen = klen;
	memcpy(lb->arena + lb->alen, key, klen);
	lb->alen += klen;
	lb->off[lb->n].vallen = vlen;
	memcpy(lb->arena + lb->alen, val, vlen);
	lb->alen += vlen;
	lb->no[lb->n] = no;
	if (lb->n == 0 || rec.ts_ms < lb->first_ms)
		lb->first_ms = rec.ts_ms;
	if (lb->n == 0 || rec.ts_ms > lb->last_ms)
		lb->last_ms = rec.ts_ms;
	if (lb->n == 0)
		route_obj_format(&obj, lb->first_obj, sizeof(lb->first_obj));
	lb->n++;
	return 0;
}

/*
 * POST /ledger: append reconcile records (JSON lines, a JSON array or one
 * object) in one synced txn: all of them or, at the first bad line,
 * none. A record already stored is counted as a duplicate; a different
 * record for the same object and time is refused (the ledger is
 * append-only) and the refusal recorded. Run by the worker
 * (admin_ledger_run); the reconcile trigger then acts on the loop before
 * the answer.
 */
void
admin_ledger_post(struct admin_req *r)
{
	admin_job_start(r, admin_ledger_run);
}

/*
 * Refuse batch LB: its record NO (KV) differs from the one stored for
 * the same object and time. The refusal is recorded and answered 409.
 */
static void
admin_ledger_refused(struct admin_req *r, const struct admin_ledger_batch *lb,
    const struct store_kv *kv, size_t no)
{
	struct route_obj obj;
	char name[STORE_KEY_MAX * 3 + 8], ts[40];
	char msg[STORE_KEY_MAX * 3 + 256];
	json_t *ev;

	name[0] = '\0';
	if (route_obj_from_key(kv->key, kv->keylen - LEDGER_TS_LEN, &obj) == 0)
		route_obj_format(&obj, name, sizeof(name));
	units_time_format(ledger_key_ts(kv->key, kv->keylen - LEDGER_TS_LEN),
	    ts, sizeof(ts));
	snprintf(msg, sizeof(msg),
	    "%s %zu: %s at %s already has a different record; the ledger is "
	    "append-only; nothing was imported",
	    lb->unit, no, name, ts);
	ev = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s}", "type", "ledger.refused",
	    "actor", r->actor, "records", (json_int_t)lb->n, "object", name,
	    "ts", ts, "message", msg);
	if (ev == NULL || store_event_append(r->st, r->now_ms, ev) != STORE_OK)
		log_warnx("%s: recording the ledger refusal failed", __func__);
	json_decref(ev);
	log_info("ledger import refused (%s): %s", r->actor, msg);
	admin_refused(r, msg, NULL);
}

/*
 * Put the records of KV (N) the reconcile trigger may act on into ALARMS
 * for the loop: [key length u32][value length u32][key][value] each.
 * watch_ledger_added skips clean records too: a million clean records
 * need not cross the pipe.
 */
static void
admin_ledger_alarms(const struct store_kv *kv, size_t n,
    struct evbuffer *alarms)
{
	struct ledger_rec rec;
	uint32_t len[2];
	size_t i;

	for (i = 0; i < n; i++)
		if (ledger_decode(kv[i].val, kv[i].vallen, &rec) == 0 &&
		    !ledger_rec_is_clean(&rec)) {
			len[0] = (uint32_t)kv[i].keylen;
			len[1] = (uint32_t)kv[i].vallen;
			evbuffer_add(alarms, len, sizeof(len));
			evbuffer_add(alarms, kv[i].key, kv[i].keylen);
			evbuffer_add(alarms, kv[i].val, kv[i].vallen);
		}
}

/*
 * Parse and write the records; answer R. The records not clean go to
 * ALARMS for the reconcile trigger (admin_job_alarms).
 */
static void
admin_ledger_run(struct admin_req *r, struct evbuffer *alarms)
{
	struct admin_ledger_batch lb;
	struct store_ledger_res res;
	struct store_kv *kv = NULL;
	char t1[40], t2[40];
	json_t *ev = NULL;
	size_t i;
	int rc;

	memset(&lb, 0, sizeof(lb));
	r->outcome = "; nothing was imported";
	if (admin_records(r, "records", &lb.unit, admin_ledger_one, &lb) == -1)
		goto out;
	kv = xcalloc(lb.n, sizeof(*kv));
	for (i = 0; i < lb.n; i++) {
		kv[i].key = lb.arena + lb.off[i].key;
		kv[i].keylen = lb.off[i].keylen;
		kv[i].val = lb.arena + lb.off[i].key + lb.off[i].keylen;
		kv[i].vallen = lb.off[i].vallen;
	}
	units_time_format(lb.first_ms, t1, sizeof(t1));
	units_time_format(lb.last_ms, t2, sizeof(t2));
	ev = json_pack("{s:s,s:s,s:I,s:s,s:s}", "type", "ledger.import",
	    "actor", r->actor, "records", (json_int_t)lb.n, "first_ts", t1,
	    "last_ts", t2);
	if (lb.n == 1)
		json_object_set_new(ev, "object", json_string(lb.first_obj));
	rc = store_ledger_append(r->st, kv, lb.n, r->now_ms, ev, &res);
	if (rc == STORE_REFUSED) {
		admin_ledger_refused(r, &lb, &kv[res.conflict],
		    lb.no[res.conflict]);
		goto out;
	}
	if (rc != STORE_OK) {
		log_warnx("%s: ledger import of %zu records failed: store "
			  "error",
		    __func__, lb.n);
		admin_error(r, 500, "store error");
		goto out;
	}
	log_info("ledger: %zu records imported by %s (%zu new, %zu "
		 "duplicates)",
	    lb.n, r->actor, res.added, res.duplicates);
	admin_ledger_alarms(kv, lb.n, alarms);
	admin_reply_json(r, 200,
	    json_pack("{s:I,s:I,s:I,s:I}", "records", (json_int_t)lb.n, "added",
		(json_int_t)res.added, "duplicates", (json_int_t)res.duplicates,
		"seq", (json_int_t)store_last_seq(r->st)));
out:
	json_decref(ev);
	free(kv);
	free(lb.arena);
	free(lb.off);
	free(lb.no);
}
