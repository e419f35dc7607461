/*
 * admission.h - whether a node takes a new slice, and how: the decision
 * gpusliced makes for every create, as a pure function of a snapshot of
 * the node and the request.
 *
 * The daemon builds a snapshot under its lock (GPUs with their MIG
 * instances, the live slices, the team tree, its settings, the demand
 * seen and the time), calls gs_admit(), and then carries the decision
 * out: preempt the victims, run the MIG steps, add the slice. Deciding
 * reads nothing else and changes nothing, so it is tested without a GPU
 * or a daemon (tests/unit/test_admission.c, against a brute-force
 * reference).
 *
 * The rules, in the order they refuse:
 *
 *   1. Slots: a node holds at most cfg.max_slices slices (NO_FIT), its
 *      parked slices (gs/park.h) included.
 *   2. Per user (non-admin requests): at most cfg.user_max_slices slices
 *      and cfg.user_max_memory_percent of the node's GPU memory, whatever
 *      the team allows (QUOTA).
 *   3. Mode: auto becomes cfg.default_mode, or the advisor's answer for
 *      the first GPU the selector matches (decision.mode_why says which).
 *   4. Placement (gs/placement.h, cfg.placement; `frag` scores with the
 *      demand seen, this request included) on everything as it is. A MIG
 *      slice without a free instance goes to a GPU whose layout can change
 *      to make one (gs/migplan.h), when cfg.may_change_mig; a non-MIG
 *      slice that fits nowhere may take a GPU in MIG mode that no slice
 *      uses, switching MIG off.
 *   5. Team max (gs/quota.h, on unbounded capacity): QUOTA.
 *   6. Team quota on the node's capacity when some GPU has room, else on
 *      what the slices hold (nothing idle: only reclaiming borrowed slices
 *      can make room). A refusal there is QUOTA, or the placement's NO_FIT
 *      when there was no room anyway.
 *   7. Reclaim: the shortest prefix of quota's preemption order (lowest
 *      priority first, then the newest) after which step 4 finds room.
 *
 * Oversubscription (cfg.oversubscribe > 1): in rules 4 and 6, a GPU
 * outside MIG mode holds promised memory up to the ratio times its
 * memory for fractional slices, as gs_swap_oversub_capacity() (gs/swap.h)
 * allows; the node's memory capacity for quotas and per-user limits is
 * the same multiple. Whole GPUs and MIG instances are never
 * oversubscribed. A refusal says so. When auto chose the mode,
 * decision.mode_why also says which figure binds the slice: promised
 * memory with only what is active resident (a swap: allow fraction), or
 * all of it resident (a MIG instance of the planner's profile, a whole
 * GPU, swap: never).
 *
 * A busy GPU (gpu.busy: another create is changing its MIG layout) takes
 * nothing: no fraction, whole GPU, instance, MIG switch or new layout.
 * A request that only it could take is NO_FIT, "gpu N is changing its
 * MIG layout; try again" (transient).
 *
 * What a refusal of rules 2 and 5-7 counts as: a rejected request
 * (decision.counted). Whether the request got past rules 1-2: demand the
 * node should remember (decision.demand_seen), as it counted in step 4.
 *
 * Pure: no I/O, clock, globals or locks; the snapshot is only read.
 */
#ifndef GS_ADMISSION_H
#define GS_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/catalog.h"
#include "gs/demand.h"
#include "gs/err.h"
#include "gs/migplan.h"
#include "gs/placement.h"
#include "gs/quota.h"
#include "gs/spec.h"

#define GS_ADM_GPUS_MAX 16
#define GS_ADM_MIG_MAX  8
#define GS_ADM_WHY_MAX  200
/* Destroys of a GPU's instances, then the planner's steps. */
#define GS_ADM_MAX_STEPS (GS_ADM_MIG_MAX + GS_MIGPLAN_MAX_STEPS)

/* A MIG instance of a GPU, as NVML shows it. Strings are lent. */
struct gs_adm_mig {
	const char *uuid;                     /* may be NULL */
	const char *profile_name;             /* NVML's, for messages */
	const struct gs_mig_profile *profile; /* NULL: unknown, ignored */
	int gi_id;
	int start, size; /* placement, memory slices */
	uint64_t memory_bytes;
};

struct gs_adm_gpu {
	const char *uuid;               /* lent */
	const char *model;              /* lent: catalog or NVML name */
	const struct gs_gpu_model *cat; /* NULL when not in the catalog */
	uint64_t memory_bytes;
	bool mig_capable;
	bool mig_on;
	bool busy; /* its MIG layout is changing: no placement goes there */
	int n_mig;
	struct gs_adm_mig mig[GS_ADM_MIG_MAX];
};

