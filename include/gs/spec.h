/*
 * spec.h - a slice specification (what one workload asks for) and the
 * quantity parsers behind it.
 *
 * A spec is a plain value: no pointers, fixed-size strings, safe to copy
 * with `=`. It is built from CLI-style key/values (gs_spec_set,
 * gs_spec_parse_kvlist) or from JSON (spec_json.h, a separate module so
 * this one needs no library), checked as a whole with gs_spec_validate and
 * printed back canonically with gs_spec_format (parse(format(s)) == s).
 *
 * Keys and values:
 *
 *   name=STR          [A-Za-z0-9._-], 1..63 chars; unset = daemon picks
 *   memory=QTY        512MiB, 8GiB, 8G (= GiB), 1.5GiB, 1048576 (bytes).
 *                     Every suffix is binary (K/M/G/T, optional i, optional
 *                     B, any case): nvidia-smi prints MiB, so "8G" that
 *                     meant 8e9 bytes would be a surprise. At most
 *                     INT64_MAX bytes (stored as int64). unset = 0
 *   compute=PCT       25 or 25% of the GPU's SMs, whole number 1..100;
 *                     unset = 0 (no compute limit)
 *   priority=P        high | normal | low (default normal)
 *   weight=N          1..1000, share of turns among equal priorities
 *                     (default 1)
 *   mode=M            auto | timeslice | mps | mig | mig+timeslice | mig+mps
 *                     (default auto: the advisor picks from isolation and
 *                     the GPU)
 *   mig-profile=P     e.g. 1g.10gb; only with mode auto or mig*
 *   mig-start=N       0..GS_SPEC_MIG_START_MAX: the placement start slot of
 *                     the instance (as nvidia-smi -lgipp prints it); needs
 *                     mig-profile and mode mig*. The daemon checks it
 *                     against the catalog's placements for the profile and
 *                     uses or creates exactly that placement, or refuses.
 *                     unset = the daemon picks
 *   compute-mode=M    strict | share (default strict): strict never runs
 *                     above compute, share may use time no other slice on
 *                     the GPU wants (region.h's gs_region_compute_mode)
 *   isolation=I       none | memory | hard | exclusive (default none):
 *                     memory = a hard memory cap; hard = hardware memory,
 *                     compute and fault isolation (MIG only); exclusive =
 *                     the whole GPU, nobody else on it
 *   gpu=SEL           an index (0), a UUID (GPU-..., MIG-...), a model
 *                     (H100, A100-40GB; canonicalised through the catalog
 *                     when known) or "any" (default)
 *   swap=S            allow | never (default allow): whether the slice's
 *                     memory may be swapped out to host memory on a node
 *                     with swap.oversubscribe above 1 (docs/swap.md);
 *                     never = its memory is always on the GPU, and it does
 *                     not count as oversubscribable
 *
 * Errors: GS_ERR_PARSE for text that does not read, GS_ERR_RANGE for a
 * value outside its range, GS_ERR_INVALID for an unknown key or fields that
 * do not go together; the errbuf gets one precise line such as
 * "compute must be 1..100, got 140". On error the spec is left unchanged
 * (gs_spec_set) or partially updated (gs_spec_parse_kvlist: every pair
 * before the failing one was applied).
 */
#ifndef GS_SPEC_H
#define GS_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

#define GS_SPEC_NAME_MAX    64
#define GS_SPEC_PROFILE_MAX 32
#define GS_SPEC_UUID_MAX    96
#define GS_SPEC_MODEL_MAX   64
#define GS_SPEC_WEIGHT_MAX  1000
#define GS_SPEC_MIG_START_MAX 7
/* Longest gs_spec_format output, NUL included. */
#define GS_SPEC_FORMAT_MAX 512

enum gs_slice_mode {
	GS_MODE_AUTO = 0,
	GS_MODE_TIMESLICE,
	GS_MODE_MPS,
	GS_MODE_MIG,
	GS_MODE_MIG_TIMESLICE,
	GS_MODE_MIG_MPS,
	GS_MODE__COUNT
};

/* Ordered: a larger value is served first. */
enum gs_priority {
	GS_PRIORITY_LOW = 0,
	GS_PRIORITY_NORMAL = 1,
	GS_PRIORITY_HIGH = 2,
	GS_PRIORITY__COUNT
};

/* Ordered from weakest to strongest need. */
enum gs_isolation {
	GS_ISOLATION_NONE = 0,
	GS_ISOLATION_MEMORY,
	GS_ISOLATION_HARD,
	GS_ISOLATION_EXCLUSIVE,
	GS_ISOLATION__COUNT
};

/* Whether a slice's memory may be swapped out (docs/swap.md). */
enum gs_swap_mode {
	GS_SWAP_ALLOW = 0,
	GS_SWAP_NEVER = 1,
	GS_SWAP__COUNT
};

/* Values match enum gs_region_compute_mode. */
enum gs_compute_mode {
	GS_COMPUTE_STRICT = 0,
	GS_COMPUTE_SHARE = 1,
	GS_COMPUTE__COUNT
};

enum gs_gpu_sel_kind {
	GS_GPU_ANY = 0,
	GS_GPU_INDEX,
	GS_GPU_UUID,
	GS_GPU_MODEL,
};

