/*
 * layout.c - the region's files as bytes: the run directory (resolved,
 * made, checked safe), a fresh limits or shared usage file initialised,
 * a pair of files validated against each other and this boot, opened and
 * mapped. Layout and invariants: region_int.h.
 *
 * Calls only util.c; file.c (open, create, rebuild) and lock.c (following
 * a replaced shared file) build on it.
 */
#include "guard.h"
#include "region_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

gs_err gs__mkdir_p(const char *dir, mode_t mode, struct gs_errbuf *eb)
{
	char tmp[GS_REGION_DIR_MAX];
	int e;

	(void)snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (gs__file_mkdir(tmp, 0755) != 0 && errno != EEXIST) {
			e = errno;
			return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", tmp,
			               strerror(e));
		}
		*p = '/';
	}
	if (gs__file_mkdir(tmp, mode) != 0 && errno != EEXIST) {
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
gs_err gs__dir_safe(const char *dir, struct gs_errbuf *eb)
{
	struct stat st;
	uid_t me = geteuid();
	int e;

	/* In /tmp anyone may have put a link there: never followed. */
	if (strncmp(dir, "/tmp/", 5) == 0 && lstat(dir, &st) == 0 &&
	    S_ISLNK(st.st_mode))
		return gs_fail(eb, GS_ERR_PERM,
		               "run directory %s is a symbolic link; refusing it (set GPUSLICE_RUN_DIR or XDG_RUNTIME_DIR)",
		               dir);
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
		               "run directory %s belongs to uid %u, not to uid %u or root; refusing it (its owner could set this process's limits)",
		               dir, (unsigned)st.st_uid, (unsigned)me);
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
		return gs_fail(eb, GS_ERR_PERM,
		               "run directory %s is writable by others (mode %03o); refusing it",
		               dir, (unsigned)(st.st_mode & 0777));
	return GS_OK;
}

/* ---- creation and validation ------------------------------------------ */

/* Initialises a usage file (flags: GS_RU_*). */
gs_err gs__init_usage(struct gs_ru_file *ru, uint64_t region_id, uint64_t boot,
                      uint32_t flags, struct gs_errbuf *eb)
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

void gs__init_limits(struct gs_rl_file *rl, uint64_t region_id, uint64_t boot,
                     bool privileged)
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
int gs__usage_tmp_open(const char *tmp, bool arbiter)
{
	int fd = gs__file_open(
	        tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600),
	    e;

	if (fd < 0)
		return -1;
	if (gs__file_truncate(fd, (off_t)sizeof(struct gs_ru_file)) != 0 ||
	    fchmod(fd, arbiter ? 0644 : 0666) != 0) {
		e = errno;
		(void)close(fd);
		(void)unlink(tmp);
		errno = e;
		return -1;
	}
	return fd;
}

/* Checks a pair of mapped files. GS_ERR_NOT_FOUND when uninitialised. */
gs_err gs__validate(const struct gs_rl_file *rl, uint64_t lsize,
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

gs_err gs__open_file(const char *dir, const char *name, int flags, mode_t mode,
                     int *fd, struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + 32];
	int e;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	*fd = gs__file_open(path, flags | O_CLOEXEC | O_NOFOLLOW, mode);
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
bool gs__usage_writable(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_ACCMODE) == O_RDWR;
}

gs_err gs__map_files(struct gs_region *r, bool lw, struct gs_errbuf *eb)
{
	void *p;
	int e;

	p = gs__file_map(sizeof(*r->rl), PROT_READ | (lw ? PROT_WRITE : 0),
	                 r->lfd);
	if (p == MAP_FAILED)
		goto fail;
	r->rl = p;
	p = gs__file_map(
	    sizeof(*r->ru),
	    PROT_READ | (gs__usage_writable(r->ufd) ? PROT_WRITE : 0), r->ufd);
	if (p == MAP_FAILED)
		goto fail;
	r->ru = p;
	(void)gs__guard_add(p, sizeof(*r->ru));
	return GS_OK;
fail:
	e = errno;
	return gs_fail(eb, GS_ERR_IO, "mmap region: %s", strerror(e));
}

void gs__unmap_files(struct gs_region *r)
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

uint64_t gs__fd_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

bool gs_region_is_privileged(const struct gs_region *r)
{
	return (r->rl->h.flags & GS_RL_PRIVILEGED) != 0;
}
