/*
 * floe: secret.h -- reading secret files (client secrets, AWS credentials,
 * service-account keys). Owns nothing beyond the buffers it returns: a file
 * that its group or others may read or write is refused, naming the file,
 * and every buffer is wiped before it is freed. Never logs.
 */
#ifndef FLOE_LIB_SECRET_H
#define FLOE_LIB_SECRET_H

#include <stddef.h>

/* Largest secret file read. */
#define SECRET_MAX (1 << 20)

/*
 * Read the whole of PATH, NUL-terminated, its length in *LEN. Refused when
 * it is not a regular file, when its mode has any group or other bit (it
 * must be 0600 or 0400), or when it is larger than SECRET_MAX. NULL with
 * "PATH: why" in ERR. Caller frees with secret_free.
 */
char *secret_read(const char *path, size_t *len, char *err, size_t errlen);
/* Wipe the LEN bytes of S (and its NUL) and free it. NULL is fine. */
void secret_free(char *s, size_t len);
/* Wipe and free a NUL-terminated string. NULL is fine. */
void secret_free_str(char *s);

#endif
