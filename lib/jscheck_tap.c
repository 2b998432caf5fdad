/*
 * floe: jscheck_tap.c -- jscheck_feed_tap: lib/jscheck.c's check built a
 * second time, telling a tap of the structure as it checks (jscheck.h),
 * so that one pass over an answer both checks it and finds what the
 * rewrite edits; jscheck_feed, built alone, stays as fast as it was.
 */
#define JSCHECK_TAP 1
#include "lib/jscheck.c"
