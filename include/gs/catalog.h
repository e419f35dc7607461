/*
 * catalog.h - the GPU catalog: models, SM counts, memory and MIG profiles
 * with their valid placements. Generated at build time from
 * data/mig-profiles.json (a copy of shared/reference/mig-profiles.json) by
 * core/gen_catalog.py into a constant table; nothing here allocates and
 * every pointer returned points into static, read-only data (never free).
 *
 * Placements are in memory-slice units: an instance occupies
 * [start, start + size) and two instances conflict iff ranges overlap.
 */
#ifndef GS_CATALOG_H
#define GS_CATALOG_H

#include <stdbool.h>
#include <stdint.h>

#define GS_CATALOG_MAX_PLACEMENTS 8
#define GS_CATALOG_MAX_PROFILES 24
#define GS_CATALOG_MAX_PCI_IDS 8

struct gs_mig_placement {
	uint8_t start;
	uint8_t size;
};

struct gs_mig_profile {
	const char *name;          /* "1g.10gb", "1g.10gb+me", "7g.80gb" */
	int nvml_profile_index;    /* NVML_GPU_INSTANCE_PROFILE_* value */
	int profile_id;            /* driver's GI profile ID (nvidia-smi -lgip) */
	int compute_slices;        /* the "Ng" */
	int memory_slices;         /* placement size */
	int max_instances;         /* on an empty GPU */
	int sm_count;              /* SMs of one instance; 0 when unknown */
	uint64_t memory_mib;       /* as NVML reports it; 0 when unknown */
	int n_placements;
	struct gs_mig_placement placements[GS_CATALOG_MAX_PLACEMENTS];
	bool inferred;             /* any value here is marked inferred */
	/* Additions (core1): */
	const char *attributes;    /* "" or "me" (the part after '+') */
	uint64_t memory_mib_nominal; /* the name's GB x 1024; never 0 */
	bool profile_id_inferred;  /* profile_id_confidence says inferred */
	bool placements_inferred;  /* placements_confidence says inferred */
};

struct gs_gpu_model {
	const char *name;          /* canonical: "H100-SXM5-80GB" */
	const char *nvml_name;     /* "NVIDIA H100 80GB HBM3" */
	const char *architecture;  /* "Hopper" */
	int cc_major, cc_minor;    /* CUDA compute capability */
	int sm_count;              /* whole GPU */
	uint64_t memory_mib;       /* whole GPU as NVML reports it */
	int compute_slices;        /* 7 (4 on A30) */
	int memory_slices;         /* 8 (4 on A30) */
	int max_gpu_instances;
	int n_profiles;
	struct gs_mig_profile profiles[GS_CATALOG_MAX_PROFILES];
	bool inferred;             /* placements or sizes inferred, not observed */
	/* Additions (core1): */
	const char *const *aliases; /* other names gs_catalog_find accepts */
	int n_aliases;
	uint32_t pci_device_ids[GS_CATALOG_MAX_PCI_IDS]; /* 0xDDDDVVVV */
	int n_pci_device_ids;
	bool sm_count_inferred;    /* not stated for the whole GPU in the data */
	bool memory_inferred;      /* no observed whole-GPU total */
	bool cc_inferred;          /* compute capability not in the data */
	bool nvml_name_inferred;   /* no NVML name example in the data */
	bool mig_mode_change_needs_reset;
	const char *inferred_note; /* which whole-GPU values are inferred, how */
};

/* Number of models and the i-th (0 <= i < count). */
int gs_catalog_count(void);
const struct gs_gpu_model *gs_catalog_get(int i);

/*
 * Finds a model by canonical name, NVML product name or alias ("H100",
 * "H100-80GB", "NVIDIA H100 80GB HBM3", "a100-40gb"), case-insensitively.
 * Returns NULL when nothing matches.
 */
const struct gs_gpu_model *gs_catalog_find(const char *name);

/* A profile of a model by name ("3g.40gb") or by GI profile ID; NULL if none. */
const struct gs_mig_profile *gs_catalog_profile(const struct gs_gpu_model *m,
						const char *name);
const struct gs_mig_profile *
gs_catalog_profile_by_id(const struct gs_gpu_model *m, int profile_id);

/* The model whose pci_device_ids hold `pci_id` (0xDDDDVVVV); NULL if none. */
const struct gs_gpu_model *gs_catalog_find_pci(uint32_t pci_id);

/* Whether `start` is a valid placement start for the profile. */
bool gs_catalog_placement_valid(const struct gs_mig_profile *p, int start);

#endif
