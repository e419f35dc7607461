/*
 * test_placement.c - placement against a brute-force reference, and the
 * "why" messages from a table.
 *
 * The reference keeps its own copy of every device's usage and, for each
 * request, enumerates every assignment of slices to devices on every node
 * (small inventories: up to 3 nodes of up to 3 GPUs), keeps the feasible
 * ones that satisfy the gang constraint, and picks the best by the rules
 * in placement.h, written out again here from the header: node load
 * first, then the summed leftover of the touched devices, then the
 * smallest device indices. gs_place() must agree on feasibility, on the
 * node and on every device; requests are then committed or not at random
 * so that later ones meet a changed inventory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/placement.h"
#include "gs/trace.h"

#define GIB (1024ULL * 1024 * 1024)
#define MIB (1024ULL * 1024)

/* ---- helpers for hand-written inventories ----------------------------- */

static const struct gs_gpu_model *model(const char *name)
{
	const struct gs_gpu_model *m = gs_catalog_find(name);

	assert_non_null(m);
	return m;
}

static int add_node(struct gs_place_inv *inv, const char *name)
{
	int n;

	assert_int_equal(gs_place_inv_add_node(inv, name, &n, NULL), GS_OK);
	return n;
}

static int add_gpu(struct gs_place_inv *inv, const char *m, uint64_t mem,
                   bool mig)
{
	struct gs_place_gpu_desc d = {
	    .model = model(m), .memory_bytes = mem, .mig_enabled = mig};
	struct gs_errbuf eb = {0};
	int g;

	assert_int_equal(gs_place_inv_add_gpu(inv, &d, &g, &eb), GS_OK);
	return g;
}

static int add_mig(struct gs_place_inv *inv, const char *m, const char *prof,
                   int start)
{
	struct gs_place_mig_desc d = {
	    .profile = gs_catalog_profile(model(m), prof), .start = start};
	struct gs_errbuf eb = {0};
	int i;

	assert_non_null(d.profile);
	if (gs_place_inv_add_mig(inv, &d, &i, &eb) != GS_OK)
		fail_msg("add_mig %s@%d: %s", prof, start, eb.msg);
	return i;
}

static struct gs_place_item frac(enum gs_slice_mode mode, uint64_t mem, int c)
{
	struct gs_place_item it = {.kind = GS_PLACE_FRACTION,
	                           .mode = mode,
	                           .memory_bytes = mem,
	                           .compute_pct = c};
	return it;
}

static struct gs_place_item whole(void)
{
	struct gs_place_item it = {.kind = GS_PLACE_WHOLE};
	return it;
}

static struct gs_place_item mig(const char *profile)
{
	struct gs_place_item it = {.kind = GS_PLACE_MIG, .mode = GS_MODE_MIG};

	snprintf(it.mig_profile, sizeof(it.mig_profile), "%s", profile);
	return it;
}

static struct gs_place_item layered(enum gs_slice_mode mode,
                                    const char *profile, uint64_t mem, int c)
{
	struct gs_place_item it = frac(mode, mem, c);

	snprintf(it.mig_profile, sizeof(it.mig_profile), "%s", profile);
	return it;
}

static void occupy(struct gs_place_inv *inv, int gpu, int inst,
                   struct gs_place_item it)
{
	struct gs_place_target t = {gs_place_inv_gpu_node(inv, gpu), gpu, inst};
	struct gs_errbuf eb = {0};

	if (gs_place_occupy(inv, &t, &it, &eb) != GS_OK)
		fail_msg("occupy: %s", eb.msg);
}

static gs_err place1(const struct gs_place_inv *inv, struct gs_place_item it,
                     enum gs_place_policy pol, struct gs_place_result *res,
                     struct gs_errbuf *eb)
{
	struct gs_place_request req = {.n = 1, .policy = pol};

	req.item[0] = it;
	return gs_place(inv, &req, res, eb);
}

/* ---- behaviour ---------------------------------------------------------- */

