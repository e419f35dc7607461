/*
 * region.h - the shared region: what the node daemon, `gpuslice run` and
 * libgpuslice.so (the shim inside each workload) share about slices.
 *
 * A region is a run directory holding memory-mapped files (layout and
 * modes: region/README.md):
 *
 *   <dir>/limits   what each slice may use: name, memory cap per GPU,
 *                  compute limit, priority, weight, mode, owner. Written
 *                  only by the region's creator, mode 0600. In a region
 *                  the daemon made, each slice owner reads its own view,
 *                  limits.<uid> (the daemon's, readable by that uid
 *                  alone): its slices whole, others' only as far as the
 *                  scheduler needs them; a tenant can neither raise its
 *                  limits nor read another's names and caps.
 *   <dir>/usage.<uid>  what the slices of owner <uid> and their processes
 *                  use: memory in use per GPU (the books the cap is
 *                  enforced against), the high-water mark, byte-seconds,
 *                  GPU busy time, time throttled; their token buckets;
 *                  the table of their attached processes. Owned by <uid>,
 *                  mode 0600 (uid 0's: 0666).
 *   <dir>/books/usage.0.<slot>  the same for one slice of uid 0 in a
 *                  region the daemon made (GS_SLICE_PRIVATE_BOOKS): in
 *                  root's directory (0700), so on the host only root
 *                  reaches it; a pod gets its own slice's file mounted
 *                  at <dir>/usage.0 and no other.
 *   <dir>/usage    the table of GPUs, keyed by UUID, and the compute
 *                  scheduler's shared records per GPU and slice. Every
 *                  tenant writes it (mode 0666); nothing in it sets a
 *                  limit or gives tokens.
 *
 * Slices and processes live in stable slots. A slot is reused with a new
 * generation, and every reference (struct gs_slice_ref, gs_proc_ref)
 * carries the generation it was issued for: an operation through a stale
 * reference fails with GS_ERR_NOT_FOUND instead of touching the new
 * occupant. A process is identified by pid + start time (from
 * /proc/<pid>/stat) + pid namespace, so a reused pid is never taken for
 * the process that held it.
 *
 * Who may do what (enum gs_region_role):
 *
 *   OWNER   the daemon. Creates the region if missing (marking it
 *           privileged), creates, changes and deletes slices.
 *   RUNNER  `gpuslice run`. Creates an unprivileged region if missing;
 *           creates ephemeral slices only in an unprivileged region
 *           (GS_ERR_PERM in a privileged one: ask the daemon). Joins
 *           existing slices.
 *   TENANT  the shim. Never writes limits; attaches processes, keeps the
 *           books. The region must exist (GS_ERR_NOT_FOUND otherwise).
 *
 * Concurrency: limits are written under the writers' lock (an in-process
 * mutex plus flock(2) on <dir>/limits.lock, mode 0600, which only the
 * region's creator can open, taken with a deadline) and read through a
 * sequence counter with no lock at all (readers never block writers and
 * retry on a torn read). Region files are published whole by rename, so
 * opening a region takes no lock either: nothing a tenant can lock makes
 * the daemon wait without a deadline. Each usage file is guarded by its
 * own robust process-shared mutex: a process that dies holding one costs
 * the next locker a repair (books recomputed from the process table),
 * never a hang; a lock that cannot be had within a few seconds (a holder
 * stopped with SIGSTOP) is GS_ERR_TIMEOUT, never a wait forever.
 *
 * Memory books: gs_region_mem_reserve() adds to a slice's usage on one GPU
 * only if the result stays within the cap, atomically across processes;
 * the caller then allocates, and on failure gives the reservation back
 * (gs_region_mem_release) - on success the reservation simply stands, and
 * is released when the memory is freed. The process table keeps each
 * process's share, so gs_region_reap() can return the share of a process
 * that died (kill -9) to its slice.
 *
 * Ownership: a struct gs_region is created by gs_region_open() and freed
 * by gs_region_close(). Every other struct here is a plain value the
 * caller owns. Nothing returned points into the mapping.
 *
 * Errors: GS_ERR_NOT_FOUND (no region, no such slice, stale reference),
 * GS_ERR_EXISTS (slice name taken), GS_ERR_PERM (limits not writable in
 * this role), GS_ERR_NO_FIT (table full), GS_ERR_QUOTA (over the cap),
 * GS_ERR_VERSION / GS_ERR_CORRUPT (a file this build cannot read),
 * GS_ERR_TIMEOUT (lock), GS_ERR_IO (system call failed; errbuf says which).
 */
