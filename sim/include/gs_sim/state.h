/*
 * state.h - the simulated GPU node's shared state: one memory-mapped file
 * (<dir>/node.state) that every process using the sim maps, so that any
 * number of processes share one simulated node without a daemon.
 *
 * Who uses it: the CUDA driver stand-in (sim/libcuda.so.1), the NVML
 * stand-in (sim/libnvidia-ml.so.1), the MPS control and nvidia-smi
 * stand-ins, and `gpuslice sim`. The directory comes from
 * GPUSLICE_SIM_DIR, else $XDG_RUNTIME_DIR/gpuslice-sim, else
 * /tmp/gpuslice-sim-<uid> (gs_sim_dir_resolve()).
 *
 * Layout rules: fixed-width fields only (no pointers, size_t or sem_t);
 * the file starts with magic, version and total size; every struct's size
 * is checked by static_assert below, so a change of layout must bump
 * GS_SIM_STATE_VERSION. A reader that finds another version or a size
 * that does not match refuses the file (GS_ERR_VERSION / GS_ERR_CORRUPT).
 *
 * Engines. Each GPU has GS_SIM_ENGINES engines: engine 0 is the whole GPU
 * (used while MIG is off); engine 1 + i is MIG GPU instance slot i (used
 * while MIG is on and mig[i].in_use). An engine is an independent
 * execution unit with its own SMs, memory, time-slice timeline and MPS
 * server. Processes run on exactly one engine per context.
 *
 * Processes. procs[] holds one slot per (process, engine) with at least
 * one context: pid plus the process start time from /proc/<pid>/stat (so
 * a reused pid is never mistaken for the old process), memory in use
 * (allocations plus per-context overhead), GPU time used and a queue of
 * work (the op ring) that the timeline executes.
 *
 * Locking. One process-shared robust mutex guards everything except the
 * fields marked "immutable after init". Take it with gs_sim_lock(); a
 * holder that died is detected (EOWNERDEAD) and the state is repaired
 * (dead processes reaped, counters recomputed) before the lock is handed
 * on, so a kill -9 never hangs anyone.
 *
 * Timeline (the driver's business, kept here so every process computes the
 * same schedule): see sim/sched.c. Per engine: t_sim is the CLOCK_MONOTONIC
 * time up to which work has been simulated; whoever holds the lock
 * advances it to "now" before reading or changing anything on the engine.
 */
#ifndef GS_SIM_STATE_H
#define GS_SIM_STATE_H

#include <assert.h>
#include <stddef.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"

#define GS_SIM_STATE_MAGIC   0x3145544154534d53ULL /* "SMSTATE1" */
#define GS_SIM_STATE_VERSION 1u
#define GS_SIM_STATE_FILE    "node.state"

#define GS_SIM_MAX_GPUS 16
#define GS_SIM_MAX_MIG  7                    /* GPU instances per GPU */
#define GS_SIM_ENGINES  (1 + GS_SIM_MAX_MIG) /* whole GPU + MIG slots */
/* (process, engine) slots; engine.slot_mask has a bit for each */
#define GS_SIM_MAX_PROCS   256
#define GS_SIM_RING        128 /* queued ops per slot */
#define GS_SIM_XID_RING    32  /* Xid events kept per GPU */
#define GS_SIM_EXITED_RING 64  /* finished-process records */
#define GS_SIM_UUID_LEN    48  /* "GPU-" / "MIG-" + 36 + NUL */
#define GS_SIM_MODEL_LEN   64
#define GS_SIM_NAME_LEN    96
#define GS_SIM_PATH_LEN    256

/* gpu.timeslice_level: 0..3 as `nvidia-smi compute-policy --set-timeslice`. */
#define GS_SIM_TIMESLICE_LEVELS 4

/* engine.slice_owner when the MPS server (all its clients) holds the slice. */
#define GS_SIM_OWNER_NONE (-1)
#define GS_SIM_OWNER_MPS  (-2)

/* proc.state */
enum gs_sim_proc_state {
	GS_SIM_PROC_FREE = 0,
	GS_SIM_PROC_LIVE = 1,
};