/* A live slice, as admission needs it. Strings are lent. */
struct gs_adm_slice {
	int64_t id;
	const char *name;
	uint32_t owner_uid;
	int team; /* quota tree index; -1: counted as cfg.default_team */
	int64_t created_ns;
	enum gs_priority priority;
	enum gs_slice_mode mode; /* as decided, never auto */
	int gpu;                 /* -1: none */
	int gi_id;               /* MIG instance held, -1: none */
	const char *mig_profile; /* "" unless a MIG mode */
	uint64_t memory_bytes;
	int compute_pct;
	enum gs_isolation isolation;
	bool swap_never; /* swap: never (gs/swap.h) */
};

struct gs_adm_config {
	enum gs_place_policy placement;
	enum gs_slice_mode default_mode; /* auto: the advisor decides */
	int max_slices;
	bool may_change_mig; /* may switch MIG and change layouts */
	bool mps;            /* the node can run MPS (its control program was
	                        found): auto picks MPS only then */
	int user_max_slices;
	int user_max_memory_percent;
	int default_team; /* tree index */
	/* swap.oversubscribe: promised memory on a GPU outside MIG may reach
	 * this multiple of its memory, counting only swap: allow slices'
	 * excess (gs_swap_oversub_capacity); <= 1: off */
	double oversubscribe;
};

struct gs_adm_snapshot {
	int n_gpus;
	struct gs_adm_gpu gpu[GS_ADM_GPUS_MAX];
	int n_slices;
	const struct gs_adm_slice *slices; /* lent, ordered as the caller's */
	/* parked slices (gs/park.h): not in slices[] (their memory and
	 * compute count nowhere), but each holds a slot (rule 1) */
	int n_parked;
	const struct gs_quota_tree *teams; /* lent */
	const struct gs_demand *demand;    /* lent; NULL: none seen */
	int64_t now_ns;                    /* the caller's clock */
	struct gs_adm_config cfg;
};

struct gs_adm_request {
	struct gs_slice_spec spec; /* validated */
	int team;                  /* quota tree index */
	uint32_t owner_uid;
	bool admin; /* not bound by the per-user limits */
};

/*
 * One MIG change, in order. DESTROY names an existing instance (gi_id);
 * CREATE a profile at a placement start.
 */
struct gs_adm_step {
	enum gs_mig_op op;
	const struct gs_mig_profile *profile;
	int start;
	int gi_id; /* DESTROY */
};

struct gs_adm_decision {
	/* how the slice runs */
	enum gs_slice_mode mode;
	char mode_why[GS_ADM_WHY_MAX]; /* how auto chose; "" when asked */
	int gpu;
	uint64_t memory_bytes; /* what it holds (a whole GPU: all of it) */
	int compute_pct;
	bool borrowed; /* above its team's guarantee */
	/* MIG: the profile; an existing idle instance to take (gi_id >= 0),
	 * or, after the steps, the new one: at take_start when >= 0, else
	 * the first idle instance of the profile */
	const struct gs_mig_profile *profile;
	int gi_id;
	int take_start;
	/* the changes, applied as: mig_on, steps, mig_off */
	bool mig_on;
	bool mig_off;
	int n_steps;
	struct gs_adm_step steps[GS_ADM_MAX_STEPS];
	/* slices to preempt first: indices into snapshot.slices, in order.
	 * Owned by the decision (gs_adm_decision_fini). */
	size_t *victims;
	size_t n_victims;
	/* on refusal: counts as a rejected request */
	bool counted;
	/* the request got past the slot and per-user limits: its shape is
	 * demand the node should record (gs_adm_demand_shape) */
	bool demand_seen;
};

/*
 * Decides on `req` as described at the top of this file. OUT: *out
 * (initialised by this call; always fini it, also after a refusal).
 * Returns GS_OK when admitted, else the refusal's code with its one-line
 * reason in eb: GS_ERR_NO_FIT, GS_ERR_QUOTA, GS_ERR_INVALID or
 * GS_ERR_UNKNOWN_PROFILE for a request no node could meet, GS_ERR_NOMEM.
 */
gs_err gs_admit(const struct gs_adm_snapshot *snap,
                const struct gs_adm_request *req, struct gs_adm_decision *out,
                struct gs_errbuf *eb);
void gs_adm_decision_fini(struct gs_adm_decision *d);

/*
 * The shape a request adds to the demand seen (gs/demand.h), as asked
 * (mode auto unresolved): a whole GPU for isolation exclusive outside
 * MIG, a MIG instance of its profile ("" when the node picks it) for mode
 * mig, else a fraction.
 */
void gs_adm_demand_shape(const struct gs_slice_spec *spec,
                         struct gs_demand_shape *out);

/*
 * What a slice holds as quotas count it (gs/quota.h): a MIG slice its
 * profile's compute slices and memory, others their memory and compute.
 * `gpu` is the slice's GPU (NULL: unknown). OUT: *use.
 */
void gs_adm_slice_use(const struct gs_adm_gpu *gpu,
                      const struct gs_adm_slice *s, struct gs_qvec *use);

#endif
