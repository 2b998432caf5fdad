/*
 * floe: test_log.c -- lib/log.c: each line is one write, so the lines of
 * workers and their master sharing one stderr (a file, a pipe) never
 * interleave; a line longer than the buffer comes out whole; errno is kept.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/log.h"

#define PROCS 4
#define LINES 1500

static const char *const prefix[PROCS] = { "",
	"worker 0: ", "worker 1: ", "worker 2: " };

/* An unnamed file under TMPDIR, open for reading and writing. */
static int
tmp_fd(void)
{
	const char *base = getenv("TMPDIR");
	char path[512];
	int fd;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	if ((size_t)snprintf(path, sizeof(path), "%s/floe-test-log.XXXXXX",
		base) >= sizeof(path))
		fail_msg("TMPDIR too long");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

/* Log LINES lines to FD as process K would, then exit. */
static void
child_log(int fd, int k)
{
	int i;

	if (dup2(fd, STDERR_FILENO) < 0)
		_exit(2);
	log_init(0);
	log_set_prefix(prefix[k]);
	for (i = 0; i < LINES; i++)
		log_info("line %d of process %d: %s", i, k,
		    "reload: configuration applied (generation 2)");
	_exit(0);
}

/* The start of a line in the foreground: "YYYY-MM-DDTHH:MM:SS.mmmZ ". */
static const char stamp[] = "^[0-9]{4}-[0-9]{2}-[0-9]{2}"
			    "T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z ";

/* How many lines of TEXT start with a time stamp. */
static int
stamped_lines(const char *text)
{
	const char *p = text, *nl;
	char one[256];
	regex_t re;
	int n = 0;

	assert_int_equal(regcomp(&re, stamp, REG_EXTENDED | REG_NOSUB), 0);
	for (; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		snprintf(one, sizeof(one), "%.*s", (int)(nl - p), p);
		n += regexec(&re, one, 0, NULL, 0) == 0;
	}
	regfree(&re);
	return n;
}

/*
 * Check TEXT: every line a timestamp, a process's prefix and its own
 * line, and each process's lines all there, in order.
 */
static void
check_lines(char *text)
{
	int next[PROCS] = { 0 }, i, k, nl = 0;
	char *line, *at, *save = NULL, want[160];
	regex_t re;

	assert_int_equal(regcomp(&re, stamp, REG_EXTENDED | REG_NOSUB), 0);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save), nl++) {
		if (regexec(&re, line, 0, NULL, 0) != 0)
			fail_msg("line %d has no timestamp: \"%.80s\"", nl,
			    line);
		at = strstr(line, "line ");
		if (at == NULL ||
		    sscanf(at, "line %d of process %d", &i, &k) != 2 || k < 0 ||
		    k >= PROCS)
			fail_msg("line %d is not whole: \"%.120s\"", nl, line);
		snprintf(want, sizeof(want),
		    "Z %sline %d of process %d: reload: configuration applied "
		    "(generation 2)",
		    prefix[k], next[k], k);
		if (strstr(line, want) == NULL ||
		    strlen(strstr(line, want)) != strlen(want))
			fail_msg("line %d: \"%.120s\", want \"...%s\"", nl,
			    line, want);
		next[k]++;
	}
	regfree(&re);
	for (k = 0; k < PROCS; k++)
		assert_int_equal(next[k], LINES);
	assert_int_equal(nl, PROCS * LINES);
}

