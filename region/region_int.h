/*
 * region_int.h - the shared region's file layout and the handle (private
 * to region/ and tests that forge entries; others use include/gs/region.h,
 * the shim also gs/region_launch.h).
 *
 * Both files start with magic, version, header size and total size, and
 * carry the same random region_id, so a usage file is never paired with
 * another region's limits. Fixed-width fields only; every struct's size is
 * checked below. A layout change bumps GS_REGION_VERSION; a reader that
 * finds another version refuses the file (GS_ERR_VERSION).
 *
 * limits (written under the writers' lock, limits.lock, read through seq):
 *
 *   struct gs_rl_header        128 bytes
 *   struct gs_rl_slice[256]    128 bytes each
 *
 * Views (privileged regions only): the daemon's `limits` is 0600, and
 * each uid that owns slices reads limits.<uid> instead - the same layout,
 * owned by the daemon, mode 0640 with a POSIX ACL granting only that uid
 * read access (0644 where the filesystem has no ACLs). A view holds the
 * uid's own slices and uid 0's (any uid the name is handed to may join
 * those) whole; of every other slice only what the scheduler needs
 * (generation, compute %, priority, weight, mode, the MPS flag): no name,
 * no memory cap, owner GS_RL_VIEW_PUBLIC. limits.public (0644) is the
 * view of a uid with no slices. The writer republishes every view, under
 * the view's own seq, each time it changes the limits.
 *
 * usage (under the robust mutex in its header, except the atomics noted).
 * Only what slices of different owners must see of each other to take
 * turns on a GPU - nothing that sets a limit, gives tokens or names a
 * process. In a daemon's region (GS_RU_ARBITER) it is the daemon's, mode
 * 0644: the scheduler records are what its arbiter published, and no
 * tenant can write, lock or cut the file. In a region `gpuslice run` made
 * for its own user (no arbiter) that user's processes write them, mode
 * 0666 in a root-made one:
 *
 *   struct gs_ru_header                      256
 *   struct gs_ru_device[32]                  208 each (UUID, view, sched)
 *   struct gs_sched_slice[32][256]           64 each (device-major, so
 *                                            one GPU's slices are one
 *                                            array for the scheduler)
 *
 * usage.<uid> (one per slice owner: created by the daemon - or by
 * `gpuslice run` in its own region - owned by that uid, mode 0600, so
 * only the owner's processes and root can read or write it; 0666 for
 * uid 0, whose slices any uid the name is handed to may join), and
 * books/usage.0.<slot> (layout 4: one per uid-0 slice of a privileged
 * region, GS_SLICE_PRIVATE_BOOKS; header flags GS_RO_PRIVATE, slot and
 * slice generation; in <dir>/books, root's, 0700; the file 0666, for
 * the pod it is bind-mounted into at <dir>/usage.0; made afresh - a new
 * inode - for every slice generation, unlinked when the slice is
 * deleted). Under the robust mutex in its own header:
 *
 *   struct gs_ro_header                      256
 *   struct gs_ru_slice[256]                  64 + 32 x 64 (books per GPU,
 *                                            used for this uid's slices)
 *   struct gs_sched_bucket[32][256]          32 each (token buckets)
 *   struct gs_ru_proc[1024]                  128 each (who)
 *   struct gs_ru_books[1024][32]             64 each (each process's
 *                                            books per GPU)
 *   struct gs_sched_slice[32][256]           64 each (layout 5, arbiter
 *                                            regions: this owner's slices'
 *                                            own scheduler records)
 *
 * Locks: an owner file's mutex guards its books, buckets and processes,
 * except the memory words (mem_used, mem_peak, the byte-seconds), which
 * the allocation path changes by atomics alone (layout 6; memword.c);
 * the shared mutex the scheduler records. A holder of both took the
 * owner's first (gs_region_lock).
 *
 * Invariant (restored by repair after a holder died, and by a recount
 * after a process died inside a memory update): for every live slice s
 * and device d, slice[s].dev[d].mem_used == sum of the bytes of
 * proc[p].dev[d].mem_used over live procs p attached to s (same
 * generation) in s's owner file, once no update is under way, and
 * likewise sched[d][s].inflight / waiting in the shared file (repaired
 * from the owner files the repairer can read).
 */
#ifndef GS_SHIM_REGION_INT_H
#define GS_SHIM_REGION_INT_H

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gs/region.h"
#include "gs/region_launch.h"
#include "gs/region_sched.h"

