/*
 * floe: usage.c -- what floectl says about its commands, all drawn from
 * the command table: the command list, one command's or one family's
 * help, and usage errors, each naming what is missing or wrong and
 * followed by the usage line. Also a command's argument parsing, whose
 * errors those are.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "lib/xmalloc.h"

/* The width of floectl's text, and the command list's columns. */
#define CTL_WIDTH 80
#define CTL_LIST_COL 38
#define CTL_LIST_INDENT 13
#define CTL_USAGE_LEAD "usage: floectl "
#define CTL_USAGE_INDENT (sizeof(CTL_USAGE_LEAD) - 1)
#define CTL_GLOBAL "[-s SOCKET | -c CONF] [--json]"

static void ctl_usage_wrap(FILE *, const char *, size_t,
    const struct ctl_cmd *);
static void ctl_usage_entry(FILE *, const struct ctl_cmd *);
static void ctl_text_wrap(FILE *, const char *, size_t);
static int ctl_arg_names(const struct ctl_cmd *, int, int, char *, size_t);
static bool ctl_is_number(const char *);

/*
 * LEAD, then the command's words and usage, wrapped at CTL_WIDTH before
 * an option ("[...]" or "--x"); continuation lines are indented INDENT.
 */
static void
ctl_usage_wrap(FILE *out, const char *lead, size_t indent,
    const struct ctl_cmd *cmd)
{
	const char *p, *next, *a, *b;
	char *usage;
	size_t col, len;

	usage = xasprintf("%s%s%s%s%s", cmd->word1, cmd->word2 ? " " : "",
	    cmd->word2 ? cmd->word2 : "", cmd->args[0] != '\0' ? " " : "",
	    cmd->args);
	fputs(lead, out);
	col = strlen(lead);
	for (p = usage; *p != '\0'; p = next) {
		a = strstr(p + 1, " [");
		b = strstr(p + 1, " --");
		next = a == NULL ? b : b == NULL ? a : a < b ? a : b;
		if (next == NULL)
			next = p + strlen(p);
		len = (size_t)(next - p);
		if (p != usage && col + len > CTL_WIDTH) {
			/* Wrap: the piece starts with its space. */
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
			p++;
			len--;
		}
		fwrite(p, 1, len, out);
		col += len;
	}
	putc('\n', out);
	free(usage);
}

/*
 * One command's entry in the list: its usage and summary on one line when
 * the usage is short; else the usage alone, wrapped, and the summary on
 * the next line.
 */
static void
ctl_usage_entry(FILE *out, const struct ctl_cmd *cmd)
{
	size_t len;

	len = strlen(cmd->word1) + (cmd->word2 ? 1 + strlen(cmd->word2) : 0) +
	    (cmd->args[0] != '\0' ? 1 + strlen(cmd->args) : 0);
	if (len + 4 <= CTL_LIST_COL) {
		fprintf(out, "  %s%s%s%s%s%*s%s\n", cmd->word1,
		    cmd->word2 ? " " : "", cmd->word2 ? cmd->word2 : "",
		    cmd->args[0] != '\0' ? " " : "", cmd->args,
		    (int)(CTL_LIST_COL - 2 - len), "", cmd->summary);
		return;
	}
	ctl_usage_wrap(out, "  ", CTL_LIST_INDENT, cmd);
	fprintf(out, "%*s%s\n", CTL_LIST_COL, "", cmd->summary);
}

/* TEXT on OUT with its words wrapped at CTL_WIDTH, each line indented. */
static void
ctl_text_wrap(FILE *out, const char *text, size_t indent)
{
	const char *p = text, *e;
	size_t col = 0, len;

	while (*p != '\0') {
		if (*p == ' ') {
			p++;
			continue;
		}
		len = strcspn(p, " ");
		e = p + len;
		if (col > 0 && col + 1 + len > CTL_WIDTH) {
			putc('\n', out);
			col = 0;
		}
		if (col == 0) {
			fprintf(out, "%*s", (int)indent, "");
			col = indent;
		} else {
			putc(' ', out);
			col++;
		}
		fwrite(p, 1, len, out);
		col += len;
		p = e;
	}
	if (col > 0)
		putc('\n', out);
}

