/*
 * floe: nodename.h -- what may name a cluster node: 1 to NODE_NAME_MAX
 * bytes of [A-Za-z0-9._-]. floe.conf's [cluster] name follows it, and
 * cluster mode checks the names it reads from etcd (the leader key, node
 * keys, reader-inventory copies) against it. Owns nothing.
 */
#ifndef FLOE_LIB_NODENAME_H
#define FLOE_LIB_NODENAME_H

#include <stdbool.h>
#include <stddef.h>

#define NODE_NAME_MAX 63

/* Whether NAME (LEN bytes, a NUL among them refused) may name a node. */
static inline bool
node_name_ok(const char *name, size_t len)
{
	size_t i;
	char ch;

	if (len == 0 || len > NODE_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			(ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
			ch == '-'))
			return false;
	}
	return true;
}

#endif
