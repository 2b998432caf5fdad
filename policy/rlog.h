/*
 * floe: rlog.h -- the rollback log: one JSON line per rollback (by a
 * trigger or an operator), appended and fsynced before anyone is paged, so
 * the SRE reading it at 3 a.m. sees every revert. Owns the file descriptor.
 */
#ifndef FLOE_POLICY_RLOG_H
#define FLOE_POLICY_RLOG_H

#include <stddef.h>

typedef struct json_t json_t;
struct rlog;

/* Open PATH for appending (creating it, mode 0640). NULL with ERR. */
struct rlog *rlog_open(const char *path, char *err, size_t errlen);
void rlog_free(struct rlog *);
/*
 * Append LINE (a JSON object, borrowed) as one line and fsync it. Returns
 * 0, or -1 (errno set) if the line could not be made durable.
 */
int rlog_write(struct rlog *, json_t *line);

#endif
