/*
 * floe: floe_main.h -- the daemon's entry point used by main.c.
 */
#ifndef FLOE_PROXY_FLOE_MAIN_H
#define FLOE_PROXY_FLOE_MAIN_H

/* Run floe with the config at PATH until it is stopped. Exit status. */
int floe_run(const char *path, int verbose);

#endif