static void
wait_children(pid_t *pid)
{
	int k, st;

	for (k = 0; k < PROCS; k++) {
		assert_int_equal(waitpid(pid[k], &st, 0), pid[k]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

/* As `floe 2>floe.log`: one file, one offset shared by every process. */
static void
test_file_shared(void **state)
{
	pid_t pid[PROCS];
	char *text;
	off_t size;
	int fd, k;

	(void)state;
	fd = tmp_fd();
	for (k = 0; k < PROCS; k++) {
		pid[k] = fork();
		assert_true(pid[k] >= 0);
		if (pid[k] == 0)
			child_log(fd, k);
	}
	wait_children(pid);
	size = lseek(fd, 0, SEEK_END);
	assert_true(size > 0);
	text = malloc((size_t)size + 1);
	assert_non_null(text);
	assert_int_equal(pread(fd, text, (size_t)size, 0), size);
	text[size] = '\0';
	check_lines(text);
	free(text);
	close(fd);
}

/* As under systemd: a pipe (or stream socket) read line by line. */
static void
test_pipe_shared(void **state)
{
	size_t len = 0, cap = 1 << 20;
	char *text = malloc(cap);
	pid_t pid[PROCS];
	int p[2], k;
	ssize_t n;

	(void)state;
	assert_non_null(text);
	assert_int_equal(pipe(p), 0);
	for (k = 0; k < PROCS; k++) {
		pid[k] = fork();
		assert_true(pid[k] >= 0);
		if (pid[k] == 0) {
			close(p[0]);
			child_log(p[1], k);
		}
	}
	close(p[1]);
	while ((n = read(p[0], text + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	assert_true(n == 0 && len < cap - 1);
	text[len] = '\0';
	close(p[0]);
	wait_children(pid);
	check_lines(text);
	free(text);
}

/*
 * Run FN in a child whose stderr is a file; return what it wrote, and
 * its exit status in *STATUS.
 */
static char *
capture(void (*fn)(void), int *status)
{
	off_t size;
	char *text;
	pid_t pid;
	int fd;

	fd = tmp_fd();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(fd, STDERR_FILENO) < 0)
			_exit(2);
		log_init(0);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, status, 0), pid);
	size = lseek(fd, 0, SEEK_END);
	text = malloc((size_t)size + 1);
	assert_non_null(text);
	assert_int_equal(pread(fd, text, (size_t)size, 0), size);
	text[size] = '\0';
	close(fd);
	return text;
}

static void
long_line(void)
{
	char *msg = malloc(10001);

	if (msg == NULL)
		_exit(3);
	memset(msg, 'x', 10000);
	msg[9999] = 'y';
	msg[10000] = '\0';
	log_set_prefix("worker 7: ");
	log_warnx("long %s", msg);
	log_info("after");
	free(msg);
}

/* A line past the buffer is written whole, then the next one. */
static void
test_long_line(void **state)
{
	char *text, *nl;
	int st;

	(void)state;
	text = capture(long_line, &st);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	nl = strchr(text, '\n');
	assert_non_null(nl);
	/* "YYYY-MM-DDTHH:MM:SS.mmmZ " is 25 bytes. */
	assert_int_equal(nl - text, 25 + strlen("worker 7: long ") + 10000);
	assert_memory_equal(nl - 2, "xy", 2);
	assert_string_equal(nl + 26, "worker 7: after\n");
	free(text);
}

static void
long_warn(void)
{
	char msg[3001];

	memset(msg, 'w', 3000);
	msg[3000] = '\0';
	errno = ENOSPC;
	log_warn("%s", msg);
	fatalx("%s", msg);
}

/*
 * A warning with errno and a fatal line past the buffer are whole too: the
 * message, then ": " and errno's words; "fatal: " and the message.
 */
static void
test_long_warn(void **state)
{
	const char *why = ": disk full (no space left on device)\n";
	char *text, *nl;
	int st;

	(void)state;
	text = capture(long_warn, &st);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	nl = strchr(text, '\n');
	assert_non_null(nl);
	assert_int_equal(nl + 1 - text, 25 + 3000 + strlen(why));
	assert_memory_equal(nl + 1 - strlen(why), why, strlen(why));
	assert_memory_equal(text + 25 + 2990, "wwwwwwwwww:", 11);
	assert_int_equal(strlen(nl + 1), 25 + strlen("fatal: ") + 3000 + 1);
	assert_memory_equal(nl + 1 + 25, "fatal: www", 10);
	assert_string_equal(nl + 1 + 25 + strlen("fatal: ") + 2995, "wwwww\n");
	free(text);
}

static void
keep_errno(void)
{
	errno = ENOSPC;
	log_info("info");
	if (errno != ENOSPC)
		_exit(4);
	log_warn("write %s", "ledger");
	if (errno != ENOSPC)
		_exit(5);
}

/* log_warn says errno in an operator's words; no call changes errno. */
static void
test_errno_kept(void **state)
{
	char *text;
	int st;

	(void)state;
	text = capture(keep_errno, &st);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_non_null(strstr(text, "Z info\n"));
	assert_non_null(strstr(text,
	    "Z write ledger: disk full (no space left on device)\n"));
	free(text);
}

/*
 * Set $JOURNAL_STREAM to stderr's "DEVICE:INODE", the inode plus INO_ADD,
 * TAIL after it; then log_init(VERBOSE).
 */
static void
journal_names_stderr(unsigned ino_add, const char *tail, int verbose)
{
	struct stat st;
	char js[64];

	if (fstat(STDERR_FILENO, &st) == -1)
		_exit(6);
	snprintf(js, sizeof(js), "%llu:%llu%s", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino + ino_add, tail);
	setenv("JOURNAL_STREAM", js, 1);
	log_init(verbose);
}

/* As the unit's journal stream: $JOURNAL_STREAM names stderr itself. */
static void
journal_lines(void)
{
	journal_names_stderr(0, "", 1);
	log_set_prefix("worker 1: ");
	log_warnx("store unreachable");
	log_info("serving");
	log_debug("a debug line");
	errno = ENOSPC;
	fatal("rollback log");
}

/* $JOURNAL_STREAM of another file (stderr redirected since), or malformed. */
static void
journal_elsewhere(void)
{
	journal_names_stderr(1, "", 0);
	log_info("serving");
	journal_names_stderr(0, "x", 0);
	log_info("still serving");
}

/*
 * On the journal's stream each line starts with its syslog priority
 * ("<4>": journald files it so and drops the prefix) and no time; on
 * anything else, with the time.
 */
static void
test_journal(void **state)
{
	char *text;
	int st;

	(void)state;
	text = capture(journal_lines, &st);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
	assert_string_equal(text,
	    "<4>worker 1: store unreachable\n"
	    "<6>worker 1: serving\n"
	    "<7>worker 1: a debug line\n"
	    "<2>worker 1: fatal: rollback log: disk full (no space left on "
	    "device)\n");
	free(text);
	text = capture(journal_elsewhere, &st);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(stamped_lines(text), 2);
	assert_null(strchr(text, '<'));
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_shared),
		cmocka_unit_test(test_pipe_shared),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_long_warn),
		cmocka_unit_test(test_errno_kept),
		cmocka_unit_test(test_journal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