#ifndef GS_REGION_H
#define GS_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/slice_limits.h"
#include "gs/spec.h"

#define GS_REGION_VERSION     6u /* 2: owner_uid in limits, uid in process slots;
                                      3: books, buckets and processes in
                                      per-owner files (usage.<uid>);
                                      4: uid 0's slices of a privileged
                                      region keep theirs in a file of
                                      their own (books/usage.0.<slot>);
                                      5: each slice's scheduler record
                                      in its owner file, the shared
                                      file the daemon's (arbiter);
                                      6: the memory books changed by
                                      atomics, no lock (a process's
                                      word carries its busy count) */
#define GS_REGION_MAX_DEVICES 32
#define GS_REGION_MAX_SLICES  256
#define GS_REGION_MAX_PROCS   1024
/* Process slots one uid other than root may hold, so that one tenant
 * cannot take them all. */
#define GS_REGION_PROCS_PER_UID 256
#define GS_REGION_UUID_MAX    96 /* GPU or MIG UUID, NUL included */
#define GS_REGION_DIR_MAX     256

#define GS_REGION_LIMITS_FILE "limits"
#define GS_REGION_USAGE_FILE  "usage"
/* Where the private books of uid 0's slices of a privileged region live
 * (GS_SLICE_PRIVATE_BOOKS): root's, mode 0700. */
#define GS_REGION_BOOKS_DIR "books"
/* The writers' lock: mode 0600, the region creator's; tenants never see it. */
#define GS_REGION_LOCK_FILE "limits.lock"

enum gs_region_role {
	GS_REGION_TENANT = 0,
	GS_REGION_RUNNER = 1,
	GS_REGION_OWNER = 2,
};

/* Whether a slice owned by `owner_uid` in a region that is (or is not)
 * privileged keeps private books (GS_SLICE_PRIVATE_BOOKS). */
bool gs_region_books_private(bool privileged, uint32_t owner_uid);
/*
 * The host path of the file holding the books of the slice in `slot`
 * owned by `owner_uid`, in the region in `dir`: <dir>/books/usage.0.<slot>
 * for private books, else <dir>/usage.<owner_uid>. OUT: out. GS_ERR_RANGE
 * when it does not fit.
 */
gs_err gs_region_books_path(const char *dir, bool privileged,
                            uint32_t owner_uid, int32_t slot, char *out,
                            size_t n);

/* Fills `lim` with no caps, normal priority, weight 1, strict, `name`,
 * owned by the caller's uid. */
void gs_slice_limits_init(struct gs_slice_limits *lim, const char *name);

/* A slice slot and the generation it was issued for. */
struct gs_slice_ref {
	int32_t slot;
	uint32_t reserved;
	uint64_t generation;
};

/* A process slot and the generation it was issued for. */
struct gs_proc_ref {
	int32_t slot;
	uint32_t reserved;
	uint64_t generation;
};

/* One slice's (or one process's) usage of one GPU. */
struct gs_dev_usage {
	char uuid[GS_REGION_UUID_MAX];
	uint64_t mem_used;     /* bytes, now */
	uint64_t mem_peak;     /* bytes, high-water mark */
	double mem_byte_s;     /* integral of mem_used over time */
	uint64_t busy_ns;      /* GPU time of its work, measured */
	uint64_t throttled_ns; /* time its launches waited for the limiter */
	uint64_t launches;
};

/*
 * A slice's usage: per GPU in dev[0..n_dev), and totals (sums, except
 * mem_peak: the highest per-GPU peak).
 */
struct gs_slice_usage {
	uint32_t n_procs; /* attached processes, live */
	uint32_t n_dev;
	uint64_t mem_used;
	uint64_t mem_peak;
	double mem_byte_s;
	uint64_t busy_ns;
	uint64_t throttled_ns;
	uint64_t launches;
	struct gs_dev_usage dev[GS_REGION_MAX_DEVICES];
};

/* An attached process, as listed by gs_region_proc_next(). */
struct gs_proc_info {
	struct gs_proc_ref ref;
	struct gs_slice_ref slice;
	int32_t pid;
	uint32_t flags; /* GS_PROC_* */
	uint64_t start_time;
	uint64_t attached_ns; /* CLOCK_REALTIME */
	uint32_t n_dev;
	uint32_t local; /* 1: in the reader's pid namespace, so `pid` and
	                   /proc/<pid> mean that process here */
	struct gs_dev_usage dev[GS_REGION_MAX_DEVICES];
};