static void binpack_fills_the_fullest_gpu_and_spread_the_emptiest(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_result res;
	struct gs_errbuf eb = {0};

	add_node(inv, "n0");
	add_gpu(inv, "H100", 0, false);
	add_gpu(inv, "H100", 0, false);
	add_gpu(inv, "H100", 0, false);
	occupy(inv, 1, -1, frac(GS_MODE_TIMESLICE, 40 * GIB, 50));
	occupy(inv, 2, -1, frac(GS_MODE_TIMESLICE, 10 * GIB, 10));

	assert_int_equal(place1(inv, frac(GS_MODE_TIMESLICE, 8 * GIB, 20),
	                        GS_PLACE_BINPACK, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.n, 1);
	assert_int_equal(res.target[0].gpu, 1);
	assert_int_equal(res.target[0].inst, -1);
	assert_int_equal(place1(inv, frac(GS_MODE_TIMESLICE, 8 * GIB, 20),
	                        GS_PLACE_SPREAD, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.target[0].gpu, 0);
	gs_place_inv_destroy(inv);
}

/* FRAG keeps what the demand needs placeable: with only the request to go
 * by, room for another slice of its size; with whole GPUs in the demand,
 * a whole free GPU. */
static void frag_keeps_room_for_the_demand_it_has_seen(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_request req = {.n = 1, .policy = GS_PLACE_FRAG};
	struct gs_trace_pod whole_gpu = {
	    .cpu_milli = 0, .memory_mib = 1, .num_gpu = 1, .gpu_milli = 1000};
	struct gs_trace_scorer *sc = NULL;
	struct gs_place_result res;
	struct gs_errbuf eb = {0};
	enum gs_place_policy pol;

	(void)st;
	add_node(inv, "n0");
	add_gpu(inv, "H100", 0, false);
	add_gpu(inv, "H100", 0, false);
	occupy(inv, 1, -1, frac(GS_MODE_TIMESLICE, 40 * GIB, 40));
	req.item[0] = frac(GS_MODE_TIMESLICE, 8 * GIB, 40);

	/* binpack: the fuller GPU, though it leaves 20 % no slice can use */
	assert_int_equal(place1(inv, req.item[0], GS_PLACE_BINPACK, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.target[0].gpu, 1);
	/* frag, demand = the request: both GPUs keep room for one more */
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_OK);
	assert_int_equal(res.target[0].gpu, 0);
	/* frag, demand = whole GPUs: keep GPU 0 whole */
	assert_int_equal(gs_trace_scorer_new(&whole_gpu, 1, NULL, 0, &sc, &eb),
	                 GS_OK);
	req.scorer = sc;
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_OK);
	assert_int_equal(res.target[0].gpu, 1);
	assert_int_equal(gs_place_parse_policy("frag", &pol, &eb), GS_OK);
	assert_int_equal(pol, GS_PLACE_FRAG);
	assert_string_equal(gs_place_policy_name(GS_PLACE_FRAG), "frag");
	gs_trace_scorer_free(sc);
	gs_place_inv_destroy(inv);
}

static void timeslice_and_mps_never_share_a_gpu(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_result res;
	struct gs_errbuf eb = {0};

	add_node(inv, "n0");
	add_gpu(inv, "H100", 0, false);
	add_gpu(inv, "H100", 0, false);
	occupy(inv, 0, -1, frac(GS_MODE_MPS, GIB, 10));
	occupy(inv, 1, -1, whole());
	assert_int_equal(place1(inv, frac(GS_MODE_TIMESLICE, GIB, 10),
	                        GS_PLACE_BINPACK, &res, &eb),
	                 GS_ERR_NO_FIT);
	assert_string_equal(eb.msg, "no GPU can take a timeslice slice: 1 held "
	                            "whole, 1 running mps slices");
	gs_errbuf_init(&eb);
	assert_int_equal(place1(inv, frac(GS_MODE_MPS, GIB, 10),
	                        GS_PLACE_BINPACK, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.target[0].gpu, 0);
	gs_place_inv_destroy(inv);
}

/*
 * The seed study's claim: 1g.5gb and 3g.20gb on the same parent GPU
 * (`matchAttribute: parentUUID`). GPU 0 has a free 1g.5gb but its 3g.20gb
 * is taken; GPU 1 has both free.
 */
static void same_parent_gang_takes_instances_of_one_gpu(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_request req = {.n = 2, .gang = GS_GANG_SAME_PARENT};
	struct gs_place_result res;
	struct gs_errbuf eb = {0};
	int g0_3g, g1_1g, g1_3g;

	add_node(inv, "n0");
	add_gpu(inv, "A100-SXM4-40GB", 0, true);
	add_mig(inv, "A100-SXM4-40GB", "1g.5gb", 0);
	add_mig(inv, "A100-SXM4-40GB", "1g.5gb", 1);
	g0_3g = add_mig(inv, "A100-SXM4-40GB", "3g.20gb", 4);
	add_gpu(inv, "A100-SXM4-40GB", 0, true);
	g1_1g = add_mig(inv, "A100-SXM4-40GB", "1g.5gb", 0);
	add_mig(inv, "A100-SXM4-40GB", "2g.10gb", 2);
	g1_3g = add_mig(inv, "A100-SXM4-40GB", "3g.20gb", 4);
	occupy(inv, 0, g0_3g, mig("3g.20gb"));

	req.item[0] = mig("1g.5gb");
	req.item[1] = mig("3g.20gb");
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_OK);
	assert_int_equal(res.target[0].gpu, 1);
	assert_int_equal(res.target[0].inst, g1_1g);
	assert_int_equal(res.target[1].inst, g1_3g);
	assert_string_equal(gs_place_inv_mig_uuid(inv, res.target[1].inst),
	                    gs_place_inv_mig_uuid(inv, g1_3g));
	assert_int_equal(gs_place_commit(inv, &req, &res, &eb), GS_OK);

	/* Now no GPU has both; GPU 0 misses the 3g.20gb, and no GPU can
	 * be re-partitioned without touching an instance in use. */
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_NO_FIT);
	assert_string_equal(eb.msg,
	                    "no GPU has free MIG instances for 1g.5gb + "
	                    "3g.20gb (best: GPU 0, missing 3g.20gb); no GPU "
	                    "could make them by re-partitioning either");
	assert_int_equal(res.repartition_gpu, -1);
	gs_place_inv_destroy(inv);
}

