/*
 * snapshot.h - the snapshot of the node core's admission decides on.
 */
#ifndef GS_DAEMON_SNAPSHOT_H
#define GS_DAEMON_SNAPSHOT_H

#include "gs/admission.h"

struct gs_node;

/*
 * The snapshot of the node as it is (lock held). OUT: *sn, and *slices,
 * which the caller frees (sn->slices points into it). GS_ERR_NOMEM.
 */
gs_err gs__node_snapshot(struct gs_node *node, struct gs_adm_snapshot *sn,
                         struct gs_adm_slice **slices);

#endif