/* gs_proc_info.flags / gs_region_proc_attach() flags */
#define GS_PROC_RUNNER 0x1u /* `gpuslice run` itself: holds the slice */

struct gs_region;

/*
 * The run directory: `explicit_dir` when non-NULL and non-empty, else
 * $GPUSLICE_RUN_DIR, else /run/gpuslice when it exists (a daemon made
 * it), else $XDG_RUNTIME_DIR/gpuslice, else /tmp/gpuslice-<uid>.
 * OUT: out (GS_REGION_DIR_MAX bytes). GS_ERR_RANGE when it does not fit.
 */
gs_err gs_region_dir_resolve(const char *explicit_dir,
                             char out[GS_REGION_DIR_MAX], struct gs_errbuf *eb);

/*
 * Opens (and for OWNER/RUNNER creates, with the directory) the region in
 * `dir`. A region left from an earlier boot is recreated by OWNER/RUNNER
 * and refused (GS_ERR_NOT_FOUND) by TENANT. OUT: *out, freed with
 * gs_region_close(). On error nothing is left open.
 */
gs_err gs_region_open(const char *dir, enum gs_region_role role,
                      struct gs_region **out, struct gs_errbuf *eb);
/*
 * An OWNER's open with the choice of arbiter: gs_region_open(OWNER) makes
 * (or keeps) a region whose turns its creator's arbiter gives (gpusliced:
 * the shared file is the creator's, GS_RU_ARBITER). An owner that runs no
 * arbiter (the Slurm plugin on its own) passes false: its jobs' processes
 * take turns among themselves, as in a runner's region. A region of the
 * other kind is replaced.
 */
gs_err gs_region_open_owner(const char *dir, bool arbiter,
                            struct gs_region **out, struct gs_errbuf *eb);
/* Unmaps and frees; NULL does nothing. Attached processes stay attached. */
void gs_region_close(struct gs_region *r);
/*
 * Bounds every wait of this handle for the usage file's shared mutex (a
 * lock every tenant can take) to `wait_ms`, and for a second after such a
 * wait timed out, to no wait at all: calls that need it fail with
 * GS_ERR_TIMEOUT (or report nothing) at once. The daemon sets this so
 * that a tenant stopped while holding the mutex costs it one short wait a
 * second, never a queue of multi-second ones. 0 (the default): waits of
 * a few seconds.
 */
void gs_region_set_lock_wait(struct gs_region *r, unsigned wait_ms);
/* Whether the daemon created this region (its limits are read-only here). */
bool gs_region_is_privileged(const struct gs_region *r);
/* Whether this handle may write limits. */
bool gs_region_can_write_limits(const struct gs_region *r);

/* OWNER: whether open found the usage file's lock held past its deadline
 * (a tenant wedging it) and replaced the files. */
bool gs_region_repaired_lock(const struct gs_region *r);
/* Whether open found files of another layout version (a gpuslice
 * upgrade) and replaced them: OWNER always (slices come back from the
 * daemon's store), RUNNER when `gpuslice run` made them (not a daemon's);
 * running processes keep the old files. Other cases refuse such files
 * (GS_ERR_VERSION). */
bool gs_region_replaced_version(const struct gs_region *r);
/* An owner file found cut short: usage.<uid>, or (slot >= 0) the private
 * books of that slot (gs_region_books_path). */
struct gs_region_cut {
	uint32_t uid;
	int32_t slot;
};

/*
 * Region files this handle maps that were cut short (ftruncate: any tenant
 * may do it to the shared usage file, an owner to its owner file, a pod to
 * its private books) and not reported before: *shared for the shared
 * usage file, and owner files in cut[0..return value). Found from the
 * file's size, or from a fault the region's SIGBUS guard caught: instead
 * of killing the process, the pages past the new end read as zeros in it
 * from then on (scheduler records, or that owner's books, are lost to
 * it). One caller thread (the daemon's housekeeping).
 */
int gs_region_truncated(struct gs_region *r, bool *shared,
                        struct gs_region_cut *cut, int max);
/*
 * Creator: replaces the shared usage file with a fresh one (same region,
 * the GPU table this handle wrote; scheduler records start empty), for
 * one a tenant cut short or wedged, so that new processes can open the
 * region; running ones move to it when they find theirs cut short or its
 * lock out of reach. The mapping replaced stays
 * mapped in this process until the next rebuild (other threads may still
 * read it): rebuild at most once a second.
 */