/* proc.flags */
#define GS_SIM_PROC_MPS_CLIENT 0x1u /* runs inside the engine's MPS server */
#define GS_SIM_PROC_MPS_SERVER 0x2u /* the MPS server process itself (NVML) */
#define GS_SIM_PROC_MPS_BELOW  0x4u /* client priority below normal (1) */

/* mps.state */
enum gs_sim_mps_state {
	GS_SIM_MPS_OFF = 0,
	GS_SIM_MPS_ACTIVE = 1,
	GS_SIM_MPS_FAULT = 2, /* a client faulted; refuses new clients */
};

/* op.flags */
#define GS_SIM_OP_KERNEL 0x1u
#define GS_SIM_OP_MARKER 0x2u /* event record: zero work, end time wanted */

/*
 * One queued piece of work of a slot. `work` is in SM-nanoseconds: a
 * kernel that takes d ns on k SMs has work d * k and sms k. Written by
 * the owning process at the tail, executed by the timeline at the head,
 * end_ns filled in when it completes; the owner reads end_ns back (for
 * events) before it reuses the entry (see proc.ring_*).
 */
struct gs_sim_op {
	uint64_t work;
	uint32_t sms;
	uint32_t flags;
	uint64_t end_ns;
	uint64_t tag; /* owner-private (e.g. an event id) */
};
static_assert(sizeof(struct gs_sim_op) == 32, "gs_sim_op layout");

/* ---- MPS server of one engine (MPS helper may add fields in reserved) ---- */
struct gs_sim_mps {
	uint32_t state;              /* enum gs_sim_mps_state */
	int32_t control_pid;         /* nvidia-cuda-mps-control, 0 if none */
	uint64_t control_start_time; /* its /proc start time */
	int32_t server_pid;          /* reported server pid, 0 if none */
	uint32_t default_active_thread_pct; /* 1..100; 0 = unset (100) */
	uint32_t active_thread_pct;         /* server's value; 0 = default */
	uint32_t default_client_priority;
	uint64_t default_pinned_mem_limit; /* bytes per client; 0 = no cap */
	uint64_t pinned_mem_limit;         /* server's value; 0 = default */
	uint64_t fault_ns;                 /* when it went to FAULT */
	char pipe_dir[GS_SIM_PATH_LEN];    /* CUDA_MPS_PIPE_DIRECTORY */
	/* MPS stand-in (sim/mps_control.c): */
	uint64_t server_start_time; /* server_pid's /proc start time */
	uint32_t server_uid;        /* uid the server runs for */
	uint32_t device_ordinal;    /* this engine's position in the
	                               daemon's CUDA_VISIBLE_DEVICES:
	                               clients see it as device N */
	uint8_t reserved[184];      /* MPS stand-in: add fields here */
};
static_assert(sizeof(struct gs_sim_mps) == 512, "gs_sim_mps layout");

/*
 * An execution engine: the whole GPU or one MIG instance. Memory and SM
 * figures are set when the engine is created (init, or MIG instance
 * creation) and change only with it; mem_used and the timeline under the
 * lock.
 */
struct gs_sim_engine {
	uint32_t live; /* 1 when the engine exists */
	uint32_t sm_count;
	uint64_t mem_total; /* bytes */
	uint64_t
	    mem_used; /* bytes, all slots on it (== sum of proc.mem_used) */
	/* timeline (sim/sched.c) */
	uint64_t t_sim;        /* simulated up to (CLOCK_MONOTONIC ns) */
	uint64_t slice_end;    /* end of the current time slice */
	int32_t slice_owner;   /* slot index, GS_SIM_OWNER_MPS or _NONE */
	uint32_t rr_next;      /* round-robin cursor over slots */
	uint64_t busy_ns;      /* time with any kernel running (utilization) */
	uint64_t sm_busy_ns;   /* SM-ns used */
	uint64_t n_kernels;    /* kernels completed */
	uint64_t slot_mask[4]; /* bit i: procs[i] is live on this engine */
	uint8_t reserved[24];
	struct gs_sim_mps mps;
};
static_assert(sizeof(struct gs_sim_engine) == 128 + 512, "engine layout");

