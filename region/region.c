/*
 * region.c - the shared region between the daemon, `gpuslice run` and the
 * shim: creating and mapping its two files, slices (limits file), process
 * slots and memory books (usage file), reaping dead processes.
 *
 * Linked into libgpuslice.so and, as the static library gs_region, into
 * the daemon and the CLI. Layout and invariants: region_int.h. Contract:
 * include/gs/region.h.
 *
 * Creation protocol. Creators (OWNER, RUNNER) hold the writers' lock - an
 * in-process mutex plus flock(LOCK_EX) on <dir>/limits.lock, a file only
 * the creator's uid can open (0600) in a directory tenants cannot write -
 * while they check and, if needed, build both files afresh and rename
 * them into place (usage first). Readers (the shim) take no lock at all:
 * what they open is always a complete pair, and they retry the moment
 * between the two renames. So a tenant has no lock the daemon waits on;
 * the one lock tenants share (the usage file's robust mutex) is only ever
 * waited on with a deadline. A region from an earlier boot (pids mean
 * nothing any more) is rebuilt by a creator.
 *
 * Owner files. Books, token buckets and process entries of the slices
 * of one uid live in usage.<uid>, which that uid owns with mode 0600
 * (region_int.h): one tenant can neither read nor write another's. A
 * creator makes it with the first slice of that owner (create_in_wlock,
 * chown'ed to the owner when the creator is root); the shim opens only
 * the one of its slice's owner, and checks that the file is that uid's
 * or the region creator's and belongs to this region. A handle keeps
 * the owner files it mapped in own[], in the order it mapped them, and
 * a process reference's slot is own index x GS_REGION_MAX_PROCS + the
 * slot in that file.
 *
 * Private books. A slice of uid 0 in a privileged region (one the daemon
 * made for others: a Kubernetes claim's) keeps its books in a file of
 * its own, books/usage.0.<slot> (GS_SLICE_PRIVATE_BOOKS, GS_RO_PRIVATE),
 * made afresh for each slice generation and unlinked with the slice, so
 * that no pod reaches another's. An owner file is named by (uid, slot,
 * generation) (struct own_key); an OWNER handle maps a slot's next file
 * over the same own[] entry (owner_install) under the remap rwlock,
 * which every use of an owner file in an OWNER handle holds shared.
 *
 * Nothing here writes to stdout or stderr, exits, or installs signal
 * handlers: the shim links it into other people's programs.
 */
#include "guard.h"
#include "region_int.h"

#include "gs/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define LOCK_TIMEOUT_S 3
#define SEQ_READ_TRIES 100000
/* Reads of the limits under the usage lock (gs__region_cfg_refresh). */
#define CFG_READ_TRIES 256
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
	bool arbiter; /* OWNER: its region's turns are its arbiter's */
	uint64_t follow_ns; /* arb_client: when it last looked for a new
	                       shared file (mono ns, atomic) */
	/* Creators of a GS_RU_ARBITER region (gs_region_arbitrate): the
	 * slices' configs as last read from the limits. */
	struct gs_sched_cfg *arb_cfg;
	uint64_t arb_epoch;
	/* [GS_REGION_MAX_DEVICES][GS_REGION_MAX_SLICES]: each slice's ask */
	const struct gs_sched_slice *(*arb_ask)[GS_REGION_MAX_SLICES];
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
	bool rebuilt_wedged; /* OWNER: replaced a usage file whose lock was
	                        held past the deadline */
	bool replaced_version; /* OWNER: replaced files of another layout */
	pthread_mutex_t omu; /* own[] grows under it */
	/* OWNER handles only: held shared by every use of an own[] mapping
	 * (own_lock .. own_unlock, shared_repair), exclusively by a remap,
	 * which unmaps a private-books file its slice no longer uses. */
	pthread_rwlock_t remap;
	int n_own;           /* entries of own[] published (atomic) */
	int me;              /* own[] index of our attached process, -1 */
	struct gs_own own[MAX_OWNERS];
	int n_view; /* views of the limits this writer keeps (wlock) */
	struct gs_view view[MAX_OWNERS + 1];
};

static void views_publish(struct gs_region *r);
static bool arbitrated(const struct gs_region *r);
static gs_err shared_lock(struct gs_region *r);
static void shared_unlock(struct gs_region *r);
static void own_use(struct gs_region *r);
static void own_unuse(struct gs_region *r);

/* ---- small helpers ---------------------------------------------------- */

uint64_t gs__mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t gs__real_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t boot_id(void)
{
	char buf[64];
	ssize_t n;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof(buf));
	(void)close(fd);
	if (n <= 0)
		return 1;
	return fnv1a(buf, (size_t)n);
}

static uint64_t random_u64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = gs__real_ns() ^ ((uint64_t)getpid() << 32);
	return v ? v : 1;
}

static uint64_t pidns_of(int32_t pid)
{
	char path[64], link[64];
	ssize_t n;
	const char *p;

	if (pid > 0)
		(void)snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
	else
		(void)snprintf(path, sizeof(path), "/proc/self/ns/pid");
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	p = strchr(link, '[');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Field 3 (state) and 22 (start time) of /proc/<pid>/stat (gs/proc.h);
 * false when the process is gone. */
static bool pid_stat(int32_t pid, char *state, uint64_t *start)
{
	return gs_proc_stat(pid, state, NULL, start);
}

uint64_t gs_region_pid_start_time(int32_t pid)
{
	char st;
	uint64_t start;

	return pid_stat(pid, &st, &start) ? start : 0;
}

bool gs_region_pid_alive(int32_t pid, uint64_t start_time)
{
	char st;
	uint64_t start;

	if (!pid_stat(pid, &st, &start))
		return false;
	if (st == 'Z' || st == 'X' || st == 'x')
		return false;
	return start == start_time;
}

static bool name_ok(const char *s)
{
	size_t n = strnlen(s, GS_REGION_NAME_MAX);

	if (n == 0 || n >= GS_REGION_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

static bool ref_ok(const struct gs_slice_ref *ref)
{
	return ref != NULL && ref->slot >= 0 &&
	       ref->slot < GS_REGION_MAX_SLICES;
}

void gs_slice_limits_init(struct gs_slice_limits *lim, const char *name)
{
	memset(lim, 0, sizeof(*lim));
	if (name != NULL)
		(void)snprintf(lim->name, sizeof(lim->name), "%s", name);
	lim->priority = GS_REGION_PRIO_NORMAL;
	lim->weight = 1;
	lim->mode = GS_REGION_COMPUTE_STRICT;
	lim->owner_uid = (uint32_t)geteuid();
}

static gs_err limits_check(const struct gs_slice_limits *lim,
                           struct gs_errbuf *eb)
{
	if (!name_ok(lim->name))
		return gs_fail(eb, GS_ERR_INVALID,
		               "slice name must be 1..63 of [A-Za-z0-9._-]");
	if (lim->compute_pct > 100)
		return gs_fail(eb, GS_ERR_RANGE,
		               "compute must be 0..100, got %u",
		               lim->compute_pct);
	if (lim->priority > GS_REGION_PRIO_HIGH)
		return gs_fail(eb, GS_ERR_RANGE, "priority out of range: %u",
		               lim->priority);
	if (lim->weight < 1 || lim->weight > 1000)
		return gs_fail(eb, GS_ERR_RANGE,
		               "weight must be 1..1000, got %u", lim->weight);
	if (lim->mode > GS_REGION_COMPUTE_SHARE)
		return gs_fail(eb, GS_ERR_RANGE,
		               "compute mode out of range: %u", lim->mode);
	return GS_OK;
}

/* ---- directory -------------------------------------------------------- */

gs_err gs_region_dir_resolve(const char *explicit_dir,
                             char out[GS_REGION_DIR_MAX], struct gs_errbuf *eb)
{
	const char *env;
	struct stat st;
	int n;

	if (explicit_dir != NULL && explicit_dir[0] != '\0')
		n = snprintf(out, GS_REGION_DIR_MAX, "%s", explicit_dir);
	else if ((env = getenv("GPUSLICE_RUN_DIR")) != NULL && env[0] != '\0')
		n = snprintf(out, GS_REGION_DIR_MAX, "%s", env);
	else if (stat("/run/gpuslice", &st) == 0 && S_ISDIR(st.st_mode))
		n = snprintf(out, GS_REGION_DIR_MAX, "/run/gpuslice");
	else if ((env = getenv("XDG_RUNTIME_DIR")) != NULL && env[0] != '\0')
		n = snprintf(out, GS_REGION_DIR_MAX, "%s/gpuslice", env);
	else
		n = snprintf(out, GS_REGION_DIR_MAX, "/tmp/gpuslice-%u",
		             (unsigned)getuid());
	if (n < 0 || n >= GS_REGION_DIR_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "run directory path too long");
	return GS_OK;
}

static gs_err mkdir_p(const char *dir, mode_t mode, struct gs_errbuf *eb)
{
	char tmp[GS_REGION_DIR_MAX];
	int e;

	(void)snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
			e = errno;
			return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", tmp,
			               strerror(e));
		}
		*p = '/';
	}
	if (mkdir(tmp, mode) != 0 && errno != EEXIST) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", tmp, strerror(e));
	}
	return GS_OK;
}

/*
 * A run directory holds the files that set a tenant's limits, so only its
 * user (or root) may own it and nobody else may write it: otherwise
 * another user could pre-create /tmp/gpuslice-<uid> and set our cap.
 */
static gs_err dir_safe(const char *dir, struct gs_errbuf *eb)
{
	struct stat st;
	uid_t me = geteuid();
	int e;

	if (stat(dir, &st) != 0) {
		e = errno;
		return gs_fail(eb, e == ENOENT ? GS_ERR_NOT_FOUND : GS_ERR_IO,
		               "run directory %s: %s", dir, strerror(e));
	}
	if (!S_ISDIR(st.st_mode))
		return gs_fail(eb, GS_ERR_INVALID,
		               "run directory %s is not a directory", dir);
	if (st.st_uid != 0 && st.st_uid != me)
		return gs_fail(eb, GS_ERR_PERM,
		               "run directory %s belongs to uid %u, not to uid "
		               "%u or root; refusing it (its owner could set "
		               "this process's limits)",
		               dir, (unsigned)st.st_uid, (unsigned)me);
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
		return gs_fail(eb, GS_ERR_PERM,
		               "run directory %s is writable by others (mode "
		               "%03o); refusing it",
		               dir, (unsigned)(st.st_mode & 0777));
	return GS_OK;
}

/* ---- creation and validation ------------------------------------------ */

/* Initialises a usage file (flags: GS_RU_*). */
static gs_err init_usage(struct gs_ru_file *ru, uint64_t region_id,
                         uint64_t boot, uint32_t flags, struct gs_errbuf *eb)
{
	pthread_mutexattr_t a;
	int rc;

	memset(ru, 0, sizeof(*ru));
	ru->h.version = GS_REGION_VERSION;
	ru->h.header_size = sizeof(ru->h);
	ru->h.size = sizeof(*ru);
	ru->h.region_id = region_id;
	ru->h.boot_id = boot;
	ru->h.created_ns = gs__real_ns();
	ru->h.max_devices = GS_REGION_MAX_DEVICES;
	ru->h.max_slices = GS_REGION_MAX_SLICES;
	ru->h.max_procs = 0; /* processes live in the owner files */
	ru->h.flags = flags;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		ru->dev[d].sched.holder = -1;
		ru->dev[d].sched.gate = GS_GATE_ALWAYS;
	}
	if ((rc = pthread_mutexattr_init(&a)) != 0)
		goto fail;
	(void)pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	(void)pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	rc = pthread_mutex_init(&ru->h.lock.m, &a);
	(void)pthread_mutexattr_destroy(&a);
	if (rc != 0)
		goto fail;
	__atomic_store_n(&ru->h.magic, GS_RU_MAGIC, __ATOMIC_RELEASE);
	return GS_OK;
fail:
	return gs_fail(eb, GS_ERR_INTERNAL, "mutex init: %s", strerror(rc));
}

static void init_limits(struct gs_rl_file *rl, uint64_t region_id,
                        uint64_t boot, bool privileged)
{
	memset(rl, 0, sizeof(*rl));
	rl->h.version = GS_REGION_VERSION;
	rl->h.header_size = sizeof(rl->h);
	rl->h.size = sizeof(*rl);
	rl->h.region_id = region_id;
	rl->h.boot_id = boot;
	rl->h.created_ns = gs__real_ns();
	rl->h.flags = privileged ? GS_RL_PRIVILEGED : 0;
	rl->h.owner_uid = (uint32_t)geteuid();
	rl->h.max_slices = GS_REGION_MAX_SLICES;
	__atomic_store_n(&rl->h.magic, GS_RL_MAGIC, __ATOMIC_RELEASE);
}

/*
 * Opens a new usage file at `tmp` (truncating one left there), sized, in
 * the mode its writers need whatever the umask: the daemon's alone
 * (arbiter: 0644), or every process's of a runner's region (0666). The
 * descriptor, or -1 with errno set.
 */
static int usage_tmp_open(const char *tmp, bool arbiter)
{
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	              0600), e;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)sizeof(struct gs_ru_file)) != 0 ||
	    fchmod(fd, arbiter ? 0644 : 0666) != 0) {
		e = errno;
		(void)close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Checks a pair of mapped files. GS_ERR_NOT_FOUND when uninitialised. */
static gs_err validate(const struct gs_rl_file *rl, uint64_t lsize,
                       const struct gs_ru_file *ru, uint64_t usize,
                       struct gs_errbuf *eb)
{
	if (lsize < sizeof(rl->h) || usize < sizeof(ru->h) ||
	    __atomic_load_n(&rl->h.magic, __ATOMIC_ACQUIRE) != GS_RL_MAGIC ||
	    __atomic_load_n(&ru->h.magic, __ATOMIC_ACQUIRE) != GS_RU_MAGIC)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "region not initialised");
	if (rl->h.version != GS_REGION_VERSION ||
	    ru->h.version != GS_REGION_VERSION)
		return gs_fail(eb, GS_ERR_VERSION,
		               "region version %u/%u, this build reads %u",
		               rl->h.version, ru->h.version, GS_REGION_VERSION);
	if (lsize != sizeof(*rl) || rl->h.size != sizeof(*rl) ||
	    usize != sizeof(*ru) || ru->h.size != sizeof(*ru) ||
	    rl->h.header_size != sizeof(rl->h) ||
	    ru->h.header_size != sizeof(ru->h) ||
	    rl->h.max_slices != GS_REGION_MAX_SLICES ||
	    ru->h.max_slices != GS_REGION_MAX_SLICES ||
	    ru->h.max_devices != GS_REGION_MAX_DEVICES || ru->h.max_procs != 0)
		return gs_fail(eb, GS_ERR_CORRUPT, "region sizes do not match");
	if (rl->h.region_id != ru->h.region_id)
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "limits and usage belong to different regions");
	return GS_OK;
}

static gs_err open_file(const char *dir, const char *name, int flags,
                        mode_t mode, int *fd, struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + 32];
	int e;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	*fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW, mode);
	if (*fd >= 0)
		return GS_OK;
	e = errno;
	if (e == ENOENT)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no region at %s", dir);
	if (e == EACCES || e == EPERM || e == EROFS)
		return gs_fail(eb, GS_ERR_PERM, "%s: %s", path, strerror(e));
	return gs_fail(eb, GS_ERR_IO, "%s: %s", path, strerror(e));
}

/* Whether fd was opened for writing (a tenant opens a daemon's shared
 * file read-only). */
