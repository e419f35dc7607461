/*
 * slicecmp.h - whether a ResourceSlice the API server stored says what the
 * publisher wants, compared by meaning rather than by text. A real server
 * sets fields the writer left out (taints[].timeAdded), writes quantities
 * in canonical form ("1048576" may come back "1Mi"; "1000" "1k") and may
 * add defaulted fields; none of that is a difference, so none of it makes
 * the publisher write again (which, with the pool generation bumped on
 * every change, would rewrite the whole pool forever).
 *
 * Rules, `want` against `have`, recursively:
 *   objects  every key of `want` is in `have` and the same; a key only in
 *            `have` is server-set (timeAdded) or a default (null, false,
 *            0, "", [] or {}), else a difference
 *   arrays   same length, same elements in order
 *   strings  equal, or both quantities of the same value
 *   others   json_equal
 * Pure: no I/O, no allocation.
 */
#ifndef GS_KUBE_SLICECMP_H
#define GS_KUBE_SLICECMP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Whether `have` (as stored) means `want` (as written). OUT: where (may be
 * NULL): the JSON path of the first difference ("spec.devices[3].taints"),
 * for logs.
 */
bool gs_kslice_same(const json_t *want, const json_t *have, char *where,
                    size_t where_len);

#endif