/* ---- MIG GPU instance metadata (engine 1 + i). NVML/MIG helper owns. ---- */
struct gs_sim_mig {
	uint32_t in_use;
	uint32_t gi_id;      /* NVML GPU instance id */
	uint32_t profile_id; /* driver GI profile id (catalog profile_id) */
	uint32_t start;      /* placement, memory slices */
	uint32_t size;
	uint32_t ci_in_use; /* one compute instance per GI in the sim */
	uint32_t ci_id;
	uint32_t ci_profile_id;
	uint32_t ci_start;
	uint32_t ci_size;
	/* "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	char uuid[GS_SIM_UUID_LEN];
	char profile_name[32]; /* "3g.40gb" */
	uint32_t compute_mode; /* NVML_COMPUTEMODE_* of this MIG device */
	uint8_t reserved[36];
};
static_assert(sizeof(struct gs_sim_mig) == 160, "gs_sim_mig layout");

/* An Xid event (NVML XidCriticalError). */
struct gs_sim_xid {
	uint64_t seq;     /* 1, 2, ... per GPU; 0 = empty entry */
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t xid;     /* 31 (MMU fault / illegal address) here */
	uint32_t engine;  /* 0 whole GPU, 1 + i MIG slot */
	int32_t pid;      /* faulting process */
	uint32_t gi_id;   /* 0xFFFFFFFF when not on a MIG instance */
	uint32_t ci_id;
	uint32_t reserved;
};
static_assert(sizeof(struct gs_sim_xid) == 40, "gs_sim_xid layout");

/*
 * One GPU. The identity block (model .. cc_minor) is immutable after init
 * and covered by the header's identity checksum.
 */
struct gs_sim_gpu {
	/* identity: immutable after init */
	char model[GS_SIM_MODEL_LEN]; /* catalog canonical name */
	char name[GS_SIM_NAME_LEN];   /* NVML product name */
	char uuid[GS_SIM_UUID_LEN];   /* "GPU-xxxxxxxx-xxxx-..." */
	uint32_t index;
	uint32_t sm_count;
	uint64_t memory_total; /* bytes */
	uint32_t cc_major, cc_minor;
	/* settings, under the lock */
	uint32_t timeslice_level; /* 0..3 */
	uint32_t compute_mode;    /* NVML_COMPUTEMODE_* */
	/* ---- NVML / MIG section (MIG helper owns; add fields in reserved) --
	 */
	uint32_t mig_mode;    /* current: 0 off, 1 on */
	uint32_t mig_pending; /* pending mode */
	uint32_t persistence_mode;
	uint32_t mig_next_gi_id; /* GI ids handed out */
	/* utilization snapshots (sim/nvml_dev.c): [0] older, [1] newer */
	uint64_t util_t[2];    /* CLOCK_MONOTONIC ns; 0 = none */
	uint64_t util_busy[2]; /* engine[0].busy_ns then */
	/* per-process accounting (sim/nvml/nvml_acct.c) */
	uint32_t acct_mode;       /* NVML_FEATURE_* */
	uint32_t acct_reserved;
	uint64_t acct_since_ns;   /* CLOCK_MONOTONIC it was last enabled */
	uint64_t acct_clear_seq;  /* exited[] records before it: cleared */
	uint8_t nvml_reserved[184];
	struct gs_sim_mig mig[GS_SIM_MAX_MIG];
	/* ---- Xid ring: newest at (xid_seq - 1) % GS_SIM_XID_RING ---- */
	uint64_t xid_seq; /* events posted so far */
	struct gs_sim_xid xid[GS_SIM_XID_RING];
	/* ---- engines: [0] whole GPU, [1 + i] MIG slot i ---- */
	struct gs_sim_engine engine[GS_SIM_ENGINES];
};
static_assert(sizeof(struct gs_sim_gpu) == 8024, "gs_sim_gpu layout");