static bool usage_writable(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_ACCMODE) == O_RDWR;
}

static gs_err map_files(struct gs_region *r, bool lw, struct gs_errbuf *eb)
{
	void *p;
	int e;

	p = mmap(NULL, sizeof(*r->rl), PROT_READ | (lw ? PROT_WRITE : 0),
	         MAP_SHARED, r->lfd, 0);
	if (p == MAP_FAILED)
		goto fail;
	r->rl = p;
	p = mmap(NULL, sizeof(*r->ru),
	         PROT_READ | (usage_writable(r->ufd) ? PROT_WRITE : 0),
	         MAP_SHARED, r->ufd, 0);
	if (p == MAP_FAILED)
		goto fail;
	r->ru = p;
	(void)gs__guard_add(p, sizeof(*r->ru));
	return GS_OK;
fail:
	e = errno;
	return gs_fail(eb, GS_ERR_IO, "mmap region: %s", strerror(e));
}

static void unmap_files(struct gs_region *r)
{
	if (r->rl != NULL)
		(void)munmap(r->rl, sizeof(*r->rl));
	if (r->ru != NULL) {
		gs__guard_del(r->ru);
		(void)munmap(r->ru, sizeof(*r->ru));
	}
	r->rl = NULL;
	r->ru = NULL;
}

static uint64_t fd_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/*
 * Takes the writers' lock: the in-process mutex (flock does not exclude
 * two threads sharing one descriptor), then flock on the private lock
 * file, each within LOCK_TIMEOUT_S. Only the region's creator's uid can
 * open that file, so no tenant can make a writer wait; the deadline
 * bounds what a stuck writer of the same uid can cost.
 */
static gs_err wlock_take(struct gs_region *r, struct gs_errbuf *eb)
{
	struct timespec ts;
	uint64_t until = gs__mono_ns() + LOCK_TIMEOUT_S * 1000000000ull;
	int rc, e;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += LOCK_TIMEOUT_S;
	rc = pthread_mutex_timedlock(&r->wmu, &ts);
	if (rc != 0)
		return gs_fail(eb, rc == ETIMEDOUT ? GS_ERR_TIMEOUT : GS_ERR_IO,
		               "limits writer lock in %s: %s", r->dir,
		               strerror(rc));
	for (unsigned i = 0;; i++) {
		if (flock(r->kfd, LOCK_EX | LOCK_NB) == 0)
			return GS_OK;
		e = errno;
		if (e != EWOULDBLOCK && e != EINTR)
			break;
		if (gs__mono_ns() >= until) {
			e = ETIMEDOUT;
			break;
		}
		{
			struct timespec nap = {0, i < 20 ? 100000L : 2000000L};

			(void)nanosleep(&nap, NULL);
		}
	}
	(void)pthread_mutex_unlock(&r->wmu);
	return gs_fail(eb, e == ETIMEDOUT ? GS_ERR_TIMEOUT : GS_ERR_IO,
	               "lock %s/%s: %s", r->dir, GS_REGION_LOCK_FILE,
	               strerror(e));
}

static void wlock_drop(struct gs_region *r)
{
	(void)flock(r->kfd, LOCK_UN);
	(void)pthread_mutex_unlock(&r->wmu);
}

/* Whether the open files are a complete region this creator may reuse. */
static bool reusable(struct gs_region *r, struct gs_errbuf *eb, gs_err *err)
{
	bool owner = r->role == GS_REGION_OWNER;

	*err = GS_OK;
	if (fd_size(r->lfd) != sizeof(*r->rl) ||
	    fd_size(r->ufd) != sizeof(*r->ru))
		return false;
	*err = map_files(r, true, eb);
	if (*err != GS_OK)
		return false;
	*err = validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru), NULL);
	if (*err == GS_ERR_VERSION && owner) {
		/* The daemon after an upgrade: its slices are in its store
		 * and go back into new files (recovery); processes of the
		 * old version keep the old ones. */
		r->replaced_version = true;
		*err = GS_OK;
		unmap_files(r);
		return false;
	}
	if (*err == GS_ERR_VERSION) {
		*err = validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru),
		                eb);
		return false;
	}
	*err = GS_OK;
	if (validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru), NULL) ==
	        GS_OK &&
	    r->rl->h.boot_id == boot_id() &&
	    (!owner || ((r->rl->h.flags & GS_RL_PRIVILEGED) &&
	                r->rl->h.owner_uid == (uint32_t)geteuid()))) {
		gs_err lk;

		if (!owner)
			return true;
		/* A region of the other kind (the daemon's, found by the
		 * Slurm plugin on its own, or the reverse) is replaced. */
		if (((r->ru->h.flags & GS_RU_ARBITER) != 0) != r->arbiter) {
			unmap_files(r);
			return false;
		}
		/* The usage file's mutex is shared with tenants: one may hold
		 * it (stopped, or a forged owner thread id) to wedge every
		 * run. The daemon repairs that at start: a lock it cannot take
		 * within the deadline means new files (processes that map the
		 * old ones keep an orphaned copy with their limits). */
		lk = gs__region_lock(r);
		if (lk == GS_OK) {
			gs__region_unlock(r);
			return true;
		}
		r->rebuilt_wedged = true;
	}
	unmap_files(r);
	return false;
}

/*
 * Creator path, writers' lock held: reuse the region when complete, from
 * this boot and (OWNER) privileged and ours; otherwise build both files
 * afresh under temporary names and rename them into place, usage first,
 * so that a reader (who takes no lock) opens either the old complete
 * files or the new complete ones, and a process that still maps the old
 * files keeps a valid (orphaned) copy instead of a truncated one.
 */
static gs_err create_locked(struct gs_region *r, struct gs_errbuf *eb)
{
	bool owner = r->role == GS_REGION_OWNER;
	char lp[GS_REGION_DIR_MAX + 32], up[GS_REGION_DIR_MAX + 32];
	char ltmp[GS_REGION_DIR_MAX + 48], utmp[GS_REGION_DIR_MAX + 48];
	uint64_t id;
	gs_err err;
	int e, lfd, ufd;

	if (open_file(r->dir, GS_REGION_LIMITS_FILE, O_RDWR, 0, &lfd, NULL) ==
	    GS_OK) {
		r->lfd = lfd;
		if (open_file(r->dir, GS_REGION_USAGE_FILE, O_RDWR, 0, &ufd,
		              NULL) == GS_OK) {
			r->ufd = ufd;
			if (reusable(r, eb, &err))
				return GS_OK;
			if (err != GS_OK)
				return err;
			(void)close(r->ufd);
			r->ufd = -1;
		}
		(void)close(r->lfd);
		r->lfd = -1;
	}
	(void)snprintf(lp, sizeof(lp), "%s/%s", r->dir, GS_REGION_LIMITS_FILE);
	(void)snprintf(up, sizeof(up), "%s/%s", r->dir, GS_REGION_USAGE_FILE);
	(void)snprintf(ltmp, sizeof(ltmp), "%s.new", lp);
	(void)snprintf(utmp, sizeof(utmp), "%s.new", up);
	r->lfd = open(ltmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	              0600);
	if (r->lfd < 0)
		goto fail_errno;
	/* The daemon's region has an arbiter (the shared file is its). */
	r->ufd = usage_tmp_open(utmp, r->arbiter);
	if (r->ufd < 0)
		goto fail_errno;
	/* Tenants read limits through their views (views_publish). */
	if (ftruncate(r->lfd, (off_t)sizeof(*r->rl)) != 0 ||
	    fchmod(r->lfd, 0600))
		goto fail_errno;
	err = map_files(r, true, eb);
	if (err != GS_OK)
		return err;
	id = random_u64();
	err = init_usage(r->ru, id, boot_id(), r->arbiter ? GS_RU_ARBITER : 0,
	                 eb);
	if (err != GS_OK)
		return err;
	init_limits(r->rl, id, boot_id(), owner);
	if (rename(utmp, up) != 0 || rename(ltmp, lp) != 0)
		goto fail_errno;
	return GS_OK;
fail_errno:
	e = errno;
	(void)unlink(ltmp);
	(void)unlink(utmp);
	return gs_fail(eb, GS_ERR_IO, "create region files in %s: %s", r->dir,
	               strerror(e));
}

/*
 * OWNER: a region whose files belong to someone else (runners made it
 * before the daemon started) is replaced, so that the daemon's limits and
 * lock files are its own, read-only (limits) or closed (lock) to tenants.
 * Processes that still map the old files keep an orphaned copy.
 */
static void unlink_foreign(const char *dir)
{
	static const char *const names[] = {GS_REGION_LOCK_FILE,
	                                    GS_REGION_LIMITS_FILE,
	                                    GS_REGION_USAGE_FILE};
	char p[GS_REGION_DIR_MAX + 32];
	struct stat st;
	bool foreign = false;

	for (int i = 0; i < 2; i++) {
		(void)snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		if (lstat(p, &st) == 0 &&
		    (st.st_uid != geteuid() || !S_ISREG(st.st_mode)))
			foreign = true;
	}
	if (!foreign)
		return;
	for (int i = 0; i < 3; i++) {
		(void)snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		(void)unlink(p);
	}
}

/*
 * A reader's limits: its own view (limits.<euid>), else the public one,
 * else the writer's file (root; a region `gpuslice run` made, whose
 * limits are its creator's). A tenant that may open none of them has no
 * slice here (GS_ERR_NOT_FOUND).
 */
static gs_err open_limits(struct gs_region *r, struct gs_errbuf *eb)
{
	char name[GS_RO_NAME_MAX];
	gs_err err;

	if (geteuid() != 0) {
		(void)snprintf(name, sizeof(name), "%s.%u",
		               GS_REGION_LIMITS_FILE, (unsigned)geteuid());
		if (open_file(r->dir, name, O_RDONLY, 0, &r->lfd, NULL) ==
		        GS_OK ||
		    open_file(r->dir, GS_RL_VIEW_PUBLIC_FILE, O_RDONLY, 0,
		              &r->lfd, NULL) == GS_OK)
			return GS_OK;
	}
	err = open_file(r->dir, GS_REGION_LIMITS_FILE, O_RDONLY, 0, &r->lfd,
	                NULL);
	if (err == GS_ERR_PERM)
		return gs_fail(eb, GS_ERR_NOT_FOUND,
		               "no limits in %s readable by uid %u (it has no "
		               "slice there)",
		               r->dir, (unsigned)geteuid());
	if (err != GS_OK)
		return open_file(r->dir, GS_REGION_LIMITS_FILE, O_RDONLY, 0,
		                 &r->lfd, eb);
	return GS_OK;
}

/*
 * Reader path (TENANT, or a RUNNER in someone else's region): no lock. The
 * files are published by rename, complete, so a pair that does not match
 * (opened between the two renames) is retried a few times.
 */
static gs_err join_files(struct gs_region *r, struct gs_errbuf *eb)
{
	gs_err err = GS_OK;

	for (int tries = 0; tries < 20; tries++) {
		if (tries > 0) {
			struct timespec nap = {0, 5000000L};

			unmap_files(r);
			(void)close(r->lfd);
			(void)close(r->ufd);
			r->lfd = r->ufd = -1;
			(void)nanosleep(&nap, NULL);
		}
		err = open_limits(r, eb);
		if (err != GS_OK)
			return err;
		err = open_file(r->dir, GS_REGION_USAGE_FILE, O_RDWR, 0,
		                &r->ufd, NULL);
		if (err == GS_ERR_PERM) /* a daemon's: read, never written */
			err = open_file(r->dir, GS_REGION_USAGE_FILE, O_RDONLY,
			                0, &r->ufd, NULL);
		if (err != GS_OK)
			return open_file(r->dir, GS_REGION_USAGE_FILE, O_RDWR,
			                 0, &r->ufd, eb);
		if (fd_size(r->lfd) != sizeof(*r->rl) ||
		    fd_size(r->ufd) != sizeof(*r->ru)) {
			err = gs_fail(eb, GS_ERR_NOT_FOUND,
			              "region in %s not initialised", r->dir);
			continue;
		}
		err = map_files(r, false, eb);
		if (err != GS_OK)
			return err;
		err = validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru),
		               NULL);
		if (err == GS_ERR_NOT_FOUND || err == GS_ERR_CORRUPT)
			continue;
		if (err != GS_OK)
			return validate(r->rl, sizeof(*r->rl), r->ru,
			                sizeof(*r->ru), eb);
		if (r->rl->h.boot_id != boot_id())
			return gs_fail(eb, GS_ERR_NOT_FOUND,
			               "region in %s is from an earlier boot",
			               r->dir);
		r->arb_client = (r->ru->h.flags & GS_RU_ARBITER) != 0;
		if (!r->arb_client && !usage_writable(r->ufd))
			return gs_fail(eb, GS_ERR_PERM,
			               "%s/%s: not writable, and no daemon "
			               "arbitrates it",
			               r->dir, GS_REGION_USAGE_FILE);
		return GS_OK;
	}
	return err == GS_ERR_NOT_FOUND
	           ? gs_fail(eb, err, "region in %s not initialised", r->dir)
	           : validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru),
	                      eb);
}

static gs_err region_open(const char *dir, enum gs_region_role role,
                          bool arbiter, struct gs_region **out,
                          struct gs_errbuf *eb);

gs_err gs_region_open(const char *dir, enum gs_region_role role,
                      struct gs_region **out, struct gs_errbuf *eb)
{
	return region_open(dir, role, role == GS_REGION_OWNER, out, eb);
}

gs_err gs_region_open_owner(const char *dir, bool arbiter,
                            struct gs_region **out, struct gs_errbuf *eb)
{
	return region_open(dir, GS_REGION_OWNER, arbiter, out, eb);
}

static gs_err region_open(const char *dir, enum gs_region_role role,
                          bool arbiter, struct gs_region **out,
                          struct gs_errbuf *eb)
{
	struct gs_region *r;
	bool creator = role != GS_REGION_TENANT;
	gs_err err;

	*out = NULL;
	if (strlen(dir) >= GS_REGION_DIR_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "run directory path too long");
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "region handle");
	(void)snprintf(r->dir, sizeof(r->dir), "%s", dir);
	r->role = role;
	r->arbiter = arbiter && role == GS_REGION_OWNER;
	r->lfd = r->ufd = r->kfd = -1;
	r->me = -1;
	r->pidns = pidns_of(0);
	(void)pthread_mutex_init(&r->wmu, NULL);
	(void)pthread_mutex_init(&r->omu, NULL);
	(void)pthread_mutex_init(&r->fmu, NULL);
	(void)pthread_rwlock_init(&r->remap, NULL);

	if (creator) {
		err = mkdir_p(dir, role == GS_REGION_OWNER ? 0755 : 0700, eb);
		if (err == GS_OK)
			err = dir_safe(dir, eb);
		if (err != GS_OK)
			goto fail;
		if (role == GS_REGION_OWNER)
			unlink_foreign(dir);
		err = open_file(dir, GS_REGION_LOCK_FILE, O_RDWR | O_CREAT,
		                0600, &r->kfd, NULL);
		if (err == GS_OK) {
			(void)fchmod(r->kfd, 0600);
			r->limits_writable = true;
			err = wlock_take(r, eb);
			if (err != GS_OK)
				goto fail;
			err = create_locked(r, eb);
			if (err == GS_OK) {
				/* A writer killed between wseq_open and
				 * wseq_close left the sequence odd: every
				 * reader would spin on it. Its slot may be
				 * torn; the creator rewrites what it holds
				 * (gpusliced's recovery from its store). */
				if (r->rl->h.seq & 1) {
					r->rl->h.epoch++;
					__atomic_store_n(&r->rl->h.seq,
					                 r->rl->h.seq + 1,
					                 __ATOMIC_RELEASE);
				}
				views_publish(r); /* views of a reused region
				                     may be missing or torn */
				memcpy(r->dev_copy, r->ru->dev,
				       sizeof(r->dev_copy));
			}
			wlock_drop(r);
			if (err != GS_OK)
				goto fail;
			*out = r;
			return GS_OK;
		}
		if (err != GS_ERR_PERM || role == GS_REGION_OWNER) {
			err = gs_fail(eb, err, "cannot open the lock in %s",
			              dir);
			goto fail;
		}
		/* A RUNNER in someone else's (the daemon's) region: join. */
	} else {
		err = dir_safe(dir, eb);
		if (err != GS_OK && err != GS_ERR_NOT_FOUND)
			goto fail;
	}
	err = join_files(r, eb);
	if (err != GS_OK)
		goto fail;
	*out = r;
	return GS_OK;
