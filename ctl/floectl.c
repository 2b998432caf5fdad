/*
 * floe: floectl.c -- the operator's command line: talks HTTP+JSON to floe's
 * admin socket and prints aligned tables and short sentences, or the API's
 * JSON as is with --json. This file holds main: the global options, the
 * socket lookup, and the command table with its dispatch; the help of each
 * command is written in its row. Exit status: 0 done, 1 refused, 2 usage
 * error, 3 floe unreachable or failing, 4 done with a warning.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "lib/compat.h"
#include "lib/version.h"
#include "lib/xmalloc.h"
#include "proxy/conf.h"

static const struct ctl_cmd *ctl_cmd_find(int, char **);
static bool ctl_wants_help(int, char **);

/*
 * Every command: one row, one function. The order is the command list's;
 * help, usage errors and the bash completion's lists are drawn from here.
 */
const struct ctl_cmd ctl_cmds[] = {
	{ .word1 = "status",
	    .args = "[--all]",
	    .summary = "floe, store and waves at a glance",
	    .about = "Show floe at a glance: version, readiness, uptime, "
		     "the store, the answers held against output_budget, "
		     "the cache and the memo against their sizes, each "
		     "catalog up or down, the waves by state, "
		     "each armed wave's error ratio and lag against their "
		     "thresholds, and each rolled-back wave with the evidence "
		     "of its rollback. --all prints every member of the "
		     "status, one \"key  value\" line each; --json the "
		     "answer as it is.",
	    .example = "--json status | jq .store",
	    .fn = ctl_status },
	{ .word1 = "route",
	    .word2 = "set",
	    .args = "OBJECT|NS.* WAVE [--force] [--dry-run]",
	    .summary = "assign a table or a namespace rule to a wave",
	    .about = "Assign a table, or with NS.* every table under a "
		     "namespace, to wave WAVE (a number from 0 to "
		     "2147483647). Refused (exit 1) when it would move "
		     "readers past a gate: joining a wave that is off the "
		     "warehouse, or leaving a frozen or retired one; --force "
		     "does it anyway and marks the event forced. --dry-run "
		     "says where its readers go before and after, whether it "
		     "would be refused and who loaded it in the last day, "
		     "and changes nothing.",
	    .example = "route set db.orders 3",
	    .fn = ctl_route_set },
	{ .word1 = "route",
	    .word2 = "rm",
	    .args = "OBJECT|NS.* [--force]",
	    .summary = "remove an assignment",
	    .about = "Remove the assignment of a table or a namespace rule: "
		     "the table falls back to a rule, or to the warehouse. "
		     "Removing one from a frozen or retired wave is refused "
		     "unless --force.",
	    .example = "route rm db.orders",
	    .fn = ctl_route_rm },
	{ .word1 = "route",
	    .word2 = "list",
	    .args = "",
	    .summary = "every assignment",
	    .about = "List every assignment, tables and rules, in key order, "
		     "with its wave and since when.",
	    .example = "route list",
	    .fn = ctl_route_list },
	{ .word1 = "route",
	    .word2 = "import",
	    .args = "FILE|-",
	    .summary = "import routes (JSON lines), all or nothing",
	    .about = "Import routes from FILE (- reads stdin), one JSON "
		     "object a line as route set takes them "
		     "({\"object\":\"db.orders\",\"wave\":3}), in one synced "
		     "write: all of them, or none and the first bad line "
		     "named. Routes already on their wave are left alone.",
	    .example = "route import routes.jsonl",
	    .fn = ctl_route_import },
	{ .word1 = "resolve",
	    .args = "OBJECT [--client ID]",
	    .summary = "where OBJECT's reads and writes go, and why",
	    .about = "Show where OBJECT's reads and writes go and why (its "
		     "own route, a namespace rule, or none), as the data path "
		     "decides. In a canary wave the side depends on the "
		     "client: --client gives the identity floe hashes, the "
		     "client's Authorization header, else its address.",
	    .example = "resolve db.orders --client 10.0.0.7",
	    .fn = ctl_resolve },
	{ .word1 = "wave",
	    .word2 = "list",
	    .args = "",
	    .summary = "every wave and its state",
	    .about = "List every wave that has a route or a state: its state, "
		     "canary share, tables and rules, and who moved it last, "
		     "when and why.",
	    .example = "wave list",
	    .fn = ctl_wave_list },
	{ .word1 = "wave",
	    .word2 = "show",
	    .args = "N",
	    .summary = "one wave with its objects and rules",
	    .about = "Show wave N in detail: its state and share, when it was "
		     "flipped, frozen and rolled back, its sign-off and gate "
		     "overrides, then its tables and rules.",
	    .example = "wave show 3",
	    .fn = ctl_wave_show },
	{ .word1 = "wave",
	    .word2 = "watch",
	    .args = "N [--count K] [--interval SECONDS]",
	    .summary = "one wave live, like a rollout's --watch",
	    .about = "Show wave N live: every interval (2 s) a line with its "
		     "state and share, its lakehouse error ratio and freshness "
		     "lag against their thresholds (or the evidence of its "
		     "rollback), then its events as they come (its last 5 "
		     "first). --count stops after K lines; a restart of floe "
		     "is waited out.",
	    .example = "wave watch 3 --interval 5",
	    .fn = ctl_wave_watch },
	{ .word1 = "wave",
	    .word2 = "flip",
	    .args = "N lakehouse [--canary PCT] [--reason TEXT] [--dry-run]",
	    .summary = "move wave N to the lakehouse (or a canary share)",
	    .about = "Move wave N's readers to the lakehouse, or with "
		     "--canary a sticky share of them (1 to 100); a "
		     "lakehouse wave may step down to a canary share. Prints "
		     "the share before and after. Every move towards the "
		     "lakehouse must pass the cutover gate (floectl eligible "
		     "N shows it); refused (exit 1) when it does not hold, "
		     "when the wave is already at that share, or when it is "
		     "rolled back (wave ack first), frozen or retired. "
		     "Writes stay on the warehouse. --dry-run says what "
		     "would happen (the tables that move, the gate's "
		     "verdict, who loaded them in the last day) and changes "
		     "nothing; exit 1 when it would be refused.",
	    .example = "wave flip 3 lakehouse --canary 10 --reason \"clean "
		       "for a week\"",
	    .fn = ctl_wave_flip },
	{ .word1 = "wave",
	    .word2 = "rollback",
	    .args = "N [--reason TEXT] [--force-stale]",
	    .summary = "put wave N back on the warehouse",
	    .about = "Put a canary or lakehouse wave's readers back on the "
		     "warehouse at once, never gated, and write it to the "
		     "rollback log. A frozen wave's warehouse copy no longer "
		     "gets writes: rolling it back needs --force-stale.",
	    .example = "wave rollback 3 --reason \"dashboards disagree\"",
	    .fn = ctl_wave_rollback },
	{ .word1 = "wave",
	    .word2 = "ack",
	    .args = "N",
	    .summary = "return a rolled-back wave to the warehouse state",
	    .about = "Acknowledge a rollback: the rolled-back wave N returns "
		     "to the warehouse state and may be flipped again.",
	    .example = "wave ack 3",
	    .fn = ctl_wave_ack },
	{ .word1 = "wave",
	    .word2 = "signoff",
	    .args = "N --by NAME",
	    .summary = "sign off wave N for decommissioning",
	    .about = "Record that NAME signs wave N off for decommissioning: "
		     "the lakehouse held up under real reads. Only for a "
		     "canary or lakehouse wave; a rollback clears it.",
	    .example = "wave signoff 3 --by alice",
	    .fn = ctl_wave_signoff },
	{ .word1 = "wave",
	    .word2 = "freeze",
	    .args = "N [--reason TEXT] [--dry-run]",
	    .summary =
		"stop warehouse writes (decommission gate); grace starts",
	    .about = "Declare that writes to wave N's warehouse copy have "
		     "stopped: the lakehouse becomes authoritative and the "
		     "grace period starts. Refused unless the wave is on the "
		     "lakehouse and the decommission gate holds (clean "
		     "records since the flip, a sign-off, and no stale "
		     "readers: see floectl readers). --dry-run says what "
		     "would happen and changes nothing.",
	    .example = "wave freeze 3 --reason \"dual-write off\"",
	    .fn = ctl_wave_freeze },
	{ .word1 = "wave",
	    .word2 = "retire",
	    .args = "N [--dry-run]",
	    .summary = "retire a frozen wave after its grace period (final)",
	    .about = "Retire frozen wave N once its grace period has passed. "
		     "Final: the warehouse copy of its tables is no longer "
		     "consulted, and every later move is refused. --dry-run "
		     "says whether it could, and changes nothing.",
	    .example = "wave retire 3",
	    .fn = ctl_wave_retire },
	{ .word1 = "wave",
	    .word2 = "ack-alarm",
	    .args = "N",
	    .summary = "acknowledge a frozen wave's split-brain alarm",
	    .about = "Acknowledge the split-brain alarm of frozen wave N: its "
		     "warehouse copy changed after the freeze, so a writer "
		     "bypassed floe. Stop that writer first; the wave stays "
		     "frozen either way. A later change raises the alarm "
		     "again. Refused (exit 1) when there is none.",
	    .example = "wave ack-alarm 3",
	    .fn = ctl_wave_ack_alarm },
	{ .word1 = "wave",
	    .word2 = "set",
	    .args = "N [--min-clean N|default] [--window DUR|default] "
		    "[--count-check on|off]",
	    .summary = "per-wave cutover gate overrides, metadata count check",
	    .about = "Override the cutover gate for wave N (--min-clean, "
		     "--window; \"default\" returns to floe.conf's), or turn "
		     "its metadata count check off and on. At least one "
		     "option.",
	    .example = "wave set 3 --min-clean 10 --window 14d",
	    .fn = ctl_wave_set },
	{ .word1 = "wave",
	    .word2 = "report-errors",
	    .args = "N --errors E --total T [--side S]",
	    .summary = "errors consumers saw in T reads (error trigger)",
	    .about = "Report errors consumers saw: E failed reads of T of "
		     "wave N's tables, counted in the error trigger's window "
		     "on the side the wave reads from (or --side warehouse or "
		     "lakehouse). The trigger is checked before the answer.",
	    .example = "wave report-errors 3 --errors 5 --total 200",
	    .fn = ctl_wave_report_errors },
	{ .word1 = "ledger",
	    .word2 = "add",
	    .args = "OBJECT --count ok|fail --aggregate ok|fail --hash ok|fail "
		    "[--bucket B] [--at TIME] [--source S]",
	    .summary = "record one reconcile result",
	    .about = "Record one reconcile result for a table: its three "
		     "tiers (row count, aggregates, row hash), the bucket "
		     "when a tier failed (stale, gap or value-drift), the "
		     "time (RFC 3339, default now) and the source (default "
		     "floectl).",
	    .example = "ledger add db.orders --count ok --aggregate fail "
		       "--hash fail --bucket gap",
	    .fn = ctl_ledger_add },
	{ .word1 = "ledger",
	    .word2 = "import",
	    .args = "FILE|-",
	    .summary = "import JSON lines, all or nothing",
	    .about = "Import reconcile results from FILE (- reads stdin), one "
		     "JSON record a line, in one synced write: all of them, "
		     "or none and the first bad line named. A record the "
		     "ledger already holds is counted, not stored again.",
	    .example = "ledger import nightly.jsonl",
	    .fn = ctl_ledger_import },
	{ .word1 = "ledger",
	    .word2 = "show",
	    .args = "OBJECT [--limit N]",
	    .summary = "an object's newest ledger records",
	    .about = "Show a table's newest ledger records (20 unless "
		     "--limit), oldest first: each tier's result, the bucket "
		     "and the source.",
	    .example = "ledger show db.orders --limit 50",
	    .fn = ctl_ledger_show },
	{ .word1 = "eligible",
	    .args = "[N...]",
	    .summary = "gate evidence and drift triage per wave",
	    .about = "For each wave N (every wave without one), the gate its "
		     "next step must pass, with the evidence per table: the "
		     "cutover gate on the warehouse, in a canary or rolled "
		     "back; the decommission gate on the lakehouse; the grace "
		     "period when frozen. Then the open mismatches by bucket "
		     "and what to do. Exit 1 when any of them is blocked (or "
		     "retired), 0 when all may go on.",
	    .example = "eligible 3 && floectl wave flip 3 lakehouse",
	    .fn = ctl_eligible },
	{ .word1 = "readers",
	    .word2 = "forget",
	    .args = "IDENTITY [OBJECT]",
	    .summary = "excuse a stale reader of the warehouse copy",
	    .about = "Excuse IDENTITY as a reader of the warehouse copy of "
		     "OBJECT (of every table without one): it no longer "
		     "counts as a stale reader, so it does not hold back a "
		     "freeze; recorded as an event. A later load from the "
		     "warehouse makes it stale again.",
	    .example = "readers forget token:3f2a9c0d1e4b5a67 db.orders",
	    .fn = ctl_readers_forget },
	{ .word1 = "readers",
	    .args = "OBJECT | --wave N [--limit N]",
	    .summary =
		"who loaded a table, or a wave's tables, from which side",
	    .about = "The reader inventory of a table or of every table of "
		     "wave N, newest first: each client identity (the "
		     "authenticated client, else token:HASH of its "
		     "credential, else its address) per side, with its first "
		     "and last load, its count, its user agent and when it "
		     "was last seen loading any table. Then the stale "
		     "readers (they loaded the warehouse copy within "
		     "readers_horizon before the flip and not the lakehouse "
		     "copy since: a freeze waits for them) and the clients "
		     "that revalidated with an old-side ETag since the flip. "
		     "--limit caps the rows (1000).",
	    .example = "readers --wave 3",
	    .fn = ctl_readers },
	{ .word1 = "events",
	    .args = "[--follow] [--after SEQ]",
	    .summary = "the event log, oldest first",
	    .about = "Print the event log, oldest first: every route change, "
		     "transition and refusal, with who made it. --after starts "
		     "after that sequence number; --follow keeps printing new "
		     "events until interrupted, and across a restart of floe "
		     "goes on after the last one printed. Long values get "
		     "lines of their own, objects taken apart into fields.",
	    .example = "events --follow --after 120",
	    .fn = ctl_events },
	{ .word1 = "rollbacks",
	    .args = "[--follow]",
	    .summary = "the rollback log, readably",
	    .about = "Print the rollback log, oldest first: when, which wave, "
		     "which trigger, the move and who; the tables, what was "
		     "measured against which threshold, and the reason. "
		     "--follow keeps printing new ones, across restarts of "
		     "floe; --json prints the lines as they are in the file.",
	    .example = "rollbacks --follow",
	    .fn = ctl_rollbacks },
	{ .word1 = "cluster",
	    .args = "",
	    .summary = "every node of the cluster, side by side",
	    .about = "In cluster mode, list every node (from its key in "
		     "etcd): the etcd revision it applied, the hash of its "
		     "routes and waves, whether it is connected to etcd, its "
		     "version and last heartbeat. A node behind the last "
		     "change this node applied is LAGGING; one caught up "
		     "with another hash DISAGREES. Exit 1 if any node lags, "
		     "disagrees or is not connected.",
	    .example = "--json cluster | jq '.nodes[] | [.name, .hash]'",
	    .fn = ctl_cluster },
	{ .word1 = "metrics",
	    .args = "",
	    .summary = "Prometheus metrics",
	    .about = "Print floe's Prometheus metrics, as text.",
	    .example = "metrics | grep '^floe_requests'",
	    .fn = ctl_metrics },
	{ .word1 = "reload",
	    .args = "",
	    .summary = "make floe read its configuration again",
	    .about = "Make floe read floe.conf again, as SIGHUP does, and "
		     "print the outcome. A file with errors changes nothing: "
		     "each error is printed (PATH:LINE) and the exit status "
		     "is 1. Keys taken only at start-up (listen, "
		     "admin_socket, state_dir, the catalogs' uri, ...) keep "
		     "their running value and are named, the rest applies, "
		     "and the exit status is 1 as well; 0 means every key "
		     "applied. The new generation shows in status.",
	    .example = "reload",
	    .fn = ctl_reload },
	{ .word1 = "help",
	    .args = "[COMMAND]",
	    .summary = "this text, or what one command does",
	    .about = "List the commands, or show one command's usage, what it "
		     "does and an example (as COMMAND --help does); a family "
		     "such as wave lists its subcommands.",
	    .example = "help wave flip",
	    .fn = ctl_help },
};
const size_t ctl_ncmds = nitems(ctl_cmds);

