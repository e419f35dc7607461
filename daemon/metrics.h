/*
 * metrics.h - the Prometheus text exposition (format 0.0.4) of the node:
 * gpuslice_* names with gpu, slice and team labels. docs/metrics.md lists
 * every name; tests/integration/daemon checks the two stay in step.
 */
#ifndef GS_DAEMON_METRICS_H
#define GS_DAEMON_METRICS_H

#include <stddef.h>

#include "node.h"
#include "reconcile.h"

struct gs_metrics_ctx {
	struct gs_node *node;
	struct gs_reconciler *rec; /* may be NULL */
};

/*
 * Renders the page as `viewer` may see it (api metrics hook): everything
 * for an administrator; for anyone else only their own slices' series,
 * their teams' and the node-level aggregates. OUT: *body (malloc'd),
 * *len.
 */
void gs_metrics_render(void *ctx, const struct gs_peer *viewer, char **body,
                       size_t *len);

#endif
