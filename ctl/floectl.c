/*
 * floe: floectl.c -- the operator's command line: talks HTTP+JSON to floe's
 * admin socket and prints aligned tables and short sentences, or the API's
 * JSON as is with --json. This file holds main: the global options, the
 * command table and its dispatch, the usage text and a command's argument
 * parsing. Exit status: 0 done, 1 refused, 2 usage error, 3 floe
 * unreachable or failing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "lib/compat.h"
#include "lib/xmalloc.h"
#include "proxy/conf.h"

/* The width of the command list, and where the summaries start. */
#define CTL_LIST_WIDTH 80
#define CTL_LIST_COL 38
#define CTL_LIST_INDENT 13

static void ctl_usage(FILE *);
static void ctl_usage_cmd(FILE *, const struct ctl_cmd *);
static int ctl_help(struct ctl *, int, char **);
static const struct ctl_cmd *ctl_cmd_find(int, char **);

/* Every command: one row, one function. The order is the command list's. */
static const struct ctl_cmd ctl_cmds[] = {
	{ "status", NULL, "", "floe, store and waves at a glance", ctl_status },
	{ "route", "set", "OBJECT|NS.* WAVE [--force]",
	    "assign a table or a namespace rule to a wave", ctl_route_set },
	{ "route", "rm", "OBJECT|NS.* [--force]", "remove an assignment",
	    ctl_route_rm },
	{ "route", "list", "", "every assignment", ctl_route_list },
	{ "route", "import", "FILE|-",
	    "import routes (JSON lines), all or nothing", ctl_route_import },
	{ "resolve", NULL, "OBJECT [--client ID]",
	    "where OBJECT's reads and writes go, and why", ctl_resolve },
	{ "wave", "list", "", "every wave and its state", ctl_wave_list },
	{ "wave", "show", "N", "one wave with its objects and rules",
	    ctl_wave_show },
	{ "wave", "flip", "N lakehouse [--canary PCT] [--reason TEXT]",
	    "move wave N to the lakehouse (or a canary share)", ctl_wave_flip },
	{ "wave", "rollback", "N [--reason TEXT] [--force-stale]",
	    "put wave N back on the warehouse", ctl_wave_rollback },
	{ "wave", "ack", "N",
	    "return a rolled-back wave to the warehouse state", ctl_wave_ack },
	{ "wave", "signoff", "N --by NAME",
	    "sign off wave N for decommissioning", ctl_wave_signoff },
	{ "wave", "freeze", "N [--reason TEXT]",
	    "stop warehouse writes (decommission gate); grace starts",
	    ctl_wave_freeze },
	{ "wave", "retire", "N",
	    "retire a frozen wave after its grace period (final)",
	    ctl_wave_retire },
	{ "wave", "set",
	    "N [--min-clean N|default] [--window DUR|default] "
	    "[--count-check on|off]",
	    "per-wave cutover gate overrides, metadata count check",
	    ctl_wave_set },
	{ "wave", "report-errors", "N --errors E --total T [--side S]",
	    "errors consumers saw in T reads (error trigger)",
	    ctl_wave_report_errors },
	{ "ledger", "add",
	    "OBJECT --count ok|fail --aggregate ok|fail --hash ok|fail "
	    "[--bucket B] [--at TIME] [--source S]",
	    "record one reconcile result", ctl_ledger_add },
	{ "ledger", "import", "FILE|-", "import JSON lines, all or nothing",
	    ctl_ledger_import },
	{ "ledger", "show", "OBJECT [--limit N]",
	    "an object's newest ledger records", ctl_ledger_show },
	{ "eligible", NULL, "[N]", "gate evidence and drift triage per wave",
	    ctl_eligible },
	{ "events", NULL, "[--follow] [--after SEQ]",
	    "the event log, oldest first", ctl_events },
	{ "rollbacks", NULL, "[--follow]", "the rollback log, readably",
	    ctl_rollbacks },
	{ "metrics", NULL, "", "Prometheus metrics", ctl_metrics },
	{ "help", NULL, "", "this text", ctl_help },
};

