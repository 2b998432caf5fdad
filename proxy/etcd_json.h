/*
 * floe: etcd_json.h -- the JSON of etcd v3's gateway: request bodies built
 * from etcd.h's structs, answers decoded into them. Keys and values travel
 * as base64, 64-bit integers as strings, and fields at their default are
 * left out of answers (a missing "type" is a put, missing "kvs" is none).
 * Pure: no I/O, no state; what a decoder allocates its _clear frees.
 */
#ifndef FLOE_PROXY_ETCD_JSON_H
#define FLOE_PROXY_ETCD_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/etcd.h"

/* Request bodies. Caller frees; NULL if a key is missing. */
char *etcdjson_range(const struct etcd_op *);
char *etcdjson_txn(const struct etcd_txn *);
char *etcdjson_watch(const struct etcd_watch_opts *);
char *etcdjson_lease_grant(int64_t ttl, int64_t id);
char *etcdjson_lease_id(int64_t id); /* keepalive and revoke */
char *etcdjson_auth(const char *user, const char *password);

/*
 * Answers of 200. Each returns 0, or -1 with a message in ERR (the result
 * then holds nothing to clear).
 */
int etcdjson_range_answer(const char *, size_t, struct etcd_result *, char *err,
    size_t errlen);
int etcdjson_txn_answer(const char *, size_t, struct etcd_result *, char *err,
    size_t errlen);
/* Grants, revokes, and keepalives (those come as {"result":{...}}). */
int etcdjson_lease_answer(const char *, size_t, struct etcd_result *, char *err,
    size_t errlen);
/* The token in *TOKEN (caller frees). */
int etcdjson_auth_answer(const char *, size_t, struct etcd_header *,
    char **token, char *err, size_t errlen);
void etcdjson_result_clear(struct etcd_result *);

/*
 * One line of a watch stream: a {"result":{...}} message, or an
 * {"error":{...}} that ends the stream (then MSG's err and error are set,
 * ERROR pointing into ERR). 0, or -1 if the line is not a message.
 */
int etcdjson_watch_msg(const char *, size_t, struct etcd_watch_msg *, char *err,
    size_t errlen);
void etcdjson_watch_msg_clear(struct etcd_watch_msg *);

/*
 * An error answer ({"error":"..","code":N} or a stream's
 * {"error":{"grpc_code":N,"message":".."}}): its gRPC code and message
 * (at most MSGLEN bytes). 0, or -1 if BODY is not one.
 */
int etcdjson_error(const char *body, size_t, int *code, char *msg,
    size_t msglen);
/* Sort etcd's gRPC CODE and MESSAGE into an etcd_err. */
enum etcd_err etcdjson_classify(int code, const char *message);

/*
 * The range end that covers every key starting with KEY: KEY up to its
 * last byte below 0xff, that byte plus one; or "\0" (every key from KEY
 * on) when there is no such byte. OUT holds at least LEN + 1 bytes.
 */
void etcdjson_prefix_end(const char *key, size_t len, char *out,
    size_t *outlen);

#endif