gs_err gs_region_rebuild_usage(struct gs_region *r, struct gs_errbuf *eb);
/*
 * Creator, called about once a second: when the shared usage lock has
 * been out of reach for LOCK_TIMEOUT_S (3 s: a tenant holds it, stopped,
 * or wrote a thread id into it), rebuilds the file (*rebuilt). Processes
 * that find their shared lock out of reach, or their file cut short,
 * move to the new file by themselves. Otherwise does nothing.
 */
gs_err gs_region_repair_shared(struct gs_region *r, bool *rebuilt,
                               struct gs_errbuf *eb);
/*
 * The arbiter of a daemon's region (the OWNER's; GS_ERR_PERM for any
 * other handle). One pass over every GPU in use: reads each slice's own
 * scheduler record from its owner file, publishes a checked copy in the
 * shared file, gives and takes back the turns, keeps the launch gate,
 * and wakes the processes that waited on a change. OUT: *next_ns, when
 * it wants the next pass (1 ms while slices are active, else up to
 * 100 ms). One thread calls it, between gs_region_arbiter_wait()s.
 */
gs_err gs_region_arbitrate(struct gs_region *r, uint64_t *next_ns);
/* Sleeps up to `ns`, or until a process rings the region's bell. */
void gs_region_arbiter_wait(struct gs_region *r, uint64_t ns);
/* The directory the region lives in. */
const char *gs_region_dir(const struct gs_region *r);

/* ---- Slices ---------------------------------------------------------- */

/*
 * Creates a slice. GS_ERR_EXISTS when the name is taken, GS_ERR_INVALID
 * for a bad name or out-of-range limit, GS_ERR_NO_FIT when the table is
 * full, GS_ERR_PERM when this handle may not write limits. OUT: *out.
 */
gs_err gs_region_slice_create(struct gs_region *r,
                              const struct gs_slice_limits *lim,
                              struct gs_slice_ref *out, struct gs_errbuf *eb);
/*
 * Finds `lim->name`; creates it from `lim` when missing and this handle
 * may write limits. One step under the limits lock, so concurrent
 * callers agree on one slice. OUT: *out, *created (may be NULL).
 */
gs_err gs_region_slice_ensure(struct gs_region *r,
                              const struct gs_slice_limits *lim,
                              struct gs_slice_ref *out, bool *created,
                              struct gs_errbuf *eb);
/* Finds a live slice by name. GS_ERR_NOT_FOUND. OUT: *out. */
gs_err gs_region_slice_find(struct gs_region *r, const char *name,
                            struct gs_slice_ref *out);
/* Replaces a slice's limits (the name stays). Takes effect at once. */
gs_err gs_region_slice_update(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              const struct gs_slice_limits *lim,
                              struct gs_errbuf *eb);
/*
 * Publishes the slice's charge ratio (GS_CHARGE_MIN..GS_CHARGE_ONE in
 * 1/65536, gs/region_sched.h): the share of each batch's measured GPU
 * time its processes charge its token bucket. In the limits file, which
 * only the region's creator writes (gpusliced, from NVML accounting; a
 * new epoch when it changed; the slice's limits stay as they are). A new slice in the slot starts at
 * GS_CHARGE_ONE. GS_ERR_INVALID out of range, GS_ERR_NOT_FOUND for a
 * stale reference, GS_ERR_PERM when this handle may not write limits.
 */
gs_err gs_region_slice_set_charge(struct gs_region *r,
                                  const struct gs_slice_ref *ref,
                                  uint32_t charge_q16, struct gs_errbuf *eb);
/*
 * Deletes a slice: the slot is freed with a new generation. Processes
 * still attached keep running; their books are dropped and their next
 * operation on the slice sees GS_ERR_NOT_FOUND.
 */
gs_err gs_region_slice_delete(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              struct gs_errbuf *eb);
/*
 * What `gpuslice run` does: finds `lim->name` (creating it from `lim` when
 * missing and this handle may write limits) and attaches the calling
 * process with `proc_flags`, in one step under the limits lock, so that a
 * concurrent gs_region_slice_leave() cannot delete the slice in between.
 * GS_ERR_NOT_FOUND when the slice is missing and cannot be created here.
 * OUT: *slice, *proc, *created (may be NULL).
 */
gs_err gs_region_slice_join(struct gs_region *r,
                            const struct gs_slice_limits *lim,
                            uint32_t proc_flags, struct gs_slice_ref *slice,
                            struct gs_proc_ref *proc, bool *created,
                            struct gs_errbuf *eb);
