/*
 * snapshot.c - the snapshot of the node that core's admission (gs_admit,
 * gs/admission.h) decides a create on: the GPUs (a GPU whose MIG layout
 * is changing is busy), every live or pending slice (a parked one only
 * as a slot it holds: gs/park.h), the quota tree, the demand seen and the
 * config's limits. Lent pointers into the model:
 * valid while the node lock is held. Owns nothing.
 */
#include "snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "node_int.h"

/*
 * The snapshot of the node as it is (lock held). OUT: *sn, and *slices,
 * which the caller frees (sn->slices points into it). GS_ERR_NOMEM.
 */
gs_err gs__node_snapshot(struct gs_node *node, struct gs_adm_snapshot *sn,
                         struct gs_adm_slice **slices)
{
	int max = node->cfg->max_slices;

	memset(sn, 0, sizeof(*sn));
	*slices = calloc((size_t)node->n + 1, sizeof(**slices));
	if (*slices == NULL)
		return GS_ERR_NOMEM;
	for (int i = 0; i < node->gpus->n && i < GS_ADM_GPUS_MAX; i++) {
		gs__node_adm_gpu(&node->gpus->gpu[i], &sn->gpu[sn->n_gpus]);
		sn->gpu[sn->n_gpus++].busy = node->mig_busy[i];
	}
	for (int i = 0; i < node->n; i++) {
		if (node->v[i]->s.state == GS_SLICE_PARKED) {
			sn->n_parked++;
			continue;
		}
		gs__node_adm_slice(node, &node->v[i]->s,
		                   &(*slices)[sn->n_slices++]);
	}
	if (node->region && max > GS_REGION_MAX_SLICES)
		max = GS_REGION_MAX_SLICES;
	sn->slices = *slices;
	sn->teams = node->qtree;
	sn->demand = &node->demand;
	sn->now_ns = gs_now_ns();
	sn->cfg.placement = node->cfg->placement;
	sn->cfg.default_mode = node->cfg->default_mode;
	sn->cfg.max_slices = max;
	sn->cfg.may_change_mig = node->gpus->sim || node->cfg->mig_on_real_gpu;
	sn->cfg.mps = node->mps_found;
	sn->cfg.user_max_slices = node->cfg->user_max_slices;
	sn->cfg.user_max_memory_percent = node->cfg->user_max_memory_percent;
	sn->cfg.oversubscribe = node->cfg->swap_oversubscribe;
	sn->cfg.default_team =
	    gs__node_team_index(node, node->cfg->default_team);
	return GS_OK;
}
