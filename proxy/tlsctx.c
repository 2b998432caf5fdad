/*
 * floe: tlsctx.c -- the listener's SSL_CTX: TLS 1.2 and newer, no
 * renegotiation, the server's cipher order, buffers released while a
 * connection is idle (10,000 idle TLS clients stay cheap). Connections are
 * bufferevent_openssl in accepting state; the context is swapped on reload.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lib/xmalloc.h"
#include "proxy/tlsctx.h"

struct tlsctx {
	SSL_CTX *ctx;
	char subject[256];
};

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

const char *
tlsctx_subject(const struct tlsctx *t)
{
	return t->subject;
}
