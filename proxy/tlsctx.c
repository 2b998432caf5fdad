/*
 * floe: tlsctx.c -- the listener's SSL_CTX: TLS 1.2 and newer, no
 * renegotiation, the server's cipher order, buffers released while a
 * connection is idle (10,000 idle TLS clients stay cheap), session tickets
 * under keys that rotate every hour, records read ahead (one read() a
 * request, not a header and then a body). Connections are
 * bufferevent_openssl in accepting state; answers are written straight
 * (tlsctx_send), and what OpenSSL reads ahead of the socket is moved in by
 * hand (tlsctx_read_pending). The context is swapped on reload.
 */
#include <sys/uio.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/buffer.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lib/xmalloc.h"
#include "proxy/tlsctx.h"

struct tlsctx {
	SSL_CTX *ctx;
	char subject[256];
};

/*
 * Session tickets. A ticket is the session encrypted (AES-256-CBC) and
 * authenticated (HMAC-SHA256) under the key of the hour it was issued; a
 * ticket of the current hour or the one before resumes, and one of the
 * hour before is answered with a fresh ticket. The keys of an hour are
 * derived from a chain secret, and the chain moves on each hour by a
 * one-way step (chain = HMAC(chain)), the old link wiped: a process read
 * later cannot decrypt tickets older than an hour before, the forward
 * secrecy tickets otherwise lose. The chain is the process's, not the
 * context's: a reload (new certificate) keeps the tickets valid, and
 * processes forked from one floe step the same chain on the same hour.
 * Workers, which are exec'd, import their master's link of the hour
 * (tlsctx_tickets_import), so any worker resumes any worker's ticket.
 * A restart starts a new chain: older tickets get a full handshake.
 */
#define TLSCTX_TICKET_SECS 3600

#define TLSCTX_RECORD 16384 /* a TLS record's most plaintext */

struct tlsctx_tkey {
	unsigned char name[16];
	unsigned char aes[32];
	unsigned char mac[32];
};

static struct {
	int ready;
	uint64_t hour;
	unsigned char chain[32];
	struct tlsctx_tkey cur, prev;
	int has_prev;
} tlsctx_tk;

/* OUT (32 bytes) = HMAC-SHA256(KEY, LABEL). -1 on failure. */
static int
tlsctx_hmac(const unsigned char *key, const char *label, unsigned char *out)
{
	unsigned int len = 32;

	return HMAC(EVP_sha256(), key, 32, (const unsigned char *)label,
		   strlen(label), out, &len) == NULL ?
	    -1 :
	    0;
}

/* The keys of the hour whose chain link is tlsctx_tk.chain. */
static int
tlsctx_tkey_derive(struct tlsctx_tkey *k)
{
	unsigned char name[32];

	if (tlsctx_hmac(tlsctx_tk.chain, "floe ticket name", name) == -1 ||
	    tlsctx_hmac(tlsctx_tk.chain, "floe ticket aes", k->aes) == -1 ||
	    tlsctx_hmac(tlsctx_tk.chain, "floe ticket mac", k->mac) == -1)
		return -1;
	memcpy(k->name, name, sizeof(k->name));
	return 0;
}

/* Step the chain to the hour of NOW. -1 if OpenSSL fails. */
static int
tlsctx_tk_advance(time_t now)
{
	uint64_t hour = (uint64_t)now / TLSCTX_TICKET_SECS;
	unsigned char next[32];

	if (!tlsctx_tk.ready) {
		if (RAND_bytes(tlsctx_tk.chain, sizeof(tlsctx_tk.chain)) != 1 ||
		    tlsctx_tkey_derive(&tlsctx_tk.cur) == -1)
			return -1;
		tlsctx_tk.hour = hour;
		tlsctx_tk.ready = 1;
		return 0;
	}
	while (tlsctx_tk.hour < hour) {
		if (tlsctx_hmac(tlsctx_tk.chain, "floe ticket chain", next) ==
		    -1)
			return -1;
		OPENSSL_cleanse(tlsctx_tk.chain, sizeof(tlsctx_tk.chain));
		memcpy(tlsctx_tk.chain, next, sizeof(next));
		OPENSSL_cleanse(next, sizeof(next));
		OPENSSL_cleanse(&tlsctx_tk.prev, sizeof(tlsctx_tk.prev));
		tlsctx_tk.prev = tlsctx_tk.cur;
		tlsctx_tk.has_prev = tlsctx_tk.hour + 1 == hour;
		if (tlsctx_tkey_derive(&tlsctx_tk.cur) == -1)
			return -1;
		tlsctx_tk.hour++;
	}
	return 0;
}

