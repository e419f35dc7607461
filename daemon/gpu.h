/*
 * gpu.h - the node's GPUs as NVML shows them: discovery (dlopen of
 * libnvidia-ml.so.1, the real one or the sim's), MIG instances, the
 * per-process memory the watchdog compares with limits, Xid events, and
 * the MIG changes the reconciler applies.
 *
 * The inventory is a plain value refreshed by gs_gpus_refresh(); callers
 * that share it (API, watchdog, reconciler) hold the node lock. A "fake"
 * inventory (gs_gpus_fake) has GPUs but no library, for unit tests and the
 * fuzzer: every NVML operation on it is GS_ERR_UNSUPPORTED.
 */
#ifndef GS_DAEMON_GPU_H
#define GS_DAEMON_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/catalog.h"
#include "gs/err.h"

#define GS_GPUS_MAX    16
#define GS_GPU_MIG_MAX 8

struct gs_mig_dev {
	char uuid[96];
	char profile[32]; /* "3g.40gb" */
	int profile_id;   /* driver GI profile id */
	int gi_id, ci_id;
	int start, size; /* placement in memory slices */
	int compute_slices;
	uint64_t memory_bytes;
	int sm_count;
};

struct gs_gpu {
	int index;
	char uuid[96];
	char name[96];                  /* NVML product name */
	char model[48];                 /* catalog name, else the NVML name */
	const struct gs_gpu_model *cat; /* NULL when not in the catalog */
	uint64_t memory_bytes;
	int sm_count;
	bool mig_capable;
	bool mig_on;
	int n_mig;
	struct gs_mig_dev mig[GS_GPU_MIG_MAX];
	void *handle; /* nvmlDevice_t */
	/* PCI location, to match the kernel log's Xid lines; has_pci false
	 * when NVML did not say. */
	bool has_pci;
	uint32_t pci_domain, pci_bus, pci_device;
};

struct gs_gpu_proc {
	int32_t pid;
	uint64_t mem_bytes;
	int gi_id, ci_id; /* -1 without MIG */
};

/* A fault NVML reported. */
struct gs_gpu_event {
	int gpu;
	unsigned long long xid;
	int gi_id, ci_id; /* -1 when not attributable */
};

struct gs_gpus {
	bool sim;          /* the simulated driver (its serials say SIM) */
	bool fake;         /* no library at all (tests) */
	char library[256]; /* what was loaded */
	char sim_dir[256]; /* the simulator's state directory, if known */
	char driver[80];
	int n;
	struct gs_gpu gpu[GS_GPUS_MAX];
	void *lib;    /* dlopen handle */
	void *fn;     /* resolved entry points (gpu.c) */
	void *events; /* nvmlEventSet_t */
};

/*
 * Loads `library` (dlopen), initialises NVML and discovers the GPUs.
 * GS_ERR_UNAVAILABLE when the library or the driver is missing, or when
 * there are no GPUs (`g` is then closed).
 */
gs_err gs_gpus_open(struct gs_gpus *g, const char *library,
                    struct gs_errbuf *eb);
/* NVML shutdown and dlclose; on a zeroed or fake inventory does nothing. */
void gs_gpus_close(struct gs_gpus *g);
/* A library-less inventory of `count` GPUs of catalog `model`. */
gs_err gs_gpus_fake(struct gs_gpus *g, const char *model, int count,
                    struct gs_errbuf *eb);

/* Re-reads MIG mode and instances of every GPU. */
gs_err gs_gpus_refresh(struct gs_gpus *g, struct gs_errbuf *eb);

/*
 * Compute processes on GPU `i` (all its MIG devices included), with their
 * memory. OUT: procs[0..*n) (at most `cap`).
 */
gs_err gs_gpus_processes(struct gs_gpus *g, int i, struct gs_gpu_proc *procs,
                         int cap, int *n);

/* One process's share of a GPU's SMs, from NVML's samples. */
struct gs_gpu_util {
	int32_t pid;
	double sm_pct;   /* mean of its samples, 0..100 */
	unsigned samples;
};

/*
 * Per-process SM utilisation of GPU `i` from the samples newer than
 * *since_us (NVML's timestamps, microseconds), at most `cap` processes;
 * advances *since_us to the newest sample. GS_ERR_UNSUPPORTED where NVML
 * has no per-process samples (MIG, old drivers, a fake node).
 */
gs_err gs_gpus_process_util(struct gs_gpus *g, int i, uint64_t *since_us,
                            struct gs_gpu_util *out, int cap, int *n);

/* Waits up to `timeout_ms` for one Xid event. GS_ERR_TIMEOUT when none. */
gs_err gs_gpus_next_event(struct gs_gpus *g, int timeout_ms,
                          struct gs_gpu_event *ev);

/* Turns MIG mode on or off. */
gs_err gs_gpus_set_mig(struct gs_gpus *g, int i, bool on, struct gs_errbuf *eb);
/*
 * Creates a GPU instance of `profile_id` at `start` (-1: anywhere) with
 * one full compute instance. OUT: *dev (its UUID and ids).
 */
gs_err gs_gpus_mig_create(struct gs_gpus *g, int i, int profile_id, int start,
                          struct gs_mig_dev *dev, struct gs_errbuf *eb);
/* Destroys the compute and GPU instance `gi_id`. */
gs_err gs_gpus_mig_destroy(struct gs_gpus *g, int i, int gi_id,
                           struct gs_errbuf *eb);
/*
 * Destroys the GPU instance of `profile_id` at `start` on GPU i that has
 * no compute instance: a create cut short between its two NVML calls (a
 * daemon killed there), which no MIG device shows and which holds the
 * placement. Returns whether there was one (and it is gone).
 */
bool gs_gpus_mig_drop_half(struct gs_gpus *g, int i, int profile_id, int start);

/* Utilisation (% of time busy) of GPU `i`; -1 when unknown. */
int gs_gpus_utilization(struct gs_gpus *g, int i);
/* Memory in use on GPU `i` (all processes); 0 when unknown. */
uint64_t gs_gpus_memory_used(struct gs_gpus *g, int i);

/* GPU index by index text or UUID (GPU- or MIG-); -1 when none. */
int gs_gpus_find(const struct gs_gpus *g, const char *sel);

#endif