#define GS_RL_MAGIC 0x31544d4c53524753ULL /* "SGRSLMT1" */
#define GS_RU_MAGIC 0x31474155535247ULL   /* "GRSUAG1" */
#define GS_RO_MAGIC 0x314e574f53524753ULL /* "SGRSOWN1" */
/* The owner file of `uid` is GS_REGION_USAGE_FILE "." uid. */
#define GS_RO_NAME_MAX 32

/* gs_ro_header.flags: the private books of one slice (slot, slice_gen),
 * books/usage.0.<slot>, not an owner's shared file. */
#define GS_RO_PRIVATE 0x1u

/* gs_ru_header.flags: the shared file is written by its creator alone (a
 * daemon's region, mode 0644): the scheduler records in it are the
 * arbiter's (gs_sched_arbitrate), each slice's processes write theirs in
 * their owner file (gs_ro_file.ask) and ring `bell`. */
#define GS_RU_ARBITER 0x1u

/* gs_rl_header.flags */
#define GS_RL_PRIVILEGED 0x1u
/* A per-owner view of a privileged region's limits (see "views" above). */
#define GS_RL_VIEW 0x2u
/* gs_rl_header.view_uid of the public view, and the owner_uid a view
 * shows for a slice that is not its reader's. */
#define GS_RL_VIEW_PUBLIC 0xffffffffu
#define GS_RL_VIEW_PUBLIC_FILE "limits.public"

enum gs_rl_state { GS_RL_FREE = 0, GS_RL_LIVE = 1 };
enum gs_ru_proc_state { GS_RU_PROC_FREE = 0, GS_RU_PROC_LIVE = 1 };

struct gs_rl_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint64_t size;
	uint64_t region_id;
	uint64_t boot_id;    /* hash of /proc/sys/kernel/random/boot_id */
	uint64_t created_ns; /* CLOCK_REALTIME */
	uint32_t flags;      /* GS_RL_* */
	uint32_t owner_uid;
	uint32_t max_slices;
	uint32_t view_uid; /* GS_RL_VIEW: whose view (GS_RL_VIEW_PUBLIC) */
	uint64_t seq;   /* odd while a writer is inside */
	uint64_t epoch; /* bumped by every change of any slice */
	/* How long a process's allocation waits for its need to be answered
	 * (the node's swap.need_wait, gs_region_set_need_wait), copied into
	 * every view. Was reserved (zero): 0 reads as the default, so files
	 * of a build that does not know it interwork (no layout change). */
	uint32_t need_wait_ms;
	uint8_t reserved[44];
};
static_assert(sizeof(struct gs_rl_header) == 128, "gs_rl_header layout");
static_assert(offsetof(struct gs_rl_header, need_wait_ms) == 80,
              "need_wait_ms offset");

struct gs_rl_slice {
	uint64_t generation; /* bumped on create and on delete */
	uint32_t state;      /* enum gs_rl_state */
	/* The share of its measured GPU time the slice's bucket is charged
	 * (GS_CHARGE_ONE = all), published by the daemon from NVML
	 * accounting (gs_region_slice_set_charge); 0: none published (all;
	 * files from before it). */
	uint32_t charge_q16;
	struct gs_slice_limits lim;
	uint64_t created_ns; /* CLOCK_REALTIME */
	uint8_t reserved[8];
};
static_assert(sizeof(struct gs_slice_limits) == 96, "gs_slice_limits layout");
static_assert(sizeof(struct gs_rl_slice) == 128, "gs_rl_slice layout");

struct gs_rl_file {
	struct gs_rl_header h;
	struct gs_rl_slice slice[GS_REGION_MAX_SLICES];
};
static_assert(sizeof(struct gs_rl_file) == 128 + 128 * GS_REGION_MAX_SLICES,
              "gs_rl_file layout");

union gs_ru_mutex {
	pthread_mutex_t m;
	uint8_t pad[64];
};
static_assert(sizeof(pthread_mutex_t) <= 64, "pthread_mutex_t fits");

