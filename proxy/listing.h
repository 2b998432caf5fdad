/*
 * floe: listing.h -- the merged listing of both catalogs: list tables, list
 * views and list namespaces answers are united, de-duplicated, sorted and
 * paged by floe with its own opaque page tokens. Pure (jansson, no I/O);
 * owns nothing but the buffer each call returns.
 */
#ifndef FLOE_PROXY_LISTING_H
#define FLOE_PROXY_LISTING_H

#include <stdbool.h>
#include <stddef.h>

/* Items per page when the client pages without a pageSize. */
#define LISTING_PAGE_SIZE 100

/*
 * Merge two list answers. KIND is "identifiers" (ListTablesResponse, also
 * for views) or "namespaces" (ListNamespacesResponse). BODIES[i] of
 * LENS[i] bytes is one side's answer, or NULL when that side has nothing
 * to add. Each must be the complete listing (asked for without pageToken):
 * a body that still carries a next-page-token is refused rather than
 * silently cut short.
 *
 * Items are sorted bytewise by namespace levels, then name. With
 * PAGE_TOKEN NULL and PAGE_SIZE <= 0 everything is returned and no
 * next-page-token; otherwise at most PAGE_SIZE (LISTING_PAGE_SIZE if <= 0)
 * items after the one PAGE_TOKEN names ("" = from the start), with a
 * next-page-token while more remain and null on the last page. The token
 * names the last item returned, so paging survives inserts and deletes.
 *
 * Returns the JSON answer (*OUTLEN bytes, NUL-terminated; caller frees with
 * free(3)), or NULL with a message in ERR: a body that is not such a
 * listing, or a token floe did not issue (check that first with
 * listing_token_is_valid to answer 400 rather than 502).
 */
char *listing_merge(const char *kind, const char *bodies[2],
    const size_t lens[2], const char *page_token, long page_size,
    size_t *outlen, char *err, size_t errlen);

/* Whether TOKEN (NULL and "" included) is a page token floe issued for KIND. */
bool listing_token_is_valid(const char *kind, const char *token);

#endif
