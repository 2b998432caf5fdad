/*
 * floe: ctl.h -- floectl, the operator's command line, in one header with a
 * section per file (as tmux.h is). Who owns what:
 *
 *   floectl.c       main: the global options, the socket lookup, the
 *                   command table ctl_cmds[] and its dispatch, help
 *   usage.c         what floectl says about its commands, all drawn from
 *                   ctl_cmds[]: the command list, a command's help, usage
 *                   errors; and a command's arguments (ctl_args), whose
 *                   errors name what is missing or wrong
 *   client.c        the admin-socket HTTP client: the libcurl handle, one
 *                   call per request, an error answer to a message and an
 *                   exit status, files posted as imports
 *   print.c         human output shared by the commands: aligned tables,
 *                   flattened objects, JSON values as text, JSON as sent
 *   cmd-status.c    status, metrics, reload, events, rollbacks (and
 *                   --follow), wave watch
 *   cmd-route.c     route set|rm|list|import, resolve
 *   cmd-wave.c      wave list|show and the wave transitions
 *   cmd-ledger.c    ledger add|import|show
 *   cmd-eligible.c  eligible: the gate of each wave's next step, its
 *                   evidence, the drift triage, and the exit status
 *   cmd-readers.c   readers, readers forget: the reader inventory
 *
 * One row of ctl_cmds[] per command, one ctl_<command> function per row,
 * defined in the cmd-*.c file of its family. A short-lived CLI: every call
 * blocks, nothing is shared with floe but lib/, the conf loader and
 * rlog_value_text (a trigger's values rounded as the status page does).
 */
#ifndef FLOE_CTL_CTL_H
#define FLOE_CTL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct json_t json_t;

#define CTL_DEFAULT_SOCKET "var/floe.sock"
#define CTL_SERVICE_SOCKET "/run/floe/floe.sock" /* the installed unit's */
#define CTL_EVENTS_PAGE 1000
#define CTL_LIST_PAGE 1000 /* routes or waves asked for at once */
#define CTL_ELIGIBLE_PAGE 1000 /* objects a page of floectl eligible */
#define CTL_FOLLOW_MS 500
#define CTL_TIMEOUT_S 60
#define CTL_IMPORT_MAX (64 << 20) /* floe's admin body limit */

/* floectl's exit statuses. */
enum ctl_exit {
	CTL_OK = 0,
	CTL_REFUSED = 1,
	CTL_USAGE = 2,
	CTL_UNREACHABLE = 3,
	CTL_WARNED = 4, /* done, with a warning on stderr */
};

struct ctl_cmd;

/* The command, connection settings and output mode of one run. */
struct ctl {
	const struct ctl_cmd *cmd; /* the command being run, or NULL */
	const char *sock;
	char *sock_from; /* where sock came from, said when floe is away */
	bool json;
	bool one_record; /* a POST of one ledger record: see ctl_call_raw */
	bool quiet; /* floe unreachable: say it in ERRMSG, not on stderr */
	char errmsg[512];
	void *curl; /* client.c's CURL easy handle */
};

/* One answer of the admin API. */
struct ctl_resp {
	long status;
	char *body;
	size_t len;
	json_t *json; /* the parsed body, or NULL */
};

/* A command option: --NAME [VALUE]. */
struct ctl_opt {
	const char *name;
	bool has_arg;
	bool set;
	const char *val;
};

/* A table being printed: rows of cells, aligned on output. */
struct ctl_table {
	int ncols;
	char **cells; /* row-major */
	size_t nrows;
};

/*
 * One command: its words, what help and usage errors say of it, and the
 * function that runs it. ARGS is the usage after the words: positional
 * arguments first (their names are those usage errors give), then the
 * options; "" for none.
 */
struct ctl_cmd {
	const char *word1;
	const char *word2; /* NULL for one-word commands */
	const char *args; /* "N lakehouse [--canary PCT] ..." */
	const char *summary; /* its line in the command list */
	const char *about; /* what it does, for floectl help COMMAND */
	const char *example; /* a command line, after "floectl " */
	int (*fn)(struct ctl *, int, char **);
};

/* floectl.c */
extern const struct ctl_cmd ctl_cmds[];
extern const size_t ctl_ncmds;
/* floectl help [COMMAND]: the list, a family's or one command's help. */
int ctl_help(struct ctl *, int, char **);

/* usage.c */
/* The usage and command list on OUT. */
void ctl_usage(FILE *);
/* COMMAND's usage, what it does and an example on OUT. */
void ctl_usage_cmd(FILE *, const struct ctl_cmd *);
/* The commands of family WORD1 (wave, route, ledger) on OUT. */
void ctl_usage_family(FILE *, const char *);
/* Whether WORD1 names a family of two-word commands. */
bool ctl_is_family(const char *);
/* "floectl: [COMMAND: ]MESSAGE", then the usage line(s); CTL_USAGE. */
int ctl_usage_error(const struct ctl *, const char *, ...)
    __attribute__((__format__(__printf__, 2, 3)));