struct gs_ru_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint64_t size;
	uint64_t region_id;
	uint64_t boot_id;
	uint64_t created_ns;
	uint32_t max_devices;
	uint32_t max_slices;
	uint32_t max_procs;
	/* The daemon's swapper sleeps on it between its scans of the needs;
	 * a process that posts a need wakes it (swaprec.c; FUTEX_WAKE needs
	 * no write access). Was reserved (zero): a build that does not know
	 * it neither rings nor sleeps on it, and the swapper's scan every
	 * 10 ms still finds the need, so files of either build interwork. */
	uint32_t swap_bell;
	uint64_t reaped_total;    /* process slots reaped */
	uint64_t lock_recoveries; /* EOWNERDEAD repairs */
	uint32_t flags;           /* GS_RU_* */
	uint32_t bell; /* GS_RU_ARBITER: the arbiter sleeps on it; processes
	                  wake it (FUTEX_WAKE needs no write access) */
	uint64_t arb_beat_ns; /* the arbiter's last pass (mono ns) */
	uint8_t reserved1[32];
	union gs_ru_mutex lock; /* at 128 */
	uint8_t reserved2[64];
};
static_assert(sizeof(struct gs_ru_header) == 256, "gs_ru_header layout");
static_assert(offsetof(struct gs_ru_header, lock) == 128, "lock offset");

/* One GPU, in the shared usage file. */
struct gs_ru_device {
	char uuid[GS_REGION_UUID_MAX];
	uint32_t in_use;
	uint32_t reserved0;
	uint64_t total_bytes;  /* physical memory, for views */
	uint64_t ctx_overhead; /* bytes one context costs (learned) */
	uint8_t reserved[24];
	struct gs_sched_dev sched;
};
static_assert(sizeof(struct gs_ru_device) == 96 + 8 + 16 + 24 + 64,
              "gs_ru_device layout");

/* Books of one slice (or one process) on one GPU. mem_used and mem_peak
 * change only by atomics (memword.c; no lock on the allocation path):
 * a slice's mem_used is its bytes; a process's holds its bytes in the
 * low 48 bits and, in the high 16, how many of its threads are inside an
 * update (read it with gs__mem_bytes). */
struct gs_ru_books {
	uint64_t mem_used;
	uint64_t mem_peak;
	double mem_byte_s;
	uint64_t mem_t_ns; /* CLOCK_MONOTONIC of the last integral step */
	uint64_t busy_ns;
	uint64_t throttled_ns;
	uint64_t launches;
	uint32_t inflight; /* procs only: its share of sched inflight */
	uint32_t waiting;  /* procs only: its share of sched waiting */
};
static_assert(sizeof(struct gs_ru_books) == 64, "gs_ru_books layout");

/* A slice's swap record (swaprec.c): the request word the daemon or
 * `gpuslice swap` writes, the last answer of its processes' shims, and
 * what they moved. In the 48 bytes gs_ru_slice kept in reserve (zero in
 * files written before it: no request, nothing swapped). */
struct gs_ru_swap {
	uint32_t req_seq;  /* bumped by each request */
	uint16_t req_verb; /* enum gs_swap_verb */
	uint16_t pinned;   /* enum gs_swap_pin; 0 = can move */
	uint32_t ack_seq;  /* the request last answered */
	int32_t result;    /* its outcome (gs_err) */
	uint64_t swapped_bytes;
	uint32_t swap_outs;
	uint32_t swap_ins;
	uint64_t last_out_ns; /* CLOCK_REALTIME; 0: never */
	uint64_t last_in_ns;
};
static_assert(sizeof(struct gs_ru_swap) == 48, "gs_ru_swap layout");

struct gs_ru_slice {
	uint64_t generation; /* limits generation these books belong to */
	uint32_t n_procs;
	uint32_t mem_fence; /* GS_MEM_FENCE | GS_MEM_DIRTY (memword.c) */
	struct gs_ru_swap swap;
	struct gs_ru_books dev[GS_REGION_MAX_DEVICES];
};
static_assert(sizeof(struct gs_ru_slice) == 64 + 64 * GS_REGION_MAX_DEVICES,
              "gs_ru_slice layout");

