/*
 * floe: test_catalog_stream_sse2.c -- test_catalog_stream.c's tests over
 * the SSE2 skip of proxy/catalog_stream_skip.c (CATALOG_STREAM_SSE2: as on a
 * CPU without AVX2), built here under other names beside the one the
 * library holds.
 */
#define CATALOG_STREAM_SSE2 1
#define catalog_stream_new catalog_stream_sse2_new
#define catalog_stream_run catalog_stream_sse2_run
#define catalog_stream_free catalog_stream_sse2_free
#define catalog_stream_check catalog_stream_sse2_check
#define catalog_stream_error_at catalog_stream_sse2_error_at
#define stream_skip stream_sse2_skip

#include "proxy/catalog_stream.c"
#include "proxy/catalog_stream_skip.c"
#include "tests/unit/test_catalog_stream.c"