fail:
	gs_region_close(r);
	return err;
}

void gs_region_close(struct gs_region *r)
{
	if (r == NULL)
		return;
	unmap_files(r);
	if (r->ru_old != NULL) {
		gs__guard_del(r->ru_old);
		(void)munmap(r->ru_old, sizeof(*r->ru_old));
	}
	for (int i = 0; i < r->n_own; i++) {
		gs__guard_del(r->own[i].ro);
		(void)munmap(r->own[i].ro, sizeof(*r->own[i].ro));
		(void)close(r->own[i].fd);
	}
	for (int i = 0; i < r->n_view; i++) {
		(void)munmap(r->view[i].rl, sizeof(*r->view[i].rl));
		(void)close(r->view[i].fd);
	}
	if (r->lfd >= 0)
		(void)close(r->lfd);
	if (r->ufd >= 0)
		(void)close(r->ufd);
	if (r->kfd >= 0)
		(void)close(r->kfd);
	(void)pthread_mutex_destroy(&r->wmu);
	(void)pthread_mutex_destroy(&r->omu);
	(void)pthread_mutex_destroy(&r->fmu);
	(void)pthread_rwlock_destroy(&r->remap);
	free(r->arb_cfg);
	free(r->arb_ask);
	free(r);
}

bool gs_region_is_privileged(const struct gs_region *r)
{
	return (r->rl->h.flags & GS_RL_PRIVILEGED) != 0;
}

bool gs_region_repaired_lock(const struct gs_region *r)
{
	return r->rebuilt_wedged;
}

bool gs_region_replaced_version(const struct gs_region *r)
{
	return r->replaced_version;
}

gs_err gs_region_rebuild_usage(struct gs_region *r, struct gs_errbuf *eb)
{
	char up[GS_REGION_DIR_MAX + 32], utmp[GS_REGION_DIR_MAX + 48];
	struct gs_ru_file *nu, *old;
	void *p = MAP_FAILED;
	gs_err err;
	int fd = -1, e;

	if (!r->limits_writable || r->kfd < 0)
		return gs_fail(eb, GS_ERR_PERM,
		               "only the region's creator rebuilds its usage "
		               "file");
	err = wlock_take(r, eb);
	if (err != GS_OK)
		return err;
	(void)snprintf(up, sizeof(up), "%s/%s", r->dir, GS_REGION_USAGE_FILE);
	(void)snprintf(utmp, sizeof(utmp), "%s.new", up);
	fd = usage_tmp_open(utmp, arbitrated(r));
	if (fd < 0)
		goto fail_errno;
	p = mmap(NULL, sizeof(*nu), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail_errno;
	nu = p;
	err = init_usage(nu, r->rl->h.region_id, r->rl->h.boot_id,
	                 r->ru->h.flags & GS_RU_ARBITER, eb);
	if (err != GS_OK)
		goto fail;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		const struct gs_ru_device *c = &r->dev_copy[d];

		if (!c->in_use)
			continue;
		memcpy(nu->dev[d].uuid, c->uuid, sizeof(c->uuid));
		nu->dev[d].total_bytes = c->total_bytes;
		nu->dev[d].ctx_overhead = c->ctx_overhead;
		nu->dev[d].in_use = 1;
	}
	if (rename(utmp, up) != 0)
		goto fail_errno;
	(void)gs__guard_add(p, sizeof(*nu));
	if (r->ru_old != NULL) {
		gs__guard_del(r->ru_old);
		(void)munmap(r->ru_old, sizeof(*r->ru_old));
	}
	old = r->ru;
	__atomic_store_n(&r->ru, nu, __ATOMIC_RELEASE);
	r->ru_old = old;
	(void)close(r->ufd);
	r->ufd = fd;
	r->ru_cut = false;
	wlock_drop(r);
	return GS_OK;
fail_errno:
	e = errno;
	err = gs_fail(eb, GS_ERR_IO, "rebuild %s: %s", up, strerror(e));
fail:
	if (p != MAP_FAILED)
		(void)munmap(p, sizeof(*nu));
	if (fd >= 0)
		(void)close(fd);
	(void)unlink(utmp);
	wlock_drop(r);
	return err;
}

gs_err gs_region_repair_shared(struct gs_region *r, bool *rebuilt,
                               struct gs_errbuf *eb)
{
	uint64_t now = gs__mono_ns();
	gs_err err;

	*rebuilt = false;
	if (!r->limits_writable || r->kfd < 0)
		return GS_OK;
	err = shared_lock(r);
	if (err == GS_OK) {
		shared_unlock(r);
		r->wedged_since = 0;
		return GS_OK;
	}
	if (err != GS_ERR_TIMEOUT)
		return gs_fail(eb, err, "the shared usage lock cannot be taken "
		                        "(%s)",
		               gs_err_name(err));
	if (r->wedged_since == 0) {
		r->wedged_since = now;
		return GS_OK;
	}
	if (now - r->wedged_since < LOCK_TIMEOUT_S * 1000000000ull)
		return GS_OK;
	err = gs_region_rebuild_usage(r, eb);
	if (err != GS_OK)
		return err;
	r->wedged_since = 0;
	*rebuilt = true;
	return GS_OK;
}

int gs_region_truncated(struct gs_region *r, bool *shared,
                        struct gs_region_cut *cut, int max)
{
	int n = 0, n_own = __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE);

	*shared = false;
	if (r->ru != NULL && !r->ru_cut &&
	    (gs__guard_tripped(r->ru) || fd_size(r->ufd) < sizeof(*r->ru))) {
		r->ru_cut = true;
		*shared = true;
	}
	own_use(r); /* a remap may replace a private books file */
	for (int i = 0; i < n_own && n < max; i++) {
		struct gs_own *o = &r->own[i];

		if (o->cut || (!gs__guard_tripped(o->ro) &&
		               fd_size(o->fd) >= sizeof(*o->ro)))
			continue;
		o->cut = true;
		cut[n].uid = o->uid;
		cut[n].slot = o->slot;
		n++;
	}
	own_unuse(r);
	return n;
}

bool gs_region_can_write_limits(const struct gs_region *r)
{
	return r->limits_writable;
}

const char *gs_region_dir(const struct gs_region *r)
{
	return r->dir;
}

struct gs_rl_file *gs__region_limits(struct gs_region *r)
{
	return r->rl;
}

struct gs_ru_file *gs__region_usage(struct gs_region *r)
{
	return r->ru;
}

/* ---- owner files -------------------------------------------------------- */

/* What names an owner file: usage.<uid> (slot -1, gen 0), or the private
 * books of the slice in `slot` at generation `gen` (0 in a lookup: any). */
struct own_key {
	uint32_t uid;
	int32_t slot;
	uint64_t gen;
};

bool gs_region_books_private(bool privileged, uint32_t owner_uid)
{
	return privileged && owner_uid == 0;
}

gs_err gs_region_books_path(const char *dir, bool privileged,
                            uint32_t owner_uid, int32_t slot, char *out,
                            size_t n)
{
	int k;

	if (gs_region_books_private(privileged, owner_uid))
		k = snprintf(out, n, "%s/%s/%s.%u.%d", dir, GS_REGION_BOOKS_DIR,
		             GS_REGION_USAGE_FILE, (unsigned)owner_uid,
		             (int)slot);
	else
		k = snprintf(out, n, "%s/%s.%u", dir, GS_REGION_USAGE_FILE,
		             (unsigned)owner_uid);
	return k < 0 || (size_t)k >= n ? GS_ERR_RANGE : GS_OK;
}

/*
 * The generation a process entry of `ro` issues next. A slot's private
 * books issue generations its earlier files never did (from slice_gen <<
 * 32), so a reference into one of them never names an entry here (an
 * OWNER handle maps the new file over the same own[] entry).
 */
static uint64_t proc_gen_next(const struct gs_ro_file *ro,
                              const struct gs_ru_proc *p)
{
	uint64_t floor = (ro->h.flags & GS_RO_PRIVATE) ? ro->h.slice_gen << 32
	                                                : 0;

	return (p->generation > floor ? p->generation : floor) + 1;
}

static gs_err init_owner(struct gs_ro_file *ro, const struct own_key *key,
                         uint64_t region_id, uint64_t boot,
                         struct gs_errbuf *eb)
{
	pthread_mutexattr_t a;
	int rc;

	/* `ro` maps a file just truncated to size: all zeros already, and
	 * left sparse (a slot's private books are megabytes, of which a
	 * slice uses a few pages: writing them all cost each create ~10 ms
	 * and their write-back). */
	ro->h.version = GS_REGION_VERSION;
	ro->h.header_size = sizeof(ro->h);
	ro->h.size = sizeof(*ro);
	ro->h.region_id = region_id;
	ro->h.boot_id = boot;
	ro->h.created_ns = gs__real_ns();
	ro->h.owner_uid = key->uid;
	ro->h.max_devices = GS_REGION_MAX_DEVICES;
	ro->h.max_slices = GS_REGION_MAX_SLICES;
	ro->h.max_procs = GS_REGION_MAX_PROCS;
	ro->h.slot = -1;
	if (key->slot >= 0) {
		ro->h.flags = GS_RO_PRIVATE;
		ro->h.slot = key->slot;
		ro->h.slice_gen = key->gen;
		/* Its process entries issue generations from slice_gen << 32
		 * (proc_gen_next). */
	}
	if ((rc = pthread_mutexattr_init(&a)) != 0)
		goto fail;
	(void)pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	(void)pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	rc = pthread_mutex_init(&ro->h.lock.m, &a);
	(void)pthread_mutexattr_destroy(&a);
	if (rc != 0)
		goto fail;
	__atomic_store_n(&ro->h.magic, GS_RO_MAGIC, __ATOMIC_RELEASE);
	return GS_OK;
fail:
	return gs_fail(eb, GS_ERR_INTERNAL, "mutex init: %s", strerror(rc));
}

/* Whether a mapped owner file is `uid`'s, of this region and boot (shared
 * or private alike). */
static bool owner_base_valid(const struct gs_region *r,
                             const struct gs_ro_file *ro, uint32_t uid)
{
	return __atomic_load_n(&ro->h.magic, __ATOMIC_ACQUIRE) == GS_RO_MAGIC &&
	       ro->h.version == GS_REGION_VERSION &&
	       ro->h.header_size == sizeof(ro->h) &&
	       ro->h.size == sizeof(*ro) && ro->h.owner_uid == uid &&
	       ro->h.max_devices == GS_REGION_MAX_DEVICES &&
	       ro->h.max_slices == GS_REGION_MAX_SLICES &&
	       ro->h.max_procs == GS_REGION_MAX_PROCS &&
	       ro->h.region_id == r->rl->h.region_id &&
	       ro->h.boot_id == r->rl->h.boot_id;
}

/* Whether a mapped owner file is the one `key` names. */
static bool owner_valid(const struct gs_region *r, const struct gs_ro_file *ro,
                        const struct own_key *key)
{
	if (!owner_base_valid(r, ro, key->uid))
		return false;
	if (key->slot < 0)
		return (ro->h.flags & GS_RO_PRIVATE) == 0;
	return (ro->h.flags & GS_RO_PRIVATE) && ro->h.slot == key->slot &&
	       (key->gen == 0 || ro->h.slice_gen == key->gen);
}

static void owner_path(const struct gs_region *r, const struct own_key *key,
                       char *out, size_t n)
{
	(void)gs_region_books_path(r->dir, key->slot >= 0, key->uid,
	                           key->slot, out, n);
}

/* Creator: <dir>/books, ours and closed to everyone else (0700). */
static gs_err books_dir_make(const struct gs_region *r, struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + 16];
	struct stat st;
	int e;

	(void)snprintf(path, sizeof(path), "%s/%s", r->dir,
	               GS_REGION_BOOKS_DIR);
	if (mkdir(path, 0700) != 0 && errno != EEXIST) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", path,
		               strerror(e));
	}
	if (lstat(path, &st) != 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "%s: %s", path, strerror(e));
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return gs_fail(eb, GS_ERR_PERM,
		               "%s is not a directory of uid %u; refusing it "
		               "(the slices' private books go there)",
		               path, (unsigned)geteuid());
	if ((st.st_mode & 0777) != 0700 && chmod(path, 0700) != 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "chmod %s: %s", path,
		               strerror(e));
	}
	return GS_OK;
}

/*
 * Maps an owner file (read-write, shared). Megabytes, mostly holes, of
 * which a slice uses a few pages: no read-ahead (it zero-filled the whole
 * file into the page cache on the first touch: a create took ~5x longer).
 * MAP_FAILED (errno) when it cannot.
 */
static void *owner_mmap(int fd)
{
	void *p = mmap(NULL, sizeof(struct gs_ro_file), PROT_READ | PROT_WRITE,
	               MAP_SHARED, fd, 0);

	if (p != MAP_FAILED)
		(void)madvise(p, sizeof(struct gs_ro_file), MADV_RANDOM);
	return p;
}

/*
 * Creator, writers' lock held: makes the file `key` names afresh (a new
 * inode: whoever had the old one open keeps an orphan) and renames it
 * into place. usage.<uid> is given to `uid` with mode 0600 when this
 * process may (root, or uid is ours); uid 0's files (slices any uid the
 * name is handed to may join; private books, behind books/ on the host,
 * for whichever uid the pod runs as) and one that cannot be given away
 * are 0666. OUT (GS_OK): *fdp and *rop, the file open and mapped, as
 * owner_open gives them.
 */
static gs_err owner_create(struct gs_region *r, const struct own_key *key,
                           int *fdp, struct gs_ro_file **rop,
                           struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + GS_RO_NAME_MAX];
	char tmp[GS_REGION_DIR_MAX + GS_RO_NAME_MAX + 8];
	struct gs_ro_file *ro;
	mode_t mode = 0600;
	gs_err err;
	void *p;
	int fd, e;

	if (key->slot >= 0 && (err = books_dir_make(r, eb)) != GS_OK)
		return err;
	owner_path(r, key, path, sizeof(path));
	(void)snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	          0600);
	if (fd < 0)
		goto fail_errno;
	if (ftruncate(fd, (off_t)sizeof(*ro)) != 0)
		goto fail_errno_fd;
	p = owner_mmap(fd);
	if (p == MAP_FAILED)
		goto fail_errno_fd;
	ro = p;
	err = init_owner(ro, key, r->rl->h.region_id, r->rl->h.boot_id, eb);
	if (err != GS_OK) {
		(void)munmap(p, sizeof(*ro));
		(void)close(fd);
		(void)unlink(tmp);
		return err;
	}
	if (key->uid == 0)
		mode = 0666;
	else if (key->uid != (uint32_t)geteuid() &&
	         fchown(fd, (uid_t)key->uid, (gid_t)-1) != 0)
		mode = 0666;
	if (fchmod(fd, mode) != 0 || rename(tmp, path) != 0) {
		(void)munmap(p, sizeof(*ro));
		goto fail_errno_fd;
	}
	/* Kept mapped: mapping it again cost a second mmap and munmap (a
	 * TLB shootdown in every thread) per create. */
	(void)gs__guard_add(p, sizeof(*ro));
	*fdp = fd;
	*rop = ro;
	return GS_OK;