/*
 * floectl help [WORD1 [WORD2]]: the command list, a family's subcommands,
 * or one command's help. Needs no floe.
 */
int
ctl_help(struct ctl *c, int argc, char **argv)
{
	const struct ctl_cmd *cmd;

	if (argc == 0) {
		ctl_usage(stdout);
		return CTL_OK;
	}
	if (argc > 2)
		return ctl_usage_error(c, "unexpected argument \"%s\"",
		    argv[2]);
	if ((cmd = ctl_cmd_find(argc, argv)) != NULL &&
	    (cmd->word2 == NULL || argc == 2)) {
		if (cmd->word2 == NULL && argc == 2)
			return ctl_usage_error(c, "%s has no subcommand \"%s\"",
			    argv[0], argv[1]);
		ctl_usage_cmd(stdout, cmd);
		return CTL_OK;
	}
	if (ctl_is_family(argv[0])) {
		if (argc == 2)
			return ctl_family_error(argv[0], argv[1]);
		ctl_usage_family(stdout, argv[0]);
		return CTL_OK;
	}
	return ctl_usage_error(c, "no command \"%s\"", argv[0]);
}

/* The row of the command ARGV[0] [ARGV[1]], or NULL. */
static const struct ctl_cmd *
ctl_cmd_find(int argc, char **argv)
{
	size_t k;

	for (k = 0; k < ctl_ncmds; k++) {
		if (strcmp(ctl_cmds[k].word1, argv[0]) != 0)
			continue;
		if (ctl_cmds[k].word2 == NULL)
			return &ctl_cmds[k];
		if (argc > 1 && strcmp(ctl_cmds[k].word2, argv[1]) == 0)
			return &ctl_cmds[k];
	}
	return NULL;
}