static void mig_request_without_free_instance_names_a_repartition(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_result res;
	struct gs_errbuf eb = {0};
	int a, b;

	add_node(inv, "n0");
	add_gpu(inv, "A100-SXM4-40GB", 0, true);
	a = add_mig(inv, "A100-SXM4-40GB", "3g.20gb", 0);
	add_mig(inv, "A100-SXM4-40GB", "1g.5gb", 4);
	b = add_mig(inv, "A100-SXM4-40GB", "1g.5gb", 5);
	occupy(inv, 0, a, mig("3g.20gb"));
	occupy(inv, 0, b, mig("1g.5gb"));
	/* 3g.20gb: the only one is taken; slices 4-7 hold an idle 1g.5gb
	 * (destroyable) and a busy one (not): no 3g.20gb fits. 2g.10gb: none
	 * exists, but slices 6-7 are free. */
	assert_int_equal(
	    place1(inv, mig("3g.20gb"), GS_PLACE_BINPACK, &res, &eb),
	    GS_ERR_NO_FIT);
	assert_string_equal(eb.msg, "no free 3g.20gb MIG instance (all are in "
	                            "use); no GPU could make one by "
	                            "re-partitioning either");
	gs_errbuf_init(&eb);
	assert_int_equal(
	    place1(inv, mig("1g.10gb"), GS_PLACE_BINPACK, &res, &eb),
	    GS_ERR_NO_FIT);
	assert_string_equal(eb.msg, "no free 1g.10gb MIG instance (none "
	                            "exists); a re-partition of GPU 0 could "
	                            "make one (gpuslice plan)");
	assert_int_equal(res.repartition_gpu, 0);
	gs_errbuf_init(&eb);
	assert_int_equal(
	    place1(inv, mig("1g.10gb"), GS_PLACE_BINPACK, &res, &eb),
	    GS_ERR_NO_FIT);
	gs_errbuf_init(&eb);
	assert_int_equal(
	    place1(inv, mig("3g.40gb"), GS_PLACE_BINPACK, &res, &eb),
	    GS_ERR_NO_FIT);
	assert_string_equal(eb.msg, "no GPU here has MIG profile 3g.40gb (it "
	                            "is a profile of A100-SXM4-80GB)");
	gs_errbuf_init(&eb);
	assert_int_equal(
	    place1(inv, mig("9g.1tb"), GS_PLACE_BINPACK, &res, &eb),
	    GS_ERR_UNKNOWN_PROFILE);
	gs_place_inv_destroy(inv);
}

static void gang_is_all_or_nothing(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_request req = {.n = 3, .gang = GS_GANG_SAME_NODE};
	struct gs_place_result res;
	struct gs_place_free f;
	struct gs_errbuf eb = {0};

	add_node(inv, "n0");
	add_gpu(inv, "H100", 0, false);
	add_gpu(inv, "H100", 0, false);
	req.item[0] = whole();
	req.item[1] = frac(GS_MODE_MPS, 60 * GIB, 50);
	req.item[2] = frac(GS_MODE_MPS, 30 * GIB, 50);
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_NO_FIT);
	assert_string_equal(eb.msg,
	                    "no node has 90.0 GiB free memory for the 2 "
	                    "fractional slices together (best: node n0 with "
	                    "79.6 GiB, besides the GPUs for the whole-GPU "
	                    "slices)");
	/* nothing was taken */
	assert_int_equal(gs_place_inv_free(inv, 0, -1, &f, NULL), GS_OK);
	assert_int_equal(f.n_slices, 0);
	assert_int_equal(gs_place_inv_free(inv, 1, -1, &f, NULL), GS_OK);
	assert_int_equal(f.n_slices, 0);

	req.item[2] = frac(GS_MODE_MPS, 10 * GIB, 50);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_OK);
	assert_int_equal(res.target[0].gpu, 0);
	assert_int_equal(res.target[1].gpu, 1);
	assert_int_equal(res.target[2].gpu, 1);
	assert_int_equal(gs_place_commit(inv, &req, &res, &eb), GS_OK);
	assert_int_equal(gs_place_inv_free(inv, 1, -1, &f, NULL), GS_OK);
	assert_int_equal(f.compute_pct, 0);
	assert_int_equal(f.n_slices, 2);
	gs_place_inv_destroy(inv);
}

static void commit_that_no_longer_fits_changes_nothing(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_request req = {.n = 2, .gang = GS_GANG_SAME_NODE};
	struct gs_place_result res;
	struct gs_place_free f;
	struct gs_errbuf eb = {0};

	add_node(inv, "n0");
	add_gpu(inv, "H100", 0, false);
	add_gpu(inv, "H100", 0, false);
	req.item[0] = frac(GS_MODE_TIMESLICE, GIB, 30);
	req.item[1] = frac(GS_MODE_TIMESLICE, GIB, 30);
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_OK);
	/* someone else got there first */
	occupy(inv, res.target[1].gpu, -1, frac(GS_MODE_MPS, GIB, 10));
	assert_int_equal(gs_place_commit(inv, &req, &res, &eb), GS_ERR_NO_FIT);
	assert_int_equal(
	    gs_place_inv_free(inv, res.target[0].gpu, -1, &f, NULL), GS_OK);
	if (res.target[0].gpu != res.target[1].gpu)
		assert_int_equal(f.n_slices, 0);
	gs_place_inv_destroy(inv);
}

static void release_returns_what_occupy_took(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_target t = {0, 0, -1};
	struct gs_place_item a = frac(GS_MODE_TIMESLICE, 8 * GIB, 40);
	struct gs_place_free f;
	struct gs_errbuf eb = {0};

	add_node(inv, "n0");
	add_gpu(inv, "H100", 0, false);
	occupy(inv, 0, -1, a);
	assert_int_equal(gs_place_release(inv, &t, &a, &eb), GS_OK);
	assert_int_equal(gs_place_inv_free(inv, 0, -1, &f, NULL), GS_OK);
	assert_int_equal(f.n_slices, 0);
	assert_int_equal(f.compute_pct, 100);
	assert_int_equal(gs_place_release(inv, &t, &a, &eb), GS_ERR_INVALID);
	assert_string_equal(eb.msg, "GPU 0 holds no such slice");
	gs_place_inv_destroy(inv);
}