struct gs_ru_proc {
	uint64_t generation; /* bumped on attach and on free */
	uint32_t state;      /* enum gs_ru_proc_state */
	int32_t pid;
	uint64_t start_time; /* /proc/<pid>/stat field 22 */
	uint64_t pidns;      /* inode of /proc/<pid>/ns/pid */
	int32_t slice;
	uint32_t flags; /* GS_PROC_* */
	uint64_t slice_gen;
	uint64_t attached_ns; /* CLOCK_REALTIME */
	uint32_t uid;         /* euid at attach (checked against /proc) */
	uint32_t reserved0;
	/* what this process's answers put in its slice's swapped bytes
	 * (swaprec.c): taken off again when its slot is freed */
	uint64_t swapped_bytes;
	/* its need for GPU memory (swaprec.c, gs_region_swap_need): the
	 * process bumps need_seq, the daemon answers with need_ack */
	uint32_t need_seq;
	uint32_t need_ack;
	int32_t need_result; /* gs_err of the last answer */
	int32_t need_dev;    /* region device index */
	uint64_t need_bytes; /* more bytes wanted on the GPU; 0: come back in */
	uint64_t active_ns;  /* CLOCK_REALTIME of a GPU call it stamped */
	uint32_t swap_flags; /* GS_SWAP_PROC_* */
	uint32_t reserved1;
	uint8_t reserved[16];
};
static_assert(sizeof(struct gs_ru_proc) == 128, "gs_ru_proc layout");

struct gs_ru_file {
	struct gs_ru_header h;
	struct gs_ru_device dev[GS_REGION_MAX_DEVICES];
	struct gs_sched_slice sched[GS_REGION_MAX_DEVICES]
	                           [GS_REGION_MAX_SLICES];
};
static_assert(offsetof(struct gs_ru_file, dev) == 256, "usage devices");
static_assert(sizeof(struct gs_ru_file) ==
                  256 + 208 * GS_REGION_MAX_DEVICES +
                      64 * GS_REGION_MAX_DEVICES * GS_REGION_MAX_SLICES,
              "gs_ru_file layout");

/* An owner file's header. */
struct gs_ro_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint64_t size;
	uint64_t region_id; /* the region's: a file of another is refused */
	uint64_t boot_id;
	uint64_t created_ns;
	uint32_t owner_uid; /* whose slices' books it holds */
	uint32_t max_devices;
	uint32_t max_slices;
	uint32_t max_procs;
	uint64_t reaped_total;    /* process slots reaped */
	uint64_t lock_recoveries; /* EOWNERDEAD repairs */
	uint32_t flags;           /* GS_RO_* */
	int32_t slot;       /* GS_RO_PRIVATE: the one slice slot it serves */
	uint64_t slice_gen; /* GS_RO_PRIVATE: that slice's generation */
	uint8_t reserved1[32];
	union gs_ru_mutex lock; /* at 128 */
	uint8_t reserved2[64];
};
static_assert(sizeof(struct gs_ro_header) == 256, "gs_ro_header layout");
static_assert(offsetof(struct gs_ro_header, lock) == 128, "owner lock offset");

struct gs_ro_file {
	struct gs_ro_header h;
	struct gs_ru_slice slice[GS_REGION_MAX_SLICES];
	struct gs_sched_bucket bucket[GS_REGION_MAX_DEVICES]
	                             [GS_REGION_MAX_SLICES];
	struct gs_ru_proc proc[GS_REGION_MAX_PROCS];
	/* Apart from proc[], so that scanning the process table touches
	 * 128 KiB, not every page of every process's books. */
	struct gs_ru_books proc_dev[GS_REGION_MAX_PROCS][GS_REGION_MAX_DEVICES];
	/* GS_RU_ARBITER regions: this owner's slices' own scheduler records
	 * per GPU, which the arbiter reads (and never trusts). */
	struct gs_sched_slice ask[GS_REGION_MAX_DEVICES][GS_REGION_MAX_SLICES];
};
static_assert(offsetof(struct gs_ro_file, slice) == 256, "owner slices");
static_assert(sizeof(struct gs_ro_file) ==
                  256 +
                      (64 + 64 * GS_REGION_MAX_DEVICES) * GS_REGION_MAX_SLICES +
                      32 * GS_REGION_MAX_DEVICES * GS_REGION_MAX_SLICES +
                      128 * GS_REGION_MAX_PROCS +
                      64 * GS_REGION_MAX_DEVICES * GS_REGION_MAX_PROCS +
                      64 * GS_REGION_MAX_DEVICES * GS_REGION_MAX_SLICES,
              "gs_ro_file layout");

/* ---- The handle (region/ only) --------------------------------------- */

#define LOCK_TIMEOUT_S 3
/* Owner files one handle maps: every slice may have its own owner or
 * its own private books, and files whose slices are gone stay listed. */
#define MAX_OWNERS (2 * GS_REGION_MAX_SLICES + 64)

/* One mapped owner file: usage.<uid> (slot -1), or the private books of
 * the slice in `slot` at generation `gen` (books/usage.0.<slot>). An
 * OWNER handle maps a slot's next file over the same entry (remap). */