/* Whether a command's arguments ask for its help (before any "--"). */
static bool
ctl_wants_help(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

/*
 * Parse the global options, find the command, run it. Help, the version
 * and usage errors need no floe: they come before the socket is chosen.
 */
int
main(int argc, char **argv)
{
	const char *sock = NULL, *conf_path = NULL;
	struct conf *conf = NULL;
	struct ctl c;
	const struct ctl_cmd *cmd;
	char err[512];
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
		} else if (strcmp(a, "--version") == 0) {
			printf("floectl %s\n", version_get());
			return CTL_OK;
		} else if (strcmp(a, "--json") == 0)
			c.json = true;
		else if (strcmp(a, "-s") == 0 || strcmp(a, "-c") == 0) {
			if (i + 1 == argc)
				return ctl_usage_error(NULL, "%s needs a value",
				    a);
			if ((a[1] == 's' && sock != NULL) ||
			    (a[1] == 'c' && conf_path != NULL))
				return ctl_usage_error(NULL, "%s given twice",
				    a);
			if (a[1] == 's')
				sock = argv[++i];
			else
				conf_path = argv[++i];
		} else
			return ctl_usage_error(NULL, "unknown option %s", a);
	}
	if (sock != NULL && conf_path != NULL)
		return ctl_usage_error(NULL,
		    "-s and -c cannot be used together");
	if (i == argc)
		return ctl_usage_error(NULL, "no command given");

	if ((cmd = ctl_cmd_find(argc - i, argv + i)) == NULL) {
		if (!ctl_is_family(argv[i]))
			return ctl_usage_error(NULL, "unknown command \"%s\"",
			    argv[i]);
		if (i + 1 < argc && ctl_wants_help(1, argv + i + 1)) {
			ctl_usage_family(stdout, argv[i]);
			return CTL_OK;
		}
		return ctl_family_error(argv[i],
		    i + 1 < argc ? argv[i + 1] : NULL);
	}
	c.cmd = cmd;
	used = cmd->word2 != NULL ? 2 : 1;
	if (ctl_wants_help(argc - i - used, argv + i + used)) {
		ctl_usage_cmd(stdout, cmd);
		return CTL_OK;
	}
	if (cmd->fn == ctl_help)
		return ctl_help(&c, argc - i - used, argv + i + used);

	if (sock == NULL && conf_path != NULL) {
		/* Only the socket: secret files are floe's to read. */
		if ((conf = conf_load_flags(conf_path, CONF_NO_SECRETS, err,
			 sizeof(err))) == NULL) {
			fprintf(stderr, "floectl: %s\n", err);
			return CTL_USAGE;
		}
		sock = conf->admin_socket;
		c.sock_from = xasprintf("admin_socket of %s, relative paths "
					"taken from its directory",
		    conf_path);
	} else if (sock != NULL)
		c.sock_from = xstrdup("-s");
	if (sock == NULL && (sock = getenv("FLOE_SOCKET")) != NULL &&
	    *sock != '\0')
		c.sock_from = xstrdup("FLOE_SOCKET");
	/*
	 * The default: var/floe.sock in a checkout; on a machine where floe
	 * is installed as a service and there is none, the service's socket.
	 */
	if ((sock == NULL || *sock == '\0') &&
	    access(CTL_DEFAULT_SOCKET, F_OK) == -1 &&
	    access(CTL_SERVICE_SOCKET, F_OK) == 0) {
		sock = CTL_SERVICE_SOCKET;
		c.sock_from = xstrdup("the installed service's socket, as "
				      "there is no var/floe.sock here; -s, -c "
				      "or FLOE_SOCKET name another");
	} else if (sock == NULL || *sock == '\0') {
		sock = CTL_DEFAULT_SOCKET;
		c.sock_from = xstrdup("the default, relative to the current "
				      "directory; -s, -c or FLOE_SOCKET name "
				      "another");
	}
	c.sock = sock;

	if (ctl_client_init(&c) == -1) {
		conf_free(conf);
		free(c.sock_from);
		return CTL_UNREACHABLE;
	}
	rc = cmd->fn(&c, argc - i - used, argv + i + used);
	ctl_client_free(&c);
	conf_free(conf);
	free(c.sock_from);
	return rc;
}