static void inventory_rejects_bad_mig_layouts(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_mig_desc d = {0};
	struct gs_errbuf eb = {0};
	int i;

	add_node(inv, "n0");
	add_gpu(inv, "A100-SXM4-40GB", 0, true);
	add_mig(inv, "A100-SXM4-40GB", "3g.20gb", 0);
	d.profile = gs_catalog_profile(model("A100-SXM4-40GB"), "2g.10gb");
	d.start = 2;
	assert_int_equal(gs_place_inv_add_mig(inv, &d, &i, &eb),
	                 GS_ERR_INVALID);
	assert_string_equal(eb.msg, "GPU GPU-n0-0: 2g.10gb@2 overlaps "
	                            "3g.20gb@0");
	gs_errbuf_init(&eb);
	d.start = 5;
	assert_int_equal(gs_place_inv_add_mig(inv, &d, &i, &eb),
	                 GS_ERR_INVALID);
	assert_string_equal(eb.msg, "GPU GPU-n0-0: 2g.10gb cannot start at "
	                            "memory slice 5");
	gs_errbuf_init(&eb);
	d.profile = gs_catalog_profile(model("H100"), "1g.10gb");
	d.start = 4;
	assert_int_equal(gs_place_inv_add_mig(inv, &d, &i, &eb),
	                 GS_ERR_UNKNOWN_PROFILE);
	gs_place_inv_destroy(inv);
}

static void bad_requests_are_invalid(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_request req = {.n = 2, .gang = GS_GANG_SAME_GPU};
	struct gs_place_result res;
	struct gs_errbuf eb = {0};

	add_node(inv, "n0");
	add_gpu(inv, "H100", 0, false);
	req.item[0] = frac(GS_MODE_TIMESLICE, GIB, 10);
	req.item[1] = whole();
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_INVALID);
	gs_errbuf_init(&eb);
	req.item[1] = frac(GS_MODE_MPS, GIB, 10);
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_INVALID);
	gs_errbuf_init(&eb);
	req.gang = GS_GANG_SAME_PARENT;
	req.item[1] = mig("1g.10gb");
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_INVALID);
	assert_string_equal(eb.msg, "a same-parent gang takes MIG slices only "
	                            "(slice 1 is not)");
	gs_errbuf_init(&eb);
	assert_int_equal(place1(inv, frac(GS_MODE_AUTO, GIB, 10),
	                        GS_PLACE_BINPACK, &res, &eb),
	                 GS_ERR_INVALID);
	gs_errbuf_init(&eb);
	assert_int_equal(place1(inv, frac(GS_MODE_MPS, GIB, 140),
	                        GS_PLACE_BINPACK, &res, &eb),
	                 GS_ERR_INVALID);
	gs_errbuf_init(&eb);
	req.n = 0;
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_INVALID);
	gs_place_inv_destroy(inv);
}

static void cluster_binpack_prefers_the_most_loaded_node(void **st)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_result res;
	struct gs_errbuf eb = {0};
	char name[16];

	for (int n = 0; n < 4; n++) {
		snprintf(name, sizeof(name), "n%d", n);
		add_node(inv, name);
		add_gpu(inv, "H100", 0, false);
		add_gpu(inv, "H100", 0, false);
	}
	occupy(inv, 2, -1, frac(GS_MODE_TIMESLICE, 10 * GIB, 10)); /* n1 */
	occupy(inv, 5, -1, frac(GS_MODE_TIMESLICE, 20 * GIB, 20)); /* n2 */
	occupy(inv, 6, -1, whole());                               /* n3 */
	occupy(inv, 7, -1, frac(GS_MODE_MPS, 40 * GIB, 90));       /* n3 */
	/* n3 is the most loaded but its GPUs take no timeslice 20% */
	assert_int_equal(place1(inv, frac(GS_MODE_TIMESLICE, 8 * GIB, 20),
	                        GS_PLACE_BINPACK, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.target[0].node, 2);
	assert_int_equal(res.target[0].gpu, 5);
	assert_int_equal(place1(inv, frac(GS_MODE_TIMESLICE, 8 * GIB, 20),
	                        GS_PLACE_SPREAD, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.target[0].node, 0);
	assert_int_equal(res.target[0].gpu, 0);
	gs_place_inv_destroy(inv);
}

/* ---- why, from a table --------------------------------------------------- */

/*
 * Per node: GPU 0 H100 timeslice, 6.5 GiB and 70% free; GPU 1 H100
 * timeslice, 5 GiB and 20% free; GPU 2 A100-40GB in MIG mode with a free
 * 1g.5gb and a 3g.20gb holding a mig+mps slice (15.5 GiB, 50% free);
 * GPU 3 H100 mps, 10 GiB and 90% free.
 */
static struct gs_place_inv *build_why(int nodes)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	char name[16];

	for (int n = 0; n < nodes; n++) {
		snprintf(name, sizeof(name), "n%d", n);
		add_node(inv, name);
		add_gpu(inv, "H100", 80 * GIB, false);
		add_gpu(inv, "H100", 80 * GIB, false);
		add_gpu(inv, "A100-SXM4-40GB", 0, true);
		add_mig(inv, "A100-SXM4-40GB", "1g.5gb", 0);
		add_mig(inv, "A100-SXM4-40GB", "3g.20gb", 4);
		add_gpu(inv, "H100", 80 * GIB, false);
		occupy(inv, 4 * n + 0, -1,
		       frac(GS_MODE_TIMESLICE, 73 * GIB + 512 * MIB, 30));
		occupy(inv, 4 * n + 1, -1,
		       frac(GS_MODE_TIMESLICE, 75 * GIB, 80));
		occupy(inv, 4 * n + 2, 2 * n + 1,
		       layered(GS_MODE_MIG_MPS, "", 4 * GIB, 50));
		occupy(inv, 4 * n + 3, -1, frac(GS_MODE_MPS, 70 * GIB, 10));
	}
	return inv;
}

struct why_case {
	int nodes;
	struct gs_place_item item;
	const char *why;
};