struct gs_own {
	uint32_t uid;
	int32_t slot;
	uint64_t gen; /* atomic: a remap changes it */
	int fd;
	struct gs_ro_file *ro; /* guarded (guard.h): its owner may cut it */
	bool cut;              /* reported cut short (gs_region_truncated) */
};

/* One view of the limits a writer keeps up to date (views_publish). */
struct gs_view {
	uint32_t uid; /* GS_RL_VIEW_PUBLIC for limits.public */
	int fd;
	struct gs_rl_file *rl;
};

struct gs_region {
	char dir[GS_REGION_DIR_MAX];
	enum gs_region_role role;
	bool limits_writable;
	int lfd; /* limits */
	int ufd; /* usage */
	int kfd; /* the writers' lock file (creators only), -1 otherwise */
	pthread_mutex_t wmu; /* writers in this process */
	unsigned wait_ms;    /* 0, or the bound of gs_region_set_lock_wait */
	uint64_t busy_until; /* mono ns: the usage lock timed out lately */
	struct gs_rl_file *rl;
	struct gs_ru_file *ru; /* guarded (guard.h): any tenant may cut it */
	bool ru_cut;           /* reported cut short (gs_region_truncated) */
	/* Joiners of a GS_RU_ARBITER region: the shared file is the
	 * creator's, mapped read-only; scheduler records go to the owner
	 * file (ask) and the arbiter is woken through the bell. */
	bool arb_client;
	bool arbiter;       /* OWNER: its region's turns are its arbiter's */
	uint64_t follow_ns; /* arb_client: when it last looked for a new
	                       shared file (mono ns, atomic) */
	/* Creators of a GS_RU_ARBITER region (gs_region_arbitrate): the
	 * slices' configs as last read from the limits. */
	struct gs_sched_cfg *arb_cfg;
	uint64_t arb_epoch;
	/* [GS_REGION_MAX_DEVICES][GS_REGION_MAX_SLICES]: each slice's ask */
	const struct gs_sched_slice *(*arb_ask)[GS_REGION_MAX_SLICES];
	/* arbiter.c's owner-first fairness and process check (its own) */
	struct gs__arb_owners *arb_own;
	/* Creators: the GPU table as they wrote it (gs_region_device), for
	 * gs_region_rebuild_usage; and the mapping a rebuild replaced, kept
	 * (guarded) until the next one, since other threads may still be
	 * reading it. */
	struct gs_ru_device dev_copy[GS_REGION_MAX_DEVICES];
	struct gs_ru_file *ru_old;
	/* Joiners: the shared file replaced under us (ru_follow), under
	 * `fmu`; mappings followed away from stay mapped (never unmapped:
	 * a thread of ours may still be in them). */
	pthread_mutex_t fmu;
	/* Creators: since when (mono ns) the shared lock cannot be had
	 * (gs_region_repair_shared); 0 when it can. */
	uint64_t wedged_since;
	uint64_t pidns;
	bool rebuilt_wedged;   /* OWNER: replaced a usage file whose lock was
	                        held past the deadline */
	bool replaced_version; /* OWNER: replaced files of another layout */
	pthread_mutex_t omu;   /* own[] grows under it */
	/* OWNER handles only: held shared by every use of an own[] mapping
	 * (own_lock .. own_unlock, shared_repair), exclusively by a remap,
	 * which unmaps a private-books file its slice no longer uses. */
	pthread_rwlock_t remap;
	int n_own; /* entries of own[] published (atomic) */
	int me;    /* own[] index of our attached process, -1 */
	struct gs_own own[MAX_OWNERS];
	int n_view; /* views of the limits this writer keeps (wlock) */
	struct gs_view view[MAX_OWNERS + 1];
};

/* What names an owner file: usage.<uid> (slot -1, gen 0), or the private
 * books of the slice in `slot` at generation `gen` (0 in a lookup: any). */
struct own_key {
	uint32_t uid;
	int32_t slot;
	uint64_t gen;
};

/* ---- Helpers shared by region/'s files (region/ only) ---------------- */

/* util.c */
/* open(2), mkdir(2), ftruncate(2), mmap(2) (MAP_SHARED, whole file from
 * offset 0) and rename(2) of region/'s files, each a fault-injection site
 * ("region.open", or "region.create" with O_CREAT and for mkdir;
 * "region.truncate", "region.map", "region.publish"): an injected fault
 * fails as the call would, errno set. */