fail_errno_fd:
	e = errno;
	(void)close(fd);
	(void)unlink(tmp);
	return gs_fail(eb, GS_ERR_IO, "create %s: %s", path, strerror(e));
fail_errno:
	e = errno;
	return gs_fail(eb, GS_ERR_IO, "create %s: %s", path, strerror(e));
}

/*
 * Opens and maps `path` as the file `key` names. A file that is neither
 * uid's nor the region creator's is refused: a tenant must not hand
 * another one books it controls. OUT: *fd, *ro (on GS_OK).
 */
static gs_err owner_open(struct gs_region *r, const char *path,
                         const struct own_key *key, int *fd,
                         struct gs_ro_file **ro, struct gs_errbuf *eb)
{
	const struct gs_ro_file *f;
	struct stat st;
	void *p;
	gs_err err;
	int e;

	*fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (*fd < 0) {
		e = errno;
		return gs_fail(eb,
		               e == ENOENT ? GS_ERR_NOT_FOUND
		               : e == EACCES || e == EPERM ? GS_ERR_PERM
		                                           : GS_ERR_IO,
		               "%s: %s", path, strerror(e));
	}
	if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != sizeof(struct gs_ro_file) ||
	    (st.st_uid != (uid_t)key->uid &&
	     st.st_uid != (uid_t)r->rl->h.owner_uid)) {
		(void)close(*fd);
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "%s: not a usage file of uid %u", path,
		               (unsigned)key->uid);
	}
	p = owner_mmap(*fd);
	if (p == MAP_FAILED) {
		e = errno;
		(void)close(*fd);
		return gs_fail(eb, GS_ERR_IO, "mmap %s: %s", path,
		               strerror(e));
	}
	(void)gs__guard_add(p, sizeof(struct gs_ro_file));
	f = p;
	if (owner_valid(r, f, key)) {
		*ro = p;
		return GS_OK;
	}
	if (!owner_base_valid(r, f, key->uid))
		err = gs_fail(eb, GS_ERR_CORRUPT,
		              "%s belongs to another region", path);
	else if (key->slot < 0)
		err = gs_fail(eb, GS_ERR_CORRUPT,
		              "%s holds one slice's private books, not uid "
		              "%u's",
		              path, (unsigned)key->uid);
	else if (!(f->h.flags & GS_RO_PRIVATE))
		err = gs_fail(eb, GS_ERR_NOT_FOUND,
		              "%s is uid %u's shared usage file, not the "
		              "private books of slice slot %d",
		              path, (unsigned)key->uid, (int)key->slot);
	else if (f->h.slot != key->slot)
		err = gs_fail(eb, GS_ERR_PERM,
		              "%s holds the books of slice slot %d, not of "
		              "slot %d: a pod is given only its own slice's "
		              "books (GPUSLICE_SLICE names another pod's "
		              "slice?)",
		              path, (int)f->h.slot, (int)key->slot);
	else
		err = gs_fail(eb, GS_ERR_NOT_FOUND,
		              "%s holds the books of another slice that had "
		              "slot %d",
		              path, (int)key->slot);
	gs__guard_del(p);
	(void)munmap(p, sizeof(struct gs_ro_file));
	(void)close(*fd);
	return err;
}

/* omu held: puts a mapped file into own[] - over the entry of the same
 * slot's earlier private books in an OWNER handle (under the remap
 * lock: nothing of this process is using that mapping then), else as a
 * new entry. Returns the index, or a negative gs_err. */
static int owner_install(struct gs_region *r, const struct own_key *key,
                         int fd, struct gs_ro_file *ro, struct gs_errbuf *eb)
{
	uint64_t gen = key->slot >= 0 ? ro->h.slice_gen : 0;
	int k;

	if (key->slot >= 0 && r->role == GS_REGION_OWNER) {
		for (k = 0; k < r->n_own; k++) {
			struct gs_own *o = &r->own[k];

			if (o->uid != key->uid || o->slot != key->slot)
				continue;
			(void)pthread_rwlock_wrlock(&r->remap);
			gs__guard_del(o->ro);
			(void)munmap(o->ro, sizeof(*o->ro));
			(void)close(o->fd);
			o->fd = fd;
			o->ro = ro;
			o->cut = false;
			__atomic_store_n(&o->gen, gen, __ATOMIC_RELEASE);
			if (r->me == k)
				r->me = -1; /* its process's slice is gone */
			(void)pthread_rwlock_unlock(&r->remap);
			return k;
		}
	}
	if (r->n_own >= MAX_OWNERS) {
		gs__guard_del(ro);
		(void)munmap(ro, sizeof(*ro));
		(void)close(fd);
		return -(int)gs_fail(eb, GS_ERR_NO_FIT,
		                     "too many usage files (%d)", MAX_OWNERS);
	}
	k = r->n_own;
	r->own[k].uid = key->uid;
	r->own[k].slot = key->slot;
	r->own[k].gen = gen;
	r->own[k].fd = fd;
	r->own[k].ro = ro;
	r->own[k].cut = false;
	__atomic_store_n(&r->n_own, k + 1, __ATOMIC_RELEASE);
	return k;
}

/*
 * omu held: maps the file `key` names into own[] (with `create`, under
 * the writers' lock, making it when missing or not the one asked for).
 * Private books are looked for in books/ (root, on the host) and then
 * at usage.<uid> (0), where a pod has its own slice's file mounted; a
 * creator looks only in books/. Returns the own[] index, or a negative
 * gs_err (eb says why).
 */
static int owner_map(struct gs_region *r, const struct own_key *key,
                     bool create, struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + GS_RO_NAME_MAX];
	char mnt[GS_REGION_DIR_MAX + GS_RO_NAME_MAX];
	struct gs_errbuf e1 = {0}, e2 = {0};
	struct gs_ro_file *ro;
	gs_err err, err2;
	int fd;

	owner_path(r, key, path, sizeof(path));
	err = owner_open(r, path, key, &fd, &ro, &e1);
	if (err == GS_OK)
		return owner_install(r, key, fd, ro, eb);
	if (create) {
		err = owner_create(r, key, &fd, &ro, eb);
		return err == GS_OK ? owner_install(r, key, fd, ro, eb)
		                    : -(int)err;
	}
	if (key->slot < 0)
		return -(int)gs_fail(eb, err, "%s", e1.msg);
	/* A pod's view: its slice's file mounted at usage.0. */
	(void)gs_region_books_path(r->dir, false, key->uid, -1, mnt,
	                           sizeof(mnt));
	err2 = owner_open(r, mnt, key, &fd, &ro, &e2);
	if (err2 == GS_OK)
		return owner_install(r, key, fd, ro, eb);
	if (err2 == GS_ERR_PERM)
		return -(int)gs_fail(eb, err2, "%s", e2.msg);
	if (err == GS_ERR_PERM)
		return -(int)gs_fail(
		    eb, err,
		    "slice slot %d keeps its books in %s, which only root and "
		    "the pod the slice was made for may open (%s)",
		    (int)key->slot, path, e1.msg);
	return -(int)gs_fail(eb, err == GS_ERR_NOT_FOUND ? err2 : err, "%s; %s",
	                     e1.msg, e2.msg);
}

/* Whether own[k] is the file `key` names (gen 0: any of the slot). */
static bool own_is(struct gs_region *r, int k, const struct own_key *key)
{
	const struct gs_own *o = &r->own[k];

	return o->uid == key->uid && o->slot == key->slot &&
	       (key->gen == 0 ||
	        __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE) == key->gen);
}

/* The own[] index of the file `key` names if it is mapped already, else
 * -1 (no lock: own[] only grows, published through n_own). */
static int owner_lookup(struct gs_region *r, const struct own_key *key)
{
	int n = __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE);

	for (int k = 0; k < n; k++)
		if (own_is(r, k, key))
			return k;
	return -1;
}

/* The own[] index of the file `key` names, mapping it on first use; a
 * negative gs_err when it cannot be had. */
static int owner_find_key(struct gs_region *r, const struct own_key *key,
                          bool create, struct gs_errbuf *eb)
{
	int k = owner_lookup(r, key);

	if (k >= 0)
		return k;
	(void)pthread_mutex_lock(&r->omu);
	for (k = 0; k < r->n_own; k++)
		if (own_is(r, k, key))
			break;
	if (k == r->n_own)
		k = owner_map(r, key, create, eb);
	(void)pthread_mutex_unlock(&r->omu);
	return k;
}

/* The own[] index of uid's shared owner file (usage.<uid>). */
static int owner_find(struct gs_region *r, uint32_t uid, bool create,
                      struct gs_errbuf *eb)
{
	struct own_key key = {uid, -1, 0};

	return owner_find_key(r, &key, create, eb);
}

/* The key of the books of the slice in slot s as `sl` describes it. */
static struct own_key slice_key(const struct gs_rl_slice *sl, int s)
{
	struct own_key key = {
	    __atomic_load_n(&sl->lim.owner_uid, __ATOMIC_ACQUIRE), -1, 0};

	if (__atomic_load_n(&sl->lim.flags, __ATOMIC_ACQUIRE) &
	    GS_SLICE_PRIVATE_BOOKS) {
		key.slot = s;
		key.gen = __atomic_load_n(&sl->generation, __ATOMIC_ACQUIRE);
	}
	return key;
}

/* Maps the private books in <dir>/books that this process may open
 * (root), whatever slice generation they are for. */
static void books_scan(struct gs_region *r)
{
	char path[GS_REGION_DIR_MAX + 16];
	size_t pre = strlen(GS_REGION_USAGE_FILE);
	struct dirent *de;
	DIR *d;

	(void)snprintf(path, sizeof(path), "%s/%s", r->dir,
	               GS_REGION_BOOKS_DIR);
	d = opendir(path);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		struct own_key key = {0, -1, 0};
		char *end;
		long slot;

		if (strncmp(n, GS_REGION_USAGE_FILE, pre) != 0 ||
		    strncmp(n + pre, ".0.", 3) != 0 || n[pre + 3] < '0' ||
		    n[pre + 3] > '9')
			continue;
		slot = strtol(n + pre + 3, &end, 10);
		if (*end != '\0' || slot >= GS_REGION_MAX_SLICES)
			continue;
		key.slot = (int32_t)slot;
		(void)owner_find_key(r, &key, false, NULL);
	}
	(void)closedir(d);
}

/*
 * Maps every owner file in the directory this process may open (root:
 * all of them, private books too; another uid: its own and uid 0's), so
 * that listings and reaping see processes of slices already deleted too.
 * The shim never lists or reaps beyond its own file, so it maps no other.
 */
static void owners_scan(struct gs_region *r)
{
	DIR *d;
	struct dirent *de;
	size_t pre = strlen(GS_REGION_USAGE_FILE);

	d = opendir(r->dir);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		char *end;
		unsigned long uid;

		if (strncmp(n, GS_REGION_USAGE_FILE, pre) != 0 ||
		    n[pre] != '.' || n[pre + 1] < '0' || n[pre + 1] > '9')
			continue;
		uid = strtoul(n + pre + 1, &end, 10);
		if (*end != '\0' || uid > UINT32_MAX)
			continue;
		if (geteuid() != 0 && uid != geteuid() && uid != 0)
			continue; /* not ours to open */
		(void)owner_find(r, (uint32_t)uid, false, NULL);
	}
	(void)closedir(d);
	if (geteuid() == 0)
		books_scan(r);
}

struct gs_ro_file *gs__region_own(struct gs_region *r)
{
	return r->me >= 0 ? r->own[r->me].ro : NULL;
}

struct gs_ro_file *gs__region_owner_file(struct gs_region *r, uint32_t uid)
{
	int k = owner_find(r, uid, false, NULL);

	return k >= 0 ? r->own[k].ro : NULL;
}

/* ---- the usage locks ---------------------------------------------------- */

void gs__books_tick(struct gs_ru_books *b, uint64_t now)
{
	if (b->mem_t_ns != 0 && now > b->mem_t_ns)
		b->mem_byte_s +=
		    (double)b->mem_used * ((double)(now - b->mem_t_ns) / 1e9);
	b->mem_t_ns = now;
}

static bool proc_in_slice(const struct gs_ru_proc *p, int s, uint64_t gen)
{
	return p->state == GS_RU_PROC_LIVE && p->slice == s &&
	       p->slice_gen == gen;
}

/* Owner lock held: brings slice s's books in `o` to the limits
 * generation. */
static void books_sync(struct gs_region *r, struct gs_own *o, int s)
{
	struct gs_ru_slice *us = &o->ro->slice[s];
	uint64_t gen =
	    __atomic_load_n(&r->rl->slice[s].generation, __ATOMIC_ACQUIRE);

	if (us->generation == gen)
		return;
	memset(us, 0, sizeof(*us));
	us->generation = gen;
}

/*
 * Owner lock held, after a holder died: recompute every slice's derived
 * counters in `o` from its process table (the process slots are the
 * truth; a holder killed between updating its slot and its slice left
 * them apart).
 */
static void own_repair(struct gs_region *r, struct gs_own *o)
{
	struct gs_ro_file *ro = o->ro;

	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct gs_ru_slice *us = &ro->slice[s];

		books_sync(r, o, s);
		us->n_procs = 0;
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			us->dev[d].mem_used = 0;
		for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
			if (!proc_in_slice(&ro->proc[i], s, us->generation))
				continue;
			us->n_procs++;
			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
				us->dev[d].mem_used +=
				    ro->proc_dev[i][d].mem_used;
		}
	}
	ro->h.lock_recoveries++;
}

/*
 * Shared lock held, after a holder died: nobody holds a turn, and the
 * in-flight and waiting counts of slices whose owner files this handle
 * maps are recomputed from their process books (others' go stale on
 * their own: gpusched ignores old work and silent waiters).
 */
static void shared_repair(struct gs_region *r)
{
	struct gs_ru_file *ru = r->ru;

	own_use(r);
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct own_key key = slice_key(&r->rl->slice[s], s);
		uint64_t gen = r->rl->slice[s].generation;
		int k = owner_lookup(r, &key);
		const struct gs_ro_file *ro = k >= 0 ? r->own[k].ro : NULL;

		if (ro == NULL || r->rl->slice[s].state != GS_RL_LIVE)
			continue;
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
			ru->sched[d][s].inflight = 0;
			ru->sched[d][s].waiting = 0;
		}
		for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
			if (!proc_in_slice(&ro->proc[i], s, gen))
				continue;
			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
				ru->sched[d][s].inflight +=
				    ro->proc_dev[i][d].inflight;
				ru->sched[d][s].waiting +=
				    ro->proc_dev[i][d].waiting;
			}
		}
	}
	own_unuse(r);
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_sched_dev *sd = &ru->dev[d].sched;

		sd->holder = -1;
		__atomic_store_n(&sd->gate,
		                 __atomic_load_n(&sd->gate, __ATOMIC_RELAXED) |
		                     GS_GATE_ALWAYS,
		                 __ATOMIC_RELEASE);
	}
	ru->h.lock_recoveries++;
}