static void why_messages_match_table(void **st)
{
	const struct why_case cases[] = {
	    {1, frac(GS_MODE_TIMESLICE, 8 * GIB, 10),
	     "no GPU has 8.0 GiB free memory (best: GPU 0 with 6.5 GiB)"},
	    {1, frac(GS_MODE_TIMESLICE, 6 * GIB, 75),
	     "no GPU with 6.0 GiB free memory has 75% free compute (best: "
	     "GPU 0 with 70%)"},
	    {1, frac(GS_MODE_TIMESLICE, 5 * GIB + 512 * MIB, 80),
	     "no GPU with 5.5 GiB free memory has 80% free compute (best: "
	     "GPU 0 with 70%)"},
	    {1, frac(GS_MODE_TIMESLICE, 0, 75),
	     "no GPU has 75% free compute (best: GPU 0 with 70%)"},
	    {1, frac(GS_MODE_TIMESLICE, 512 * MIB, 75),
	     "no GPU with 512 MiB free memory has 75% free compute (best: "
	     "GPU 0 with 70%)"},
	    {2, frac(GS_MODE_TIMESLICE, 8 * GIB, 10),
	     "no GPU has 8.0 GiB free memory (best: node n0 GPU 0 with "
	     "6.5 GiB)"},
	    {1, frac(GS_MODE_MPS, 12 * GIB, 10),
	     "no GPU has 12.0 GiB free memory (best: GPU 3 with 10.0 GiB)"},
	    {1, whole(),
	     "no GPU is free for a whole-GPU slice (all 3 are in use; least "
	     "used: GPU 0 with 1 slice)"},
	    {1, layered(GS_MODE_MIG_MPS, "", 16 * GIB, 10),
	     "no MIG instance has 16.0 GiB free memory (best: GPU 2 MIG "
	     "3g.20gb@4 with 15.5 GiB)"},
	    {1, layered(GS_MODE_MIG_TIMESLICE, "3g.20gb", GIB, 10),
	     "no MIG instance can take a mig+timeslice slice: 0 held by MIG "
	     "slices, 1 running mig+mps slices"},
	    {1, layered(GS_MODE_MIG_MPS, "2g.10gb", GIB, 10),
	     "no MIG instance of profile 2g.10gb exists"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_place_inv *inv = build_why(cases[i].nodes);
		struct gs_place_result res;
		struct gs_errbuf eb = {0};
		gs_err err;

		err = place1(inv, cases[i].item, GS_PLACE_BINPACK, &res, &eb);
		gs_place_inv_destroy(inv);
		if (err != GS_ERR_NO_FIT || strcmp(eb.msg, cases[i].why) != 0)
			fail_msg("case %zu: got %s '%s'", i, gs_err_name(err),
			         eb.msg);
	}
}

static void why_messages_for_gangs_and_selectors(void **st)
{
	struct gs_place_inv *inv = build_why(1);
	struct gs_place_request req = {.n = 3, .gang = GS_GANG_SAME_GPU};
	struct gs_gpu_selector sel = {.kind = GS_GPU_MODEL, .model = "B200"};
	struct gs_place_result res;
	struct gs_errbuf eb = {0};

	req.item[0] = frac(GS_MODE_TIMESLICE, 2 * GIB, 5);
	req.item[1] = frac(GS_MODE_TIMESLICE, 2 * GIB, 5);
	req.item[2] = frac(GS_MODE_TIMESLICE, 8 * GIB, 5);
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_NO_FIT);
	assert_string_equal(eb.msg, "no GPU has 12.0 GiB free memory for the "
	                            "3 slices together (best: GPU 0 with 6.5 "
	                            "GiB)");
	gs_errbuf_init(&eb);
	req.gang = GS_GANG_SAME_NODE;
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_NO_FIT);
	assert_string_equal(eb.msg, "slice 3 of 3: no GPU has 8.0 GiB free "
	                            "memory (best: GPU 0 with 6.5 GiB)");
	gs_errbuf_init(&eb);
	req.n = 1;
	req.gpu = &sel;
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_ERR_NO_FIT);
	assert_string_equal(eb.msg, "no GPU matches gpu=B200");
	gs_place_inv_destroy(inv);
}

/* ---- the brute-force reference ------------------------------------------- */

#define R_NODES 40
#define R_GPUS  (3 * R_NODES)
#define R_INST  (8 * R_NODES)

struct rgpu {
	int node;
	uint64_t total;
	bool mig;
	bool whole;
	uint64_t used;
	int c_used, n_slices, mode;
	int compute_slices;
};

struct rinst {
	int gpu;
	char profile[32];
	uint64_t total;
	int bp_share;
	bool excl;
	uint64_t used;
	int c_used, n_slices, mode;
};

struct ref {
	int n_nodes, n_gpus, n_inst;
	struct rgpu g[R_GPUS];
	struct rinst in[R_INST];
	int node_first[R_NODES], node_n[R_NODES];
};

static bool rlayered(int mode)
{
	return mode == GS_MODE_MIG_TIMESLICE || mode == GS_MODE_MIG_MPS;
}

/* Device numbering in the reference: GPUs 0..n_gpus-1, then instances. */
static bool rfits(struct ref *r, int dev, const struct gs_place_item *it)
{
	if (dev < r->n_gpus) {
		struct rgpu *g = &r->g[dev];

		if (g->mig || it->kind == GS_PLACE_MIG || rlayered(it->mode))
			return false;
		if (it->kind == GS_PLACE_WHOLE)
			return !g->whole && g->n_slices == 0;
		return !g->whole &&
		       (g->n_slices == 0 || g->mode == (int)it->mode) &&
		       g->total - g->used >= it->memory_bytes &&
		       100 - g->c_used >= it->compute_pct;
	} else {
		struct rinst *in = &r->in[dev - r->n_gpus];

		if (it->kind == GS_PLACE_WHOLE)
			return false;
		if (it->kind == GS_PLACE_MIG)
			return !in->excl && in->n_slices == 0 &&
			       strcmp(in->profile, it->mig_profile) == 0;
		if (!rlayered(it->mode))
			return false;
		if (it->mig_profile[0] && strcmp(in->profile, it->mig_profile))
			return false;
		return !in->excl &&
		       (in->n_slices == 0 || in->mode == (int)it->mode) &&
		       in->total - in->used >= it->memory_bytes &&
		       100 - in->c_used >= it->compute_pct;
	}
}