/* The chain's link of this hour, for workers. */
int
tlsctx_tickets_export(unsigned char chain[32], uint64_t *hour)
{
	if (tlsctx_tk_advance(time(NULL)) == -1)
		return -1;
	memcpy(chain, tlsctx_tk.chain, sizeof(tlsctx_tk.chain));
	*hour = tlsctx_tk.hour;
	return 0;
}

/* A worker: its master's link of HOUR is its chain from now on. */
void
tlsctx_tickets_import(const unsigned char chain[32], uint64_t hour)
{
	OPENSSL_cleanse(&tlsctx_tk, sizeof(tlsctx_tk));
	memcpy(tlsctx_tk.chain, chain, sizeof(tlsctx_tk.chain));
	tlsctx_tk.hour = hour;
	if (tlsctx_tkey_derive(&tlsctx_tk.cur) == 0)
		tlsctx_tk.ready = 1;
}

/*
 * OpenSSL's ticket callback: ENC 1 issues a ticket under the current key
 * (its name, a random IV), 0 opens one: 1 resumes, 2 resumes and renews,
 * 0 is a full handshake (unknown or expired key), -1 an error.
 */
static int
tlsctx_ticket_cb(SSL *ssl, unsigned char *name, unsigned char *iv,
    EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
	static char digest[] = "SHA256";
	const struct tlsctx_tkey *k;
	OSSL_PARAM params[3];

	(void)ssl;
	if (tlsctx_tk_advance(time(NULL)) == -1)
		return -1;
	if (enc) {
		k = &tlsctx_tk.cur;
		if (RAND_bytes(iv,
			EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) != 1)
			return -1;
		memcpy(name, k->name, sizeof(k->name));
		if (EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes,
			iv) != 1)
			return -1;
	} else {
		if (memcmp(name, tlsctx_tk.cur.name, sizeof(k->name)) == 0)
			k = &tlsctx_tk.cur;
		else if (tlsctx_tk.has_prev &&
		    memcmp(name, tlsctx_tk.prev.name, sizeof(k->name)) == 0)
			k = &tlsctx_tk.prev;
		else
			return 0;
		if (EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes,
			iv) != 1)
			return -1;
	}
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
	    (void *)(uintptr_t)k->mac, sizeof(k->mac));
	params[1] =
	    OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
	params[2] = OSSL_PARAM_construct_end();
	if (EVP_MAC_CTX_set_params(hctx, params) != 1)
		return -1;
	return !enc && k == &tlsctx_tk.prev ? 2 : 1;
}

/* The first OpenSSL error as text (and clear the queue). */
static const char *
tlsctx_error(void)
{
	unsigned long e = ERR_get_error();
	const char *s = e != 0 ? ERR_reason_error_string(e) : NULL;

	ERR_clear_error();
	return s != NULL ? s : "unknown error";
}

