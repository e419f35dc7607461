/*
 * lifecycle.c - the node's life cycle: the model loaded from the store at
 * start (teams merged with the config, slices, demand, the ledger's
 * cursors) and its actor started, reloaded after a failed commit
 * (gs__node_resync, which node.c reaches through node->resync), and
 * stopped. A slice's way out of the model is remove.c's.
 */
#include "lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor.h"
#include "gs/log.h"
#include "gs/proc.h"
#include "ledger.h"
#include "node_int.h"
#include "slots.h"

struct load_ctx {
	struct gs_node *node;
	gs_err err;
	int n_teams;
	struct gs_team *teams;
};

static void load_slice(void *ctx, const struct gs_slice *s)
{
	struct load_ctx *lc = ctx;

	if (gs__node_add(lc->node, s) == NULL)
		lc->err = GS_ERR_NOMEM;
}

static void load_team(void *ctx, const struct gs_team *t)
{
	struct load_ctx *lc = ctx;

	if (lc->n_teams < GS__NODE_MAX_TEAMS)
		lc->teams[lc->n_teams++] = *t;
}

static void load_demand_class(void *ctx, const struct gs_demand_class *c)
{
	struct gs_node *node = ctx;
	struct gs_errbuf eb = {0};

	if (gs_demand_put(&node->demand, c, gs_now_ns(), &eb) != GS_OK)
		gs_warn("node", "demand row skipped: %s", eb.msg);
}

/*
 * The demand seen, from the store, decayed to now; classes that decayed
 * away (or did not fit the table) are deleted there.
 */
static gs_err load_demand(struct gs_node *node, struct gs_errbuf *eb)
{
	const struct gs_config *cfg = node->cfg;
	struct gs_demand_shape gone[GS_DEMAND_MAX_CLASSES];
	struct gs__wr wr;
	int n_gone;
	gs_err err;

	gs_demand_init(&node->demand,
	               (int64_t)cfg->demand_half_life_s * 1000000000ll);
	err = gs_store_load_demand(node->store, load_demand_class, node, eb);
	if (err)
		return err;
	n_gone = gs_demand_prune(&node->demand, gs_now_ns(), gone);
	if (n_gone == 0)
		goto out;
	gs__wr_init(&wr);
	for (int k = 0; k < n_gone; k++)
		gs__wr_demand_del(&wr, &gone[k]);
	gs__node_submit(node, &wr);
	err = gs_store_wait(node->store, &wr.op);
	gs__wr_fini(&wr);
	if (err)
		return gs_fail(eb, err, "cannot forget old demand");
out:
	gs_info("node", "demand classes=%d weight=%.1f half_life_s=%lld",
	        node->demand.n, gs_demand_total(&node->demand, gs_now_ns()),
	        (long long)cfg->demand_half_life_s);
	return GS_OK;
}

gs_err gs_node_create(const struct gs_node_opts *opts, struct gs_node **out,
                      struct gs_errbuf *eb)
{
	struct gs_node *node;
	struct load_ctx lc;
	struct gs_team *stored;
	struct gs__wr wr;
	int64_t maxid = 0;
	gs_err err;