static void rapply(struct ref *r, int dev, const struct gs_place_item *it,
                   int sign)
{
	if (dev < r->n_gpus) {
		struct rgpu *g = &r->g[dev];

		if (it->kind == GS_PLACE_WHOLE) {
			g->whole = sign > 0;
			g->used = sign > 0 ? g->total : 0;
			g->c_used = sign > 0 ? 100 : 0;
		} else {
			g->used += sign * (int64_t)it->memory_bytes;
			g->c_used += sign * it->compute_pct;
			g->mode = it->mode;
		}
		g->n_slices += sign;
	} else {
		struct rinst *in = &r->in[dev - r->n_gpus];

		if (it->kind == GS_PLACE_MIG) {
			in->excl = sign > 0;
		} else {
			in->used += sign * (int64_t)it->memory_bytes;
			in->c_used += sign * it->compute_pct;
			in->n_slices += sign;
			in->mode = it->mode;
		}
	}
}

static void rgpu_load(const struct ref *r, int gi, uint64_t *mem, int64_t *bp)
{
	const struct rgpu *g = &r->g[gi];

	*mem = 0;
	*bp = 0;
	if (!g->mig) {
		*mem = g->used;
		*bp = g->c_used * 100;
		return;
	}
	for (int i = 0; i < r->n_inst; i++) {
		const struct rinst *in = &r->in[i];

		if (in->gpu != gi)
			continue;
		*mem += in->excl ? in->total : in->used;
		*bp +=
		    in->excl ? in->bp_share : in->c_used * in->bp_share / 100;
	}
}

static int64_t rnode_load(const struct ref *r, int n)
{
	uint64_t mem_total = 0, mem_used = 0, m;
	int64_t bp_used = 0, bp;

	for (int gi = 0; gi < r->n_gpus; gi++) {
		if (r->g[gi].node != n)
			continue;
		rgpu_load(r, gi, &m, &bp);
		mem_total += r->g[gi].total;
		mem_used += m;
		bp_used += bp;
	}
	return (int64_t)(mem_used * 1000000 / mem_total) +
	       bp_used * 1000000 / (10000LL * r->node_n[n]);
}

static int64_t rleft(uint64_t total, uint64_t used, int c_used)
{
	return (int64_t)((total - used) * 1000000 / total) +
	       (int64_t)(100 - c_used) * 10000;
}

/* Summed leftover over touched units, with the assignment applied. */
static int64_t rscore(struct ref *r, const int *dev, int n,
                      const struct gs_place_request *req)
{
	int64_t sum = 0;

	for (int k = 0; k < n; k++) {
		int unit, seen = 0;

		if (dev[k] < r->n_gpus)
			unit = dev[k];
		else if (req->item[k].kind == GS_PLACE_MIG)
			unit = r->in[dev[k] - r->n_gpus].gpu;
		else
			unit = dev[k] + 1000;
		for (int j = 0; j < k; j++) {
			int u;

			if (dev[j] < r->n_gpus)
				u = dev[j];
			else if (req->item[j].kind == GS_PLACE_MIG)
				u = r->in[dev[j] - r->n_gpus].gpu;
			else
				u = dev[j] + 1000;
			if (u == unit)
				seen = 1;
		}
		if (seen)
			continue;
		if (unit >= 1000) {
			struct rinst *in = &r->in[unit - 1000 - r->n_gpus];

			sum += rleft(in->total, in->used, in->c_used);
		} else if (r->g[unit].mig) {
			uint64_t m;
			int64_t bp;

			rgpu_load(r, unit, &m, &bp);
			sum += (int64_t)((r->g[unit].total - m) * 1000000 /
			                 r->g[unit].total) +
			       (10000 - bp) * 100;
		} else {
			sum += rleft(r->g[unit].total, r->g[unit].used,
			             r->g[unit].c_used);
		}
	}
	return sum;
}

static int rdev_node(const struct ref *r, int dev)
{
	if (dev < r->n_gpus)
		return r->g[dev].node;
	return r->g[r->in[dev - r->n_gpus].gpu].node;
}

static int rdev_gpu(const struct ref *r, int dev)
{
	return dev < r->n_gpus ? dev : r->in[dev - r->n_gpus].gpu;
}

struct rbest {
	bool found;
	int node;
	int64_t load, score;
	int dev[GS_PLACE_MAX_GANG];
};

static void renum(struct ref *r, const struct gs_place_request *req, int node,
                  int k, int *dev, struct rbest *b)
{
	int n_dev = r->n_gpus + r->n_inst;

	if (k == req->n) {
		int64_t score = rscore(r, dev, req->n, req);

		if (b->found &&
		    (req->policy == GS_PLACE_BINPACK ? score >= b->score
		                                     : score <= b->score))
			return;
		b->found = true;
		b->score = score;
		memcpy(b->dev, dev, sizeof(b->dev));
		return;
	}
	for (int d = 0; d < n_dev; d++) {
		if (rdev_node(r, d) != node)
			continue;
		if (k > 0 && req->n > 1 && req->gang == GS_GANG_SAME_GPU &&
		    d != dev[0])
			continue;
		if (k > 0 && req->n > 1 && req->gang == GS_GANG_SAME_PARENT &&
		    rdev_gpu(r, d) != rdev_gpu(r, dev[0]))
			continue;
		if (!rfits(r, d, &req->item[k]))
			continue;
		dev[k] = d;
		rapply(r, d, &req->item[k], +1);
		renum(r, req, node, k + 1, dev, b);
		rapply(r, d, &req->item[k], -1);
	}
}