struct gs_gpu_selector {
	enum gs_gpu_sel_kind kind;
	int index;                     /* GS_GPU_INDEX */
	char uuid[GS_SPEC_UUID_MAX];   /* GS_GPU_UUID */
	char model[GS_SPEC_MODEL_MAX]; /* GS_GPU_MODEL (canonical if known) */
};

struct gs_slice_spec {
	char name[GS_SPEC_NAME_MAX]; /* "" = unset */
	uint64_t memory_bytes;       /* 0 = unset */
	int compute_pct;             /* 0 = unset, else 1..100 */
	enum gs_priority priority;
	int weight; /* 1..GS_SPEC_WEIGHT_MAX */
	enum gs_slice_mode mode;
	char mig_profile[GS_SPEC_PROFILE_MAX]; /* "" = unset */
	bool has_mig_start;                    /* false = daemon picks */
	int mig_start; /* 0..GS_SPEC_MIG_START_MAX when has_mig_start */
	enum gs_compute_mode compute_mode;
	enum gs_isolation isolation;
	struct gs_gpu_selector gpu;
	enum gs_swap_mode swap;
};

/* Sets the defaults listed above (storage is the caller's). */
void gs_spec_init(struct gs_slice_spec *spec);

/*
 * Sets one key from its text value. Keys are the names above; "mig_profile"
 * is accepted for "mig-profile". On error the spec is unchanged.
 */
gs_err gs_spec_set(struct gs_slice_spec *spec, const char *key,
                   const char *value, struct gs_errbuf *eb);

/* Applies "k=v,k=v" or "k=v k=v" (commas and/or spaces separate pairs). */
gs_err gs_spec_parse_kvlist(struct gs_slice_spec *spec, const char *text,
                            struct gs_errbuf *eb);

/*
 * Checks that the fields go together (mig-profile only with a MIG mode,
 * isolation hard/exclusive only with modes that can give it, ...).
 * GS_ERR_INVALID with a precise message when they do not.
 */
gs_err gs_spec_validate(const struct gs_slice_spec *spec, struct gs_errbuf *eb);

/*
 * Writes the canonical text: "key=value" pairs separated by one space in
 * the order above; unset optional fields (name, memory, compute,
 * mig-profile, gpu=any) are left out. Returns the length written, or the
 * length needed (snprintf rules).
 */
int gs_spec_format(const struct gs_slice_spec *spec, char *buf, size_t size);

/* Whether two specs mean the same thing. */
bool gs_spec_equal(const struct gs_slice_spec *a,
                   const struct gs_slice_spec *b);

/* ---- Quantities and enum names (used by the CLI, daemon and importers) */

/* "8GiB" -> 8589934592. OUT: *bytes. GS_ERR_PARSE / GS_ERR_RANGE. */
gs_err gs_parse_memory(const char *text, uint64_t *bytes, struct gs_errbuf *eb);
/* Largest exact binary unit: 8589934592 -> "8GiB", 1000 -> "1000". */
int gs_format_memory(uint64_t bytes, char *buf, size_t size);
/* "25" or "25%" -> 25; 1..100. OUT: *pct. */
gs_err gs_parse_compute(const char *text, int *pct, struct gs_errbuf *eb);

const char *gs_mode_name(enum gs_slice_mode mode);
gs_err gs_parse_mode(const char *text, enum gs_slice_mode *mode,
                     struct gs_errbuf *eb);
const char *gs_priority_name(enum gs_priority prio);
gs_err gs_parse_priority(const char *text, enum gs_priority *prio,
                         struct gs_errbuf *eb);
const char *gs_isolation_name(enum gs_isolation iso);
const char *gs_swap_mode_name(enum gs_swap_mode swap); /* allow | never */
gs_err gs_parse_isolation(const char *text, enum gs_isolation *iso,
                          struct gs_errbuf *eb);
/* Writes "any", "0", "GPU-..." or the model name. */
int gs_format_gpu_selector(const struct gs_gpu_selector *sel, char *buf,
                           size_t size);
gs_err gs_parse_gpu_selector(const char *text, struct gs_gpu_selector *sel,
                             struct gs_errbuf *eb);

/* Whether the mode runs inside a MIG instance. */
bool gs_mode_is_mig(enum gs_slice_mode mode);

/*
 * Which of `n` GPUs `sel` names: an index ("1"), or the UUID of a GPU or
 * of one of its MIG instances. uuid_of(ctx, i, k) is GPU i's UUID (k -1)
 * or its k-th MIG instance's ("" when unknown), NULL past the last.
 * -1 when none. Shared by admission (core) and the daemon's inventory.
 */
int gs_gpu_index_of(const char *sel, int n,
                    const char *(*uuid_of)(const void *ctx, int i, int k),
                    const void *ctx);

/*
 * The one way from a spec to what the shim enforces (struct
 * gs_slice_limits, include/gs/slice_limits.h): gpuslice run, gpusliced
 * and the Slurm plugin all call it, so ranges, defaults and the meaning
 * of every field are the ones checked here. Fills out with the spec's
 * name (may be ""), memory cap, compute share, priority, weight and
 * compute mode; flags 0 and owner_uid 0 (the caller sets both).
 * GS_ERR_RANGE for a field out of range (a spec that did not come
 * through gs_spec_set).
 */
struct gs_slice_limits;
gs_err gs_spec_limits(const struct gs_slice_spec *spec,
                      struct gs_slice_limits *out, struct gs_errbuf *eb);

#endif