/*
 * A (process, engine) slot. Free slots have state GS_SIM_PROC_FREE; a slot
 * is reused with generation + 1 so that a process holding an old index
 * notices (e.g. after `gpuslice sim reset` or a reap).
 *
 * Op ring: ring_tail counts ops written by the owner, ring_head ops the
 * timeline completed, ring_harvest ops whose results the owner has read;
 * harvest <= head <= tail and tail - harvest <= GS_SIM_RING. Entry
 * (n % GS_SIM_RING) holds op n. head_rem is the work left of op ring_head.
 */
struct gs_sim_proc {
	uint32_t state; /* enum gs_sim_proc_state */
	int32_t pid;
	uint64_t start_time; /* /proc/<pid>/stat starttime (clock ticks) */
	uint64_t generation;
	uint32_t gpu;
	uint32_t engine;
	uint32_t n_contexts;
	uint32_t flags;                 /* GS_SIM_PROC_* */
	uint32_t sm_limit;              /* SMs its kernels may use */
	uint32_t mps_active_thread_pct; /* 0 when not an MPS client */
	uint64_t mps_pinned_mem_limit;  /* bytes; 0 = none */
	uint64_t mem_used;   /* bytes: allocations + context overhead */
	uint64_t busy_ns;    /* GPU time its kernels ran */
	uint64_t sm_busy_ns; /* SM-ns its kernels used */
	uint64_t n_kernels;
	uint64_t created_ns;
	int32_t sticky_error; /* CUresult posted by another process (MPS
	                         fault); 0 = none */
	uint32_t reserved0;
	char comm[32]; /* process name, for nvidia-smi */
	uint64_t ring_head;
	uint64_t ring_tail;
	uint64_t ring_harvest;
	uint64_t head_rem; /* SM-ns left of op ring_head */
	uint8_t reserved[88];
	struct gs_sim_op ring[GS_SIM_RING];
};
static_assert(sizeof(struct gs_sim_proc) == 256 + GS_SIM_RING * 32,
              "gs_sim_proc layout");

/* A process that finished using an engine (exited, reaped or let go). */
struct gs_sim_exited {
	int32_t pid;
	uint32_t gpu;
	uint64_t start_time;
	uint64_t end_ns;
	uint64_t busy_ns;
	uint64_t sm_busy_ns;
	uint32_t engine;
	uint32_t reaped; /* 1 when it died without cleaning up */
};
static_assert(sizeof(struct gs_sim_exited) == 48, "gs_sim_exited layout");

union gs_sim_mutex {
	pthread_mutex_t m;
	uint8_t pad[64];
};
static_assert(sizeof(pthread_mutex_t) <= 64, "pthread_mutex_t fits");

struct gs_sim_state {
	/* header: immutable after init */
	uint64_t magic;       /* GS_SIM_STATE_MAGIC */
	uint32_t version;     /* GS_SIM_STATE_VERSION */
	uint32_t header_size; /* offsetof(gpus) */
	uint64_t size;        /* sizeof(struct gs_sim_state) */
	uint32_t n_gpus;
	uint32_t identity_crc; /* CRC-32 of the GPUs' identity blocks */
	uint64_t created_ns;   /* CLOCK_REALTIME at init */
	/* under the lock */
	uint64_t epoch;           /* bumped by `gpuslice sim reset` */
	uint64_t reaped_total;    /* slots reaped from dead processes */
	uint64_t lock_recoveries; /* EOWNERDEAD repairs */
	uint64_t exited_seq;      /* records written to exited[] */
	uint64_t last_reap_ns;    /* CLOCK_MONOTONIC of the last reap pass */
	uint8_t reserved[48];
	union gs_sim_mutex lock;
	struct gs_sim_exited exited[GS_SIM_EXITED_RING];
	struct gs_sim_gpu gpus[GS_SIM_MAX_GPUS];
	struct gs_sim_proc procs[GS_SIM_MAX_PROCS];
};
static_assert(sizeof(union gs_sim_mutex) == 64, "mutex slot");
static_assert(sizeof(struct gs_sim_state) == 1245760, "gs_sim_state layout");
static_assert(offsetof(struct gs_sim_state, lock) == 128, "lock offset");

/* ---------------------------------------------------------------------- */
/* Access API (sim/state.c). Library target gs_sim_state.                 */
/* ---------------------------------------------------------------------- */