static struct rbest ref_place(struct ref *r, const struct gs_place_request *req)
{
	struct rbest best = {0};

	for (int n = 0; n < r->n_nodes; n++) {
		struct rbest in_node = {0};
		int dev[GS_PLACE_MAX_GANG];
		int64_t load = rnode_load(r, n);

		renum(r, req, n, 0, dev, &in_node);
		if (!in_node.found)
			continue;
		if (best.found &&
		    (req->policy == GS_PLACE_BINPACK ? load <= best.load
		                                     : load >= best.load))
			continue;
		best = in_node;
		best.node = n;
		best.load = load;
	}
	return best;
}

/* ---- random inventories and requests ------------------------------------ */

static unsigned rnd(unsigned *seed, unsigned n)
{
	return n == 0 ? 0 : (unsigned)rand_r(seed) % n;
}

static const char *const r_models[] = {"H100-SXM5-80GB", "A100-SXM4-40GB",
                                       "A30-24GB"};

static void random_inventory(struct gs_place_inv *inv, struct ref *r,
                             unsigned *seed, int max_nodes)
{
	memset(r, 0, sizeof(*r));
	r->n_nodes = 1 + (int)rnd(seed, (unsigned)max_nodes);
	for (int n = 0; n < r->n_nodes; n++) {
		char name[16];
		int per = 1 + (int)rnd(seed, 3);

		snprintf(name, sizeof(name), "n%d", n);
		add_node(inv, name);
		r->node_first[n] = r->n_gpus;
		r->node_n[n] = per;
		for (int k = 0; k < per; k++) {
			const struct gs_gpu_model *m =
			    model(r_models[rnd(seed, 3)]);
			bool is_mig = m->n_profiles > 0 && rnd(seed, 2);
			uint64_t mem = m->memory_mib * MIB;
			int gi = add_gpu(inv, m->name, mem, is_mig);
			struct rgpu *g = &r->g[r->n_gpus++];
			bool used[8] = {false};

			assert_int_equal(gi, r->n_gpus - 1);
			g->node = n;
			g->total = mem;
			g->mig = is_mig;
			g->compute_slices = m->compute_slices;
			for (int tries = 0; is_mig && tries < 6; tries++) {
				const struct gs_mig_profile *p =
				    &m->profiles[rnd(seed, m->n_profiles)];
				const struct gs_mig_placement *pl =
				    &p->placements[rnd(seed, p->n_placements)];
				bool clash = false;
				struct rinst *in;

				if (r->n_inst >= 3 * (r->n_gpus) ||
				    r->n_inst >= R_INST)
					break;
				for (int s = pl->start;
				     s < pl->start + pl->size; s++)
					clash |= used[s];
				if (clash)
					continue;
				for (int s = pl->start;
				     s < pl->start + pl->size; s++)
					used[s] = true;
				assert_int_equal(
				    add_mig(inv, m->name, p->name, pl->start),
				    r->n_inst);
				in = &r->in[r->n_inst++];
				in->gpu = gi;
				snprintf(in->profile, sizeof(in->profile), "%s",
				         p->name);
				in->total =
				    (p->memory_mib ? p->memory_mib
				                   : p->memory_mib_nominal) *
				    MIB;
				in->bp_share = p->compute_slices * 10000 /
				               m->compute_slices;
			}
		}
	}
}

static const char *random_profile(const struct ref *r, unsigned *seed)
{
	static const char *const extra[] = {"1g.10gb", "3g.40gb", "1g.6gb",
	                                    "2g.10gb", "7g.40gb"};

	if (r->n_inst > 0 && rnd(seed, 4) != 0)
		return r->in[rnd(seed, (unsigned)r->n_inst)].profile;
	return extra[rnd(seed, 5)];
}

static struct gs_place_item random_item(const struct ref *r, unsigned *seed,
                                        int kind_hint)
{
	static const uint64_t mems[] = {0, 1, 4, 8, 16, 24, 40};
	int kind = kind_hint >= 0 ? kind_hint : (int)rnd(seed, 10);

	if (kind == 0)
		return whole();
	if (kind <= 2)
		return mig(random_profile(r, seed));
	if (kind <= 4)
		return layered(
		    rnd(seed, 2) ? GS_MODE_MIG_MPS : GS_MODE_MIG_TIMESLICE,
		    rnd(seed, 2) ? "" : random_profile(r, seed),
		    mems[rnd(seed, 4)] * GIB, 10 * (int)rnd(seed, 8));
	return frac(rnd(seed, 3) ? GS_MODE_TIMESLICE : GS_MODE_MPS,
	            mems[rnd(seed, 7)] * GIB, 10 * (int)rnd(seed, 11));
}

static struct gs_place_request random_request(const struct ref *r,
                                              unsigned *seed)
{
	struct gs_place_request req = {0};

	req.n = 1 + (int)rnd(seed, 3);
	req.gang = (enum gs_place_gang)rnd(seed, 3);
	req.policy = (enum gs_place_policy)rnd(seed, 2);
	if (req.n > 1 && req.gang == GS_GANG_SAME_GPU) {
		struct gs_place_item first =
		    random_item(r, seed, 5 + 2 * (int)rnd(seed, 2));

		if (rnd(seed, 2))
			first = random_item(r, seed, 3);
		for (int k = 0; k < req.n; k++) {
			req.item[k] = first;
			req.item[k].memory_bytes = rnd(seed, 3) * 4 * GIB;
			req.item[k].compute_pct = 10 * (int)rnd(seed, 5);
		}
		return req;
	}
	for (int k = 0; k < req.n; k++)
		req.item[k] = random_item(
		    r, seed,
		    req.n > 1 && req.gang == GS_GANG_SAME_PARENT ? 1 : -1);
	return req;
}