/* A family word without a known subcommand (SUB, or NULL). CTL_USAGE. */
int ctl_family_error(const char *, const char *);
/* "wave flip": the words of C's command into BUF. */
const char *ctl_cmd_name(const struct ctl *, char *, size_t);
/*
 * A command's arguments: options into the OPTS table (ending with a NULL
 * name), NMIN..NMAX positional ones into POS. 0 or CTL_USAGE.
 */
int ctl_args(int, char **, struct ctl *, struct ctl_opt *, char **, int, int);
/* A decimal number MIN..MAX. 0 or -1. */
int ctl_parse_u64(const char *, uint64_t, uint64_t, uint64_t *);
/* A wave number, 0..2147483647. 0 or CTL_USAGE after the message. */
int ctl_wave_arg(const struct ctl *, const char *, uint64_t *);

/* client.c */
int ctl_client_init(struct ctl *);
void ctl_client_free(struct ctl *);
/*
 * METHOD PATH with a JSON body (or NULL). 0 with the answer in *R (the
 * caller clears it), or the exit status after the message.
 */
int ctl_call(struct ctl *, const char *, const char *, json_t *,
    struct ctl_resp *);
/* ctl_call with a ready-made body of LEN bytes and its content type. */
int ctl_call_raw(struct ctl *, const char *, const char *, const char *, size_t,
    const char *, struct ctl_resp *);
void ctl_resp_clear(struct ctl_resp *);
/* S percent-encoded for a path or a query. Caller frees. */
char *ctl_escape(struct ctl *, const char *);
/*
 * GET PATH a page at a time (?limit=&after=, following "next") and gather
 * the arrays under KEY into *ALL (caller decrefs). 0, or the exit status
 * after the message.
 */
int ctl_list(struct ctl *, const char *path, const char *key, json_t **all);
/* COMMAND FILE|-: the file posted to PATH as one import. */
int ctl_import(struct ctl *, int, char **, const char *, struct ctl_resp *);

/* print.c */
void ctl_print_json(const struct ctl_resp *);
/* {"KEY":LIST} on one line, as floe answers a whole list. */
void ctl_print_list(const char *, json_t *);
/* A JSON value as text ("-" for null), a string member or "-". */
char *ctl_text(const json_t *);
const char *ctl_str(const json_t *, const char *);
/* {"gap":1,"stale":2} as "gap 1, stale 2" ("-": none). Caller frees. */
char *ctl_buckets(json_t *);
/* Tables: init, add rows of NCOLS strings, print aligned (and free). */
void ctl_table_init(struct ctl_table *, int);
void ctl_table_add(struct ctl_table *, ...);
void ctl_table_print(struct ctl_table *);
void ctl_table_fprint(FILE *, struct ctl_table *);
/* An object's members as "a.b  value" rows. */
void ctl_flatten(struct ctl_table *, const char *, json_t *);
/* A gate refusal's blocking objects as a table on stderr. */
void ctl_print_blocking(json_t *);
/* A dry run's answer; CTL_REFUSED when it would be refused. */
int ctl_print_dry(const struct ctl *, const struct ctl_resp *);
/* A refusal's "errors" (strings), one a line on stderr. */
void ctl_print_errors(json_t *);

/* cmd-cluster.c */
int ctl_cluster(struct ctl *, int, char **);

/* cmd-status.c */
int ctl_status(struct ctl *, int, char **);
int ctl_metrics(struct ctl *, int, char **);
int ctl_reload(struct ctl *, int, char **);
int ctl_events(struct ctl *, int, char **);
int ctl_rollbacks(struct ctl *, int, char **);
int ctl_wave_watch(struct ctl *, int, char **);

/* cmd-route.c */
int ctl_route_set(struct ctl *, int, char **);
int ctl_route_rm(struct ctl *, int, char **);
int ctl_route_list(struct ctl *, int, char **);
int ctl_route_import(struct ctl *, int, char **);
int ctl_resolve(struct ctl *, int, char **);

/* cmd-wave.c */
int ctl_wave_list(struct ctl *, int, char **);
int ctl_wave_show(struct ctl *, int, char **);
int ctl_wave_flip(struct ctl *, int, char **);
int ctl_wave_rollback(struct ctl *, int, char **);
int ctl_wave_ack(struct ctl *, int, char **);
int ctl_wave_signoff(struct ctl *, int, char **);
int ctl_wave_freeze(struct ctl *, int, char **);
int ctl_wave_retire(struct ctl *, int, char **);
int ctl_wave_ack_alarm(struct ctl *, int, char **);
int ctl_wave_set(struct ctl *, int, char **);
int ctl_wave_report_errors(struct ctl *, int, char **);

/* cmd-ledger.c */
int ctl_ledger_add(struct ctl *, int, char **);
int ctl_ledger_import(struct ctl *, int, char **);
int ctl_ledger_show(struct ctl *, int, char **);

/* cmd-eligible.c */
int ctl_eligible(struct ctl *, int, char **);

/* cmd-readers.c */
int ctl_readers(struct ctl *, int, char **);
int ctl_readers_forget(struct ctl *, int, char **);

#endif