/* A mapped state file. Opaque to callers except through the functions. */
struct gs_sim_map;

/* What `gpuslice sim init` creates one GPU from (filled from the catalog). */
struct gs_sim_gpu_init {
	char model[GS_SIM_MODEL_LEN];
	char name[GS_SIM_NAME_LEN];
	uint32_t sm_count;
	uint64_t memory_total; /* bytes */
	uint32_t cc_major, cc_minor;
};

/*
 * The state directory: `explicit` when non-NULL and non-empty, else
 * $GPUSLICE_SIM_DIR, else $XDG_RUNTIME_DIR/gpuslice-sim, else
 * /tmp/gpuslice-sim-<uid>. Returns GS_ERR_RANGE when it does not fit.
 */
gs_err gs_sim_dir_resolve(const char *explicit_dir, char *out, uint32_t len,
                          struct gs_errbuf *eb);

/*
 * Parses "2xH100-SXM5-80GB,1xA100-SXM4-40GB" (count 'x' model, count
 * optional) through the catalog into `out` (capacity `max`). OUT: *n.
 * GS_ERR_PARSE for malformed text, GS_ERR_UNKNOWN_MODEL, GS_ERR_RANGE for
 * more than `max` GPUs.
 */
gs_err gs_sim_gpus_parse(const char *spec, struct gs_sim_gpu_init *out, int max,
                         int *n, struct gs_errbuf *eb);

/*
 * Creates <dir>/node.state for `n` GPUs (creating dir, mode 0700 when
 * new). Writes a new file and renames it into place, so a process that
 * still maps an old file keeps a consistent (orphaned) view. Without
 * `force`, an existing state file is GS_ERR_EXISTS.
 */
gs_err gs_sim_state_create(const char *dir, const struct gs_sim_gpu_init *gpus,
                           int n, bool force, struct gs_errbuf *eb);

/*
 * Maps <dir>/node.state read-write after checking magic, version, size and
 * the identity checksum. GS_ERR_NOT_FOUND when there is no file,
 * GS_ERR_VERSION, GS_ERR_CORRUPT. OUT: *out, freed with
 * gs_sim_state_close().
 */
gs_err gs_sim_state_open(const char *dir, struct gs_sim_map **out,
                         struct gs_errbuf *eb);
/* Unmaps; NULL does nothing. */
void gs_sim_state_close(struct gs_sim_map *map);
/* The mapped state; valid until close. */
struct gs_sim_state *gs_sim_state_get(struct gs_sim_map *map);
/* The file's path. */
const char *gs_sim_state_path(const struct gs_sim_map *map);

/*
 * Checks a state image's static part: magic, version, size against the
 * file's size, the identity checksum and each GPU's identity (counts in
 * range, strings terminated). Safe without the lock; open calls it.
 */
gs_err gs_sim_state_validate(const struct gs_sim_state *st, uint64_t file_size,
                             struct gs_errbuf *eb);

/*
 * Lock held: checks the dynamic part (slots, engines, MIG, MPS, rings) for
 * values no correct writer produces. GS_ERR_CORRUPT names the first one.
 */
gs_err gs_sim_state_check(const struct gs_sim_state *st, struct gs_errbuf *eb);

/*
 * Takes the lock. When the previous holder died (EOWNERDEAD) the state is
 * repaired (gs_sim_state_repair) and marked consistent first. Waits at
 * most GS_SIM_LOCK_TIMEOUT_S (a live holder stopped by a signal, or a
 * corrupted mutex): GS_ERR_TIMEOUT; GS_ERR_INTERNAL when the mutex is
 * unusable. Never blocks forever on a dead holder.
 */
#define GS_SIM_LOCK_TIMEOUT_S 10
gs_err gs_sim_lock(struct gs_sim_state *st);
void gs_sim_unlock(struct gs_sim_state *st);

/*
 * Lock held: recomputes derived counters (engine.mem_used from slots),
 * clamps ring counters, reaps dead processes. Returns slots reaped.
 */
int gs_sim_state_repair(struct gs_sim_state *st);

