/*
 * slice.h - the daemon's record of one slice, teams, ledger rows and events:
 * plain data shared by the store (which persists them), the node model
 * (which decides them) and the API (which prints them). Nothing here
 * allocates; every string is a fixed-size, NUL-terminated array so that a
 * record can be copied with `=`.
 *
 * A slice's life:
 *
 *   slice_create (create.c)   plan_finish (actor.c)
 *   ---------------------> PENDING ---------> READY ---+
 *                           |   |               |      | watchdog / Xid
 *                           |   |               |      +--> FLAGGED --+
 *                           |   |               |      +--> FAULTED --+
 *                           |   |               |      | reclaim,     |
 *                           |   |               |      | may park     |
 *                           |   |               |      +--> PARKED ---+
 *                           |   |               |  resume (park.c) |  |
 *                           |   |               |<-----------------+  |
 *                           |   |               +-- delete -----------+-> gone
 *                           |   +-- delete (the create answers 409) ----> gone
 *                           +-- MIG change, MPS start or region write
 *                               failed (plan_fail) -> FAILED,
 *                               slice.failed --> gone
 *
 * PENDING holds its GPU share in the model and the store while the actor
 * carries its plan out off the node lock; no process can join it. One
 * found at start is resumed (gs_node_recover). FAILED is never kept: the
 * slice goes in the same step.
 * READY, FLAGGED and FAULTED are all "live": the slice keeps its GPU share
 * until it is deleted (by a user, by reclaim, or, for on_exit=delete, when
 * its last process is gone).
 * PARKED keeps its slot, GPU and processes but no share: a quota reclaim
 * swapped it out instead of killing it (gs/park.h, docs/swap.md); its
 * processes wait at their next GPU call until it resumes (READY again,
 * swapped back in) or it is deleted. `reason` says why it was parked.
 */
#ifndef GS_DAEMON_SLICE_H
#define GS_DAEMON_SLICE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "gs/err.h"
#include "gs/quota.h"
#include "gs/spec.h"

#define GS_NAME_MAX       64 /* slice and team names, with the NUL */
#define GS_UUID_MAX       96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define GS_SLICE_MAX_PIDS 32

enum gs_slice_state {
	GS_SLICE_READY = 0,
	GS_SLICE_FLAGGED = 1, /* the watchdog saw it over its memory limit */
	GS_SLICE_FAULTED = 2, /* an Xid or MPS fault hit it */
	GS_SLICE_PENDING = 3, /* being created: share held, not yet usable */
	GS_SLICE_FAILED = 4,  /* its creation failed; removed at once */
	GS_SLICE_PARKED = 5,  /* a reclaim swapped it out (gs/park.h): kept,
	                         counted nowhere until it resumes */
};

enum gs_slice_on_exit {
	GS_ON_EXIT_KEEP = 0, /* a slice outlives its processes */
	GS_ON_EXIT_DELETE =
	    1, /* deleted once it had processes and all are gone */
};

/*
 * A slice label (API `labels`): key [a-z][a-z0-9_]{0,31}, value at most
 * 253 bytes, at most GS_SLICE_MAX_LABELS per slice. Exported on
 * gpuslice_slice_info, so keys that name its own labels are refused.
 */
#define GS_SLICE_MAX_LABELS      8
#define GS_SLICE_LABEL_KEY_MAX   33  /* 32 chars + NUL */
#define GS_SLICE_LABEL_VALUE_MAX 254 /* 253 chars + NUL */

struct gs_slice_label {
	char key[GS_SLICE_LABEL_KEY_MAX];
	char value[GS_SLICE_LABEL_VALUE_MAX];
};

/* A PENDING MIG slice's MIG decision as text (gs__mig_plan_format). */
#define GS_SLICE_MIG_PLAN_MAX 400

/*
 * Where a slice's memory is (docs/swap.md). Until the shim moves memory
 * (the swap mechanism is not built yet) nothing is ever swapped: these
 * stay 0, and resident = promised - swapped_bytes. Runtime only, not in
 * the store yet: the session that builds the mechanism decides what a
 * restarted daemon must recover (docs/swap.md, "Next").
 */
struct gs_slice_swap {
	uint64_t swapped_bytes; /* in host memory now */
	/* since the slice was made, across daemon restarts and region
	 * records (stored: gs__slot_swap_note keeps them in the model) */
	uint64_t swap_outs, swap_ins;
	int64_t last_out_ns, last_in_ns; /* CLOCK_REALTIME; 0: never */
	/* the region record's own counts when the two above were noted: a
	 * record with fewer is a new one (made again since), counted on top */
	uint64_t rec_outs, rec_ins;
	char pinned[96]; /* why it cannot swap (gs/swap.h); "" when it can */
	/* the moves the daemon made (swapper.c): time taken, in total and
	 * by the last of each */
	uint64_t out_ns_total, in_ns_total;
	int64_t last_out_took_ns, last_in_took_ns;
};

