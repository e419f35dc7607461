/*
 * study_nvml.h - the few NVML calls the seed study needs, through dlopen
 * of libnvidia-ml.so.1 (the real one, or the sim's by its path): the GPUs'
 * names, memory, compute and MIG modes and MIG devices; utilisation and
 * per-process memory while a cell runs.
 *
 * It changes nothing on a real GPU. The one call that does change a GPU,
 * gs_study_nvml_sim_mig(), refuses unless every device of the loaded
 * library is the simulator's (its serials start with "SIM").
 */
#ifndef GS_CLI_STUDY_NVML_H
#define GS_CLI_STUDY_NVML_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"

#define GS_STUDY_UUID_LEN 96
#define GS_STUDY_MAX_MIG  8

struct gs_study_mig {
	char uuid[GS_STUDY_UUID_LEN];
	uint64_t memory_bytes;
	unsigned int sm_count;
};

struct gs_study_gpu {
	unsigned int index;
	char name[96];
	char uuid[GS_STUDY_UUID_LEN];
	uint64_t memory_bytes;
	int compute_mode; /* NVML_COMPUTEMODE_*; -1 unknown */
	bool mig_on;
	int n_mig;
	struct gs_study_mig mig[GS_STUDY_MAX_MIG];
};

struct gs_study_proc {
	int32_t pid;
	uint64_t memory_bytes;
};

struct gs_study_nvml;

/*
 * Loads `library` (a path, or a name for the loader's search), initialises
 * NVML. GS_ERR_UNAVAILABLE when it cannot be loaded or initialised.
 * OUT: *out, freed by gs_study_nvml_close().
 */
gs_err gs_study_nvml_open(const char *library, struct gs_study_nvml **out,
                          struct gs_errbuf *eb);
/* Shuts NVML down and unloads; NULL does nothing. */
void gs_study_nvml_close(struct gs_study_nvml *n);

/* Whether the loaded library is the gpuslice simulator. */
bool gs_study_nvml_is_sim(const struct gs_study_nvml *n);
/* The driver version NVML reports ("" when unknown); lent. */
const char *gs_study_nvml_driver(const struct gs_study_nvml *n);
/* Number of GPUs (not MIG devices). */
unsigned int gs_study_nvml_count(const struct gs_study_nvml *n);

/* Describes GPU `index`, its MIG devices included. */
gs_err gs_study_nvml_gpu(struct gs_study_nvml *n, unsigned int index,
                         struct gs_study_gpu *out, struct gs_errbuf *eb);

/*
 * GPU utilisation (% of the last sample period with a kernel running) of
 * the GPU or MIG device named by `uuid`. GS_ERR_UNSUPPORTED where NVML has
 * no figure (MIG devices on real GPUs).
 */
gs_err gs_study_nvml_util(struct gs_study_nvml *n, const char *uuid,
                          unsigned int *pct);

/*
 * Compute processes on the device named by `uuid` (a GPU: its MIG
 * devices' processes included). OUT: procs[0..*count) of at most `cap`.
 */
gs_err gs_study_nvml_procs(struct gs_study_nvml *n, const char *uuid,
                           struct gs_study_proc *procs, int cap, int *count);

/*
 * Sim only: turns MIG on for GPU `index` (when it is off) and creates
 * `count` equal GPU instances of the largest profile that fits `count`
 * times, each with one full compute instance (the GPU is expected to hold
 * none yet: a fresh sim node). OUT: *gpu, described afresh. GS_ERR_PERM
 * when the library is not the simulator.
 */
gs_err gs_study_nvml_sim_mig(struct gs_study_nvml *n, unsigned int index,
                             int count, struct gs_study_gpu *gpu,
                             struct gs_errbuf *eb);

#endif