/* Print the usage text and the command list, drawn from ctl_cmds[]. */
void
ctl_usage(FILE *out)
{
	size_t k;

	fputs("usage: floectl " CTL_GLOBAL " COMMAND [ARGS]\n"
	      "       floectl help [COMMAND] | --help | --version\n"
	      "\n"
	      "commands:\n",
	    out);
	for (k = 0; k < ctl_ncmds; k++)
		ctl_usage_entry(out, &ctl_cmds[k]);
	fputs(
	    "\n"
	    "socket: -s SOCKET, else admin_socket from -c CONF, else "
	    "$FLOE_SOCKET,\n"
	    "        else var/floe.sock, else /run/floe/floe.sock (the "
	    "service's)\n"
	    "exit:   0 done, 1 refused, 2 usage error, 3 floe unreachable or "
	    "failing,\n"
	    "        4 done with a warning (a rollback whose log line waits)\n"
	    "help:   floectl help COMMAND, or floectl COMMAND --help, "
	    "explains one\n",
	    out);
}

/* One command's help: usage, what it does, an example. */
void
ctl_usage_cmd(FILE *out, const struct ctl_cmd *cmd)
{
	ctl_usage_wrap(out, CTL_USAGE_LEAD, CTL_USAGE_INDENT, cmd);
	fputc('\n', out);
	ctl_text_wrap(out, cmd->about, 0);
	fprintf(out, "\nexample:\n  floectl %s\n", cmd->example);
}

/* The commands of family WORD1, as in the list. */
void
ctl_usage_family(FILE *out, const char *word1)
{
	size_t k;

	fprintf(out,
	    "usage: floectl " CTL_GLOBAL " %s SUBCOMMAND [ARGS]\n\n"
	    "%s subcommands:\n",
	    word1, word1);
	for (k = 0; k < ctl_ncmds; k++)
		if (strcmp(ctl_cmds[k].word1, word1) == 0)
			ctl_usage_entry(out, &ctl_cmds[k]);
	fprintf(out,
	    "\nfloectl help %s SUBCOMMAND explains one, with an example.\n",
	    word1);
}

/* Whether WORD1 is the first word of two-word commands. */
bool
ctl_is_family(const char *word1)
{
	size_t k;

	for (k = 0; k < ctl_ncmds; k++)
		if (ctl_cmds[k].word2 != NULL &&
		    strcmp(ctl_cmds[k].word1, word1) == 0)
			return true;
	return false;
}

/* The words of C's command ("wave flip") in BUF, or "" for none. */
const char *
ctl_cmd_name(const struct ctl *c, char *buf, size_t len)
{
	int n;

	buf[0] = '\0';
	if (c == NULL || c->cmd == NULL)
		return buf;
	n = snprintf(buf, len, "%s%s%s", c->cmd->word1,
	    c->cmd->word2 ? " " : "", c->cmd->word2 ? c->cmd->word2 : "");
	if (n < 0 || (size_t)n >= len)
		buf[0] = '\0';
	return buf;
}

/*
 * "floectl: COMMAND: MESSAGE" on stderr and the command's usage line (the
 * global one and a pointer to help when there is no command); returns the
 * usage exit status.
 */
