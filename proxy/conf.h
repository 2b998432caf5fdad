/*
 * floe: conf.h -- floe.conf: struct conf, read with inih through one key
 * table, validated whole. A conf is immutable once loaded; a reload builds
 * a new one and swaps it only on success.
 */
#ifndef FLOE_PROXY_CONF_H
#define FLOE_PROXY_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONF_MAX_UIDS 16
#define CONF_MAX_WORKERS 64 /* workers = N: at most */

/* How floe authenticates to a catalog: its auth key. */
enum conf_cred {
	CONF_CRED_DEFAULT, /* unset: token with a token_file, else none */
	CONF_CRED_NONE,
	CONF_CRED_TOKEN, /* token_file's bearer token */
	CONF_CRED_OAUTH2, /* OAuth2 client credentials */
	CONF_CRED_SIGV4, /* AWS Signature Version 4 */
	CONF_CRED_GOOGLE, /* a Google service account's JWT-bearer grant */
};

/* One upstream catalog: [warehouse] or [lakehouse]. */
struct conf_target {
	char *uri; /* base, without /v1 and without a trailing '/' */
	size_t uri_len;
	char *warehouse; /* sent as ?warehouse= to its /v1/config, or NULL */
	char *token_file; /* or NULL */
	char *token; /* the file's first line; secret; NULL without one */
	uint64_t timeout_ms; /* per request; default 10s */
	uint64_t connect_timeout_ms; /* default 2s */
	uint64_t pool_idle_ms; /* unused pooled connection life, default 30s */
	unsigned max_conns; /* pool cap; default 64 */
	/* Parsed from uri. */
	bool tls;
	char *host;
	char *port; /* always set: "80"/"443" by default */
	char *path; /* base path, "" or "/catalog" (no trailing '/') */
	size_t path_len; /* ... and its length */
	char *ca_file; /* extra trust store for https, or NULL */
	/* How floe authenticates to it; never CONF_CRED_DEFAULT once loaded. */
	enum conf_cred auth;
	char *oauth_token_uri; /* oauth2; default uri + /v1/oauth/tokens */
	char *client_id;
	char *client_secret_file;
	char *scope; /* oauth2, google; NULL: none (google: cloud-platform) */
	char *oauth_audience;
	char *sigv4_region;
	char *sigv4_service; /* default "glue" */
	char *aws_credentials_file; /* NULL: the environment's AWS_* */
	char *aws_profile; /* NULL: "default" */
	char *google_key_file;
};

struct conf_policy {
	uint32_t gate_min_clean; /* 5 */
	uint64_t gate_window_ms; /* 7d */
	uint32_t decommission_min_clean; /* 10 */
	uint64_t grace_ms; /* 14d */
	uint64_t freshness_max_lag_ms; /* 15m */
	uint64_t freshness_for_ms; /* 10m */
	uint64_t freshness_interval_ms; /* 60s */
	double error_ratio; /* 2.0 */
	double error_floor; /* 0.01 */
	uint64_t error_window_ms; /* 5m */
	uint32_t error_min_requests; /* 50 */
	char *webhook; /* or NULL */
	uint64_t readers_horizon_ms; /* 14d: stale readers look this far back */
	int decommission_readers; /* enum conf_readers: CONF_READERS_BLOCK */
};

/* [policy] decommission_readers: what stale readers do to a freeze. */
enum conf_readers {
	CONF_READERS_BLOCK = 0, /* refuse it, naming them */
	CONF_READERS_WARN = 1, /* allow it, naming them */
	CONF_READERS_OFF = 2, /* not asked */
};

struct conf_auth {
	char *mode; /* none | token | jwt | passthrough */
	char *token_file;
	char *jwks_file;
	char *audience;
	char *issuer;
};

/* [cluster]: etcd is the truth, LMDB this node's copy (cluster.h). */
struct conf_cluster {
	char *etcd; /* "URL[,URL...]"; NULL: no [cluster], one node */
	char *name; /* this node; default: the host name */
	char *prefix; /* "/floe/": every key floe keeps in etcd */
	uint64_t etcd_timeout_ms; /* per call and endpoint, 2s */
	uint64_t lease_ms; /* the node key's lease, 10s */
	char *user; /* etcd auth, or NULL */
	char *password_file; /* the user's password (first line) */
	char *ca_file; /* https endpoints: trust store, or NULL */
	char *cert_file; /* a client certificate, or NULL */
	char *key_file; /* its key */
};