/* Print the usage text, the command list drawn from ctl_cmds[], to OUT. */
static void
ctl_usage(FILE *out)
{
	size_t k;

	fputs("usage: floectl [-s SOCKET | -c CONF] [--json] COMMAND [ARGS]\n"
	      "\n"
	      "commands:\n",
	    out);
	for (k = 0; k < nitems(ctl_cmds); k++)
		ctl_usage_cmd(out, &ctl_cmds[k]);
	fputs("\n"
	      "socket: -s SOCKET, else admin_socket from -c CONF, else "
	      "$FLOE_SOCKET,\n"
	      "        else var/floe.sock\n"
	      "exit:   0 done, 1 refused, 2 usage error, 3 floe unreachable or "
	      "failing\n",
	    out);
}

/*
 * One command's entry in the list: its usage and summary on one line when
 * the usage is short; else the usage alone, wrapped before an optional
 * "[...]" at CTL_LIST_WIDTH columns, and the summary on the next line.
 */
static void
ctl_usage_cmd(FILE *out, const struct ctl_cmd *cmd)
{
	const char *p, *next;
	char *usage;
	size_t col, len;

	usage = xasprintf("%s%s%s%s%s", cmd->word1, cmd->word2 ? " " : "",
	    cmd->word2 ? cmd->word2 : "", cmd->args[0] != '\0' ? " " : "",
	    cmd->args);
	if (strlen(usage) + 4 <= CTL_LIST_COL) {
		fprintf(out, "  %-*s%s\n", CTL_LIST_COL - 2, usage,
		    cmd->summary);
		free(usage);
		return;
	}
	fputs("  ", out);
	col = 2;
	for (p = usage; *p != '\0'; p = next) {
		if ((next = strstr(p + 1, " [")) == NULL)
			next = p + strlen(p);
		len = (size_t)(next - p);
		if (p != usage && col + len > CTL_LIST_WIDTH) {
			/* Wrap: the piece starts with its space. */
			fprintf(out, "\n%*s", CTL_LIST_INDENT, "");
			col = CTL_LIST_INDENT;
			p++;
			len--;
		}
		fwrite(p, 1, len, out);
		col += len;
	}
	fprintf(out, "\n%*s%s\n", CTL_LIST_COL, "", cmd->summary);
	free(usage);
}

/* Print a one-line usage error and the hint; the usage exit status. */
int
ctl_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("floectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nusage: floectl [-s SOCKET | -c CONF] [--json] COMMAND [ARGS]; "
	      "floectl help lists the commands\n",
	    stderr);
	return CTL_USAGE;
}

/*
 * Split a command's arguments into OPTS (--name [value], anywhere; --json
 * too) and positional ones into POS. Exactly NMIN..NMAX positional
 * arguments. 0, or the usage exit status after the message.
 */
int
ctl_args(int argc, char **argv, struct ctl *c, struct ctl_opt *opts, char **pos,
    int nmin, int nmax, const char *cmd)
{
	int i, n = 0;
	struct ctl_opt *o;
	bool dashdash = false;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = true;
			continue;
		}
		if (!dashdash && strcmp(a, "--json") == 0) {
			c->json = true;
			continue;
		}
		if (!dashdash && a[0] == '-' && a[1] != '\0') {
			for (o = opts; o != NULL && o->name != NULL; o++)
				if (strcmp(o->name, a) == 0)
					break;
			if (o == NULL || o->name == NULL)
				return ctl_usage_error("%s: unknown option %s",
				    cmd, a);
			if (o->set)
				return ctl_usage_error("%s: %s given twice",
				    cmd, a);
			o->set = true;
			if (o->has_arg) {
				if (i + 1 == argc)
					return ctl_usage_error(
					    "%s: %s needs a value", cmd, a);
				o->val = argv[++i];
			}
			continue;
		}
		if (n == nmax)
			return ctl_usage_error("%s: unexpected argument \"%s\"",
			    cmd, a);
		pos[n++] = argv[i];
	}
	if (n < nmin)
		return ctl_usage_error("%s: missing argument", cmd);
	return 0;
}

