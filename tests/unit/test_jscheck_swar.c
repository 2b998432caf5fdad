/*
 * floe: test_jscheck_swar.c -- test_jscheck.c's tests over the word
 * arithmetic path of lib/jscheck.c (JSCHECK_SWAR: 8 bytes at a time, as
 * on a machine without SSE2), built here under other names beside the
 * SSE2 path the library holds.
 */
#define JSCHECK_SWAR 1
#define jscheck_init jscheck_swar_init
#define jscheck_feed jscheck_swar_feed
#define jscheck_end jscheck_swar_end
#define jscheck_valid jscheck_swar_valid

#include "lib/jscheck.c"
#include "tests/unit/test_jscheck.c"