int
ctl_usage_error(const struct ctl *c, const char *fmt, ...)
{
	char name[64];
	va_list ap;

	fputs("floectl: ", stderr);
	if (ctl_cmd_name(c, name, sizeof(name))[0] != '\0')
		fprintf(stderr, "%s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (c != NULL && c->cmd != NULL)
		ctl_usage_wrap(stderr, CTL_USAGE_LEAD, CTL_USAGE_INDENT,
		    c->cmd);
	else
		fputs("usage: floectl " CTL_GLOBAL " COMMAND [ARGS]; floectl "
		      "help lists the commands\n",
		    stderr);
	return CTL_USAGE;
}

/*
 * WORD1 without a subcommand, or with SUB, which it does not have: name
 * the subcommands and show their usage lines.
 */
int
ctl_family_error(const char *word1, const char *sub)
{
	const char *lead = CTL_USAGE_LEAD;
	size_t k, n = 0;

	if (sub == NULL)
		fprintf(stderr, "floectl: %s: missing subcommand; one of ",
		    word1);
	else
		fprintf(stderr,
		    "floectl: %s: unknown subcommand \"%s\"; one of ", word1,
		    sub);
	for (k = 0; k < ctl_ncmds; k++)
		if (strcmp(ctl_cmds[k].word1, word1) == 0)
			fprintf(stderr, "%s%s", n++ > 0 ? ", " : "",
			    ctl_cmds[k].word2);
	fputc('\n', stderr);
	for (k = 0; k < ctl_ncmds; k++) {
		if (strcmp(ctl_cmds[k].word1, word1) != 0)
			continue;
		ctl_usage_wrap(stderr, lead, CTL_USAGE_INDENT, &ctl_cmds[k]);
		lead = "       floectl ";
	}
	return CTL_USAGE;
}

/*
 * The names of positional arguments FROM..TO-1 of CMD, read from its usage
 * (the words before the first option, brackets and "..." dropped), joined
 * by spaces into BUF. The count named.
 */
static int
ctl_arg_names(const struct ctl_cmd *cmd, int from, int to, char *buf,
    size_t len)
{
	const char *p = cmd->args;
	size_t n, used = 0;
	int i = 0, named = 0;

	buf[0] = '\0';
	while (*p != '\0' && i < to) {
		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (n == 0 || p[0] == '-' || (p[0] == '[' && p[1] == '-'))
			break;
		if (i++ < from) {
			p += n;
			continue;
		}
		if (p[0] == '[') {
			p++;
			n--;
		}
		while (n > 0 && (p[n - 1] == ']' || p[n - 1] == '.'))
			n--;
		if (used + (used > 0) + n + 1 > len)
			break;
		if (used > 0)
			buf[used++] = ' ';
		memcpy(buf + used, p, n);
		used += n;
		buf[used] = '\0';
		named++;
		p += strcspn(p, " ");
	}
	return named;
}

/* Whether S is a decimal number with a sign: an argument, not an option. */
static bool
ctl_is_number(const char *s)
{
	return s[0] == '-' && s[1] >= '0' && s[1] <= '9';
}

/*
 * Split a command's arguments into OPTS (--name [value], anywhere; --json
 * too) and positional ones into POS. Exactly NMIN..NMAX positional
 * arguments; "-1" is one (a wrong one), not an option. 0, or the usage
 * exit status after a message naming what is missing or wrong.
 */
int
ctl_args(int argc, char **argv, struct ctl *c, struct ctl_opt *opts, char **pos,
    int nmin, int nmax)
{
	int i, n = 0;
	struct ctl_opt *o;
	bool dashdash = false;
	char names[256];

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
		if (!dashdash && a[0] == '-' && a[1] != '\0' &&
		    !ctl_is_number(a)) {
			for (o = opts; o != NULL && o->name != NULL; o++)
				if (strcmp(o->name, a) == 0)
					break;
			if (o == NULL || o->name == NULL)
				return ctl_usage_error(c, "unknown option %s",
				    a);
			if (o->set)
				return ctl_usage_error(c, "%s given twice", a);
			o->set = true;
			if (o->has_arg) {
				if (i + 1 == argc)
					return ctl_usage_error(c,
					    "%s needs a value", a);
				o->val = argv[++i];
			}
			continue;
		}
		if (n == nmax)
			return ctl_usage_error(c, "unexpected argument \"%s\"",
			    a);
		pos[n++] = argv[i];
	}
	if (n < nmin) {
		if (ctl_arg_names(c->cmd, n, nmin, names, sizeof(names)) > 1)
			return ctl_usage_error(c, "missing arguments %s",
			    names);
		return ctl_usage_error(c, "missing argument %s", names);
	}
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
ctl_wave_arg(const struct ctl *c, const char *s, uint64_t *n)
{
	if (ctl_parse_u64(s, 0, 2147483647u, n) == -1)
		return ctl_usage_error(c,
		    "the wave must be a number from 0 to 2147483647, not "
		    "\"%s\"",
		    s);
	return 0;
}