/*
 * Takes a robust mutex within this handle's deadline. OUT: *dead when
 * its last holder died (the caller repairs, then marks it consistent).
 * `tenants`: a lock a tenant can hold (an owner file's; the shared one
 * where no arbiter keeps it), whose timeout makes a bounded handle stop
 * waiting for any such lock for a second; the arbiter's shared lock is
 * held only by the daemon's own threads (or root), and a timeout there -
 * a thread of ours preempted on a loaded host - must not fail the
 * daemon's other work.
 */
static gs_err mutex_take(struct gs_region *r, pthread_mutex_t *m,
                         bool tenants, bool *dead)
{
	struct timespec ts;
	uint64_t wait_ns = (uint64_t)LOCK_TIMEOUT_S * 1000000000ull, now = 0;
	int rc;

	*dead = false;
	/* Uncontended (nearly always): no deadline to compute. */
	rc = pthread_mutex_trylock(m);
	if (rc == 0)
		return GS_OK;
	if (rc == EOWNERDEAD) {
		*dead = true;
		return GS_OK;
	}
	if (r->wait_ms) {
		/* Bounded handle: after a timeout, only try for a while. */
		now = gs__mono_ns();
		wait_ns = tenants && now < __atomic_load_n(&r->busy_until,
		                                           __ATOMIC_RELAXED)
		              ? 0
		              : (uint64_t)r->wait_ms * 1000000ull;
	}
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(wait_ns / 1000000000ull);
	ts.tv_nsec += (long)(wait_ns % 1000000000ull);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	rc = pthread_mutex_timedlock(m, &ts);
	if (rc == 0)
		return GS_OK;
	if (rc == EOWNERDEAD) {
		*dead = true;
		return GS_OK;
	}
	if (rc == ETIMEDOUT) {
		if (r->wait_ms && tenants)
			__atomic_store_n(&r->busy_until,
			                 gs__mono_ns() + 1000000000ull,
			                 __ATOMIC_RELAXED);
		return GS_ERR_TIMEOUT;
	}
	return GS_ERR_CORRUPT;
}

/* OWNER handles: a use of own[] mappings begins and ends (remap lock,
 * shared: no remap meanwhile). Others never remap. */
static void own_use(struct gs_region *r)
{
	if (r->role == GS_REGION_OWNER)
		(void)pthread_rwlock_rdlock(&r->remap);
}

static void own_unuse(struct gs_region *r)
{
	if (r->role == GS_REGION_OWNER)
		(void)pthread_rwlock_unlock(&r->remap);
}

static gs_err own_lock(struct gs_region *r, struct gs_own *o)
{
	bool dead;
	gs_err err;

	own_use(r);
	err = mutex_take(r, &o->ro->h.lock.m, true, &dead);
	if (err == GS_OK && dead) {
		own_repair(r, o);
		(void)pthread_mutex_consistent(&o->ro->h.lock.m);
	}
	if (err != GS_OK)
		own_unuse(r);
	return err;
}

static void own_unlock(struct gs_region *r, struct gs_own *o)
{
	(void)pthread_mutex_unlock(&o->ro->h.lock.m);
	own_unuse(r);
}

/*
 * A joiner whose shared usage file was cut short or wedged: when the
 * region's creator has replaced it (gs_region_rebuild_usage: a new file
 * under the same name, of the same region), maps the new one and uses it
 * from now on. The old mapping stays (another thread may be in it).
 * Whether it moved to a new file.
 */
static bool ru_follow(struct gs_region *r)
{
	char path[GS_REGION_DIR_MAX + 32];
	struct stat now, was;
	struct gs_ru_file *nu;
	bool moved = false;
	void *p;
	int fd;

	if (r->limits_writable)
		return false; /* the creator rebuilds; it never follows */
	(void)snprintf(path, sizeof(path), "%s/%s", r->dir,
	               GS_REGION_USAGE_FILE);
	pthread_mutex_lock(&r->fmu);
	if (stat(path, &now) != 0 || fstat(r->ufd, &was) != 0 ||
	    (now.st_ino == was.st_ino && now.st_dev == was.st_dev))
		goto out;
	fd = open(path,
	          (usage_writable(r->ufd) ? O_RDWR : O_RDONLY) | O_CLOEXEC |
	              O_NOFOLLOW);
	if (fd < 0)
		goto out;
	if (fd_size(fd) != sizeof(*nu)) {
		(void)close(fd);
		goto out;
	}
	p = mmap(NULL, sizeof(*nu),
	         PROT_READ | (usage_writable(fd) ? PROT_WRITE : 0), MAP_SHARED,
	         fd, 0);
	if (p == MAP_FAILED) {
		(void)close(fd);
		goto out;
	}
	nu = p;
	(void)gs__guard_add(p, sizeof(*nu));
	if (validate(r->rl, sizeof(*r->rl), nu, sizeof(*nu), NULL) != GS_OK) {
		gs__guard_del(p);
		(void)munmap(p, sizeof(*nu));
		(void)close(fd);
		goto out;
	}
	__atomic_store_n(&r->ru, nu, __ATOMIC_RELEASE);
	(void)close(r->ufd);
	r->ufd = fd;
	r->ru_cut = false;
	moved = true;
out:
	pthread_mutex_unlock(&r->fmu);
	return moved;
}

/* The shared file a thread locked, for its unlock (ru_follow may have
 * moved r->ru meanwhile). */
static __thread struct gs_ru_file *ru_locked;

static gs_err shared_lock(struct gs_region *r)
{
	struct gs_ru_file *ru;
	bool dead;
	gs_err err;

	if (gs__guard_caught() != 0 && gs__guard_tripped(r->ru))
		(void)ru_follow(r);
	ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);
	err = mutex_take(r, &ru->h.lock.m, !arbitrated(r), &dead);
	if (err == GS_ERR_TIMEOUT && ru_follow(r)) {
		ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);
		err = mutex_take(r, &ru->h.lock.m, !arbitrated(r), &dead);
	}
	if (err != GS_OK)
		return err;
	ru_locked = ru;
	if (dead) {
		shared_repair(r);
		(void)pthread_mutex_consistent(&ru->h.lock.m);
	}
	return GS_OK;
}

static void shared_unlock(struct gs_region *r)
{
	struct gs_ru_file *ru = ru_locked ? ru_locked : r->ru;

	ru_locked = NULL;
	(void)pthread_mutex_unlock(&ru->h.lock.m);
}

gs_err gs__region_lock(struct gs_region *r)
{
	int me = r->me;
	gs_err err;

	if (me >= 0) {
		err = own_lock(r, &r->own[me]);
		if (err != GS_OK)
			return err;
	}
	if (r->arb_client) {
		/* Nothing shared to write: the arbiter's. One that has not
		 * passed for a second may have moved to a new file (a
		 * repaired one): follow it, looking at most every 100 ms. */
		uint64_t now = gs__mono_ns(),
		         beat = __atomic_load_n(&r->ru->h.arb_beat_ns,
		                                __ATOMIC_ACQUIRE),
		         last = __atomic_load_n(&r->follow_ns, __ATOMIC_RELAXED);

		if (now > beat + 1000000000ull && now > last + 100000000ull) {
			__atomic_store_n(&r->follow_ns, now, __ATOMIC_RELAXED);
			(void)ru_follow(r);
		}
		return GS_OK;
	}
	err = shared_lock(r);
	if (err != GS_OK && me >= 0)
		own_unlock(r, &r->own[me]);
	return err;
}

void gs_region_set_lock_wait(struct gs_region *r, unsigned wait_ms)
{
	r->wait_ms = wait_ms;
}

void gs__region_unlock(struct gs_region *r)
{
	if (!r->arb_client)
		shared_unlock(r);
	if (r->me >= 0)
		own_unlock(r, &r->own[r->me]);
}

/* ---- views of the limits (privileged regions) ------------------------- */

static void view_path(const struct gs_region *r, uint32_t uid, char *out,
                      size_t n)
{
	if (uid == GS_RL_VIEW_PUBLIC)
		(void)snprintf(out, n, "%s/%s", r->dir, GS_RL_VIEW_PUBLIC_FILE);
	else
		(void)snprintf(out, n, "%s/%s.%u", r->dir,
		               GS_REGION_LIMITS_FILE, (unsigned)uid);
}

/*
 * Read access for `uid` alone, besides the file's owner: mode 0640 with
 * the access ACL user::rw-, user:<uid>:r--, group::---, mask::r--,
 * other::--- (the kernel's xattr form, entries in tag order). -1 where
 * the filesystem keeps no ACLs.
 */
static int acl_user_read(int fd, uint32_t uid)
{
	struct {
		uint32_t version;
		struct {
			uint16_t tag, perm;
			uint32_t id;
		} e[5];
	} a = {2,
	       {{0x01, 6, UINT32_MAX},
	        {0x02, 4, uid},
	        {0x04, 0, UINT32_MAX},
	        {0x10, 4, UINT32_MAX},
	        {0x20, 0, UINT32_MAX}}};

	static_assert(sizeof(a) == 4 + 5 * 8, "posix_acl xattr layout");
	return fsetxattr(fd, "system.posix_acl_access", &a, sizeof(a), 0);
}

/* Whether a mapped view is this region's view for `uid`. */
static bool view_valid(const struct gs_region *r, const struct gs_rl_file *v,
                       uint32_t uid)
{
	return __atomic_load_n(&v->h.magic, __ATOMIC_ACQUIRE) == GS_RL_MAGIC &&
	       v->h.version == GS_REGION_VERSION &&
	       v->h.size == sizeof(*v) && (v->h.flags & GS_RL_VIEW) &&
	       v->h.view_uid == uid && v->h.region_id == r->rl->h.region_id &&
	       v->h.boot_id == r->rl->h.boot_id;
}

/*
 * Writers' lock held: the view[] index of `uid`'s view, mapped, made
 * afresh (and renamed into place) when missing or not this region's.
 * -1 when it cannot be had (eb says why).
 */
static int view_find(struct gs_region *r, uint32_t uid, struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + GS_RO_NAME_MAX];
	char tmp[GS_REGION_DIR_MAX + GS_RO_NAME_MAX + 8];
	struct gs_rl_file *v;
	struct stat st;
	void *p;
	int fd, e, k;

	for (k = 0; k < r->n_view; k++)
		if (r->view[k].uid == uid)
			return k;
	if (r->n_view >= MAX_OWNERS + 1) {
		(void)gs_fail(eb, GS_ERR_NO_FIT, "too many limits views");
		return -1;
	}
	view_path(r, uid, path, sizeof(path));
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && (uint64_t)st.st_size == sizeof(*v)) {
		p = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE, MAP_SHARED,
		         fd, 0);
		if (p != MAP_FAILED && view_valid(r, p, uid))
			goto keep;
		if (p != MAP_FAILED)
			(void)munmap(p, sizeof(*v));
	}
	if (fd >= 0)
		(void)close(fd);
	(void)snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	          0600);
	if (fd < 0)
		goto fail_errno;
	if (ftruncate(fd, (off_t)sizeof(*v)) != 0 || fchmod(fd, 0600) != 0)
		goto fail_errno_fd;
	p = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail_errno_fd;
	v = p;
	v->h = r->rl->h;
	v->h.magic = 0;
	v->h.flags |= GS_RL_VIEW;
	v->h.view_uid = uid;
	v->h.seq = 0;
	__atomic_store_n(&v->h.magic, GS_RL_MAGIC, __ATOMIC_RELEASE);
	/* Only `uid` (and the writer) may read it; the public view, and
	 * any view on a filesystem without ACLs, all may. */
	if ((uid == GS_RL_VIEW_PUBLIC || acl_user_read(fd, uid) != 0) &&
	    fchmod(fd, 0644) != 0)
		goto fail_errno_unmap;
	if (rename(tmp, path) != 0)
		goto fail_errno_unmap;
keep:
	k = r->n_view++;
	r->view[k].uid = uid;
	r->view[k].fd = fd;
	r->view[k].rl = p;
	return k;
fail_errno_unmap:
	e = errno;
	(void)munmap(p, sizeof(*v));
	goto fail;
fail_errno_fd:
	e = errno;
fail:
	(void)close(fd);
	(void)unlink(tmp);
	(void)gs_fail(eb, GS_ERR_IO, "limits view %s: %s", path, strerror(e));
	return -1;
fail_errno:
	e = errno;
	(void)gs_fail(eb, GS_ERR_IO, "limits view %s: %s", path, strerror(e));
	return -1;
}

/* Slot `src` as the view of `uid` shows it. */
static void view_copy(const struct gs_rl_slice *src, struct gs_rl_slice *dst,
                      uint32_t uid)
{
	if (src->state != GS_RL_LIVE || src->lim.owner_uid == uid ||
	    src->lim.owner_uid == 0) {
		*dst = *src;
		return;
	}
	memset(dst, 0, sizeof(*dst));
	dst->generation = src->generation;
	dst->state = src->state;
	dst->lim.compute_pct = src->lim.compute_pct;
	dst->lim.priority = src->lim.priority;
	dst->lim.weight = src->lim.weight;
	dst->lim.mode = src->lim.mode;
	dst->lim.flags = src->lim.flags & GS_SLICE_MPS;
	dst->lim.owner_uid = GS_RL_VIEW_PUBLIC;
}

/*
 * Writers' lock held, the limits changed (their seq still odd): makes
 * the views every owner of a live slice needs and republishes them all,
 * each under its own seq. A view that cannot be made leaves its uid
 * reading limits.public: fewer slices, never another's.
 */
static void views_publish(struct gs_region *r)
{
	uint64_t epoch = r->rl->h.epoch;

	if (!(r->rl->h.flags & GS_RL_PRIVILEGED) || !r->limits_writable)
		return;
	(void)view_find(r, GS_RL_VIEW_PUBLIC, NULL);
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++)
		if (r->rl->slice[s].state == GS_RL_LIVE &&
		    r->rl->slice[s].lim.owner_uid != 0)
			(void)view_find(r, r->rl->slice[s].lim.owner_uid,
			                NULL);
	for (int k = 0; k < r->n_view; k++) {
		struct gs_rl_file *v = r->view[k].rl;

		__atomic_store_n(&v->h.seq, v->h.seq | 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		for (int s = 0; s < GS_REGION_MAX_SLICES; s++)
			view_copy(&r->rl->slice[s], &v->slice[s],
			          r->view[k].uid);
		v->h.epoch = epoch;
		__atomic_store_n(&v->h.seq, v->h.seq + 1, __ATOMIC_RELEASE);
	}
}

/* ---- limits: seqlock readers, flock writers --------------------------- */