int gs__file_open(const char *path, int flags, mode_t mode);
int gs__file_mkdir(const char *path, mode_t mode);
int gs__file_truncate(int fd, off_t size);
void *gs__file_map(size_t size, int prot, int fd);
int gs__file_publish(const char *from, const char *to);
uint64_t gs__boot_id(void);
uint64_t gs__random_u64(void);
uint64_t gs__pidns_of(int32_t pid);
bool gs__ref_ok(const struct gs_slice_ref *ref);
gs_err gs__limits_check(const struct gs_slice_limits *lim,
                        struct gs_errbuf *eb);

/* layout.c */
gs_err gs__mkdir_p(const char *dir, mode_t mode, struct gs_errbuf *eb);
gs_err gs__dir_safe(const char *dir, struct gs_errbuf *eb);
gs_err gs__init_usage(struct gs_ru_file *ru, uint64_t region_id, uint64_t boot,
                      uint32_t flags, struct gs_errbuf *eb);
void gs__init_limits(struct gs_rl_file *rl, uint64_t region_id, uint64_t boot,
                     bool privileged);
int gs__usage_tmp_open(const char *tmp, bool arbiter);
gs_err gs__validate(const struct gs_rl_file *rl, uint64_t lsize,
                    const struct gs_ru_file *ru, uint64_t usize,
                    struct gs_errbuf *eb);
gs_err gs__open_file(const char *dir, const char *name, int flags, mode_t mode,
                     int *fd, struct gs_errbuf *eb);
bool gs__usage_writable(int fd);
gs_err gs__map_files(struct gs_region *r, bool lw, struct gs_errbuf *eb);
void gs__unmap_files(struct gs_region *r);
uint64_t gs__fd_size(int fd);
/* owner.c */
uint64_t gs__proc_gen_next(const struct gs_ro_file *ro,
                           const struct gs_ru_proc *p);
int gs__owner_lookup(struct gs_region *r, const struct own_key *key);
int gs__owner_find_key(struct gs_region *r, const struct own_key *key,
                       bool create, struct gs_errbuf *eb);
struct own_key gs__slice_key(const struct gs_rl_slice *sl, int s);
void gs__owners_scan(struct gs_region *r);
void gs__own_use(struct gs_region *r);
void gs__own_unuse(struct gs_region *r);
/* view.c */
void gs__views_publish(struct gs_region *r);

/* lock.c */
gs_err gs__wlock_take(struct gs_region *r, struct gs_errbuf *eb);
void gs__wlock_drop(struct gs_region *r);
bool gs__proc_in_slice(const struct gs_ru_proc *p, int s, uint64_t gen);
void gs__books_sync(struct gs_region *r, struct gs_own *o, int s);
gs_err gs__own_lock(struct gs_region *r, struct gs_own *o);
void gs__own_unlock(struct gs_region *r, struct gs_own *o);
gs_err gs__shared_lock(struct gs_region *r);
void gs__shared_unlock(struct gs_region *r);
void gs__wseq_open(struct gs_region *r);
void gs__wseq_close(struct gs_region *r);
gs_err gs__wlock_even(struct gs_region *r, struct gs_errbuf *eb);
gs_err gs__wlock(struct gs_region *r, struct gs_errbuf *eb);
bool gs__arbitrated(const struct gs_region *r);
/* The shared file this thread locked, for its unlock (ru_follow may
 * have moved r->ru meanwhile); NULL when it holds none. */
extern __thread struct gs_ru_file *gs__ru_locked;
/* usage.c */
bool gs__own_serves(const struct gs_own *o, const struct gs_rl_slice *sl,
                    int s);
int gs__reap_locked(struct gs_region *r, struct gs_own *o);
int gs__ref_own(struct gs_region *r, const struct gs_proc_ref *p, int *i);
/* One step of a walk over the live process entries of every owner file
 * (gs__proc_walk): entry `i` of `o`, whose reference would be `ref`, under
 * o's lock. Returns true to stop at it (having filled what its caller
 * reports of it), false to go on to the next. */
typedef bool (*gs__proc_walk_fn)(struct gs_region *r, struct gs_own *o,
                                 int i, const struct gs_proc_ref *ref,
                                 void *arg);
