/*
 * mig.h - a create's and a recovery's MIG instance work (mig.c).
 */
#ifndef GS_DAEMON_MIG_H
#define GS_DAEMON_MIG_H

#include <stdbool.h>

#include "gs/admission.h"
#include "gpu.h"
#include "slice.h"

struct gs_node;
struct gs_errbuf;

/* Whether a MIG instance at gi_id of GPU g is held by a slice. Lock held. */
bool gs__mig_in_use(struct gs_node *node, int g, int gi_id);
/* Whether decision `d` changes its GPU's MIG mode or layout. */
bool gs__mig_has_work(const struct gs_adm_decision *d);
/* The instances a plan's create steps made (or found made: a retry, a
 * restart), by uuid: what a plan that fails destroys again. */
struct gs__mig_made {
	int n;
	char uuid[GS_ADM_MAX_STEPS][96];
};

/*
 * The NVML part of decision `d` on GPU g of `gpus` (node->mig_lock held),
 * idempotent: a step whose effect already holds is skipped, so a retry
 * or a restart runs the same steps again. OUT: *made (may be NULL).
 */
gs_err gs__mig_steps(struct gs_gpus *gpus, int g,
                     const struct gs_adm_decision *d, struct gs__mig_made *made,
                     struct gs_errbuf *eb);
/*
 * A decision's MIG part as text, for the PENDING row (gs_slice.mig_plan):
 * "v1 on=O off=F prof=P gi=G take=T;", then per step "cP@S;" (create
 * profile id P at placement S) or "dG:P@S;" (destroy idle instance G,
 * profile P, at S); "" when it does not fit. gs__mig_plan_parse reads it
 * back for GPU `gp` (profiles from its catalog) into `d` (zeroed first):
 * false when it does not parse or names a profile the GPU does not know.
 */
void gs__mig_plan_format(const struct gs_adm_decision *d, char *out,
                         size_t len);
bool gs__mig_plan_parse(const char *text, const struct gs_gpu *gp,
                        struct gs_adm_decision *d);
/* Lock held, the steps done: MIG slice `s` takes its instance. */
gs_err gs__mig_claim(struct gs_node *node, struct gs_slice *s,
                     const struct gs_adm_decision *d, struct gs_errbuf *eb);
/* Lock held: undoes the instance a failed creation made for `s`. */
void gs__mig_undo(struct gs_node *node, const struct gs_slice *s,
                  const struct gs_adm_decision *d);
/* Lock held: destroys instance `uuid` of GPU g unless a slice names it. */
void gs__mig_drop_unheld(struct gs_node *node, int g, const char *uuid);

#endif