static void rl_copy_slot(const struct gs_rl_slice *src, struct gs_rl_slice *dst)
{
	/* Field by field through relaxed atomics: no torn 8-byte values. */
	const uint64_t *s = (const uint64_t *)(const void *)src;
	uint64_t *d = (uint64_t *)(void *)dst;

	for (size_t i = 0; i < sizeof(*src) / 8; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

/* A consistent copy of slot s. GS_ERR_BUSY when a writer never finishes. */
static gs_err rl_read_tries(struct gs_region *r, int s,
                            struct gs_rl_slice *out, int tries)
{
	const uint64_t *seq = &r->rl->h.seq;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < tries; i++) {
		uint64_t a = __atomic_load_n(seq, __ATOMIC_ACQUIRE), b;

		if (a & 1) {
			if (i > 64)
				(void)sched_yield();
			continue;
		}
		rl_copy_slot(&r->rl->slice[s], out);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		b = __atomic_load_n(seq, __ATOMIC_RELAXED);
		if (a == b) {
			out->lim.name[GS_REGION_NAME_MAX - 1] = '\0';
			return GS_OK;
		}
	}
	return GS_ERR_BUSY;
}

static gs_err rl_read(struct gs_region *r, int s, struct gs_rl_slice *out)
{
	return rl_read_tries(r, s, out, SEQ_READ_TRIES);
}

/*
 * The writers' protocol. The limits lock (wlock_take/wlock_drop) orders
 * writers; the odd sequence number (wseq_open/wseq_close) only covers the
 * stores into slots, so that readers retry. Nothing may take the usage
 * lock between wseq_open and wseq_close: shims read the limits while
 * holding the usage lock (cfg_refresh), so a writer waiting for the usage
 * lock with the sequence odd would make every one of them spin. Usage
 * work a writer does (attach, detach, reap) goes under the limits lock
 * with the sequence even.
 */
static void wseq_open(struct gs_region *r)
{
	/* A writer that died inside left seq odd: this keeps it odd. */
	__atomic_store_n(&r->rl->h.seq, (r->rl->h.seq | 1), __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void wseq_close(struct gs_region *r)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	r->rl->h.epoch++;
	views_publish(r);
	__atomic_store_n(&r->rl->h.seq, r->rl->h.seq + 1, __ATOMIC_RELEASE);
}

/* The writers' lock, for a handle that may write limits; the sequence
 * stays even (file work - making usage files - goes here, not inside
 * wseq_open: a writer killed there would leave it odd). */
static gs_err wlock_even(struct gs_region *r, struct gs_errbuf *eb)
{
	if (!r->limits_writable)
		return gs_fail(eb, GS_ERR_PERM,
		               "limits in %s are read-only here%s", r->dir,
		               gs_region_is_privileged(r)
		                   ? " (the daemon owns them)"
		                   : "");
	return wlock_take(r, eb);
}

static gs_err wlock(struct gs_region *r, struct gs_errbuf *eb)
{
	gs_err err = wlock_even(r, eb);

	if (err == GS_OK)
		wseq_open(r);
	return err;
}

/*
 * After a slice's limits changed: raise every GPU's GS_GATE_ENFORCED for a
 * moment, so that processes on the launch fast path (which never read the
 * limits) take the slow path, where they notice the new epoch. (Creating
 * or deleting a slice changes no running process's limits.)
 */
static void poke_gates(struct gs_region *r)
{
	uint64_t now = gs__mono_ns();

	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_sched_dev *sd = &r->ru->dev[d].sched;

		if (!__atomic_load_n(&r->ru->dev[d].in_use, __ATOMIC_ACQUIRE))
			continue;
		__atomic_store_n(&sd->enforced_ns, now, __ATOMIC_RELAXED);
		__atomic_or_fetch(&sd->gate, GS_GATE_ENFORCED,
		                  __ATOMIC_RELEASE);
	}
}

static int find_locked(struct gs_region *r, const char *name)
{
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct gs_rl_slice *sl = &r->rl->slice[s];

		if (sl->state == GS_RL_LIVE &&
		    strncmp(sl->lim.name, name, GS_REGION_NAME_MAX) == 0)
			return s;
	}
	return -1;
}

/* The flags the region decides itself: private books for uid 0's slices
 * of a privileged region. */
static uint32_t flags_of(const struct gs_region *r, uint32_t flags,
                         uint32_t owner_uid)
{
	flags &= ~GS_SLICE_PRIVATE_BOOKS;
	if (gs_region_books_private(gs_region_is_privileged(r), owner_uid))
		flags |= GS_SLICE_PRIVATE_BOOKS;
	return flags;
}

/*
 * Writers' lock held, sequence even: makes the slice in a free slot and
 * publishes it (its own wseq_open .. wseq_close). Its books come first,
 * with the sequence still even: a slice without them cannot be joined.
 */
static gs_err create_in_wlock(struct gs_region *r,
                              const struct gs_slice_limits *lim,
                              struct gs_slice_ref *out, struct gs_errbuf *eb)
{
	uint32_t flags = flags_of(r, lim->flags, lim->owner_uid);
	struct gs_rl_slice *sl = NULL;
	struct own_key key = {lim->owner_uid, -1, 0};
	int s, k;

	for (s = 0; s < GS_REGION_MAX_SLICES && sl == NULL; s++)
		if (r->rl->slice[s].state == GS_RL_FREE)
			sl = &r->rl->slice[s];
	if (sl == NULL)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "slice table full (%d slices)",
		               GS_REGION_MAX_SLICES);
	s--;
	if (flags & GS_SLICE_PRIVATE_BOOKS) {
		/* A file of its own, made for this generation. */
		key.slot = s;
		key.gen = sl->generation + 1;
	}
	k = owner_find_key(r, &key, true, eb);
	if (k < 0)
		return (gs_err)-k;
	wseq_open(r);
	sl->lim = *lim;
	sl->lim.flags = flags;
	sl->lim.name[GS_REGION_NAME_MAX - 1] = '\0';
	sl->created_ns = gs__real_ns();
	sl->generation++;
	sl->state = GS_RL_LIVE;
	wseq_close(r);
	out->slot = s;
	out->reserved = 0;
	out->generation = sl->generation;
	return GS_OK;
}

gs_err gs_region_slice_create(struct gs_region *r,
                              const struct gs_slice_limits *lim,
                              struct gs_slice_ref *out, struct gs_errbuf *eb)
{
	gs_err err = limits_check(lim, eb);

	if (err != GS_OK)
		return err;
	err = wlock_even(r, eb);
	if (err != GS_OK)
		return err;
	if (find_locked(r, lim->name) >= 0)
		err = gs_fail(eb, GS_ERR_EXISTS, "slice '%s' already exists",
		              lim->name);
	else
		err = create_in_wlock(r, lim, out, eb);
	wlock_drop(r);
	return err;
}

gs_err gs_region_slice_ensure(struct gs_region *r,
                              const struct gs_slice_limits *lim,
                              struct gs_slice_ref *out, bool *created,
                              struct gs_errbuf *eb)
{
	gs_err err = limits_check(lim, eb);
	int s;

	if (created != NULL)
		*created = false;
	if (err != GS_OK)
		return err;
	if (!r->limits_writable) {
		err = gs_region_slice_find(r, lim->name, out);
		if (err == GS_ERR_NOT_FOUND)
			return gs_fail(eb, GS_ERR_NOT_FOUND,
			               "slice '%s' does not exist and limits "
			               "in %s are read-only here",
			               lim->name, r->dir);
		return err;
	}
	err = wlock_even(r, eb);
	if (err != GS_OK)
		return err;
	s = find_locked(r, lim->name);
	if (s >= 0) {
		out->slot = s;
		out->reserved = 0;
		out->generation = r->rl->slice[s].generation;
	} else {
		err = create_in_wlock(r, lim, out, eb);
		if (err == GS_OK && created != NULL)
			*created = true;
	}
	wlock_drop(r);
	return err;
}

gs_err gs_region_slice_join(struct gs_region *r,
                            const struct gs_slice_limits *lim,
                            uint32_t proc_flags, struct gs_slice_ref *slice,
                            struct gs_proc_ref *proc, bool *created,
                            struct gs_errbuf *eb)
{
	bool locked = false;
	gs_err err;
	int s;

	if (created != NULL)
		*created = false;
	err = limits_check(lim, eb);
	if (err != GS_OK)
		return err;
	if (r->limits_writable) {
		err = wlock_even(r, eb);
		if (err != GS_OK)
			return err;
		locked = true;
		s = find_locked(r, lim->name);
		if (s >= 0) {
			slice->slot = s;
			slice->reserved = 0;
			slice->generation = r->rl->slice[s].generation;
		} else {
			/* Published before attaching (see wseq_open); the
			 * limits lock, still held, keeps a leaving run from
			 * deleting it. */
			err = create_in_wlock(r, lim, slice, eb);
			if (err == GS_OK && created != NULL)
				*created = true;
		}
	} else if (gs_region_slice_find(r, lim->name, slice) != GS_OK) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND,
		              "slice '%s' does not exist and limits in %s are "
		              "read-only here",
		              lim->name, r->dir);
	}
	if (err == GS_OK)
		err = gs_region_proc_attach(r, slice, proc_flags, proc, eb);
	if (locked)
		wlock_drop(r);
	return err;
}

gs_err gs_region_slice_leave(struct gs_region *r,
                             const struct gs_slice_ref *slice,
                             const struct gs_proc_ref *proc, bool *deleted)
{
	struct gs_rl_slice *sl;
	gs_err err;
	int n;

	if (deleted != NULL)
		*deleted = false;
	if (!r->limits_writable) {
		(void)gs_region_proc_detach(r, proc);
		return GS_OK;
	}
	if (!ref_ok(slice))
		return GS_ERR_NOT_FOUND;
	/* The limits lock, not the odd sequence, around the usage work
	 * (see wseq_open): no writer can add a process meanwhile. */
	err = wlock_take(r, NULL);
	if (err != GS_OK)
		return err;
	(void)gs_region_proc_detach(r, proc);
	(void)gs_region_reap(r);
	sl = &r->rl->slice[slice->slot];
	n = gs_region_slice_nprocs(r, slice);
	if (sl->state == GS_RL_LIVE && sl->generation == slice->generation &&
	    (sl->lim.flags & GS_SLICE_EPHEMERAL) && n == 0) {
		wseq_open(r);
		sl->state = GS_RL_FREE;
		sl->generation++;
		wseq_close(r);
		if (deleted != NULL)
			*deleted = true;
	}
	wlock_drop(r);
	return GS_OK;
}

gs_err gs_region_slice_find(struct gs_region *r, const char *name,
                            struct gs_slice_ref *out)
{
	struct gs_rl_slice sl;

	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		if (rl_read(r, s, &sl) != GS_OK || sl.state != GS_RL_LIVE)
			continue;
		if (strncmp(sl.lim.name, name, GS_REGION_NAME_MAX) == 0) {
			out->slot = s;
			out->reserved = 0;
			out->generation = sl.generation;
			return GS_OK;
		}
	}
	return GS_ERR_NOT_FOUND;
}

gs_err gs_region_slice_update(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              const struct gs_slice_limits *lim,
                              struct gs_errbuf *eb)
{
	struct gs_rl_slice *sl;
	struct own_key key = {0, -1, 0};
	bool changed = false;
	uint32_t flags;
	gs_err err;

	if (!ref_ok(ref))
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no such slice");
	err = limits_check(lim, eb);
	if (err != GS_OK)
		return err;
	err = wlock_even(r, eb);
	if (err != GS_OK)
		return err;
	sl = &r->rl->slice[ref->slot];
	flags = flags_of(r, lim->flags, lim->owner_uid);
	key.uid = lim->owner_uid;
	if (flags & GS_SLICE_PRIVATE_BOOKS) {
		key.slot = ref->slot;
		key.gen = ref->generation;
	}
	if (sl->state != GS_RL_LIVE || sl->generation != ref->generation) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	} else if (owner_find_key(r, &key, true, eb) < 0) {
		/* (its books made with the sequence even: see wlock_even) */
		err = gs_fail(eb, GS_ERR_IO, "no usage file for uid %u",
		              (unsigned)lim->owner_uid);
	} else {
		struct gs_slice_limits now = *lim;

		memcpy(now.name, sl->lim.name, sizeof(now.name));
		now.flags = flags;
		changed = memcmp(&now, &sl->lim, sizeof(now)) != 0;
		if (changed) {
			wseq_open(r);
			sl->lim = now;
			wseq_close(r);
		}
	}
	wlock_drop(r);
	if (err == GS_OK && changed)
		poke_gates(r);
	return err;
}

gs_err gs_region_slice_delete(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              struct gs_errbuf *eb)
{
	struct gs_rl_slice *sl;
	bool private_books = false;
	gs_err err;

	if (!ref_ok(ref))
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no such slice");
	err = wlock(r, eb);
	if (err != GS_OK)
		return err;
	sl = &r->rl->slice[ref->slot];
	if (sl->state != GS_RL_LIVE || sl->generation != ref->generation) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	} else {
		private_books = (sl->lim.flags & GS_SLICE_PRIVATE_BOOKS) != 0;
		sl->state = GS_RL_FREE;
		sl->generation++;
	}
	wseq_close(r);
	if (private_books) {
		/* Its books go with it (under the writers' lock, so never
		 * the file of a slice made in the slot next; the sequence
		 * even again): a pod still
		 * holding this one holds nothing anybody reads; this handle
		 * keeps its mapping for listings until the slot's next file
		 * replaces it. */
		char path[GS_REGION_DIR_MAX + GS_RO_NAME_MAX];

		(void)gs_region_books_path(r->dir, true, 0, ref->slot, path,
		                           sizeof(path));
		(void)unlink(path);
	}
	wlock_drop(r);
	return err;
}

gs_err gs_region_slice_limits(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              struct gs_slice_limits *out)
{
	struct gs_rl_slice sl;
	gs_err err;

	if (!ref_ok(ref))
		return GS_ERR_NOT_FOUND;
	err = rl_read(r, ref->slot, &sl);
	if (err != GS_OK)
		return err;
	if (sl.state != GS_RL_LIVE || sl.generation != ref->generation)
		return GS_ERR_NOT_FOUND;
	*out = sl.lim;
	/* The region's own decision, not part of what the creator set. */
	out->flags &= ~GS_SLICE_PRIVATE_BOOKS;
	return GS_OK;
}

bool gs_region_slice_private_books(struct gs_region *r,
                                   const struct gs_slice_ref *ref)
{
	struct gs_rl_slice sl;

	return ref_ok(ref) && rl_read(r, ref->slot, &sl) == GS_OK &&
	       sl.state == GS_RL_LIVE && sl.generation == ref->generation &&
	       (sl.lim.flags & GS_SLICE_PRIVATE_BOOKS) != 0;
}

bool gs_region_slice_next(struct gs_region *r, struct gs_slice_ref *it)
{
	struct gs_rl_slice sl;

	for (int s = it->slot + 1; s < GS_REGION_MAX_SLICES; s++) {
		if (rl_read(r, s, &sl) != GS_OK || sl.state != GS_RL_LIVE)
			continue;
		it->slot = s;
		it->reserved = 0;
		it->generation = sl.generation;
		return true;
	}
	return false;
}

bool gs__region_cfg_refresh(struct gs_region *r, struct gs_sched_cfg *cfg,
                            uint64_t *epoch)
{
	uint64_t e = __atomic_load_n(&r->rl->h.epoch, __ATOMIC_ACQUIRE);
	struct gs_sched_cfg tmp[GS_REGION_MAX_SLICES]; /* 8 KiB of stack */
	struct gs_rl_slice sl;

	if (e == *epoch && *epoch != 0)
		return false;
	/* Called under the usage lock: a short bounded read, and a slot
	 * caught mid-write keeps the cache as it was (asked again on the
	 * next call) - never "not live", which would fail the slice's own
	 * processes closed. */
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct gs_sched_cfg *c = &tmp[s];

		memset(c, 0, sizeof(*c));
		if (rl_read_tries(r, s, &sl, CFG_READ_TRIES) != GS_OK)
			return false;
		if (sl.state != GS_RL_LIVE)
			continue;
		c->generation = sl.generation;
		c->live = true;
		c->pct = sl.lim.compute_pct;
		c->prio = sl.lim.priority;
		c->weight = sl.lim.weight ? sl.lim.weight : 1;
		c->mode = sl.lim.mode;
		c->mps = (sl.lim.flags & GS_SLICE_MPS) != 0;
	}
	memcpy(cfg, tmp, sizeof(tmp));
	*epoch = e ? e : 1;
	return true;
}

