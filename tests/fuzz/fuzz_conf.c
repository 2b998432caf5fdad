/*
 * floe: fuzz_conf.c -- libFuzzer target for the floe.conf reader (inih,
 * the key table, units, validation): the input is the file, read through
 * a memfd. The run script feeds it /dev/null as stdin, so a token_file
 * naming a terminal cannot block.
 */
#include <sys/mman.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "proxy/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[512];
	struct conf *c;
	int fd;

	if ((fd = memfd_create("floe.conf", MFD_CLOEXEC)) == -1)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err[0] = '\0';
	c = conf_load(path, err, sizeof(err));
	if (c == NULL && err[0] == '\0')
		__builtin_trap(); /* a refusal always says why */
	conf_free(c);
	close(fd);
	return 0;
}
