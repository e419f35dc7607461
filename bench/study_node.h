/*
 * study_node.h - where the seed study runs: a private simulated node, or
 * one real GPU taken as it is.
 *
 * Sim (gs_study_node_open_sim): a fresh node state in a temporary
 * directory with six simulated H100s: GPUs 0-3 whole (the shared GPU is
 * 0; "exclusive" gives each job a GPU of its own), GPU 4 split into two
 * MIG instances and GPU 5 into four, created through the sim's NVML.
 * Children find the sim through GPUSLICE_SIM_DIR, LD_LIBRARY_PATH and
 * PATH (the base environment below); the study's own process loads the
 * sim's NVML by its path and reads busy time and memory straight from the
 * node state, so the figures are exact.
 *
 * Real (gs_study_node_open_real): GPU `index` through the system's NVML.
 * Nothing is changed: MIG is used only when it is already on (its
 * existing instances), MPS only when nvidia-cuda-mps-control exists and
 * the GPU's compute mode allows it (a private control daemon with its own
 * pipe directory, stopped at the end). Utilisation is sampled from NVML.
 *
 * Every figure names its source: `source` is "sim" or "<GPU name>,
 * driver <version>"; `label` is the longer line the charts carry.
 */
#ifndef GS_CLI_STUDY_NODE_H
#define GS_CLI_STUDY_NODE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"
#include "study_nvml.h"
#include "study_run.h"

#define GS_STUDY_MAX_DEVS 8
#define GS_STUDY_MAX_PIDS 64

/* A device a job runs on: a whole GPU or a MIG instance. */
struct gs_study_dev {
	char uuid[GS_STUDY_UUID_LEN];
	uint64_t memory_bytes;
	char what[48]; /* "GPU 0", "MIG 3g (GPU 4)" */
};

struct gs_study_node {
	bool sim;
	char source[160];
	char label[256];
	char tmp[96];             /* private scratch directory (short: it
	                             holds MPS sockets) */
	char bin_dir[PATH_MAX];   /* gpuslice and the gs-* workloads */
	char sim_dir[PATH_MAX];   /* the sim's libraries and tools */
	const char *base_env[16]; /* NULL-terminated, for every job */
	char *env_own[16];        /* the strings base_env points at */

	struct gs_study_dev shared; /* where the sharing strategies run */
	int n_excl;                 /* GPUs for "exclusive" (1: one after
	                               another on the same GPU) */
	struct gs_study_dev excl[4];
	int n_mig2, n_mig4; /* MIG instances for 2 and 4 jobs */
	struct gs_study_dev mig2[2], mig4[4];
	char mig_why[200]; /* why MIG is not used, "" if it is */
	bool whole_ok;     /* jobs may use the whole GPU (MIG off) */
	char whole_why[200];
	bool multi_ok; /* compute mode lets 2+ processes in */
	char multi_why[200];
	bool mps_ok;
	char mps_why[200];
	char mps_control[PATH_MAX + 64];

	struct gs_study_nvml *nvml;
	void *sim_map; /* struct gs_sim_map * (sim only) */
	int mps_seq;
};

/* Sets up a private simulated node. GS_ERR_NOT_FOUND: the sim is not built. */
gs_err gs_study_node_open_sim(struct gs_study_node *node, struct gs_errbuf *eb);
/* Takes real GPU `index` as it is. GS_ERR_UNAVAILABLE: no NVIDIA GPU. */
gs_err gs_study_node_open_real(struct gs_study_node *node, unsigned int index,
                               struct gs_errbuf *eb);
/* Stops what the node started and removes its scratch directory. */
void gs_study_node_close(struct gs_study_node *node);

/*
 * Starts a private MPS control daemon serving `dev`. OUT: pipe_dir, the
 * CUDA_MPS_PIPE_DIRECTORY its clients need. GS_ERR_UNSUPPORTED when MPS
 * is not usable here (node->mps_why says why).
 */
gs_err gs_study_mps_start(struct gs_study_node *node,
                          const struct gs_study_dev *dev, char *pipe_dir,
                          size_t len, struct gs_errbuf *eb);
/* Sends `quit` to the daemon of `pipe_dir` and waits for it to go. */
void gs_study_mps_stop(struct gs_study_node *node, const char *pipe_dir);

/* What one phase measured on its devices. */
struct gs_study_probe {
	struct gs_study_node *node;
	int n_dev;
	const struct gs_study_dev *dev[GS_STUDY_MAX_DEVS];
	/* sim: engine busy time at the start */
	int gpu[GS_STUDY_MAX_DEVS], engine[GS_STUDY_MAX_DEVS];
	uint64_t busy0[GS_STUDY_MAX_DEVS], sm_busy0[GS_STUDY_MAX_DEVS];
	uint32_t sms[GS_STUDY_MAX_DEVS];
	uint64_t t0_ns;
	/* real: utilisation samples */
	double util_sum;
	int util_n;
};

/* Starts measuring `devs` (duplicates are measured once). */
void gs_study_probe_begin(struct gs_study_probe *p, struct gs_study_node *node,
                          const struct gs_study_dev *const *devs, int n);
/* A sampler for gs_study_phase_run(): per-job memory peaks, utilisation. */
void gs_study_probe_sample(void *probe, struct gs_study_job *jobs, int n,
                           double t);
/*
 * Ends the measurement. OUT: *util_pct, the mean share of time the
 * devices had a kernel running (NaN when unknown); *sm_pct, the share of
 * their SM time used (sim only, else NaN).
 */
void gs_study_probe_end(struct gs_study_probe *p, double *util_pct,
                        double *sm_pct);

#endif