/* ---- the arbiter (GS_RU_ARBITER regions) ------------------------------ */

static bool arbitrated(const struct gs_region *r)
{
	return (__atomic_load_n(&r->ru, __ATOMIC_ACQUIRE)->h.flags &
	        GS_RU_ARBITER) != 0;
}

bool gs__region_arb_client(const struct gs_region *r)
{
	return r->arb_client;
}

void gs__region_bell(struct gs_region *r)
{
	struct gs_ru_file *ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);

	(void)syscall(SYS_futex, &ru->h.bell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

gs_err gs_region_arbitrate(struct gs_region *r, uint64_t *next_ns)
{
	const struct gs_sched_slice *(*ask)[GS_REGION_MAX_SLICES];
	struct gs_sched_params par;
	bool wake[GS_REGION_MAX_DEVICES] = {false};
	uint64_t now, next = 100000000ull;
	struct gs_ru_file *ru;
	int n = 0;
	gs_err err;

	*next_ns = next;
	if (!r->limits_writable || !arbitrated(r))
		return GS_ERR_PERM;
	if (r->arb_cfg == NULL) {
		r->arb_cfg = calloc(GS_REGION_MAX_SLICES, sizeof(*r->arb_cfg));
		r->arb_ask = calloc(GS_REGION_MAX_DEVICES, sizeof(*ask));
		if (r->arb_cfg == NULL || r->arb_ask == NULL)
			return GS_ERR_NOMEM;
	}
	ask = r->arb_ask;
	gs_sched_params_default(&par);
	/* The owner files of the live slices, mapped first, with no lock
	 * held: mapping a slot's new private books remaps under the remap
	 * lock, which own_use below holds shared. */
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct own_key key;

		if (__atomic_load_n(&r->rl->slice[s].state, __ATOMIC_ACQUIRE) !=
		    GS_RL_LIVE)
			continue;
		key = slice_key(&r->rl->slice[s], s);
		(void)owner_find_key(r, &key, false, NULL);
	}
	/* The documented order: the remap lock, then the shared lock. */
	own_use(r);
	err = shared_lock(r);
	if (err != GS_OK) {
		own_unuse(r);
		return err;
	}
	ru = ru_locked;
	(void)gs__region_cfg_refresh(r, r->arb_cfg, &r->arb_epoch);
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++)
		if (r->arb_cfg[s].live)
			n = s + 1;
	for (int s = 0; s < n; s++) {
		struct own_key key;
		int k;

		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			ask[d][s] = NULL;
		if (!r->arb_cfg[s].live)
			continue;
		key = slice_key(&r->rl->slice[s], s);
		k = owner_lookup(r, &key);
		if (k < 0)
			continue; /* not mapped (yet): nothing it says is seen */
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			ask[d][s] = &r->own[k].ro->ask[d][s];
	}
	now = gs__mono_ns();
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_sched_arb a = {
		    .dev = &ru->dev[d].sched,
		    .pub = ru->sched[d],
		    .ask = ask[d],
		    .cfg = r->arb_cfg,
		    .n = n,
		    .par = &par,
		};
		uint64_t nx;

		if (!__atomic_load_n(&ru->dev[d].in_use, __ATOMIC_ACQUIRE))
			continue;
		wake[d] = gs_sched_arbitrate(&a, now, &nx);
		if (nx < next)
			next = nx;
	}
	__atomic_store_n(&ru->h.arb_beat_ns, now, __ATOMIC_RELEASE);
	shared_unlock(r);
	own_unuse(r);
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		if (wake[d])
			(void)syscall(SYS_futex, &ru->dev[d].sched.seq,
			              FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	*next_ns = next;
	return GS_OK;
}

void gs_region_arbiter_wait(struct gs_region *r, uint64_t ns)
{
	struct gs_ru_file *ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
	                      .tv_nsec = (long)(ns % 1000000000ull)};
	uint32_t v = __atomic_load_n(&ru->h.bell, __ATOMIC_ACQUIRE);

	(void)syscall(SYS_futex, &ru->h.bell, FUTEX_WAIT, v, &ts, NULL, 0);
}

/* ---- usage ------------------------------------------------------------ */

static void books_export(struct gs_region *r, int d,
                         const struct gs_ru_books *b, struct gs_dev_usage *u)
{
	memset(u, 0, sizeof(*u));
	memcpy(u->uuid, r->ru->dev[d].uuid, sizeof(u->uuid));
	u->uuid[GS_REGION_UUID_MAX - 1] = '\0';
	u->mem_used = b->mem_used;
	u->mem_peak = b->mem_peak;
	u->mem_byte_s = b->mem_byte_s;
	u->busy_ns = b->busy_ns;
	u->throttled_ns = b->throttled_ns;
	u->launches = b->launches;
}

static bool books_any(const struct gs_ru_books *b)
{
	return b->mem_used || b->mem_peak || b->busy_ns || b->throttled_ns ||
	       b->launches;
}

/* The file holding the books of slice `ref` (not created), or NULL: none
 * yet, or not ours to open. */
static struct gs_own *slice_owner(struct gs_region *r,
                                  const struct gs_slice_ref *ref)
{
	struct own_key key = slice_key(&r->rl->slice[ref->slot], ref->slot);
	int k;

	if (key.slot >= 0)
		key.gen = ref->generation;
	k = owner_find_key(r, &key, false, NULL);
	return k >= 0 ? &r->own[k] : NULL;
}

gs_err gs_region_slice_usage(struct gs_region *r,
                             const struct gs_slice_ref *ref,
                             struct gs_slice_usage *out)
{
	struct gs_ru_slice *us;
	struct gs_own *o;
	uint64_t now = gs__mono_ns();
	gs_err err;

	memset(out, 0, sizeof(*out));
	if (!ref_ok(ref))
		return GS_ERR_NOT_FOUND;
	if (__atomic_load_n(&r->rl->slice[ref->slot].generation,
	                    __ATOMIC_ACQUIRE) != ref->generation)
		return GS_ERR_NOT_FOUND;
	o = slice_owner(r, ref);
	if (o == NULL)
		return GS_OK; /* no books yet, or not ours to read: none */
	err = own_lock(r, o);
	if (err != GS_OK)
		return err;
	books_sync(r, o, ref->slot);
	us = &o->ro->slice[ref->slot];
	out->n_procs = us->n_procs;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_ru_books *b = &us->dev[d];

		if (!r->ru->dev[d].in_use)
			continue;
		gs__books_tick(b, now);
		if (!books_any(b))
			continue;
		books_export(r, d, b, &out->dev[out->n_dev++]);
		out->mem_used += b->mem_used;
		if (b->mem_peak > out->mem_peak)
			out->mem_peak = b->mem_peak;
		out->mem_byte_s += b->mem_byte_s;
		out->busy_ns += b->busy_ns;
		out->throttled_ns += b->throttled_ns;
		out->launches += b->launches;
	}
	own_unlock(r, o);
	return GS_OK;
}

/* Owner lock held: the slot of the calling process in `o`, if attached. */
static int proc_find_self(struct gs_region *r, struct gs_own *o, int32_t pid,
                          uint64_t start)
{
	for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
		struct gs_ru_proc *p = &o->ro->proc[i];

		if (p->state == GS_RU_PROC_LIVE && p->pid == pid &&
		    p->start_time == start && p->pidns == r->pidns)
			return i;
	}
	return -1;
}

/* A process's work in flight and waits, taken off its slice's record. */
static void sched_give_back(struct gs_sched_slice *ss,
                            const struct gs_ru_books *pb)
{
	ss->inflight -= pb->inflight <= ss->inflight ? pb->inflight
	                                             : ss->inflight;
	ss->waiting -= pb->waiting <= ss->waiting ? pb->waiting : ss->waiting;
}

/*
 * Owner lock held: frees proc slot i of `o`, giving its share back to its
 * slice: memory in the owner's books, its work in flight and waits in
 * the shared scheduler records (under the shared lock, taken after the
 * owner's; skipped when it cannot be had - gpusched lets those counts
 * go stale).
 */
static void proc_free_locked(struct gs_region *r, struct gs_own *o, int i)
{
	struct gs_ro_file *ro = o->ro;
	struct gs_ru_proc *p = &ro->proc[i];
	int s = p->slice;

	if (s >= 0 && s < GS_REGION_MAX_SLICES) {
		struct gs_ru_slice *us = &ro->slice[s];

		books_sync(r, o, s);
		if (us->generation == p->slice_gen) {
			uint64_t now = gs__mono_ns();
			bool sched = false;

			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
				struct gs_ru_books *b = &us->dev[d];
				struct gs_ru_books *pb = &ro->proc_dev[i][d];

				if (pb->mem_used) {
					gs__books_tick(b, now);
					b->mem_used -=
					    pb->mem_used <= b->mem_used
					        ? pb->mem_used
					        : b->mem_used;
				}
				sched = sched || pb->inflight || pb->waiting;
			}
			if (sched && arbitrated(r)) {
				/* The slice's own record; the arbiter
				 * publishes it. */
				for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
					sched_give_back(&ro->ask[d][s],
					                &ro->proc_dev[i][d]);
				gs__region_bell(r);
			} else if (sched && shared_lock(r) == GS_OK) {
				for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
					sched_give_back(&r->ru->sched[d][s],
					                &ro->proc_dev[i][d]);
				shared_unlock(r);
			}
			if (us->n_procs > 0)
				us->n_procs--;
		}
	}
	memset(ro->proc_dev[i], 0, sizeof(ro->proc_dev[i]));
	p->state = GS_RU_PROC_FREE;
	p->generation++;
	if (r->arb_client)
		return; /* the arbiter wakes whom it concerns */
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		__atomic_add_fetch(&r->ru->dev[d].sched.seq, 1,
		                   __ATOMIC_RELEASE);
}

/* Whether `o` is the file that holds the books of slice `sl` (slot s). */
static bool own_serves(const struct gs_own *o, const struct gs_rl_slice *sl,
                       int s)
{
	struct own_key key = slice_key(sl, s);

	return o->uid == key.uid && o->slot == key.slot &&
	       (key.slot < 0 ||
	        __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE) == key.gen);
}

/*
 * The uid a live process runs as (the owner of /proc/<pid>, its effective
 * uid), or -1 when it is gone.
 */
static int64_t pid_uid(int32_t pid)
{
	char path[64];
	struct stat st;

	(void)snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) != 0)
		return -1;
	return (int64_t)st.st_uid;
}

/*
 * Owner lock held: frees the process slots of `o` that stand for nothing
 * - a process of this pid namespace that is gone, one whose uid may not
 * be in its slice or is not the uid it attached with (an entry forged
 * with a victim's pid), one in a slice of another owner than the file's,
 * and a copy of an entry (same process, same slice); and a uid's entries
 * past GS_REGION_PROCS_PER_UID. The file is writable by its owner's
 * processes (and, for uid 0's, by everyone); these checks rest on what
 * the kernel says.
 */
static int reap_locked(struct gs_region *r, struct gs_own *o)
{
	struct gs_ro_file *ro = o->ro;
	int n = 0;

	for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
		struct gs_ru_proc *p = &ro->proc[i];
		bool bad;

		if (p->state != GS_RU_PROC_LIVE || p->pidns != r->pidns)
			continue;
		bad = !gs_region_pid_alive(p->pid, p->start_time) ||
		      (o->slot >= 0 &&
		       (p->slice != o->slot ||
		        p->slice_gen !=
		            __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE)));
		if (!bad && p->slice >= 0 && p->slice < GS_REGION_MAX_SLICES) {
			const struct gs_rl_slice *sl = &r->rl->slice[p->slice];
			bool live = sl->state == GS_RL_LIVE &&
			            sl->generation == p->slice_gen;
			int64_t uid = pid_uid(p->pid);

			bad = (live && !own_serves(o, sl, p->slice)) ||
			      (live && sl->lim.owner_uid != 0 && uid != 0 &&
			       uid != (int64_t)sl->lim.owner_uid) ||
			      (uid >= 0 && uid != (int64_t)p->uid);
		}
		for (int k = 0; !bad && k < i; k++)
			bad = ro->proc[k].state == GS_RU_PROC_LIVE &&
			      ro->proc[k].pid == p->pid &&
			      ro->proc[k].start_time == p->start_time &&
			      ro->proc[k].pidns == p->pidns &&
			      ro->proc[k].slice == p->slice &&
			      ro->proc[k].slice_gen == p->slice_gen;
		if (!bad)
			continue;
		proc_free_locked(r, o, i);
		ro->h.reaped_total++;
		n++;
	}
	/* Entries written past the per-uid limit (attach refuses them; a
	 * tenant writing the table by hand does not ask): the newest go. */
	for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
		struct gs_ru_proc *p = &ro->proc[i];
		int before = 0;

		if (p->state != GS_RU_PROC_LIVE || p->uid == 0)
			continue;
		for (int k = 0; k < i && before < GS_REGION_PROCS_PER_UID; k++)
			before += ro->proc[k].state == GS_RU_PROC_LIVE &&
			          ro->proc[k].uid == p->uid;
		if (before < GS_REGION_PROCS_PER_UID)
			continue;
		proc_free_locked(r, o, i);
		ro->h.reaped_total++;
		n++;
	}
	return n;
}

/* Owner lock held: live process slots of `o` recorded for `uid`. */
static int uid_slots(const struct gs_own *o, uint32_t uid)
{
	int n = 0;

	for (int k = 0; k < GS_REGION_MAX_PROCS; k++)
		if (o->ro->proc[k].state == GS_RU_PROC_LIVE &&
		    o->ro->proc[k].uid == uid)
			n++;
	return n;
}

/* The own[] index and slot a process reference names; -1 when none. */
static int ref_own(struct gs_region *r, const struct gs_proc_ref *p, int *i)
{
	int k;

	if (p == NULL || p->slot < 0)
		return -1;
	k = p->slot / GS_REGION_MAX_PROCS;
	*i = p->slot % GS_REGION_MAX_PROCS;
	return k < __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE) ? k : -1;
}

/* Drops the calling process's entry from owner file k (it moves to a
 * slice of another owner). */
static void leave_owner(struct gs_region *r, int k, int32_t pid,
                        uint64_t start)
{
	struct gs_own *o = &r->own[k];
	int i;

	if (own_lock(r, o) != GS_OK)
		return;
	i = proc_find_self(r, o, pid, start);
	if (i >= 0)
		proc_free_locked(r, o, i);
	own_unlock(r, o);
}

gs_err gs_region_proc_attach(struct gs_region *r,
                             const struct gs_slice_ref *slice, uint32_t flags,
                             struct gs_proc_ref *out, struct gs_errbuf *eb)
{
	int32_t pid = (int32_t)getpid();
	uint64_t start = gs_region_pid_start_time(pid);
	uint32_t me = (uint32_t)geteuid(), owner;
	struct gs_rl_slice *sl;
	struct gs_ro_file *ro;
	struct gs_own *o;
	struct own_key key;
	int i, k, free_slot = -1;
	gs_err err;