/* Visits, from the entry after `it` (the first when it->slot < 0), each
 * live process entry of every owner file, in order, until `fn` takes one;
 * then sets *it to its reference (slot, generation) and returns true.
 * False at the end (*it unchanged). `scan`: look for owner files made
 * since the last look first. Owner files whose lock cannot be taken are
 * passed over. */
bool gs__proc_walk(struct gs_region *r, struct gs_proc_ref *it, bool scan,
                   gs__proc_walk_fn fn, void *arg);

/* ---- Direct access: region/'s files and tests that forge entries ---- */

/* The mapped files. */
struct gs_rl_file *gs__region_limits(struct gs_region *r);
struct gs_ru_file *gs__region_usage(struct gs_region *r);
/* The owner file this handle's own process is attached in (the shim's
 * slice owner's), or NULL before attaching. */
struct gs_ro_file *gs__region_own(struct gs_region *r);
/* The shared owner file of `uid` (usage.<uid>, never private books),
 * mapped on first use; NULL when it does not exist or may not be opened
 * here. */
struct gs_ro_file *gs__region_owner_file(struct gs_region *r, uint32_t uid);

/* Lock held: the live proc slot for `p` (in the handle's own owner file),
 * or NULL when stale. */
struct gs_ru_proc *gs__region_proc_get(struct gs_region *r,
                                       const struct gs_proc_ref *p);
/* The books of proc slot `pr` on device slot `dev`. */
struct gs_ru_books *gs__region_proc_books(struct gs_region *r,
                                          const struct gs_ru_proc *pr, int dev);

/* memword.c: the memory books' words (the protocol is in its header). */
#define GS_MEM_BYTES_MASK ((1ULL << 48) - 1)
#define GS_MEM_BUSY_ONE (1ULL << 48)
#define GS_MEM_FENCE 0x1u /* gs_ru_slice.mem_fence: a recount is on */
#define GS_MEM_DIRTY 0x2u /* a recount is owed (one timed out) */
enum gs_mem_rc {
	GS_MEM_OK,
	GS_MEM_QUOTA,  /* over the cap: nothing changed */
	GS_MEM_FENCED, /* a recount or a new generation: nothing changed;
	                  take the owner lock and try again */
};
/* The bytes of a books' mem_used word (a process's without its busy
 * count). */
uint64_t gs__mem_bytes(const struct gs_ru_books *b);
/* No lock: advances the byte-second integral of books to `now` (one
 * caller per clock step does it). */
void gs__books_tick(struct gs_ru_books *b, uint64_t now);
/* No lock: charges `bytes` to slice books `us` (of generation `gen`) on
 * GPU `dev` and to process books `pb`, refused past `limit` (0: none). */
enum gs_mem_rc gs__mem_add(struct gs_ru_slice *us, uint64_t gen, int dev,
                           struct gs_ru_books *pb, uint64_t bytes,
                           uint64_t limit, uint64_t now);
/* No lock: releases up to `bytes` (no more than pb holds). */
enum gs_mem_rc gs__mem_sub(struct gs_ru_slice *us, uint64_t gen, int dev,
                           struct gs_ru_books *pb, uint64_t bytes,
                           uint64_t now);
/* Owner lock held, freeing process slot i of `ro` (its slice's books at
 * its generation): takes its bytes on every GPU out of its slice's,
 * exactly once, and zeroes its words. False when it stopped inside an
 * update (dead, or live and stalled past a millisecond; `pidns`: the
 * caller's, to tell): its slice needs gs__mem_recount once the slot is
 * free. */
bool gs__mem_give_back(struct gs_ro_file *ro, int i, uint64_t pidns);
/* Owner lock held: sets slot s's books to the sum of its live
 * processes', waiting until `until` (mono ns) for updates under way (of
 * processes alive; `pidns`: the caller's, to tell); false (and the slice
 * marked owing one) when they did not drain. */
bool gs__mem_recount(struct gs_ro_file *ro, int s, uint64_t pidns,
                     uint64_t until);
/* Whether slot s's books owe a recount (or a recounter died). */
bool gs__mem_owed(const struct gs_ru_slice *us);
/* Owner lock held: empties slot s's books for generation `gen`, once
 * updates of the old one drained. */
void gs__mem_reset(struct gs_ro_file *ro, int s, uint64_t gen,
                   uint64_t pidns);

/* CLOCK_MONOTONIC / CLOCK_REALTIME in ns. */
uint64_t gs__mono_ns(void);
uint64_t gs__real_ns(void);

#endif