/*
 * Lock held: reaps (gs_sim_reap) when the last pass is older than
 * GS_SIM_REAP_INTERVAL_NS, or always when `force`. Called on every lock by
 * the driver; forced before reporting out-of-memory or a full table.
 */
#define GS_SIM_REAP_INTERVAL_NS 100000000ULL
int gs_sim_reap_maybe(struct gs_sim_state *st, uint64_t now_ns, bool force);

/*
 * Lock held: frees the slots of processes that are gone (pid missing or
 * its start time differs), giving their memory back. `now_ns` is the
 * CLOCK_MONOTONIC time recorded for them. Returns slots reaped.
 */
int gs_sim_reap(struct gs_sim_state *st, uint64_t now_ns);

/*
 * Lock held: releases slot `i` (memory back to its engine, record in
 * exited[]); `reaped` marks a dead owner. No-op on a free slot.
 */
void gs_sim_proc_release(struct gs_sim_state *st, int i, uint64_t now_ns,
                         bool reaped);

/*
 * Lock held: finds the live slot of (pid, start_time) on (gpu, engine), or
 * allocates one. Returns the slot index, -1 when the table is full.
 * A new slot starts with zero usage and the caller fills flags/limits.
 */
int gs_sim_proc_acquire(struct gs_sim_state *st, int32_t pid,
                        uint64_t start_time, uint32_t gpu, uint32_t engine,
                        uint64_t now_ns);

/*
 * Lock held: resets all dynamic state (processes, memory, timelines, MPS,
 * Xid events, MIG back to off) and bumps epoch. GPU identities stay.
 */
void gs_sim_state_reset(struct gs_sim_state *st);

/*
 * Lock held: (re)initialises an engine with `sm` SMs and `mem` bytes and an
 * empty timeline and MPS server; used at init and by MIG instance
 * creation. Engine 0 of a GPU is set up by create/reset.
 */
void gs_sim_engine_init(struct gs_sim_engine *e, uint32_t sm, uint64_t mem,
                        uint64_t now_ns);

/* Lock held: posts an Xid event on GPU `gpu`. */
void gs_sim_xid_post(struct gs_sim_state *st, uint32_t gpu, uint32_t xid,
                     uint32_t engine, int32_t pid, uint64_t now_ns);

/* ---- timeline (sim/sched.c) ---- */

/* Time-slice length (ns) for level 0..3 (levels above 3 read as 3). */
uint64_t gs_sim_timeslice_ns(uint32_t level);

/*
 * Lock held: simulates engine `engine` of GPU `gpu` from its t_sim up to
 * now_ns: runs queued ops of its slots, time-slicing between contexts and
 * running MPS clients concurrently, charging busy time to each slot.
 */
void gs_sim_engine_advance(struct gs_sim_state *st, uint32_t gpu,
                           uint32_t engine, uint64_t now_ns);
/* Lock held: every live engine of every GPU. */
void gs_sim_advance_all(struct gs_sim_state *st, uint64_t now_ns);

/*
 * Lock held, engine advanced: a lower bound of the time op `seq` of slot
 * `i` completes (as if the slot ran alone from now on). Waiters sleep
 * until it and check again, so contention only adds wake-ups.
 */
uint64_t gs_sim_proc_eta(const struct gs_sim_state *st, int i, uint64_t seq);

/* Writes "<prefix>-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from random bytes. */
void gs_sim_uuid_make(const char *prefix, char out[GS_SIM_UUID_LEN]);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t gs_sim_now_ns(void);

/* Start time of `pid` from /proc/<pid>/stat (field 22); 0 when gone. */
uint64_t gs_sim_pid_start_time(int32_t pid);
/* Whether (pid, start_time) still names a running process. */
bool gs_sim_pid_alive(int32_t pid, uint64_t start_time);

/* The PCI bus number of simulated GPU `gpu` (domain 0, device 0), spread
 * like a multi-socket server's slots: 0x18, 0x2a, ... NVML's PCI info and
 * the driver's kernel-log lines both use it. */
uint32_t gs_sim_pci_bus(uint32_t gpu);

#endif
