/*
 * import.h - what the NVIDIA Kubernetes sharing configs mean in gpuslice.
 *
 * Two formats, each read into a struct gs_doc (doc.h) by the caller and
 * translated here, purely:
 *
 * 1. The k8s device plugin's config file (version v1; shared/reference/
 *    device-plugin-config.md). Every document of the file is one config.
 *    Each shared resource becomes a slice template with the plugin's own
 *    replica arithmetic:
 *      MPS           active thread % = 100 / replicas (integer division),
 *                    pinned memory = floor(total MiB / replicas) MiB
 *      time-slicing  `replicas` equal slices, no memory or compute limit
 *    The checks the plugin makes at start-up are errors here too (replicas
 *    below 2, MPS with migStrategy mixed, MPS on a MIG resource, more MPS
 *    replicas than its client limit, ...; MPS without flags.mpsRoot is
 *    fine: the plugin then reads --mps-root, which its Helm chart sets to
 *    GS_DP_MPS_ROOT_DEFAULT); fields the
 *    plugin parses and then ignores (top-level `resources`, per-resource
 *    `rename` and `devices`) give notes.
 *
 * 2. The DRA driver's opaque parameters (shared/reference/dra-gpuconfig.md):
 *    a GpuConfig or MigDeviceConfig alone, or inside a ResourceClaim or
 *    ResourceClaimTemplate (resource.k8s.io), whose device requests,
 *    `matchAttribute: parentUUID` constraints and configs are read too.
 *    Sharing: TimeSlicing with interval Default|Short|Medium|Long (the
 *    driver's time-slice levels 0..3) or MPS with
 *    defaultActiveThreadPercentage, defaultPinnedDeviceMemoryLimit and
 *    defaultPerDevicePinnedMemoryLimit (Kubernetes quantities; the driver
 *    writes bytes / 1024 / 1024 as "<N>M" and refuses N = 0). Unknown
 *    fields are errors, as the driver's strict decoding makes them.
 *
 * Errors are GS_ERR_PARSE (wrong shape, unknown field), GS_ERR_RANGE or
 * GS_ERR_INVALID (a value or a combination the tool would refuse), with
 * one line "FILE:LINE: what is wrong", naming the field by its path
 * ("sharing.mps.resources[0].replicas"). Results are plain values (fixed
 * arrays); nothing is allocated.
 */
#ifndef GS_IMPORT_H
#define GS_IMPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/catalog.h"
#include "gs/doc.h"
#include "gs/err.h"
#include "gs/placement.h"
#include "gs/spec.h"

#define GS_IMPORT_MAX_CONFIGS       16
#define GS_IMPORT_MAX_RESOURCES     16
#define GS_IMPORT_MAX_NOTES         8
#define GS_IMPORT_NOTE_MAX          256
#define GS_IMPORT_NAME_MAX          128
#define GS_IMPORT_MAX_REQUESTS      16
#define GS_IMPORT_MAX_DEVICE_LIMITS 16
#define GS_IMPORT_SOURCE_MAX        64

/* mps.root of the device plugin's Helm chart and of the GPU operator's. */
#define GS_DP_MPS_ROOT_DEFAULT "/run/nvidia/mps"

struct gs_import_notes {
	int n;
	char text[GS_IMPORT_MAX_NOTES][GS_IMPORT_NOTE_MAX];
};

/*
 * The first thing an input means that a gpuslice.io claim cannot carry
 * (a selector on other attributes, several devices in one claim,
 * per-client MPS limits for several clients, ...), as one message
 * "FILE:LINE: FIELD: why". line 0: nothing. The plain and JSON outputs
 * only describe the input; `--k8s` refuses it with this message rather
 * than emit a claim that means something else.
 */
#define GS_IMPORT_BLOCK_MAX 512
struct gs_import_block {
	int line;
	char msg[GS_IMPORT_BLOCK_MAX];
};

/* ---- device plugin ---------------------------------------------------- */

enum gs_dp_strategy {
	GS_DP_NONE = 0,
	GS_DP_TIME_SLICING,
	GS_DP_MPS,
};
const char *gs_dp_strategy_name(enum gs_dp_strategy s);

struct gs_dp_resource {
	char name[GS_IMPORT_NAME_MAX]; /* advertised: nvidia.com/gpu.shared */
	char configured[GS_IMPORT_NAME_MAX]; /* as written, prefix added */
	int line;
	int replicas; /* per device */
	bool mig;     /* nvidia.com/mig-<profile> */
	/* Per replica: the template gpuslice would create (mode timeslice,
	 * mps or mig+timeslice; memory and compute as the plugin divides
	 * them, 0 where it sets no limit or the GPU is not known). */
	struct gs_slice_spec slice;
	/* Slices in all: replicas x devices, when --gpus was given; else 0. */
	int total;
};

struct gs_dp_config {
	int line;             /* where the document starts */
	/* The ConfigMap / Helm-values key it was embedded under ("" for a
	 * plain config file); set by the caller that unwrapped it. */
	char source[GS_IMPORT_SOURCE_MAX];
	char mig_strategy[8]; /* none | single | mixed */
	enum gs_dp_strategy strategy;
	bool rename_by_default;
	bool fail_requests_greater_than_one; /* after the plugin's default */
	int n_resources;
	struct gs_dp_resource res[GS_IMPORT_MAX_RESOURCES];
	struct gs_import_notes notes; /* ignored fields, what is better */
};

