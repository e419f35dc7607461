/*
 * owner.c - owner files: usage.<uid> and the private books of one slice
 * (books/usage.0.<slot>), their paths, creation, validation, mapping
 * into a handle's own[] and lookup by key, and the remap rwlock that
 * guards an OWNER handle's uses of them (own_use .. own_unuse).
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
 * Calls only util.c.
 */
#include "guard.h"
#include "region_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- owner files -------------------------------------------------------- */

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
uint64_t gs__proc_gen_next(const struct gs_ro_file *ro,
                           const struct gs_ru_proc *p)
{
	uint64_t floor =
	    (ro->h.flags & GS_RO_PRIVATE) ? ro->h.slice_gen << 32 : 0;

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
	(void)gs_region_books_path(r->dir, key->slot >= 0, key->uid, key->slot,
	                           out, n);
}

/* Creator: <dir>/books, ours and closed to everyone else (0700). */
static gs_err books_dir_make(const struct gs_region *r, struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + 16];
	struct stat st;
	int e;

	(void)snprintf(path, sizeof(path), "%s/%s", r->dir,
	               GS_REGION_BOOKS_DIR);
	if (gs__file_mkdir(path, 0700) != 0 && errno != EEXIST) {
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
		               "%s is not a directory of uid %u; refusing it (the slices' private books go there)",
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
	void *p =
	    gs__file_map(sizeof(struct gs_ro_file), PROT_READ | PROT_WRITE, fd);

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
	fd = gs__file_open(
	    tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto fail_errno;
	if (gs__file_truncate(fd, (off_t)sizeof(*ro)) != 0)
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
	if (fchmod(fd, mode) != 0 || gs__file_publish(tmp, path) != 0) {
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

	*fd = gs__file_open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (*fd < 0) {
		e = errno;
		return gs_fail(eb,
		               e == ENOENT                 ? GS_ERR_NOT_FOUND
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
		return gs_fail(eb, GS_ERR_IO, "mmap %s: %s", path, strerror(e));
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
		              "%s holds one slice's private books, not uid %u's",
		              path, (unsigned)key->uid);
	else if (!(f->h.flags & GS_RO_PRIVATE))
		err = gs_fail(eb, GS_ERR_NOT_FOUND,
		              "%s is uid %u's shared usage file, not the private books of slice slot %d",
		              path, (unsigned)key->uid, (int)key->slot);
	else if (f->h.slot != key->slot)
		err = gs_fail(eb, GS_ERR_PERM,
		              "%s holds the books of slice slot %d, not of slot %d: a pod is given only its own slice's books (GPUSLICE_SLICE names another pod's slice?)",
		              path, (int)f->h.slot, (int)key->slot);
	else
		err = gs_fail(eb, GS_ERR_NOT_FOUND,
		              "%s holds the books of another slice that had slot %d",
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
static int owner_install(struct gs_region *r, const struct own_key *key, int fd,
                         struct gs_ro_file *ro, struct gs_errbuf *eb)
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
		    "slice slot %d keeps its books in %s, which only root and the pod the slice was made for may open (%s)",
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
int gs__owner_lookup(struct gs_region *r, const struct own_key *key)
{
	int n = __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE);

	for (int k = 0; k < n; k++)
		if (own_is(r, k, key))
			return k;
	return -1;
}

/* The own[] index of the file `key` names, mapping it on first use; a
 * negative gs_err when it cannot be had. */
int gs__owner_find_key(struct gs_region *r, const struct own_key *key,
                       bool create, struct gs_errbuf *eb)
{
	int k = gs__owner_lookup(r, key);

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

	return gs__owner_find_key(r, &key, create, eb);
}

/* The key of the books of the slice in slot s as `sl` describes it. */
struct own_key gs__slice_key(const struct gs_rl_slice *sl, int s)
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
		(void)gs__owner_find_key(r, &key, false, NULL);
	}
	(void)closedir(d);
}

/*
 * Maps every owner file in the directory this process may open (root:
 * all of them, private books too; another uid: its own and uid 0's), so
 * that listings and reaping see processes of slices already deleted too.
 * The shim never lists or reaps beyond its own file, so it maps no other.
 */
void gs__owners_scan(struct gs_region *r)
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

/* OWNER handles: a use of own[] mappings begins and ends (remap lock,
 * shared: no remap meanwhile). Others never remap. */
void gs__own_use(struct gs_region *r)
{
	if (r->role == GS_REGION_OWNER)
		(void)pthread_rwlock_rdlock(&r->remap);
}

void gs__own_unuse(struct gs_region *r)
{
	if (r->role == GS_REGION_OWNER)
		(void)pthread_rwlock_unlock(&r->remap);
}
