/*
 * floe: fuzz_etcd_json.c -- libFuzzer target for the decoding of etcd's
 * gateway answers: the input goes through every decoder (range, txn,
 * lease, auth, a watch line, an error answer). A decoder that fails must
 * leave nothing allocated; one that succeeds must give lengths that match
 * its NUL-terminated copies.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/etcd_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A decoded pair's lengths agree with its buffers. */
static void
check_kv(const struct etcd_kv *kv)
{
	if (kv->key == NULL || kv->value == NULL ||
	    kv->key[kv->key_len] != '\0' || kv->value[kv->value_len] != '\0')
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct etcd_result r;
	struct etcd_watch_msg m;
	struct etcd_header h;
	char err[256], msg[256], *token = NULL;
	size_t i, j;
	int code;

	memset(&r, 0, sizeof(r));
	if (etcdjson_range_answer(s, size, &r, err, sizeof(err)) == 0)
		for (i = 0; i < r.nkvs; i++)
			check_kv(&r.kvs[i]);
	else if (r.kvs != NULL)
		__builtin_trap();
	etcdjson_result_clear(&r);

	memset(&r, 0, sizeof(r));
	if (etcdjson_txn_answer(s, size, &r, err, sizeof(err)) == 0) {
		for (i = 0; i < r.nops; i++)
			for (j = 0; j < r.ops[i].nkvs; j++)
				check_kv(&r.ops[i].kvs[j]);
	} else if (r.ops != NULL)
		__builtin_trap();
	etcdjson_result_clear(&r);

	memset(&r, 0, sizeof(r));
	(void)etcdjson_lease_answer(s, size, &r, err, sizeof(err));

	if (etcdjson_auth_answer(s, size, &h, &token, err, sizeof(err)) == 0 &&
	    (token == NULL || strpbrk(token, "\r\n") != NULL))
		__builtin_trap();
	free(token);

	if (etcdjson_watch_msg(s, size, &m, err, sizeof(err)) == 0) {
		for (i = 0; i < m.nevents; i++) {
			check_kv(&m.events[i].kv);
			if (m.events[i].prev_kv != NULL)
				check_kv(m.events[i].prev_kv);
		}
		/* A progress notification has nothing else in it. */
		if (m.progress && (m.nevents != 0 || m.created || m.canceled))
			__builtin_trap();
	} else if (m.events != NULL || m.cancel_reason != NULL)
		__builtin_trap();
	etcdjson_watch_msg_clear(&m);

	if (etcdjson_error(s, size, &code, msg, sizeof(msg)) == 0)
		(void)etcdjson_classify(code, msg);
	return 0;
}
