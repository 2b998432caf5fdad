/*
 * floe: tlsctx.h -- the TLS server context of the REST listener. Owns the
 * current SSL_CTX (certificate chain and key, TLS 1.2 and newer). A reload
 * builds a new context and swaps it in: connections already open keep the
 * context they started with (OpenSSL counts its references), new ones get
 * the new certificate. Loop thread only.
 */
#ifndef FLOE_PROXY_TLSCTX_H
#define FLOE_PROXY_TLSCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct iovec;
struct event_base;
struct evbuffer;
struct tlsctx;

/* Load CERT (PEM chain) and KEY. NULL with ERR naming the file. */
struct tlsctx *tlsctx_new(const char *cert, const char *key, char *err,
    size_t errlen);
void tlsctx_free(struct tlsctx *);
/*
 * Load CERT and KEY again (on SIGHUP). 0 and the new certificate serves
 * new connections; -1 with ERR and the old one stays.
 */
int tlsctx_reload(struct tlsctx *, const char *cert, const char *key, char *err,
    size_t errlen);
/*
 * A server-side TLS bufferevent for the accepted socket FD (closed with
 * it). NULL if OpenSSL cannot make one (FD is then closed).
 */
struct bufferevent *tlsctx_accept(struct tlsctx *, struct event_base *, int fd);
/*
 * Before a TLS connection BEV is freed: when its handshake is done and its
 * output written, send the close_notify that ends it cleanly (a session
 * that ends without one is dropped from OpenSSL's session cache).
 */
void tlsctx_close(struct bufferevent *bev);
/*
 * Send an answer on the open TLS connection BEV whose output buffer is
 * empty: HEAD (HLEN bytes) and then BODY (drained; NULL for none), with
 * SSL_write now, in records of up to 16 KiB. What the socket does not take
 * goes to BEV's output buffer for the bufferevent to write: first, in one
 * piece, exactly the record OpenSSL must be given again. 0, or -1 if the
 * connection failed (nothing is queued; no close_notify will be sent).
 */
int tlsctx_send(struct bufferevent *bev, const char *head, size_t hlen,
    struct evbuffer *body);
/*
 * The same for bytes the caller keeps (a request kept for a retry): the NV
 * pieces V, copied, never drained.
 */
int tlsctx_sendv(struct bufferevent *bev, const struct iovec *v, int nv);
/*
 * Move the records OpenSSL has read ahead of the socket into BEV's input,
 * until that holds MAX bytes: the bufferevent reads only when the socket
 * is readable, and what arrived with the handshake's end or behind another
 * record is already off it. 0, or -1 when the client ended the stream
 * (close_notify) or it failed.
 */
int tlsctx_read_pending(struct bufferevent *bev, size_t max);
/* OpenSSL holds bytes of BEV's that its input buffer does not have yet. */
bool tlsctx_pending(struct bufferevent *bev);
/*
 * The session ticket keys' chain (see tlsctx.c), for processes that must
 * resume each other's tickets (workers). Export: the current hour's link
 * (32 bytes) into CHAIN and its hour, the chain stepped to now first.
 * Import: take them as this process's chain (before any ticket). 0, or
 * -1 if OpenSSL fails.
 */
int tlsctx_tickets_export(unsigned char chain[32], uint64_t *hour);
void tlsctx_tickets_import(const unsigned char chain[32], uint64_t hour);
/* The subject of the certificate being served, for logs. */
const char *tlsctx_subject(const struct tlsctx *);

#endif