/* A new SSL_CTX serving CERT and KEY. NULL with ERR. */
static SSL_CTX *
tlsctx_build(const char *cert, const char *key, char *subject, size_t sublen,
    char *err, size_t errlen)
{
	SSL_CTX *ctx;
	X509 *x;

	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		snprintf(err, errlen, "TLS: %s", tlsctx_error());
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		snprintf(err, errlen, "TLS: %s", tlsctx_error());
		goto fail;
	}
	SSL_CTX_set_options(ctx,
	    SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
		SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_read_ahead(ctx, 1);
	/*
	 * Resumption: tickets (TLS 1.3 and 1.2) under the rotating keys, a
	 * lifetime no longer than a key's hour; OpenSSL's own session cache
	 * still serves TLS 1.2 clients that resume by session id.
	 */
	if (tlsctx_tk_advance(time(NULL)) == -1 ||
	    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, tlsctx_ticket_cb) != 1 ||
	    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"floe",
		4) != 1) {
		snprintf(err, errlen, "TLS session tickets: %s",
		    tlsctx_error());
		goto fail;
	}
	SSL_CTX_set_timeout(ctx, TLSCTX_TICKET_SECS);
	/* OpenSSL says "unknown error" for a file it cannot open. */
	if (access(cert, R_OK) == -1 || access(key, R_OK) == -1) {
		snprintf(err, errlen, "%s %s: %s",
		    access(cert, R_OK) == -1 ? "tls_cert" : "tls_key",
		    access(cert, R_OK) == -1 ? cert : key, strerror(errno));
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		snprintf(err, errlen, "tls_cert %s: %s", cert, tlsctx_error());
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		if (ERR_GET_REASON(ERR_peek_error()) !=
		    X509_R_KEY_VALUES_MISMATCH) {
			snprintf(err, errlen, "tls_key %s: %s", key,
			    tlsctx_error());
			goto fail;
		}
		snprintf(err, errlen, "tls_key %s does not match tls_cert %s",
		    key, cert);
		ERR_clear_error();
		goto fail;
	}
	subject[0] = '\0';
	if ((x = SSL_CTX_get0_certificate(ctx)) != NULL)
		X509_NAME_oneline(X509_get_subject_name(x), subject,
		    (int)sublen);
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

