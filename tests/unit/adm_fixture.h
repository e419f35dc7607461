/*
 * adm_fixture.h - the one-GPU node that admission unit tests start from:
 * a plain 80 GiB H100 in a snapshot, binpack placement, per-user limits
 * out of the way, and one team "a" with no maximum. The caller owns the
 * slices array (the snapshot points at it) and frees *tree with
 * gs_quota_tree_free. Include after cmocka.h.
 */
#ifndef GS_TEST_ADM_FIXTURE_H
#define GS_TEST_ADM_FIXTURE_H

#include <string.h>

#include "gs/admission.h"
#include "gs/catalog.h"

#define ADM_GIB (1024ULL * 1024 * 1024)

static inline void adm_fixture_h100(struct gs_adm_snapshot *sn,
                                    struct gs_adm_slice *slices,
                                    int max_slices,
                                    struct gs_quota_tree **tree,
                                    const char *uuid,
                                    enum gs_slice_mode mode, double ratio)
{
	struct gs_quota_team_def d;
	struct gs_errbuf eb = {0};

	memset(sn, 0, sizeof(*sn));
	sn->n_gpus = 1;
	sn->gpu[0].uuid = uuid;
	sn->gpu[0].model = "H100-SXM5-80GB";
	sn->gpu[0].cat = gs_catalog_find("H100-SXM5-80GB");
	assert_non_null(sn->gpu[0].cat);
	sn->gpu[0].memory_bytes = 80 * ADM_GIB;
	sn->slices = slices;
	sn->now_ns = 1000;
	sn->cfg.placement = GS_PLACE_BINPACK;
	sn->cfg.default_mode = mode;
	sn->cfg.max_slices = max_slices;
	sn->cfg.user_max_slices = max_slices;
	sn->cfg.user_max_memory_percent = 100;
	sn->cfg.oversubscribe = ratio;
	memset(&d, 0, sizeof(d));
	d.name = "a";
	for (int r = 0; r < GS_QRES__COUNT; r++)
		d.max.v[r] = GS_QUOTA_UNLIMITED;
	assert_int_equal(gs_quota_tree_create(&d, 1, tree, &eb), GS_OK);
	sn->teams = *tree;
}

#endif