/*
 * Detaches `proc` and, when the slice is ephemeral, nobody else is
 * attached (after reaping) and this handle may write limits, deletes it.
 * OUT: *deleted (may be NULL).
 */
gs_err gs_region_slice_leave(struct gs_region *r,
                             const struct gs_slice_ref *slice,
                             const struct gs_proc_ref *proc, bool *deleted);
/* A consistent copy of a slice's limits, as its creator set them (without
 * GS_SLICE_PRIVATE_BOOKS). OUT: *out. */
gs_err gs_region_slice_limits(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              struct gs_slice_limits *out);
/* Whether a live slice keeps private books (GS_SLICE_PRIVATE_BOOKS). */
bool gs_region_slice_private_books(struct gs_region *r,
                                   const struct gs_slice_ref *ref);
/* A snapshot of a slice's usage. OUT: *out. */
gs_err gs_region_slice_usage(struct gs_region *r,
                             const struct gs_slice_ref *ref,
                             struct gs_slice_usage *out);
/*
 * Iterates over live slices: start with it->slot = -1; returns false when
 * there are no more. OUT: *it (the next slice's reference).
 */
bool gs_region_slice_next(struct gs_region *r, struct gs_slice_ref *it);

/* ---- Processes ------------------------------------------------------- */

/*
 * Attaches the calling process (pid, start time, pid namespace) to a
 * slice. Attaching again from the same process returns its existing slot.
 * GS_ERR_NO_FIT when the process table is full. OUT: *out.
 */
gs_err gs_region_proc_attach(struct gs_region *r,
                             const struct gs_slice_ref *slice, uint32_t flags,
                             struct gs_proc_ref *out, struct gs_errbuf *eb);
/* Detaches: its memory share goes back to the slice, its slot is freed. */
gs_err gs_region_proc_detach(struct gs_region *r, const struct gs_proc_ref *p);
/*
 * Frees the slots of attached processes that are gone (pid missing, a
 * zombie, or a different start time), returning their memory to their
 * slices. Processes in another pid namespace are left alone. Returns the
 * number reaped, or a negative gs_err.
 */
int gs_region_reap(struct gs_region *r);
/* Live processes attached to a slice (after nothing is reaped). */
int gs_region_slice_nprocs(struct gs_region *r, const struct gs_slice_ref *s);
/* Iterates over attached processes; start with it->slot = -1. OUT: *out. */
bool gs_region_proc_next(struct gs_region *r, struct gs_proc_ref *it,
                         struct gs_proc_info *out);

/* ---- GPUs and memory books ------------------------------------------- */

/*
 * The region's slot for GPU `uuid`, added when new (`total_bytes` is its
 * physical memory, kept for views). Returns the slot, or a negative gs_err
 * (GS_ERR_NO_FIT when the table is full).
 */
int gs_region_device(struct gs_region *r, const char *uuid,
                     uint64_t total_bytes);
/* The UUID of device slot `dev`, or NULL. Valid until close. */
const char *gs_region_device_uuid(struct gs_region *r, int dev);

/*
 * Reserves `bytes` of process `p`'s slice on device slot `dev` and
 * updates the high-water marks. GS_ERR_QUOTA when that would take the
 * slice over its cap (dead processes are reaped first, then it is tried
 * once more); nothing is charged then. GS_ERR_NOT_FOUND for a stale
 * reference.
 */
gs_err gs_region_mem_reserve(struct gs_region *r, const struct gs_proc_ref *p,
                             int dev, uint64_t bytes);
/* Gives back a reservation or a freed allocation. */
void gs_region_mem_release(struct gs_region *r, const struct gs_proc_ref *p,
                           int dev, uint64_t bytes);
/*
 * The slice's view of device `dev`: bytes in use by the whole slice and
 * its cap (0 when uncapped). OUT: *used, *limit.
 */
gs_err gs_region_mem_view(struct gs_region *r, const struct gs_proc_ref *p,
                          int dev, uint64_t *used, uint64_t *limit);

/* ---- Helpers --------------------------------------------------------- */

/* Start time of `pid` (field 22 of /proc/<pid>/stat); 0 when gone. */
uint64_t gs_region_pid_start_time(int32_t pid);
/* Whether (pid, start time) names a running, non-zombie process. */
bool gs_region_pid_alive(int32_t pid, uint64_t start_time);

#endif