struct gs_slice {
	int64_t id; /* stable, never reused */
	char name[GS_NAME_MAX];
	uint32_t owner_uid;
	char team[GS_NAME_MAX];
	struct gs_slice_spec spec; /* as asked (spec.name == name) */
	/* as decided */
	enum gs_slice_mode mode; /* never GS_MODE_AUTO */
	int gpu_index;
	char gpu_uuid[GS_UUID_MAX];
	char mig_profile[GS_SPEC_PROFILE_MAX]; /* "" unless mode is mig* */
	char mig_uuid[GS_UUID_MAX];
	int gi_id, ci_id; /* -1 when none */
	int region_slot;  /* -1 when none */
	uint32_t region_gen;
	int state;          /* enum gs_slice_state */
	int on_exit;        /* enum gs_slice_on_exit */
	bool borrowed;      /* admitted on quota above its guarantee */
	bool had_procs;     /* some process has joined it */
	int64_t created_ns; /* CLOCK_REALTIME */
	int64_t updated_ns;
	char reason[128];  /* why it is FLAGGED / FAULTED / PARKED */
	int64_t parked_ns; /* when it was PARKED (CLOCK_REALTIME); 0: not */
	int n_pids;
	int32_t
	    pids[GS_SLICE_MAX_PIDS]; /* processes attached through the API */
	int n_labels;
	struct gs_slice_label labels[GS_SLICE_MAX_LABELS]; /* sorted by key */
	/* While PENDING with MIG steps to carry out: the decision (MIG on,
	 * steps, MIG off, the instance to take), saved with the row so that
	 * a restarted daemon carries it on (gs_node_recover); "" otherwise. */
	char mig_plan[GS_SLICE_MIG_PLAN_MAX];
	struct gs_slice_swap swap; /* runtime: where its memory is */
};

/* A team: quota.h's guarantee and max (GS_QUOTA_UNLIMITED for none). */
struct gs_team {
	char name[GS_NAME_MAX];
	char parent[GS_NAME_MAX]; /* "" for a top-level team */
	struct gs_qvec guarantee;
	struct gs_qvec max;
	bool from_config; /* defined in the config file */
};

/* One ledger row: what a slice used over [t0_ns, t1_ns). */
struct gs_usage_row {
	int64_t slice_id;
	int64_t owner_uid;
	char slice[GS_NAME_MAX];
	char team[GS_NAME_MAX];
	char gpu_model[48];
	char mode[24]; /* slice mode, for the price table */
	int64_t t0_ns, t1_ns;
	double gpu_seconds;       /* GPU time measured by the shim */
	double gib_seconds;       /* memory reserved x wall time (measured
	                             use when the slice has no cap) */
	double throttled_seconds; /* time the limiter held it back */
	double alloc_seconds;     /* wall time x compute share reserved */
	double sm_seconds;        /* gpu_seconds x the slice's SM share
	                             (gs_slice_sm_share) over the row; -1
	                             when not known (rows of MPS slices
	                             written before schema 5 that cannot be
	                             recovered) */
	double parked_seconds;    /* wall time parked (gs/park.h): no GPU
	                             memory-time nor reserved time billed
	                             for it */
};

struct gs_event {
	int64_t id;
	int64_t ts_ns;
	char type[32]; /* "slice.created", "watchdog.kill", ... */
	char slice[GS_NAME_MAX];
	char team[GS_NAME_MAX];
	int gpu;           /* -1 when none */
	int64_t owner_uid; /* the slice's owner; -1 for node events */
	char message[256];
};

const char *gs_slice_state_name(int state);

/*
 * The CUDA_MPS_ACTIVE_THREAD_PERCENTAGE an MPS client of the slice gets
 * (mode mps or mig+mps with a compute share: the share), or 0 when the
 * slice sets none (not MPS, or no compute share: MPS's default, all SMs).
 * The one place the daemon derives it; the API's "env" prints it.
 */
int gs_slice_mps_atp(const struct gs_slice *s);
/*
 * The share of its device's SMs the slice's kernels may use while they
 * run: ATP / 100 for an MPS slice with an active thread percentage, 1.0
 * otherwise (a turn has the whole GPU; a MIG instance is the slice's whole
 * device). SM-seconds = GPU-busy seconds x this, so MPS and time-sliced
 * slices are billed on one scale (as `gpuslice run --report`'s sm_time_s).
 */
double gs_slice_sm_share(const struct gs_slice *s);
/* Whether `s` is a valid slice or team name: [A-Za-z0-9][A-Za-z0-9._-]{0,62}.
 */
bool gs_name_is_valid(const char *s);

/*
 * Reads slice labels from a JSON object of strings (API `labels`, the
 * store's column) into out[GS_SLICE_MAX_LABELS], sorted by key, checking
 * the rules above. GS_ERR_INVALID names the offending field
 * ("labels.k8s pod: ..."); on error *n_out is 0. obj NULL = no labels.
 */
gs_err gs_slice_labels_from_json(const json_t *obj, struct gs_slice_label *out,
                                 int *n_out, struct gs_errbuf *eb);
/* The labels as a new JSON object (the caller decrefs); NULL on ENOMEM. */
json_t *gs_slice_labels_to_json(const struct gs_slice_label *labels, int n);

#endif
