/*
 * scorer_int.h - the scorer's state (struct gs_trace_scorer of gs/frag.h),
 * shared by scorer.c (building it, the costs) and score.c (the guard and
 * the ranks). Private to core/frag/.
 */
#ifndef GS_FRAG_SCORER_INT_H
#define GS_FRAG_SCORER_INT_H

#include "gs/frag.h"

#define GS_GSL_COVERAGE    99.0 /* % of GPU demand M_g covers */
#define GS_GSL_GANG_WEIGHT 0.75 /* a gang class's share of its demand */
#define GS_GSL_CPU_RESERVE 1.3  /* rho_m over the class's mean CPU/GPU */
#define GS_GSL_FGD_COVERAGE 95.0 /* % of tasks FGD's M covers (the paper) */

struct gs_trace_scorer {
	struct gs_trace_workload fgd; /* FGD's M, by count */
	struct gs_trace_workload m;   /* M_g */
	double eps;                   /* the guard, milli-GPU of dF */
	unsigned ablate;
	size_t nh;
	double *hw;   /* per stranding class: weight */
	double *hr;   /* per stranding class: CPU milli per milli-GPU */
	uint32_t *hs; /* per stranding class: model spec, 0 = any */
	bool model_aware;
};

#endif