	if (!ref_ok(slice))
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no such slice");
	sl = &r->rl->slice[slice->slot];
	key = slice_key(sl, slice->slot);
	owner = key.uid;
	if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != GS_RL_LIVE ||
	    __atomic_load_n(&sl->generation, __ATOMIC_ACQUIRE) !=
	        slice->generation)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	/* A slice is its owner's: another tenant cannot join it and spend
	 * its budget. Root may (it can anyway). */
	if (owner != 0 && me != 0 && me != owner)
		return gs_fail(eb, GS_ERR_PERM,
		               "slice %s belongs to uid %u, not to uid %u",
		               sl->lim.name, (unsigned)owner, (unsigned)me);
	if (key.slot >= 0 && key.gen != slice->generation)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	/* Its books: the owner's file, or (private books) the slice's own,
	 * which on the host only root may open, and in a pod only the
	 * pod's own slice's is mounted. */
	k = owner_find_key(r, &key, false, eb);
	if (k < 0)
		return gs_fail(eb, (gs_err)-k,
		               "no usage file for slice %s (uid %u) in %s",
		               sl->lim.name, (unsigned)owner, r->dir);
	if (r->me >= 0 && r->me != k)
		leave_owner(r, r->me, pid, start);
	o = &r->own[k];
	ro = o->ro;
	err = own_lock(r, o);
	if (err != GS_OK)
		return gs_fail(eb, err, "region lock: %s", gs_strerror(err));
	if (sl->state != GS_RL_LIVE || sl->generation != slice->generation ||
	    !own_serves(o, sl, slice->slot)) {
		own_unlock(r, o);
		return gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	}
	books_sync(r, o, slice->slot);
	i = proc_find_self(r, o, pid, start);
	if (i >= 0 && (ro->proc[i].slice != slice->slot ||
	               ro->proc[i].slice_gen != slice->generation)) {
		proc_free_locked(r, o, i); /* moving to another slice */
		i = -1;
	}
	if (i < 0 && me != 0 &&
	    (uid_slots(o, me) >= GS_REGION_PROCS_PER_UID &&
	     (reap_locked(r, o) == 0 ||
	      uid_slots(o, me) >= GS_REGION_PROCS_PER_UID))) {
		own_unlock(r, o);
		return gs_fail(eb, GS_ERR_QUOTA,
		               "uid %u already holds %d process slots (the most "
		               "one user may)",
		               (unsigned)me, GS_REGION_PROCS_PER_UID);
	}
	if (i < 0) {
		for (int q = 0; q < GS_REGION_MAX_PROCS; q++)
			if (ro->proc[q].state == GS_RU_PROC_FREE) {
				free_slot = q;
				break;
			}
		if (free_slot < 0 && reap_locked(r, o) > 0)
			for (int q = 0; q < GS_REGION_MAX_PROCS; q++)
				if (ro->proc[q].state == GS_RU_PROC_FREE) {
					free_slot = q;
					break;
				}
		if (free_slot < 0) {
			own_unlock(r, o);
			return gs_fail(eb, GS_ERR_NO_FIT,
			               "process table full (%d)",
			               GS_REGION_MAX_PROCS);
		}
		i = free_slot;
		{
			struct gs_ru_proc *p = &ro->proc[i];
			uint64_t gen = proc_gen_next(ro, p);

			memset(p, 0, sizeof(*p));
			memset(ro->proc_dev[i], 0, sizeof(ro->proc_dev[i]));
			p->generation = gen;
			p->pid = pid;
			p->start_time = start;
			p->pidns = r->pidns;
			p->slice = slice->slot;
			p->slice_gen = slice->generation;
			p->flags = flags;
			p->attached_ns = gs__real_ns();
			p->uid = me;
			p->state = GS_RU_PROC_LIVE;
			ro->slice[slice->slot].n_procs++;
		}
	}
	out->slot = k * GS_REGION_MAX_PROCS + i;
	out->reserved = 0;
	out->generation = ro->proc[i].generation;
	r->me = k;
	own_unlock(r, o);
	return GS_OK;
}

struct gs_ru_books *gs__region_proc_books(struct gs_region *r,
                                          const struct gs_ru_proc *pr, int dev)
{
	struct gs_ro_file *ro = r->own[r->me].ro;

	return &ro->proc_dev[pr - ro->proc][dev];
}

struct gs_ru_proc *gs__region_proc_get(struct gs_region *r,
                                       const struct gs_proc_ref *p)
{
	struct gs_ru_proc *pr;
	int i, k = ref_own(r, p, &i);

	if (k < 0 || k != r->me)
		return NULL;
	pr = &r->own[k].ro->proc[i];
	if (pr->state != GS_RU_PROC_LIVE || pr->generation != p->generation)
		return NULL;
	return pr;
}

gs_err gs_region_proc_detach(struct gs_region *r, const struct gs_proc_ref *p)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	int i, k = ref_own(r, p, &i);
	gs_err err;

	if (k < 0)
		return GS_ERR_NOT_FOUND;
	o = &r->own[k];
	err = own_lock(r, o);
	if (err != GS_OK)
		return err;
	pr = &o->ro->proc[i];
	if (pr->state != GS_RU_PROC_LIVE || pr->generation != p->generation)
		err = GS_ERR_NOT_FOUND;
	else
		proc_free_locked(r, o, i);
	own_unlock(r, o);
	return err;
}

int gs_region_reap(struct gs_region *r)
{
	int n = 0, nown;
	gs_err first = GS_OK;

	owners_scan(r);
	nown = __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE);
	for (int k = 0; k < nown; k++) {
		gs_err err = own_lock(r, &r->own[k]);

		if (err != GS_OK) {
			if (first == GS_OK)
				first = err;
			continue;
		}
		n += reap_locked(r, &r->own[k]);
		own_unlock(r, &r->own[k]);
	}
	return n == 0 && first != GS_OK ? -(int)first : n;
}

int gs_region_slice_nprocs(struct gs_region *r, const struct gs_slice_ref *s)
{
	struct gs_own *o;
	gs_err err;
	int n = 0;

	if (!ref_ok(s))
		return 0;
	o = slice_owner(r, s);
	if (o == NULL)
		return 0;
	err = own_lock(r, o);
	if (err != GS_OK)
		return -(int)err;
	for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
		if (proc_in_slice(&o->ro->proc[i], s->slot, s->generation))
			n++;
	own_unlock(r, o);
	return n;
}

bool gs_region_proc_next(struct gs_region *r, struct gs_proc_ref *it,
                         struct gs_proc_info *out)
{
	uint64_t now = gs__mono_ns();
	int next = it->slot + 1, nown;

	if (it->slot < 0) {
		owners_scan(r);
		next = 0;
	}
	nown = __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE);
	for (int k = next / GS_REGION_MAX_PROCS; k < nown; k++) {
		struct gs_own *o = &r->own[k];
		int i0 = k == next / GS_REGION_MAX_PROCS
		             ? next % GS_REGION_MAX_PROCS
		             : 0;
		uint64_t gen;

		if (own_lock(r, o) != GS_OK)
			continue;
		gen = __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE);
		for (int i = i0; i < GS_REGION_MAX_PROCS; i++) {
			struct gs_ru_proc *p = &o->ro->proc[i];

			if (p->state != GS_RU_PROC_LIVE)
				continue;
			/* A slice's private books name only its processes:
			 * an entry for another slice was written by hand by
			 * the pod that holds the file. */
			if (o->slot >= 0 &&
			    (p->slice != o->slot || p->slice_gen != gen))
				continue;
			memset(out, 0, sizeof(*out));
			it->slot = k * GS_REGION_MAX_PROCS + i;
			it->reserved = 0;
			it->generation = p->generation;
			out->ref = *it;
			out->slice.slot = p->slice;
			out->slice.generation = p->slice_gen;
			out->pid = p->pid;
			out->flags = p->flags;
			out->start_time = p->start_time;
			out->attached_ns = p->attached_ns;
			out->local = p->pidns == r->pidns;
			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
				struct gs_ru_books *pb = &o->ro->proc_dev[i][d];

				if (!r->ru->dev[d].in_use)
					continue;
				gs__books_tick(pb, now);
				if (books_any(pb))
					books_export(r, d, pb,
					             &out->dev[out->n_dev++]);
			}
			own_unlock(r, o);
			return true;
		}
		own_unlock(r, o);
	}
	return false;
}

/* ---- devices and memory books ----------------------------------------- */

/* The UUID without its "GPU-"/"MIG-" prefix. */
static const char *uuid_core(const char *u)
{
	if (strncmp(u, "GPU-", 4) == 0 || strncmp(u, "MIG-", 4) == 0)
		return u + 4;
	return u;
}

static bool uuid_same(const char *a, const char *b)
{
	return strncmp(uuid_core(a), uuid_core(b), GS_REGION_UUID_MAX) == 0;
}

int gs_region_device(struct gs_region *r, const char *uuid,
                     uint64_t total_bytes)
{
	int slot = -(int)GS_ERR_NO_FIT;
	gs_err err;

	if (uuid == NULL || uuid[0] == '\0' ||
	    strlen(uuid) >= GS_REGION_UUID_MAX)
		return -(int)GS_ERR_INVALID;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_ru_device *dv = &r->ru->dev[d];

		if (__atomic_load_n(&dv->in_use, __ATOMIC_ACQUIRE) &&
		    uuid_same(dv->uuid, uuid))
			return d;
	}
	if (r->arb_client)
		return -(int)GS_ERR_NOT_FOUND; /* the daemon registers GPUs */
	err = shared_lock(r);
	if (err != GS_OK)
		return -(int)err;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_ru_device *dv = &r->ru->dev[d];

		if (dv->in_use) {
			if (uuid_same(dv->uuid, uuid)) {
				slot = d;
				break;
			}
			continue;
		}
		(void)snprintf(dv->uuid, sizeof(dv->uuid), "%s", uuid);
		dv->total_bytes = total_bytes;
		dv->sched.holder = -1;
		__atomic_store_n(&dv->sched.gate, GS_GATE_ALWAYS,
		                 __ATOMIC_RELEASE);
		__atomic_store_n(&dv->in_use, 1, __ATOMIC_RELEASE);
		r->dev_copy[d] = *dv;
		slot = d;
		break;
	}
	shared_unlock(r);
	return slot;
}

const char *gs_region_device_uuid(struct gs_region *r, int dev)
{
	if (dev < 0 || dev >= GS_REGION_MAX_DEVICES ||
	    !__atomic_load_n(&r->ru->dev[dev].in_use, __ATOMIC_ACQUIRE))
		return NULL;
	return r->ru->dev[dev].uuid;
}

/*
 * Owner lock of r->me held: the live proc for `p` and its live slice's
 * books on `dev`. OUT: *limit (the slice's cap). NULL when the proc or
 * its slice is gone, or the slice is no longer this file's owner's (the
 * caller fails closed).
 */
static struct gs_ru_proc *books_of(struct gs_region *r,
                                   const struct gs_proc_ref *p, int dev,
                                   struct gs_ru_books **sb, uint64_t *limit)
{
	struct gs_ru_proc *pr = gs__region_proc_get(r, p);
	struct gs_own *o;
	struct gs_rl_slice *sl;

	if (pr == NULL || dev < 0 || dev >= GS_REGION_MAX_DEVICES ||
	    pr->slice < 0 || pr->slice >= GS_REGION_MAX_SLICES)
		return NULL;
	o = &r->own[r->me];
	sl = &r->rl->slice[pr->slice];
	if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != GS_RL_LIVE ||
	    __atomic_load_n(&sl->generation, __ATOMIC_ACQUIRE) !=
	        pr->slice_gen ||
	    !own_serves(o, sl, pr->slice))
		return NULL;
	books_sync(r, o, pr->slice);
	*sb = &o->ro->slice[pr->slice].dev[dev];
	if (limit != NULL)
		*limit = __atomic_load_n(&sl->lim.mem_limit, __ATOMIC_ACQUIRE);
	return pr;
}

/* The owner file `p` lives in, when it is this handle's own; NULL. */
static struct gs_own *own_of(struct gs_region *r, const struct gs_proc_ref *p)
{
	int i, k = ref_own(r, p, &i);

	return k >= 0 && k == r->me ? &r->own[k] : NULL;
}

gs_err gs_region_mem_reserve(struct gs_region *r, const struct gs_proc_ref *p,
                             int dev, uint64_t bytes)
{
	struct gs_own *o = own_of(r, p);
	struct gs_ru_books *sb;
	struct gs_ru_proc *pr;
	uint64_t limit, now = gs__mono_ns();
	gs_err err;

	if (o == NULL)
		return GS_ERR_NOT_FOUND;
	err = own_lock(r, o);
	if (err != GS_OK)
		return err;
	for (int attempt = 0;; attempt++) {
		pr = books_of(r, p, dev, &sb, &limit);
		if (pr == NULL) {
			err = GS_ERR_NOT_FOUND;
			break;
		}
		if (limit == 0 ||
		    (bytes <= limit && sb->mem_used <= limit - bytes)) {
			struct gs_ru_books *pb =
			    gs__region_proc_books(r, pr, dev);

			gs__books_tick(sb, now);
			gs__books_tick(pb, now);
			sb->mem_used += bytes;
			pb->mem_used += bytes;
			if (sb->mem_used > sb->mem_peak)
				sb->mem_peak = sb->mem_used;
			if (pb->mem_used > pb->mem_peak)
				pb->mem_peak = pb->mem_used;
			err = GS_OK;
			break;
		}
		/* Over the cap: a dead process may still hold a share. */
		if (attempt > 0 || reap_locked(r, o) == 0) {
			err = GS_ERR_QUOTA;
			break;
		}
	}
	own_unlock(r, o);
	return err;
}

void gs_region_mem_release(struct gs_region *r, const struct gs_proc_ref *p,
                           int dev, uint64_t bytes)
{
	struct gs_own *o = own_of(r, p);
	struct gs_ru_books *sb;
	struct gs_ru_proc *pr;
	uint64_t now = gs__mono_ns();

	if (o == NULL || own_lock(r, o) != GS_OK)
		return;
	pr = books_of(r, p, dev, &sb, NULL);
	if (pr != NULL) {
		struct gs_ru_books *pb = gs__region_proc_books(r, pr, dev);

		if (bytes > pb->mem_used)
			bytes = pb->mem_used;
		gs__books_tick(sb, now);
		gs__books_tick(pb, now);
		pb->mem_used -= bytes;
		sb->mem_used -= bytes <= sb->mem_used ? bytes : sb->mem_used;
	}
	own_unlock(r, o);
}

gs_err gs_region_mem_view(struct gs_region *r, const struct gs_proc_ref *p,
                          int dev, uint64_t *used, uint64_t *limit)
{
	struct gs_own *o = own_of(r, p);
	struct gs_ru_books *sb;
	gs_err err;

	if (o == NULL)
		return GS_ERR_NOT_FOUND;
	err = own_lock(r, o);
	if (err != GS_OK)
		return err;
	if (books_of(r, p, dev, &sb, limit) == NULL)
		err = GS_ERR_NOT_FOUND;
	else
		*used = sb->mem_used;
	own_unlock(r, o);
	return err;
}

gs_err gs__region_proc_limits(struct gs_region *r, const struct gs_proc_ref *p,
                              struct gs_slice_limits *out, int32_t *slice)
{
	struct gs_ru_proc *pr;
	struct gs_slice_ref ref;
	int i, k = ref_own(r, p, &i);

	if (k < 0 || k != r->me)
		return GS_ERR_NOT_FOUND;
	pr = &r->own[k].ro->proc[i];
	if (__atomic_load_n(&pr->generation, __ATOMIC_ACQUIRE) != p->generation)
		return GS_ERR_NOT_FOUND;
	ref.slot = pr->slice;
	ref.reserved = 0;
	ref.generation = pr->slice_gen;
	if (slice != NULL)
		*slice = pr->slice;
	return gs_region_slice_limits(r, &ref, out);
}