static void random_occupancy(struct gs_place_inv *inv, struct ref *r,
                             unsigned *seed)
{
	int tries = (int)rnd(seed, 4 * (unsigned)r->n_gpus + 4);

	for (int t = 0; t < tries; t++) {
		struct gs_place_item it = random_item(r, seed, -1);
		int dev = (int)rnd(seed, (unsigned)(r->n_gpus + r->n_inst));
		struct gs_place_target tg;
		gs_err err;

		tg.gpu = rdev_gpu(r, dev);
		tg.node = r->g[tg.gpu].node;
		tg.inst = dev < r->n_gpus ? -1 : dev - r->n_gpus;
		err = gs_place_occupy(inv, &tg, &it, NULL);
		if (rfits(r, dev, &it) != (err == GS_OK))
			fail_msg("occupy disagrees with the reference on "
			         "device %d: %s",
			         dev, gs_err_name(err));
		if (err == GS_OK)
			rapply(r, dev, &it, +1);
	}
}

/*
 * One round: a random inventory of up to max_nodes nodes, `requests`
 * random requests of up to max_items slices each, every answer compared
 * with the reference, half of them committed.
 */
static void brute_force_round(unsigned *seed, int max_nodes, int max_items,
                              int requests, int *fit, int *no_fit, int *gangs)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct ref *r = malloc(sizeof(*r));

	assert_non_null(r);
	random_inventory(inv, r, seed, max_nodes);
	random_occupancy(inv, r, seed);
	for (int q = 0; q < requests; q++) {
		struct gs_place_request req = random_request(r, seed);
		struct gs_place_result res;
		struct gs_errbuf eb = {0};
		struct rbest want;
		gs_err err;

		if (req.n > max_items)
			req.n = max_items;
		want = ref_place(r, &req);
		err = gs_place(inv, &req, &res, &eb);
		if (err == GS_ERR_UNKNOWN_PROFILE)
			continue;
		if ((err == GS_OK) != want.found)
			fail_msg("request %d: gs_place %s (%s), the reference "
			         "%s",
			         q, gs_err_name(err), eb.msg,
			         want.found ? "fits" : "does not");
		if (err != GS_OK) {
			assert_int_equal(err, GS_ERR_NO_FIT);
			assert_true(eb.msg[0] != '\0');
			(*no_fit)++;
			continue;
		}
		(*fit)++;
		*gangs += req.n > 1;
		assert_int_equal(res.n, req.n);
		assert_false(res.exhausted);
		for (int k = 0; k < req.n; k++) {
			int d = want.dev[k];
			int gpu = rdev_gpu(r, d);
			int inst = d < r->n_gpus ? -1 : d - r->n_gpus;

			if (res.target[k].node != want.node ||
			    res.target[k].gpu != gpu ||
			    res.target[k].inst != inst)
				fail_msg("request %d slice %d: placed on node "
				         "%d GPU %d inst %d, the reference on "
				         "node %d GPU %d inst %d",
				         q, k, res.target[k].node,
				         res.target[k].gpu, res.target[k].inst,
				         want.node, gpu, inst);
		}
		if (rnd(seed, 2)) {
			assert_int_equal(gs_place_commit(inv, &req, &res, &eb),
			                 GS_OK);
			for (int k = 0; k < req.n; k++)
				rapply(r, want.dev[k], &req.item[k], +1);
		}
	}
	free(r);
	gs_place_inv_destroy(inv);
}

static void placement_matches_brute_force_on_random_inventories(void **st)
{
	unsigned seed = 4242;
	int fit = 0, no_fit = 0, gangs = 0;

	for (int iter = 0; iter < 1500; iter++)
		brute_force_round(&seed, 3, 3, 6, &fit, &no_fit, &gangs);
	assert_true(fit > 1000);
	assert_true(no_fit > 1000);
	assert_true(gangs > 300);
}

/*
 * Bigger clusters (up to 40 nodes), where the tree's pruning and its
 * best-first order matter: still the reference's node and devices.
 */
static void cluster_placement_matches_brute_force(void **st)
{
	unsigned seed = 99;
	int fit = 0, no_fit = 0, gangs = 0;

	for (int iter = 0; iter < 60; iter++)
		brute_force_round(&seed, R_NODES, 2, 40, &fit, &no_fit, &gangs);
	assert_true(fit > 500);
	assert_true(no_fit > 100);
	assert_true(gangs > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        binpack_fills_the_fullest_gpu_and_spread_the_emptiest),
	    cmocka_unit_test(frag_keeps_room_for_the_demand_it_has_seen),
	    cmocka_unit_test(timeslice_and_mps_never_share_a_gpu),
	    cmocka_unit_test(same_parent_gang_takes_instances_of_one_gpu),
	    cmocka_unit_test(
	        mig_request_without_free_instance_names_a_repartition),
	    cmocka_unit_test(gang_is_all_or_nothing),
	    cmocka_unit_test(commit_that_no_longer_fits_changes_nothing),
	    cmocka_unit_test(release_returns_what_occupy_took),
	    cmocka_unit_test(inventory_rejects_bad_mig_layouts),
	    cmocka_unit_test(bad_requests_are_invalid),
	    cmocka_unit_test(cluster_binpack_prefers_the_most_loaded_node),
	    cmocka_unit_test(why_messages_match_table),
	    cmocka_unit_test(why_messages_for_gangs_and_selectors),
	    cmocka_unit_test(
	        placement_matches_brute_force_on_random_inventories),
	    cmocka_unit_test(cluster_placement_matches_brute_force),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