/* Parse a decimal number MIN..MAX. 0 or -1. */
int
ctl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0 || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Parse a wave number; a usage error if bad. */
int
ctl_wave_arg(const char *s, uint64_t *n)
{
	if (ctl_parse_u64(s, 0, 2147483647u, n) == -1)
		return ctl_usage_error(
		    "wave \"%s\" is not a number 0..2147483647", s);
	return 0;
}

/* floectl help */
static int
ctl_help(struct ctl *c, int argc, char **argv)
{
	(void)c;
	(void)argc;
	(void)argv;
	ctl_usage(stdout);
	return CTL_OK;
}

/* The row of the command ARGV[0] [ARGV[1]], or NULL. */
static const struct ctl_cmd *
ctl_cmd_find(int argc, char **argv)
{
	size_t k;

	for (k = 0; k < nitems(ctl_cmds); k++) {
		if (strcmp(ctl_cmds[k].word1, argv[0]) != 0)
			continue;
		if (ctl_cmds[k].word2 == NULL)
			return &ctl_cmds[k];
		if (argc > 1 && strcmp(ctl_cmds[k].word2, argv[1]) == 0)
			return &ctl_cmds[k];
	}
	return NULL;
}

/* Parse the global options, find the command, run it. */
int
main(int argc, char **argv)
{
	const char *sock = NULL, *conf_path = NULL;
	struct conf *conf = NULL;
	struct ctl c;
	const struct ctl_cmd *cmd;
	char err[512];
	size_t k;
	int i, rc, used;

	memset(&c, 0, sizeof(c));
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			ctl_usage(stdout);
			return CTL_OK;
		} else if (strcmp(a, "--json") == 0)
			c.json = true;
		else if (strcmp(a, "-s") == 0 || strcmp(a, "-c") == 0) {
			if (i + 1 == argc)
				return ctl_usage_error("%s needs a value", a);
			if ((a[1] == 's' && sock != NULL) ||
			    (a[1] == 'c' && conf_path != NULL))
				return ctl_usage_error("%s given twice", a);
			if (a[1] == 's')
				sock = argv[++i];
			else
				conf_path = argv[++i];
		} else
			return ctl_usage_error("unknown option %s", a);
	}
	if (sock != NULL && conf_path != NULL)
		return ctl_usage_error("-s and -c cannot be used together");
	if (i == argc)
		return ctl_usage_error("no command given");

	if ((cmd = ctl_cmd_find(argc - i, argv + i)) == NULL) {
		for (k = 0; k < nitems(ctl_cmds); k++)
			if (strcmp(ctl_cmds[k].word1, argv[i]) == 0)
				return ctl_usage_error("%s: unknown or missing "
						       "subcommand%s%s",
				    argv[i], i + 1 < argc ? " " : "",
				    i + 1 < argc ? argv[i + 1] : "");
		return ctl_usage_error("unknown command \"%s\"", argv[i]);
	}
	if (cmd->fn == ctl_help)
		return ctl_help(&c, 0, NULL);
	used = cmd->word2 != NULL ? 2 : 1;

	if (sock == NULL && conf_path != NULL) {
		if ((conf = conf_load(conf_path, err, sizeof(err))) == NULL) {
			fprintf(stderr, "floectl: %s\n", err);
			return CTL_USAGE;
		}
		sock = conf->admin_socket != NULL ? conf->admin_socket :
						    CTL_DEFAULT_SOCKET;
	}
	if (sock == NULL)
		sock = getenv("FLOE_SOCKET");
	if (sock == NULL || *sock == '\0')
		sock = CTL_DEFAULT_SOCKET;
	c.sock = sock;

	if (ctl_client_init(&c) == -1) {
		conf_free(conf);
		return CTL_UNREACHABLE;
	}
	rc = cmd->fn(&c, argc - i - used, argv + i + used);
	ctl_client_free(&c);
	conf_free(conf);
	return rc;
}