struct tlsctx *
tlsctx_new(const char *cert, const char *key, char *err, size_t errlen)
{
	struct tlsctx *t;

	t = xcalloc(1, sizeof(*t));
	if ((t->ctx = tlsctx_build(cert, key, t->subject, sizeof(t->subject),
		 err, errlen)) == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

void
tlsctx_free(struct tlsctx *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

int
tlsctx_reload(struct tlsctx *t, const char *cert, const char *key, char *err,
    size_t errlen)
{
	char subject[256];
	SSL_CTX *ctx;

	if ((ctx = tlsctx_build(cert, key, subject, sizeof(subject), err,
		 errlen)) == NULL)
		return -1;
	/* Open connections hold their own reference to the old context. */
	SSL_CTX_free(t->ctx);
	t->ctx = ctx;
	memcpy(t->subject, subject, sizeof(subject));
	return 0;
}

struct bufferevent *
tlsctx_accept(struct tlsctx *t, struct event_base *base, int fd)
{
	struct bufferevent *bev;
	SSL *ssl;

	if ((ssl = SSL_new(t->ctx)) == NULL) {
		ERR_clear_error();
		close(fd);
		return NULL;
	}
	bev = bufferevent_openssl_socket_new(base, fd, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	return bev;
}

void
tlsctx_close(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);

	if (ssl == NULL || !SSL_is_init_finished(ssl) ||
	    evbuffer_get_length(bufferevent_get_output(bev)) > 0)
		return;
	/* One close_notify, not waiting for the client's. */
	if (SSL_shutdown(ssl) < 0)
		ERR_clear_error();
}

/*
 * bufferevent_openssl sets SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER and not
 * SSL_MODE_ENABLE_PARTIAL_WRITE: an SSL_write of one record either writes
 * it all or says WANT_WRITE, and must then be called again with the same
 * bytes, anywhere in memory. The bufferevent calls it with the first piece
 * of its output, up to 16 KiB: the record staged here is queued there as
 * one piece, before the rest. 1 when the record went out, 0 when it was
 * queued in OUT, -1 on a failure.
 */
static int
tlsctx_record(SSL *ssl, struct evbuffer *out, const unsigned char *rec,
    size_t n)
{
	struct evbuffer_iovec v;
	int r, err;

	ERR_clear_error();
	if ((r = SSL_write(ssl, rec, (int)n)) > 0)
		return 1;
	err = SSL_get_error(ssl, r);
	if (err != SSL_ERROR_WANT_WRITE && err != SSL_ERROR_WANT_READ)
		return -1;
	if (evbuffer_reserve_space(out, n, &v, 1) != 1)
		return -1;
	memcpy(v.iov_base, rec, n);
	v.iov_len = n;
	return evbuffer_commit_space(out, &v, 1) == -1 ? -1 : 0;
}

/* A failed connection: nothing more is sent on it, close_notify neither. */
static int
tlsctx_fail(SSL *ssl)
{
	ERR_clear_error();
	SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
	return -1;
}

int
tlsctx_send(struct bufferevent *bev, const char *head, size_t hlen,
    struct evbuffer *body)
{
	static unsigned char stage[TLSCTX_RECORD];
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t n, take, blen;
	int r;

	for (;;) {
		n = hlen < sizeof(stage) ? hlen : sizeof(stage);
		if (n > 0) { /* HEAD may be NULL, with no bytes */
			memcpy(stage, head, n);
			head += n;
			hlen -= n;
		}
		blen = body != NULL ? evbuffer_get_length(body) : 0;
		take = blen < sizeof(stage) - n ? blen : sizeof(stage) - n;
		if (take > 0 &&
		    evbuffer_remove(body, stage + n, take) != (int)take)
			goto fail;
		n += take;
		if (n == 0)
			return 0;
		if ((r = tlsctx_record(ssl, out, stage, n)) == 1)
			continue;
		if (r == -1 ||
		    (hlen > 0 && evbuffer_add(out, head, hlen) == -1) ||
		    (body != NULL && evbuffer_add_buffer(out, body) == -1))
			goto fail;
		return 0;
	}
fail:
	if (body != NULL)
		evbuffer_drain(body, evbuffer_get_length(body));
	return tlsctx_fail(ssl);
}

int
tlsctx_sendv(struct bufferevent *bev, const struct iovec *v, int nv)
{
	static unsigned char stage[TLSCTX_RECORD];
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t n, off = 0, take;
	int i = 0, r;

	for (;;) {
		for (n = 0; i < nv && n < sizeof(stage);) {
			take = v[i].iov_len - off;
			if (take > sizeof(stage) - n)
				take = sizeof(stage) - n;
			memcpy(stage + n, (const char *)v[i].iov_base + off,
			    take);
			n += take;
			if ((off += take) == v[i].iov_len) {
				i++;
				off = 0;
			}
		}
		if (n == 0)
			return 0;
		if ((r = tlsctx_record(ssl, out, stage, n)) == 1)
			continue;
		if (r == -1)
			return tlsctx_fail(ssl);
		for (; i < nv; i++, off = 0)
			if (evbuffer_add(out, (const char *)v[i].iov_base + off,
				v[i].iov_len - off) == -1)
				return tlsctx_fail(ssl);
		return 0;
	}
}

int
tlsctx_read_pending(struct bufferevent *bev, size_t max)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v;
	int r, err;

	while (SSL_has_pending(ssl) && evbuffer_get_length(in) < max) {
		if (evbuffer_reserve_space(in, TLSCTX_RECORD, &v, 1) != 1)
			return -1;
		ERR_clear_error();
		r = SSL_read(ssl, v.iov_base,
		    v.iov_len < TLSCTX_RECORD ? (int)v.iov_len : TLSCTX_RECORD);
		if (r <= 0) {
			err = SSL_get_error(ssl, r);
			ERR_clear_error();
			return err == SSL_ERROR_WANT_READ ||
				err == SSL_ERROR_WANT_WRITE ?
			    0 :
			    -1;
		}
		v.iov_len = (size_t)r;
		if (evbuffer_commit_space(in, &v, 1) == -1)
			return -1;
	}
	return 0;
}

bool
tlsctx_pending(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);

	return ssl != NULL && SSL_has_pending(ssl);
}

const char *
tlsctx_subject(const struct tlsctx *t)
{
	return t->subject;
}