struct conf {
	char *path;
	/* [floe] */
	char *listen; /* "127.0.0.1:8181" */
	char *admin_socket; /* "var/floe.sock" */
	char *state_dir; /* "var/state" */
	char *rollback_log; /* "var/log/rollback.log" */
	char *access_log; /* NULL: off; "-": stderr */
	char *tls_cert;
	char *tls_key;
	char *listen_plain;
	char *metrics_listen; /* read-only /metrics and status page, or NULL */
	uid_t admin_uids[CONF_MAX_UIDS];
	int nadmin_uids; /* 0: floe's own uid and root */
	uint64_t config_refresh_ms; /* 5m */
	uint64_t idle_timeout_ms; /* client keep-alive idle, 60s */
	uint64_t header_timeout_ms; /* whole request head, 10s */
	uint64_t max_body; /* request body, 8M */
	uint64_t max_header; /* request head, 16k */
	char *namespace_separator; /* announced to clients, or NULL */
	uint64_t drain_ms; /* SIGTERM drain budget, 10s */
	uint64_t cache_size; /* LoadTable cache bytes, 64M; 0 off */
	uint64_t cache_ttl_ms; /* LoadTable cache entry life, 5s */
	uint64_t check_memo_size; /* checked answers kept, 16M; 0 off */
	uint64_t output_budget; /* answers clients have not taken, 256M */
	unsigned workers; /* data-path processes, 1 (no fork); auto resolved */
	struct conf_target target[2]; /* indexed by enum route_side */
	struct conf_policy policy;
	struct conf_auth auth;
	struct conf_cluster cluster;
};

/* What is wrong with a file: each error "PATH[:LINE]: what", by line. */
struct conf_errors {
	char **msg;
	size_t n;
};

/*
 * Read and validate PATH. Returns a new conf, or NULL with every error in
 * ERRS, each as "PATH:LINE: [section] key: what is wrong" (the caller
 * clears ERRS either way). Relative paths in the file, and those of the
 * defaults, are taken from the directory PATH is in.
 */
struct conf *conf_read(const char *path, struct conf_errors *errs);
/* conf_read with FLAGS (CONF_NO_SECRETS, below). */
struct conf *conf_read_flags(const char *path, unsigned flags,
    struct conf_errors *errs);
/*
 * conf_read_flags of the text in SOURCE (a copy of the file, such as
 * /proc/self/fd/N) as though it were the file PATH: its errors name PATH,
 * its relative paths are taken from PATH's directory.
 */
struct conf *conf_read_source(const char *source, const char *path,
    unsigned flags, struct conf_errors *errs);
void conf_errors_clear(struct conf_errors *);
/*
 * The keys of NC, a reloaded conf, that differ from the running OC but
 * change only on a restart (listen, admin_socket, state_dir, the catalogs'
 * uri, ...): each is set back to OC's value in NC, so that NC says what
 * runs, and named in NAMES ("[floe] listen", static strings), at most MAX.
 * Returns how many there are (possibly more than MAX).
 */
size_t conf_keep_restart(struct conf *nc, const struct conf *oc,
    const char **names, size_t max);
/* conf_read with only the first error, in ERR. */
struct conf *conf_load(const char *path, char *err, size_t errlen);
/*
 * The same with FLAGS: CONF_NO_SECRETS leaves token_file and the secret
 * files unread (no token, no check of their modes), for floectl, which
 * needs only the admin socket and may not be allowed to read them.
 */
#define CONF_NO_SECRETS 0x1
struct conf *conf_load_flags(const char *path, unsigned flags, char *err,
    size_t errlen);
void conf_free(struct conf *);
/* "none", "token", "oauth2", "sigv4", "google". */
const char *conf_cred_name(enum conf_cred);
/* Whether A and B authenticate to their catalogs alike (same keys). */
bool conf_cred_same(const struct conf_target *a, const struct conf_target *b);

#endif