struct gs_dp_import {
	int n_configs;
	struct gs_dp_config config[GS_IMPORT_MAX_CONFIGS];
};

struct gs_import_opts {
	const struct gs_gpu_model *gpu; /* NULL: sizes unknown */
	int gpus;                       /* devices per node; 0: unknown */
};

/*
 * Translates every document of `doc`. OUT: *out (cleared first). On error
 * *out holds the configs before the failing one.
 */
gs_err gs_import_device_plugin(const struct gs_doc *doc,
                               const struct gs_import_opts *opts,
                               struct gs_dp_import *out, struct gs_errbuf *eb);

/* ---- DRA -------------------------------------------------------------- */

enum gs_dra_strategy {
	GS_DRA_TIME_SLICING = 0,
	GS_DRA_MPS,
};
const char *gs_dra_strategy_name(enum gs_dra_strategy s);
/* "Default", "Short", "Medium", "Long" for levels 0..3. */
const char *gs_dra_interval_name(int level);

struct gs_dra_device_limit {
	char device[GS_IMPORT_NAME_MAX]; /* UUID or index in the claim */
	uint64_t bytes;
	int mib; /* what the driver writes */
};

/* One GpuConfig or MigDeviceConfig. */
struct gs_dra_config {
	int line;
	bool mig;           /* MigDeviceConfig */
	bool sharing_given; /* false: the driver's default */
	enum gs_dra_strategy strategy;
	int interval;          /* time-slice level 0..3 */
	int thread_pct;        /* -1: not set */
	uint64_t pinned_bytes; /* 0: not set */
	int pinned_mib;        /* what the driver writes */
	int n_limits;
	struct gs_dra_device_limit limit[GS_IMPORT_MAX_DEVICE_LIMITS];
	/* The requests of the claim it applies to ("" = all of them). */
	int n_applies;
	char applies[GS_IMPORT_MAX_REQUESTS][GS_IMPORT_NAME_MAX];
	/* What each workload sharing the device gets in gpuslice. */
	struct gs_slice_spec slice;
};

#define GS_IMPORT_MAX_CEL 4
#define GS_IMPORT_CEL_MAX 320

struct gs_dra_request {
	char name[GS_IMPORT_NAME_MAX];
	int line;
	bool mig;                          /* device class mig.nvidia.com */
	char profile[GS_SPEC_PROFILE_MAX]; /* from a CEL selector, or "" */
	/* Other CEL selectors, rewritten for gpuslice.io devices: only ones
	 * on attributes both drivers publish with one meaning (type,
	 * profile, productName, architecture, cudaComputeCapability,
	 * driverVersion) and device.driver; any other is a block. */
	int n_cel;
	char cel[GS_IMPORT_MAX_CEL][GS_IMPORT_CEL_MAX];
	int count;                         /* 1 unless allocationMode/count */
	bool all;                          /* allocationMode: All */
};

struct gs_dra_import {
	char kind[32]; /* GpuConfig, ResourceClaim, ... */
	int line;      /* where its document starts */
	/* metadata of a ResourceClaim / ResourceClaimTemplate ("" unset) */
	char name[GS_IMPORT_NAME_MAX];
	char ns[64];
	/* Containers of the file's Pods and workloads that use the claim (a
	 * template: the most in one pod); 0 when none in the file names it. */
	int clients;
	struct gs_import_block k8s;
	int n_configs;
	struct gs_dra_config config[GS_IMPORT_MAX_CONFIGS];
	int n_requests;
	struct gs_dra_request request[GS_IMPORT_MAX_REQUESTS];
	/* matchAttribute: gpu.nvidia.com/parentUUID over these requests
	 * (all when n_same_parent is 0 and same_parent is set). */
	bool same_parent;
	int n_same_parent;
	char same_parent_of[GS_IMPORT_MAX_REQUESTS][GS_IMPORT_NAME_MAX];
	/* The claim's devices as one placement request (MIG profiles and
	 * whole GPUs, a same-parent gang when the constraint covers all),
	 * valid when has_place; counts past GS_PLACE_MAX_GANG clear it. */
	bool has_place;
	struct gs_place_request place;
	struct gs_import_notes notes;
};

/*
 * Translates the first importable document (GpuConfig, MigDeviceConfig,
 * ResourceClaim, ResourceClaimTemplate) of `doc`; other documents of the
 * file (Pods, Deployments, further claims) are skipped with a note each.
 * OUT: *out (cleared first). GS_ERR_NOT_FOUND when the file holds none.
 */
gs_err gs_import_dra(const struct gs_doc *doc, struct gs_dra_import *out,
                     struct gs_errbuf *eb);

/*
 * Every importable document in turn: translates the first one at or after
 * document *cursor and moves *cursor past it. GS_ERR_NOT_FOUND (no
 * message) when none is left. Pods and workloads of the file are not
 * translated but counted as the claims' clients.
 */
gs_err gs_import_dra_next(const struct gs_doc *doc, int *cursor,
                          struct gs_dra_import *out, struct gs_errbuf *eb);

/*
 * A Kubernetes quantity ("10Gi", "1G", "512Mi", "1.5Gi", "1e9") in bytes.
 * GS_ERR_PARSE for text that is not a quantity, GS_ERR_RANGE for a
 * negative one or one past 2^53 bytes. Fractions of a byte are dropped.
 */
gs_err gs_parse_k8s_quantity(const char *text, uint64_t *bytes,
                             struct gs_errbuf *eb);

#endif