	node = calloc(1, sizeof(*node));
	stored = calloc(GS__NODE_MAX_TEAMS, sizeof(*stored));
	if (node == NULL || stored == NULL) {
		free(node);
		free(stored);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&node->lock, NULL);
	pthread_mutex_init(&node->resync_lock, NULL);
	pthread_mutex_init(&node->mig_lock, NULL);
	node->ledger = gs__ledger_create();
	if (node->ledger == NULL) {
		gs_node_destroy(node);
		free(stored);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	node->resync = gs__node_resync;
	node->cfg = opts->cfg;
	gs__slot_swap_enable(opts->cfg != NULL &&
	                     opts->cfg->swap_oversubscribe > 1.0);
	node->store = opts->store;
	node->gpus = opts->gpus;
	node->region = opts->region;
	snprintf(node->region_dir, sizeof(node->region_dir), "%s",
	         opts->region_dir ? opts->region_dir : "");
	snprintf(node->mps_dir, sizeof(node->mps_dir), "%s",
	         opts->mps_dir ? opts->mps_dir : "");
	node->ctr.started_ns = gs_now_ns();
	gs__slot_register_devices(node);
	node->mps_found = gs_find_program(node->cfg->mps_control, NULL, 0);
	if (!node->mps_found)
		gs_warn("node",
		        "MPS control daemon '%s' not found: mode auto gives slices that accept a shared fault domain turns (time-slicing) instead of MPS; mode mps slices will not start",
		        node->cfg->mps_control);

	memset(&lc, 0, sizeof(lc));
	lc.node = node;
	lc.teams = stored;
	err = gs_store_load_teams(node->store, load_team, &lc, eb);
	if (err)
		goto out_free;
	gs__wr_init(&wr);
	err = gs__node_merge_teams(node, stored, lc.n_teams, &wr, eb);
	if (!err) {
		gs__node_submit(node, &wr);
		err = gs_store_wait(node->store, &wr.op);
		if (err)
			gs_fail(eb, err, "cannot save teams");
	}
	gs__wr_fini(&wr);
	if (err)
		goto out_free;
	err = gs_store_load_slices(node->store, load_slice, &lc, eb);
	if (!err && lc.err)
		err = gs_fail(eb, lc.err, "out of memory loading slices");
	if (err)
		goto out_free;
	gs__ledger_sync(node, gs_now_ns());
	gs__ledger_resume(node);
	err = load_demand(node, eb);
	if (err)
		goto out_free;
	(void)gs_store_max_slice_id(node->store, &maxid);
	node->next_id = maxid + 1;
	if (node->n && node->v[node->n - 1]->s.id >= node->next_id)
		node->next_id = node->v[node->n - 1]->s.id + 1;
	err = gs__actor_start(node, eb);
	if (err)
		goto out_free;
	free(stored);
	*out = node;
	return GS_OK;

out_free:
	free(stored);
	gs_node_destroy(node);
	return err;
}

void gs_node_destroy(struct gs_node *node)
{
	if (node == NULL)
		return;
	gs__actor_stop(node);
	gs__node_clear(node);
	free(node->v);
	gs_quota_tree_destroy(node->qtree);
	gs__ledger_destroy(node->ledger);
	pthread_mutex_destroy(&node->lock);
	pthread_mutex_destroy(&node->resync_lock);
	pthread_mutex_destroy(&node->mig_lock);
	free(node);
}

void gs__node_resync(struct gs_node *node)
{
	struct load_ctx lc;
	struct gs_errbuf eb = {0};
	bool whole = true;

	pthread_mutex_lock(&node->resync_lock);
	pthread_mutex_lock(&node->lock);
	gs__node_clear(node);
	memset(&lc, 0, sizeof(lc));
	lc.node = node;
	if (gs_store_load_slices(node->store, load_slice, &lc, &eb) != GS_OK) {
		/* A partial model must not take slices out of the region
		 * (their tenants would lose their limits): only add. */
		gs_error("node",
		         "resync failed, region slices kept as they are: %s",
		         eb.msg);
		whole = false;
	}
	/* The ledger's cursors outlive the reload (or the next row would
	 * count the slice's whole usage again). */
	gs__ledger_sync(node, gs_now_ns());
	if (node->region) {
		struct gs_slice_ref it = {.slot = -1};

		while (whole && gs_region_slice_next(node->region, &it)) {
			struct gs_slice_limits lim;

			if (gs_region_slice_limits(node->region, &it, &lim) ==
			        GS_OK &&
			    gs__node_find(node, lim.name) == NULL)
				(void)gs_region_slice_delete(node->region, &it,
				                             NULL);
		}
		/* A PENDING slice's entry is its create's to write. */
		for (int i = 0; i < node->n; i++)
			if (node->v[i]->s.state != GS_SLICE_PENDING)
				(void)gs__slot_put(node, node->v[i], NULL);
	}
	gs_warn("node", "model reloaded from the store slices=%d", node->n);
	pthread_mutex_unlock(&node->lock);
	pthread_mutex_unlock(&node->resync_lock);
}
